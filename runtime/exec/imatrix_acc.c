/* See imatrix_acc.h. */
#include "imatrix_acc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fused.h"

/* The entry for weight node w's matrix, with `mats` slices: an existing one of its name (a weight
 * two matmuls read is one entry), else a new one. Its index, or -1 (out of memory). */
static int entry_for(mkc_imatrix_acc *a, int w, int mats) {
  const mkc_weight_info *info = &a->g->weights[a->g->nodes[w].weight];
  int cols = info->cols; /* an _exps tensor's rows are its experts' one after another */
  size_t e = 0;
  while (e < a->s.n && strcmp(a->s.names[e], info->name) != 0) e++;
  if (e == a->s.n) {
    a->s.names[e] = info->name, a->s.cols[e] = cols, a->s.mats[e] = mats, a->s.n++;
    if (!(a->s.sums[e] = calloc((size_t)cols * (size_t)mats, sizeof *a->s.sums[e])) ||
        !(a->s.counts[e] = calloc((size_t)mats, sizeof *a->s.counts[e])))
      return -1;
  }
  return (int)e;
}

int mkc_imatrix_acc_open(mkc_imatrix_acc *a, const mkc_graph *g, int output) {
  memset(a, 0, sizeof *a);
  size_t n = (size_t)g->n_nodes, room = 4 * n + 1; /* a MOE node's 4 entries at most */
  a->g = g;
  if (!(a->entry_of = malloc((n ? n : 1) * sizeof *a->entry_of)) ||
      !(a->s.names = calloc(room, sizeof *a->s.names)) ||
      !(a->s.cols = calloc(room, sizeof *a->s.cols)) ||
      !(a->s.mats = calloc(room, sizeof *a->s.mats)) ||
      !(a->s.sums = calloc(room, sizeof *a->s.sums)) ||
      !(a->s.counts = calloc(room, sizeof *a->s.counts)))
    return -1;
  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    a->entry_of[id] = -1;
    if (nd->op == MKC_OP_MOE) {
      /* the router, then gate, up and down, each expert a slice: four entries in a row */
      int first = entry_for(a, nd->in[1], 1);
      for (int k = 2; k <= 4 && first >= 0; k++)
        if (entry_for(a, nd->in[k], nd->experts) != first + k - 1) first = -1;
      if (first < 0) return -1;
      a->entry_of[id] = first;
      continue;
    }
    if (nd->op != MKC_OP_MATMUL) continue;
    const mkc_weight_info *w = &g->weights[g->nodes[nd->in[1]].weight];
    if (strncmp(w->name, "blk.", 4) != 0 && !(output && strcmp(w->name, "output.weight") == 0))
      continue;
    if ((a->entry_of[id] = entry_for(a, nd->in[1], 1)) < 0) return -1;
  }
  return 0;
}

/* Adds the squares of x[0 .. cols) into slice m of entry e, which met `count` more inputs. */
static void add_rows(mkc_imatrix_acc *a, int e, int m, const double *x, long count) {
  double *sum = a->s.sums[e] + (size_t)m * (size_t)a->s.cols[e];
  for (int c = 0; c < a->s.cols[e]; c++) sum[c] += x[c] * x[c];
  a->s.counts[e][m] += count;
}

void mkc_imatrix_acc_add(mkc_imatrix_acc *a, const mkc_ref *r) {
  for (int id = 0; id < a->g->n_nodes; id++) {
    int e = a->entry_of[id];
    if (e < 0) continue;
    const mkc_node *nd = &a->g->nodes[id];
    const double *x = mkc_ref_value(r, nd->in[0]);
    add_rows(a, e, 0, x, 1);
    if (nd->op != MKC_OP_MOE) continue;
    const double *hidden, *ids = mkc_ref_moe(r, id, &hidden);
    for (int k = 0; k < nd->experts_used; k++) {
      int ex = (int)ids[k];
      add_rows(a, e + 1, ex, x, 1);
      add_rows(a, e + 2, ex, x, 1);
      add_rows(a, e + 3, ex, hidden + (size_t)k * (size_t)a->s.cols[e + 3], 1);
    }
  }
}

/* Adds the kernel's float sums of slice m of entry e, count inputs. */
static void add_sums(mkc_imatrix_acc *a, int e, int m, const float *x2, long count) {
  double *sum = a->s.sums[e] + (size_t)m * (size_t)a->s.cols[e];
  for (int c = 0; c < a->s.cols[e]; c++) sum[c] += x2[c];
  a->s.counts[e][m] += count;
}

int mkc_imatrix_acc_add_kernel(mkc_imatrix_acc *a, const float *sums, long tokens) {
  const mkc_graph *g = a->g;
  for (int id = 0; id < g->n_nodes; id++) {
    int e = a->entry_of[id];
    if (e < 0) continue;
    const mkc_node *nd = &g->nodes[id];
    /* a MOE node's: the router's [dim], the experts' [E][dim], their counts [E], down's [E][ffn] */
    size_t at = nd->imatrix, E = nd->op == MKC_OP_MOE ? (size_t)nd->experts : 0;
    size_t dim = (size_t)a->s.cols[e], span = dim + E * dim + E + (E ? E * a->s.cols[e + 3] : 0);
    if (at < g->imatrix_offset || at + span > g->imatrix_offset + g->imatrix_floats) {
      fprintf(stderr, "mkc: error: imatrix: the kernel sums no squares for %s (line %d)\n",
              a->s.names[e], nd->line);
      return -1;
    }
    const float *x2 = sums + (at - g->imatrix_offset);
    add_sums(a, e, 0, x2, tokens);
    const float *counts = x2 + dim + E * dim, *down = counts + E;
    for (size_t ex = 0; ex < E; ex++) {
      long n = (long)counts[ex]; /* whole: at most a chunk's inputs, far below 2^24 */
      add_sums(a, e + 1, (int)ex, x2 + dim + ex * dim, n);
      add_sums(a, e + 2, (int)ex, x2 + dim + ex * dim, n);
      add_sums(a, e + 3, (int)ex, down + ex * (size_t)a->s.cols[e + 3], n);
    }
  }
  return 0;
}

void mkc_imatrix_acc_merge(mkc_imatrix_acc *into, const mkc_imatrix_acc *from) {
  for (size_t e = 0; e < into->s.n; e++)
    for (int m = 0; m < into->s.mats[e]; m++) {
      size_t at = (size_t)m * (size_t)into->s.cols[e];
      for (int c = 0; c < into->s.cols[e]; c++) into->s.sums[e][at + c] += from->s.sums[e][at + c];
      into->s.counts[e][m] += from->s.counts[e][m];
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
  free(a->s.counts[e]);
  size_t rest = a->s.n - e - 1;
  memmove(a->s.names + e, a->s.names + e + 1, rest * sizeof *a->s.names);
  memmove(a->s.cols + e, a->s.cols + e + 1, rest * sizeof *a->s.cols);
  memmove(a->s.mats + e, a->s.mats + e + 1, rest * sizeof *a->s.mats);
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
  for (size_t e = 0; a->s.sums && a->s.counts && e < a->s.n; e++) {
    free(a->s.sums[e]);
    free(a->s.counts[e]);
  }
  free(a->s.sums);
  free(a->s.names);
  free(a->s.cols);
  free(a->s.mats);
  free(a->s.counts);
  free(a->entry_of);
  memset(a, 0, sizeof *a);
}
