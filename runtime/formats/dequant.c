/* ggml tensor types: the block table, half-precision conversions and
 * dequantization to float (and from there to bf16). The block layouts follow
 * the public ggml format description; each reader below says where every bit
 * of an element lives. */
#include "dequant.h"

#include <math.h>
#include <string.h>

#include "weights.h"

/* Each product and sum rounded on its own, as ggml's reference and gguf-py
 * compute them: no a * b + c fused into one rounding. GCC fuses only outside
 * the ISO modes (the build is -std=c11); clang needs telling. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Sizes of every type ggml defines, readable or not, so a file holding any of
 * them can still be bounds-checked and described. */
static const mkc_ggml_type_info TYPES[MKC_GGML_TYPE_COUNT] = {
    [0] = {"F32", 1, 4, 1},         [1] = {"F16", 1, 2, 1},         [2] = {"Q4_0", 32, 18, 1},
    [3] = {"Q4_1", 32, 20, 1},      [6] = {"Q5_0", 32, 22, 1},      [7] = {"Q5_1", 32, 24, 1},
    [8] = {"Q8_0", 32, 34, 1},      [9] = {"Q8_1", 32, 36, 0},      [10] = {"Q2_K", 256, 84, 1},
    [11] = {"Q3_K", 256, 110, 1},   [12] = {"Q4_K", 256, 144, 1},   [13] = {"Q5_K", 256, 176, 1},
    [14] = {"Q6_K", 256, 210, 1},   [15] = {"Q8_K", 256, 292, 0},   [16] = {"IQ2_XXS", 256, 66, 1},
    [17] = {"IQ2_XS", 256, 74, 1},  [18] = {"IQ3_XXS", 256, 98, 1}, [19] = {"IQ1_S", 256, 50, 1},
    [20] = {"IQ4_NL", 32, 18, 1},   [21] = {"IQ3_S", 256, 110, 1},  [22] = {"IQ2_S", 256, 82, 1},
    [23] = {"IQ4_XS", 256, 136, 1}, [24] = {"I8", 1, 1, 0},         [25] = {"I16", 1, 2, 0},
    [26] = {"I32", 1, 4, 0},        [27] = {"I64", 1, 8, 0},        [28] = {"F64", 1, 8, 0},
    [29] = {"IQ1_M", 256, 56, 1},   [30] = {"BF16", 1, 2, 1},       [34] = {"TQ1_0", 256, 54, 1},
    [35] = {"TQ2_0", 256, 66, 1},   [39] = {"MXFP4", 32, 17, 1},    [40] = {"NVFP4", 64, 36, 1},
    [41] = {"Q1_0", 128, 18, 1},    [42] = {"Q2_0", 64, 18, 1},
};

const mkc_ggml_type_info *mkc_ggml_type(uint32_t type) {
  return type < MKC_GGML_TYPE_COUNT && TYPES[type].name ? &TYPES[type] : NULL;
}

const char *mkc_dequant_type_names(void) {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, "
         "IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, MXFP4, NVFP4, TQ1_0, "
         "TQ2_0, Q1_0, Q2_0";
}

/* Deliberately alike the bf16 conversions (weights.c) in shape: another format. */
float mkc_f16_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in float */
    float f = ldexpf((float)mant, -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | mant << 13; /* inf, NaN */
  else
    bits = sign | (exp + 112) << 23 | mant << 13;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t mkc_float_to_f16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffffu, exp = abs >> 23;
  if (abs > 0x7f800000u) return sign | 0x7e00 | (uint16_t)((abs >> 13) & 0x3ff); /* quiet NaN */
  if (abs >= 0x477ff000u) return sign | 0x7c00; /* 65520 and up round to inf */
  if (exp < 113) {                              /* below 2^-14: a half subnormal or zero */
    if (exp < 102) return sign;                 /* below 2^-25: rounds to zero */
    uint32_t mant = (abs & 0x7fffff) | 0x800000, shift = 126 - exp;
    uint32_t h = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) h++;
    return sign | (uint16_t)h;
  }
  uint32_t h = (exp - 112) << 10 | (abs & 0x7fffff) >> 13, rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* a carry moves into the exponent */
  return sign | (uint16_t)h;
}

