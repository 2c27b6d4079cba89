/* The CPU backend and SIMT emulator against oracles: shuffles, block and warp
 * barriers, an atomics grid barrier, exposed missing barriers, misuse errors,
 * compile errors, the cache. `test_simt --bench` also times the primitives. */
#include "backend/cpu/backend.h"
#include "check.h"
#include "mkc_state.h"
#include "util/clock.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#define NB 3
#define NT 64
#define N (NB * NT)
#define RING_ROUNDS 20
#define RUNS 5

/* scratch layout of the main kernel, in floats */
#define OFF_WARP 0
#define OFF_SHFL_INT (OFF_WARP + N)
#define OFF_SHFL_OUT (OFF_SHFL_INT + N)
#define OFF_BLOCK (OFF_SHFL_OUT + N)
#define OFF_TOTAL (OFF_BLOCK + NB)
#define OFF_NEIGHBOR (OFF_TOTAL + N)
#define OFF_LOADS (OFF_NEIGHBOR + N)
#define OFF_RING (OFF_LOADS + N)
#define SCRATCH_FLOATS (OFF_RING + 2 * NB)
#define SMEM_BYTES (64 + NT * 4)

#define STR_(x) #x
#define STR(x) STR_(x)

/* A grid barrier in the shape templates/common.cuh uses. */
#define GRID_SYNC_SRC                                                                              \
  "MKC_DEVICE void grid_sync(mkc_state *st) {\n"                                                   \
  "  mkc_sync_block();\n"                                                                          \
  "  if (mkc_tid() == 0) {\n"                                                                      \
  "    unsigned gen = mkc_load_volatile_u32(&st->barrier_gen);\n"                                  \
  "    mkc_fence();\n"                                                                             \
  "    if (mkc_atomic_add_u32(&st->barrier_count, 1u) + 1u == (unsigned)mkc_nblocks()) {\n"        \
  "      mkc_store_u32(&st->barrier_count, 0u);\n"                                                 \
  "      mkc_fence();\n"                                                                           \
  "      mkc_atomic_add_u32(&st->barrier_gen, 1u);\n"                                              \
  "    } else {\n"                                                                                 \
  "      while (mkc_load_volatile_u32(&st->barrier_gen) == gen) mkc_pause();\n"                    \
  "    }\n"                                                                                        \
  "    mkc_fence();\n"                                                                             \
  "  }\n"                                                                                          \
  "  mkc_sync_block();\n"                                                                          \
  "}\n"

static const char main_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#ifndef __CUDACC__\n"
        "#include \"prelude_cpu.h\"\n"
        "#endif\n"
        "#include \"mkc_state.h\"\n" GRID_SYNC_SRC "MKC_DEVICE float warp_sum(float v) {\n"
        "  for (int m = 16; m > 0; m >>= 1) v += mkc_shfl_xor(v, m);\n"
        "  return v;\n"
        "}\n"
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) "
        "{\n"
        "  int tid = mkc_tid(), bid = mkc_bid(), nb = mkc_nblocks(), gid = bid * MKC_THREADS + "
        "tid;\n"
        "  float *red = (float *)mkc_smem();\n"
        "  int *neighbor = (int *)(mkc_smem() + 64);\n"
        "  float x = mkc_bf16_to_f32(weights[gid]);\n"
        "  float ws = warp_sum(x);\n"
        "  scratch[" STR(
            OFF_WARP) " + gid] = ws;\n"
                      "  scratch[" STR(
                          OFF_SHFL_INT) " + gid] = (float)mkc_shfl_xor_int(gid, 5);\n"
                                        "  scratch[" STR(
                                            OFF_SHFL_OUT) " + gid] = (float)mkc_shfl_xor_int(gid, "
                                                          "32);\n"
                                                          /* block reduction through shared memory
                                                           */
                                                          "  if ((tid & 31) == 0) red[tid >> 5] = "
                                                          "ws;\n"
                                                          "  mkc_sync_block();\n"
                                                          "  if (tid == 0) {\n"
                                                          "    float s = 0.0f;\n"
                                                          "    for (int w = 0; w < MKC_THREADS / "
                                                          "32; w++) s += red[w];\n"
                                                          "    scratch[" STR(
                                                              OFF_BLOCK) " + bid] = s;\n"
                                                                         "  }\n"
                                                                         /* a warp-level exchange
                                                                            through shared memory */
                                                                         "  neighbor[tid] = gid * "
                                                                         "3;\n"
                                                                         "  mkc_sync_warp();\n"
                                                                         "  scratch[" STR(
                                                                             OFF_NEIGHBOR) " + "
                                                                                           "gid] = "
                                                                                           "(float)"
                                                                                           "neighbo"
                                                                                           "r[tid "
                                                                                           "^ 1];\n"
                                                                                           /* 16-byte
                                                                                              loads
                                                                                            */
                                                                                           "  "
                                                                                           "mkc_f4 "
                                                                                           "f = "
                                                                                           "mkc_"
                                                                                           "load_"
                                                                                           "f4(kv "
                                                                                           "+ 4 * "
                                                                                           "tid);\n"
                                                                                           "  "
                                                                                           "mkc_u4 "
                                                                                           "u = "
                                                                                           "mkc_"
                                                                                           "load_"
                                                                                           "u4("
                                                                                           "weights"
                                                                                           " + 8 * "
                                                                                           "(gid / "
                                                                                           "8));\n"
                                                                                           "  "
                                                                                           "float "
                                                                                           "us = "
                                                                                           "mkc_"
                                                                                           "bf16_"
                                                                                           "to_f32("
                                                                                           "(mkc_"
                                                                                           "bf16)("
                                                                                           "u.x & "
                                                                                           "0xffffu"
                                                                                           ")) + "
                                                                                           "mkc_"
                                                                                           "bf16_"
                                                                                           "to_f32("
                                                                                           "(mkc_"
                                                                                           "bf16)("
                                                                                           "u.w >> "
                                                                                           "16));\n"
                                                                                           "  "
                                                                                           "scratch"
                                                                                           "[" STR(
                                                                                               OFF_LOADS) " + gid] = f.x + 2.0f * f.y + 3.0f * f.z + 4.0f * f.w + 100.0f * "
                                                                                                          "us;\n"
                                                                                                          /* phase 2 reads what the other blocks wrote in phase 1 */
                                                                                                          "  grid_sync(state);\n"
                                                                                                          "  float total = 0.0f;\n"
                                                                                                          "  for (int b = 0; b < nb; b++) total += scratch[" STR(
                                                                                                              OFF_BLOCK) " + b];\n"
                                                                                                                         "  scratch[" STR(
                                                                                                                             OFF_TOTAL) " + gid] = total;\n"
                                                                                                                                        /* a ring: every round each block takes its right neighbour's value + 1 */
                                                                                                                                        "  float *ring = scratch + " STR(
                                                                                                                                            OFF_RING) ";\n"
                                                                                                                                                      "  if (tid == 0) ring[bid] = 1000.0f * (float)bid;\n"
                                                                                                                                                      "  for (int r = 1; r < " STR(
                                                                                                                                                          RING_ROUNDS) "; r++) {\n"
                                                                                                                                                                       "    grid_sync(state);\n"
                                                                                                                                                                       "    if (tid == 0) ring[(r & 1) * nb + bid] = ring[((r - 1) & 1) * nb + (bid + 1) % nb] + "
                                                                                                                                                                       "1.0f;\n"
                                                                                                                                                                       "  }\n"
                                                                                                                                                                       "  grid_sync(state);\n"
                                                                                                                                                                       "  if (gid == 0) state->step++;\n"
                                                                                                                                                                       "}\n";

