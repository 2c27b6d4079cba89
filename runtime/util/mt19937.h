/* The 32-bit Mersenne Twister (C++'s std::mt19937) and the draws llama.cpp's
 * evaluations make with it, so that a subset of a dataset's tasks chosen
 * "at random" is the one llama-perplexity chooses (it seeds 1): libstdc++'s
 * std::uniform_int_distribution<size_t>, and Winogrande's own float
 * scaling. */
#ifndef MKC_MT19937_H
#define MKC_MT19937_H

#include <stddef.h>
#include <stdint.h>

typedef struct mkc_mt19937 {
  uint32_t mt[624];
  int i;
} mkc_mt19937;

void mkc_mt19937_seed(mkc_mt19937 *r, uint32_t seed);
uint32_t mkc_mt19937_next(mkc_mt19937 *r);

/* A draw from [0, hi] as libstdc++'s uniform_int_distribution<size_t>(0, hi)
 * makes it from this engine (GCC 11 on: a multiply and, rarely, a retry). */
size_t mkc_mt19937_uniform(mkc_mt19937 *r, size_t hi);

#endif
