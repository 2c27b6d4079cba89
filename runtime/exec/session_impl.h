/* The session's insides, for the two files that keep it: session.c (steps,
 * rewinds) and snapshot.c (KV snapshots written back). Everyone else goes
 * through session.h. */
#ifndef MKC_SESSION_IMPL_H
#define MKC_SESSION_IMPL_H

#include "backend/backend.h"
#include "codegen/graph.h"
#include "mkc_state.h"

struct mkc_session {
  const mkc_graph *g;
  mkc_backend *b;
  mkc_state state; /* the step contract: inputs in; pos, status and tokens out */
  int *tokens;     /* [max_ctx]: the token at each position the cache holds (state.pos of them) */
  int n_snapshots; /* snapshots of this session not yet freed (exec/snapshot.h) */
};

#endif