/* Thread 0 writes shared memory, everyone reads it: with or without the barrier. */
static const char race_kernel[] =
    "#define MKC_THREADS " STR(NT) "\n"
                                   "#include \"prelude_cpu.h\"\n"
                                   "#include \"mkc_state.h\"\n"
                                   "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, "
                                   "float *kv, mkc_state *state) {\n"
                                   "  float *s = (float *)mkc_smem();\n"
                                   "  if (mkc_tid() == 0) s[0] = 42.0f;\n"
                                   "#ifdef WITH_BARRIER\n"
                                   "  mkc_sync_block();\n"
                                   "#endif\n"
                                   "  scratch[mkc_bid() * MKC_THREADS + mkc_tid()] = s[0];\n"
                                   "}\n";

/* mkc_warp_sum_rows against the shuffle butterfly it replaces on the CPU:
 * lane l of warp w holds v[r][i] = scratch[...] values with wide exponents
 * (so the summation order shows in the bits); 3 rows of stride 5, n = 4, and
 * one 70-value row (more than one meeting). Lanes write the reduced values
 * and the butterfly's, and every lane must agree bit for bit. */
static const char warp_sum_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#include \"prelude_cpu.h\"\n"
        "#include \"mkc_state.h\"\n"
        "MKC_DEVICE float butterfly(float v) {\n"
        "  for (int m = 16; m > 0; m >>= 1) v += mkc_shfl_xor(v, m);\n"
        "  return v;\n"
        "}\n"
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) "
        "{\n"
        "  int g = mkc_bid() * MKC_THREADS + mkc_tid();\n"
        "  float v[15], big[70];\n"
        "  for (int k = 0; k < 15; k++) v[k] = kv[(g * 15 + k) % 997];\n"
        "  for (int k = 0; k < 70; k++) big[k] = kv[(g * 70 + k) % 991];\n"
        "  float *out = scratch + g * 2 * 85;\n"
        "  for (int k = 0; k < 15; k++) out[85 + k] = k % 5 < 4 ? butterfly(v[k]) : v[k];\n"
        "  for (int k = 0; k < 70; k++) out[100 + k] = butterfly(big[k]);\n"
        "  mkc_warp_sum_rows(v, 3, 5, 4);\n"
        "  mkc_warp_sum_rows(big, 1, 70, 70);\n"
        "  for (int k = 0; k < 15; k++) out[k] = v[k];\n"
        "  for (int k = 0; k < 70; k++) out[15 + k] = big[k];\n"
        "}\n";

/* mkc_warp_sum_width against the shuffles it stands for, for every width
 * from 1 to 32: 3 values, and 70 (more than one meeting); each lane writes
 * both results, which must agree bit for bit. */
#define WIDTH_VALS 73
static const char warp_sum_width_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#include \"prelude_cpu.h\"\n"
        "#include \"mkc_state.h\"\n"
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) "
        "{\n"
        "  int g = mkc_bid() * MKC_THREADS + mkc_tid();\n"
        "  for (int wi = 0, width = 1; width <= 32; wi++, width *= 2) {\n"
        "    float v[73], own[73];\n"
        "    for (int k = 0; k < 73; k++) v[k] = own[k] = kv[(g * 73 + k * 7 + wi) % 997];\n"
        "    for (int k = 0; k < 73; k++)\n"
        "      for (int m = width >> 1; m > 0; m >>= 1) own[k] += mkc_shfl_xor(own[k], m);\n"
        "    mkc_warp_sum_width(v, 3, width);\n"
        "    mkc_warp_sum_width(v + 3, 70, width);\n"
        "    float *out = scratch + (g * 6 + wi) * 2 * 73;\n"
        "    for (int k = 0; k < 73; k++) { out[k] = v[k]; out[73 + k] = own[k]; }\n"
        "  }\n"
        "}\n";

