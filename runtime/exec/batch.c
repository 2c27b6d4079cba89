/* The batch scheduler (exec/batch.h). */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/decode.h"
#include "exec/depth.h"
#include "exec/draft.h"
#include "util/clock.h"

typedef struct busy {
  mkc_batch_seq *q; /* the sequence in the slot, NULL: free */
  const int *feed;  /* the tokens to feed before it generates: its prompt, or after a context
                       shift the shortened history (hist) */
  int n_feed;
  int fed;   /* of them, those the cache holds */
  int last;  /* its last emitted token, once the prompt is in */
  int *hist; /* prompt then generated: prompt lookup's history */
  int n_hist;
  int in[MKC_CHUNK_CAP], n_in, n_fixed; /* this step's inputs */
  int drafted[MKC_T_CAP], n_drafted;    /* the draft pool's for this step */
  mkc_depth depth;                      /* with o.adaptive: its own depth */
  int k;                                /* the drafts it may take this step */
} busy;

struct mkc_sched {
  mkc_slots *p;
  mkc_batch_opts o;
  busy *bs;
  int slots, share, paged;
  mkc_batch_seq **queue; /* waiting for a slot: queue[head..n_queue) */
  int head, n_queue, cap_queue;
  long taken; /* sequences taken from the queue so far */
  mkc_batch_stats st;
};

static int stops_at(const mkc_batch_opts *o, int id) {
  for (int i = 0; i < o->n_stops; i++)
    if (o->stops[i] == id) return 1;
  return 0;
}

/* The slot takes q: its history, sampler and, paged, the shared first pages. */
/* q's context: its own when smaller than the pool's. */
static int ctx_of(const mkc_sched *sc, const mkc_batch_seq *q) {
  int pool = mkc_slots_graph(sc->p)->max_ctx;
  return q->max_ctx > 0 && q->max_ctx < pool ? q->max_ctx : pool;
}

static int start(mkc_sched *sc, busy *b, int slot, mkc_batch_seq *q, long number) {
  int max_ctx = ctx_of(sc, q);
  if (q->n_prompt < 1 || q->n_prompt > max_ctx) {
    fprintf(stderr, "mkc: error: sequence %ld: a prompt of %d tokens (the context holds %d)\n",
            number, q->n_prompt, max_ctx);
    return -1;
  }
  if (q->shift && q->n_predict < 0) {
    fprintf(stderr, "mkc: error: sequence %ld: a context shift needs a token budget (n_predict)\n",
            number);
    return -1;
  }
  int cap = q->n_predict >= 0 ? q->n_predict : max_ctx;
  size_t room = (size_t)(cap > 0 ? cap : 1);
  q->out = malloc(room * sizeof *q->out);
  b->hist = malloc((size_t)(q->n_prompt + cap + 1) * sizeof *b->hist);
  if (q->opt.logprobs > 0) {
    q->lp = malloc(room * sizeof *q->lp);
    q->top_ids = malloc(room * MKC_LOGPROBS_MAX * sizeof *q->top_ids);
    q->top_lps = malloc(room * MKC_LOGPROBS_MAX * sizeof *q->top_lps);
  }
  if (!q->out || !b->hist || (q->opt.logprobs > 0 && (!q->lp || !q->top_ids || !q->top_lps))) {
    fprintf(stderr, "mkc: error: out of memory for a sequence of %d tokens\n", q->n_prompt + cap);
    return -1;
  }
  memcpy(b->hist, q->prompt, (size_t)q->n_prompt * sizeof *b->hist);
  b->n_hist = q->n_prompt;
  mkc_depth_init(&b->depth, sc->o.draft_min < sc->o.drafts ? sc->o.draft_min : sc->o.drafts,
                 sc->o.drafts);
  b->q = q;
  b->feed = q->prompt;
  b->n_feed = q->n_prompt;
  b->fed = 0;
  q->t_start = mkc_seconds();
  if (q->n_predict == 0 && !q->on_hidden) q->stopped = MKC_BATCH_BUDGET;
  if (mkc_slots_clear(sc->p, slot) != 0 || mkc_slots_set_sampling(sc->p, slot, &q->opt) != 0)
    return -1;
  /* paged: the prompt's first pages another slot holds are shared, not fed again */
  int shared = q->stopped == MKC_BATCH_RUNNING && !q->on_hidden
                   ? mkc_slots_share(sc->p, slot, q->prompt, q->n_prompt)
                   : 0;
  if (shared < 0) return -1;
  b->fed = q->shared = shared;
  sc->st.shared += shared;
  return 0;
}

