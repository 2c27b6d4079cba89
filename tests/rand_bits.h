/* The tests' random numbers (xorshift, seeded by the test) and bf16 rounding
 * (to nearest, ties to even), shared by the matvec tests that build rows. */
#ifndef MKC_TEST_RAND_BITS_H
#define MKC_TEST_RAND_BITS_H
#include <stdint.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (next_u32() % 100000) / 1e5f; }

static uint16_t bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}
#endif
