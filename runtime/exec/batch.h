/* Many sequences decoded together on a slot kernel's pool (exec/slots.h):
 * the sequences take the free slots in order, and a slot that finishes is
 * refilled with the next one. Each step every busy slot either feeds a piece
 * of its prompt or decodes its last token with up to `drafts` drafts from
 * prompt lookup over its own history; a prompt longer than a slot's share
 * of the step's rows is fed in chunks with its slot alone first; paged, the
 * first full pages of a prompt that a slot holds or kept are shared (a
 * prompt waits for a slot still feeding the same start). What each
 * sequence emits is what it emits decoded alone with the same drafts
 * (tests/test_slots.c, tests/test_batch.sh), JSON output too. */
#ifndef MKC_BATCH_H
#define MKC_BATCH_H

#include "exec/constrain.h"
#include "exec/draft_slots.h"
#include "exec/slots.h"

enum mkc_batch_stop {
  MKC_BATCH_RUNNING,
  MKC_BATCH_BUDGET,
  MKC_BATCH_STOP_TOKEN,
  MKC_BATCH_CTX,
  MKC_BATCH_CANCELLED, /* mkc_sched_cancel */
  MKC_BATCH_COMPLETE,  /* its constraint's document is whole */
  MKC_BATCH_FAILED,    /* its constraint could not go on (a message said why); the others do */
  MKC_BATCH_ASKED      /* its on_token asked to end after a token (run --batch -r) */
};

typedef struct mkc_batch_seq {
  /* in */
  const int *prompt;
  int n_prompt;  /* 1..max_ctx */
  int n_predict; /* tokens to generate; -1: until a stop token or a full context */
  /* its sampler, as mkc_sampling_check takes it (greedy: temp 0, top_p 1, repeat_penalty 1) */
  mkc_sampling opt;
  /* JSON output (exec/constrain.h), its document started; NULL: none. Its tokens are chosen on
   * the host from its logits, one a step with no drafts, as mkc_decode chooses them alone */
  mkc_constraint *constraint;
  /* Called with each token taken into out, in order; nonzero ends the sequence after that token
   * (MKC_BATCH_ASKED), the step's later tokens not taken. NULL: none. */
  int (*on_token)(void *ctx, int id);
  void *ctx;
  /* An embedding: its prompt is fed whole though n_predict is 0 (no page shared: every input's
   * row is computed), and after each step that fed n of its inputs on_hidden(ctx, pool, slot, n)
   * reads them (mkc_slots_hidden(pool, slot, 0..n-1)); nonzero fails the sequence
   * (MKC_BATCH_FAILED), the others go on. Fed whole, it ends (MKC_BATCH_BUDGET) and emits
   * nothing. NULL: a generation. */
  int (*on_hidden)(void *ctx, mkc_slots *p, int slot, int n);
  /* A full context shifts (mkc_decode_opts.shift): the first n_keep tokens stay, the older half
   * of the rest goes, and the sequence goes on as mkc_decode_more's would. Needs n_predict >= 0 */
  int shift, n_keep;
  int n_discard; /* what a shift drops after n_keep (llama-server's; 0: half the rest) */
  /* Its context, when smaller than the pool's (ollama's num_ctx): where it stops or shifts;
   * 0: the pool's */
  int max_ctx;
  /* out */
  int *out; /* the generated tokens (malloc'd; mkc_batch_free frees), stop tokens excluded */
  int n_out;
  /* with opt.logprobs = N > 0, beside out: each token's log-probability (lp[i]) and the N most
   * likely tokens at its place (top_ids, top_lps: MKC_LOGPROBS_MAX a token), as the kernel
   * computed them (the host for a constrained sequence); NULL otherwise */
  float *lp, *top_lps;
  int *top_ids;
  int stopped;              /* enum mkc_batch_stop */
  int shared;               /* its prompt positions another slot's pages held (mkc_slots_share) */
  long drafted, accepted;   /* its drafts offered and accepted */
  int shifts, shift_fed;    /* its context shifts, and the tokens they fed again */
  double t_start, t_prompt; /* mkc_seconds() when it took a slot, and when its prompt was in */
} mkc_batch_seq;