static float f16_at(const uint8_t *p) { return mkc_f16_to_float((uint16_t)(p[0] | p[1] << 8)); }

/* Q8_0, 34 bytes per 32: f16 d, int8 q[32]; x = d * q. */
static void block_q8_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int i = 0; i < 32; i++) y[i] = d * (float)(int8_t)b[2 + i];
}

/* The blocks of 32: element i < 16 is the low nibble of byte i of q, element
 * i + 16 the high one; with qh (Q5_0, Q5_1: 4 bytes, little-endian), bit i of
 * it is element i's fifth bit. Without an offset x = d * (q - zero), with one
 * (m) x = d * q + m. */
static void small_block(float d, int zero, const float *m, const uint8_t *qh, const uint8_t *q,
                        float *y) {
  uint32_t h =
      qh ? (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24
         : 0;
  for (int i = 0; i < 32; i++) {
    int code = (i < 16 ? q[i] & 0xf : q[i - 16] >> 4) | (int)((h >> i) & 1) << 4;
    y[i] = m ? d * (float)code + *m : d * (float)(code - zero);
  }
}

/* Q4_0, 18 bytes per 32: f16 d, 16 bytes of nibbles; x = d * (q - 8). */
static void block_q4_0(const uint8_t *b, float *y) {
  small_block(f16_at(b), 8, NULL, NULL, b + 2, y);
}

/* Q5_0, 22 bytes per 32: f16 d, 4 bytes of fifth bits, 16 of nibbles; x = d * (q - 16). */
static void block_q5_0(const uint8_t *b, float *y) {
  small_block(f16_at(b), 16, NULL, b + 2, b + 6, y);
}

/* Q4_1, 20 bytes per 32: f16 d, f16 m, nibbles as in Q4_0; x = d * q + m. */
static void block_q4_1(const uint8_t *b, float *y) {
  float m = f16_at(b + 2);
  small_block(f16_at(b), 0, &m, NULL, b + 4, y);
}

/* Q5_1, 24 bytes per 32: f16 d, f16 m, 4 bytes of fifth bits, nibbles; x = d * q + m. */
static void block_q5_1(const uint8_t *b, float *y) {
  float m = f16_at(b + 2);
  small_block(f16_at(b), 0, &m, b + 4, b + 8, y);
}

/* Q4_K, 144 bytes per 256: f16 d, f16 dmin, 12 bytes of 6-bit scales and
 * mins for 8 sub-blocks of 32, 128 bytes of nibbles. Sub-block j < 4: scale
 * and min are the low 6 bits of bytes j and j + 4; j >= 4: the low 4 bits
 * are the nibbles of byte j + 4, the high 2 bits the top bits of bytes j - 4
 * (scale) and j (min). Each 64 elements share 32 bytes: low nibbles are the
 * first sub-block, high nibbles the second. x = d * scale * q - dmin * min. */
static void k_scale_min(const uint8_t *s, int j, int *scale, int *min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
    *min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

/* Q4_K and Q5_K: sub-block j's nibbles in q, and with qh (Q5_K), bit j of qh
 * byte l as element 32j + l's fifth bit. */
static void k_block(const uint8_t *b, const uint8_t *qh, const uint8_t *q, float *y) {
  float d = f16_at(b), dmin = f16_at(b + 2);
  for (int j = 0; j < 8; j++) {
    int scale, min;
    k_scale_min(b + 4, j, &scale, &min);
    float d1 = d * (float)scale, m1 = dmin * (float)min;
    const uint8_t *qj = q + (j / 2) * 32;
    int shift = (j % 2) * 4;
    for (int l = 0; l < 32; l++) {
      int fifth = qh ? ((qh[l] >> j) & 1) << 4 : 0;
      y[j * 32 + l] = d1 * (float)(((qj[l] >> shift) & 0xf) | fifth) - m1;
    }
  }
}

static void block_q4_k(const uint8_t *b, float *y) { k_block(b, NULL, b + 16, y); }

/* Q5_K, 176 bytes per 256: Q4_K's f16 d, dmin and 12 bytes of scales and
 * mins, then 32 bytes of fifth bits (qh), then Q4_K's 128 bytes of nibbles.
 * Element 32j + l (sub-block j) adds 16 when bit j of qh byte l is set:
 * x = d * scale * (nibble + 16 bit) - dmin * min. */
static void block_q5_k(const uint8_t *b, float *y) { k_block(b, b + 16, b + 48, y); }

/* Q2_K and Q3_K: 256 elements in 16 sub-blocks of 16. Element e = 128 n + 32 j
 * + l (n < 2, j < 4, l < 32) has its low 2 bits at bits 2j, 2j + 1 of qs byte
 * 32 n + l, and sub-block 8 n + 2 j + l / 16's scale. */
static int low_pair(const uint8_t *qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> 2 * (e % 128 / 32)) & 3;
}
int mkc_k16_sub(int e) { return 8 * (e / 128) + 2 * (e % 128 / 32) + e % 32 / 16; }
/* Sub-block s's first element (its 16 are consecutive): s = 8 n + 2 j + h, e = 128 n + 32 j + 16 h.
 */
static int k16_first(int s) { return 128 * (s / 8) + 32 * (s % 8 / 2) + 16 * (s % 2); }

/* Q2_K, 84 bytes per 256: 16 bytes of 4-bit scales (low nibble) and mins
 * (high) of the sub-blocks, 64 bytes of pairs, f16 d, f16 dmin;
 * x = (d * scale) * q - dmin * min. */
static void block_q2_k(const uint8_t *b, float *y) {
  float d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int s = 0; s < 16; s++) {
    float dl = d * (float)(b[s] & 0xf), ml = dmin * (float)(b[s] >> 4);
    for (int e = k16_first(s); e < k16_first(s) + 16; e++)
      y[e] = dl * (float)low_pair(b + 16, e) - ml;
  }
}

