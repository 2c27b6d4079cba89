/* The decode matvec on tensor cores (templates/matvec.cuh, MKC_MMA_DECODE=1):
 * its lane path (mkc_mma_lane: what the GPU and the checking schedule run,
 * every lane's fragments through the emulator's mma.sync) against the
 * emulator's warp path (mkc_mma_warp_of, all lanes' outputs in one call),
 * bit for bit; and the lanes' outputs against dot products worked out here
 * in double, so the two paths cannot agree on a wrong answer. Cases: 1 and 2
 * n-tiles (a matrix, or gate and up), 1 and 2 m-tiles (T up to 16), widths
 * in whole k-steps and not, fewer chunks than lanes, rows missing, with and
 * without the fused norm. */
#include "backend/cpu/backend.h"
#include "check.h"
#include "codegen/host.h"
#include "mkc_state.h"
#include "rand_bits.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 16 /* two n-tiles */
#define T_MAX 16
#define OUT_LANE (T_MAX / 8 * 2 * 2) /* a lane's outputs: m-tiles x n-tiles x 2 */

typedef struct mma_case {
  const unsigned char *row[ROWS];
  int nt, n_chunks, T, x_stride;
  const float *x;
  const uint16_t *norm; /* bf16, or null */
} mma_case;

/* %d: MKC_T_MAX, MKC_MMA_UNROLL. Every lane writes its fragments' outputs;
 * lane 0 then the warp path's sums after them. */
static const char KERNEL[] =
    "#define MKC_THREADS 32\n"
    "#define MKC_T_MAX %d\n"
    "#define MKC_MMA_UNROLL %d\n"
    "#define MKC_KV_BF16 1\n"
    "#define MKC_MMA_DECODE 1\n"
    "#include \"prelude_cpu.h\"\n"
    "#include \"mkc_state.h\"\n"
    "#include \"common.cuh\"\n"
    "#include \"weights.cuh\"\n"
    "#include \"matvec.cuh\"\n"
    "typedef struct { const unsigned char *row[16]; int nt, n_chunks, T, x_stride; const float "
    "*x; const mkc_bf16 *norm; } mma_case;\n"
    "MKC_KERNEL mkc_step(const mkc_bf16 *unused, float *out, void *kv, mkc_state *st) {\n"
    "  const mma_case *c = (const mma_case *)kv;\n"
    "  mkc_wrow w[16];\n"
    "  for (int r = 0; r < 8 * c->nt; r++) {\n"
    "    w[r] = mkc_wrow_none();\n"
    "    if (c->row[r]) { w[r].p = c->row[r]; w[r].type = MKC_W_BF16; }\n"
    "  }\n"
    "  mkc_mma_lane(mkc_tid(), w, c->nt, c->n_chunks, c->x, c->x_stride, c->norm, c->T,\n"
    "               out + mkc_tid() * 8);\n"
    "  if (mkc_tid() == 0)\n"
    "    mkc_mma_warp_of(w, c->nt, c->n_chunks, c->x, c->x_stride, c->norm, c->T, out + 32 * 8);\n"
    "}\n";

static double f32_of_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Runs one case: lane (g, q)'s output for input 8m + g and row 8j + 2q + e
 * against the warp path's, bit for bit, and against the double sum. */
static void run_case(mkc_cpu_kernel *k, const mma_case *c, const char *what) {
  static float out[32 * 8 + ROWS * T_MAX];
  for (size_t i = 0; i < sizeof out / sizeof *out; i++) out[i] = NAN;
  mkc_state st;
  memset(&st, 0, sizeof st);
  int ok = mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, out, (void *)c, &st) == 0;
  const float *warp = out + 32 * 8;
  int n = c->n_chunks * 8, differ = 0, seen = 0;
  double worst = 0.0;
  for (int lane = 0; ok && lane < 32; lane++) {
    int g = lane >> 2, q = lane & 3;
    for (int m = 0; 8 * m < c->T; m++)
      for (int j = 0; j < c->nt; j++)
        for (int e = 0; e < 2; e++) {
          int t = 8 * m + g, r = 8 * j + 2 * q + e;
          if (t >= c->T) continue;
          float lane_v = out[lane * 8 + (m * c->nt + j) * 2 + e], warp_v = warp[r * c->T + t];
          seen++;
          if (memcmp(&lane_v, &warp_v, sizeof lane_v) != 0 && differ++ == 0)
            printf("  row %d input %d: lane path %.9g, warp path %.9g\n", r, t, lane_v, warp_v);
          double want = 0.0, mag = 0.0;
          for (int i = 0; c->row[r] && i < n; i++) {
            uint16_t h;
            memcpy(&h, c->row[r] + 2 * i, 2);
            double xv = c->x[t * c->x_stride + i];
            if (c->norm)
              xv = (double)(float)(xv * f32_of_bf16(c->norm[i])); /* as the kernel scales */
            double term = f32_of_bf16(h) * xv;
            want += term;
            mag += fabs(term);
          }
          double err = fabs(lane_v - want) / (mag + 1e-30);
          if (!(err <= worst)) worst = err; /* NaN too */
        }
  }
  int want_seen = c->T * 8 * c->nt;
  CHECK(ok && differ == 0 && seen == want_seen,
        "%s: the warp path's outputs are the lanes' own, bit for bit (%d of %d differ)%s", what,
        differ, seen, ok ? "" : " (the launch failed)");
  /* tf32 parts keep an input within 2^-22, products exact, float sums */
  CHECK(ok && worst < 1e-5,
        "%s: the outputs are the rows' dot products (worst relative error %.2g)", what, worst);
}

