/* mkc_quantize: rows of several kinds (random, all zero, constant, one
 * outlier, one sign only, tiny, wide, sub-blocks of very different sizes),
 * quantized and read back with mkc_dequant_f32, stay within an error bound
 * the format allows (derived below, type by type); hand-made rows whose
 * scales come out exact read back as the grid values they were built from;
 * F32/F16/BF16 are exact; mkc_dequant_bf16 is mkc_dequant_f32 rounded;
 * the IQ1/IQ2/IQ3 grid types, which have no such bound, put each group on
 * the grid entry nearest its values for the scale, signs and delta the block has;
 * bad types and lengths are refused. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "formats/dequant.h"
#include "formats/quantize.h"
#include "formats/weights.h"

enum { N = 512 };                   /* two super-blocks of 256: every type's block divides it */
enum { UNWRITTEN = MKC_GGML_Q8_K }; /* a type mkc neither reads nor writes */

static uint64_t rng_state;
static double uniform(void) { /* [0, 1), splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static float between(double lo, double hi) { return (float)(lo + (hi - lo) * uniform()); }

/* ---- the rows ---- */

typedef struct row_kind {
  const char *name;
  void (*fill)(float *x);
} row_kind;

static void fill_uniform(float *x) {
  for (int i = 0; i < N; i++) x[i] = between(-1, 1);
}
static void fill_gaussian(float *x) {
  for (int i = 0; i < N; i++)
    x[i] = (float)(sqrt(-2 * log(1 - uniform())) * cos(2 * M_PI * uniform()) * 0.02);
}
static void fill_zero(float *x) { memset(x, 0, N * sizeof *x); }
static void fill_constant(float *x) {
  for (int i = 0; i < N; i++) x[i] = 0.37f;
}
static void fill_constant_negative(float *x) {
  for (int i = 0; i < N; i++) x[i] = -2.5f;
}
static void fill_outlier(float *x) { /* small values and one of each sign 1000 times larger */
  for (int i = 0; i < N; i++) x[i] = between(-0.01, 0.01);
  x[77] = 9.5f;
  x[300] = -11.25f;
}
static void fill_negative(float *x) {
  for (int i = 0; i < N; i++) x[i] = between(-3, -0.5);
}
static void fill_positive(float *x) {
  for (int i = 0; i < N; i++) x[i] = between(0.25, 4);
}
static void fill_tiny(float *x) {
  for (int i = 0; i < N; i++) x[i] = between(-2e-3, 2e-3);
}
static void fill_wide(float *x) {
  for (int i = 0; i < N; i++) x[i] = between(-900, 900);
}
/* Each 16 a different size, 1e-4 to 10, some all zero: the K types' sub-block scales. */
static void fill_mixed(float *x) {
  for (int i = 0; i < N; i++) {
    int group = i / 16;
    double size = group % 5 == 4 ? 0 : pow(10, (group * 7) % 6 - 4);
    x[i] = between(-size, size) + (group % 3 == 1 ? (float)size : 0);
  }
}

static const row_kind KINDS[] = {
    {"uniform", fill_uniform},
    {"gaussian", fill_gaussian},
    {"all zero", fill_zero},
    {"constant", fill_constant},
    {"constant negative", fill_constant_negative},
    {"one outlier", fill_outlier},
    {"negative only", fill_negative},
    {"positive only", fill_positive},
    {"tiny", fill_tiny},
    {"wide", fill_wide},
    {"mixed sizes", fill_mixed},
};

/* ---- the bounds ----
 * Every quantizer rounds each element to the nearest value of a grid that
 * reaches its block's extremes, so an element's error is at most half the
 * grid's step. What the format allows of the step:
 *   - a scale stored as f16 and rounded up grows by at most one f16 unit:
 *     relative 2^-10 for normal values, 2^-24 absolute for subnormal ones
 *     (up() below);
 *   - Q8_0: 255 levels -127..127 over [-amax, amax]: step amax / 127;
 *   - Q4_0: 16 levels over [-amax, amax]: a step of amax / 7.5 puts both
 *     ends within half a step of the end levels (-8 and 7);
 *   - Q4_1: 16 levels from min to max: step (max - min) / 15, the f16 min
 *     rounded down by at most |min| 2^-10 (+ 2^-24);
 *   - Q5_0 and Q5_1: as Q4_0 and Q4_1 with 32 levels: amax / 15.5 and
 *     (max - min) / 31;
 *   - Q4_K: a sub-block of 32 has 16 levels over its range stretched to take
 *     in 0 (the offset -dmin * mn is never above 0), R; the 6-bit mn, rounded
 *     up, lowers the offset by at most one dmin unit D, and the 6-bit scale,
 *     rounded up, adds at most one d unit S to the step: step <= (R + D) / 15
 *     + S, with D <= up(max lift / 63), S <= up(max (R + D) / 15 / 63);
 *   - Q5_K: as Q4_K with 32 levels: step <= (R + D) / 31 + S, S <= up(max
 *     (R + D) / 31 / 63);
 *   - Q2_K: as Q4_K per sub-block of 16 with 4 levels and 4-bit scales and
 *     mins: step <= (R + D) / 3 + S, D <= up(max lift / 15), S <= up(max
 *     (R + D) / 3 / 15);
 *   - Q3_K: as Q6_K with 8 levels -4..3 and 6-bit signed scales: step <=
 *     amax / 3.5 + up(max amax / 3.5 / 31);
 *   - IQ4_NL: 16 levels -127 .. 113 (steps up to 24) times |d| = up(amax /
 *     127): the nearest is within 12 |d|, or 14 |d| above 113;
 *   - IQ4_XS: that per sub-block of 32, its |d| at most amax / 127 plus one
 *     unit up(max amax / 127 / 31);
 *   - MXFP4: levels 0, 1, 2, 3, 4, 6, 8, 12 (and negatives) times d = 2^(floor(log2 amax) - 3):
 *     the widest gap (8 to 12) leaves 2 d, and what passes 12 d (amax < 16 d) is cut to it, up
 *     to 4 d off (ggml's reference clips so too);
 *   - Q6_K: a sub-block of 16 has 64 levels -32..31: a step of amax / 31.5
 *     reaches both ends; the int8 scale, rounded up in magnitude, adds at
 *     most one d unit: step <= amax / 31.5 + up(max amax / 31.5 / 127).
 * On top, float rounding: a relative 2^-16 of the bound and 2^-20 of the
 * block's largest |x|, far below any step. */
static double up(double v) { return v * (1 + 0x1p-10) + 0x1p-24; }

/* Element e's sub-block of 16 in a Q2_K or Q3_K block (dequant.c says where it lives). */
static int sub16(int e) { return 8 * (e / 128) + 2 * (e % 128 / 32) + e % 32 / 16; }

static double block_amax(const float *x, int n) {
  double m = 0;
  for (int i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
  return m;
}

/* The bound for each element of the row, for type. */
static void bounds(uint32_t type, const float *x, double *bound) {
  switch (type) {
  case MKC_GGML_Q8_0:
  case MKC_GGML_Q4_0:
  case MKC_GGML_Q5_0:
    for (int b = 0; b < N; b += 32) {
      double amax = block_amax(x + b, 32);
      double step = up(amax / (type == MKC_GGML_Q8_0 ? 127 : type == MKC_GGML_Q4_0 ? 7.5 : 15.5));
      for (int i = 0; i < 32; i++) bound[b + i] = 0.5 * step;
    }
    break;
  case MKC_GGML_Q4_1:
  case MKC_GGML_Q5_1:
    for (int b = 0; b < N; b += 32) {
      double lo = x[b], hi = x[b];
      for (int i = 1; i < 32; i++) lo = fmin(lo, x[b + i]), hi = fmax(hi, x[b + i]);
      double step =
          up((hi - lo + fabs(lo) * 0x1p-10 + 0x1p-24) / (type == MKC_GGML_Q4_1 ? 15 : 31));
      for (int i = 0; i < 32; i++) bound[b + i] = 0.5 * step;
    }
    break;
  case MKC_GGML_Q4_K:
  case MKC_GGML_Q5_K:
    for (int b = 0; b < N; b += 256) {
      double top = type == MKC_GGML_Q4_K ? 15 : 31;
      double range[8], max_lift = 0, max_need = 0;
      for (int j = 0; j < 8; j++) {
        double lo = 0, hi = x[b + 32 * j];
        for (int i = 0; i < 32; i++)
          lo = fmin(lo, x[b + 32 * j + i]), hi = fmax(hi, x[b + 32 * j + i]);
        range[j] = hi - lo;
        max_lift = fmax(max_lift, -lo);
      }
      double unit_min = up(max_lift / 63);
      for (int j = 0; j < 8; j++) max_need = fmax(max_need, (range[j] + unit_min) / top);
      double unit_scale = up(max_need / 63);
      for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++)
          bound[b + 32 * j + i] = 0.5 * ((range[j] + unit_min) / top + unit_scale);
    }
    break;
  case MKC_GGML_Q2_K:
    for (int b = 0; b < N; b += 256) {
      double range[16], max_lift = 0, max_need = 0, lo[16], hi[16];
      for (int s = 0; s < 16; s++) lo[s] = 0, hi[s] = -INFINITY;
      for (int e = 0; e < 256; e++) {
        int s = sub16(e);
        lo[s] = fmin(lo[s], x[b + e]), hi[s] = fmax(hi[s], x[b + e]);
      }
      for (int s = 0; s < 16; s++) range[s] = hi[s] - lo[s], max_lift = fmax(max_lift, -lo[s]);
      double unit_min = up(max_lift / 15);
      for (int s = 0; s < 16; s++) max_need = fmax(max_need, (range[s] + unit_min) / 3);
      double unit_scale = up(max_need / 15);
      for (int e = 0; e < 256; e++)
        bound[b + e] = 0.5 * ((range[sub16(e)] + unit_min) / 3 + unit_scale);
    }
    break;
  case MKC_GGML_Q3_K:
    for (int b = 0; b < N; b += 256) {
      double amax[16] = {0}, top = 0;
      for (int e = 0; e < 256; e++) amax[sub16(e)] = fmax(amax[sub16(e)], fabs(x[b + e]));
      for (int s = 0; s < 16; s++) top = fmax(top, amax[s]);
      double unit = up(top / 3.5 / 31);
      for (int e = 0; e < 256; e++) bound[b + e] = 0.5 * (amax[sub16(e)] / 3.5 + unit);
    }
    break;
  case MKC_GGML_IQ4_NL:
    for (int b = 0; b < N; b += 32)
      for (int i = 0; i < 32; i++) bound[b + i] = 14 * up(block_amax(x + b, 32) / 127);
    break;
  case MKC_GGML_MXFP4:
    for (int b = 0; b < N; b += 32) {
      double amax = block_amax(x + b, 32), d = amax > 0 ? ldexp(1, (int)floor(log2(amax)) - 3) : 0;
      for (int i = 0; i < 32; i++) bound[b + i] = 4 * d;
    }
    break;
  case MKC_GGML_IQ4_XS:
    for (int b = 0; b < N; b += 256) {
      double unit = up(block_amax(x + b, 256) / 127 / 31);
      for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++)
          bound[b + 32 * j + i] = 14 * (block_amax(x + b + 32 * j, 32) / 127 + unit);
    }
    break;
  case MKC_GGML_Q6_K:
    for (int b = 0; b < N; b += 256) {
      double unit = up(block_amax(x + b, 256) / 31.5 / 127);
      for (int j = 0; j < 16; j++) {
        double step = block_amax(x + b + 16 * j, 16) / 31.5 + unit;
        for (int i = 0; i < 16; i++) bound[b + 16 * j + i] = 0.5 * step;
      }
    }
    break;
  }
  for (int b = 0; b < N; b += 32) {
    double slack = block_amax(x + b, 32) * 0x1p-20;
    for (int i = 0; i < 32; i++) bound[b + i] = bound[b + i] * (1 + 0x1p-16) + slack;
  }
}

