/* What the samplers the kernel lacks cost on the host, per token (docs/PERF.md): for a
 * vocabulary (a GGUF with a tokenizer), a choice from made-up logits in a free document with
 * each sampler alone, llama.cpp's defaults around it (top-k 40, top-p 0.95, min-p 0.05,
 * temperature 0.8), and with top-k off (every token a candidate), after a window of 4096 tokens
 * (DRY scans its last 64, or all of it). `make build/bench_sample_more`; build/bench_sample_more
 * VOCAB.gguf... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_format.h"
#include "exec/constrain.h"
#include "exec/sample_chain.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"

enum { WINDOW = 4096, REPS = 20 };

static double per_choice(mkc_constraint *c, const float *logits, int n, const int *window,
                         const mkc_sampling *o, const mkc_sampling_more *m) {
  int id;
  double t0 = mkc_seconds();
  for (int r = 0; r < REPS; r++) {
    mkc_constraint_start_free(c, (uint64_t)r + 1);
    mkc_constraint_set_more(c, m);
    mkc_constraint_choose(c, logits, n, window, WINDOW, o, &id, NULL, NULL, NULL);
  }
  return (mkc_seconds() - t0) / REPS;
}

static int bench(const char *path) {
  mkc_gguf *f = mkc_gguf_open(path);
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  if (!t) return 1;
  int n = mkc_tokenizer_n_vocab(t);
  mkc_constraint *c = mkc_json_format_open(t);
  float *logits = malloc((size_t)n * sizeof *logits);
  int *window = malloc(WINDOW * sizeof *window);
  for (int i = 0; i < n; i++) logits[i] = (float)((i * 2654435761u) % 10000) / 1000.0f;
  for (int i = 0; i < WINDOW; i++) window[i] = (int)((i % 97) * 131u % (unsigned)n);
  printf("%s: %d tokens, a window of %d\n", path, n, WINDOW);
  const char *names[] = {"none (the kernel's chain, on the host)",
                         "typical 0.9",
                         "top-n-sigma 1",
                         "XTC 1 at 0.1",
                         "dynamic temperature +-0.5",
                         "mirostat 2",
                         "mirostat 1",
                         "DRY 0.8 (the last 64)",
                         "DRY 0.8 (all 4096)",
                         "all of the chain's"};
  for (int k = 0; k < 2; k++) {
    mkc_sampling o = {.temp = 0.8f,
                      .top_k = k ? 0 : 40,
                      .top_p = 0.95f,
                      .min_p = 0.05f,
                      .repeat_penalty = 1,
                      .repeat_last_n = 64};
    printf("  %s:\n", k ? "top-k off" : "top-k 40, top-p 0.95, min-p 0.05, temperature 0.8");
    for (int s = 0; s < 10; s++) {
      mkc_sampling_more m;
      mkc_sampling_more_init(&m);
      if (s == 1 || s == 9) m.typical_p = 0.9f;
      if (s == 2 || s == 9) m.top_n_sigma = 1;
      if (s == 3 || s == 9) m.xtc_probability = 1;
      if (s == 4 || s == 9) m.dynatemp_range = 0.5f;
      if (s == 5) m.mirostat = 2;
      if (s == 6) m.mirostat = 1;
      if (s == 7 || s == 8 || s == 9) m.dry_multiplier = 0.8f;
      if (s == 8) m.dry_penalty_last_n = -1;
      printf("    %-40s %7.2f ms\n", names[s], per_choice(c, logits, n, window, &o, &m) * 1e3);
    }
  }
  mkc_constraint_close(c);
  free(logits);
  free(window);
  mkc_tokenizer_free(t);
  mkc_gguf_close(f);
  return 0;
}

int main(int argc, char **argv) {
  int rc = argc < 2;
  for (int i = 1; i < argc; i++) rc |= bench(argv[i]);
  if (argc < 2) fprintf(stderr, "usage: bench_sample_more VOCAB.gguf...\n");
  return rc;
}
