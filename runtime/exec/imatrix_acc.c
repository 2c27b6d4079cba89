/* See imatrix_acc.h. */
#include "imatrix_acc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fused.h"

static int oom(void) {
  fprintf(stderr, "mkc: error: imatrix: out of memory\n");
  return -1;
}

/* A copy of name that the accumulator frees, or NULL. */
static const char *own(mkc_imatrix_acc *a, const char *name) {
  char **owned = realloc(a->owned, (a->n_owned + 1) * sizeof *owned);
  char *copy = strdup(name);
  if (owned) a->owned = owned;
  if (!owned || !copy) {
    free(copy);
    return NULL;
  }
  return a->owned[a->n_owned++] = copy;
}

static long entry_named(const mkc_imatrix_acc *a, const char *name) {
  for (size_t e = 0; e < a->s.n; e++)
    if (strcmp(a->s.names[e], name) == 0) return (long)e;
  return -1;
}

/* The entry called name, of cols columns in `mats` slices: the existing one (a weight two matmuls
 * read is one entry), else a new one (name borrowed: the caller keeps it alive). Its index, or -1
 * after a message (out of memory, or an entry of that name in another shape). */
static long entry_for(mkc_imatrix_acc *a, const char *name, int cols, int mats) {
  long e = entry_named(a, name);
  if (e >= 0) {
    if (a->s.cols[e] != cols || a->s.mats[e] != mats) {
      fprintf(stderr,
              "mkc: error: imatrix: %s is %d columns in %d slices here and %d in %d there: "
              "another model's matrix\n",
              name, a->s.cols[e], a->s.mats[e], cols, mats);
      return -1;
    }
    return e;
  }
  if (a->s.n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 64;
    const char **names = realloc(a->s.names, cap * sizeof *names);
    if (names) a->s.names = (char **)names;
    int *c = realloc(a->s.cols, cap * sizeof *c);
    if (c) a->s.cols = c;
    int *m = realloc(a->s.mats, cap * sizeof *m);
    if (m) a->s.mats = m;
    double **sums = realloc(a->s.sums, cap * sizeof *sums);
    if (sums) a->s.sums = sums;
    long **counts = realloc(a->s.counts, cap * sizeof *counts);
    if (counts) a->s.counts = counts;
    if (!names || !c || !m || !sums || !counts) return oom();
    a->cap = cap;
  }
  e = (long)a->s.n;
  a->s.names[e] = (char *)name, a->s.cols[e] = cols, a->s.mats[e] = mats;
  a->s.sums[e] = calloc((size_t)cols * (size_t)mats, sizeof *a->s.sums[e]);
  a->s.counts[e] = calloc((size_t)mats, sizeof *a->s.counts[e]);
  a->s.n++;
  return a->s.sums[e] && a->s.counts[e] ? e : oom();
}

/* The model file's fused matrices (formats/fused.h): part name -> the fused name, and whether it
 * is the first part. */
typedef struct fused_part {
  const char *part, *fused;
  int first;
} fused_part;

typedef struct fused_map {
  mkc_imatrix_acc *a;
  fused_part *parts;
  size_t n;
  int failed;
} fused_map;

static int note_fused(void *ctx, const char *name, int n, const char *const *names,
                      const int64_t *rows) {
  (void)rows;
  fused_map *m = ctx;
  fused_part *p = realloc(m->parts, (m->n + (size_t)n) * sizeof *p);
  const char *fused = own(m->a, name);
  if (p) m->parts = p;
  if (!p || !fused) return m->failed = oom();
  for (int k = 0; k < n; k++) {
    const char *part = own(m->a, names[k]);
    if (!part) return m->failed = oom();
    m->parts[m->n++] = (fused_part){part, fused, k == 0};
  }
  return 0;
}

/* The entry a matmul of weight node w feeds: its matrix's, under the file's fused name where the
 * file fuses it with others (only the first part feeds it: the parts see the same inputs, and
 * llama-imatrix collects the fused matrix once); -2 for a later part; -1 after a message. */
