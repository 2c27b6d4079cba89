/* See ref_backend.h. */
#include "ref_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_backend {
  mkc_backend base;
  const mkc_graph *g;
  mkc_ref *ref;
  double *ref_logits;    /* [t_max][vocab] */
  float *logits;         /* [t_max][vocab]: the ref's logits as floats */
  float *feature;        /* [t_chunk][g->feature_n]: the next step's (write_feature); NULL: none */
  float *hidden;         /* [t_chunk][dim]: each input's hidden state in the last step */
  int choice[MKC_T_CAP]; /* the last step's greedy choice at each row of logits */
} ref_backend;

static ref_backend *ref(mkc_backend *b) { return (ref_backend *)b; }

/* The most inputs a step takes: a prompt chunk's, or t_max (a graph built by hand has no chunks).
 */
static int step_rows(const mkc_graph *g) { return g->t_chunk > g->t_max ? g->t_chunk : g->t_max; }

/* The kernel's accept rule (templates/accept.cuh) over the ref's choices, written again
 * on purpose: the ref is the oracle the kernel's accept is checked against. */
static int step(mkc_backend *b, mkc_state *st) {
  ref_backend *r = ref(b);
  const mkc_graph *g = r->g;
  const int *inputs = st->inputs;
  int T = st->n_inputs, f = st->n_fixed, t0 = T > g->t_max ? T - 1 : 0;
  int pos = mkc_ref_pos(r->ref), *choice = r->choice;
  if (pos + T > g->max_ctx) {
    st->status = MKC_STATUS_CTX_FULL;
    return 0;
  }
  for (int t = 0; t < T; t++)
    if (inputs[t] < 0 || inputs[t] >= g->vocab) {
      st->status = MKC_STATUS_BAD_INPUT;
      return 0;
    }
  /* as the kernel keeps them: the logits from input t0 on (a prompt chunk: its last), at t - t0 */
  for (int t = 0; t < T; t++) {
    int row = t < t0 ? 0 : t - t0;
    double *lg = r->ref_logits + (size_t)row * g->vocab;
    if ((r->feature &&
         mkc_ref_set_feature(r->ref, r->feature + (size_t)t * g->feature_n, g->feature_n) != 0) ||
        mkc_ref_step(r->ref, inputs[t], lg) != 0) {
      mkc_ref_truncate(r->ref, pos);
      return -1;
    }
    int n;
    const double *h = mkc_ref_hidden(r->ref, &n);
    for (int i = 0; h && i < n && i < g->dim; i++) r->hidden[(size_t)t * g->dim + i] = (float)h[i];
    if (t < t0) continue;
    /* the request's logit bias, added where the kernel's LM head adds it */
    for (int k = 0; k < st->sampling.n_bias; k++)
      lg[st->sampling.bias_id[k]] += st->sampling.bias[k];
    for (int i = 0; i < g->vocab; i++) r->logits[(size_t)row * g->vocab + i] = (float)lg[i];
    choice[row] = mkc_argmax(lg, g->vocab);
  }
  int a = f;
  while (a + 1 < T && inputs[a + 1] == choice[a - t0]) a++;
  for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
  st->n_out = a - f + 1;
  st->n_accepted = a - f;
  st->status = MKC_STATUS_OK;
  st->pos = pos + a + 1;
  mkc_ref_truncate(r->ref, st->pos);
  return 0;
}

static const float *logits(mkc_backend *b, int row) {
  return ref(b)->logits + (size_t)row * ref(b)->g->vocab;
}

static const int *choices(mkc_backend *b) { return ref(b)->choice; }

static void reset(mkc_backend *b) { mkc_ref_truncate(ref(b)->ref, 0); }

static int write_feature(mkc_backend *b, const float *rows, int n, int T) {
  ref_backend *r = ref(b);
  if (!r->feature) {
    r->feature = calloc((size_t)step_rows(r->g) * n, sizeof *r->feature);
    if (!r->feature) {
      fprintf(stderr, "mkc: error: out of memory for a step's feature\n");
      return -1;
    }
  }
  memcpy(r->feature, rows, (size_t)T * n * sizeof *rows);
  return 0;
}

static int hidden(mkc_backend *b, int slot, int t, float *dst) {
  ref_backend *r = ref(b);
  if (slot >= 0) {
    fprintf(stderr,
            "mkc: error: the ref backend keeps the last layer's output only, not layer "
            "%d's\n",
            r->g->keep_layers[slot]);
    return -1;
  }
  memcpy(dst, r->hidden + (size_t)t * r->g->dim, (size_t)r->g->dim * sizeof *dst);
  return 0;
}

static int rewind_to(mkc_backend *b, int pos) {
  mkc_ref_seek(ref(b)->ref, pos);
  return 0;
}

