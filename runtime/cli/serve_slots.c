/* mkc serve --parallel N (serve.h): requests decoded together on a slot
 * kernel, as llama-server's parallel slots are. Each request is a sequence
 * of the batch scheduler (exec/batch.h); after every step its new tokens go
 * to its answer, which streams them or keeps them for the end. A request
 * whose answer is done (a stop string, its client gone) leaves its slot at
 * once. What each request gets is what it gets alone: the slots' kernel
 * emits for each sequence what the plain kernel emits for it, and a request
 * for JSON output has its tokens chosen on the host as it would alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/slots.h"
#include "serve.h"
#include "serve/http.h"
#include "util/clock.h"

/* j's sequence for its answer now: its prompt, budget, sampler and shift. */
static void sequence_of(mkc_serve_job *j) {
  j->q = (mkc_batch_seq){.prompt = j->prompt,
                         .n_prompt = j->n_prompt,
                         .n_predict = j->n_gen,
                         .opt = j->opt,
                         .shift = j->shift,
                         .n_keep = j->n_keep,
                         .n_discard = j->n_discard,
                         .max_ctx = j->ctx};
}

/* j's sequence (with its own JSON document when the host chooses its tokens) in line, and its
 * stream begun: NULL, or why not. */
static const char *queue(mkc_server *sv, mkc_serve_job *j) {
  sequence_of(j);
  j->slot = -1; /* until a step finds it in one */
  if (j->host && !(j->q.constraint = mkc_serve_job_json(sv, j, 1)))
    return "the host's choice (JSON, a grammar or a sampler the kernel lacks) could not be set up "
           "(the server's log says why)";
  if (mkc_sched_add(sv->sched, &j->q) != 0) return "out of memory";
  if (j->r.stream) mkc_answer_stream_start(&j->g);
  return NULL;
}

int mkc_serve_slots_add(mkc_server *sv, mkc_serve_job *j) {
  const char *why = queue(sv, j);
  if (why) {
    mkc_respond_error_for(&j->r, j->fd, 500, why);
    mkc_serve_job_close(j);
    free(j);
    return -1;
  }
  j->next = sv->jobs;
  sv->jobs = j;
  return 0;
}

/* The request's counts and times, as the decode loop reports them alone. */
static void stats_of(const mkc_serve_job *j, mkc_decode_stats *st) {
  const mkc_batch_seq *q = &j->q;
  double now = mkc_seconds(), start = q->t_start > 0 ? q->t_start : now;
  memset(st, 0, sizeof *st);
  st->generated = j->delivered;
  st->fed = q->t_start > 0 ? j->n_prompt - q->shared : 0;
  st->drafted = q->drafted;
  st->accepted = q->accepted;
  st->ctx_full = q->stopped == MKC_BATCH_CTX;
  st->shifts = q->shifts;
  st->shift_fed = q->shift_fed;
  st->seconds = now - start;
  st->prompt_seconds = (q->t_prompt > 0 ? q->t_prompt : now) - start;
}

/* j's choice was answered and another follows (OpenAI's n): that one takes j's place in line,
 * its sequence again with the next seed. NULL, or why not. */
static const char *next_choice(mkc_server *sv, mkc_serve_job *j) {
  mkc_batch_free(&j->q, 1);
  mkc_constraint_close(j->q.constraint);
  j->q.constraint = NULL;
  if (mkc_serve_job_next_choice(sv, j) != 0) return "out of memory";
  j->delivered = 0;
  return queue(sv, j);
}

/* Answers j's choice with what it has (failed: the backend failed, a 500
 * unless it streams) and closes its connection, unless another choice of it
 * follows (OpenAI's n): then 1, it waits in line again. Else 0. */
