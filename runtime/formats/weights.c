/* The weight store: random bf16 tensors keyed by (seed, name), name/shape
 * lookup, and packing into the kernel's padded arena. */
#include "weights.h"
#include "dequant.h"
#include "quantize.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/rng.h"
#include "util/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Deliberately alike the f16 conversions (dequant.c) in shape: another format. */
float mkc_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t mkc_float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40); /* quiet NaN */
  /* Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. */
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

typedef struct xoshiro256 {
  uint64_t s[4];
} xoshiro256;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(xoshiro256 *x) { /* xoshiro256** */
  uint64_t *s = x->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* U(-1, 1) from the top 53 bits. */
static double uniform_pm1(xoshiro256 *x) {
  return (double)(xoshiro_next(x) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

/* The stream for one tensor depends on (seed, name) only, so adding or
 * reordering weights in a graph never changes the others. */
static void seed_for_name(xoshiro256 *x, unsigned long long seed, const char *name) {
  uint64_t h = mkc_fnv1a(MKC_FNV_OFFSET, name, strlen(name));
  uint64_t state = (uint64_t)seed ^ rotl(h, 32);
  state = mkc_splitmix64(&state) ^ h;
  for (int i = 0; i < 4; i++) x->s[i] = mkc_splitmix64(&state);
}

/* Returns 0, or -1 when out of memory. */
static int fill_random(mkc_tensor *t, unsigned long long seed) {
  size_t count = (size_t)t->rows * (size_t)t->cols;
  uint16_t *bf = t->blocks ? malloc(count * sizeof *bf) : t->data;
  float *f = t->blocks ? malloc(count * sizeof *f) : NULL;
  if (!bf || (t->blocks && !f)) {
    if (t->blocks) free(bf);
    free(f);
    return -1;
  }
  xoshiro256 x;
  seed_for_name(&x, seed, t->name);
  double offset = 0.0, scale;
  if (mkc_ends_with(t->name, "norm.weight")) {
    offset = 1.0;
    scale = 0.1;
  } else if (mkc_ends_with(t->name, ".bias")) {
    scale = 0.1; /* Q/K/V biases: a visible shift next to the projections' unit-scale outputs */
  } else if (strncmp(t->name, "token_embd.", 11) == 0) {
    /* Small next to the layers' outputs, as in trained models: a large
     * embedding dominates the residual and a tied head just repeats its input. */
    scale = 0.1;
  } else {
    scale = sqrt(3.0 / (double)t->cols); /* unit-variance outputs for unit-variance inputs */
  }
  for (size_t i = 0; i < count; i++)
    bf[i] = mkc_float_to_bf16((float)(offset + scale * uniform_pm1(&x)));
  if (!t->blocks) return 0;
  for (size_t i = 0; i < count; i++) f[i] = mkc_bf16_to_float(bf[i]);
  mkc_quantize((uint32_t)t->type, f, count, t->blocks);
  free(bf);
  free(f);
  return 0;
}

int mkc_weight_block_type(int type) {
  return type == MKC_GGML_Q8_0 || type == MKC_GGML_Q4_0 || type == MKC_GGML_Q4_1 ||
         type == MKC_GGML_Q5_0 || type == MKC_GGML_Q5_1 || type == MKC_GGML_Q2_K ||
         type == MKC_GGML_Q3_K || type == MKC_GGML_Q4_K || type == MKC_GGML_Q5_K ||
         type == MKC_GGML_Q6_K || type == MKC_GGML_IQ4_NL || type == MKC_GGML_IQ4_XS ||
         type == MKC_GGML_IQ2_XXS || type == MKC_GGML_IQ2_XS || type == MKC_GGML_IQ2_S ||
         type == MKC_GGML_IQ3_XXS || type == MKC_GGML_IQ3_S || type == MKC_GGML_IQ1_S ||
         type == MKC_GGML_IQ1_M || type == MKC_GGML_MXFP4 || type == MKC_GGML_NVFP4 ||
         type == MKC_GGML_TQ1_0 || type == MKC_GGML_TQ2_0 || type == MKC_GGML_Q1_0 ||
         type == MKC_GGML_Q2_0;
}

void mkc_tensor_row_f32(const mkc_tensor *t, int r, float *out) {
  if (t->blocks) {
    size_t rb = mkc_quant_row_bytes((uint32_t)t->type, t->cols);
    mkc_dequant_f32((uint32_t)t->type, t->blocks + (size_t)r * rb, (size_t)t->cols, out);
    return;
  }
  for (int c = 0; c < t->cols; c++) out[c] = mkc_bf16_to_float(t->data[(size_t)r * t->cols + c]);
}

int mkc_weights_check(const mkc_weights *w, const char *source) {
  double start = mkc_seconds(), values = 0;
  int bad = 0, widest = 1;
  for (int i = 0; i < w->n; i++)
    if (w->t[i].cols > widest) widest = w->t[i].cols;
  float *row = malloc((size_t)widest * sizeof *row);
  if (!row) return mkc_error_in(source, "--check-tensors: out of memory");
  for (int i = 0; i < w->n; i++) {
    const mkc_tensor *t = &w->t[i];
    values += (double)t->rows * t->cols;
    for (int r = 0, found = 0; r < t->rows && !found; r++) {
      mkc_tensor_row_f32(t, r, row);
      for (int c = 0; c < t->cols && !found; c++)
        if (!isfinite(row[c])) {
          mkc_error_in(source, "tensor %s: row %d, column %d is %s (--check-tensors)", t->name, r,
                       c,
                       isnan(row[c]) ? "NaN"
                       : row[c] > 0  ? "+inf"
                                     : "-inf");
          found = 1;
          bad++;
        }
    }
  }
  free(row);
  if (bad > 1) /* one tensor's message says it all; several are summed up */
    return mkc_error_in(source, "%d of %d tensors hold values that are not finite", bad, w->n);
  if (bad) return -1;
  fprintf(stderr,
          "mkc: %s: --check-tensors: %d tensors, %.3g G values, every one finite (%.1f s)\n",
          source, w->n, values / 1e9, mkc_seconds() - start);
  return 0;
}

int mkc_weights_begin(mkc_weights *w, const mkc_graph *g) {
  w->n = 0;
  w->t = calloc(g->n_weights ? (size_t)g->n_weights : 1, sizeof *w->t);
  return w->t ? 0 : -1;
}

mkc_tensor *mkc_weights_append(mkc_weights *w, const mkc_weight_info *info) {
  size_t count = (size_t)info->rows * (size_t)info->cols;
  mkc_tensor *t = &w->t[w->n++];
  t->rows = info->rows;
  t->cols = info->cols;
  t->name = strdup(info->name);
  if (mkc_weight_block_type(info->type)) {
    t->type = info->type;
    t->blocks =
        malloc((size_t)info->rows * mkc_quant_row_bytes((uint32_t)info->type, info->cols) + 1);
    return t->name && t->blocks ? t : NULL;
  }
  t->type = MKC_GGML_BF16;
  t->data = malloc((count ? count : 1) * sizeof *t->data);
  return t->name && t->data ? t : NULL;
}

int mkc_weights_random(mkc_weights *w, const mkc_graph *g, unsigned long long seed) {
  if (mkc_weights_begin(w, g) != 0) {
    fprintf(stderr, "mkc: error: out of memory for %d weights\n", g->n_weights);
    return -1;
  }
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    if (info->rows <= 0 || info->cols <= 0) {
      fprintf(stderr, "mkc: error: weight %s: bad shape [%d, %d]\n", info->name, info->rows,
              info->cols);
      mkc_weights_free(w);
      return -1;
    }
    mkc_tensor *t = mkc_weights_append(w, info);
    if (!t) {
      fprintf(stderr, "mkc: error: weight %s: out of memory (%zu elements)\n", info->name,
              (size_t)info->rows * (size_t)info->cols);
      mkc_weights_free(w);
      return -1;
    }
    if (fill_random(t, seed) != 0) {
      fprintf(stderr, "mkc: error: weight %s: out of memory\n", info->name);
      mkc_weights_free(w);
      return -1;
    }
  }
  return 0;
}

const mkc_tensor *mkc_weights_get(const mkc_weights *w, const char *name, int rows, int cols) {
  for (int i = 0; i < w->n; i++) {
    const mkc_tensor *t = &w->t[i];
    if (strcmp(t->name, name) != 0) continue;
    if (t->rows == rows && t->cols == cols) return t;
    fprintf(stderr, "mkc: error: weight %s: Expected [%d, %d], Actual [%d, %d]\n", name, rows, cols,
            t->rows, t->cols);
    return NULL;
  }
  fprintf(stderr, "mkc: error: weight %s: missing\n", name);
  return NULL;
}

/* Zeroed, on 2 MiB pages where the kernel gives them: the CPU backend streams
 * the whole arena every step, and 4 KiB pages cost a TLB miss every few rows.
 * Freed with free(). */
static uint16_t *arena_alloc(size_t elems) {
  size_t huge = (size_t)2 << 20, bytes = (elems * sizeof(uint16_t) + huge - 1) / huge * huge;
  void *p = aligned_alloc(huge, bytes);
  if (!p) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without it the arena still works */
#endif
  memset(p, 0, bytes);
  return p;
}

uint16_t *mkc_weights_arena(const mkc_weights *w, const mkc_graph *g) {
  uint16_t *arena = arena_alloc(g->weight_elems ? g->weight_elems : 1);
  if (!arena) {
    fprintf(stderr, "mkc: error: out of memory for the weight arena (%zu elements)\n",
            g->weight_elems);
    return NULL;
  }
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    const mkc_tensor *t = mkc_weights_get(w, info->name, info->rows, info->cols);
    if (!t) goto fail;
    if (mkc_weight_block_type(info->type) ? t->type != info->type : t->type != MKC_GGML_BF16) {
      fprintf(stderr, "mkc: error: weight %s: stored as %s, but the kernel was planned for %s\n",
              info->name, mkc_ggml_type((uint32_t)t->type)->name,
              mkc_weight_block_type(info->type) ? mkc_ggml_type((uint32_t)info->type)->name
                                                : "BF16");
      goto fail;
    }
    /* A wrong plan must fail here, not scribble past the arena (sizes in bytes). */
    size_t row = t->blocks ? mkc_quant_row_bytes((uint32_t)t->type, t->cols) : (size_t)t->cols * 2;
    size_t end = 2 * (info->offset + (size_t)(info->rows - 1) * (size_t)info->row_stride) + row;
    if (2 * (size_t)info->row_stride < row || end > 2 * g->weight_elems) {
      fprintf(stderr,
              "mkc: error: weight %s: arena slot (offset %zu, row stride %d) does not fit "
              "[%d, %d] in %zu elements\n",
              info->name, info->offset, info->row_stride, info->rows, info->cols, g->weight_elems);
      goto fail;
    }
    const unsigned char *src = t->blocks ? t->blocks : (const unsigned char *)t->data;
    for (int r = 0; r < t->rows; r++)
      memcpy(arena + info->offset + (size_t)r * info->row_stride, src + (size_t)r * row, row);
  }
  return arena;
fail:
  free(arena);
  return NULL;
}

void mkc_weights_free(mkc_weights *w) {
  for (int i = 0; i < w->n; i++) {
    free(w->t[i].name);
    free(w->t[i].data);
    free(w->t[i].blocks);
  }
  free(w->t);
  w->n = 0;
  w->t = NULL;
}

void mkc_graph_matrix_types(const mkc_graph *g, char *buf, size_t cap) {
  /* in order of first appearance; ggml's type ids are below 40 */
  int seen[40] = {0}, n = 0;
  buf[0] = 0;
  for (int i = 0; i < g->n_weights; i++) {
    int t = mkc_weight_block_type(g->weights[i].type) ? g->weights[i].type : MKC_GGML_BF16;
    if (g->weights[i].rows < 2 || t < 0 || t >= 40 || seen[t]) continue;
    seen[t] = 1;
    const mkc_ggml_type_info *ti = mkc_ggml_type((uint32_t)t);
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%s", n++ ? "+" : "", ti ? ti->name : "?");
  }
}
