/* mkc_quantize_fit (formats/quantize_fit.c) against three oracles that are
 * not it:
 *   - ggml's own quantizers: tests/data/quant_ggml.bin holds random rows
 *     and ggml_quantize_chunk's encodings of them in each type, without and
 *     with an importance matrix (tools/quant_ggml_fixture.sh). Read with
 *     mkc's dequantizer, mkc's fit of the same rows must leave no more
 *     squared error (weighted by the importance where ggml had it) than
 *     ggml's, type by type. TQ1_0, TQ2_0, NVFP4, Q1_0 and Q2_0 have no fit
 *     and ggml no other encoding of them than its reference's (importance
 *     or not): there mkc_quantize and mkc_quantize_fit must write ggml's
 *     bytes exactly.
 *   - a brute-force search: for the types of one step a block (Q4_0, Q5_0,
 *     IQ4_NL), every f16 step in a wide range, each with its nearest codes;
 *     the fit must come within 1 % of the best of them in sum.
 *   - the covering quantizer (mkc_quantize): never less error than the fit,
 *     block by block, on rows of every kind (zeros, constants, outliers,
 *     tiny and huge values), and more in sum where blocks have outliers.
 * Also: the importance matrix lowers the weighted error it is given; the
 * bytes do not depend on the thread count; types without a fit are
 * mkc_quantize's bytes; importance matrices of both llama-imatrix formats
 * (tests/data/imatrix_blocks_tiny.*) read to the same means. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/dequant.h"
#include "formats/gguf.h"
#include "formats/imatrix.h"
#include "formats/quantize.h"
#include "util/files.h"

static uint64_t rng_state = 7;
static double uniform(void) { /* [0, 1), splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static double gaussian(void) { return sqrt(-2 * log(1 - uniform())) * cos(2 * M_PI * uniform()); }

static const uint32_t FIT_TYPES[] = {
    MKC_GGML_Q4_0,   MKC_GGML_Q4_1,    MKC_GGML_Q5_0,   MKC_GGML_Q5_1,  MKC_GGML_Q2_K,
    MKC_GGML_Q3_K,   MKC_GGML_Q4_K,    MKC_GGML_Q5_K,   MKC_GGML_Q6_K,  MKC_GGML_IQ4_NL,
    MKC_GGML_IQ4_XS, MKC_GGML_IQ2_XXS, MKC_GGML_IQ2_XS, MKC_GGML_IQ2_S, MKC_GGML_IQ3_XXS,
    MKC_GGML_IQ3_S,  MKC_GGML_IQ1_S,   MKC_GGML_IQ1_M};
enum { N_FIT = sizeof FIT_TYPES / sizeof *FIT_TYPES };
/* the types whose bytes must be ggml's */
static const uint32_t EXACT_TYPES[] = {MKC_GGML_TQ1_0, MKC_GGML_TQ2_0, MKC_GGML_NVFP4,
                                       MKC_GGML_Q1_0, MKC_GGML_Q2_0};
enum { N_EXACT = sizeof EXACT_TYPES / sizeof *EXACT_TYPES };

static const char *name(uint32_t type) { return mkc_ggml_type(type)->name; }

/* sum w (x - y)^2 over n, w NULL: 1. */
static double sq_err(const float *x, const float *y, const float *w, size_t n, size_t cols) {
  double e = 0;
  for (size_t i = 0; i < n; i++) e += (w ? w[i % cols] : 1.0) * (x[i] - y[i]) * (x[i] - y[i]);
  return e;
}

/* ---- against ggml ---- */

