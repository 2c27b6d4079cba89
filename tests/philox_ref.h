/* Philox4x32 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
 * as 1, 2, 3", SC11), the host reference the kernel's counter-based
 * generator is checked against. Tests only; written from the paper. */
#ifndef MKC_PHILOX_REF_H
#define MKC_PHILOX_REF_H

#include <stdint.h>

#define PHILOX_M0 0xD2511F53u /* the round multipliers */
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* the key's Weyl increments: golden ratio, sqrt(3) - 1 */
#define PHILOX_W1 0xBB67AE85u

/* One round: two 32x32->64 products; their high halves, xored with the other
 * words and the key, and their low halves make the new counter. */
static inline void philox_round(uint32_t ctr[4], const uint32_t key[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * ctr[0], p1 = (uint64_t)PHILOX_M1 * ctr[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t c1 = ctr[1], c3 = ctr[3];
  ctr[0] = hi1 ^ c1 ^ key[0];
  ctr[1] = lo1;
  ctr[2] = hi0 ^ c3 ^ key[1];
  ctr[3] = lo0;
}

/* Philox4x32 with `rounds` rounds: the key is bumped by the Weyl constants
 * between rounds, not before the first. out may alias ctr. */
static inline void philox4x32_r(int rounds, const uint32_t ctr[4], const uint32_t key[2],
                                uint32_t out[4]) {
  uint32_t x[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
  for (int r = 0; r < rounds; r++) {
    if (r > 0) k[0] += PHILOX_W0, k[1] += PHILOX_W1;
    philox_round(x, k);
  }
  for (int i = 0; i < 4; i++) out[i] = x[i];
}

/* Philox4x32-10, the variant the kernel uses. */
static inline void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox4x32_r(10, ctr, key, out);
}

#endif