/* Q3_K, 110 bytes per 256: 32 bytes of third bits (hmask), 64 of pairs, 12 of
 * 6-bit scales, f16 d. Sub-block s's scale has as its low 4 bits the low
 * (s < 8) or high nibble of byte s % 8, as its top 2 bits bits 2 (s / 4) and
 * up of byte 8 + s % 4, less 32. Element e's third bit is bit 4 n + j of
 * hmask byte l; x = (d * scale) * (q - 4), q its 3 bits. */
static void block_q3_k(const uint8_t *b, float *y) {
  const uint8_t *hmask = b, *sc = b + 96;
  float d = f16_at(b + 108);
  for (int s = 0; s < 16; s++) {
    int scale = ((s < 8 ? sc[s] : sc[s - 8] >> 4) & 0xf) | ((sc[8 + s % 4] >> 2 * (s / 4)) & 3)
                                                               << 4;
    float dl = d * (float)(scale - 32);
    for (int e = k16_first(s); e < k16_first(s) + 16; e++) {
      int third = (hmask[e % 32] >> (4 * (e / 128) + e % 128 / 32)) & 1;
      y[e] = dl * (float)(low_pair(b + 32, e) - (third ? 0 : 4));
    }
  }
}

const int8_t mkc_iq4nl_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

/* IQ4_NL, 18 bytes per 32: f16 d, nibbles as Q4_0's indexing the levels; x = d * level. */
static void block_iq4_nl(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int i = 0; i < 16; i++) {
    y[i] = d * (float)mkc_iq4nl_levels[b[2 + i] & 0xf];
    y[i + 16] = d * (float)mkc_iq4nl_levels[b[2 + i] >> 4];
  }
}

const int8_t mkc_mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float mkc_e8m0_half(uint8_t e) { return ldexpf(1.0f, (int)e - 128); }

