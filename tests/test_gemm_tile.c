/* A prompt chunk's tile on the emulator (templates/gemm.cuh): the block path
 * (mkc_gemm_tile_block, one thread's loops, what the cpu backend runs off the
 * checking schedule) against the lane path it stands in for
 * (mkc_gemm_tile_lanes: every lane's fragments through the emulated mma.sync,
 * what the GPU and the checking schedule run), bit for bit: the tile, the
 * cells left alone, and the rows' 1 / rms. And the lanes' tile against dot
 * products worked out here in double from runtime/formats/dequant.c, so the
 * two cannot agree on a wrong answer. Cases: bf16 and quantized matrices,
 * two matrices end to end, tokens from 1 to a whole tile and a second tile's
 * (m0 = 64), tile columns full, ragged and half empty, widths in whole
 * slices and not, with and without the fused norm. */
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

#define LD 36   /* MKC_GEMM_LD: MKC_GEMM_BK + 4 */
#define TILE 64 /* MKC_GEMM_BM and MKC_GEMM_BN */

typedef struct tile_case {
  const unsigned char *m[2];
  int row_bytes[2], type[2], rows[2];
  int base0, len0, base1, len1, quantized, n_chunks, x_stride, n_x, m0, T, c_stride, c_col;
  const float *x;
  const uint16_t *norm; /* bf16, or null */
  float eps;
} tile_case;

/* The templates a tile needs, for 128-thread blocks and 64 x 64 tiles. */
#define KERNEL_HEAD                                                                                \
  "#define MKC_THREADS 128\n"                                                                      \
  "#define MKC_T_MAX 1\n"                                                                          \
  "#define MKC_KV_BF16 1\n"                                                                        \
  "#define MKC_GEMM_BM 64\n"                                                                       \
  "#define MKC_GEMM_BN 64\n"                                                                       \
  "#define MKC_GEMM_BK 32\n"                                                                       \
  "#define MKC_W_USES_Q8_0 1\n"                                                                    \
  "#define MKC_W_USES_Q4_1 1\n"                                                                    \
  "#define MKC_W_USES_Q4_K 1\n"                                                                    \
  "#define MKC_W_USES_Q6_K 1\n"                                                                    \
  "#include \"prelude_cpu.h\"\n"                                                                   \
  "#include \"mkc_state.h\"\n"                                                                     \
  "#include \"common.cuh\"\n"                                                                      \
  "#include \"slots.cuh\"\n"                                                                       \
  "#include \"weights.cuh\"\n"                                                                     \
  "#include \"matvec.cuh\"\n"                                                                      \
  "#include \"norm.cuh\"\n"                                                                        \
  "#include \"qkv_rope.cuh\"\n"                                                                    \
  "#include \"gemm.cuh\"\n"

/* The lanes' tile at out, their 1 / rms after it; the block path's the same
 * after those. */
static const char KERNEL[] = KERNEL_HEAD
    "typedef struct { const unsigned char *m[2]; int row_bytes[2], type[2], rows[2];\n"
    "  int base0, len0, base1, len1, quantized, n_chunks, x_stride, n_x, m0, T, c_stride, c_col;\n"
    "  const float *x; const mkc_bf16 *norm; float eps; } tile_case;\n"
    "MKC_KERNEL mkc_step(const mkc_bf16 *unused, float *out, void *kv, mkc_state *st) {\n"
    "  const tile_case *c = (const tile_case *)kv;\n"
    "  mkc_wmat m0 = {c->m[0], c->row_bytes[0], c->type[0]};\n"
    "  mkc_wmat m1 = {c->m[1], c->row_bytes[1], c->type[1]};\n"
    "  mkc_wcat w = mkc_wcat_of(m0, c->rows[0], m1, c->rows[1], m0, 0);\n"
    "  mkc_gemm_cols cols = mkc_gemm_cols_of(c->base0, c->len0, c->base1, c->len1);\n"
    "  float *a_tile = (float *)mkc_smem(), *w_tile = a_tile + 64 * MKC_GEMM_LD;\n"
    "  float *ssq = w_tile + 64 * MKC_GEMM_LD, *lanes = out, *block = out + 64 * c->c_stride + "
    "64;\n"
    "  mkc_gemm_tile_lanes(w, cols, c->quantized, c->n_chunks, c->x, c->x_stride, c->n_x,\n"
    "                      c->norm, c->eps, c->m0, c->T, lanes, c->c_stride, c->c_col, a_tile,\n"
    "                      w_tile, ssq, lanes + 64 * c->c_stride);\n"
    "  if (mkc_tid() == 0)\n"
    "    mkc_gemm_tile_block(w, cols, c->quantized, c->n_chunks, c->x, c->x_stride, c->n_x,\n"
    "                        c->norm, c->eps, c->m0, c->T, block, c->c_stride, c->c_col,\n"
    "                        block + 64 * c->c_stride);\n"
    "  mkc_sync_block();\n"
    "}\n";

