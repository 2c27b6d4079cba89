/* What constrained JSON output costs on the host, per token (docs/PERF.md):
 * for a vocabulary (a GGUF with a tokenizer), the time to sort it, then in
 * five states of an answer the mask of allowed tokens, a sampled choice
 * (llama.cpp's default chain at temperature 0.8) and a greedy one, on
 * made-up logits (a spread of values, so a greedy choice's best tokens are
 * refused outside strings: the slow case). `make build/bench_constrain`;
 * build/bench_constrain [--grammar FILE] VOCAB.gguf... (with a grammar, its
 * documents in the same five states: a JSON grammar's, tests/grammars/json.gbnf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "exec/constrain.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/gbnf.h"
#include "cli/json_format.h"
static int bench(const char *path, const mkc_gbnf *g) {
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
    if (g)
      mkc_constraint_start_grammar(c, g, NULL, 0, 1);
    else
      mkc_constraint_start(c, 1, 1);
    int *ids;
    int k = mkc_tokenizer_encode(t, states[s], strlen(states[s]), 0, 0, &ids);
    for (int i = 0; i < k; i++) mkc_constraint_accept(c, ids[i]);
    int reps = 20, a = 0;
    t0 = mkc_seconds();
    mkc_constraint_mask(c, m, n); /* the state's first: a grammar keeps its mask */
    double t1 = mkc_seconds() - t0;
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
    printf("  after %-16s %6d allowed: mask %.2f ms (again %.2f ms), sampled choice %.2f ms, "
           "greedy %.3f ms\n",
           states[s], a, t1 * 1e3, tm * 1e3, ts * 1e3, tg * 1e3);
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
  mkc_gbnf *g = NULL;
  int first = 1;
  if (argc > 2 && !strcmp(argv[1], "--grammar")) {
    size_t n;
    char *text = mkc_read_file(argv[2], &n), why[300] = "unreadable";
    if (!text || !(g = mkc_gbnf_compile(text, n, why, sizeof why))) {
      fprintf(stderr, "%s:%s\n", argv[2], why);
      return 2;
    }
    free(text);
    first = 3;
  }
  if (argc <= first) {
    fputs("usage: bench_constrain [--grammar FILE] VOCAB.gguf...\n", stderr);
    return 2;
  }
  for (int i = first; i < argc; i++)
    if (bench(argv[i], g) != 0) return 1;
  mkc_gbnf_free(g);
  return 0;
}
