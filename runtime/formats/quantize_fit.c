/* Quantizers that fit: each block's scales chosen for the least weighted
 * squared error sum w (x - x')^2 over its elements, where quantize.c's
 * choose scales that cover the block's extremes. Covering bounds every
 * element's error by half a step, but one outlier then sets the step of the
 * whole block; a step a little smaller, which clips the outlier, usually
 * leaves less error in sum. With an importance matrix, w is the mean square
 * of the input each weight column meets (so sum w (x - x')^2 is the matvec's
 * expected squared error); without one, w = 1, the plain squared error.
 *
 * Per block (or sub-block) a fit tries a few dozen steps that put the value
 * of largest magnitude near each end of the codes, takes each one's codes,
 * solves least squares for the step (and offset) those codes want, and keeps
 * the best (llama.cpp's quantizers search the same way). Sub-block scales are
 * then rounded to the bits the type stores, and every code is chosen again
 * against the stored scales. The block written is the fitted one or
 * quantize.c's covering one, whichever leaves the lesser weighted error as
 * the reader (dequant.c) decodes them: never worse than covering. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "quantize.h"
#include "quantize_iq.h"
#include "quantize_pack.h"
#include "util/parts.h"

enum { TRIES = 10 }; /* steps tried either side of a code end, a tenth of a code apart */

/* The integer nearest v within [lo, hi] (lo >= -128; a half either way); NaN gives lo. Cheaper
 * than lroundf, which is a call: these loops are the whole cost of a fit. */
static inline int nearest(float v, int lo, int hi) {
  if (!(v > (float)lo)) return lo;
  if (v >= (float)hi) return hi;
  return (int)(v + 128.5f) - 128;
}

/* f16 bits nearest v, saturated at 65504 in magnitude. */
static uint16_t f16_near(float v) {
  uint16_t h = mkc_float_to_f16(v);
  if ((h & 0x7fff) > 0x7bff) h = (uint16_t)((h & 0x8000) | 0x7bff);
  return h;
}

/* The value of largest magnitude among n. */
static float extreme(const float *x, int n) {
  float ext = 0;
  for (int i = 0; i < n; i++)
    if (fabsf(x[i]) > fabsf(ext)) ext = x[i];
  return ext;
}

static float sum_wxx(const float *x, const float *w, int n) {
  float sxx = 0;
  for (int i = 0; i < n; i++) sxx += w[i] * x[i] * x[i];
  return sxx;
}

/* n values on codes lo..hi times a step d: for the codes nearest x / d, the least-squares step
 * (returned) and its error (*err, from sxx = sum w x^2); a d of 0, or codes all 0, give 0. */
static float refit_sym(const float *x, const float *w, int n, int lo, int hi, float d, float sxx,
                       float *err) {
  float sxq = 0, sqq = 0, id = d != 0 ? 1 / d : 0;
  for (int i = 0; i < n; i++) {
    float q = (float)nearest(x[i] * id, lo, hi);
    sxq += w[i] * x[i] * q, sqq += w[i] * q * q;
  }
  if (!(sqq > 0)) return *err = sxx, 0;
  *err = sxx - sxq * sxq / sqq;
  return sxq / sqq;
}

/* The step d of n values on codes lo..hi (x' = d q) with the least weighted error, unrounded:
 * the value of largest magnitude put at either end of the codes and a tenth of a code at a time
 * around it, each step's codes refitted by least squares, then the best refitted again. */
static float fit_sym(const float *x, const float *w, int n, int lo, int hi) {
  float ext = extreme(x, n), best = 0, best_err = INFINITY, err, sxx = sum_wxx(x, w, n);
  if (ext == 0) return 0;
  for (int end = 0; end < 2; end++)
    for (int k = -TRIES; k <= TRIES; k++) {
      float t = (float)(end ? hi : lo) + 0.1f * (float)k; /* ext's code */
      if (fabsf(t) < 0.5f) continue;
      float d = refit_sym(x, w, n, lo, hi, ext / t, sxx, &err);
      if (err < best_err) best_err = err, best = d;
    }
  for (int pass = 0; pass < 2 && best != 0; pass++) {
    float d = refit_sym(x, w, n, lo, hi, best, sxx, &err);
    if (!(err < best_err)) break;
    best_err = err, best = d;
  }
  return best;
}

/* n values on codes 0..top, x' = a q + b, codes nearest (x - b) / a: the least-squares a and b
 * for those codes (with nonpositive, b <= 0) and their error; 0 when there is no fit. */
