/* mkc imatrix --show-statistics: llama-imatrix's report on an importance matrix file, for
 * choosing which tensors to keep in more bits: per matrix the sum, extremes, mean and spread of
 * its columns' mean squared inputs, the share of columns that saw any, their entropy, the share
 * more than a standard deviation above the mean (ZD), and the cosine of its sums with the same
 * matrix's in the layer before; then per layer those weighted by the columns. */
#ifndef MKC_IMATRIX_STATS_H
#define MKC_IMATRIX_STATS_H

#include <stdio.h>

#include "formats/imatrix.h"

/* Writes the report of im (read from path, named in its first line) to out, in
 * llama-imatrix's layout, its float arithmetic in its order (so the digits agree). A .dat's
 * means are scaled back to sums by chunk_size, as llama-imatrix's -c does. 0, or -1 after a
 * message (no matrix with inputs to report on, or out of memory). */
int mkc_imatrix_show_statistics(const mkc_imatrix *im, const char *path, int chunk_size, FILE *out);

#endif
