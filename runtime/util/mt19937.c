/* std::mt19937 and libstdc++'s uniform integers over it (mt19937.h). The
 * constants are the generator's published parameters. */
#include "mt19937.h"

void mkc_mt19937_seed(mkc_mt19937 *r, uint32_t seed) {
  r->mt[0] = seed;
  for (uint32_t k = 1; k < 624; k++)
    r->mt[k] = 1812433253u * (r->mt[k - 1] ^ (r->mt[k - 1] >> 30)) + k;
  r->i = 624;
}

/* The next 624 words of state. */
static void twist(mkc_mt19937 *r) {
  for (int k = 0; k < 624; k++) {
    uint32_t y = (r->mt[k] & 0x80000000u) | (r->mt[(k + 1) % 624] & 0x7fffffffu);
    r->mt[k] = r->mt[(k + 397) % 624] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0);
  }
  r->i = 0;
}

uint32_t mkc_mt19937_next(mkc_mt19937 *r) {
  if (r->i >= 624) twist(r);
  uint32_t y = r->mt[r->i++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

size_t mkc_mt19937_uniform(mkc_mt19937 *r, size_t hi) {
  if (hi >= 0xffffffffu)
    return mkc_mt19937_next(r); /* the engine's own range (hi past it: unused) */
  /* Lemire's method in 32 bits, as libstdc++ takes it for a 32-bit engine: the high word of
   * draw * range, drawing again while the low word falls in the biased sliver */
  uint32_t range = (uint32_t)hi + 1;
  uint64_t product = (uint64_t)mkc_mt19937_next(r) * range;
  uint32_t low = (uint32_t)product;
  if (low < range) {
    uint32_t threshold = -range % range;
    while (low < threshold) {
      product = (uint64_t)mkc_mt19937_next(r) * range;
      low = (uint32_t)product;
    }
  }
  return (size_t)(product >> 32);
}