static int refit_affine(const float *x, const float *w, int n, int top, int nonpositive, float a,
                        float b, float *na, float *nb, float *err) {
  float s = 0, sq = 0, sqq = 0, sx = 0, sxq = 0, sxx = 0, ia = 1 / a;
  for (int i = 0; i < n; i++) {
    float q = (float)nearest((x[i] - b) * ia, 0, top);
    s += w[i], sq += w[i] * q, sqq += w[i] * q * q;
    sx += w[i] * x[i], sxq += w[i] * x[i] * q, sxx += w[i] * x[i] * x[i];
  }
  float det = s * sqq - sq * sq;
  if (!(det > 0) || !(sqq > 0)) return 0;
  float A = (s * sxq - sq * sx) / det, B = (sqq * sx - sq * sxq) / det;
  if (nonpositive && B > 0) B = 0, A = sxq / sqq;
  if (!(A > 0)) return 0;
  *na = A, *nb = B;
  /* sum w (x - A q - B)^2, expanded */
  *err = sxx - 2 * A * sxq - 2 * B * sx + A * A * sqq + 2 * A * B * sq + B * B * s;
  return 1;
}

/* n values on codes 0..top, x' = a q + b, with the least weighted error: the codes of steps
 * around (max - min) / top refitted by least squares for a and b, then the best refitted
 * again; with nonpositive, b <= 0 (the K types' offset only lowers). */
static void fit_affine(const float *x, const float *w, int n, int top, int nonpositive,
                       float *a_out, float *b_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
  if (nonpositive && lo > 0) lo = 0;
  *a_out = 0, *b_out = lo;
  if (!(hi > lo)) return;
  float best_err = INFINITY, a, b, err;
  for (int k = -TRIES; k <= TRIES; k++)
    if (refit_affine(x, w, n, top, nonpositive, (hi - lo) / ((float)top + 0.1f * (float)k), lo, &a,
                     &b, &err) &&
        err < best_err)
      best_err = err, *a_out = a, *b_out = b;
  for (int pass = 0; pass < 2 && *a_out > 0; pass++) {
    if (!refit_affine(x, w, n, top, nonpositive, *a_out, *b_out, &a, &b, &err) || !(err < best_err))
      break;
    best_err = err, *a_out = a, *b_out = b;
  }
}

/* The index of IQ4_NL's level nearest v (levels ascending; the lower on a tie). */
static int nearest_level(float v) {
  int k = 0;
  while (k < 15 && (float)mkc_iq4nl_levels[k + 1] < v) k++;
  if (k < 15 && (float)mkc_iq4nl_levels[k + 1] - v < v - (float)mkc_iq4nl_levels[k]) k++;
  return k;
}

/* refit_sym on IQ4_NL's levels. */
static float refit_levels(const float *x, const float *w, int n, float d, float sxx, float *err) {
  float sxl = 0, sll = 0, id = 1 / d;
  for (int i = 0; i < n; i++) {
    float l = mkc_iq4nl_levels[nearest_level(x[i] * id)];
    sxl += w[i] * x[i] * l, sll += w[i] * l * l;
  }
  if (!(sll > 0) || sxl == 0) return *err = sxx, 0;
  *err = sxx - sxl * sxl / sll;
  return sxl / sll;
}

/* The step d of n values on IQ4_NL's levels (x' = d level), as fit_sym: the value of largest
 * magnitude tried at or near either end level. */
static float fit_levels(const float *x, const float *w, int n) {
  float ext = extreme(x, n), best = 0, best_err = INFINITY, err, sxx = sum_wxx(x, w, n);
  if (ext == 0) return 0;
  for (int end = 0; end < 2; end++)
    for (int k = -8; k <= 8; k++) {
      float d = refit_levels(x, w, n, ext / ((float)mkc_iq4nl_levels[end ? 15 : 0] + (float)k), sxx,
                             &err);
      if (err < best_err && d != 0) best_err = err, best = d;
    }
  for (int pass = 0; pass < 2 && best != 0; pass++) {
    float d = refit_levels(x, w, n, best, sxx, &err);
    if (!(err < best_err) || d == 0) break;
    best_err = err, best = d;
  }
  return best;
}

/* The 16 elements of a Q2_K or Q3_K block's sub-block s (their interleaved order). */
static void gather16(const float *x, const float *w, float v[16][16], float u[16][16]) {
  int n[16] = {0};
  for (int e = 0; e < 256; e++) {
    int s = mkc_k16_sub(e);
    v[s][n[s]] = x[e], u[s][n[s]++] = w[e];
  }
}

