/* See imatrix_acc.h. */
#include "imatrix_acc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fused.h"

int mkc_imatrix_acc_open(mkc_imatrix_acc *a, const mkc_graph *g, int output) {
  memset(a, 0, sizeof *a);
  size_t n = (size_t)g->n_nodes;
  a->g = g;
  if (!(a->entry_of = malloc((n ? n : 1) * sizeof *a->entry_of)) ||
      !(a->s.names = calloc(n ? n : 1, sizeof *a->s.names)) ||
      !(a->s.cols = calloc(n ? n : 1, sizeof *a->s.cols)) ||
      !(a->s.sums = calloc(n ? n : 1, sizeof *a->s.sums)) ||
      !(a->s.counts = calloc(n ? n : 1, sizeof *a->s.counts)))
    return -1;
  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    a->entry_of[id] = -1;
    if (nd->op != MKC_OP_MATMUL) continue;
    const mkc_weight_info *w = &g->weights[g->nodes[nd->in[1]].weight];
    if (strncmp(w->name, "blk.", 4) != 0 && !(output && strcmp(w->name, "output.weight") == 0))
      continue;
    size_t e = 0; /* a weight two matmuls read is one entry */
    while (e < a->s.n && strcmp(a->s.names[e], w->name) != 0) e++;
    if (e == a->s.n) {
      a->s.names[e] = w->name, a->s.cols[e] = w->cols, a->s.n++;
      if (!(a->s.sums[e] = calloc((size_t)w->cols, sizeof *a->s.sums[e]))) return -1;
    }
    a->entry_of[id] = (int)e;
  }
  return 0;
}

void mkc_imatrix_acc_add(mkc_imatrix_acc *a, const mkc_ref *r) {
  for (int id = 0; id < a->g->n_nodes; id++) {
    int e = a->entry_of[id];
    if (e < 0) continue;
    const double *x = mkc_ref_value(r, a->g->nodes[id].in[0]);
    double *sum = a->s.sums[e];
    for (int c = 0; c < a->s.cols[e]; c++) sum[c] += x[c] * x[c];
    a->s.counts[e]++;
  }
}

void mkc_imatrix_acc_merge(mkc_imatrix_acc *into, const mkc_imatrix_acc *from) {
  for (size_t e = 0; e < into->s.n; e++) {
    for (int c = 0; c < into->s.cols[e]; c++) into->s.sums[e][c] += from->s.sums[e][c];
    into->s.counts[e] += from->s.counts[e];
  }
}

static long entry_named(const mkc_imatrix_acc *a, const char *name) {
  for (size_t e = 0; e < a->s.n; e++)
    if (strcmp(a->s.names[e], name) == 0) return (long)e;
  return -1;
}

/* Drops entry e (its sums freed), the later ones moved up. */
static void drop_entry(mkc_imatrix_acc *a, size_t e) {
  free(a->s.sums[e]);
  size_t rest = a->s.n - e - 1;
  memmove(a->s.names + e, a->s.names + e + 1, rest * sizeof *a->s.names);
  memmove(a->s.cols + e, a->s.cols + e + 1, rest * sizeof *a->s.cols);
  memmove(a->s.sums + e, a->s.sums + e + 1, rest * sizeof *a->s.sums);
  memmove(a->s.counts + e, a->s.counts + e + 1, rest * sizeof *a->s.counts);
  a->s.n--;
}

/* mkc_unfuse's call for one fused matrix: its parts' entries become one, under its name. */
static int fuse_one(void *ctx, const char *name, int n, const char *const *names,
                    const int64_t *rows) {
  (void)rows;
  mkc_imatrix_acc *a = ctx;
  long first = entry_named(a, names[0]);
  if (first < 0) return 0; /* not collected (its parts are not matmuls of the graph) */
  char **owned = realloc(a->owned, (a->n_owned + 1) * sizeof *owned);
  char *copy = strdup(name);
  if (owned) a->owned = owned;
  if (!owned || !copy) {
    free(copy);
    fprintf(stderr, "mkc: error: imatrix: out of memory\n");
    return -1;
  }
  a->owned[a->n_owned++] = copy;
  for (int k = 1; k < n; k++) {
    long e = entry_named(a, names[k]);
    if (e < 0) continue;
    drop_entry(a, (size_t)e);
    if (e < first) first--;
  }
  a->s.names[first] = copy;
  return 0;
}

int mkc_imatrix_acc_fuse(mkc_imatrix_acc *a, const struct mkc_model_desc *d) {
  return mkc_unfuse(d, 0, fuse_one, a);
}

void mkc_imatrix_acc_free(mkc_imatrix_acc *a) {
  for (size_t i = 0; i < a->n_owned; i++) free(a->owned[i]);
  free(a->owned);
  for (size_t e = 0; a->s.sums && e < a->s.n; e++) free(a->s.sums[e]);
  free(a->s.sums);
  free(a->s.names);
  free(a->s.cols);
  free(a->s.counts);
  free(a->entry_of);
  memset(a, 0, sizeof *a);
}
