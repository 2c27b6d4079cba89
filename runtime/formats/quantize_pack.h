/* One block of a scaled-integer type as its numbers (the f16 scales' bits,
 * the sub-block scales and mins, each element's code), and those numbers laid
 * out as the type's bytes. quantize.c chooses the numbers so that the grid
 * covers each block; quantize_fit.c chooses them for the least error. */
#ifndef MKC_QUANTIZE_PACK_H
#define MKC_QUANTIZE_PACK_H

#include <stdint.h>

typedef struct mkc_qblock {
  uint16_t d;    /* f16 bits: the block's step (K and IQ4_XS types: of its scales) */
  uint16_t m;    /* f16 bits: Q4_1 and Q5_1's offset, Q2_K, Q4_K and Q5_K's dmin */
  int sc[16];    /* sub-block scales, signed where the type's are (Q3_K, Q6_K, IQ4_XS) */
  int mn[16];    /* sub-block mins (Q2_K, Q4_K, Q5_K) */
  int code[256]; /* as stored: Q4_0 q + 8, Q5_0 q + 16, Q3_K q + 4, Q6_K q + 32, IQ4 a level */
} mkc_qblock;

/* Writes p as a block of type (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K, IQ4_NL or IQ4_XS) at b. Returns 0, or -1 for another type. */
int mkc_qblock_pack(uint32_t type, const mkc_qblock *p, uint8_t *b);

#endif
