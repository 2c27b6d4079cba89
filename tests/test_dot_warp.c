/* The emulator's warp path of the matvec dot products (templates/matvec.cuh,
 * mkc_dot_warp_of: the warp sums of all 32 lanes' partials in one call)
 * against the lane path it stands in for (mkc_dot_lanes_of, one lane at a
 * time, what the checking schedule and the GPU run, then the shuffles'
 * butterfly, simulated here): bit for bit, for every weight type, mixed and
 * missing rows, 1 to 4 inputs, with and without the fused norm (inputs that
 * fit the scaled copy and inputs that do not), widths with and without whole
 * blocks. And each lane path's total against the dot product worked out here
 * in double from runtime/formats/dequant.c, so the two cannot agree on a
 * wrong answer. */
#include "backend/cpu/backend.h"
#include "check.h"
#include "codegen/host.h"
#include "formats/dequant.h"
#include "mkc_state.h"
#include "rand_bits.h"
#include "rand_rows.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_MAX 16
#define T_MAX 4
#define SPAN (ROWS_MAX * T_MAX)

/* One call: the rows (null: none), their types, the inputs and the norm. */
typedef struct dot_case {
  const unsigned char *row[ROWS_MAX];
  int type[ROWS_MAX];
  int nrows, n_chunks, T, x_stride;
  const float *x;
  const uint16_t *norm; /* bf16, or null */
} dot_case;

static const char KERNEL[] =
    "#define MKC_THREADS 32\n"
    "#define MKC_T_MAX 4\n"
    "#define MKC_KV_BF16 1\n"
    "#define MKC_W_USES_Q8_0 1\n"
    "#define MKC_W_USES_Q4_0 1\n"
    "#define MKC_W_USES_Q4_1 1\n"
    "#define MKC_W_USES_Q5_0 1\n"
    "#define MKC_W_USES_Q5_1 1\n"
    "#define MKC_W_USES_Q2_K 1\n"
    "#define MKC_W_USES_Q3_K 1\n"
    "#define MKC_W_USES_Q4_K 1\n"
    "#define MKC_W_USES_IQ4_NL 1\n"
    "#define MKC_W_USES_IQ4_XS 1\n"
    "#define MKC_W_USES_Q5_K 1\n"
    "#define MKC_W_USES_Q6_K 1\n"
    "#define MKC_W_USES_IQ2_XXS 1\n"
    "#define MKC_W_USES_IQ2_XS 1\n"
    "#define MKC_W_USES_IQ2_S 1\n"
    "#define MKC_W_USES_IQ3_XXS 1\n"
    "#define MKC_W_USES_IQ3_S 1\n"
    "#define MKC_W_USES_IQ1_S 1\n"
    "#define MKC_W_USES_IQ1_M 1\n"
    "#define MKC_W_USES_MXFP4 1\n"
    "#define MKC_W_USES_NVFP4 1\n"
    "#define MKC_W_USES_TQ1_0 1\n"
    "#define MKC_W_USES_TQ2_0 1\n"
    "#define MKC_W_USES_Q1_0 1\n"
    "#define MKC_W_USES_Q2_0 1\n"
    "#include \"prelude_cpu.h\"\n"
    "#include \"mkc_state.h\"\n"
    "#include \"common.cuh\"\n"
    "#include \"iq_grids.cuh\"\n"
    "#include \"weights.cuh\"\n"
    "#include \"matvec.cuh\"\n"
    "typedef struct { const unsigned char *row[16]; int type[16]; int nrows, n_chunks, T, "
    "x_stride; const float *x; const mkc_bf16 *norm; } dot_case;\n"
    "MKC_KERNEL mkc_step(const mkc_bf16 *unused, float *out, void *kv, mkc_state *st) {\n"
    "  const dot_case *c = (const dot_case *)kv;\n"
    "  mkc_wrow w[16];\n"
    "  for (int r = 0; r < c->nrows; r++) {\n"
    "    w[r] = mkc_wrow_none();\n"
    "    if (c->row[r]) { w[r].p = c->row[r]; w[r].type = c->type[r]; }\n"
    "  }\n"
    "  int span = c->nrows * MKC_T_MAX;\n"
    "  mkc_dot_lanes(mkc_tid(), w, c->nrows, c->n_chunks, c->x, c->x_stride, c->norm, c->T,\n"
    "                out + mkc_tid() * span);\n"
    "  if (mkc_tid() == 0)\n"
    "    mkc_dot_lanes(MKC_ALL_LANES, w, c->nrows, c->n_chunks, c->x, c->x_stride, c->norm, "
    "c->T, out + 32 * span);\n"
    "}\n";

