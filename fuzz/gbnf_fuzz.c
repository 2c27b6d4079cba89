/* libFuzzer target for GBNF grammars (util/gbnf.h): the input is a grammar's
 * text, then a NUL, then an answer to read by it. Any text compiles or is
 * refused with "LINE:COL: why" within the text; a grammar that compiles
 * reads the answer the same with commits after some bytes as from level to
 * level without one (the first byte refused, whether it can end and go on
 * there), and a restart reads it again the same.
 * Seeds in fuzz/corpus/gbnf: grammars as llama.cpp's users write them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/gbnf.h"

#define ANSWER_MAX 512

typedef struct reading {
  long refused;
  int ends, goes_on;
} reading;

/* The answer read from level to level with no commit (commits 0), or with a
 * commit after each byte whose low bit is set (commits 1): the last level's
 * refusal, end and going on. */
static reading read_by(mkc_gbnf_run *r, const uint8_t *s, size_t n, int commits) {
  mkc_gbnf_run_restart(r);
  int lv = 0;
  size_t i = 0;
  while (i < n && mkc_gbnf_run_byte(r, lv, s[i]) == 0) {
    lv = commits && (s[i] & 1) ? (mkc_gbnf_run_commit(r, lv + 1), 0) : lv + 1;
    i++;
  }
  if (i < n) return (reading){(long)i, 0, 0};
  return (reading){-1, mkc_gbnf_run_can_end(r, lv), mkc_gbnf_run_can_go_on(r, lv)};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t n_text = nul ? (size_t)(nul - data) : size;
  const uint8_t *answer = nul ? nul + 1 : data + size;
  size_t n_answer = nul ? size - n_text - 1 : 0;
  if (n_answer > ANSWER_MAX) n_answer = ANSWER_MAX;
  char why[300];
  mkc_gbnf *g = mkc_gbnf_compile((const char *)data, n_text, why, sizeof why);
  if (!g) {
    int line, col, at = 0;
    if (sscanf(why, "%d:%d: %n", &line, &col, &at) != 2 || at == 0 || line < 1 || col < 1 ||
        !why[at]) {
      fprintf(stderr, "refused without LINE:COL: why: '%s'\n", why);
      abort();
    }
    return 0;
  }
  mkc_gbnf_run *r = mkc_gbnf_run_open(g);
  if (!r) { /* its start overflows: rules over MKC_GBNF_DEPTH_MAX deep, or too ambiguous */
    mkc_gbnf_free(g);
    return 0;
  }
  reading a = read_by(r, answer, n_answer, 0);
  int over = mkc_gbnf_run_overflowed(r);
  reading b = read_by(r, answer, n_answer, 1);
  int over_b = mkc_gbnf_run_overflowed(r);
  reading c = read_by(r, answer, n_answer, 0);
  /* an overflow cuts the reading where it happens, which may differ with commits */
  if (!over && !over_b && (a.refused != b.refused || a.ends != b.ends || a.goes_on != b.goes_on)) {
    fprintf(stderr, "levels and commits disagree: refused %ld/%ld, ends %d/%d, goes on %d/%d\n",
            a.refused, b.refused, a.ends, b.ends, a.goes_on, b.goes_on);
    abort();
  }
  if (!over && (c.refused != a.refused || c.ends != a.ends || c.goes_on != a.goes_on)) {
    fprintf(stderr, "a restart reads the answer otherwise\n");
    abort();
  }
  mkc_gbnf_run_close(r);
  mkc_gbnf_free(g);
  return 0;
}
