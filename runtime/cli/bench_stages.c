/* bench --stages (see bench_stages.h). */
#include "bench_stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/decode.h"
#include "exec/draft.h"
#include "inspect/inspect.h"

typedef struct stage_sums {
  mkc_session *s;
  int n;
  double *ns; /* [n] summed over steps */
  double *one;
  int steps, failed;
  int pos; /* the session's after the step last summed: a step of several tokens counts once */
} stage_sums;

static int add_step(void *ctx, int id) {
  (void)id;
  stage_sums *a = ctx;
  int pos = mkc_session_pos(a->s);
  if (pos == a->pos) return 0; /* another token of the step just summed */
  a->pos = pos;
  if (mkc_session_stage_ns(a->s, a->one) != 0) {
    a->failed = 1;
    return 1;
  }
  for (int i = 0; i < a->n; i++) a->ns[i] += a->one[i];
  a->steps++;
  return 0;
}

/* The stage comments of the kernel source, in order, parsed as inspect does. */
static int read_stages(const char *source, mkc_stage_meta *meta, int n) {
  const char *at = source;
  char why[256];
  for (int i = 0; i < n; i++) {
    const char *c = strstr(at, "/* stage ");
    const char *end = c ? strstr(c, "*/") : NULL;
    if (!end) return -1;
    char *text = strndup(c, (size_t)(end + 2 - c));
    int rc = text ? mkc_meta_stage(text, &meta[i], why, sizeof why) : -1;
    free(text);
    if (rc != 0) {
      fprintf(stderr, "mkc: error: bench --stages: stage %d's comment: %s\n", i + 1, why);
      return -1;
    }
    at = end;
  }
  return 0;
}

/* Decodes the run once under the session's current options, each stage's
 * time summed into a->ns; with drafter (mkc_drafter_full), every step
 * verifies draft_max drafts. 0, or -1 after printing why. */
static int time_run(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt, int n_gen,
                    mkc_drafter *drafter, int draft_max, stage_sums *a, int *out) {
  mkc_decode_opts o = {.on_token = add_step, .ctx = a, .drafter = drafter, .draft_max = draft_max};
  a->pos = -1;
  mkc_decode_stats st;
  mkc_session_reset(s);
  if (mkc_decode_with(s, g, prompt, n_prompt, n_gen, &o, out, &st) != 0) return -1;
  if (a->failed || a->steps == 0) {
    fprintf(stderr, "mkc: error: bench --stages: the %s backend gave no stage times\n",
            mkc_session_backend(s));
    return -1;
  }
  return 0;
}

int mkc_stages_print(const mkc_graph *g, const char *source, int tokens, int pos,
                     const mkc_stage_col *cols, int n_cols, double copy_gbs) {
  int n = g->n_stages;
  mkc_step_point at = {.tokens = tokens, .pos = pos, .blocks = 1};
  if (n_cols > 8) n_cols = 8;
  mkc_stage_meta *meta = calloc((size_t)n, sizeof *meta);
  if (!meta) {
    fprintf(stderr, "mkc: error: --stages: out of memory\n");
    return -1;
  }
  int rc = read_stages(source, meta, n);
  if (rc == 0) {
    printf("| stage | kind | first node |");
    for (int c = 0; c < n_cols; c++) printf(" %s |", cols[c].name);
    printf(" bytes | GB/s | us at copy bandwidth | of that |\n| ---: | --- | --- |");
    for (int c = 0; c < n_cols; c++) printf(" ---: |");
    printf(" ---: | ---: | ---: | ---: |\n");
    double total_bytes = 0, totals[8] = {0}; /* n_cols <= 8 */
    for (int i = 0; i < n; i++) {
      double bytes = 0, us = cols[0].ns[i] / cols[0].steps / 1e3;
      for (int r = 0; r < meta[i].n_regions; r++)
        bytes += (double)mkc_qty_eval(meta[i].regions[r].bytes, at);
      total_bytes += bytes;
      printf("| %d | %s | %s |", i + 1, meta[i].kind,
             meta[i].n_nodes > 0 ? meta[i].labels[0] : "-");
      for (int c = 0; c < n_cols; c++) {
        double t = cols[c].ns[i] / cols[c].steps;
        totals[c] += t;
        printf(" %.2f |", t / 1e3);
      }
      char floor[32] = "n/a", frac[32] = "n/a";
      if (copy_gbs > 0) {
        double f = bytes / (copy_gbs * 1e3); /* us */
        snprintf(floor, sizeof floor, "%.2f", f);
        if (us > 0) snprintf(frac, sizeof frac, "%.0f%%", 100.0 * f / us);
      }
      printf(" %.0f | %.1f | %s | %s |\n", bytes, us > 0 ? bytes / us / 1e3 : 0.0, floor, frac);
    }
    printf("| all | | |");
    for (int c = 0; c < n_cols; c++) printf(" %.2f |", totals[c] / 1e3);
    printf(" %.0f | %.1f | %s | |\n", total_bytes, totals[0] > 0 ? total_bytes / totals[0] : 0.0,
           copy_gbs > 0 ? "" : "n/a");
  }
  for (int i = 0; i < n; i++) mkc_meta_free(&meta[i]);
  free(meta);
  return rc;
}