/* mkc_tf32_split8 against the scalar mkc_tf32 it vectorizes: in[i] to
 * out[2i], out[2i + 1] (high and low operand) one way, after 2n the other. */
static const char SPLIT_KERNEL[] = KERNEL_HEAD
    "MKC_KERNEL mkc_step(const mkc_bf16 *unused, float *out, void *kv, mkc_state *st) {\n"
    "  const float *in = (const float *)kv;\n"
    "  if (mkc_tid() != 0) return;\n"
    "  for (int c = 0; c < 64; c += 8) {\n"
    "    float hi[8], lo[8];\n"
    "    mkc_tf32_split8(in + c, hi, lo);\n"
    "    for (int i = 0; i < 8; i++) {\n"
    "      unsigned h = mkc_tf32(in[c + i]);\n"
    "      out[2 * (c + i)] = mkc_bits_f32(h & 0xffffe000u);\n"
    "      out[2 * (c + i) + 1] = mkc_bits_f32(mkc_tf32(in[c + i] - mkc_bits_f32(h)) & "
    "0xffffe000u);\n"
    "      out[128 + 2 * (c + i)] = hi[i];\n"
    "      out[128 + 2 * (c + i) + 1] = lo[i];\n"
    "    }\n"
    "  }\n"
    "}\n";

static void split_cases(const char *dir) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(SPLIT_KERNEL, "tf32_split.c", dir);
  if (!CHECK(k != NULL, "the tf32 split test kernel builds")) return;
  /* infinities, NaNs, the largest floats (rounding up to infinity), subnormals, ties */
  static const uint32_t special[] = {0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
                                     0xffc12345, 0x7f7fffff, 0x7f7ff000, 0xff7ff000,
                                     0x00000001, 0x80001000, 0x00fff000, 0x3f801000,
                                     0x3f803000, 0xbf801000, 0,          0x80000000};
  float in[64], out[256];
  for (int i = 0; i < 64; i++) {
    uint32_t u = i < 16 ? special[i] : next_u32();
    memcpy(&in[i], &u, 4);
  }
  mkc_state st;
  memset(&st, 0, sizeof st);
  int ok = mkc_cpu_kernel_launch(k, 1, 128, 0, NULL, out, in, &st) == 0;
  CHECK(ok && memcmp(out, out + 128, 128 * sizeof *out) == 0,
        "mkc_tf32_split8 gives mkc_tf32's high and low operands bit for bit (infinities, NaNs, "
        "overflow, subnormals, ties, random bits)");
  mkc_cpu_kernel_close(k);
}

static double f32_of_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Virtual row v of the two matrices end to end, or null past them. */
static const unsigned char *row_of(const tile_case *c, int v, int *type) {
  for (int i = 0; i < 2; i++) {
    if (v < c->rows[i]) {
      *type = c->type[i];
      return c->m[i] + (size_t)v * (size_t)c->row_bytes[i];
    }
    v -= c->rows[i];
  }
  return NULL;
}

static void run_case(mkc_cpu_kernel *k, const tile_case *c, const char *what) {
  int span = TILE * c->c_stride + TILE, n = c->n_chunks * 8;
  float *out = malloc(2 * (size_t)span * sizeof *out);
  uint32_t mark = 0x7fc0dead; /* a NaN no path writes */
  for (int i = 0; i < 2 * span; i++) memcpy(&out[i], &mark, 4);
  mkc_state st;
  memset(&st, 0, sizeof st);
  size_t smem = (2 * TILE * LD + TILE * 8) * sizeof(float);
  int ok = mkc_cpu_kernel_launch(k, 1, 128, smem, NULL, out, (void *)c, &st) == 0;
  int differ = 0;
  for (int i = 0; ok && i < span; i++)
    if (memcmp(&out[i], &out[span + i], 4) != 0 && differ++ == 0)
      printf("  %s %d: lane path %.9g, block path %.9g\n", i < TILE * c->c_stride ? "cell" : "rms",
             i, out[i], out[span + i]);
  CHECK(ok && differ == 0,
        "%s: the block path's tile and 1 / rms are the lanes' own, bit for bit (%d differ)%s", what,
        differ, ok ? "" : " (the launch failed)");
  /* the oracle: the tokens' rows of the written columns */
  double worst = 0.0;
  int seen = 0;
  float *wf = malloc((size_t)n * sizeof *wf);
  const int base[2] = {c->base0, c->base1}, len[2] = {c->len0, c->len1};
  for (int j = 0; j < TILE; j++) {
    int h = j / 32, type = 0;
    const unsigned char *row = j % 32 < len[h] ? row_of(c, base[h] + j % 32, &type) : NULL;
    if (!row) continue;
    mkc_dequant_f32((uint32_t)type, row, (size_t)n, wf);
    for (int r = 0; r < TILE && c->m0 + r < c->T; r++) {
      const float *x = c->x + (size_t)(c->m0 + r) * (size_t)c->x_stride;
      double want = 0.0, mag = 0.0;
      for (int i = 0; i < n; i++) {
        double xv = x[i];
        if (c->norm) xv = (double)(float)(xv * f32_of_bf16(c->norm[i])); /* as staged */
        want += wf[i] * xv;
        mag += fabs(wf[i] * xv);
      }
      double got = out[r * c->c_stride + c->c_col + j], err = fabs(got - want) / (mag + 1e-30);
      if (!(err <= worst)) worst = err; /* NaN too */
      seen++;
    }
  }
  free(wf);
  CHECK(ok && seen > 0 && worst < 1e-5,
        "%s: the lanes' tile holds the rows' dot products (%d cells, worst relative error %.2g)",
        what, seen, worst);
  free(out);
}

