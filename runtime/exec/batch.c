/* The batch scheduler (exec/batch.h). */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/draft.h"
#include "util/clock.h"

typedef struct busy {
  int seq;   /* the sequence in the slot, -1: free */
  int fed;   /* its prompt tokens the cache holds */
  int last;  /* its last emitted token, once the prompt is in */
  int *hist; /* prompt then generated: prompt lookup's history */
  int n_hist;
  int in[MKC_CHUNK_CAP], n_in, n_fixed; /* this step's inputs */
} busy;

static int stops_at(const mkc_batch_opts *o, int id) {
  for (int i = 0; i < o->n_stops; i++)
    if (o->stops[i] == id) return 1;
  return 0;
}

static int start(mkc_slots *p, busy *b, int slot, mkc_batch_seq *q, int seq, int max_ctx,
                 long *shared_out) {
  if (q->n_prompt < 1 || q->n_prompt > max_ctx) {
    fprintf(stderr, "mkc: error: sequence %d: a prompt of %d tokens (the context holds %d)\n",
            seq + 1, q->n_prompt, max_ctx);
    return -1;
  }
  int cap = q->n_predict >= 0 ? q->n_predict : max_ctx;
  q->out = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *q->out);
  b->hist = malloc((size_t)(q->n_prompt + cap + 1) * sizeof *b->hist);
  if (!q->out || !b->hist) {
    fprintf(stderr, "mkc: error: out of memory for sequence %d\n", seq + 1);
    return -1;
  }
  memcpy(b->hist, q->prompt, (size_t)q->n_prompt * sizeof *b->hist);
  b->n_hist = q->n_prompt;
  b->seq = seq;
  b->fed = 0;
  q->n_out = 0;
  q->stopped = MKC_BATCH_RUNNING;
  if (q->n_predict == 0) q->stopped = MKC_BATCH_BUDGET;
  if (mkc_slots_clear(p, slot) != 0 || mkc_slots_set_sampling(p, slot, &q->opt) != 0) return -1;
  /* paged: the prompt's first pages another slot holds are shared, not fed again */
  int shared =
      q->stopped == MKC_BATCH_RUNNING ? mkc_slots_share(p, slot, q->prompt, q->n_prompt) : 0;
  if (shared < 0) return -1;
  b->fed = shared;
  *shared_out += shared;
  return 0;
}

/* Whether q should wait for a slot still feeding a prompt that starts as
 * q's does: once that slot's pages of the common start are full, q shares
 * them (mkc_slots_share) instead of computing them again. */
static int waits_for_prefix(const busy *bs, int slots, const mkc_batch_seq *seqs,
                            const mkc_batch_seq *q) {
  for (int s = 0; s < slots; s++) {
    if (bs[s].seq < 0) continue;
    const mkc_batch_seq *o = &seqs[bs[s].seq];
    if (o->stopped != MKC_BATCH_RUNNING || bs[s].fed >= o->n_prompt) continue;
    int common = 0, most = q->n_prompt - 1 < o->n_prompt ? q->n_prompt - 1 : o->n_prompt;
    while (common < most && q->prompt[common] == o->prompt[common]) common++;
    if (bs[s].fed < common / MKC_KV_PAGE * MKC_KV_PAGE) return 1;
  }
  return 0;
}

/* Slot s's inputs for a step: a prompt piece of up to `rows`, or the last
 * token and up to rows - 1 drafts that fit its budget and the context. */
static void plan_inputs(const mkc_slots *p, int s, busy *b, const mkc_batch_seq *q, int rows,
                        int drafts, int max_ctx) {
  if (b->fed < q->n_prompt) {
    b->n_in = q->n_prompt - b->fed < rows ? q->n_prompt - b->fed : rows;
    memcpy(b->in, q->prompt + b->fed, (size_t)b->n_in * sizeof *b->in);
    b->n_fixed = b->n_in - 1;
    return;
  }
  int k = drafts < rows - 1 ? drafts : rows - 1, room = max_ctx - mkc_slots_pos(p, s);
  if (q->n_predict >= 0 && k > q->n_predict - q->n_out - 1) k = q->n_predict - q->n_out - 1;
  if (k > room - 1) k = room - 1;
  b->in[0] = b->last;
  b->n_in = 1 + (k > 0 ? mkc_draft_lookup(b->hist, b->n_hist, k, b->in + 1) : 0);
  b->n_fixed = 0;
}

/* Slot s's step is done: its prompt moves on, or its tokens are taken up to
 * a stop token, its budget, or a full context. 0, or -1 after a message. */