static const uint32_t QUANT_TYPES[] = {
    MKC_GGML_Q8_0,   MKC_GGML_Q4_0,   MKC_GGML_Q4_1, MKC_GGML_Q5_0, MKC_GGML_Q5_1,
    MKC_GGML_Q2_K,   MKC_GGML_Q3_K,   MKC_GGML_Q4_K, MKC_GGML_Q5_K, MKC_GGML_Q6_K,
    MKC_GGML_IQ4_NL, MKC_GGML_IQ4_XS, MKC_GGML_MXFP4};
enum { N_QUANT_TYPES = sizeof QUANT_TYPES / sizeof *QUANT_TYPES };

/* Quantizes x as type and reads it back into y; 0 or -1. */
static int round_trip(uint32_t type, const float *x, float *y) {
  uint8_t bytes[N * 4];
  size_t n_bytes = mkc_quant_row_bytes(type, N);
  memset(bytes, 0xa5, sizeof bytes); /* every byte must be written */
  if (mkc_quantize(type, x, N, bytes) != 0) return -1;
  for (size_t i = n_bytes; i < sizeof bytes; i++)
    if (bytes[i] != 0xa5) return -1; /* nothing past the row */
  return mkc_dequant_f32(type, bytes, N, y);
}

static void test_bounds(void) {
  float x[N], y[N];
  double bound[N];
  rng_state = 2024;
  for (size_t k = 0; k < sizeof KINDS / sizeof *KINDS; k++) {
    KINDS[k].fill(x);
    for (int t = 0; t < N_QUANT_TYPES; t++) {
      uint32_t type = QUANT_TYPES[t];
      const char *name = mkc_ggml_type(type)->name;
      if (!CHECK(round_trip(type, x, y) == 0, "%s %s: quantizes and reads back", name,
                 KINDS[k].name))
        continue;
      bounds(type, x, bound);
      int worst = 0, finite = 1;
      double worst_ratio = 0, sq = 0, sq_x = 0;
      for (int i = 0; i < N; i++) {
        double err = fabs((double)y[i] - x[i]);
        finite &= isfinite(y[i]);
        sq += err * err, sq_x += (double)x[i] * x[i];
        double ratio = bound[i] > 0 ? err / bound[i] : (err > 0 ? INFINITY : 0);
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
      }
      CHECK(finite && worst_ratio <= 1,
            "%s %s: every |error| <= its bound (worst: x[%d] = %.9g -> %.9g, %.3g of bound %.3g; "
            "rms error %.3g of rms %.3g)",
            name, KINDS[k].name, worst, x[worst], y[worst], worst_ratio, bound[worst], sqrt(sq / N),
            sqrt(sq_x / N));
    }
  }
}

