/* The layer loop (codegen/fold.lua) against the kernel written out stage by
 * stage: for each preset, runtime/codegen/unfold.c's reading of the folded
 * kernel is, from mkc_step on, the very text codegen writes with
 * MKC_UNFOLD=1 (two implementations: Lua folds, C unfolds, and the Lua
 * emitter's own unfolded text is the oracle). A planted change to one table
 * value must show in the unfolded text; malformed loops are refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/host.h"
#include "codegen/unfold.h"

/* The kernel for preset, folded or not; NULL on a codegen error. */
static char *gen(const char *preset, int draft_max, int unfolded) {
  char graph[1024];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  if (unfolded)
    setenv("MKC_UNFOLD", "1", 1);
  else
    unsetenv("MKC_UNFOLD");
  mkc_gen_opts o = {.graph_path = graph, .preset = preset, .draft_max = draft_max};
  mkc_graph g;
  mkc_kernel_src src;
  int rc = mkc_codegen(&o, &g, &src);
  unsetenv("MKC_UNFOLD");
  if (rc != 0) return NULL;
  char *s = strdup(src.source);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  return s;
}

static const char *kernel_start(const char *s) {
  const char *k = s ? strstr(s, "\nMKC_KERNEL mkc_step") : NULL;
  return k ? k : "";
}

/* The first line where a and b differ, for the failure message. */
static void first_difference(const char *a, const char *b, char *out, size_t n) {
  int line = 1;
  while (*a && *a == *b) line += *a == '\n', a++, b++;
  snprintf(out, n, "line %d of the kernel: \"%.60s\" vs \"%.60s\"", line, a, b);
}

/* The loop's passes and stages from its header comment, or 0. */
static int passes(const char *s, int *period) {
  const char *h = strstr(s, "/* layer loop: stages ");
  int first, last, count;
  if (!h || sscanf(h, "/* layer loop: stages %d-%d are %d passes of the %d", &first, &last, &count,
                   period) != 4)
    return 0;
  return count;
}

static void check_preset(const char *preset, int draft_max, int want_passes) {
  char *folded = gen(preset, draft_max, 0), *plain = gen(preset, draft_max, 1);
  if (!CHECK(folded && plain, "%s: codegen", preset)) goto done;
  int period = 0, n = passes(folded, &period);
  CHECK_INT(n, want_passes, "%s (draft_max %d): the layer loop's passes", preset, draft_max);
  CHECK(!strstr(plain, "for (int layer"), "%s: MKC_UNFOLD=1 writes every stage out", preset);
  CHECK(strlen(folded) < strlen(plain), "%s: the folded kernel is shorter (%zu vs %zu bytes)",
        preset, strlen(folded), strlen(plain));
  mkc_unfolded u;
  char why[256], diff[200];
  if (!CHECK(mkc_unfold(folded, &u, why, sizeof why) == 0, "%s: unfolds (%s)", preset, why))
    goto done;
  CHECK_INT(u.folded, 1, "%s: unfold saw the loop", preset);
  int same = strcmp(kernel_start(u.text), kernel_start(plain)) == 0;
  if (!same) first_difference(kernel_start(u.text), kernel_start(plain), diff, sizeof diff);
  CHECK(same, "%s: the unfolded kernel is codegen's unfolded kernel, byte for byte%s%s", preset,
        same ? "" : ": ", same ? "" : diff);
  /* every line maps to a line of the folded file that exists */
  int lines = 1, mapped = 1;
  for (const char *p = folded; *p; p++) lines += *p == '\n';
  for (int k = 0; k < u.n_lines; k++) mapped &= u.line_of[k] >= 1 && u.line_of[k] <= lines;
  CHECK(mapped, "%s: each of %d unfolded lines maps to a line of the %d-line file", preset,
        u.n_lines, lines);
  mkc_unfolded_free(&u);

  /* planted: the last pass's first table value changed */
  char *row = strstr(folded, "MKC_CONSTANT int mkc_layer_i[");
  char *end = row ? strstr(row, "\n};") : NULL;
  char *last = end;
  while (last && last > row && last[-1] != '\n') last--;
  if (CHECK(last && last[2] == '{', "%s: the table's last row", preset)) {
    char *v = last + 3;
    *v = *v == '9' ? '8' : (char)(*v + 1);
    CHECK(mkc_unfold(folded, &u, why, sizeof why) == 0, "%s planted: unfolds", preset);
    CHECK(strcmp(kernel_start(u.text), kernel_start(plain)) != 0,
          "%s planted: a changed table value shows in the unfolded kernel", preset);
    mkc_unfolded_free(&u);
  }
done:
  free(folded);
  free(plain);
}

/* Malformed loops: refused with a reason, never read past. */
static void check_refusals(void) {
  char *k = gen("tiny", 0, 0);
  if (!CHECK(k != NULL, "codegen tiny")) return;
  static const struct {
    const char *find, *replace, *why;
  } cases[] = {
      {"layer++) { /* layer loop */", "layer++) {", "its for or its end"},
      {"  } /* layer loop */", "  }", "its for or its end"},
      {"are 2 passes of the 5 below", "are 3 passes of the 5 below", "without its stages"},
      {"  /* pass stage 5/5", "  /* pass 5/5", "has 4 stages, its header says 5"},
      {"mkc_layer_i[2][", "mkc_layer_i[3][", "row 2 of a layer table"},
      {"mkc_layer_i[2][", "mkc_layer_i[1][", "other than the loop's"},
      {"lay_i[0]", "lay_i[9999]", "past its table's"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char *at = strstr(k, cases[cases[c].find ? c : 0].find);
    if (!CHECK(at != NULL, "refusal %zu: the tiny kernel has \"%s\"", c, cases[c].find)) continue;
    size_t lf = strlen(cases[c].find), lr = strlen(cases[c].replace), n = strlen(k);
    char *bad = malloc(n - lf + lr + 1);
    memcpy(bad, k, (size_t)(at - k));
    memcpy(bad + (at - k), cases[c].replace, lr);
    strcpy(bad + (at - k) + lr, at + lf);
    mkc_unfolded u;
    char why[256] = "";
    int rc = mkc_unfold(bad, &u, why, sizeof why);
    CHECK(rc == -1 && strstr(why, cases[c].why), "refused: %s -> %s (%s)", cases[c].find,
          cases[c].replace, why);
    if (rc == 0) mkc_unfolded_free(&u);
    free(bad);
  }
  free(k);
}

int main(void) {
  check_preset("tiny", 0, 2);
  check_preset("tiny", 4, 2);
  check_preset("odd", 4, 2);
  check_preset("qwen3-tiny", 2, 2);
  check_preset("swa-tiny", 4, 2);
  check_preset("gemma-tiny", 4, 3);
  check_preset("llama-3.2-1b", 4, 16);
  check_preset("smollm2-135m", 0, 30);
  check_refusals();
  return check_done();
}