static int kinds[] = {MKC_GGML_BF16,
                      8,
                      2,
                      3,
                      6,
                      7,
                      10,
                      11,
                      12,
                      13,
                      14,
                      20,
                      23,
                      16,
                      17,
                      22,
                      18,
                      21,
                      19,
                      29,
                      39,
                      40,
                      34,
                      35,
                      41,
                      42};
#define N_KINDS (int)(sizeof kinds / sizeof *kinds)

/* What __shfl_xor_sync's butterfly (masks 16 .. 1) leaves in lane 0. */
static float shuffle_butterfly(const float *lane_vals, int stride) {
  float v[32], next[32];
  for (int l = 0; l < 32; l++) v[l] = lane_vals[l * stride];
  for (int m = 16; m > 0; m >>= 1) {
    for (int l = 0; l < 32; l++) next[l] = v[l] + v[l ^ m];
    memcpy(v, next, sizeof v);
  }
  return v[0];
}

/* The lane path as the GPU builds it (MKC_DOT_CODES: quantized rows' sums with
 * the scale outside): its totals are checked against the oracle only, since
 * the warp path forms each weight as the reference does. */
static int codes;

/* Runs one case: the warp path's sums vs the lane path's partials through the
 * butterfly, bit for bit, and the lanes' totals against double sums of the
 * dequantized rows. */
static void run_case(mkc_cpu_kernel *k, dot_case *c, const char *what) {
  static float out[2 * 32 * SPAN];
  for (size_t i = 0; i < sizeof out / sizeof *out; i++) out[i] = NAN;
  mkc_state st;
  memset(&st, 0, sizeof st);
  int ok = mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, out, c, &st) == 0;
  int span = c->nrows * T_MAX, n = c->n_chunks * 8, differ = 0, first = -1;
  const float *warp = out + 32 * span;
  for (int r = 0; ok && r < c->nrows; r++)
    for (int t = 0; t < c->T; t++) {
      float want = shuffle_butterfly(out + r * T_MAX + t, span);
      if (memcmp(&want, &warp[r * c->T + t], sizeof want) != 0 && differ++ == 0) {
        first = r * c->T + t;
        printf("  row %d input %d: lane path %.9g, warp path %.9g\n", r, t, want, warp[first]);
      }
    }
  if (!codes)
    CHECK(ok && differ == 0,
          "%s: the warp path's sums are the lanes' own through the butterfly, "
          "bit for bit (%d of %d differ)%s",
          what, differ, c->nrows * c->T, ok ? "" : " (the launch failed)");
  /* the oracle: what the lanes add up to */
  double worst = 0.0;
  float *wf = malloc((size_t)n * sizeof *wf);
  for (int r = 0; r < c->nrows; r++) {
    if (c->row[r]) mkc_dequant_f32((uint32_t)c->type[r], c->row[r], (size_t)n, wf);
    for (int t = 0; t < T_MAX; t++) {
      double want = 0.0, mag = 0.0, got = 0.0;
      for (int i = 0; c->row[r] && t < c->T && i < n; i++) {
        double g = 1.0;
        if (c->norm) {
          uint32_t u = (uint32_t)c->norm[i] << 16;
          float gf;
          memcpy(&gf, &u, 4);
          g = gf;
        }
        double term = (double)wf[i] * (double)c->x[t * c->x_stride + i] * g;
        want += term;
        mag += fabs(term);
      }
      for (int l = 0; l < 32; l++) got += out[l * span + r * T_MAX + t];
      double err = fabs(got - want) / (mag + 1e-30);
      if (err > worst) worst = err;
    }
  }
  free(wf);
  CHECK(ok && worst < 1e-5,
        "%s: the lanes add up to the dequantized rows' dot products "
        "(worst relative error %.2g)",
        what, worst);
}

static void one(mkc_cpu_kernel *k, const int *types, int nrows, int n_chunks, int T, int norm,
                int null_every, const char *what) {
  int n = n_chunks * 8, x_stride = n + 8;
  dot_case c;
  memset(&c, 0, sizeof c);
  c.nrows = nrows;
  c.n_chunks = n_chunks;
  c.T = T;
  c.x_stride = x_stride;
  float *x = aligned_alloc(64, (size_t)(T_MAX * x_stride) * sizeof *x + 64);
  for (int i = 0; i < T_MAX * x_stride; i++) x[i] = uniform(-2, 2);
  c.x = x;
  uint16_t *g = aligned_alloc(64, (size_t)n * 2 + 64);
  for (int i = 0; i < n; i++) g[i] = bf16_of(uniform(0.5f, 1.5f));
  c.norm = norm ? g : NULL;
  for (int r = 0; r < nrows; r++) {
    c.type[r] = types[r % N_KINDS];
    c.row[r] = null_every && r % null_every == null_every - 1 ? NULL : make_row(c.type[r], n);
  }
  run_case(k, &c, what);
  for (int r = 0; r < nrows; r++) free((void *)c.row[r]);
  free(x);
  free(g);
}