/* ---- hand-made rows: scales that come out exact, values known by construction ---- */

/* A fraction of a step in [-0.4, 0.4] (in [0, 0.4] at the bottom code,
 * [-0.4, 0] at the top), so the nearest grid value is the one built from. */
static float jitter(int code, int lo, int hi) {
  return between(code == lo ? 0 : -0.4, code == hi ? 0 : 0.4);
}

static void check_values(const char *what, uint32_t type, const float *x, const float *want,
                         int n) {
  float y[N];
  uint8_t bytes[N * 4];
  int ok = mkc_quantize(type, x, (size_t)n, bytes) == 0 &&
           mkc_dequant_f32(type, bytes, (size_t)n, y) == 0;
  int bad = -1;
  for (int i = 0; ok && i < n && bad < 0; i++)
    if (y[i] != want[i]) bad = i;
  if (!ok)
    CHECK(0, "%s: quantizes and reads back", what);
  else if (bad >= 0)
    CHECK(0, "%s: x[%d] = %.9g: expected %.9g, actual %.9g", what, bad, x[bad], want[bad], y[bad]);
  else
    CHECK(1, "%s: all %d values are the grid values built from", what, n);
}

static void test_hand_made(void) {
  float x[N], want[N];
  rng_state = 77;
  /* Q8_0: max |x| = 127, so d = 1 and each value rounds to an integer. */
  for (int i = 0; i < 64; i++) {
    int code = i % 32 == 0 ? (i ? -127 : 127) : (int)(uniform() * 255) - 127;
    x[i] = (float)code + (i % 32 == 0 ? 0 : jitter(code, -127, 127));
    want[i] = (float)code;
  }
  check_values("Q8_0, d = 1", MKC_GGML_Q8_0, x, want, 64);

  /* Q4_0: the largest 8.5 (positive), the others within [-7.4, 8.4]: d = -1,
   * the grid 8, 7, ..., -7; 8.5 is half a step above 8. */
  for (int i = 0; i < 64; i++) {
    int value = (int)(uniform() * 16) - 7;
    x[i] = (float)value + jitter(value, -7, 8);
    want[i] = (float)value;
  }
  x[3] = 8.5f, want[3] = 8; /* the extreme of each block */
  x[40] = 8.5f, want[40] = 8;
  check_values("Q4_0, d = -1", MKC_GGML_Q4_0, x, want, 64);

  /* Q4_1: min -3 and max 12 in each block: m = -3, d = 1. */
  for (int i = 0; i < 64; i++) {
    int value = i % 32 == 0 ? -3 : i % 32 == 1 ? 12 : (int)(uniform() * 16) - 3;
    x[i] = (float)value + (i % 32 < 2 ? 0 : jitter(value, -3, 12));
    want[i] = (float)value;
  }
  check_values("Q4_1, d = 1, m = -3", MKC_GGML_Q4_1, x, want, 64);

  /* Q5_0: the largest 16.5 (positive), the others within [-15.4, 16.4]: d = -1, the grid 16,
   * 15, ..., -15. */
  for (int i = 0; i < 64; i++) {
    int value = (int)(uniform() * 32) - 15;
    x[i] = (float)value + jitter(value, -15, 16);
    want[i] = (float)value;
  }
  x[5] = 16.5f, want[5] = 16;
  x[33] = 16.5f, want[33] = 16;
  check_values("Q5_0, d = -1", MKC_GGML_Q5_0, x, want, 64);

  /* Q5_1: min -7 and max 24 in each block: m = -7, d = 1. */
  for (int i = 0; i < 64; i++) {
    int value = i % 32 == 0 ? -7 : i % 32 == 1 ? 24 : (int)(uniform() * 32) - 7;
    x[i] = (float)value + (i % 32 < 2 ? 0 : jitter(value, -7, 24));
    want[i] = (float)value;
  }
  check_values("Q5_1, d = 1, m = -7", MKC_GGML_Q5_1, x, want, 64);

  /* Q4_K (codes 0..15) and Q5_K (0..31): sub-block j has step k[j] and offset mn[j]: its min
   * is -mn[j] and its max top k[j] - mn[j]. The largest mn is 63 and the largest k 63, so
   * dmin = d = 1, and every value is k[j] * code - mn[j]. */
  static const int K4[8] = {63, 1, 5, 63, 2, 10, 40, 3}, MN4[8] = {63, 0, 63, 0, 1, 20, 7, 60};
  static const struct {
    uint32_t type;
    int top;
    const char *what;
  } KS[] = {{MKC_GGML_Q4_K, 15, "Q4_K, d = dmin = 1, 8 scales and mins"},
            {MKC_GGML_Q5_K, 31, "Q5_K, d = dmin = 1, 8 scales and mins"}};
  for (size_t k = 0; k < sizeof KS / sizeof *KS; k++) {
    int top = KS[k].top;
    for (int j = 0; j < 8; j++) {
      for (int l = 0; l < 32; l++) {
        int code = l == 0 ? 0 : l == 1 ? top : (int)(uniform() * (top + 1));
        float jit = l < 2 ? 0 : jitter(code, 0, top);
        x[32 * j + l] = (float)(K4[j] * code - MN4[j]) + jit * (float)K4[j];
        want[32 * j + l] = (float)(K4[j] * code - MN4[j]);
      }
    }
    check_values(KS[k].what, KS[k].type, x, want, 256);
  }

  /* Q6_K: sub-block j has step k[j]; its largest magnitude is 32.5 k[j], the
   * other sign's at most 31.4 k[j], so d = 1 (the largest k is 127) and the
   * scale is -k[j] for a positive extreme (grid 32k .. -31k), k[j] for a
   * negative one (grid -32k .. 31k). */
  static const int K6[16] = {127, 1, 2, 50, 3, 127, 9, 4, 100, 7, 1, 64, 33, 5, 8, 120};
  for (int j = 0; j < 16; j++) {
    int sign = j % 2 ? -1 : 1; /* the extreme's */
    for (int l = 0; l < 16; l++) {
      int code = (int)(uniform() * 64) - 31; /* value / k, the extreme's side from 32 */
      float jit = jitter(code, -31, 32);
      if (l == 5) code = 32, jit = 0.5f; /* the extreme, half a step past 32 k */
      x[16 * j + l] = (float)(sign * K6[j]) * ((float)code + jit);
      want[16 * j + l] = (float)(sign * K6[j] * code);
    }
  }
  check_values("Q6_K, d = 1, 16 signed scales", MKC_GGML_Q6_K, x, want, 256);
}