/* rows0 rows of type0 then rows1 of type1, n_chunks wide; T tokens from m0. */
static void one(mkc_cpu_kernel *k, int type0, int rows0, int type1, int rows1, int n_chunks, int m0,
                int T, const int *cols, int norm, const char *what) {
  tile_case c;
  memset(&c, 0, sizeof c);
  int n = n_chunks * 8;
  const int types[2] = {type0, type1}, rows[2] = {rows0, rows1};
  for (int i = 0; i < 2; i++) {
    const mkc_ggml_type_info *ti = mkc_ggml_type((uint32_t)types[i]);
    c.type[i] = types[i];
    c.rows[i] = rows[i];
    c.row_bytes[i] = n / ti->block * ti->block_bytes;
    unsigned char *m = aligned_alloc(64, ((size_t)rows[i] * (size_t)c.row_bytes[i] + 64) / 64 * 64);
    for (int r = 0; r < rows[i]; r++) {
      unsigned char *row = make_row(types[i], n);
      memcpy(m + (size_t)r * (size_t)c.row_bytes[i], row, (size_t)c.row_bytes[i]);
      free(row);
    }
    c.m[i] = m;
    c.quantized |= types[i] != MKC_GGML_BF16;
  }
  c.base0 = cols[0], c.len0 = cols[1], c.base1 = cols[2], c.len1 = cols[3];
  c.n_chunks = n_chunks;
  c.x_stride = n + 4;
  c.n_x = n;
  c.m0 = m0;
  c.T = T;
  c.c_stride = TILE + 8;
  c.c_col = 4;
  c.eps = 1e-5f;
  float *x = aligned_alloc(64, ((size_t)T * (size_t)c.x_stride * sizeof *x + 64) / 64 * 64);
  for (int i = 0; i < T * c.x_stride; i++) x[i] = uniform(-2, 2);
  c.x = x;
  uint16_t *g = aligned_alloc(64, ((size_t)n * 2 + 64) / 64 * 64);
  for (int i = 0; i < n; i++) g[i] = bf16_of(uniform(0.5f, 1.5f));
  c.norm = norm ? g : NULL;
  run_case(k, &c, what);
  free((void *)c.m[0]);
  free((void *)c.m[1]);
  free(x);
  free(g);
}

int main(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  split_cases(dir);
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(KERNEL, "gemm_tile.c", dir);
  if (!CHECK(k != NULL, "the tile test kernel builds")) return check_done();
  static const struct {
    int type0, type1;
    const char *name;
  } kinds[] = {{MKC_GGML_BF16, MKC_GGML_BF16, "BF16"},
               {8, 8, "Q8_0"},
               {3, MKC_GGML_BF16, "Q4_1 then BF16"},
               {12, 14, "Q4_K then Q6_K"}};
  /* 72 chunks: SmolLM2's 576; 37: not whole slices of 32 (bf16 only); 64 and 256:
   * whole 256-weight blocks */
  static const int widths[][2] = {{72, 37}, {72, 36}, {72, 36}, {64, 256}};
  static const int spans[][2] = {{0, 1}, {0, 5}, {0, 17}, {0, 33}, {0, 64}, {64, 84}};
  static const int cols[][4] = {{0, 32, 32, 32}, {3, 20, 40, 5}, {8, 32, 0, 0}};
  char what[200];
  for (int i = 0; i < 4; i++)
    for (int wi = 0; wi < 2; wi++)
      for (int si = 0; si < 6; si++)
        for (int ci = 0; ci < 3; ci++)
          for (int norm = 0; norm < 2; norm++) {
            if ((si + ci + norm) % 2 && wi == 1) continue; /* half the mix at the second width */
            int nc = widths[i][wi];
            snprintf(what, sizeof what,
                     "%s, %d columns, tokens %d..%d, tile columns %d+%d %d+%d, %s", kinds[i].name,
                     nc * 8, spans[si][0], spans[si][1] - 1, cols[ci][0], cols[ci][1], cols[ci][2],
                     cols[ci][3], norm ? "norm" : "no norm");
            one(k, kinds[i].type0, 40, kinds[i].type1, 40, nc, spans[si][0], spans[si][1], cols[ci],
                norm, what);
          }
  mkc_cpu_kernel_close(k);
  return check_done();
}