/* Sub-block scales s[j] (signed where lo < 0) as a step d (f16, stored
 * in *dh) times integers sc[j] within [lo, hi]: d = the largest |s| over the
 * top, rounded to nearest. */
static float round_scales(const float *s, int n, int lo, int hi, uint16_t *dh, int *sc) {
  float amax = 0;
  for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(s[j]));
  *dh = f16_near(amax / (float)hi);
  float d = mkc_f16_to_float(*dh);
  for (int j = 0; j < n; j++) sc[j] = d > 0 ? nearest(s[j] / d, lo, hi) : 0;
  return d;
}

static void fit_zero(const float *x, const float *w, int zero, mkc_qblock *p) {
  p->d = f16_near(fit_sym(x, w, 32, -zero, zero - 1));
  float d = mkc_f16_to_float(p->d);
  for (int i = 0; i < 32; i++)
    p->code[i] = (d != 0 ? nearest(x[i] / d, -zero, zero - 1) : 0) + zero;
}

static void fit_offset(const float *x, const float *w, int top, mkc_qblock *p) {
  float a, b;
  fit_affine(x, w, 32, top, 0, &a, &b);
  p->d = f16_near(a), p->m = f16_near(b);
  float d = mkc_f16_to_float(p->d), m = mkc_f16_to_float(p->m);
  for (int i = 0; i < 32; i++) p->code[i] = d > 0 ? nearest((x[i] - m) / d, 0, top) : 0;
}

/* A K sub-block's scale and min (*sc, *mn, within 0..smax, as rounded) replaced by the pair
 * within one of them that leaves the least weighted error against the stored d and dmin. */
static void near_scales(const float *x, const float *w, int n, int top, int smax, float d,
                        float dmin, int *sc, int *mn) {
  int sc0 = *sc, mn0 = *mn;
  float best_err = INFINITY;
  for (int s = sc0 - 1; s <= sc0 + 1; s++)
    for (int m = mn0 - 1; m <= mn0 + 1; m++) {
      if (s < 0 || s > smax || m < 0 || m > smax) continue;
      float step = d * (float)s, offset = dmin * (float)m, err = 0, is = step > 0 ? 1 / step : 0;
      for (int i = 0; i < n; i++) {
        float e = x[i] - (step * (float)nearest((x[i] + offset) * is, 0, top) - offset);
        err += w[i] * e * e;
      }
      if (err < best_err) best_err = err, *sc = s, *mn = m;
    }
}

/* A signed sub-block scale *sc (within lo..hi, as rounded) replaced by the one within one of it
 * that leaves the least weighted error against the stored d: codes lo..hi (the IQ4 levels
 * where levels is set). */
static void near_scale(const float *x, const float *w, int n, int lo, int hi, int levels, int smin,
                       int smax, float d, int *sc) {
  int sc0 = *sc;
  float best_err = INFINITY;
  for (int s = sc0 - 1; s <= sc0 + 1; s++) {
    if (s < smin || s > smax) continue;
    float step = d * (float)s, err = 0, is = step != 0 ? 1 / step : 0;
    for (int i = 0; i < n; i++) {
      float q = levels ? (float)mkc_iq4nl_levels[nearest_level(x[i] * is)]
                       : (float)nearest(x[i] * is, lo, hi);
      float e = x[i] - step * q;
      err += w[i] * e * e;
    }
    if (err < best_err) best_err = err, *sc = s;
  }
}

/* Q2_K (sub-blocks of 16, codes 0..3, 4-bit scales) and Q4_K, Q5_K (of 32,
 * codes 0..15 or 0..31, 6-bit): x' = (d sc) q - dmin mn. */
static void fit_k(const float *x, const float *w, int sub, int top, int bits, mkc_qblock *p) {
  int subs = 256 / sub, smax = (1 << bits) - 1;
  float a[16], o[16], v[16][16], u[16][16];
  if (sub == 16) gather16(x, w, v, u);
  for (int j = 0; j < subs; j++) {
    float b;
    fit_affine(sub == 16 ? v[j] : x + sub * j, sub == 16 ? u[j] : w + sub * j, sub, top, 1, &a[j],
               &b);
    o[j] = -b;
  }
  float d = round_scales(a, subs, 0, smax, &p->d, p->sc);
  float dmin = round_scales(o, subs, 0, smax, &p->m, p->mn);
  for (int j = 0; j < subs; j++) /* each sub-block's 6 bits: the rounding or one beside */
    near_scales(sub == 16 ? v[j] : x + sub * j, sub == 16 ? u[j] : w + sub * j, sub, top, smax, d,
                dmin, &p->sc[j], &p->mn[j]);
  for (int e = 0; e < 256; e++) {
    int j = sub == 16 ? mkc_k16_sub(e) : e / sub;
    float step = d * (float)p->sc[j], offset = dmin * (float)p->mn[j];
    p->code[e] = step > 0 ? nearest((x[e] + offset) / step, 0, top) : 0;
  }
}