/* ---- the plain types, mkc_dequant_bf16, and what is refused ---- */

static void test_plain_and_bf16(void) {
  float x[N], y[N];
  uint8_t bytes[N * 4];
  uint16_t bf[N];
  rng_state = 5;
  fill_wide(x);
  x[0] = -0.0f, x[1] = 1e-30f, x[2] = 70000; /* signed zero, below f16, above f16 */
  CHECK(mkc_quantize(MKC_GGML_F32, x, N, bytes) == 0 &&
            mkc_dequant_f32(MKC_GGML_F32, bytes, N, y) == 0 && memcmp(x, y, sizeof x) == 0,
        "F32: bit for bit");
  int same = mkc_quantize(MKC_GGML_F16, x, N, bytes) == 0 &&
             mkc_dequant_f32(MKC_GGML_F16, bytes, N, y) == 0;
  for (int i = 0; same && i < N; i++)
    same = memcmp(&y[i], &(float){mkc_f16_to_float(mkc_float_to_f16(x[i]))}, 4) == 0;
  CHECK(same && signbit(y[0]) && y[1] == 0 && isinf(y[2]),
        "F16: each value rounded to f16 (-0 kept, 1e-30 -> 0, 70000 -> inf)");
  same = mkc_quantize(MKC_GGML_BF16, x, N, bytes) == 0 &&
         mkc_dequant_f32(MKC_GGML_BF16, bytes, N, y) == 0;
  for (int i = 0; same && i < N; i++) same = y[i] == mkc_bf16_to_float(mkc_float_to_bf16(x[i]));
  CHECK(same, "BF16: each value rounded to bf16");
  bytes[0] = 0xc1, bytes[1] = 0x7f; /* a NaN with a payload */
  CHECK(mkc_dequant_bf16(MKC_GGML_BF16, bytes, N, bf) == 0 && bf[0] == 0x7fc1,
        "mkc_dequant_bf16 copies BF16 as it is (NaN payload kept)");

  /* every type: mkc_dequant_bf16 is mkc_dequant_f32 rounded to bf16 */
  static const uint32_t ALL[] = {
      MKC_GGML_F32,    MKC_GGML_F16,   MKC_GGML_Q8_0,    MKC_GGML_Q4_0,   MKC_GGML_Q4_1,
      MKC_GGML_Q5_0,   MKC_GGML_Q5_1,  MKC_GGML_Q2_K,    MKC_GGML_Q3_K,   MKC_GGML_Q4_K,
      MKC_GGML_Q5_K,   MKC_GGML_Q6_K,  MKC_GGML_IQ4_NL,  MKC_GGML_IQ4_XS, MKC_GGML_IQ2_XXS,
      MKC_GGML_IQ2_XS, MKC_GGML_IQ2_S, MKC_GGML_IQ3_XXS, MKC_GGML_IQ3_S,  MKC_GGML_IQ1_S,
      MKC_GGML_IQ1_M,  MKC_GGML_MXFP4, MKC_GGML_NVFP4,   MKC_GGML_TQ1_0,  MKC_GGML_TQ2_0,
      MKC_GGML_Q1_0,   MKC_GGML_Q2_0};
  for (size_t t = 0; t < sizeof ALL / sizeof *ALL; t++) {
    fill_gaussian(x);
    mkc_quantize(ALL[t], x, N, bytes);
    int agree =
        mkc_dequant_f32(ALL[t], bytes, N, y) == 0 && mkc_dequant_bf16(ALL[t], bytes, N, bf) == 0;
    for (int i = 0; agree && i < N; i++) agree = bf[i] == mkc_float_to_bf16(y[i]);
    CHECK(agree, "%s: mkc_dequant_bf16 = mkc_dequant_f32 rounded to bf16",
          mkc_ggml_type(ALL[t])->name);
  }
}

