/* libFuzzer target for llama-perplexity's multiple-choice datasets
 * (cli/choice_tasks.h, perplexity --hellaswag and --winogrande): any bytes
 * parse as each or are refused with a message, never read past the input;
 * a parsed task's strings lie inside it and are NUL-terminated there, its
 * gold index or answer in range; and as a --multiple-choice file, each task
 * read in turn and at its position. Seeds in fuzz/corpus/choice_tasks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/choice_tasks.h"

static void check(int ok) {
  if (!ok) abort();
}

/* s lies inside [base, base + size] and ends there. */
static void inside(const char *s, const char *base, size_t size) {
  check(s >= base && s <= base + size);
  check(memchr(s, '\0', (size_t)(base + size + 1 - s)) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* size bytes and the NUL the readers add: reading past them is an overflow ASan sees */
  char *a = malloc(size + 1), *b = malloc(size + 1);
  if (!a || !b) return free(a), free(b), 0;
  memcpy(a, data, size), a[size] = '\0';
  memcpy(b, data, size), b[size] = '\0';
  mkc_hellaswag_task *h;
  int n;
  if (mkc_hellaswag_parse(a, size, "fuzz", &h, &n) == 0) {
    check(n >= 1);
    for (int t = 0; t < n; t++) {
      check(h[t].gold >= 0 && h[t].gold <= 3 && h[t].line == 6 * t + 1);
      inside(h[t].context, a, size);
      for (int e = 0; e < 4; e++) inside(h[t].ending[e], a, size);
    }
    free(h);
  }
  mkc_winogrande_task *w;
  if (mkc_winogrande_parse(b, size, "fuzz", &w, &n) == 0) {
    check(n >= 1);
    for (int t = 0; t < n; t++) {
      check(w[t].answer == 1 || w[t].answer == 2);
      inside(w[t].first, b, size), inside(w[t].second, b, size);
      inside(w[t].choice[0], b, size), inside(w[t].choice[1], b, size);
    }
    free(w);
  }
  /* --multiple-choice's binary file: every task read one after another and at its position */
  if (mkc_mc_count(data, size, "fuzz", &n) == 0) {
    size_t at = 4 + 4 * (size_t)n;
    for (int i = 0; i < n; i++) {
      mkc_mc_task t;
      size_t pos = mkc_mc_position(data, i);
      check(pos < size);
      if (mkc_mc_read(data, size, &at, "fuzz", i, &t) == 0) {
        check(at <= size && t.n_answers >= 1 && t.n_answers <= 100 && t.question[0]);
        for (int e = 0; e < t.n_answers; e++) check(t.answers[e][0] != '\0');
        mkc_mc_free(&t);
      }
      if (mkc_mc_read(data, size, &pos, "fuzz", i, &t) == 0) mkc_mc_free(&t);
    }
  }
  free(a), free(b);
  return 0;
}