/* Whether q should wait for a slot still feeding a prompt that starts as
 * q's does: once that slot's pages of the common start are full, q shares
 * them (mkc_slots_share) instead of computing them again. */
static int waits_for_prefix(const mkc_sched *sc, const mkc_batch_seq *q) {
  for (int s = 0; s < sc->slots; s++) {
    const busy *b = &sc->bs[s];
    const mkc_batch_seq *o = b->q;
    if (!o || o->stopped != MKC_BATCH_RUNNING || b->feed != o->prompt || b->fed >= o->n_prompt)
      continue;
    int common = 0, most = q->n_prompt - 1 < o->n_prompt ? q->n_prompt - 1 : o->n_prompt;
    while (common < most && q->prompt[common] == o->prompt[common]) common++;
    if (b->fed < common / MKC_KV_PAGE * MKC_KV_PAGE) return 1;
  }
  return 0;
}

/* The drafts slot s may take in a step of `rows` inputs a slot: none for a constrained sequence,
 * and no more than its budget and the context leave room for. */
static int draft_room(const mkc_slots *p, int s, const mkc_batch_seq *q, int rows, int drafts,
                      int max_ctx) {
  int k = q->constraint ? 0 : drafts < rows - 1 ? drafts : rows - 1;
  int room = max_ctx - mkc_slots_pos(p, s);
  if (q->n_predict >= 0 && k > q->n_predict - q->n_out - 1) k = q->n_predict - q->n_out - 1;
  return k < room - 1 ? k : room - 1;
}

/* Slot s's inputs for a step: a prompt piece of up to `rows` (its slot alone:
 * as a session feeds it), or the last token and up to rows - 1 drafts that
 * fit its budget and the context (the draft pool's, else prompt lookup's). */
static void plan_inputs(const mkc_slots *p, int s, busy *b, const mkc_batch_seq *q, int rows,
                        int alone, int drafts, int max_ctx, int pool) {
  if (b->fed < b->n_feed) {
    int left = b->n_feed - b->fed;
    b->n_in = alone ? mkc_slots_prompt_inputs(p, left) : left < rows ? left : rows;
    memcpy(b->in, b->feed + b->fed, (size_t)b->n_in * sizeof *b->in);
    b->n_fixed = b->n_in - 1;
    return;
  }
  int k = draft_room(p, s, q, rows, drafts, max_ctx);
  b->in[0] = b->last;
  if (pool) {
    b->n_in = 1 + (b->n_drafted < k ? b->n_drafted : k > 0 ? k : 0);
    memcpy(b->in + 1, b->drafted, (size_t)(b->n_in - 1) * sizeof *b->in);
  } else {
    b->n_in = 1 + (k > 0 ? mkc_draft_lookup(b->hist, b->n_hist, k, b->in + 1) : 0);
  }
  b->n_fixed = 0;
}

/* The draft pool's drafts for every decoding slot, made together (exec/draft_slots.h). */
static int draft_all(mkc_sched *sc) {
  mkc_slot_draft req[MKC_SLOTS_CAP];
  for (int s = 0; s < sc->slots; s++) {
    busy *b = &sc->bs[s];
    b->n_drafted = 0;
    req[s].want = 0;
    if (!b->q || b->fed < b->n_feed) continue;
    req[s].hist = b->hist;
    req[s].n = b->n_hist;
    req[s].want = draft_room(sc->p, s, b->q, sc->share, b->k, ctx_of(sc, b->q));
  }
  if (mkc_slot_drafter_propose(sc->o.drafter, req, sc->slots) != 0) return -1;
  for (int s = 0; s < sc->slots; s++) {
    sc->bs[s].n_drafted = req[s].got;
    memcpy(sc->bs[s].drafted, req[s].drafts, (size_t)req[s].got * sizeof *req[s].drafts);
  }
  return 0;
}

