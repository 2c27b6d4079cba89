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

int mkc_bench_stages(mkc_session *s, const mkc_graph *g, const char *source, const int *prompt,
                     int n_prompt, int n_gen, const mkc_sampling *greedy,
                     const mkc_sampling *sampled, double copy_gbs) {
  int n = g->n_stages, rc = -1, k = g->t_max - 1; /* k: the verify column's drafts */
  stage_sums a = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double))};
  a.one = calloc((size_t)n, sizeof(double));
  stage_sums b = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double)), .one = a.one};
  stage_sums v = {.s = s, .n = n, .ns = calloc((size_t)n, sizeof(double)), .one = a.one};
  mkc_stage_meta *meta = calloc((size_t)n, sizeof *meta);
  int *out = malloc((size_t)(n_gen + 1) * sizeof *out);
  mkc_drafter *full = k > 0 ? mkc_drafter_full() : NULL;
  if (!a.ns || !a.one || !b.ns || !v.ns || !meta || !out || (k > 0 && !full)) {
    fprintf(stderr, "mkc: error: bench --stages: out of memory\n");
    goto done;
  }
  if (read_stages(source, meta, n) != 0) goto done;
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
  double total_ns = 0, total_bytes = 0;
  printf("\nStages, T = 1 at about position %d, block 0's clock over %d steps (%s); "
         "\"us sampled\": the same run sampled as bench's sampled rows",
         at.pos, a.steps, mkc_session_backend(s));
  if (k > 0)
    printf("; \"us verify%d\": the run greedy with %d drafts every step (%d steps), as bench's "
           "verify row",
           k + 1, k, v.steps);
  char head[32] = "";
  if (k > 0) snprintf(head, sizeof head, " us verify%d |", k + 1);
  printf(":\n\n| stage | kind | first node | us | us sampled |%s bytes | GB/s | us at copy "
         "bandwidth | of that |\n",
         head);
  printf("| ---: | --- | --- | ---: | ---: |%s ---: | ---: | ---: | ---: |\n",
         k > 0 ? " ---: |" : "");
  double total_sampled = 0, total_verify = 0;
  char col[32] = "";
  for (int i = 0; i < n; i++) {
    double us = a.ns[i] / a.steps / 1e3, us_sampled = b.ns[i] / b.steps / 1e3, bytes = 0;
    total_sampled += b.ns[i] / b.steps;
    if (k > 0) {
      total_verify += v.ns[i] / v.steps;
      snprintf(col, sizeof col, " %.2f |", v.ns[i] / v.steps / 1e3);
    }
    for (int r = 0; r < meta[i].n_regions; r++)
      bytes += (double)mkc_qty_eval(meta[i].regions[r].bytes, at);
    total_ns += a.ns[i] / a.steps;
    total_bytes += bytes;
    char floor[32] = "n/a", frac[32] = "n/a";
    if (copy_gbs > 0) {
      double f = bytes / (copy_gbs * 1e3); /* us */
      snprintf(floor, sizeof floor, "%.2f", f);
      if (us > 0) snprintf(frac, sizeof frac, "%.0f%%", 100.0 * f / us);
    }
    printf("| %d | %s | %s | %.2f | %.2f |%s %.0f | %.1f | %s | %s |\n", i + 1, meta[i].kind,
           meta[i].n_nodes > 0 ? meta[i].labels[0] : "-", us, us_sampled, col, bytes,
           us > 0 ? bytes / us / 1e3 : 0.0, floor, frac);
  }
  if (k > 0) snprintf(col, sizeof col, " %.2f |", total_verify / 1e3);
  printf("| all | | | %.2f | %.2f |%s %.0f | %.1f | %s | |\n", total_ns / 1e3, total_sampled / 1e3,
         col, total_bytes, total_ns > 0 ? total_bytes / total_ns : 0.0, copy_gbs > 0 ? "" : "n/a");
  rc = 0;
done:
  for (int i = 0; meta && i < n; i++) mkc_meta_free(&meta[i]);
  free(meta);
  free(a.ns);
  free(a.one);
  free(b.ns);
  free(v.ns);
  free(out);
  if (full) mkc_drafter_close(full);
  return rc;
}