/* MKC_WARP_SUM_OF against each lane's own call and the shuffle butterfly:
 * 100 sums in a row (past the 64 the emulator keeps between a warp's
 * barriers), every other one with a warp function too (MKC_WARP_SUM_OF_WARP),
 * each of 3 rows of stride 5 (n = 4) whose values depend on the
 * warp, the lane and the call; and one of 150 values (past the 128 a kept sum
 * holds: the meeting path). Every lane writes both results, which must agree
 * bit for bit (the values past n are unspecified after the sum: not compared). */
static const char warp_sum_of_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#include \"prelude_cpu.h\"\n"
        "#include \"mkc_state.h\"\n"
        "typedef struct { const float *kv; int warp, call, n; } vals_args;\n"
        "MKC_DEVICE void lane_vals(const void *p, int lane, float *v) {\n"
        "  const vals_args *a = (const vals_args *)p;\n"
        "  for (int k = 0; k < a->n; k++)\n"
        "    v[k] = a->kv[(a->warp * 7919 + lane * 131 + a->call * 17 + k) % 997];\n"
        "}\n"
        "MKC_DEVICE void warp_vals(const void *p, float *sums) { /* 3 rows of stride 5, n = 4 */\n"
        "  float lanes[32][15], col[32];\n"
        "  for (int l = 0; l < 32; l++) lane_vals(p, l, lanes[l]);\n"
        "  for (int r = 0; r < 3; r++) for (int i = 0; i < 4; i++) {\n"
        "    for (int l = 0; l < 32; l++) col[l] = lanes[l][r * 5 + i];\n"
        "    sums[r * 4 + i] = mkc_lanes_sum(col);\n"
        "  }\n"
        "}\n"
        "MKC_DEVICE float butterfly(float v) {\n"
        "  for (int m = 16; m > 0; m >>= 1) v += mkc_shfl_xor(v, m);\n"
        "  return v;\n"
        "}\n"
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) "
        "{\n"
        "  int g = mkc_bid() * MKC_THREADS + mkc_tid(), warp = g / 32, lane = mkc_tid() % 32;\n"
        "  float *out = scratch + g * 2 * 1650;\n"
        "  for (int c = 0; c < 101; c++) { /* no barrier between the sums */\n"
        "    int n = c < 100 ? 15 : 150;\n"
        "    vals_args a = {kv, warp, c, n};\n"
        "    float v[150];\n"
        "    if (c < 100 && c % 2) MKC_WARP_SUM_OF_WARP(lane_vals, warp_vals, &a, v, 3, 5, 4);\n"
        "    else if (c < 100) MKC_WARP_SUM_OF(lane_vals, &a, v, 3, 5, 4);\n"
        "    else MKC_WARP_SUM_OF(lane_vals, &a, v, 1, 150, 150);\n"
        "    for (int k = 0; k < n; k++) out[c * 15 + k] = c < 100 && k % 5 == 4 ? 0.0f : v[k];\n"
        "  }\n"
        "  for (int c = 0; c < 101; c++) {\n"
        "    int n = c < 100 ? 15 : 150;\n"
        "    vals_args a = {kv, warp, c, n};\n"
        "    float own[150];\n"
        "    lane_vals(&a, lane, own);\n"
        "    for (int k = 0; k < n; k++)\n"
        "      out[1650 + c * 15 + k] = c < 100 && k % 5 == 4 ? 0.0f : butterfly(own[k]);\n"
        "  }\n"
        "}\n";

/* Misuse: state->inputs[0] picks the mistake. */
static const char misuse_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#include \"prelude_cpu.h\"\n"
        "#include \"mkc_state.h\"\n" GRID_SYNC_SRC
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) "
        "{\n"
        "  int tid = mkc_tid();\n"
        "  switch (state->inputs[0]) {\n"
        "  case 0: /* __syncthreads in half of every block */\n"
        "    if (tid < 32) mkc_sync_block();\n"
        "    break;\n"
        "  case 1: /* a shuffle in half of a warp */\n"
        "    if ((tid & 31) < 16) scratch[tid] = mkc_shfl_xor(1.0f, 1);\n"
        "    break;\n"
        "  case 2: /* block 1 diverges while the others wait at a grid barrier */\n"
        "    if (mkc_bid() == 1 && tid >= 32) return;\n"
        "    grid_sync(state);\n"
        "    break;\n"
        "  }\n"
        "}\n";

static const char bad_kernel[] = "#include \"prelude_cpu.h\"\n"
                                 "MKC_KERNEL mkc_step(void) {\n"
                                 "  int x = ;\n"
                                 "}\n";

/* Loops for --bench: inputs[0] = mode, inputs[1] = iterations. */
static const char bench_kernel[] =
    "#define MKC_THREADS 128\n"
    "#include \"prelude_cpu.h\"\n"
    "#include \"mkc_state.h\"\n" GRID_SYNC_SRC
    "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) {\n"
    "  int n = state->inputs[1];\n"
    "  float v = (float)mkc_tid();\n"
    "  if (state->inputs[0] == 1) for (int i = 0; i < n; i++) mkc_sync_block();\n"
    "  if (state->inputs[0] == 2) for (int i = 0; i < n; i++) v = mkc_shfl_xor(v, 1);\n"
    "  if (state->inputs[0] == 3) for (int i = 0; i < n; i++) grid_sync(state);\n"
    "  scratch[mkc_bid() * MKC_THREADS + mkc_tid()] = v;\n"
    "}\n";

