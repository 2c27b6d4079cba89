/* The ternary (TQ1_0, TQ2_0), one-bit (Q1_0), two-bit (Q2_0) and NVFP4 encoders, each as ggml's
 * reference quantizer chooses its scale and codes (dequant.c says where the bits live). */
#include "quantize_low.h"

#include <math.h>
#include <string.h>

#include "dequant.h"

static void put_f16(uint8_t *p, float f) {
  uint16_t h = mkc_float_to_f16(f);
  p[0] = (uint8_t)h;
  p[1] = (uint8_t)(h >> 8);
}

static float abs_max(const float *x, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; i++)
    if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
  return amax;
}

/* -1, 0, 1 (of x / amax rounded half away from zero) as 0, 1, 2. */
static int trit(float x, float id) { return (int)lroundf(x * id) + 1; }

/* k trits, the first most significant, as a byte whose top bits hold them: ceil(v 256 / 243), v
 * their base-3 value shifted to 5 trits (dequant.c's tq1_trit reads them back). */
static uint8_t pack_trits(const int *t, int k) {
  unsigned v = 0;
  for (int n = 0; n < 5; n++) v = v * 3 + (unsigned)(n < k ? t[n] : 0);
  return (uint8_t)((v * 256 + 242) / 243);
}

/* TQ1_0: d = max |x|; each element's trit (x / d rounded) in dequant.c's order. */
void mkc_quantize_tq1_0(const float *x, uint8_t *b) {
  float d = abs_max(x, 256), id = d != 0.0f ? 1.0f / d : 0.0f;
  int t[5];
  for (int m = 0; m < 32; m++) { /* elements 32 n + m */
    for (int n = 0; n < 5; n++) t[n] = trit(x[32 * n + m], id);
    b[m] = pack_trits(t, 5);
  }
  for (int m = 0; m < 16; m++) { /* 160 + 16 n + m */
    for (int n = 0; n < 5; n++) t[n] = trit(x[160 + 16 * n + m], id);
    b[32 + m] = pack_trits(t, 5);
  }
  for (int j = 0; j < 4; j++) { /* 240 + 4 n + j: four trits, the fifth 0 */
    for (int n = 0; n < 4; n++) t[n] = trit(x[240 + 4 * n + j], id);
    b[48 + j] = pack_trits(t, 4);
  }
  put_f16(b + 52, d);
}

/* TQ2_0: d = max |x|; trit + 0 in bits 2 l of byte 32 n + m for element 128 n + 32 l + m. */
void mkc_quantize_tq2_0(const float *x, uint8_t *b) {
  float d = abs_max(x, 256), id = d != 0.0f ? 1.0f / d : 0.0f;
  memset(b, 0, 64);
  for (int e = 0; e < 256; e++)
    b[32 * (e >> 7) + (e & 31)] |= (uint8_t)((trit(x[e], id) & 3) << 2 * (e >> 5 & 3));
  put_f16(b + 64, d);
}

/* Q1_0: d = the mean of |x| (summed in order); each element's sign, 0 counted positive. */
void mkc_quantize_q1_0(const float *x, uint8_t *b) {
  float sum = 0.0f;
  for (int i = 0; i < 128; i++) sum += fabsf(x[i]);
  put_f16(b, sum / 128);
  memset(b + 2, 0, 16);
  for (int i = 0; i < 128; i++)
    if (x[i] >= 0.0f) b[2 + i / 8] |= (uint8_t)(1u << i % 8);
}

/* Q2_0: d = max |x|; codes x / d rounded (half away from zero) plus 1, clamped to 0..3. */
void mkc_quantize_q2_0(const float *x, uint8_t *b) {
  float d = abs_max(x, 64), id = d > 0.0f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  memset(b + 2, 0, 16);
  for (int i = 0; i < 64; i++) {
    int q = (int)roundf(x[i] * id) + 1;
    q = q < 0 ? 0 : q > 3 ? 3 : q;
    b[2 + i / 4] |= (uint8_t)(q << 2 * (i % 4));
  }
}

/* f > 0 as an unsigned E4M3 byte as ggml_fp32_to_ue4m3 rounds it: up from half the last mantissa
 * step, below 2^-6 a subnormal of f 512 rounded (at most 7), from 256 on (and past 448) 0x7e. */
static uint8_t ue4m3_of(float f) {
  if (!(f > 0.0f)) return 0;
  if (f > 448.0f) f = 448.0f;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  int exp = (int)(bits >> 23 & 0xff) - 127 + 7, man = (int)(bits >> 20 & 7) + (int)(bits >> 19 & 1);
  if (exp <= 0) {
    int sub = (int)(f * 512.0f + 0.5f);
    return (uint8_t)(sub > 7 ? 7 : sub);
  }
  if (man > 7) man = 0, exp++;
  return exp >= 15 ? 0x7e : (uint8_t)(exp << 3 | man);
}

int mkc_fp4_code(float v, float d) {
  int best = 0;
  for (int k = 1; k < 16; k++)
    if (fabsf((float)mkc_mxfp4_levels[k] * d - v) < fabsf((float)mkc_mxfp4_levels[best] * d - v))
      best = k;
  return best;
}

/* NVFP4: per 16, the scale byte of max |x| / 6 (FP4's largest level), each element its nearest
 * level at the scale as stored. */
void mkc_quantize_nvfp4(const float *x, uint8_t *b) {
  for (int s = 0; s < 4; s++) {
    const float *xs = x + 16 * s;
    b[s] = ue4m3_of(abs_max(xs, 16) / 6.0f);
    float d = mkc_ue4m3_half(b[s]);
    for (int j = 0; j < 8; j++)
      b[4 + 8 * s + j] = (uint8_t)(mkc_fp4_code(xs[j], d) | mkc_fp4_code(xs[j + 8], d) << 4);
  }
}