static void one(mkc_cpu_kernel *k, int nt, int n_chunks, int T, int norm, int null_every,
                const char *what) {
  int n = n_chunks * 8, x_stride = n + 8;
  mma_case c;
  memset(&c, 0, sizeof c);
  c.nt = nt;
  c.n_chunks = n_chunks;
  c.T = T;
  c.x_stride = x_stride;
  float *x = aligned_alloc(64, ((size_t)(T_MAX * x_stride) * sizeof *x + 127) / 64 * 64);
  for (int i = 0; i < T_MAX * x_stride; i++) x[i] = uniform(-2, 2);
  c.x = x;
  uint16_t *g = aligned_alloc(64, ((size_t)n * 2 + 127) / 64 * 64);
  for (int i = 0; i < n; i++) g[i] = bf16_of(uniform(0.5f, 1.5f));
  c.norm = norm ? g : NULL;
  for (int r = 0; r < 8 * nt; r++) {
    if (null_every && r % null_every == null_every - 1) continue;
    uint16_t *p = aligned_alloc(64, ((size_t)n * 2 + 127) / 64 * 64);
    for (int i = 0; i < n; i++) p[i] = bf16_of(uniform(-1, 1));
    c.row[r] = (const unsigned char *)p;
  }
  run_case(k, &c, what);
  for (int r = 0; r < ROWS; r++) free((void *)c.row[r]);
  free(x);
  free(g);
}

static void cases(mkc_cpu_kernel *k, int t_max, int unroll) {
  char what[200];
  /* 72 chunks: SmolLM2's 576; 256: llama-3.2-1b's 2048; 37 and 6: not whole k-steps, 6 fewer
   * chunks than lanes */
  static const int widths[] = {6, 37, 72, 256};
  static const int Ts[] = {1, 3, 5, 8, 9, 16};
  for (int wi = 0; wi < 4; wi++)
    for (int ti = 0; ti < 6; ti++) {
      if (Ts[ti] > t_max) continue;
      for (int nt = 1; nt <= 2; nt++)
        for (int norm = 0; norm < 2; norm++) {
          snprintf(what, sizeof what, "T_MAX %d, unroll %d: %d rows of %d, T = %d, %s", t_max,
                   unroll, 8 * nt, widths[wi] * 8, Ts[ti], norm ? "norm" : "no norm");
          one(k, nt, widths[wi], Ts[ti], norm, 0, what);
        }
    }
  snprintf(what, sizeof what, "T_MAX %d, unroll %d: 16 rows of 296, a row in three missing, norm",
           t_max, unroll);
  one(k, 2, 37, t_max < 3 ? t_max : 3, 1, 3, what);
  snprintf(what, sizeof what, "T_MAX %d, unroll %d: 8 rows of 8192, T = 2, norm", t_max, unroll);
  one(k, 1, 1024, 2, 1, 0, what);
}

int main(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  /* T_MAX 5: one m-tile (a verify step); 16: two (slots). Unroll 4, the default; 3 and 8: the
   * k-steps a lane loads at once end mid-row, and 8 flushes the emulator's queue mid-batch */
  static const int shapes[][2] = {{5, 4}, {16, 4}, {5, 3}, {16, 8}};
  for (int i = 0; i < 4; i++) {
    static char source[sizeof KERNEL + 32];
    snprintf(source, sizeof source, KERNEL, shapes[i][0], shapes[i][1]);
    mkc_cpu_kernel *k = mkc_cpu_kernel_open(source, "mma_decode.c", dir);
    if (!CHECK(k != NULL, "the tensor-core matvec test kernel builds (T_MAX %d, unroll %d)",
               shapes[i][0], shapes[i][1]))
      return check_done();
    cases(k, shapes[i][0], shapes[i][1]);
    mkc_cpu_kernel_close(k);
  }
  return check_done();
}