/* MXFP4, 17 bytes per 32 (gpt-oss's experts): an E8M0 scale byte e, nibbles as Q4_0's indexing
 * the levels; x = 2^(e - 128) * level (ggml's dequantize_row_mxfp4). */
static void block_mxfp4(const uint8_t *b, float *y) {
  float d = mkc_e8m0_half(b[0]);
  for (int i = 0; i < 16; i++) {
    y[i] = d * (float)mkc_mxfp4_levels[b[1 + i] & 0xf];
    y[i + 16] = d * (float)mkc_mxfp4_levels[b[1 + i] >> 4];
  }
}

/* NVFP4, 36 bytes per 64: four UE4M3 scale bytes, one per 16, then per 16 8 bytes of nibbles
 * (element j < 8 the low nibble of byte j, j + 8 the high one) indexing MXFP4's levels; x =
 * scale / 2 * level (ggml's dequantize_row_nvfp4). */
float mkc_ue4m3_half(uint8_t e) {
  if (e == 0 || e == 0x7f) return 0.0f;
  int exp = e >> 3 & 15, man = e & 7;
  float v = exp ? ldexpf(1.0f + (float)man / 8.0f, exp - 7) : ldexpf((float)man, -9);
  return v * 0.5f;
}
static void block_nvfp4(const uint8_t *b, float *y) {
  for (int s = 0; s < 4; s++) {
    float d = mkc_ue4m3_half(b[s]);
    for (int j = 0; j < 8; j++) {
      y[16 * s + j] = (float)mkc_mxfp4_levels[b[4 + 8 * s + j] & 0xf] * d;
      y[16 * s + j + 8] = (float)mkc_mxfp4_levels[b[4 + 8 * s + j] >> 4] * d;
    }
  }
}

/* Trit n (0: the most significant) of a byte packing 5 as ceil(value * 256 / 243): multiplying by
 * 3^n (mod 256) brings trit n to the top, times 3 over 256 reads it (ggml's TQ1_0 layout). */
static int tq1_trit(uint8_t q, int n) {
  static const uint8_t POW3[5] = {1, 3, 9, 27, 81};
  return (uint8_t)(q * POW3[n]) * 3 >> 8;
}

/* TQ1_0, 54 bytes per 256 (ternary: -1, 0, 1 times d): 48 bytes of 5 trits, 4 bytes of 4, f16 d
 * at 52. Elements 0..159: trit n of byte m < 32 is element 32 n + m; 160..239: trit n of byte
 * 32 + m (m < 16) is 160 + 16 n + m; 240..255: trit n of byte 48 + j (j < 4) is 240 + 4 n + j.
 * x = (trit - 1) * d. */
static void block_tq1_0(const uint8_t *b, float *y) {
  float d = f16_at(b + 52);
  for (int e = 0; e < 256; e++) {
    int t = e < 160   ? tq1_trit(b[e % 32], e / 32)
            : e < 240 ? tq1_trit(b[32 + (e - 160) % 16], (e - 160) / 16)
                      : tq1_trit(b[48 + (e - 240) % 4], (e - 240) / 4);
    y[e] = (float)(t - 1) * d;
  }
}

/* TQ2_0, 66 bytes per 256: 64 bytes of 2-bit codes as Q2_K's (element 128 n + 32 l + m in bits
 * 2 l of byte 32 n + m), f16 d at 64; x = (code - 1) * d. */
static void block_tq2_0(const uint8_t *b, float *y) {
  float d = f16_at(b + 64);
  for (int e = 0; e < 256; e++)
    y[e] = (float)((b[32 * (e >> 7) + (e & 31)] >> 2 * (e >> 5 & 3) & 3) - 1) * d;
}

/* Q1_0, 18 bytes per 128: f16 d, then a bit per element (element i: bit i % 8 of byte i / 8);
 * x = bit ? d : -d. */
static void block_q1_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int i = 0; i < 128; i++) y[i] = b[2 + i / 8] >> i % 8 & 1 ? d : -d;
}

