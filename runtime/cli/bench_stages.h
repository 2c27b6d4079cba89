/* bench --stages: each stage's time on the device (block 0's clock, from a
 * kernel generated with stage timers) next to the bytes it moves, as its
 * stage comment declares them, and the time those bytes take at the copy
 * bandwidth measured in the same run. */
#ifndef MKC_BENCH_STAGES_H
#define MKC_BENCH_STAGES_H

#include "codegen/graph.h"
#include "exec/session.h"

/* A column of the stages' table: each stage's time summed over `steps` steps, ns. */
typedef struct mkc_stage_col {
  const char *name;
  const double *ns; /* [g->n_stages] */
  int steps;
} mkc_stage_col;

/* The table: a row per stage of source's stage comments (kind, first node), each
 * column's mean us (n_cols <= 8), then the bytes the comment declares for a
 * step of `tokens` inputs at position pos, the first column's GB/s, and the
 * time those bytes take at copy_gbs (< 0: unknown). 0, or -1 after printing why. */
int mkc_stages_print(const mkc_graph *g, const char *source, int tokens, int pos,
                     const mkc_stage_col *cols, int n_cols, double copy_gbs);

/* Decodes prompt[0..n_prompt) and n_gen tokens at T = 1 on session s of
 * graph g whose kernel, source, was generated with stage timers, once with
 * the greedy options and once sampled, and where the kernel takes drafts
 * (t_max > 1) once more greedy with t_max - 1 drafts every step (a verify
 * step's stages, whatever is accepted), then prints the table (a column
 * each); copy_gbs < 0 when unknown. 0, or -1 after printing why. */
int mkc_bench_stages(mkc_session *s, const mkc_graph *g, const char *source, const int *prompt,
                     int n_prompt, int n_gen, const mkc_sampling *greedy,
                     const mkc_sampling *sampled, double copy_gbs);

#endif
