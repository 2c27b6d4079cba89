/* Many sequences decoded together on a slot kernel's pool (exec/slots.h):
 * the sequences take the free slots in order, and a slot that finishes is
 * refilled with the next one. Each step every busy slot either feeds a piece
 * of its prompt or decodes its last token with up to `drafts` drafts from
 * prompt lookup over its own history; a prompt longer than a slot's share
 * of the step's rows is fed in chunks with its slot alone first; paged, the
 * first full pages of a prompt that a slot holds or kept are shared (a
 * prompt waits for a slot still feeding the same start). What each
 * sequence emits is what it emits decoded alone with the same drafts
 * (tests/test_slots.c, tests/test_batch.sh). */
#ifndef MKC_BATCH_H
#define MKC_BATCH_H

#include "exec/slots.h"

enum mkc_batch_stop { MKC_BATCH_RUNNING, MKC_BATCH_BUDGET, MKC_BATCH_STOP_TOKEN, MKC_BATCH_CTX };

typedef struct mkc_batch_seq {
  /* in */
  const int *prompt;
  int n_prompt;     /* 1..max_ctx */
  int n_predict;    /* tokens to generate; -1: until a stop token or a full context */
  mkc_sampling opt; /* its sampler (zeroed: greedy) */
  /* out */
  int *out; /* the generated tokens (malloc'd; mkc_batch_free frees), stop tokens excluded */
  int n_out;
  int stopped; /* enum mkc_batch_stop */
} mkc_batch_seq;

typedef struct mkc_batch_opts {
  int drafts;       /* per slot and step, capped by the slot's share of the step's rows */
  const int *stops; /* stop tokens (end of generation), n_stops of them */
  int n_stops;
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
  int most_busy;  /* the most slots busy in one step */
  size_t kv_peak; /* the most KV bytes the busy slots held at once (mkc_slots_kv_used) */
  long shared;    /* prompt positions whose pages another slot held (mkc_slots_share) */
} mkc_batch_stats;

/* Decodes seqs[0..n) on p. 0, or -1 after a message (a backend failure, a
 * prompt no slot can hold, a refused step). */
int mkc_batch_run(mkc_slots *p, mkc_batch_seq *seqs, int n, const mkc_batch_opts *o,
                  mkc_batch_stats *st);
void mkc_batch_free(mkc_batch_seq *seqs, int n);

#endif