/* Every case on one build of the kernel, named in each check by build ("unroll N": MKC_MV_UNROLL,
 * the chunks a lane loads per row before it uses them, which must not change the sums). */
static void cases(mkc_cpu_kernel *k, const char *unroll) {
  char what[200];
  for (int i = 0; i < N_KINDS; i++) {
    const mkc_ggml_type_info *ti = mkc_ggml_type((uint32_t)kinds[i]);
    int same[N_KINDS];
    for (int j = 0; j < N_KINDS; j++) same[j] = kinds[i];
    /* 72 chunks (576, SmolLM2's width) where the block allows, else 64 */
    int widths[] = {576 % ti->block == 0 ? 72 : 64, 128};
    for (int wi = 0; wi < 2; wi++)
      for (int T = 1; T <= T_MAX; T += 2)
        for (int norm = 0; norm < 2; norm++)
          for (int nrows = 8; nrows <= 16; nrows += 8) {
            snprintf(what, sizeof what, "%s: %s, %d rows of %d, T = %d, %s", unroll, ti->name,
                     nrows, widths[wi] * 8, T, norm ? "norm" : "no norm");
            one(k, same, nrows, widths[wi], T, norm, 0, what);
          }
  }
  /* every type in one call, a row in three missing */
  for (int T = 1; T <= T_MAX; T++) {
    snprintf(what, sizeof what, "%s: mixed types, rows missing, T = %d, norm", unroll, T);
    one(k, kinds, 16, 64, T, 1, 3, what);
  }
  /* inputs past the scaled copy (T x n > 4096): the norm applied chunk by chunk */
  static const int q41[1] = {3}, bf16[1] = {MKC_GGML_BF16};
  for (int T = 1; T <= 2; T++) {
    snprintf(what, sizeof what, "%s: Q4_1, 8 rows of 8192, T = %d, norm (no scaled copy)", unroll,
             T);
    int q[N_KINDS], b[N_KINDS];
    for (int j = 0; j < N_KINDS; j++) q[j] = q41[0], b[j] = bf16[0];
    one(k, q, 8, 1024, T, 1, 0, what);
    snprintf(what, sizeof what, "%s: BF16, 8 rows of 8192, T = %d, norm (no scaled copy)", unroll,
             T);
    one(k, b, 8, 1024, T, 1, 0, what);
  }
  /* bf16 widths not in whole groups of 4 chunks, and fewer chunks than lanes */
  int b16[N_KINDS];
  for (int j = 0; j < N_KINDS; j++) b16[j] = MKC_GGML_BF16;
  snprintf(what, sizeof what, "%s: BF16, 8 rows of 48, T = 3, norm", unroll);
  one(k, b16, 8, 6, 3, 1, 0, what);
  snprintf(what, sizeof what, "%s: BF16, 16 rows of 296, T = 2, rows missing", unroll);
  one(k, b16, 16, 37, 2, 0, 4, what);
}

int main(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  /* 1: the default; 2: the GPU variant bench compares; 3: tails of every length; 4: the
   * GPU's quantized sums (MKC_DOT_CODES), unroll 1; 5 and 6: the warp path's pieces 8 and 16
   * weights to a vector (MKC_DOT_V16), whichever this machine's SIMD would pick */
  for (int unroll = 1; unroll <= 6; unroll++) {
    static char source[sizeof KERNEL + 96];
    codes = unroll == 4;
    char width[32] = "";
    if (unroll >= 5) snprintf(width, sizeof width, "#define MKC_DOT_V16 %d\n", unroll == 6);
    snprintf(source, sizeof source, "#define MKC_MV_UNROLL %d\n#define MKC_DOT_CODES %d\n%s%s",
             codes || unroll >= 5 ? 1 : unroll, codes, width, KERNEL);
    char build[32];
    if (unroll >= 5)
      snprintf(build, sizeof build, "%d-wide pieces", unroll == 6 ? 16 : 8);
    else
      snprintf(build, sizeof build, codes ? "codes" : "unroll %d", unroll);
    mkc_cpu_kernel *k = mkc_cpu_kernel_open(source, "dot_warp.c", dir);
    if (!CHECK(k != NULL, "the dot-product test kernel builds (%s)", build)) return check_done();
    cases(k, build);
    mkc_cpu_kernel_close(k);
  }
  return check_done();
}