/* ---- the grid types: each entry the nearest for its block's scales and signs ---- */

/* Sets entry slot e of a block of type to grid index i (the format's layout, from its spec). */
static void set_entry(uint32_t type, uint8_t *b, int e, int i) {
  switch (type) {
  case MKC_GGML_IQ2_XXS: /* per 32: 4 index bytes, then a word of signs and scale */
    b[2 + 8 * (e / 4) + e % 4] = (uint8_t)i;
    break;
  case MKC_GGML_IQ2_XS: /* a u16 per 8: 9-bit index, 7-bit sign index */
    b[2 + 2 * e] = (uint8_t)i;
    b[3 + 2 * e] = (uint8_t)((b[3 + 2 * e] & 0xfe) | (i >> 8));
    break;
  case MKC_GGML_IQ2_S: /* low bytes at 2, top 2 bits at 66 */
    b[2 + e] = (uint8_t)i;
    b[66 + e / 4] = (uint8_t)((b[66 + e / 4] & ~(3 << 2 * (e % 4))) | (i >> 8) << 2 * (e % 4));
    break;
  case MKC_GGML_IQ3_XXS: /* 64 index bytes at 2 */
    b[2 + e] = (uint8_t)i;
    break;
  case MKC_GGML_IQ3_S: /* low bytes at 2, ninth bits at 66 */
    b[2 + e] = (uint8_t)i;
    b[66 + e / 8] = (uint8_t)((b[66 + e / 8] & ~(1 << e % 8)) | (i >> 8) << e % 8);
    break;
  case MKC_GGML_IQ1_S: { /* low bytes at 2, 3 more bits per group in the u16 at 34 + 2 (e / 4) */
    unsigned h = (unsigned)(b[34 + 2 * (e / 4)] | b[35 + 2 * (e / 4)] << 8);
    h = (h & ~(7u << 3 * (e % 4))) | (unsigned)(i >> 8) << 3 * (e % 4);
    b[2 + e] = (uint8_t)i;
    b[34 + 2 * (e / 4)] = (uint8_t)h, b[35 + 2 * (e / 4)] = (uint8_t)(h >> 8);
    break;
  }
  case MKC_GGML_IQ1_M: /* low bytes at 0, 3 more bits in nibble e % 2 of byte 32 + e / 2 */
    b[e] = (uint8_t)i;
    b[32 + e / 2] = (uint8_t)((b[32 + e / 2] & ~(7 << 4 * (e % 2))) | (i >> 8) << 4 * (e % 2));
    break;
  }
}