static int finish(mkc_server *sv, mkc_serve_job *j, int failed, const char *why) {
  mkc_answer *g = &j->g;
  const mkc_batch_seq *q = &j->q;
  if (q->stopped == MKC_BATCH_STOP_TOKEN) g->eog = 1;
  g->complete = q->stopped == MKC_BATCH_COMPLETE ? (j->r.grammar ? 2 : 1) : 0; /* as st.complete */
  mkc_answer_flush(g);
  /* ollama's generate returns its context: the prompt, then the answer */
  if (j->r.ollama && !j->r.chat)
    j->context = malloc((size_t)(j->n_prompt + j->delivered + 1) * sizeof *j->context);
  if (j->context) {
    memcpy(j->context, j->prompt, (size_t)j->n_prompt * sizeof *j->context);
    memcpy(j->context + j->n_prompt, q->out, (size_t)j->delivered * sizeof *j->context);
    g->context = j->context, g->n_context = j->n_prompt + j->delivered;
  }
  if (why) g->more = 0; /* the server stops: the choices so far are the answer */
  mkc_decode_stats st;
  stats_of(j, &st);
  int cached = q->shared;
  if (j->slot >= 0) mkc_serve_slot_record(sv, j->slot, j, cached, j->delivered); /* GET /slots */
  mkc_http_extra_headers(j->cors);
  if (failed && !j->r.stream)
    mkc_respond_error_for(&j->r, j->fd, 500, "decoding failed (the server's log says why)");
  else if (failed)
    mkc_answer_stream_error(g, "decoding failed (the server's log says why)");
  else
    mkc_serve_job_answer(j, &st, cached);
  mkc_http_extra_headers(NULL);
  if (!failed)
    mkc_serve_job_done(sv, j, &st, cached,
                       why ? why
                           : mkc_serve_stopped(g, 0,
                                               st.ctx_full || (!j->shift && j->n_gen == j->room &&
                                                               j->delivered >= j->n_gen)));
  if (!failed && !why && g->more && !g->gone) {
    const char *fault = next_choice(sv, j);
    if (!fault) return 1;
    fprintf(stderr, "mkc: error: the next choice: %s\n", fault);
  }
  mkc_serve_close(sv, j->fd);
  return 0;
}

/* Gives j's new tokens to its answer: 1 when the answer is done with them
 * (a stop string, the client gone), else 0. */
static int deliver(mkc_serve_job *j) {
  const mkc_batch_seq *q = &j->q;
  while (j->delivered < q->n_out) {
    int i = j->delivered++;
    if (q->lp) /* its log-probabilities first, as the decode loop gives them */
      mkc_answer_on_logprobs(&j->g, q->out[i], q->lp[i], q->top_ids + (size_t)i * MKC_LOGPROBS_MAX,
                             q->top_lps + (size_t)i * MKC_LOGPROBS_MAX, q->opt.logprobs);
    if (mkc_answer_on_token(&j->g, q->out[i])) return 1;
  }
  if (!j->g.gone && mkc_http_peer_gone(j->fd)) j->g.gone = 1;
  return j->g.gone;
}

int mkc_serve_slots_step(mkc_server *sv) {
  int rc = mkc_sched_step(sv->sched);
  for (mkc_serve_job **at = &sv->jobs; *at;) {
    mkc_serve_job *j = *at;
    int slot = mkc_sched_slot_of(sv->sched, &j->q);
    if (slot >= 0) j->g.id_slot = j->slot = slot; /* before its tokens' chunks */
    int done = deliver(j);
    if (!done && j->q.stopped == MKC_BATCH_RUNNING && rc >= 0) {
      at = &j->next;
      continue;
    }
    mkc_sched_cancel(sv->sched, &j->q); /* its slot, or its place in line, goes now */
    if (finish(sv, j, rc < 0 || j->q.stopped == MKC_BATCH_FAILED, NULL)) {
      at = &j->next; /* its next choice is in line */
      continue;
    }
    *at = j->next;
    mkc_serve_job_close(j);
    free(j);
  }
  mkc_serve_slot_waits(sv); /* slot actions whose slot this step freed */
  return rc < 0 ? -1 : 0;
}

void mkc_serve_slots_end_all(mkc_server *sv, const char *why) {
  while (sv->jobs) {
    mkc_serve_job *j = sv->jobs;
    sv->jobs = j->next;
    deliver(j);
    mkc_sched_cancel(sv->sched, &j->q);
    finish(sv, j, 0, why);
    mkc_serve_job_close(j);
    free(j);
  }
  mkc_serve_slot_waits(sv); /* every slot free: the waiting actions act on what it holds */
}