/* A constrained sequence's token, chosen on the host from the logits after
 * the slot's last input, in place of the kernel's choice in r, with its
 * log-probabilities (lp, ids, lps). */
static int choose(mkc_sched *sc, int s, busy *b, mkc_step_result *r, float *lp, int *ids,
                  float *lps) {
  mkc_batch_seq *q = b->q;
  const float *logits = mkc_slots_logits(sc->p, s, b->n_in - 1);
  int id;
  if (mkc_constraint_next(q->constraint, logits, mkc_slots_graph(sc->p)->vocab, b->hist, b->n_hist,
                          &q->opt, &id, lp, ids, lps) != 0)
    return -1;
  r->out[0] = id;
  r->n_out = 1;
  r->n_accepted = 0;
  return 0;
}

/* Slot s's context is full and its sequence shifts, as mkc_decode_more
 * shifts a session's (exec/context_shift.c): the first n_keep tokens stay,
 * the older half of the cached ones after them goes, and the shortened
 * history is fed again from the start (a session keeps its first n_keep
 * rows instead; a row depends only on the tokens up to it, so the two hold
 * the same rows). The last token, not cached, is the history's last input.
 * A context too small to drop a token from ends the sequence (MKC_BATCH_CTX). */
static int shift(mkc_sched *sc, int s, busy *b) {
  mkc_batch_seq *q = b->q;
  int keep, discard = mkc_shift_discard(b->n_hist - 1, q->n_keep, q->n_discard, &keep);
  if (discard < 1) {
    q->stopped = MKC_BATCH_CTX;
    return 0;
  }
  memmove(b->hist + keep, b->hist + keep + discard,
          (size_t)(b->n_hist - keep - discard) * sizeof *b->hist);
  b->n_hist -= discard;
  b->feed = b->hist;
  b->n_feed = b->n_hist;
  b->fed = 0;
  q->shifts++;
  q->shift_fed += b->n_hist;
  return mkc_slots_clear(sc->p, s);
}

/* Slot s's step is done: its prompt moves on, or its tokens are taken up to
 * a stop token, its budget, or a full context. 0, or -1 after a message. */