static void fit_q3_k(const float *x, const float *w, mkc_qblock *p) {
  float s[16], v[16][16], u[16][16];
  gather16(x, w, v, u);
  for (int j = 0; j < 16; j++) s[j] = fit_sym(v[j], u[j], 16, -4, 3);
  float d = round_scales(s, 16, -32, 31, &p->d, p->sc);
  for (int j = 0; j < 16; j++) near_scale(v[j], u[j], 16, -4, 3, 0, -32, 31, d, &p->sc[j]);
  for (int e = 0; e < 256; e++) {
    float eff = d * (float)p->sc[mkc_k16_sub(e)];
    p->code[e] = (eff != 0 ? nearest(x[e] / eff, -4, 3) : 0) + 4;
  }
}

static void fit_q6_k(const float *x, const float *w, mkc_qblock *p) {
  float s[16];
  for (int j = 0; j < 16; j++) s[j] = fit_sym(x + 16 * j, w + 16 * j, 16, -32, 31);
  float d = round_scales(s, 16, -128, 127, &p->d, p->sc);
  for (int j = 0; j < 16; j++)
    near_scale(x + 16 * j, w + 16 * j, 16, -32, 31, 0, -128, 127, d, &p->sc[j]);
  for (int i = 0; i < 256; i++) {
    float eff = d * (float)p->sc[i / 16];
    p->code[i] = (eff != 0 ? nearest(x[i] / eff, -32, 31) : 0) + 32;
  }
}

static void fit_iq4(const float *x, const float *w, int subs, mkc_qblock *p) {
  float s[8], d;
  for (int j = 0; j < subs; j++) s[j] = fit_levels(x + 32 * j, w + 32 * j, 32);
  if (subs == 1)
    p->d = f16_near(s[0]), d = mkc_f16_to_float(p->d), p->sc[0] = 1;
  else {
    d = round_scales(s, subs, -32, 31, &p->d, p->sc);
    for (int j = 0; j < subs; j++)
      near_scale(x + 32 * j, w + 32 * j, 32, 0, 0, 1, -32, 31, d, &p->sc[j]);
  }
  for (int i = 0; i < 32 * subs; i++) {
    float eff = d * (float)p->sc[i / 32];
    p->code[i] = eff != 0 ? nearest_level(x[i] / eff) : 8;
  }
}

/* Fills p for one block of type fitted to x under weights w; 0, or -1 for a type without a fit. */
static int fit_block(uint32_t type, const float *x, const float *w, mkc_qblock *p) {
  switch (type) {
  case MKC_GGML_Q4_0:
    return fit_zero(x, w, 8, p), 0;
  case MKC_GGML_Q5_0:
    return fit_zero(x, w, 16, p), 0;
  case MKC_GGML_Q4_1:
    return fit_offset(x, w, 15, p), 0;
  case MKC_GGML_Q5_1:
    return fit_offset(x, w, 31, p), 0;
  case MKC_GGML_Q2_K:
    return fit_k(x, w, 16, 3, 4, p), 0;
  case MKC_GGML_Q3_K:
    return fit_q3_k(x, w, p), 0;
  case MKC_GGML_Q4_K:
    return fit_k(x, w, 32, 15, 6, p), 0;
  case MKC_GGML_Q5_K:
    return fit_k(x, w, 32, 31, 6, p), 0;
  case MKC_GGML_Q6_K:
    return fit_q6_k(x, w, p), 0;
  case MKC_GGML_IQ4_NL:
    return fit_iq4(x, w, 1, p), 0;
  case MKC_GGML_IQ4_XS:
    return fit_iq4(x, w, 8, p), 0;
  }
  return -1;
}