/* Q2_0, 18 bytes per 64: f16 d, then 2 bits per element (element i: bits 2 (i % 4) of byte
 * i / 4); x = (code - 1) * d. */
static void block_q2_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int i = 0; i < 64; i++) y[i] = (float)((b[2 + i / 4] >> 2 * (i % 4) & 3) - 1) * d;
}

/* IQ4_XS, 136 bytes per 256: f16 d, a u16 of the 8 sub-blocks' top 2 scale
 * bits (2j), 4 bytes of their low 4 (nibble j % 2 of byte j / 2), then per
 * sub-block of 32 16 bytes of IQ4_NL's nibbles; x = d * (scale - 32) * level. */
static void block_iq4_xs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  unsigned high = (unsigned)(b[2] | b[3] << 8);
  for (int j = 0; j < 8; j++) {
    int scale = ((b[4 + j / 2] >> 4 * (j % 2)) & 0xf) | (int)((high >> 2 * j) & 3) << 4;
    float dl = d * (float)(scale - 32);
    const uint8_t *q = b + 8 + 16 * j;
    for (int i = 0; i < 16; i++) {
      y[32 * j + i] = dl * (float)mkc_iq4nl_levels[q[i] & 0xf];
      y[32 * j + i + 16] = dl * (float)mkc_iq4nl_levels[q[i] >> 4];
    }
  }
}

/* The IQ1, IQ2 and IQ3 grids (templates/iq_grids.cuh). */
#define MKC_TABLE static const
#define MKC_IQ_ALL 1
#include "iq_grids.cuh"

/* A 7-bit sign index as ggml stores it for IQ2_XXS, IQ2_XS and IQ3_XXS: the
 * signs of 8 elements (bit j set: element j negative), the eighth the parity
 * of the other seven (an even count of minus signs). */
static int iq_signs(int index) { return index | (__builtin_popcount((unsigned)index) & 1) << 7; }

/* n elements of a group from its grid word (byte j element j) and sign bits, times db. */
static void grid_group(float db, uint64_t grid, int signs, int n, float *y) {
  for (int j = 0; j < n; j++) {
    float v = db * (float)(grid >> 8 * j & 0xff);
    y[j] = signs >> j & 1 ? -v : v;
  }
}

static unsigned u16_at(const uint8_t *p) { return (unsigned)(p[0] | p[1] << 8); }
static uint32_t u32_at(const uint8_t *p) {
  return (uint32_t)u16_at(p) | (uint32_t)u16_at(p + 2) << 16;
}

/* IQ2_XXS, 66 bytes per 256: f16 d, then per sub-block s of 32 two words: the
 * first 4 grid indices (bytes), the second 4 sign indices (7 bits each) and a
 * 4-bit scale on top; x = d (0.5 + scale) / 4 * grid value, signed. */
static void block_iq2_xxs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int s = 0; s < 8; s++) {
    uint32_t aux = u32_at(b + 2 + 8 * s + 4);
    float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; l++)
      grid_group(db, mkc_iq2xxs_grid[b[2 + 8 * s + l]], iq_signs(aux >> 7 * l & 127), 8,
                 y + 32 * s + 8 * l);
  }
}

/* IQ2_XS, 74 bytes per 256: f16 d, 32 u16 (a 9-bit grid index, a 7-bit sign
 * index above it) for groups of 8, 8 bytes of 4-bit scales (one per 16,
 * low nibble first); x = d (0.5 + scale) / 4 * grid value, signed. */
static void block_iq2_xs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int g = 0; g < 32; g++) {
    unsigned q = u16_at(b + 2 + 2 * g);
    float db = d * (0.5f + (float)(b[66 + g / 4] >> 4 * (g / 2 % 2) & 0xf)) * 0.25f;
    grid_group(db, mkc_iq2xs_grid[q & 511], iq_signs((int)(q >> 9)), 8, y + 8 * g);
  }
}