static double entry_sq_err(uint32_t type, const uint8_t *b, const float *x, int e, int elems) {
  float y[256];
  mkc_dequant_f32(type, b, 256, y);
  double s = 0;
  for (int j = elems * e; j < elems * (e + 1); j++) s += ((double)y[j] - x[j]) * (y[j] - x[j]);
  return s;
}

static void test_grid_types(void) {
  static const struct {
    uint32_t type;
    int entries, elems;
  } GRIDS[] = {{MKC_GGML_IQ2_XXS, 256, 8}, {MKC_GGML_IQ2_XS, 512, 8}, {MKC_GGML_IQ2_S, 1024, 8},
               {MKC_GGML_IQ3_XXS, 256, 4}, {MKC_GGML_IQ3_S, 512, 4},  {MKC_GGML_IQ1_S, 2048, 8},
               {MKC_GGML_IQ1_M, 2048, 8}};
  float x[N], y[N];
  rng_state = 99;
  for (size_t g = 0; g < sizeof GRIDS / sizeof *GRIDS; g++) {
    uint32_t type = GRIDS[g].type;
    const char *name = mkc_ggml_type(type)->name;
    int worse = 0, slots = 0;
    double rel = 0;
    for (size_t k = 0; k < sizeof KINDS / sizeof *KINDS; k++) {
      KINDS[k].fill(x);
      uint8_t bytes[N * 4];
      if (!CHECK(mkc_quantize(type, x, 256, bytes) == 0 &&
                     mkc_dequant_f32(type, bytes, 256, y) == 0,
                 "%s %s: quantizes and reads back", name, KINDS[k].name))
        continue;
      double sq = 0, sq_x = 0;
      for (int i = 0; i < 256; i++)
        sq += ((double)y[i] - x[i]) * (y[i] - x[i]), sq_x += x[i] * x[i];
      if (sq_x > 0) rel = fmax(rel, sqrt(sq / sq_x));
      /* every other index in each slot: no smaller error (float rounding aside: 2^-20 of the
       * block's squared size, far below a grid step's) */
      for (int e = 0; e < 256 / GRIDS[g].elems; e++, slots++) {
        uint8_t trial[128];
        memcpy(trial, bytes, (size_t)mkc_ggml_type(type)->block_bytes);
        double mine = entry_sq_err(type, trial, x, e, GRIDS[g].elems), slack = sq_x * 0x1p-20;
        for (int i = 0; i < GRIDS[g].entries; i++) {
          set_entry(type, trial, e, i);
          if (entry_sq_err(type, trial, x, e, GRIDS[g].elems) + slack < mine) {
            worse++;
            break;
          }
        }
      }
    }
    CHECK(worse == 0,
          "%s: each of %d entries the nearest grid entry for the block's other fields (%d "
          "not); worst relative rms error %.3f",
          name, slots, worse, rel);
  }
}