static int take(mkc_sched *sc, int s, busy *b) {
  mkc_batch_seq *q = b->q;
  mkc_batch_stats *st = &sc->st;
  int max_ctx = ctx_of(sc, q);
  mkc_step_result r;
  mkc_slots_result(sc->p, s, &r);
  if (r.status != MKC_STATUS_OK) {
    fprintf(stderr, "mkc: error: slot %d: the step was refused (%s)\n", s,
            mkc_status_name(r.status));
    return -1;
  }
  int prompt = b->fed < b->n_feed;
  if (prompt) {
    b->fed += b->n_in;
    if (q->on_hidden && q->on_hidden(q->ctx, sc->p, s, b->n_in) != 0) {
      q->stopped = MKC_BATCH_FAILED;
      return 0;
    }
    if (b->fed < b->n_feed) return 0; /* the chunk's choice is not a token of the output */
    if (!q->t_prompt) q->t_prompt = mkc_seconds();
    if (q->on_hidden) { /* an embedding: its rows are read, no token is emitted */
      q->stopped = MKC_BATCH_BUDGET;
      return 0;
    }
  } else {
    if (sc->o.adaptive) mkc_depth_update(&b->depth, b->n_in - 1, r.n_accepted);
    st->drafted += b->n_in - 1;
    st->accepted += r.n_accepted;
    q->drafted += b->n_in - 1;
    q->accepted += r.n_accepted;
  }
  float lp = 0, lps[MKC_LOGPROBS_MAX];
  int ids[MKC_LOGPROBS_MAX];
  if (q->constraint && choose(sc, s, b, &r, &lp, ids, lps) != 0) {
    q->stopped = MKC_BATCH_FAILED; /* this sequence alone: its slot is free for the next */
    return 0;
  }
  for (int i = 0; i < r.n_out && q->stopped == MKC_BATCH_RUNNING; i++) {
    if (stops_at(&sc->o, r.out[i])) {
      q->stopped = MKC_BATCH_STOP_TOKEN;
      break;
    }
    if (q->lp) { /* the kernel's for its token i, or the host's choice's */
      size_t at = (size_t)q->n_out * MKC_LOGPROBS_MAX;
      if (q->constraint) {
        q->lp[q->n_out] = lp;
        memcpy(q->top_ids + at, ids, sizeof ids);
        memcpy(q->top_lps + at, lps, sizeof lps);
      } else if (mkc_slots_logprobs(sc->p, s, i, q->lp + q->n_out, q->top_ids + at,
                                    q->top_lps + at) != 0) {
        return -1;
      }
    }
    q->out[q->n_out++] = r.out[i];
    b->hist[b->n_hist++] = r.out[i];
    st->generated++;
    if (q->n_predict >= 0 && q->n_out >= q->n_predict) q->stopped = MKC_BATCH_BUDGET;
    if (q->on_token && q->on_token(q->ctx, r.out[i]) && q->stopped == MKC_BATCH_RUNNING)
      q->stopped = MKC_BATCH_ASKED;
  }
  b->last = r.out[r.n_out - 1];
  if (q->constraint && q->stopped == MKC_BATCH_RUNNING && mkc_constraint_done(q->constraint))
    q->stopped = MKC_BATCH_COMPLETE;
  /* the next step writes the last token's K/V at pos: it needs a free row */
  if (q->stopped == MKC_BATCH_RUNNING && q->shift && mkc_slots_pos(sc->p, s) >= max_ctx)
    return shift(sc, s, b);
  if (q->stopped == MKC_BATCH_RUNNING &&
      (mkc_slots_pos(sc->p, s) >= max_ctx || (q->n_predict < 0 && q->n_out >= max_ctx)))
    q->stopped = MKC_BATCH_CTX;
  return 0;
}

mkc_sched *mkc_sched_open(mkc_slots *p, const mkc_batch_opts *o) {
  const mkc_graph *g = mkc_slots_graph(p);
  mkc_sched *sc = calloc(1, sizeof *sc);
  int slots = mkc_slots_count(p);
  if (sc) sc->bs = calloc((size_t)slots, sizeof *sc->bs);
  if (!sc || !sc->bs) {
    fprintf(stderr, "mkc: error: out of memory for %d slots\n", slots);
    free(sc);
    return NULL;
  }
  sc->p = p;
  sc->o = *o;
  sc->slots = slots;
  /* the depths used: the option's, or (adaptive) widened as the slots choose theirs */
  sc->st.depth_lo = o->drafts;
  sc->st.depth_hi = o->adaptive ? 0 : o->drafts;
  sc->paged = g->kv_pages > 0;
  /* a slot's share of a step's rows when every slot is busy: at most t_max */
  sc->share = g->step_rows / slots > g->t_max ? g->t_max : g->step_rows / slots;
  if (sc->share < 1) sc->share = 1;
  return sc;
}