/* IQ2_S, 82 bytes per 256: f16 d, 32 bytes of grid indices' low 8 bits, 32
 * bytes of signs (one per group of 8), 8 bytes of their top 2 bits (4
 * groups a byte), 8 bytes of 4-bit scales as IQ2_XS's. */
static void block_iq2_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int g = 0; g < 32; g++) {
    int index = b[2 + g] | (b[66 + g / 4] >> 2 * (g % 4) & 3) << 8;
    float db = d * (0.5f + (float)(b[74 + g / 4] >> 4 * (g / 2 % 2) & 0xf)) * 0.25f;
    grid_group(db, mkc_iq2s_grid[index], b[34 + g], 8, y + 8 * g);
  }
}

/* IQ3_XXS, 98 bytes per 256: f16 d, 64 grid indices (4 elements each), then
 * per sub-block of 32 a word of 4 sign indices and a 4-bit scale as IQ2_XXS's;
 * x = d (0.5 + scale) / 2 * grid value, signed. */
static void block_iq3_xxs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int s = 0; s < 8; s++) {
    uint32_t aux = u32_at(b + 66 + 4 * s);
    float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; l++) {
      int signs = iq_signs(aux >> 7 * l & 127), g = 4 * s + l;
      grid_group(db, mkc_iq3xxs_grid[b[2 + 2 * g]], signs, 4, y + 8 * g);
      grid_group(db, mkc_iq3xxs_grid[b[3 + 2 * g]], signs >> 4, 4, y + 8 * g + 4);
    }
  }
}

/* IQ3_S, 110 bytes per 256: f16 d, 64 bytes of grid indices' low 8 bits, 8
 * bytes of their ninth bits, 32 bytes of signs (one per group of 8), 4 bytes
 * of 4-bit scales (one per 32); x = d (1 + 2 scale) * grid value, signed. */
static void block_iq3_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int g = 0; g < 32; g++) {
    float db = d * (float)(1 + 2 * (b[106 + g / 8] >> 4 * (g / 4 % 2) & 0xf));
    for (int h = 0; h < 2; h++) {
      int i = 2 * g + h, index = b[2 + i] | (b[66 + i / 8] >> i % 8 & 1) << 8;
      grid_group(db, mkc_iq3s_grid[index], b[74 + g] >> 4 * h, 4, y + 8 * g + 4 * h);
    }
  }
}

/* A group of 8 of IQ1_S or IQ1_M: dl (grid value + delta), the grid -1, 0, 1 (bytes 0, 1, 2). */
static void iq1_group(float dl, float delta, uint64_t grid, float *y) {
  for (int j = 0; j < 8; j++) y[j] = dl * ((float)((int)(grid >> 8 * j & 0xff) - 1) + delta);
}

/* IQ1_S, 50 bytes per 256: f16 d, 32 bytes of grid indices' low 8 bits, then per
 * sub-block of 32 a u16: 3 more bits of each of its 4 indices (bits 3l..3l+2), a 3-bit
 * scale (12..14) and the delta's sign (15); x = d (2 scale + 1) (grid value +- 1/8). */
static void block_iq1_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int s = 0; s < 8; s++) {
    unsigned h = u16_at(b + 34 + 2 * s);
    float dl = d * (float)(2 * (h >> 12 & 7) + 1), delta = h & 0x8000 ? -0.125f : 0.125f;
    for (int l = 0; l < 4; l++)
      iq1_group(dl, delta, mkc_iq1s_grid[b[2 + 4 * s + l] | (h >> 3 * l & 7) << 8],
                y + 32 * s + 8 * l);
  }
}

/* IQ1_M, 56 bytes per 256: 32 bytes of grid indices' low 8 bits, 16 bytes of a nibble
 * per group of 8 (3 more index bits, the delta's sign), 4 u16 of 3-bit scales (one per
 * 16, bits 3j..3j+2) whose top nibbles make the f16 d (the first u16's lowest). */
