/* A row of random quantized blocks of any type the kernels decode, its scales
 * small and valid (the matvec and tile tests' weights). */
#ifndef MKC_TEST_RAND_ROWS_H
#define MKC_TEST_RAND_ROWS_H
#include "formats/dequant.h"
#include "rand_bits.h"

#include <stdlib.h>

static void put_f16(unsigned char *p, float f) {
  uint16_t h = mkc_float_to_f16(f);
  p[0] = (unsigned char)h;
  p[1] = (unsigned char)(h >> 8);
}

/* A row of n elements of type: random payload bytes, scales small and valid. */
static unsigned char *make_row(int type, int n) {
  const mkc_ggml_type_info *ti = mkc_ggml_type((uint32_t)type);
  int blocks = n / ti->block;
  size_t bytes = (size_t)blocks * (size_t)ti->block_bytes;
  unsigned char *p = malloc(bytes + 16);
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)next_u32();
  for (int b = 0; b < blocks; b++) {
    unsigned char *q = p + (size_t)b * (size_t)ti->block_bytes;
    switch (type) {
    case MKC_GGML_BF16:
      for (int i = 0; i < ti->block; i++) {
        uint16_t h = bf16_of(uniform(-1, 1));
        memcpy(q + 2 * i, &h, 2);
      }
      break;
    case 8:  /* Q8_0 */
    case 2:  /* Q4_0 */
    case 6:  /* Q5_0 */
    case 20: /* IQ4_NL */
    case 23: /* IQ4_XS (its scale bits random) */
    case 16: /* IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: indices, signs and scales random */
    case 17:
    case 22:
    case 18:
    case 21:
    case 19: /* IQ1_S */
      put_f16(q, uniform(0.001f, 0.05f));
      break;
    case 29: { /* IQ1_M: d's nibble w tops scale word w (at 48 + 2w) */
      uint16_t h = mkc_float_to_f16(uniform(0.001f, 0.05f));
      for (int w = 0; w < 4; w++)
        q[49 + 2 * w] = (unsigned char)((q[49 + 2 * w] & 0x0f) | (h >> 4 * w & 0xf) << 4);
      break;
    }
    case 3:  /* Q4_1 */
    case 7:  /* Q5_1 */
    case 12: /* Q4_K */
    case 13: /* Q5_K */
      put_f16(q, uniform(0.001f, 0.05f));
      put_f16(q + 2, uniform(-0.05f, 0.05f));
      break;
    case 10: /* Q2_K: d, dmin last */
      put_f16(q + 80, uniform(0.001f, 0.05f));
      put_f16(q + 82, uniform(-0.05f, 0.05f));
      break;
    case 11: /* Q3_K: d last */
      put_f16(q + 108, uniform(0.001f, 0.05f));
      break;
    case 41: /* Q1_0, Q2_0: d first */
    case 42:
      put_f16(q, uniform(0.001f, 0.05f));
      break;
    case 34: /* TQ1_0, TQ2_0: d last */
      put_f16(q + 52, uniform(0.001f, 0.05f));
      break;
    case 35:
      put_f16(q + 64, uniform(0.001f, 0.05f));
      break;
    case 40: /* NVFP4: four UE4M3 scale bytes, steps 2^-5 .. 2^-1 or subnormal, bit 7 set or
              * not (ignored but for 0x7f, which is 0; it is among them) */
      for (int s = 0; s < 4; s++) {
        unsigned r = next_u32();
        q[s] = (unsigned char)((r & 3 ? 0x18 + (r >> 2) % 32 : (r >> 2) % 8) | (r & 64 ? 0x80 : 0));
      }
      if (b == 1) q[2] = 0x7f;
      break;
    case 39: /* MXFP4: an exponent byte, steps 2^-8 .. 2^-4 */
      q[0] = (unsigned char)(120 + next_u32() % 5);
      break;
    case 14: /* Q6_K: d last */
      put_f16(q + 208, uniform(0.001f, 0.05f));
      break;
    }
  }
  return p;
}
#endif