int mkc_sched_add(mkc_sched *sc, mkc_batch_seq *q) {
  if (sc->n_queue == sc->cap_queue && sc->head > 0) {
    /* the waiting ones move to the front first: a long-running server's queue does not grow */
    memmove(sc->queue, sc->queue + sc->head, (size_t)(sc->n_queue - sc->head) * sizeof *sc->queue);
    sc->n_queue -= sc->head;
    sc->head = 0;
  }
  if (sc->n_queue == sc->cap_queue) {
    int cap = sc->cap_queue ? 2 * sc->cap_queue : 16;
    mkc_batch_seq **queue = realloc(sc->queue, (size_t)cap * sizeof *queue);
    if (!queue) {
      fprintf(stderr, "mkc: error: out of memory queueing a sequence\n");
      return -1;
    }
    sc->queue = queue;
    sc->cap_queue = cap;
  }
  q->out = NULL;
  q->lp = q->top_lps = NULL;
  q->top_ids = NULL;
  q->n_out = 0;
  q->stopped = MKC_BATCH_RUNNING;
  q->shared = 0;
  q->shifts = q->shift_fed = 0;
  q->drafted = q->accepted = 0;
  q->t_start = q->t_prompt = 0;
  sc->queue[sc->n_queue++] = q;
  return 0;
}

int mkc_sched_pending(const mkc_sched *sc) {
  int n = sc->n_queue - sc->head;
  for (int s = 0; s < sc->slots; s++) n += sc->bs[s].q != NULL;
  return n;
}

/* A slot whose sequence stopped is free again. */
static void release(busy *b) {
  if (b->q && b->q->stopped != MKC_BATCH_RUNNING) {
    free(b->hist);
    b->hist = NULL;
    b->q = NULL;
  }
}

void mkc_sched_cancel(mkc_sched *sc, mkc_batch_seq *q) {
  if (q->stopped == MKC_BATCH_RUNNING) q->stopped = MKC_BATCH_CANCELLED;
  for (int s = 0; s < sc->slots; s++)
    if (sc->bs[s].q == q) release(&sc->bs[s]);
  for (int i = sc->head; i < sc->n_queue; i++)
    if (sc->queue[i] == q) { /* it never started: it takes no number */
      memmove(sc->queue + i, sc->queue + i + 1, (size_t)(sc->n_queue - i - 1) * sizeof *sc->queue);
      sc->n_queue--;
      break;
    }
}

const mkc_batch_stats *mkc_sched_stats(const mkc_sched *sc) { return &sc->st; }

const mkc_batch_seq *mkc_sched_in_slot(const mkc_sched *sc, int slot) {
  return slot >= 0 && slot < sc->slots ? sc->bs[slot].q : NULL;
}

int mkc_sched_slot_of(const mkc_sched *sc, const mkc_batch_seq *q) {
  for (int s = 0; s < sc->slots; s++)
    if (sc->bs[s].q == q) return s;
  return -1;
}