typedef struct mkc_batch_opts {
  int drafts; /* per slot and step, capped by the slot's share of the step's rows */
  /* 1: each slot's depth follows its own acceptance (exec/depth.h's rule, --draft-adaptive),
   * from 1 within [draft_min, drafts]; the timing gate is not used: a shared step's cost is
   * not one sequence's */
  int adaptive, draft_min;
  /* where the drafts come from: a draft pool (-md, --draft-layers: exec/draft_slots.h, the
   * slots' drafts made together before each step in which none feeds a long prompt alone);
   * NULL: prompt lookup over each sequence's own history */
  mkc_slot_drafter *drafter;
  const int *stops; /* stop tokens (end of generation), n_stops of them */
  int n_stops;
  /* Not NULL (a kernel with stage timers): each decode step's stage times (mkc_slots_stage_ns)
   * added here, g->n_stages of them; the stats count those steps (stage_steps) */
  double *stage_ns;
} mkc_batch_opts;

typedef struct mkc_batch_stats {
  int steps;      /* launches */
  int solo_steps; /* of them, prompt chunks with their slot alone */
  long generated, drafted, accepted;
  double seconds; /* wall time of the whole run */
  /* the steps with no prompt piece in them: their count, the step calls' wall time and the
   * tokens they emitted (the decode rate) */
  int decode_steps;
  double decode_seconds;
  long decode_tokens;
  int most_busy;   /* the most slots busy in one step */
  size_t kv_peak;  /* the most KV bytes the busy slots held at once (mkc_slots_kv_used) */
  long shared;     /* prompt positions whose pages another slot held (mkc_slots_share) */
  int stage_steps; /* decode steps whose stage times went into mkc_batch_opts.stage_ns */
  /* the depths the slots offered at (adaptive; constrained sequences, which never draft, not
   * counted), else both drafts; with adaptive and no decode step, lo > hi */
  int depth_lo, depth_hi;
} mkc_batch_stats;

/* The scheduler one step at a time, for sequences that arrive while others
 * decode (mkc serve --parallel). A sequence added waits in order for a free
 * slot; each mkc_sched_step refills the free slots, runs one launch and
 * takes its tokens into each sequence's out. A sequence must stay put from
 * mkc_sched_add until it has stopped (and mkc_batch_free'd after). */
typedef struct mkc_sched mkc_sched;
mkc_sched *mkc_sched_open(mkc_slots *p, const mkc_batch_opts *o); /* NULL + message */
/* Queues q (its out, n_out and stopped are reset). 0, or -1 when out of memory. */
int mkc_sched_add(mkc_sched *s, mkc_batch_seq *q);
/* One step: 1 when it ran, 0 when no sequence is running or waiting, -1 after
 * a message (as mkc_batch_run). */
int mkc_sched_step(mkc_sched *s);
/* Ends q now, running or waiting (MKC_BATCH_CANCELLED; what it emitted
 * stays in out): its slot is free for the next step, and q may go. */
void mkc_sched_cancel(mkc_sched *s, mkc_batch_seq *q);
int mkc_sched_pending(const mkc_sched *s); /* sequences in a slot or waiting for one */
/* The sequence in slot `slot` (running, or stopped and not yet released), or NULL when free. */
const mkc_batch_seq *mkc_sched_in_slot(const mkc_sched *s, int slot);
int mkc_sched_slot_of(const mkc_sched *s, const mkc_batch_seq *q); /* q's slot, or -1 */
const mkc_batch_stats *mkc_sched_stats(const mkc_sched *s);        /* so far (seconds: 0) */
void mkc_sched_close(mkc_sched *s);

/* Decodes seqs[0..n) on p. 0, or -1 after a message (a backend failure, a
 * prompt no slot can hold, a refused step). */
int mkc_batch_run(mkc_slots *p, mkc_batch_seq *seqs, int n, const mkc_batch_opts *o,
                  mkc_batch_stats *st);
void mkc_batch_free(mkc_batch_seq *seqs, int n);

#endif
