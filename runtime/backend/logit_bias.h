/* The logit bias table of mkc_sampling (templates/mkc_state.h): token ids
 * ascending, each once, a bias beside each. The CLI's -l and serve's
 * logit_bias both build it, so the insert lives below both. */
#ifndef MKC_BACKEND_LOGIT_BIAS_H
#define MKC_BACKEND_LOGIT_BIAS_H

/* Adds bias b to token id in a table of n entries with room for
 * MKC_BIAS_CAP: 1 when id was there (its bias now the sum), 0 when it took
 * its place in order, -1 when the table is full. */
int mkc_bias_add(int *ids, float *bias, int *n, int id, float b);

#endif