static char templates_dir[PATH_MAX];

/* build/test_simt -> templates/ beside build/; else ./templates */
static void find_templates(void) {
  char exe[PATH_MAX], probe[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  strcpy(templates_dir, "templates");
  if (n <= 0) return;
  exe[n] = '\0';
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0';
  }
  snprintf(probe, sizeof probe, "%s/templates/prelude_cpu.h", exe);
  if (access(probe, R_OK) == 0 && strlen(exe) + 11 <= sizeof templates_dir)
    snprintf(templates_dir, sizeof templates_dir, "%.*s/templates", PATH_MAX - 16, exe);
}

static uint16_t bf16_of_int(int v) {
  float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16); /* exact for small integers */
}

static float f32_of_bf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static int count_cached_so(const char *cache_root) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/cpu", cache_root);
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len == 19 && strcmp(e->d_name + 16, ".so") == 0) n++;
  }
  closedir(d);
  return n;
}

static void remove_cache(const char *cache_root) {
  char dir[PATH_MAX], path[PATH_MAX * 2];
  snprintf(dir, sizeof dir, "%s/cpu", cache_root);
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
  rmdir(cache_root);
}

static void test_main_kernel(void) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(main_kernel, "simt_main.cu", templates_dir);
  if (!CHECK(k != NULL, "main kernel compiles and loads")) return;
  static float scratch[SCRATCH_FLOATS], kv[4 * NT];
  static uint16_t weights[N];
  mkc_state state;
  memset(&state, 0, sizeof state);
  for (int run = 0; run < RUNS; run++) {
    for (int i = 0; i < N; i++) weights[i] = bf16_of_int((i * 7 + run * 3) % 23 - 11);
    for (int i = 0; i < 4 * NT; i++) kv[i] = (float)(i % 13 + run);
    for (int i = 0; i < SCRATCH_FLOATS; i++) scratch[i] = -1.0f;
    unsigned gen0 = state.barrier_gen;
    int rc = mkc_cpu_kernel_launch(k, NB, NT, SMEM_BYTES, weights, scratch, kv, &state);
    CHECK_INT(rc, 0, "run %d: launch", run);

    int bad_warp = 0, bad_int = 0, bad_out = 0, bad_total = 0, bad_neighbor = 0, bad_loads = 0;
    double grand = 0;
    for (int i = 0; i < N; i++) grand += f32_of_bf16(weights[i]);
    for (int b = 0; b < NB; b++) {
      double bsum = 0;
      for (int t = 0; t < NT; t++) bsum += f32_of_bf16(weights[b * NT + t]);
      CHECK_INT(scratch[OFF_BLOCK + b], bsum, "run %d: block %d sum via smem + __syncthreads", run,
                b);
    }
    for (int g = 0; g < N; g++) {
      double wsum = 0;
      for (int l = 0; l < 32; l++) wsum += f32_of_bf16(weights[(g & ~31) + l]);
      bad_warp += scratch[OFF_WARP + g] != (float)wsum;
      bad_int += scratch[OFF_SHFL_INT + g] != (float)(g ^ 5);
      bad_out += scratch[OFF_SHFL_OUT + g] != (float)g;
      bad_total += scratch[OFF_TOTAL + g] != (float)grand;
      bad_neighbor += scratch[OFF_NEIGHBOR + g] != (float)((g ^ 1) * 3);
      int t = g % NT;
      float f = kv[4 * t] + 2.0f * kv[4 * t + 1] + 3.0f * kv[4 * t + 2] + 4.0f * kv[4 * t + 3];
      float us = f32_of_bf16(weights[g / 8 * 8]) + f32_of_bf16(weights[g / 8 * 8 + 7]);
      bad_loads += scratch[OFF_LOADS + g] != f + 100.0f * us;
    }
    CHECK_INT(bad_warp, 0, "run %d: warp sums by 5 xor shuffles (threads wrong)", run);
    CHECK_INT(bad_int, 0, "run %d: int shuffle reads lane ^ 5 (threads wrong)", run);
    CHECK_INT(bad_out, 0, "run %d: shuffle past the warp returns own value (threads wrong)", run);
    CHECK_INT(bad_neighbor, 0, "run %d: smem exchange over __syncwarp (threads wrong)", run);
    CHECK_INT(bad_loads, 0, "run %d: mkc_load_f4 / mkc_load_u4 (threads wrong)", run);
    CHECK_INT(bad_total, 0, "run %d: phase 2 reads every block's phase 1 sum (threads wrong)", run);
    int bad_ring = 0, last = (RING_ROUNDS - 1) & 1;
    for (int b = 0; b < NB; b++)
      bad_ring += scratch[OFF_RING + last * NB + b] !=
                  1000.0f * (float)((b + RING_ROUNDS - 1) % NB) + (float)(RING_ROUNDS - 1);
    CHECK_INT(bad_ring, 0, "run %d: ring over %d grid barriers (blocks wrong)", run, RING_ROUNDS);
    CHECK_INT(state.barrier_gen - gen0, RING_ROUNDS + 1, "run %d: grid barrier generations", run);
    CHECK_INT(state.barrier_count, 0, "run %d: grid barrier count back to 0", run);
    CHECK_INT(state.step, run + 1, "run %d: state->step", run);
  }
  mkc_cpu_kernel_close(k);
}

