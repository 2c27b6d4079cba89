/* What constrained JSON output costs on the host, per token (docs/PERF.md):
 * for a vocabulary (a GGUF with a tokenizer), the time to sort it, then in
 * five states of an answer the mask of allowed tokens, a sampled choice
 * (llama.cpp's default chain at temperature 0.8) and a greedy one, on
 * made-up logits (a spread of values, so a greedy choice's best tokens are
 * refused outside strings: the slow case). `make build/bench_constrain`;
 * build/bench_constrain VOCAB.gguf... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "exec/constrain.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"
#include "cli/json_format.h"
static int bench(const char *path) {
  mkc_gguf *f = mkc_gguf_open(path);
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  if (!t) return 1;
  int n = mkc_tokenizer_n_vocab(t);
  double t0 = mkc_seconds();
  mkc_constraint *c = mkc_json_format_open(t);
  double t_open = mkc_seconds() - t0;
  uint8_t *m = malloc(n);
  const char *states[] = {"{", "{\"na", "{\"name\": \"Tom", "{\"a\": 12", "{\"a\": 1}"};
  printf("%s: %d tokens, sorted in %.1f ms\n", path, n, t_open * 1e3);
  float *logits = malloc(n * sizeof *logits);
  for (int i = 0; i < n; i++) logits[i] = (float)((i * 2654435761u) % 10000) / 1000.0f;
  for (int s = 0; s < 5; s++) {
    mkc_constraint_start(c, 1, 1);
    int *ids;
    int k = mkc_tokenizer_encode(t, states[s], strlen(states[s]), 0, 0, &ids);
    for (int i = 0; i < k; i++) mkc_constraint_accept(c, ids[i]);
    int reps = 20, a = 0;
    t0 = mkc_seconds();
    for (int r = 0; r < reps; r++) a = mkc_constraint_mask(c, m, n);
    double tm = (mkc_seconds() - t0) / reps;
    mkc_sampling o = {.temp = 0.8f,
                      .top_k = 40,
                      .top_p = 0.95f,
                      .min_p = 0.05f,
                      .repeat_penalty = 1,
                      .repeat_last_n = 64};
    int id;
    t0 = mkc_seconds();
    for (int r = 0; r < reps; r++)
      mkc_constraint_choose(c, logits, n, ids, k, &o, &id, NULL, NULL, NULL);
    double ts = (mkc_seconds() - t0) / reps;
    mkc_sampling g = {.repeat_penalty = 1};
    t0 = mkc_seconds();
    for (int r = 0; r < reps; r++)
      mkc_constraint_choose(c, logits, n, ids, k, &g, &id, NULL, NULL, NULL);
    double tg = (mkc_seconds() - t0) / reps;
    printf("  after %-16s %6d allowed: mask %.2f ms, sampled choice %.2f ms, greedy %.3f ms\n",
           states[s], a, tm * 1e3, ts * 1e3, tg * 1e3);
    free(ids);
  }
  mkc_constraint_close(c);
  free(m);
  free(logits);
  mkc_tokenizer_free(t);
  mkc_gguf_close(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: bench_constrain VOCAB.gguf...\n", stderr);
    return 2;
  }
  for (int i = 1; i < argc; i++)
    if (bench(argv[i]) != 0) return 1;
  return 0;
}