static long matmul_entry(mkc_imatrix_acc *a, const fused_map *fm, int w, int mats) {
  const mkc_weight_info *info = &a->g->weights[a->g->nodes[w].weight];
  for (size_t i = 0; i < fm->n; i++)
    if (strcmp(fm->parts[i].part, info->name) == 0)
      return fm->parts[i].first ? entry_for(a, fm->parts[i].fused, info->cols, mats) : -2;
  /* an _exps tensor's rows are its experts' one after another */
  return entry_for(a, info->name, info->cols, mats);
}

int mkc_imatrix_acc_open(mkc_imatrix_acc *a, const mkc_graph *g, int output,
                         const struct mkc_model_desc *d) {
  memset(a, 0, sizeof *a);
  a->g = g;
  if (!g) return 0;
  fused_map fm = {.a = a};
  int rc = -1;
  if (!(a->entry_of = malloc((g->n_nodes ? (size_t)g->n_nodes : 1) * sizeof *a->entry_of)) ||
      (d && (mkc_unfuse(d, 0, note_fused, &fm) != 0 || fm.failed))) {
    if (!a->entry_of) oom();
    goto done;
  }
  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    a->entry_of[id] = -1;
    if (nd->op == MKC_OP_MOE) {
      /* the router, then gate, up and down, each expert a slice: four entries in a row */
      long first = matmul_entry(a, &fm, nd->in[1], 1);
      for (int k = 2; k <= 4 && first >= 0; k++)
        if (matmul_entry(a, &fm, nd->in[k], nd->experts) != first + k - 1) first = -1;
      if (first < 0) {
        fprintf(stderr, "mkc: error: imatrix: the experts of line %d share a matrix\n", nd->line);
        goto done;
      }
      a->entry_of[id] = (int)first;
      continue;
    }
    if (nd->op != MKC_OP_MATMUL) continue;
    const mkc_weight_info *w = &g->weights[g->nodes[nd->in[1]].weight];
    if (strncmp(w->name, "blk.", 4) != 0 && !(output && strcmp(w->name, "output.weight") == 0))
      continue;
    long e = matmul_entry(a, &fm, nd->in[1], 1);
    if (e == -1) goto done;
    a->entry_of[id] = e < 0 ? -1 : (int)e;
  }
  rc = 0;
done:
  free(fm.parts);
  return rc;
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

int mkc_imatrix_acc_load(mkc_imatrix_acc *a, const mkc_imatrix *im, int chunk_size) {
  for (size_t i = 0; i < im->n; i++) {
    const mkc_imatrix_entry *f = &im->entries[i];
    /* a .dat's values are means times calls, its one count the calls: each a chunk's worth */
    int mats = im->legacy ? 1 : (int)f->mats, cols = (int)(f->n / (size_t)mats);
    long at = entry_named(a, f->name);
    if (at >= 0 && (size_t)a->s.cols[at] * (size_t)a->s.mats[at] != f->n) {
      fprintf(stderr, "mkc: error: imatrix: %s: %d sums here, %zu in the file: another model's\n",
              f->name, a->s.cols[at] * a->s.mats[at], f->n);
      return -1;
    }
    if (at >= 0 && im->legacy) mats = a->s.mats[at], cols = a->s.cols[at]; /* broadcast */
    const char *name = at >= 0 ? a->s.names[at] : own(a, f->name);
    long e = name ? entry_for(a, name, cols, mats) : oom();
    if (e < 0) return -1;
    double scale = im->legacy ? chunk_size : 1;
    for (size_t j = 0; j < f->n; j++) a->s.sums[e][j] += f->sums[j] * scale;
    for (int m = 0; m < mats; m++)
      a->s.counts[e][m] += (long)(f->counts[im->legacy ? 0 : m] * scale);
  }
  return 0;
}

long mkc_imatrix_acc_most(const mkc_imatrix_acc *a) {
  long most = 0;
  for (size_t e = 0; e < a->s.n; e++)
    for (int m = 0; m < a->s.mats[e]; m++)
      if (a->s.counts[e][m] > most) most = a->s.counts[e][m];
  return most;
}

void mkc_imatrix_acc_free(mkc_imatrix_acc *a) {
  for (size_t i = 0; i < a->n_owned; i++) free(a->owned[i]);
  free(a->owned);
  for (size_t e = 0; e < a->s.n; e++) {
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
