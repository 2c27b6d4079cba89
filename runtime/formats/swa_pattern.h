/* Which layers attend over a sliding window, as one flag a layer (GGUF's
 * sliding_window_pattern array, config.json's layer_types), and the
 * L local : 1 global pattern from layer 0 the llama graph runs. */
#ifndef MKC_SWA_PATTERN_H
#define MKC_SWA_PATTERN_H

#include <stddef.h>

/* The period p that local[0..n) sets (layer l local where l % p < p - 1; 0:
 * every layer local): the first global layer ends it. *bad: the first layer
 * that period does not give, or -1 when it gives them all. */
int mkc_swa_period(const unsigned char *local, int n, int *bad);
/* For a message: "every layer global", "5 local : 1 global", ... */
void mkc_swa_describe(int period, char *buf, size_t cap);

#endif