/* The grid types' encoders (quantize_iq.c), which take weights themselves. */
typedef void (*grid_fn)(const float *x, const float *w, uint8_t *b);
static grid_fn grid_writer(uint32_t type) {
  switch (type) {
  case MKC_GGML_IQ2_XXS:
    return mkc_quantize_iq2_xxs;
  case MKC_GGML_IQ2_XS:
    return mkc_quantize_iq2_xs;
  case MKC_GGML_IQ2_S:
    return mkc_quantize_iq2_s;
  case MKC_GGML_IQ3_XXS:
    return mkc_quantize_iq3_xxs;
  case MKC_GGML_IQ3_S:
    return mkc_quantize_iq3_s;
  case MKC_GGML_IQ1_S:
    return mkc_quantize_iq1_s;
  case MKC_GGML_IQ1_M:
    return mkc_quantize_iq1_m;
  }
  return NULL;
}

int mkc_quantize_has_fit(uint32_t type) {
  switch (type) {
  case MKC_GGML_Q4_0:
  case MKC_GGML_Q5_0:
  case MKC_GGML_Q4_1:
  case MKC_GGML_Q5_1:
  case MKC_GGML_Q2_K:
  case MKC_GGML_Q3_K:
  case MKC_GGML_Q4_K:
  case MKC_GGML_Q5_K:
  case MKC_GGML_Q6_K:
  case MKC_GGML_IQ4_NL:
  case MKC_GGML_IQ4_XS:
    return 1;
  }
  return grid_writer(type) != NULL;
}

/* The weighted squared error of a block of n as dequant.c reads it. */
static double block_error(uint32_t type, const uint8_t *b, const float *x, const float *w, int n) {
  float y[256];
  mkc_dequant_f32(type, b, (size_t)n, y);
  double err = 0;
  for (int i = 0; i < n; i++) err += (double)w[i] * (x[i] - y[i]) * (x[i] - y[i]);
  return err;
}

/* Rows [r0, r1) of a fit (mkc_quantize_fit's arguments). */
typedef struct fit_part {
  uint32_t type;
  const float *src, *importance;
  size_t cols, r0, r1;
  uint8_t *dst;
  int rc;
} fit_part;

static void *fit_rows(void *arg) {
  fit_part *f = arg;
  const mkc_ggml_type_info *info = mkc_ggml_type(f->type);
  size_t row_bytes = mkc_quant_row_bytes(f->type, (int)f->cols);
  grid_fn grid = grid_writer(f->type);
  float ones[256];
  for (int i = 0; i < 256; i++) ones[i] = 1;
  for (size_t r = f->r0; r < f->r1 && !f->rc; r++) {
    const float *x = f->src + r * f->cols;
    uint8_t *out = f->dst + r * row_bytes;
    for (size_t c = 0; c < f->cols; c += (size_t)info->block, out += info->block_bytes) {
      const float *w = f->importance ? f->importance + c : ones;
      mkc_qblock p;
      uint8_t cover[256];
      if (grid && !f->importance) { /* unweighted, the grid encoders are mkc_quantize's */
        if (mkc_quantize(f->type, x + c, (size_t)info->block, out)) f->rc = -1;
        continue;
      }
      if (grid)
        grid(x + c, w, out);
      else if (fit_block(f->type, x + c, w, &p) || mkc_qblock_pack(f->type, &p, out))
        f->rc = -1;
      if (f->rc || mkc_quantize(f->type, x + c, (size_t)info->block, cover)) {
        f->rc = -1;
        break;
      }
      if (block_error(f->type, cover, x + c, w, info->block) <
          block_error(f->type, out, x + c, w, info->block))
        memcpy(out, cover, (size_t)info->block_bytes);
    }
  }
  return NULL;
}

int mkc_quantize_fit(uint32_t type, const float *src, size_t rows, size_t cols,
                     const float *importance, void *dst, int threads) {
  if (!mkc_quantize_has_fit(type))
    return mkc_quantize_parallel(type, src, rows * cols, dst, threads);
  if (!mkc_quant_row_bytes(type, (int)cols)) return -1;
  if (threads > MKC_PARTS_MAX) threads = MKC_PARTS_MAX;
  if (threads < 1 || rows < (size_t)threads) threads = rows ? (int)rows : 1;
  fit_part part[MKC_PARTS_MAX];
  int rc = 0;
  for (int t = 0; t < threads; t++)
    part[t] = (fit_part){type,
                         src,
                         importance,
                         cols,
                         rows * (size_t)t / (size_t)threads,
                         rows * (size_t)(t + 1) / (size_t)threads,
                         dst,
                         0};
  mkc_run_parts(fit_rows, part, sizeof *part, threads);
  for (int t = 0; t < threads; t++) rc |= part[t].rc;
  return rc ? -1 : 0;
}