/* mkc_quantize_parallel gives mkc_quantize's bytes, whatever the threads (ranges of whole
 * blocks, each encoded alone), and refuses what it refuses. */
static void test_parallel(void) {
  enum { BIG = 256 * 512 }; /* 512 blocks of 256: enough for 7 threads of 64 blocks */
  static float x[BIG];
  static uint8_t one[BIG * 4], many[BIG * 4];
  static const uint32_t TYPES[] = {
      MKC_GGML_F32,     MKC_GGML_F16,   MKC_GGML_BF16,   MKC_GGML_Q8_0,    MKC_GGML_Q4_1,
      MKC_GGML_Q4_K,    MKC_GGML_Q6_K,  MKC_GGML_IQ4_NL, MKC_GGML_IQ2_XXS, MKC_GGML_IQ2_S,
      MKC_GGML_IQ3_XXS, MKC_GGML_IQ3_S, MKC_GGML_IQ1_S,  MKC_GGML_IQ1_M,   MKC_GGML_MXFP4,
      MKC_GGML_NVFP4,   MKC_GGML_TQ1_0, MKC_GGML_Q1_0};
  rng_state = 5;
  for (int i = 0; i < BIG; i++) x[i] = between(-1, 1) * (i % 997 == 0 ? 8.0f : 1.0f);
  for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++) {
    const mkc_ggml_type_info *info = mkc_ggml_type(TYPES[t]);
    size_t bytes = BIG / (size_t)info->block * (size_t)info->block_bytes;
    int same = mkc_quantize(TYPES[t], x, BIG, one) == 0;
    for (int threads = 3; same && threads <= 7; threads += 4) {
      memset(many, 0x5a, bytes);
      same = mkc_quantize_parallel(TYPES[t], x, BIG, many, threads) == 0 &&
             memcmp(one, many, bytes) == 0;
    }
    CHECK(same, "%s: mkc_quantize_parallel on 3 and 7 threads = mkc_quantize, byte for byte",
          info->name);
  }
  CHECK_INT(mkc_quantize_parallel(MKC_GGML_Q4_K, x, 300, many, 4), -1,
            "mkc_quantize_parallel Q4_K, n = 300: -1");
  CHECK_INT(mkc_quantize_parallel(UNWRITTEN, x, 256, many, 4), -1,
            "mkc_quantize_parallel Q8_K: -1");
}