static int take(mkc_slots *p, int s, busy *b, mkc_batch_seq *q, const mkc_batch_opts *o,
                int max_ctx, mkc_batch_stats *st) {
  mkc_step_result r;
  mkc_slots_result(p, s, &r);
  if (r.status != MKC_STATUS_OK) {
    fprintf(stderr, "mkc: error: sequence %d: the step was refused (%s)\n", b->seq + 1,
            mkc_status_name(r.status));
    return -1;
  }
  int prompt = b->fed < q->n_prompt;
  if (prompt) {
    b->fed += b->n_in;
    if (b->fed < q->n_prompt) return 0; /* the chunk's choice is not a token of the output */
  } else {
    st->drafted += b->n_in - 1;
    st->accepted += r.n_accepted;
  }
  for (int i = 0; i < r.n_out && q->stopped == MKC_BATCH_RUNNING; i++) {
    if (stops_at(o, r.out[i])) {
      q->stopped = MKC_BATCH_STOP_TOKEN;
      break;
    }
    q->out[q->n_out++] = r.out[i];
    b->hist[b->n_hist++] = r.out[i];
    st->generated++;
    if (q->n_predict >= 0 && q->n_out >= q->n_predict) q->stopped = MKC_BATCH_BUDGET;
  }
  b->last = r.out[r.n_out - 1];
  /* the next step writes the last token's K/V at pos: it needs a free row */
  if (q->stopped == MKC_BATCH_RUNNING &&
      (mkc_slots_pos(p, s) >= max_ctx || (q->n_predict < 0 && q->n_out >= max_ctx)))
    q->stopped = MKC_BATCH_CTX;
  return 0;
}

int mkc_batch_run(mkc_slots *p, mkc_batch_seq *seqs, int n, const mkc_batch_opts *o,
                  mkc_batch_stats *st) {
  const mkc_graph *g = mkc_slots_graph(p);
  int slots = mkc_slots_count(p), next = 0, rc = 0, paged = g->kv_pages > 0;
  /* a slot's share of a step's rows when every slot is busy: at most t_max */
  int share = g->step_rows / slots > g->t_max ? g->t_max : g->step_rows / slots;
  if (share < 1) share = 1;
  busy *bs = calloc((size_t)slots, sizeof *bs);
  memset(st, 0, sizeof *st);
  for (int i = 0; i < n; i++) seqs[i].out = NULL;
  if (!bs) {
    fprintf(stderr, "mkc: error: out of memory for %d slots\n", slots);
    return -1;
  }
  for (int s = 0; s < slots; s++) bs[s].seq = -1;
  double t0 = mkc_seconds();
  for (;;) {
    /* refill: free slots take the next sequences, in order */
    int n_busy = 0;
    for (int s = 0; s < slots && rc == 0; s++) {
      busy *b = &bs[s];
      if (b->seq >= 0 && seqs[b->seq].stopped != MKC_BATCH_RUNNING) {
        free(b->hist);
        b->hist = NULL;
        b->seq = -1;
      }
      while (b->seq < 0 && next < n && rc == 0) {
        if (paged && waits_for_prefix(bs, slots, seqs, &seqs[next])) break;
        rc = start(p, b, s, &seqs[next], next, g->max_ctx, &st->shared);
        next++;
        if (rc == 0 && seqs[b->seq].stopped != MKC_BATCH_RUNNING) { /* -n 0 */
          free(b->hist);
          b->hist = NULL;
          b->seq = -1;
        }
      }
      n_busy += b->seq >= 0;
    }
    if (rc != 0 || n_busy == 0) break;
    if (n_busy > st->most_busy) st->most_busy = n_busy;
    /* a prompt longer than the share goes first, its slot alone, in chunks */
    int solo = -1;
    for (int s = 0; s < slots && solo < 0; s++)
      if (bs[s].seq >= 0 && seqs[bs[s].seq].n_prompt - bs[s].fed > share) solo = s;
    for (int s = 0; s < slots; s++) {
      busy *b = &bs[s];
      int take_part = b->seq >= 0 && (solo < 0 || s == solo);
      if (take_part)
        plan_inputs(p, s, b, &seqs[b->seq], solo >= 0 ? g->t_chunk : share, o->drafts, g->max_ctx);
      if (mkc_slots_set_inputs(p, s, b->in, take_part ? b->n_in : 0, b->n_fixed) != 0) rc = -1;
    }
    /* a step with no prompt piece in it: the decode rate's */
    int decode = solo < 0;
    for (int s = 0; s < slots; s++)
      decode &= bs[s].seq < 0 || bs[s].fed >= seqs[bs[s].seq].n_prompt;
    double t_step = mkc_seconds();
    if (rc != 0 || mkc_slots_step(p) != 0) {
      rc = -1;
      break;
    }
    t_step = mkc_seconds() - t_step;
    st->steps++;
    st->solo_steps += solo >= 0;
    size_t kv = 0;
    for (int s = 0; s < slots; s++) kv += bs[s].seq >= 0 ? mkc_slots_kv_used(p, s) : 0;
    if (kv > st->kv_peak) st->kv_peak = kv;
    long before = st->generated;
    for (int s = 0; s < slots && rc == 0; s++)
      if (bs[s].seq >= 0 && (solo < 0 || s == solo))
        rc = take(p, s, &bs[s], &seqs[bs[s].seq], o, g->max_ctx, st);
    if (decode) {
      st->decode_steps++;
      st->decode_seconds += t_step;
      st->decode_tokens += st->generated - before;
    }
  }
  st->seconds = mkc_seconds() - t0;
  for (int s = 0; s < slots; s++) free(bs[s].hist);
  free(bs);
  return rc;
}

void mkc_batch_free(mkc_batch_seq *seqs, int n) {
  for (int i = 0; i < n; i++) {
    free(seqs[i].out);
    seqs[i].out = NULL;
  }
}