/* A snapshot's store: the reference's doubles, for each layer with a cache
 * K then V, [rows][their width] each (a recurrent layer's: its convolution
 * inputs and its states, exec/reference.h). Written apart from the kernels' layout
 * (backend/kv_rows.c) on purpose; its functions deliberately alike the other
 * backends' (rows of the interface). */
typedef struct ref_store {
  int rows;
  size_t doubles;
  double data[];
} ref_store;

static size_t position_doubles(mkc_ref *x) {
  size_t n = 0;
  int dim;
  for (int l = 0; l < mkc_ref_layers(x); l++)
    for (int v = 0; v < 2; v++)
      if (mkc_ref_kv_cache(x, l, v, &dim)) n += (size_t)dim;
  return n;
}

static void *store_open(mkc_backend *b, int rows) {
  size_t n = (size_t)rows * position_doubles(ref(b)->ref);
  ref_store *st = calloc(1, sizeof *st + n * sizeof(double));
  if (!st) {
    fprintf(stderr, "mkc: error: out of memory for a KV snapshot (%zu doubles)\n", n);
    return NULL;
  }
  st->rows = rows;
  st->doubles = n;
  return st;
}

/* Row `at` of a store's block for (layer, K|V) at `block` doubles, or
 * position `at` of the reference's cache. */
static double *row_at(ref_store *st, size_t block, double *cache, int at, int kv_dim) {
  return st ? st->data + block + (size_t)at * kv_dim : cache + (size_t)at * kv_dim;
}

static int store_copy(mkc_backend *b, void *dst, int dst_at, const void *src, int src_at, int n) {
  mkc_ref *x = ref(b)->ref;
  ref_store *d = dst, *s = (ref_store *)src;
  size_t d_block = 0, s_block = 0;
  int kv_dim;
  for (int l = 0; l < mkc_ref_layers(x); l++)
    for (int v = 0; v < 2; v++) {
      double *cache = mkc_ref_kv_cache(x, l, v, &kv_dim);
      if (!cache) continue;
      memmove(row_at(d, d_block, cache, dst_at, kv_dim), row_at(s, s_block, cache, src_at, kv_dim),
              (size_t)n * kv_dim * sizeof(double));
      if (d) d_block += (size_t)d->rows * kv_dim;
      if (s) s_block += (size_t)s->rows * kv_dim;
    }
  return 0;
}

static void *store_read(mkc_backend *b, const void *store, size_t *bytes) {
  const ref_store *st = store;
  void *copy = malloc(st->doubles ? st->doubles * sizeof(double) : 1);
  if (!copy) {
    fprintf(stderr, "mkc: error: out of memory reading a KV snapshot\n");
    return NULL;
  }
  memcpy(copy, st->data, st->doubles * sizeof(double));
  *bytes = st->doubles * sizeof(double);
  return copy;
}

static int store_write(mkc_backend *b, void *store, const void *host, size_t bytes) {
  ref_store *st = store;
  if (bytes != st->doubles * sizeof(double)) {
    fprintf(stderr, "mkc: error: %zu bytes of KV rows for a store of %zu\n", bytes,
            st->doubles * sizeof(double));
    return -1;
  }
  memcpy(st->data, host, bytes);
  return 0;
}

static void store_close(mkc_backend *b, void *store) { free(store); }

static const char *describe(const mkc_backend *b) { return "reference executor, float64"; }

static void close_ref(mkc_backend *b) {
  ref_backend *r = ref(b);
  if (r->ref) mkc_ref_close(r->ref);
  free(r->ref_logits);
  free(r->logits);
  free(r->feature);
  free(r->hidden);
  free(r);
}

/* This backend's row of the interface: deliberately alike the other backends'. */
static const mkc_backend_ops ref_ops = {
    .name = "ref",
    .step = step,
    .logits = logits,
    .choices = choices,
    .reset = reset,
    .rewind = rewind_to,
    .write_feature = write_feature,
    .hidden = hidden,
    .store_open = store_open,
    .store_copy = store_copy,
    .store_read = store_read,
    .store_write = store_write,
    .store_close = store_close,
    .describe = describe,
    .close = close_ref,
};

mkc_backend *mkc_ref_backend_open(const mkc_graph *g, const mkc_weights *w) {
  ref_backend *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  r->base.ops = &ref_ops;
  r->g = g;
  r->ref = mkc_ref_open(g, w);
  r->ref_logits = malloc((size_t)g->t_max * g->vocab * sizeof *r->ref_logits);
  r->logits = malloc((size_t)g->t_max * g->vocab * sizeof *r->logits);
  r->hidden = calloc((size_t)step_rows(g) * g->dim, sizeof *r->hidden);
  if (!r->ref) goto fail;
  if (!r->ref_logits || !r->logits || !r->hidden) goto oom;
  return &r->base;
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
fail:
  if (r) close_ref(&r->base);
  return NULL;
}

mkc_ref *mkc_ref_backend_executor(mkc_backend *b) {
  return b->ops == &ref_ops ? ref(b)->ref : NULL;
}