int mkc_sched_step(mkc_sched *sc) {
  const mkc_graph *g = mkc_slots_graph(sc->p);
  mkc_slots *p = sc->p;
  mkc_batch_stats *st = &sc->st;
  busy *bs = sc->bs;
  int slots = sc->slots, n_busy = 0;
  /* refill: free slots take the waiting sequences, in order */
  for (int s = 0; s < slots; s++) {
    busy *b = &bs[s];
    release(b);
    while (!b->q && sc->head < sc->n_queue) {
      mkc_batch_seq *q = sc->queue[sc->head];
      if (sc->paged && !q->on_hidden && waits_for_prefix(sc, q)) break;
      sc->head++, sc->taken++;
      if (start(sc, b, s, q, sc->taken) != 0) return -1;
      release(b); /* -n 0 */
    }
    n_busy += b->q != NULL;
  }
  if (n_busy == 0) return 0;
  if (n_busy > st->most_busy) st->most_busy = n_busy;
  /* a prompt longer than the share goes first, its slot alone, in chunks */
  int solo = -1;
  for (int s = 0; s < slots && solo < 0; s++)
    if (bs[s].q && bs[s].n_feed - bs[s].fed > sc->share) solo = s;
  /* each decoding slot's depth this step: the option's, or its own (adaptive) */
  for (int s = 0; s < slots; s++) {
    busy *b = &bs[s];
    b->k = sc->o.drafts;
    if (sc->o.adaptive && b->q && solo < 0 && b->fed >= b->n_feed) {
      b->k = mkc_depth_next(&b->depth);
      int offered = b->k < sc->share - 1 ? b->k : sc->share - 1; /* what plan_inputs allows */
      if (!b->q->constraint && offered < st->depth_lo) st->depth_lo = offered;
      if (!b->q->constraint && offered > st->depth_hi) st->depth_hi = offered;
    }
  }
  if (sc->o.drafter && solo < 0 && draft_all(sc) != 0) return -1;
  for (int s = 0; s < slots; s++) {
    busy *b = &bs[s];
    int take_part = b->q && (solo < 0 || s == solo);
    if (take_part)
      plan_inputs(p, s, b, b->q, solo >= 0 ? g->t_chunk : sc->share, solo >= 0, b->k,
                  ctx_of(sc, b->q), sc->o.drafter != NULL);
    if (mkc_slots_set_inputs(p, s, b->in, take_part ? b->n_in : 0, b->n_fixed) != 0) return -1;
  }
  /* a step with no prompt piece in it: the decode rate's */
  int decode = solo < 0;
  for (int s = 0; s < slots; s++) decode &= !bs[s].q || bs[s].fed >= bs[s].n_feed;
  double t_step = mkc_seconds();
  if (mkc_slots_step(p) != 0) return -1;
  t_step = mkc_seconds() - t_step;
  st->steps++;
  st->solo_steps += solo >= 0;
  size_t kv = 0;
  for (int s = 0; s < slots; s++) kv += bs[s].q ? mkc_slots_kv_used(p, s) : 0;
  if (kv > st->kv_peak) st->kv_peak = kv;
  long before = st->generated;
  for (int s = 0; s < slots; s++)
    if (bs[s].q && (solo < 0 || s == solo) && take(sc, s, &bs[s]) != 0) return -1;
  if (decode) {
    st->decode_steps++;
    st->decode_seconds += t_step;
    st->decode_tokens += st->generated - before;
  }
  if (decode && sc->o.stage_ns) {
    double one[g->n_stages > 0 ? g->n_stages : 1];
    if (mkc_slots_stage_ns(p, one) != 0) {
      fprintf(stderr, "mkc: error: the slot kernel gave no stage times (built without timers?)\n");
      return -1;
    }
    for (int i = 0; i < g->n_stages; i++) sc->o.stage_ns[i] += one[i];
    st->stage_steps++;
  }
  return 1;
}

void mkc_sched_close(mkc_sched *sc) {
  if (!sc) return;
  for (int s = 0; s < sc->slots; s++) free(sc->bs[s].hist);
  free(sc->bs);
  free(sc->queue);
  free(sc);
}

int mkc_batch_run(mkc_slots *p, mkc_batch_seq *seqs, int n, const mkc_batch_opts *o,
                  mkc_batch_stats *st) {
  memset(st, 0, sizeof *st);
  for (int i = 0; i < n; i++) {
    seqs[i].out = NULL;
    seqs[i].lp = seqs[i].top_lps = NULL;
    seqs[i].top_ids = NULL;
  }
  double t0 = mkc_seconds();
  mkc_sched *sc = mkc_sched_open(p, o);
  int rc = sc ? 0 : -1;
  for (int i = 0; i < n && rc == 0; i++) rc = mkc_sched_add(sc, &seqs[i]);
  while (rc == 0 && (rc = mkc_sched_step(sc)) == 1) rc = 0;
  if (sc) *st = sc->st;
  st->seconds = mkc_seconds() - t0;
  mkc_sched_close(sc);
  return rc;
}

void mkc_batch_free(mkc_batch_seq *seqs, int n) {
  for (int i = 0; i < n; i++) {
    free(seqs[i].out);
    free(seqs[i].lp);
    free(seqs[i].top_ids);
    free(seqs[i].top_lps);
    seqs[i].out = NULL;
    seqs[i].lp = seqs[i].top_lps = NULL;
    seqs[i].top_ids = NULL;
  }
}
