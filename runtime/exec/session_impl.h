/* The session's insides, for the two files that keep it: session.c (steps,
 * rewinds) and snapshot.c (KV snapshots written back). Everyone else goes
 * through session.h. */
#ifndef MKC_SESSION_IMPL_H
#define MKC_SESSION_IMPL_H

#include "backend/backend.h"
#include "codegen/graph.h"
#include "exec/session.h"
#include "mkc_state.h"

/* A sliding window's ring of rows (kv_rows < max_ctx): position p at row
 * p % rows, so a step writing positions [p, p + T) overwrites the rows of
 * [p - rows, p + T - rows). Layers alike share one. */
typedef struct mkc_ring {
  int rows, window;
  int layer;       /* the first layer with it, for messages */
  int intact_from; /* the positions from here on still have their own rows */
} mkc_ring;

struct mkc_session {
  const mkc_graph *g;
  mkc_backend *b;
  mkc_state state; /* the step contract: inputs in; pos, status and tokens out */
  int *tokens;     /* [max_ctx]: the token at each position the cache holds (state.pos of them) */
  int n_snapshots; /* snapshots of this session not yet freed (exec/snapshot.h) */
  int n_rings;
  mkc_ring *rings;     /* [n_rings] */
  double step_seconds; /* wall time of the last step's backend call */
  int last_choice;     /* the input of the last step whose logits chose its last token; -1 */
};

/* The backend of kind for g (blocks: the cpu backend's grid, 0: its
 * default), after checking the grid and the plan's step sizes; NULL +
 * message. The slots' pool (exec/slots.c) opens its own. */
mkc_backend *mkc_session_open_backend(enum mkc_backend_kind kind, const mkc_graph *g,
                                      const mkc_kernel_src *src, const mkc_weights *w, int blocks);

/* The positions a token at pos attends to through ring r lie in
 * [mkc_ring_needs(r, pos), pos). */
int mkc_ring_needs(const mkc_ring *r, int pos);

/* Row `row` of the last step's log-probabilities (mkc_state.h's MKC_LP_STRIDE floats in the
 * kernel's scratch): the emitted token's (*lp) and the n most likely (ids, lps). 0 or -1. */
int mkc_logprobs_read(mkc_backend *b, const mkc_graph *g, int row, int n, float *lp, int *ids,
                      float *lps);

#endif
