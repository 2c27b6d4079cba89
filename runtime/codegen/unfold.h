/* A kernel's layer loop written out (codegen/fold.lua): what readers of the
 * stage comments (inspect, bench --stages) see as one stage per pass. */
#ifndef MKC_UNFOLD_H
#define MKC_UNFOLD_H

#include <stddef.h>

typedef struct mkc_unfolded {
  char *text;   /* the kernel with every pass written out */
  int *line_of; /* line_of[k]: the line of the kernel file that text's line k + 1 comes from */
  int n_lines;  /* lines of text */
  int folded;   /* whether the kernel had a layer loop */
} mkc_unfolded;

/* Fills u from source: a copy when it has no loop. -1 (with why) when the loop
 * or its tables are not what codegen writes. */
int mkc_unfold(const char *source, mkc_unfolded *u, char *why, size_t why_size);
void mkc_unfolded_free(mkc_unfolded *u);

#endif