static void test_refused(void) {
  float x[N] = {0};
  uint8_t bytes[N * 4];
  CHECK_INT(mkc_quantize(MKC_GGML_Q8_K, x, 256, bytes), -1, "mkc_quantize Q8_K: -1");
  CHECK_INT(mkc_quantize(99, x, 32, bytes), -1, "mkc_quantize of an unknown type: -1");
  CHECK_INT(mkc_quantize(MKC_GGML_Q8_0, x, 33, bytes), -1, "mkc_quantize Q8_0, n = 33: -1");
  CHECK_INT(mkc_quantize(MKC_GGML_Q4_K, x, 32, bytes), -1, "mkc_quantize Q4_K, n = 32: -1");
  CHECK_INT(mkc_quantize(MKC_GGML_Q6_K, x, 0, bytes), 0, "mkc_quantize Q6_K, n = 0: 0");
  float y[32];
  CHECK_INT(mkc_dequant_f32(UNWRITTEN, bytes, 256, y), -1, "mkc_dequant_f32 Q8_K: -1");
  CHECK_INT(mkc_dequant_f32(99, bytes, 32, y), -1, "mkc_dequant_f32 of an unknown type: -1");

  static const struct {
    uint32_t type;
    int cols;
    size_t bytes;
  } ROWS[] = {{MKC_GGML_Q4_K, 512, 288}, {MKC_GGML_Q4_K, 100, 0},   {MKC_GGML_Q4_K, 288, 0},
              {MKC_GGML_Q6_K, 256, 210}, {MKC_GGML_Q8_0, 64, 68},   {MKC_GGML_Q4_0, 96, 54},
              {MKC_GGML_Q4_1, 32, 20},   {MKC_GGML_Q8_0, 72, 0},    {MKC_GGML_F32, 3, 12},
              {MKC_GGML_BF16, 5, 10},    {MKC_GGML_Q5_K, 256, 176}, {99, 32, 0},
              {MKC_GGML_Q8_0, 0, 0},     {MKC_GGML_Q8_0, -32, 0}};
  for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++)
    CHECK_INT(mkc_quant_row_bytes(ROWS[i].type, ROWS[i].cols), ROWS[i].bytes,
              "mkc_quant_row_bytes(%s, %d)",
              mkc_ggml_type(ROWS[i].type) ? mkc_ggml_type(ROWS[i].type)->name : "99", ROWS[i].cols);
}

int main(void) {
  test_bounds();
  test_hand_made();
  test_plain_and_bf16();
  test_grid_types();
  test_parallel();
  test_refused();
  return check_done();
}