int mkc_bench_stages(mkc_session *s, const mkc_graph *g, const char *source, const int *prompt,
                     int n_prompt, int n_gen, const mkc_sampling *greedy,
                     const mkc_sampling *sampled, double copy_gbs) {
  int n = g->n_stages, rc = -1, k = g->t_max - 1; /* k: the verify column's drafts */
  stage_sums a = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double))};
  a.one = calloc((size_t)n, sizeof(double));
  stage_sums b = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double)), .one = a.one};
  stage_sums v = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double)), .one = a.one};
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  mkc_drafter *full = k > 0 ? mkc_drafter_full() : NULL;
  if (!a.ns || !a.one || !b.ns || !v.ns || !out || (k > 0 && !full)) {
    fprintf(stderr, "mkc: error: bench --stages: out of memory\n");
    goto done;
  }
  /* the same tokens' positions both ways: the sampled run draws other tokens, which
   * changes no stage's work but the sampler's */
  if (mkc_session_set_sampling(s, greedy) != 0 ||
      time_run(s, g, prompt, n_prompt, n_gen, NULL, 0, &a, out) != 0 ||
      (k > 0 && time_run(s, g, prompt, n_prompt, n_gen, full, k, &v, out) != 0) ||
      mkc_session_set_sampling(s, sampled) != 0 ||
      time_run(s, g, prompt, n_prompt, n_gen, NULL, 0, &b, out) != 0)
    goto done;
  /* bytes at T = 1 and the middle of the run's positions */
  mkc_step_point at = {.tokens = 1, .pos = n_prompt + n_gen / 2, .blocks = 1};
  printf("\nStages, T = 1 at about position %d, block 0's clock over %d steps (%s); "
         "\"us sampled\": the same run sampled as bench's sampled rows",
         at.pos, a.steps, mkc_session_backend(s));
  if (k > 0)
    printf("; \"us verify%d\": the run greedy with %d drafts every step (%d steps), as bench's "
           "verify row",
           k + 1, k, v.steps);
  printf(":\n\n");
  char verify[32];
  snprintf(verify, sizeof verify, "us verify%d", k + 1);
  mkc_stage_col cols[3] = {
      {"us", a.ns, a.steps}, {"us sampled", b.ns, b.steps}, {verify, v.ns, v.steps}};
  if (mkc_stages_print(g, source, at.tokens, at.pos, cols, k > 0 ? 3 : 2, copy_gbs) != 0) goto done;
  rc = 0;
done:
  free(a.ns);
  free(a.one);
  free(b.ns);
  free(v.ns);
  free(out);
  if (full) mkc_drafter_close(full);
  return rc;
}