static void test_warp_sum_rows(void) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(warp_sum_kernel, "simt_warp_sum.cu", templates_dir);
  if (!CHECK(k != NULL, "warp sum kernel compiles and loads")) return;
  static float scratch[N * 2 * 85], kv[1000];
  uint32_t x = 12345;
  for (int i = 0; i < 1000; i++) { /* wide exponents, both signs: order shows in the bits */
    x = x * 1664525u + 1013904223u;
    kv[i] = ldexpf((float)(x >> 8) / 16777216.0f - 0.5f, (int)(x % 40) - 20);
  }
  mkc_state state;
  memset(&state, 0, sizeof state);
  int rc = 0, differ = 0, untouched = 0;
  for (int launch = 0; launch < 2; launch++) { /* both schedule orders */
    rc |= mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, kv, &state);
    for (int g = 0; g < N; g++) {
      const float *out = scratch + g * 2 * 85;
      differ += memcmp(out, out + 85, 85 * sizeof(float)) != 0;
      for (int i = 0; i < 3; i++) /* column 4 of each row is past n: left as it was */
        untouched += out[i * 5 + 4] == kv[(g * 15 + i * 5 + 4) % 997];
    }
  }
  CHECK_INT(rc, 0, "warp sum kernel launches");
  CHECK_INT(differ, 0,
            "mkc_warp_sum_rows equals the shuffle butterfly bit for bit (lanes differing)");
  CHECK_INT(untouched, 2 * N * 3, "mkc_warp_sum_rows leaves the values past n alone");
  mkc_cpu_kernel_close(k);
}

static void test_warp_sum_width(void) {
  mkc_cpu_kernel *k =
      mkc_cpu_kernel_open(warp_sum_width_kernel, "simt_warp_sum_width.cu", templates_dir);
  if (!CHECK(k != NULL, "mkc_warp_sum_width kernel compiles and loads")) return;
  static float scratch[N * 6 * 2 * WIDTH_VALS], kv[1000];
  uint32_t x = 777;
  for (int i = 0; i < 1000; i++) {
    x = x * 1664525u + 1013904223u;
    kv[i] = ldexpf((float)(x >> 8) / 16777216.0f - 0.5f, (int)(x % 40) - 20);
  }
  mkc_state state;
  memset(&state, 0, sizeof state);
  for (int launch = 0; launch < 2; launch++) {
    const char *how = launch ? "the checking schedule" : "the default schedule";
    if (launch) setenv("MKC_SIMT_SEED", "5", 1);
    int rc = mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, kv, &state), differ = 0, moved = 0;
    unsetenv("MKC_SIMT_SEED");
    for (int g = 0; g < N * 6; g++) {
      const float *out = scratch + g * 2 * WIDTH_VALS;
      differ += memcmp(out, out + WIDTH_VALS, WIDTH_VALS * sizeof(float)) != 0;
      moved += g % 6 > 0 && out[0] != kv[(g / 6 * 73 + g % 6) % 997]; /* width 1: untouched */
    }
    CHECK_INT(rc, 0, "mkc_warp_sum_width kernel launches (%s)", how);
    CHECK_INT(differ, 0,
              "mkc_warp_sum_width equals the shuffles bit for bit, widths 1 to 32 (%s; lanes "
              "differing)",
              how);
    CHECK(moved > N * 4, "mkc_warp_sum_width: widths 2 to 32 change the values (%d of %d)", moved,
          N * 5);
  }
  mkc_cpu_kernel_close(k);
}

static void test_warp_sum_of(void) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(warp_sum_of_kernel, "simt_warp_sum_of.cu", templates_dir);
  if (!CHECK(k != NULL, "MKC_WARP_SUM_OF kernel compiles and loads")) return;
  static float scratch[N * 2 * 1650], kv[1000];
  uint32_t x = 777;
  for (int i = 0; i < 1000; i++) { /* wide exponents, both signs: order shows in the bits */
    x = x * 1664525u + 1013904223u;
    kv[i] = ldexpf((float)(x >> 8) / 16777216.0f - 0.5f, (int)(x % 40) - 20);
  }
  mkc_state state;
  memset(&state, 0, sizeof state);
  for (int checking = 0; checking < 2; checking++) {
    if (checking) setenv("MKC_SIMT_SEED", "3", 1);
    int rc = 0, differ = 0;
    for (int launch = 0; launch < 2; launch++) {
      memset(scratch, 0, sizeof scratch);
      rc |= mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, kv, &state);
      for (int g = 0; g < N; g++)
        differ += memcmp(scratch + g * 2 * 1650, scratch + g * 2 * 1650 + 1650,
                         1650 * sizeof(float)) != 0;
    }
    if (checking) unsetenv("MKC_SIMT_SEED");
    const char *how = checking ? "the checking schedule" : "the default schedule";
    CHECK_INT(rc, 0, "MKC_WARP_SUM_OF kernel launches (%s)", how);
    CHECK_INT(differ, 0,
              "MKC_WARP_SUM_OF equals every lane's own call and the shuffle butterfly, bit for "
              "bit, over 101 sums (%s; lanes differing)",
              how);
  }
  mkc_cpu_kernel_close(k);
}