static void block_iq1_m(const uint8_t *b, float *y) {
  unsigned sc[4];
  for (int k = 0; k < 4; k++) sc[k] = u16_at(b + 48 + 2 * k);
  float d = mkc_f16_to_float(
      (uint16_t)(sc[0] >> 12 | (sc[1] >> 8 & 0xf0) | (sc[2] >> 4 & 0xf00) | (sc[3] & 0xf000)));
  for (int g = 0; g < 32; g++) {
    unsigned h = b[32 + g / 2] >> 4 * (g % 2) & 15;
    float dl = d * (float)(2 * (sc[g / 8] >> 3 * (g / 2 % 4) & 7) + 1);
    iq1_group(dl, h & 8 ? -0.125f : 0.125f, mkc_iq1s_grid[b[g] | (h & 7) << 8], y + 8 * g);
  }
}

/* Q6_K, 210 bytes per 256: 128 bytes of low nibbles (ql), 64 bytes of high
 * 2-bit pairs (qh), int8 scales for 16 sub-blocks of 16, f16 d. In each half
 * of 128, element l + 32k (l < 32, k < 4) takes its low 4 bits from ql byte
 * l + 32 (k % 2) (low nibble for k < 2, high for k >= 2) and its high 2 bits
 * from qh byte l, bits 2k..2k+1. x = d * scale * (q - 32). */
static void block_q6_k(const uint8_t *b, float *y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *scales = (const int8_t *)(b + 192);
  float d = f16_at(b + 208);
  for (int half = 0; half < 2; half++) {
    for (int k = 0; k < 4; k++) {
      for (int l = 0; l < 32; l++) {
        int i = half * 128 + k * 32 + l;
        int lo = (ql[half * 64 + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xf;
        int hi = (qh[half * 32 + l] >> (2 * k)) & 3;
        y[i] = d * (float)scales[i / 16] * (float)((lo | hi << 4) - 32);
      }
    }
  }
}

typedef void (*block_reader)(const uint8_t *b, float *y);

/* The block types read here, by ggml type id (dequant.h's list). */
static const block_reader READERS[] = {MKC_BLOCK_TYPES(MKC_BLOCK_FN)};

static block_reader reader_for(uint32_t type) {
  return type < sizeof READERS / sizeof *READERS ? READERS[type] : NULL;
}

static float f32_at(const uint8_t *p) {
  uint32_t bits =
      (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

int mkc_dequant_f32(uint32_t type, const void *src, size_t n, float *dst) {
  const uint8_t *p = src;
  switch (type) {
  case MKC_GGML_F32:
    for (size_t i = 0; i < n; i++) dst[i] = f32_at(p + 4 * i);
    return 0;
  case MKC_GGML_F16:
    for (size_t i = 0; i < n; i++) dst[i] = f16_at(p + 2 * i);
    return 0;
  case MKC_GGML_BF16:
    for (size_t i = 0; i < n; i++)
      dst[i] = mkc_bf16_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
    return 0;
  }
  block_reader read = reader_for(type);
  if (!read) return -1;
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  for (size_t i = 0; i + (size_t)info->block <= n; i += (size_t)info->block) {
    read(p, dst + i);
    p += info->block_bytes;
  }
  return 0;
}

/* Through floats a chunk at a time (256 elements are whole blocks of every
 * readable type), each rounded to bf16. BF16 is copied as it is. */
int mkc_dequant_bf16(uint32_t type, const void *src, size_t n, uint16_t *dst) {
  const uint8_t *p = src;
  if (type == MKC_GGML_BF16) {
    for (size_t i = 0; i < n; i++) dst[i] = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    return 0;
  }
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  if (!info || !info->readable) return -1;
  float chunk[256];
  for (size_t i = 0; i < n; i += 256) {
    size_t m = n - i < 256 ? (n - i) / (size_t)info->block * (size_t)info->block : 256;
    mkc_dequant_f32(type, p + i / (size_t)info->block * (size_t)info->block_bytes, m, chunk);
    for (size_t j = 0; j < m; j++) dst[i + j] = mkc_float_to_bf16(chunk[j]);
  }
  return 0;
}