static uint32_t u32_at(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The first block where a and b differ (of bytes in blocks of bb), printed, or -1. */
static long first_diff(const uint8_t *a, const uint8_t *b, size_t bytes, size_t bb) {
  for (size_t k = 0; k < bytes / bb; k++)
    if (memcmp(a + k * bb, b + k * bb, bb)) {
      for (int who = 0; who < 2; who++) {
        printf("  block %zu, %s: ", k, who ? "mkc " : "ggml");
        for (size_t i = 0; i < bb; i++) printf("%02x", (who ? b : a)[k * bb + i]);
        printf("\n");
      }
      return (long)k;
    }
  return -1;
}

/* An exact type's entry: mkc_quantize's bytes, and mkc_quantize_fit's (importance given or not),
 * are ggml's. */
static void check_exact(uint32_t type, const float *x, uint32_t rows, uint32_t cols,
                        const float *imp, const uint8_t *theirs, size_t bytes, uint8_t *mine) {
  size_t bb = (size_t)mkc_ggml_type(type)->block_bytes;
  int rc = mkc_quantize(type, x, (size_t)rows * cols, mine);
  CHECK(rc == 0 && first_diff(theirs, mine, bytes, bb) < 0,
        "%s: mkc_quantize writes ggml's %zu bytes exactly (returns %d)", name(type), bytes, rc);
  int same = 1;
  for (int weighted = 0; weighted < 2; weighted++) {
    rc = mkc_quantize_fit(type, x, rows, cols, weighted ? imp : NULL, mine, 2 + weighted);
    same &= rc == 0 && memcmp(mine, theirs, bytes) == 0;
  }
  CHECK(!mkc_quantize_has_fit(type) && same,
        "%s: no fit; mkc_quantize_fit, with the importance matrix or without, ggml's bytes too",
        name(type));
}

static void test_against_ggml(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/quant_ggml.bin", MKC_SOURCE_DIR);
  size_t size;
  uint8_t *file = mkc_read_file(path, &size);
  if (!CHECK(file && size > 20 && memcmp(file, "MKCQGGML", 8) == 0, "%s reads", path)) {
    free(file);
    return;
  }
  uint32_t rows = u32_at(file + 8), cols = u32_at(file + 12);
  size_t n = (size_t)rows * cols, at = 16 + 4 * n + 4 * (size_t)cols;
  const float *x = (const float *)(file + 16), *imp = x + n;
  uint32_t entries = u32_at(file + at);
  at += 4;
  float *y = malloc(n * sizeof *y);
  uint8_t *mine = malloc(n * 4);
  int seen[MKC_GGML_TYPE_COUNT][2] = {{0}};
  for (uint32_t k = 0; k < entries && at + 16 <= size; k++) {
    uint32_t type = u32_at(file + at), weighted = u32_at(file + at + 4);
    uint64_t bytes = u32_at(file + at + 8) | (uint64_t)u32_at(file + at + 12) << 32;
    const uint8_t *theirs = file + at + 16;
    at += 16 + bytes;
    if (!(at <= size && type < MKC_GGML_TYPE_COUNT && weighted < 2 &&
          bytes == rows * mkc_quant_row_bytes(type, (int)cols))) {
      CHECK(0, "entry %u of %s: a type, a flag and the bytes of %u rows", k, path, rows);
      break;
    }
    int exact = 0;
    for (int t = 0; t < N_EXACT; t++) exact |= type == EXACT_TYPES[t];
    seen[type][weighted] = 1;
    if (exact) {
      check_exact(type, x, rows, cols, imp, theirs, bytes, mine);
      continue;
    }
    const float *w = weighted ? imp : NULL;
    mkc_dequant_f32(type, theirs, n, y);
    double ggml = sq_err(x, y, w, n, cols);
    int rc = mkc_quantize_fit(type, x, rows, cols, w, mine, 2);
    mkc_dequant_f32(type, mine, n, y);
    double ours = sq_err(x, y, w, n, cols);
    CHECK(rc == 0 && ours <= ggml,
          "%s%s: mkc's fit leaves %.4g of ggml's squared error (at most 1)", name(type),
          weighted ? " with an importance matrix" : "", ours / ggml);
  }
  for (int t = 0; t < N_FIT; t++)
    CHECK(seen[FIT_TYPES[t]][1], "%s: the fixture has ggml's weighted encoding",
          name(FIT_TYPES[t]));
  for (int t = 0; t < N_EXACT; t++)
    CHECK(seen[EXACT_TYPES[t]][0], "%s: the fixture has ggml's encoding", name(EXACT_TYPES[t]));
  CHECK(at == size, "%s: its %u entries end where the file does", path, entries);
  free(y);
  free(mine);
  free(file);
}

/* ---- against a brute-force search ---- */

/* The least sum of squared errors of 32 values over every f16 step d with lo_mag <= |d| <= hi_mag
 * (both signs), each value on its nearest code lo..hi (levels: IQ4_NL's instead). */
static double brute_force(const float *x, int lo, int hi, int levels) {
  float amax = 0;
  for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
  double best = INFINITY;
  for (uint32_t h = 1; h < 0x7c00; h++) { /* every finite positive f16 */
    float d = mkc_f16_to_float((uint16_t)h);
    if (d < amax / (levels ? 400 : 4 * (float)hi) || d > amax / (levels ? 60 : 0.25f * (float)hi))
      continue;
    for (int sign = -1; sign <= 1; sign += 2) {
      double e = 0;
      for (int i = 0; i < 32 && e < best; i++) {
        float v = x[i] / (sign * d), q;
        if (levels) {
          q = mkc_iq4nl_levels[0];
          for (int k = 1; k < 16; k++)
            if (fabsf(v - mkc_iq4nl_levels[k]) < fabsf(v - q)) q = mkc_iq4nl_levels[k];
        } else
          q = fminf(fmaxf(roundf(v), (float)lo), (float)hi);
        e += (x[i] - sign * d * q) * (x[i] - sign * d * q);
      }
      if (e < best) best = e;
    }
  }
  return best;
}

static void test_against_brute_force(void) {
  static const struct {
    uint32_t type;
    int lo, hi, levels;
  } ONE_STEP[] = {
      {MKC_GGML_Q4_0, -8, 7, 0}, {MKC_GGML_Q5_0, -16, 15, 0}, {MKC_GGML_IQ4_NL, 0, 0, 1}};
  enum { BLOCKS = 24 };
  float x[BLOCKS * 32], y[BLOCKS * 32];
  uint8_t b[BLOCKS * 32];
  for (int i = 0; i < BLOCKS * 32; i++) x[i] = (float)(gaussian() * (uniform() < 0.02 ? 6 : 1));
  for (size_t t = 0; t < sizeof ONE_STEP / sizeof *ONE_STEP; t++) {
    double best = 0, ours;
    for (int k = 0; k < BLOCKS; k++)
      best += brute_force(x + 32 * k, ONE_STEP[t].lo, ONE_STEP[t].hi, ONE_STEP[t].levels);
    mkc_quantize_fit(ONE_STEP[t].type, x, BLOCKS, 32, NULL, b, 1);
    mkc_dequant_f32(ONE_STEP[t].type, b, BLOCKS * 32, y);
    ours = sq_err(x, y, NULL, BLOCKS * 32, 32);
    CHECK(ours <= best * 1.01,
          "%s: %d blocks' fit within 1 %% of the best f16 step's error by brute force (%.5f of it)",
          name(ONE_STEP[t].type), BLOCKS, ours / best);
  }
}

/* ---- against covering ---- */

enum { ROW = 512 };

static void fill(int kind, float *x) {
  for (int i = 0; i < ROW; i++) {
    double g = gaussian();
    switch (kind) {
    case 0:
      x[i] = (float)(g * 0.02);
      break; /* weights */
    case 1:
      x[i] = (float)(g * 0.02 * (uniform() < 0.01 ? 20 : 1));
      break; /* with outliers */
    case 2:
      x[i] = 0;
      break;
    case 3:
      x[i] = 0.37f;
      break;
    case 4:
      x[i] = (float)(-0.5 - 2.5 * uniform());
      break; /* one sign */
    case 5:
      x[i] = (float)(g * 1e-6);
      break; /* tiny */
    case 6:
      x[i] = (float)(g * 3000);
      break; /* huge (f16's scales saturate) */
    default:
      x[i] = (float)(g * pow(10, i / 16 % 6 - 4)); /* sub-blocks of every size */
    }
  }
}
static const char *const KIND_NAMES[] = {"weights",  "outliers",    "zeros",       "a constant",
                                         "one sign", "tiny values", "huge values", "mixed sizes"};

static void test_against_covering(void) {
  float x[ROW], y[ROW], w[ROW];
  uint8_t cover[ROW * 4], fit[ROW * 4];
  for (int i = 0; i < ROW; i++) w[i] = (float)exp(gaussian());
  for (int t = 0; t < N_FIT; t++) {
    uint32_t type = FIT_TYPES[t];
    int block = mkc_ggml_type(type)->block, worse = 0, finite = 1;
    double sum_cover = 0, sum_fit = 0;
    for (int kind = 0; kind < 8; kind++)
      for (int weighted = 0; weighted < 2; weighted++) {
        fill(kind, x);
        const float *wt = weighted ? w : NULL;
        mkc_quantize(type, x, ROW, cover);
        mkc_quantize_fit(type, x, 1, ROW, wt, fit, 1);
        size_t bb = (size_t)mkc_ggml_type(type)->block_bytes;
        for (int k = 0; k < ROW / block; k++) {
          mkc_dequant_f32(type, cover + k * bb, (size_t)block, y);
          double c = sq_err(x + k * block, y, wt ? wt + k * block : NULL, (size_t)block, ROW);
          mkc_dequant_f32(type, fit + k * bb, (size_t)block, y);
          double f = sq_err(x + k * block, y, wt ? wt + k * block : NULL, (size_t)block, ROW);
          for (int i = 0; i < block; i++) finite &= isfinite(y[i]);
          if (f > c) {
            if (!worse)
              printf("  %s, %s: block %d: fit %g > covering %g\n", name(type), KIND_NAMES[kind], k,
                     f, c);
            worse++;
          }
          if (kind == 1) sum_cover += c, sum_fit += f;
        }
      }
    CHECK(!worse && finite, "%s: no block of any kind of row has more error fitted than covered",
          name(type));
    /* an outlier's block is where a fit gains most */
    CHECK(sum_fit < sum_cover, "%s: rows with outliers: %.3f of the covering error", name(type),
          sum_fit / sum_cover);
  }
}

/* ---- the importance matrix, threads, types without a fit ---- */

static void test_importance(void) {
  enum { R = 8, C = 256 };
  float x[R * C], y[R * C], w[C];
  uint8_t plain[R * C * 4], weighted[R * C * 4];
  for (int i = 0; i < R * C; i++) x[i] = (float)(gaussian() * 0.02);
  for (int c = 0; c < C; c++) w[c] = c % 7 == 0 ? 1000.0f : 0.01f; /* a few columns matter */
  for (int t = 0; t < N_FIT; t++) {
    uint32_t type = FIT_TYPES[t];
    mkc_quantize_fit(type, x, R, C, NULL, plain, 2);
    mkc_quantize_fit(type, x, R, C, w, weighted, 2);
    mkc_dequant_f32(type, plain, R * C, y);
    double e_plain = sq_err(x, y, w, R * C, C);
    mkc_dequant_f32(type, weighted, R * C, y);
    double e_weighted = sq_err(x, y, w, R * C, C);
    CHECK(e_weighted < e_plain,
          "%s: fitted to the importance matrix, %.3f of the unweighted fit's weighted error",
          name(type), e_weighted / e_plain);
  }
}

static void test_threads_and_others(void) {
  enum { R = 37, C = 512 };
  float *x = malloc(R * C * sizeof *x);
  uint8_t *one = malloc(R * C * 4), *many = malloc(R * C * 4);
  float w[C];
  for (int i = 0; i < R * C; i++) x[i] = (float)(gaussian() * 0.02);
  for (int c = 0; c < C; c++) w[c] = (float)exp(gaussian());
  for (int t = 0; t < N_FIT; t++) {
    uint32_t type = FIT_TYPES[t];
    size_t bytes = R * mkc_quant_row_bytes(type, C);
    int rc =
        mkc_quantize_fit(type, x, R, C, w, one, 1) | mkc_quantize_fit(type, x, R, C, w, many, 5);
    CHECK(rc == 0 && memcmp(one, many, bytes) == 0, "%s: 1 thread and 5, the same bytes",
          name(type));
  }
  static const uint32_t OTHERS[] = {MKC_GGML_Q8_0, MKC_GGML_MXFP4, MKC_GGML_F16,   MKC_GGML_BF16,
                                    MKC_GGML_F32,  MKC_GGML_TQ1_0, MKC_GGML_TQ2_0, MKC_GGML_NVFP4,
                                    MKC_GGML_Q1_0, MKC_GGML_Q2_0};
  for (size_t t = 0; t < sizeof OTHERS / sizeof *OTHERS; t++) {
    size_t bytes = R * mkc_quant_row_bytes(OTHERS[t], C);
    mkc_quantize(OTHERS[t], x, R * C, one);
    int rc = mkc_quantize_fit(OTHERS[t], x, R, C, w, many, 3);
    CHECK(!mkc_quantize_has_fit(OTHERS[t]) && rc == 0 && memcmp(one, many, bytes) == 0,
          "%s: no fit; mkc_quantize's bytes", name(OTHERS[t]));
  }
  CHECK_INT(mkc_quantize_fit(MKC_GGML_Q4_K, x, 2, 100, NULL, one, 1), -1,
            "Q4_K rows of 100 columns: -1");
  CHECK_INT(mkc_quantize_fit(99, x, 2, 256, NULL, one, 1), -1, "an unknown type: -1");
  free(x);
  free(one);
  free(many);
}

/* ---- importance matrix files ---- */

static void test_imatrix_files(void) {
  char gguf[4096], dat[4096];
  snprintf(gguf, sizeof gguf, "%s/tests/data/imatrix_blocks_tiny.gguf", MKC_SOURCE_DIR);
  snprintf(dat, sizeof dat, "%s/tests/data/imatrix_blocks_tiny.dat", MKC_SOURCE_DIR);
  mkc_imatrix a, b;
  int ra = mkc_imatrix_load(gguf, &a), rb = mkc_imatrix_load(dat, &b);
  CHECK(ra == 0 && rb == 0 && !a.legacy && b.legacy, "llama-imatrix's GGUF and .dat both read");
  /* blocks-tiny: 2 layers of q, k, v, output (256 columns), gate, up (256) and down (768) */
  CHECK(a.n == 14 && b.n == 14, "14 entries in each (%zu, %zu)", a.n, b.n);
  int same = a.n == b.n;
  for (size_t i = 0; same && i < a.n; i++) {
    same = strcmp(a.entries[i].name, b.entries[i].name) == 0 && a.entries[i].n == b.entries[i].n &&
           a.entries[i].n == (strstr(a.entries[i].name, "ffn_down") ? 768u : 256u);
    for (size_t k = 0; same && k < a.entries[i].n; k++)
      same = fabsf(a.entries[i].values[k] - b.entries[i].values[k]) <=
                 1e-5f * fabsf(a.entries[i].values[k]) &&
             a.entries[i].values[k] > 0;
  }
  CHECK(same, "the same names, sizes (768 for ffn_down, else 256) and positive means in both");
  CHECK(a.chunks == 4 && b.chunks == 4 && a.dataset && b.dataset &&
            strstr(a.dataset, "imatrix_text.txt"),
        "4 chunks of imatrix_text.txt recorded in both (%d, %d)", a.chunks, b.chunks);
  const mkc_imatrix_entry *e = mkc_imatrix_find(&a, "blk.1.ffn_down.weight");
  CHECK(e && e->n == 768 && !mkc_imatrix_find(&a, "token_embd.weight"),
        "found by name: blk.1.ffn_down.weight; token_embd (a lookup, not a product) is not there");
  const char *keep[] = {"ffn_"};
  mkc_imatrix_filter(&a, keep, 1, 1);
  mkc_imatrix_filter(&b, keep, 1, 0);
  CHECK(a.n == 6 && b.n == 8, "--include-weights ffn_ keeps 6, --exclude-weights ffn_ 8");
  mkc_imatrix_free(&a);
  mkc_imatrix_free(&b);

  /* every cut of the .dat is refused or reads its whole entries; the GGUF's cuts are refused */
  size_t size;
  uint8_t *bytes = mkc_read_file(dat, &size);
  int cuts_ok = bytes != NULL;
  check_stderr_begin();
  for (size_t cut = 0; bytes && cut < size; cut += 97) {
    mkc_imatrix m;
    if (mkc_imatrix_parse(bytes, cut, "cut", &m) == 0) {
      cuts_ok &= m.n == 14; /* only a cut in the optional tail can read */
      mkc_imatrix_free(&m);
    }
  }
  free(bytes);
  bytes = mkc_read_file(gguf, &size);
  for (size_t cut = 0; bytes && cut < size; cut += 89) {
    mkc_imatrix m;
    cuts_ok &= mkc_imatrix_parse(bytes, cut, "cut", &m) != 0;
  }
  /* a negative sum is not a sum of squares */
  if (bytes) {
    mkc_gguf *g = mkc_gguf_open_memory(bytes, size, "probe");
    const mkc_gguf_tensor *t = g ? mkc_gguf_find_tensor(g, "blk.0.attn_q.weight.in_sum2") : NULL;
    size_t at = t ? (size_t)(t->data - bytes) + 40 : 0;
    mkc_gguf_close(g);
    mkc_imatrix m;
    float minus = -1;
    cuts_ok &= at > 0 && mkc_imatrix_parse(bytes, size, "negative", &m) == 0;
    mkc_imatrix_free(&m);
    memcpy(bytes + at, &minus, 4);
    cuts_ok &= at > 0 && mkc_imatrix_parse(bytes, size, "negative", &m) != 0;
  }
  char *err = check_stderr_end();
  CHECK(cuts_ok && strstr(err, "mkc: error: cut: "),
        "cut files are refused with a message (or read whole in the .dat's optional tail); a "
        "negative sum is refused");
  free(err);
  free(bytes);
}

int main(void) {
  test_against_ggml();
  test_against_brute_force();
  test_against_covering();
  test_importance();
  test_threads_and_others();
  test_imatrix_files();
  return check_done();
}