static void test_missing_barrier(void) {
  static float scratch[N];
  mkc_state state;
  memset(&state, 0, sizeof state);
  for (int with_barrier = 0; with_barrier < 2; with_barrier++) {
    char src[sizeof race_kernel + 64];
    snprintf(src, sizeof src, "%s%s", with_barrier ? "#define WITH_BARRIER\n" : "", race_kernel);
    mkc_cpu_kernel *k = mkc_cpu_kernel_open(src, "simt_race.cu", templates_dir);
    if (!CHECK(k != NULL, "race kernel compiles (barrier: %d)", with_barrier)) continue;
    /* two launches: the schedule order flips between them */
    int stale = 0, rc = 0;
    for (int launch = 0; launch < 2; launch++) {
      rc |= mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, NULL, &state);
      for (int i = 0; i < N; i++) stale += scratch[i] != 42.0f;
    }
    CHECK_INT(rc, 0, "race kernel launches (barrier: %d)", with_barrier);
    if (with_barrier)
      CHECK_INT(stale, 0, "with __syncthreads every thread reads 42");
    else
      CHECK(stale > 0, "without __syncthreads some thread reads unwritten smem (%d reads)", stale);
    mkc_cpu_kernel_close(k);
  }
}

static void test_misuse(void) {
  static const char *expected[] = {
      ": __syncthreads reached by 32 of 64 threads (the rest returned)",
      ": __syncwarp or shuffle reached by 16 of 32 lanes",
      "mkc: error: simt: block 1: __syncthreads reached by 32 of 64 threads",
  };
  static const char *what[] = {"divergent __syncthreads", "shuffle in half a warp",
                               "divergence while other blocks spin on a grid barrier"};
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(misuse_kernel, "simt_misuse.cu", templates_dir);
  if (!CHECK(k != NULL, "misuse kernel compiles")) return;
  static float scratch[N];
  for (int mode = 0; mode < 3; mode++) {
    mkc_state state;
    memset(&state, 0, sizeof state);
    state.inputs[0] = mode;
    check_stderr_begin();
    int rc = mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, NULL, &state);
    char *err = check_stderr_end();
    CHECK_INT(rc, -1, "%s: launch fails", what[mode]);
    CHECK(err && strstr(err, "mkc: error: simt: block ") && strstr(err, expected[mode]),
          "%s: message names it", what[mode]);
    free(err);
  }
  /* the emulator is usable again after aborted launches */
  mkc_state state;
  memset(&state, 0, sizeof state);
  state.inputs[0] = 2;
  CHECK_INT(mkc_cpu_kernel_launch(k, 1, NT, 64, NULL, scratch, NULL, &state), 0,
            "a clean launch after aborted ones");
  check_stderr_begin();
  int rc = mkc_cpu_kernel_launch(k, 2, 48, 0, NULL, scratch, NULL, &state);
  char *err = check_stderr_end();
  CHECK_INT(rc, -1, "48 threads per block: launch fails");
  CHECK(err && strstr(err, "mkc: error: simt: 48 threads per block: expected a multiple of 32"),
        "48 threads per block: message names it");
  free(err);
  mkc_cpu_kernel_close(k);
}

/* Block b marks scratch[b] with the launch's step, then reads its neighbour's mark: stale
 * (from the last launch) when the neighbour has not written it yet and no grid barrier
 * stands between. */
static const char cross_block_kernel[] = "#define MKC_THREADS " STR(
    NT) "\n"
        "#include \"prelude_cpu.h\"\n"
        "#include \"mkc_state.h\"\n" GRID_SYNC_SRC
        "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, "
        "float *kv, mkc_state *state) {\n"
        "  int b = mkc_bid(), nb = mkc_nblocks();\n"
        "  if (mkc_tid() == 0) scratch[b] = (float)state->step;\n"
        "#ifdef WITH_BARRIER\n"
        "  grid_sync(state);\n"
        "#endif\n"
        "  if (mkc_tid() == 0) scratch[nb + b] = scratch[(b + 1) % nb];\n"
        "  grid_sync(state);\n"
        "  if (b == 0 && mkc_tid() == 0) state->step++;\n"
        "}\n";

/* Stale reads of the cross-block kernel over `launches` launches, one bit per (launch,
 * block) in *pattern; -1 when a launch failed. */
static int cross_block_stale(mkc_cpu_kernel *k, int launches, unsigned long long *pattern) {
  static float scratch[2 * NB];
  mkc_state state;
  memset(&state, 0, sizeof state);
  memset(scratch, 0, sizeof scratch);
  state.step = 1;
  int stale = 0;
  *pattern = 0;
  for (int l = 0; l < launches; l++) {
    if (mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, NULL, &state) != 0) return -1;
    for (int b = 0; b < NB; b++)
      if (scratch[NB + b] != (float)(l + 1)) {
        stale++;
        *pattern |= 1ull << (l * NB + b);
      }
  }
  return stale;
}

/* The stale-read pattern of 16 launches in a child process (a process that starts where
 * this one is: the schedule depends on the seed and the launch's number). */
static unsigned long long cross_block_pattern_apart(mkc_cpu_kernel *k) {
  int fds[2];
  unsigned long long pattern = 0;
  if (pipe(fds) != 0) return 0;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    cross_block_stale(k, 16, &pattern);
    _exit(write(fds[1], &pattern, sizeof pattern) == sizeof pattern ? 0 : 1);
  }
  if (read(fds[0], &pattern, sizeof pattern) != sizeof pattern) pattern = 0;
  waitpid(pid, NULL, 0);
  close(fds[0]);
  close(fds[1]);
  return pattern;
}

/* MKC_SIMT_SEED: blocks run one at a time in an order drawn from the seed, so a read of
 * another block's write with no grid barrier between is stale in every launch (the first
 * block to run reads before its neighbour writes), the same seed repeats the same schedule,
 * and a launch that fails while blocks wait for their turn fails instead of hanging. */
static void test_checking_schedule(void) {
  setenv("MKC_SIMT_SEED", "5", 1);
  for (int with_barrier = 0; with_barrier < 2; with_barrier++) {
    char src[sizeof cross_block_kernel + 64];
    snprintf(src, sizeof src, "%s%s", with_barrier ? "#define WITH_BARRIER\n" : "",
             cross_block_kernel);
    mkc_cpu_kernel *k = mkc_cpu_kernel_open(src, "simt_cross_block.cu", templates_dir);
    if (!CHECK(k != NULL, "cross-block kernel compiles (barrier: %d)", with_barrier)) continue;
    unsigned long long pattern;
    int stale = cross_block_stale(k, 16, &pattern);
    if (with_barrier) {
      CHECK_INT(stale, 0, "checking schedule, with a grid barrier: no stale read in 16 launches");
    } else {
      CHECK(stale >= 16, "checking schedule, no grid barrier: a stale read in every launch (%d)",
            stale);
      unsigned long long first = cross_block_pattern_apart(k);
      CHECK(first != 0 && cross_block_pattern_apart(k) == first,
            "checking schedule: the same seed, the same stale reads (%llx)", first);
    }
    mkc_cpu_kernel_close(k);
  }
  /* a wait for an arrival that never comes: block 0 never arrives */
  static const char never_kernel[] = "#define MKC_THREADS " STR(
      NT) "\n"
          "#include \"prelude_cpu.h\"\n"
          "#include \"mkc_state.h\"\n"
          "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state "
          "*state) {\n"
          "  mkc_sync_block();\n"
          "  if (mkc_tid() == 0 && mkc_bid() != 0) mkc_add_release_u32(&state->flow_count, 1u);\n"
          "  if (mkc_tid() == 0)\n"
          "    while (mkc_load_acquire_u32(&state->flow_count) < (unsigned)mkc_nblocks()) "
          "mkc_pause();\n"
          "  mkc_sync_block();\n"
          "}\n";
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(never_kernel, "simt_never.cu", templates_dir);
  if (CHECK(k != NULL, "never-arriving kernel compiles")) {
    static float scratch[N];
    mkc_state state;
    memset(&state, 0, sizeof state);
    alarm(120); /* a hang ends the test with no summary line, which run.sh counts as a failure */
    check_stderr_begin();
    int rc = mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, NULL, &state);
    char *err = check_stderr_end();
    alarm(0);
    CHECK(rc == -1 && strstr(err, "deadlock: every block spins"),
          "checking schedule: a wait for an arrival that never comes fails as a deadlock");
    free(err);
    mkc_cpu_kernel_close(k);
  }
  k = mkc_cpu_kernel_open(misuse_kernel, "simt_misuse.cu", templates_dir);
  if (CHECK(k != NULL, "misuse kernel compiles")) {
    static float scratch[N];
    mkc_state state;
    memset(&state, 0, sizeof state);
    state.inputs[0] = 2;
    check_stderr_begin();
    int rc = mkc_cpu_kernel_launch(k, NB, NT, 64, NULL, scratch, NULL, &state);
    free(check_stderr_end());
    CHECK_INT(rc, -1, "checking schedule: divergence while other blocks wait their turn fails");
    mkc_cpu_kernel_close(k);
  }
  unsetenv("MKC_SIMT_SEED");
}

/* A 16-byte load at scratch + inputs[0] floats: aligned at 0 and 4, not at 1. */
static const char load_kernel[] =
    "#define MKC_THREADS 32\n"
    "#include \"prelude_cpu.h\"\n"
    "#include \"mkc_state.h\"\n"
    "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *state) {\n"
    "  mkc_f4 v = mkc_load_f4(scratch + state->inputs[0]);\n"
    "  if (mkc_tid() == 0) scratch[8] = v.x;\n"
    "}\n";

/* Runs the load in a child (a failed assert ends the process); its status and stderr. */
static int load_at(mkc_cpu_kernel *k, int offset, char *err, size_t cap) {
  static _Alignas(16) float scratch[16];
  char path[] = "/tmp/mkc_simt_align_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    mkc_state state;
    memset(&state, 0, sizeof state);
    state.inputs[0] = offset;
    _exit(mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, scratch, NULL, &state) == 0 ? 0 : 1);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  ssize_t n = pread(fd, err, cap - 1, 0);
  err[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return status;
}

/* The GPU faults on a misaligned 16-byte load; the CPU prelude stops too. */
static void test_alignment(void) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(load_kernel, "simt_align.cu", templates_dir);
  if (!CHECK(k != NULL, "alignment kernel compiles")) return;
  char err[1024];
  int status = load_at(k, 4, err, sizeof err);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a 16-byte load at a 16-byte boundary runs");
  status = load_at(k, 1, err, sizeof err);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
        "a 16-byte load 4 bytes past a 16-byte boundary stops the kernel");
  CHECK(strstr(err, "mkc_load_f4: a 16-byte load needs a 16-byte aligned address") != NULL,
        "... saying why (%s)", err);
  mkc_cpu_kernel_close(k);
}

static void test_compile_error(void) {
  check_stderr_begin();
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(bad_kernel, "bad.cu", templates_dir);
  char *err = check_stderr_end();
  CHECK(k == NULL, "a syntax error: open returns NULL");
  CHECK(err && strstr(err, "mkc: error: cpu backend: compiling bad.cu failed (command: "),
        "a syntax error: the failure names the kernel and the command");
  CHECK(err && strstr(err, "bad.cu:3:"),
        "a syntax error: the compiler's diagnostic names bad.cu:3");
  free(err);
  mkc_cpu_kernel_close(k);
}

/* main_kernel under codegen's header comment and a #line naming file, as a
 * generated kernel names itself: text, with the header's graph path and the
 * body's last line as given. */
static char *with_header(const char *graph, const char *file, const char *tail) {
  char *text;
  if (asprintf(&text,
               "/* mkc 0.1.0 -- generated: do not edit.\n * graph:   %s, preset tiny\n */\n"
               "#line 4 \"%s\"\n%s%s",
               graph, file, main_kernel, tail) < 0)
    return NULL;
  return text;
}

/* The cache key leaves out codegen's header comment and the kernel's name in
 * its #line directives (the same kernel from a preset and from a model
 * file), and nothing else. */
static void same_kernel_other_header(const char *cache_root) {
  char *a = with_header("/tmp/x/graphs/llama.lua", "llama.tiny.cu", "");
  char *b = with_header("graphs/llama.lua", "llama.model-file.cu", "");
  char *c = with_header("graphs/llama.lua", "llama.tiny.cu", "/* a comment past the header */\n");
  char *d = with_header("graphs/llama.lua", "llama.tiny.cu", "static int unused_but_new;\n");
  char *e = with_header("graphs/llama.lua", "templates/other.cuh", "");
  int n0 = count_cached_so(cache_root);
  mkc_cpu_kernel *k = a ? mkc_cpu_kernel_open(a, "llama.tiny.cu", templates_dir) : NULL;
  int n1 = count_cached_so(cache_root);
  mkc_cpu_kernel_close(k);
  k = b ? mkc_cpu_kernel_open(b, "llama.model-file.cu", templates_dir) : NULL;
  int n2 = count_cached_so(cache_root);
  CHECK(k && n1 == n0 + 1 && n2 == n1,
        "another header comment and name: the same cache entry (%d, %d, %d entries)", n0, n1, n2);
  mkc_cpu_kernel_close(k);
  const char *others[] = {c, d, e};
  int opened = 0;
  for (int i = 0; i < 3; i++) {
    k = others[i] ? mkc_cpu_kernel_open(others[i], "llama.tiny.cu", templates_dir) : NULL;
    opened += k != NULL;
    mkc_cpu_kernel_close(k);
  }
  CHECK(opened == 3 && count_cached_so(cache_root) == n2 + 3,
        "a comment past the header, a line of code, a #line naming another file: a new entry "
        "each (%d entries)",
        count_cached_so(cache_root));
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
}

static void test_cache(const char *cache_root) {
  int before = count_cached_so(cache_root);
  double t0 = mkc_seconds();
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(main_kernel, "simt_main.cu", templates_dir);
  double dt = mkc_seconds() - t0;
  CHECK(k != NULL && before > 0, "main kernel reopens from the cache (%.1f ms)", dt * 1e3);
  CHECK_INT(count_cached_so(cache_root), before, "reopening compiles nothing new");
  mkc_cpu_kernel_close(k);
  same_kernel_other_header(cache_root);
  check_stderr_begin();
  k = mkc_cpu_kernel_open(main_kernel, "simt_main.cu", "/nonexistent");
  char *err = check_stderr_end();
  CHECK(k == NULL, "a missing templates dir: open returns NULL");
  CHECK(err && strstr(err, "mkc: error: cpu backend: cannot read /nonexistent/prelude_cpu.h: "),
        "a missing templates dir: message names the file");
  free(err);
}

static void bench(void) {
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(bench_kernel, "simt_bench.cu", templates_dir);
  if (!k) return;
  static float scratch[64 * 128];
  mkc_state state;
  memset(&state, 0, sizeof state);
  struct {
    const char *what;
    int mode, blocks, iters;
    double per; /* divide the time by iters * per */
  } runs[] = {
      {"empty launch, 1 block x 128", 0, 1, 1, 1},
      {"empty launch, 16 blocks x 128", 0, 16, 1, 1},
      {"__syncthreads, 1 block x 128 threads", 1, 1, 20000, 1},
      {"__syncthreads, 2 blocks x 128 (2 cores)", 1, 2, 20000, 1},
      {"shuffle, 1 block x 128 (4 warps), per warp shuffle", 2, 1, 20000, 4},
      {"grid barrier, 3 blocks x 128", 3, 3, 2000, 1},
      {"grid barrier, 16 blocks x 128", 3, 16, 200, 1},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    state.inputs[0] = runs[i].mode;
    state.inputs[1] = runs[i].iters;
    mkc_cpu_kernel_launch(k, runs[i].blocks, 128, 64, NULL, scratch, NULL, &state); /* warm */
    int reps = runs[i].mode == 0 ? 50 : 3;
    double t0 = mkc_seconds();
    for (int r = 0; r < reps; r++)
      mkc_cpu_kernel_launch(k, runs[i].blocks, 128, 64, NULL, scratch, NULL, &state);
    double us = (mkc_seconds() - t0) * 1e6 / reps / (runs[i].iters * runs[i].per);
    printf("bench %-52s %9.3f us\n", runs[i].what, us);
  }
  mkc_cpu_kernel_close(k);
}

int main(int argc, char **argv) {
  find_templates();
  char cache_root[] = "/tmp/mkc_test_simt_XXXXXX";
  if (!mkdtemp(cache_root)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("MKC_CACHE_DIR", cache_root, 1);
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench();
    remove_cache(cache_root);
    return 0;
  }
  test_main_kernel();
  test_missing_barrier();
  test_warp_sum_rows();
  test_warp_sum_width();
  test_warp_sum_of();
  test_misuse();
  test_checking_schedule();
  test_alignment();
  test_compile_error();
  test_cache(cache_root);
  remove_cache(cache_root);
  return check_done();
}
