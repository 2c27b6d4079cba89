/* Each stage's time in the last step of a kernel built with stage timers. */
#ifndef MKC_STAGE_TIMERS_H
#define MKC_STAGE_TIMERS_H

#include "backend/backend.h"
#include "codegen/graph.h"

/* The last step's time in each of g's n_stages stages, ns (block 0's clock), into ns. 0, or
 * -1: the kernel has no timers, the backend no scratch (ref), or the read failed. */
int mkc_backend_stage_ns(mkc_backend *b, const mkc_graph *g, double *ns);

#endif
