/* How much of the vocabulary the sampler's block walks after the candidates
 * stage (templates/sample.cuh, mkc_cands_gather), on real logits: the
 * reference's logits after each of a list of tokens, for a model file or a
 * preset on random weights. For each grid of B blocks (slices of the
 * vocabulary) and top-k: the slices' lists (entries), the union the sampler
 * cut them down to with the slices' k-th values alone (as before 2026-12-05),
 * with the k-th largest of the threads' maxima too (now), the exact top k,
 * and the list entries the gather reads now (slices whose maximum reaches the
 * bound). Worked out here from the definitions, not by the template's code.
 * `make build/bench_cands`; build/bench_cands (MODEL | --preset P) IDS
 * [BLOCKS,...] (IDS: "1,2,3"; BLOCKS default 528,396: a T = 1 and a T <= 5
 * grid on 132 SMs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/host.h"
#include "exec/session.h"
#include "formats/weights.h"
#include "model/model_file.h"

#define K 40        /* llama.cpp's default top-k */
#define THREADS 128 /* a block's threads: their shares of the slices (mkc_share) */

static const float *by_value; /* the row qsort orders ids by */

static int value_desc_id_asc(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  if (by_value[i] != by_value[j]) return by_value[i] > by_value[j] ? -1 : 1;
  return i - j;
}

static int float_desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x > y ? -1 : x < y;
}

/* Adds one row's counts for a grid of B blocks into sum[5]. */
static void row_counts(const float *row, int vocab, int B, double *sum) {
  int per = (vocab + B - 1) / B, *ids = malloc(sizeof *ids * (size_t)per);
  float *kth = malloc(sizeof *kth * (size_t)B), *max = malloc(sizeof *max * (size_t)B);
  float tmax[THREADS];
  int *n_kept = malloc(sizeof *n_kept * (size_t)B), *kept = malloc(sizeof *kept * (size_t)B * K);
  float bound1 = -3.4e38f;
  by_value = row;
  for (int b = 0; b < B; b++) {
    int lo = b * per < vocab ? b * per : vocab, hi = lo + per < vocab ? lo + per : vocab,
        n = hi - lo;
    for (int i = 0; i < n; i++) ids[i] = lo + i;
    qsort(ids, (size_t)n, sizeof *ids, value_desc_id_asc);
    n_kept[b] = n < K ? n : K;
    memcpy(kept + (size_t)b * K, ids, sizeof *ids * (size_t)n_kept[b]);
    max[b] = n ? row[ids[0]] : -3.4e38f;
    kth[b] = n >= K ? row[ids[K - 1]] : -3.4e38f;
    if (kth[b] > bound1) bound1 = kth[b];
  }
  int share = (B + THREADS - 1) / THREADS;
  for (int t = 0; t < THREADS; t++) {
    tmax[t] = -3.4e38f;
    for (int b = t * share; b < (t + 1) * share && b < B; b++)
      if (max[b] > tmax[t]) tmax[t] = max[b];
  }
  qsort(tmax, THREADS, sizeof *tmax, float_desc);
  float bound = tmax[K - 1] > bound1 ? tmax[K - 1] : bound1;
  double entries = 0, old_n = 0, new_n = 0, walked = 0;
  for (int b = 0; b < B; b++) {
    entries += n_kept[b];
    if (max[b] >= bound) walked += n_kept[b];
    for (int j = 0; j < n_kept[b]; j++) {
      float v = row[kept[(size_t)b * K + j]];
      old_n += v >= bound1;
      new_n += v >= bound;
    }
  }
  float *all = malloc(sizeof *all * (size_t)vocab);
  memcpy(all, row, sizeof *all * (size_t)vocab);
  qsort(all, (size_t)vocab, sizeof *all, float_desc);
  double exact = 0;
  for (int i = 0; i < vocab; i++) exact += row[i] >= all[K - 1];
  sum[0] += entries, sum[1] += old_n, sum[2] += new_n, sum[3] += exact, sum[4] += walked;
  free(all), free(ids), free(kth), free(max), free(n_kept), free(kept);
}

int main(int argc, char **argv) {
  int preset = argc > 1 && strcmp(argv[1], "--preset") == 0, a = 1 + preset;
  if (argc < a + 2) {
    fprintf(stderr, "usage: bench_cands (MODEL | --preset P) IDS [BLOCKS,...]\n");
    return 2;
  }
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .max_ctx = 512, .kv_dtype = "bf16"};
  mkc_model_file mf;
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
  if (preset) {
    o.preset = argv[a];
  } else {
    if (mkc_model_file_open(argv[a], &mf) != 0) return 1;
    o.model = &mf.desc;
    o.weight_type = mkc_model_file_weight_type;
    o.weight_type_ctx = &mf;
  }
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  if ((preset ? mkc_weights_random(&w, &g, 1) : mkc_model_file_weights(&mf, &g, &w)) != 0) return 1;
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &g, &src, &w, 0);
  if (!s) return 1;
  int grids[16] = {528, 396}, n_grids = 2;
  if (argc > a + 2) {
    n_grids = 0;
    for (char *p = argv[a + 2]; *p; p += *p == ',') {
      char *end;
      long b = strtol(p, &end, 10);
      if (end == p || (*end && *end != ',') || b < 1 || b > 1024 || n_grids == 16) {
        fprintf(stderr, "bench_cands: error: BLOCKS: up to 16 grids of 1..1024 blocks, got '%s'\n",
                argv[a + 2]);
        return 2;
      }
      grids[n_grids++] = (int)b;
      p = end;
    }
  }
  double sum[16][5] = {{0}};
  int rows = 0;
  for (char *p = argv[a + 1]; *p; p += *p == ',') {
    char *end;
    long id = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || id < 0 || id >= g.vocab || rows == 512) {
      fprintf(stderr, "bench_cands: error: IDS: up to 512 token ids in 0..%d, got '%s'\n",
              g.vocab - 1, argv[a + 1]);
      return 2;
    }
    p = end;
    int tok = (int)id;
    mkc_step_result r;
    if (mkc_session_step(s, &tok, 1, 0, &r) != 0 || r.status != 0) {
      fprintf(stderr, "bench_cands: error: the reference's step %d failed\n", rows);
      return 1;
    }
    const float *row = mkc_session_logits(s, 0);
    for (int i = 0; i < n_grids; i++) row_counts(row, g.vocab, grids[i], sum[i]);
    rows++;
  }
  printf("%s, %d rows of %d logits, top-k %d, %d threads (means a row)\n", argv[a], rows, g.vocab,
         K, THREADS);
  printf("%8s %10s %14s %12s %8s %14s\n", "blocks", "entries", "union before", "union now", "top k",
         "entries read");
  for (int i = 0; i < n_grids; i++)
    printf("%8d %10.0f %14.0f %12.0f %8.0f %14.0f\n", grids[i], sum[i][0] / rows, sum[i][1] / rows,
           sum[i][2] / rows, sum[i][3] / rows, sum[i][4] / rows);
  mkc_session_close(s);
  return 0;
}
