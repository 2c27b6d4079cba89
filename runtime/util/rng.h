/* splitmix64: a small, well-mixed 64-bit generator (Steele, Lea, Flood 2014).
 * It seeds the random weights' streams and draws the host sampler's numbers. */
#ifndef MKC_RNG_H
#define MKC_RNG_H

#include <stdint.h>

static inline uint64_t mkc_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif
