/* Quantizers for the block types dequant.c reads. Each block's scales are
 * chosen first, so that the grid of values the reader can give covers the
 * block's values; each element then takes the code of the grid value nearest
 * to it. Scales are quantized (to f16, and for the K types to 6 or 8 bits)
 * upwards, never down, so covering holds after they are stored, and every
 * element is computed against the scale as stored: the error of an element is
 * at most half the step of its (sub-)block, plus float rounding.
 *
 *   Q8_0  step = max|x| / 127, rounded up to f16; codes -127..127 (ggml's).
 *   Q4_0  codes -8..7: the value of largest magnitude goes to the -8 end,
 *         within half a step of it (|step| >= max|x| / 8.5), and the largest
 *         value of the other sign within half a step of 7 (>= that / 7.5).
 *   Q4_1  m = min x rounded down to f16, step = (max x - m) / 15 rounded up.
 *   Q5_0  as Q4_0 with codes -16..15 (|step| >= max|x| / 16.5, the other
 *         sign's / 15.5).
 *   Q5_1  as Q4_1 with codes 0..31.
 *   Q4_K  per sub-block of 32: the offset dmin * mn reaches down to min(x, 0),
 *         the step d * sc then reaches up to max x; dmin and d (f16) are the
 *         largest of those / 63, mn and sc rounded up to 6 bits.
 *   Q5_K  as Q4_K with codes 0..31.
 *   Q2_K  as Q4_K per sub-block of 16 with codes 0..3 and 4-bit scales and
 *         mins (d and dmin the largest of those / 15).
 *   IQ4_NL the value of largest magnitude at the -127 level (|d| = max|x| /
 *         127 rounded up); each element the nearest of the 16 levels.
 *   IQ4_XS per sub-block of 32 as IQ4_NL, its step d (f16, the largest step
 *         / 31) times a 6-bit scale rounded up in magnitude and signed.
 *   Q3_K  per sub-block of 16 as Q4_0 with codes -4..3 (|step| >= max|x| /
 *         4.5 and >= the other sign's / 3.5); d (f16) is the largest step /
 *         31, the 6-bit scales rounded up in magnitude and signed.
 *   Q6_K  per sub-block of 16 as Q4_0 with codes -32..31 (|step| >= max|x| /
 *         32.5 and >= the other sign's / 31.5); d (f16) is the largest step /
 *         127, the int8 scales rounded up in magnitude and signed.
 *   IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: groups on the nearest entry of
 *         the format's grid (quantize_iq.c); no bound of this kind.
 *   TQ1_0, TQ2_0, Q1_0, Q2_0, NVFP4: ggml's own reference rules, byte for byte
 *         (quantize_low.c); no bound of this kind either. */
#include "quantize.h"

#include <math.h>
#include <string.h>

#include "dequant.h"
#include "quantize_low.h"
#include "quantize_iq.h"
#include "quantize_pack.h"
#include "util/parts.h"
#include "weights.h"

static void put_u16(uint8_t *p, uint16_t h) {
  p[0] = (uint8_t)h;
  p[1] = (uint8_t)(h >> 8);
}

/* The least f16 >= x for x >= 0 (0 for x <= 0 or NaN), at most 65504. */
static uint16_t f16_up(float x) {
  if (!(x > 0)) return 0;
  uint16_t h = mkc_float_to_f16(x);
  if (h >= 0x7bff) return 0x7bff;
  if (mkc_f16_to_float(h) < x) h++; /* the next f16 up, across a binade too */
  return h;
}

/* The greatest f16 <= x, at least -65504 and at most 65504. */
static uint16_t f16_down(float x) {
  uint16_t h = mkc_float_to_f16(x);
  if ((h & 0x7fff) >= 0x7bff) return h & 0x8000 ? 0xfbff : 0x7bff;
  if (mkc_f16_to_float(h) > x) {
    if ((h & 0x7fff) == 0)
      h = 0x8001; /* below zero: the least negative subnormal */
    else if (h & 0x8000)
      h++; /* negative: one more in magnitude */
    else
      h--;
  }
  return h;
}

/* The integer nearest v within [lo, hi] (halves away from zero); NaN gives 0. */
static int nearest(float v, int lo, int hi) {
  if (v != v) return 0;
  if (v <= (float)lo) return lo;
  if (v >= (float)hi) return hi;
  return (int)roundf(v);
}

/* The least integer >= v within [0, hi]. */
static int at_least(float v, int hi) {
  if (!(v > 0)) return 0;
  if (v >= (float)hi) return hi;
  return (int)ceilf(v);
}

/* The magnitude of the value of largest magnitude (*ext: that value, signed)
 * and the largest magnitude among the values of the other sign. */
static float extremes(const float *x, int n, float *ext, float *other) {
  float amax = 0;
  *ext = 0, *other = 0;
  for (int i = 0; i < n; i++)
    if (fabsf(x[i]) > amax) amax = fabsf(x[i]), *ext = x[i];
  for (int i = 0; i < n; i++) {
    float o = *ext > 0 ? -x[i] : x[i];
    if (o > *other) *other = o;
  }
  return amax;
}

/* Q8_0, 34 bytes per 32: f16 d, int8 q[32]; x = d * q. */
static void block_q8_0(const float *x, uint8_t *b) {
  float amax = 0;
  for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
  uint16_t dh = f16_up(amax / 127);
  float d = mkc_f16_to_float(dh);
  put_u16(b, dh);
  for (int i = 0; i < 32; i++)
    b[2 + i] = (uint8_t)(int8_t)(d > 0 ? nearest(x[i] / d, -127, 127) : 0);
}

/* Q4_0 (codes -8..7) and Q5_0 (-16..15), 18 and 22 bytes per 32: f16 d, for
 * Q5_0 the fifth bits, the nibbles; x = d * (q - zero). d's sign puts the
 * value of largest magnitude at the -zero end. */
static void zero_block(const float *x, int zero, uint8_t *b) {
  float ext, other, amax = extremes(x, 32, &ext, &other);
  mkc_qblock p;
  p.d = f16_up(fmaxf(amax / ((float)zero + 0.5f), other / ((float)zero - 0.5f)));
  if (ext > 0 && p.d) p.d |= 0x8000;
  float d = mkc_f16_to_float(p.d);
  for (int i = 0; i < 32; i++) p.code[i] = (d != 0 ? nearest(x[i] / d, -zero, zero - 1) : 0) + zero;
  mkc_qblock_pack(zero == 16 ? MKC_GGML_Q5_0 : MKC_GGML_Q4_0, &p, b);
}

static void block_q4_0(const float *x, uint8_t *b) { zero_block(x, 8, b); }
static void block_q5_0(const float *x, uint8_t *b) { zero_block(x, 16, b); }

/* Q4_1 (codes 0..15) and Q5_1 (0..31), 20 and 24 bytes per 32: f16 d, f16 m,
 * for Q5_1 the fifth bits, the nibbles; m = min x rounded down to f16, d =
 * (max x - m) / top rounded up; x = d * q + m. */
static void offset_block(const float *x, int top, uint8_t *b) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
  mkc_qblock p;
  p.m = f16_down(lo);
  float m = mkc_f16_to_float(p.m);
  p.d = f16_up((hi - m) / (float)top);
  float d = mkc_f16_to_float(p.d);
  for (int i = 0; i < 32; i++) p.code[i] = d > 0 ? nearest((x[i] - m) / d, 0, top) : 0;
  mkc_qblock_pack(top == 31 ? MKC_GGML_Q5_1 : MKC_GGML_Q4_1, &p, b);
}

static void block_q4_1(const float *x, uint8_t *b) { offset_block(x, 15, b); }
static void block_q5_1(const float *x, uint8_t *b) { offset_block(x, 31, b); }

/* Q4_K (codes 0..15) and Q5_K (0..31), per sub-block of 32: the offset dmin
 * * mn reaches down to min(x, 0), the step d * sc then reaches up to max x; d
 * and dmin (f16) the largest of those / 63, sc and mn rounded up to 6 bits;
 * x = (d * sc) * q - dmin * mn. */
static void k_block(const float *x, int top, uint8_t *b) {
  float lift[8], hi[8], max_lift = 0; /* lift: how far below 0 the sub-block reaches */
  for (int j = 0; j < 8; j++) {
    float lo = x[32 * j];
    hi[j] = x[32 * j];
    for (int l = 1; l < 32; l++) lo = fminf(lo, x[32 * j + l]), hi[j] = fmaxf(hi[j], x[32 * j + l]);
    lift[j] = lo < 0 ? -lo : 0;
    max_lift = fmaxf(max_lift, lift[j]);
  }
  mkc_qblock p;
  p.m = f16_up(max_lift / 63);
  float dmin = mkc_f16_to_float(p.m), need[8], max_need = 0;
  for (int j = 0; j < 8; j++) {
    p.mn[j] = dmin > 0 ? at_least(lift[j] / dmin, 63) : 0;
    need[j] = fmaxf(0, (hi[j] + dmin * (float)p.mn[j]) / (float)top);
    max_need = fmaxf(max_need, need[j]);
  }
  p.d = f16_up(max_need / 63);
  float d = mkc_f16_to_float(p.d);
  for (int j = 0; j < 8; j++) p.sc[j] = d > 0 ? at_least(need[j] / d, 63) : 0;
  for (int j = 0; j < 8; j++) {
    float step = d * (float)p.sc[j], offset = dmin * (float)p.mn[j];
    for (int l = 0; l < 32; l++)
      p.code[32 * j + l] = step > 0 ? nearest((x[32 * j + l] + offset) / step, 0, top) : 0;
  }
  mkc_qblock_pack(top == 31 ? MKC_GGML_Q5_K : MKC_GGML_Q4_K, &p, b);
}

static void block_q4_k(const float *x, uint8_t *b) { k_block(x, 15, b); }
static void block_q5_k(const float *x, uint8_t *b) { k_block(x, 31, b); }

/* Q2_K, 84 bytes per 256: 4-bit scale and min per sub-block of 16 (low and
 * high nibble of byte s), the pairs, f16 d, f16 dmin; x = (d * sc) * q - dmin
 * * mn with codes 0..3, the scales chosen as Q4_K's with 4 bits. */
static void block_q2_k(const float *x, uint8_t *b) {
  float lift[16], hi[16], max_lift = 0, need[16], max_need = 0;
  for (int s = 0; s < 16; s++) lift[s] = 0, hi[s] = -INFINITY;
  for (int e = 0; e < 256; e++) {
    int s = mkc_k16_sub(e);
    lift[s] = fmaxf(lift[s], -x[e]);
    hi[s] = fmaxf(hi[s], x[e]);
  }
  for (int s = 0; s < 16; s++) max_lift = fmaxf(max_lift, lift[s]);
  mkc_qblock p;
  p.m = f16_up(max_lift / 15);
  float dmin = mkc_f16_to_float(p.m);
  for (int s = 0; s < 16; s++) {
    p.mn[s] = dmin > 0 ? at_least(lift[s] / dmin, 15) : 0;
    need[s] = fmaxf(0, (hi[s] + dmin * (float)p.mn[s]) / 3);
    max_need = fmaxf(max_need, need[s]);
  }
  p.d = f16_up(max_need / 15);
  float d = mkc_f16_to_float(p.d);
  for (int s = 0; s < 16; s++) p.sc[s] = d > 0 ? at_least(need[s] / d, 15) : 0;
  for (int e = 0; e < 256; e++) {
    int s = mkc_k16_sub(e);
    float step = d * (float)p.sc[s], offset = dmin * (float)p.mn[s];
    p.code[e] = step > 0 ? nearest((x[e] + offset) / step, 0, 3) : 0;
  }
  mkc_qblock_pack(MKC_GGML_Q2_K, &p, b);
}

/* Q3_K, 110 bytes per 256: third bits, pairs, 6-bit scales (stored + 32),
 * f16 d; x = (d * sc) * (q - 4) with codes q 0..7, per sub-block of 16 as
 * Q6_K's: the value of largest magnitude at the -4 end (|step| >= max|x| /
 * 4.5, >= the other sign's / 3.5), d the largest step / 31. */
static void block_q3_k(const float *x, uint8_t *b) {
  float step[16], max_step = 0;
  int negative[16];
  float v[16][16]; /* each sub-block's values, gathered in one pass */
  int n[16] = {0};
  for (int e = 0; e < 256; e++) {
    int s = mkc_k16_sub(e);
    v[s][n[s]++] = x[e];
  }
  for (int s = 0; s < 16; s++) {
    float ext, other, amax = extremes(v[s], 16, &ext, &other);
    step[s] = fmaxf(amax / 4.5f, other / 3.5f);
    negative[s] = ext > 0; /* a negative step puts ext at the -4 end */
    max_step = fmaxf(max_step, step[s]);
  }
  mkc_qblock p;
  p.d = f16_up(max_step / 31);
  float d = mkc_f16_to_float(p.d);
  for (int s = 0; s < 16; s++) {
    int mag = d > 0 ? at_least(step[s] / d, 31) : 0;
    p.sc[s] = negative[s] ? -mag : mag;
  }
  for (int e = 0; e < 256; e++) {
    float eff = d * (float)p.sc[mkc_k16_sub(e)];
    p.code[e] = (eff != 0 ? nearest(x[e] / eff, -4, 3) : 0) + 4;
  }
  mkc_qblock_pack(MKC_GGML_Q3_K, &p, b);
}

/* The index of the level nearest v (the lower on a tie). */
static int nearest_level(float v) {
  int best = 0;
  for (int k = 1; k < 16; k++)
    if (fabsf(v - (float)mkc_iq4nl_levels[k]) < fabsf(v - (float)mkc_iq4nl_levels[best])) best = k;
  return best;
}

/* The step of 32 (or n) values on IQ4_NL's levels: the value of largest
 * magnitude at the -127 end (a negative step for a positive one). */
static float level_step(const float *x, int n) {
  float ext, other, amax = extremes(x, n, &ext, &other);
  (void)other;
  return ext > 0 ? -amax / 127 : amax / 127;
}

/* 32 values' level indices on the levels times step. */
static void put_levels(const float *x, float step, int *code) {
  for (int i = 0; i < 32; i++) code[i] = step != 0 ? nearest_level(x[i] / step) : 8;
}

/* IQ4_NL, 18 bytes per 32: f16 d (rounded up in magnitude), the nibbles. */
static void block_iq4_nl(const float *x, uint8_t *b) {
  float step = level_step(x, 32);
  mkc_qblock p;
  p.d = f16_up(fabsf(step));
  if (step < 0 && p.d) p.d |= 0x8000;
  put_levels(x, mkc_f16_to_float(p.d), p.code);
  mkc_qblock_pack(MKC_GGML_IQ4_NL, &p, b);
}

/* MXFP4, 17 bytes per 32: as ggml's quantize_row_mxfp4_ref, the scale 2^(e - 128) with e =
 * floor(log2(max |x|)) - 2 + 127 (clamped to a byte; 0 for an all-zero block), each element the
 * nearest level (the lower index on a tie). */
static void block_mxfp4(const float *x, uint8_t *b) {
  float amax = 0;
  for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
  float e = amax > 0 ? floorf(log2f(amax)) - 2 + 127 : 0;
  b[0] = (uint8_t)(e < 0 ? 0 : e > 254 ? 254 : e);
  float d = mkc_e8m0_half(b[0]);
  for (int i = 0; i < 16; i++)
    b[1 + i] = (uint8_t)(mkc_fp4_code(x[i], d) | mkc_fp4_code(x[i + 16], d) << 4);
}

/* IQ4_XS, 136 bytes per 256: per sub-block of 32 IQ4_NL's step, as d (f16,
 * the largest step / 31) times a signed 6-bit scale rounded up in magnitude
 * (stored + 32: the low 4 bits in a nibble of bytes 4..7, the top 2 in the
 * u16 at 2), then the nibbles. */
static void block_iq4_xs(const float *x, uint8_t *b) {
  float step[8], max_step = 0;
  for (int j = 0; j < 8; j++)
    step[j] = level_step(x + 32 * j, 32), max_step = fmaxf(max_step, fabsf(step[j]));
  mkc_qblock p;
  p.d = f16_up(max_step / 31);
  float d = mkc_f16_to_float(p.d);
  for (int j = 0; j < 8; j++) {
    int mag = d > 0 ? at_least(fabsf(step[j]) / d, 31) : 0;
    p.sc[j] = step[j] < 0 ? -mag : mag;
    put_levels(x + 32 * j, d * (float)p.sc[j], p.code + 32 * j);
  }
  mkc_qblock_pack(MKC_GGML_IQ4_XS, &p, b);
}

/* Q6_K, 210 bytes per 256: ql[128], qh[64], int8 scales[16], f16 d. Element
 * half * 128 + 32k + l (k < 4, l < 32) keeps the low 4 bits of its code q + 32
 * in ql byte half * 64 + l + 32 (k % 2) (low nibble for k < 2) and the high 2
 * in qh byte half * 32 + l, bits 2k..2k+1; x = (d * scale) * q. */
static void block_q6_k(const float *x, uint8_t *b) {
  float step[16], max_step = 0;
  int negative[16];
  for (int j = 0; j < 16; j++) {
    float ext, other, amax = extremes(x + 16 * j, 16, &ext, &other);
    step[j] = fmaxf(amax / 32.5f, other / 31.5f);
    negative[j] = ext > 0; /* a negative step puts ext at the -32 end */
    max_step = fmaxf(max_step, step[j]);
  }
  mkc_qblock p;
  p.d = f16_up(max_step / 127);
  float d = mkc_f16_to_float(p.d);
  for (int j = 0; j < 16; j++) {
    int sc = d > 0 ? at_least(step[j] / d, 127) : 0;
    p.sc[j] = negative[j] ? -sc : sc;
  }
  for (int i = 0; i < 256; i++) {
    float eff = d * (float)p.sc[i / 16];
    p.code[i] = (eff != 0 ? nearest(x[i] / eff, -32, 31) : 0) + 32;
  }
  mkc_qblock_pack(MKC_GGML_Q6_K, &p, b);
}

/* IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M: grid entries (quantize_iq.c). */
static void block_iq2_xxs(const float *x, uint8_t *b) { mkc_quantize_iq2_xxs(x, NULL, b); }
static void block_iq2_xs(const float *x, uint8_t *b) { mkc_quantize_iq2_xs(x, NULL, b); }
static void block_iq2_s(const float *x, uint8_t *b) { mkc_quantize_iq2_s(x, NULL, b); }
static void block_iq3_xxs(const float *x, uint8_t *b) { mkc_quantize_iq3_xxs(x, NULL, b); }
static void block_iq3_s(const float *x, uint8_t *b) { mkc_quantize_iq3_s(x, NULL, b); }
static void block_iq1_s(const float *x, uint8_t *b) { mkc_quantize_iq1_s(x, NULL, b); }
static void block_iq1_m(const float *x, uint8_t *b) { mkc_quantize_iq1_m(x, NULL, b); }

/* TQ1_0, TQ2_0, Q1_0, Q2_0, NVFP4: ggml's reference rules (quantize_low.c). */
static void block_tq1_0(const float *x, uint8_t *b) { mkc_quantize_tq1_0(x, b); }
static void block_tq2_0(const float *x, uint8_t *b) { mkc_quantize_tq2_0(x, b); }
static void block_q1_0(const float *x, uint8_t *b) { mkc_quantize_q1_0(x, b); }
static void block_q2_0(const float *x, uint8_t *b) { mkc_quantize_q2_0(x, b); }
static void block_nvfp4(const float *x, uint8_t *b) { mkc_quantize_nvfp4(x, b); }

typedef void (*block_writer)(const float *x, uint8_t *b);

/* The block types written here, by ggml type id (dequant.h's list). */
static const block_writer WRITERS[] = {MKC_BLOCK_TYPES(MKC_BLOCK_FN)};

static block_writer writer_for(uint32_t type) {
  return type < sizeof WRITERS / sizeof *WRITERS ? WRITERS[type] : NULL;
}

int mkc_quantize(uint32_t type, const float *src, size_t n, void *dst) {
  uint8_t *out = dst;
  switch (type) {
  case MKC_GGML_F32:
    for (size_t i = 0; i < n; i++) {
      uint32_t bits;
      memcpy(&bits, &src[i], sizeof bits);
      for (int k = 0; k < 4; k++) out[4 * i + (size_t)k] = (uint8_t)(bits >> 8 * k);
    }
    return 0;
  case MKC_GGML_F16:
    for (size_t i = 0; i < n; i++) put_u16(out + 2 * i, mkc_float_to_f16(src[i]));
    return 0;
  case MKC_GGML_BF16:
    for (size_t i = 0; i < n; i++) put_u16(out + 2 * i, mkc_float_to_bf16(src[i]));
    return 0;
  }
  block_writer write = writer_for(type);
  if (!write) return -1;
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  size_t block = (size_t)info->block;
  if (n % block) return -1;
  for (size_t i = 0; i < n / block; i++)
    write(src + i * block, out + i * (size_t)info->block_bytes);
  return 0;
}

/* One thread's share of mkc_quantize_parallel. */
typedef struct quantize_part {
  uint32_t type;
  const float *src;
  size_t n;
  void *dst;
  int rc;
} quantize_part;

static void *quantize_part_main(void *arg) {
  quantize_part *p = arg;
  p->rc = mkc_quantize(p->type, p->src, p->n, p->dst);
  return NULL;
}

int mkc_quantize_parallel(uint32_t type, const float *src, size_t n, void *dst, int threads) {
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  if (!info || n % (size_t)info->block) return -1;
  size_t blocks = n / (size_t)info->block;
  if (threads > MKC_PARTS_MAX) threads = MKC_PARTS_MAX;
  if (threads <= 1 || blocks < (size_t)threads * 64) return mkc_quantize(type, src, n, dst);
  quantize_part part[MKC_PARTS_MAX];
  int rc = 0;
  /* part t: blocks [blocks t / threads, blocks (t + 1) / threads) */
  for (int t = 0; t < threads; t++) {
    size_t b0 = blocks * (size_t)t / (size_t)threads,
           b1 = blocks * (size_t)(t + 1) / (size_t)threads;
    part[t] = (quantize_part){type, src + b0 * (size_t)info->block, (b1 - b0) * (size_t)info->block,
                              (uint8_t *)dst + b0 * (size_t)info->block_bytes, 0};
  }
  mkc_run_parts(quantize_part_main, part, sizeof *part, threads);
  for (int t = 0; t < threads; t++) rc |= part[t].rc;
  return rc ? -1 : 0;
}

size_t mkc_quant_row_bytes(uint32_t type, int cols) {
  const mkc_ggml_type_info *info = mkc_ggml_type(type);
  if (!info || cols <= 0 || cols % info->block) return 0;
  return (size_t)(cols / info->block) * (size_t)info->block_bytes;
}
