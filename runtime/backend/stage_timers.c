/* The stage timers a kernel built with them leaves in scratch (codegen/buffers.lua: block 0's
 * u64 %globaltimer at the step's start and after each stage), as each stage's time. */
#include "stage_timers.h"

int mkc_backend_stage_ns(mkc_backend *b, const mkc_graph *g, double *ns) {
  int n = g->n_stages;
  if (!g->timers_offset || !b->ops->read_scratch || n <= 0) return -1;
  unsigned long long t[n + 1]; /* u64 readings: two floats of scratch each */
  if (b->ops->read_scratch(b, g->timers_offset, 2 * (size_t)(n + 1), (float *)t) != 0) return -1;
  for (int i = 0; i < n; i++) ns[i] = t[i + 1] >= t[i] ? (double)(t[i + 1] - t[i]) : 0.0;
  return 0;
}
