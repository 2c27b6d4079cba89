/* The weight store and the reference executor, checked against oracles
 * written here independently: hand-computed values, direct formulas, and a
 * from-scratch llama forward pass that recomputes the whole sequence. */
#include "codegen/graph.h"
#include "exec/reference.h"
#include "formats/weights.h"

#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Minimal CHECK helpers; the closing line matches tests/check.h. */
static int n_passed, n_failed;
#define CHECK(cond) check((cond), #cond, __FILE__, __LINE__)
static int check(int ok, const char *what, const char *file, int line) {
  if (ok)
    n_passed++;
  else {
    n_failed++;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  }
  return ok;
}
#define CHECK_NEAR(actual, expected, tol)                                                          \
  check_near((actual), (expected), (tol), #actual, __FILE__, __LINE__)
static void check_near(double a, double e, double tol, const char *what, const char *file,
                       int line) {
  int ok = fabs(a - e) <= tol * fmax(1.0, fabs(e));
  if (!check(ok, what, file, line)) fprintf(stderr, "  actual %.17g, expected %.17g\n", a, e);
}
#define CHECK_CONTAINS(s, sub) check_contains((s), (sub), __FILE__, __LINE__)
static void check_contains(const char *s, const char *sub, const char *file, int line) {
  if (!check(strstr(s, sub) != NULL, "message contains expected text", file, line))
    fprintf(stderr, "  message: %s  expected to contain: %s\n", s, sub);
}

/* stderr capture, to compare error messages with the expected text. */
static char captured[8192];
static FILE *capture_file;
static int saved_stderr;
static void capture_begin(void) {
  fflush(stderr);
  capture_file = tmpfile();
  saved_stderr = dup(2);
  dup2(fileno(capture_file), 2);
}
static const char *capture_end(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  rewind(capture_file);
  size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
  captured[n] = 0;
  fclose(capture_file);
  return captured;
}

/* ---- graphs built by hand ---- */

enum { CAP = 128 };

static void graph_init(mkc_graph *g, int vocab, int max_ctx) {
  memset(g, 0, sizeof *g);
  g->nodes = calloc(CAP, sizeof *g->nodes);
  g->weights = calloc(CAP, sizeof *g->weights);
  g->graph_path = strdup("test.graph");
  g->preset = strdup("tiny");
  g->vocab = vocab;
  g->max_ctx = max_ctx;
}

static int add_node(mkc_graph *g, int op, int n, int a, int b, int c) {
  mkc_node *nd = &g->nodes[g->n_nodes];
  memset(nd, 0, sizeof *nd);
  nd->op = op;
  nd->n = n;
  for (int k = 0; k < MKC_NODE_INPUTS; k++) nd->in[k] = -1; /* graph.h: -1 where unused */
  nd->in[0] = a;
  nd->in[1] = b;
  nd->in[2] = c;
  nd->weight = -1;
  nd->line = g->n_nodes + 1;
  return g->n_nodes++;
}

/* A weight with the kernel's padding: rows padded to a multiple of 8. */
static int add_weight(mkc_graph *g, const char *name, int rows, int cols) {
  mkc_weight_info *wi = &g->weights[g->n_weights];
  wi->name = strdup(name);
  wi->rows = rows;
  wi->cols = cols;
  wi->row_stride = (cols + 7) / 8 * 8;
  wi->offset = g->weight_elems;
  g->weight_elems += (size_t)rows * wi->row_stride;
  int id = add_node(g, MKC_OP_WEIGHT, rows, -1, -1, -1);
  g->nodes[id].weight = g->n_weights++;
  return id;
}

/* RMSNorm of each run of `group` values of x [n] (group n: the whole vector). */
static int add_group_norm(mkc_graph *g, int x, const char *name, int n, int group, double eps) {
  int id = add_node(g, MKC_OP_RMSNORM, n, x, add_weight(g, name, 1, group), -1);
  g->nodes[id].eps = eps;
  g->nodes[id].group = group;
  return id;
}

static int add_rmsnorm(mkc_graph *g, int x, const char *name, int n, double eps) {
  return add_group_norm(g, x, name, n, n, eps);
}

/* x times weight `name`, plus the bias `bias` [rows] unless it is NULL. */
static int add_linear(mkc_graph *g, int x, const char *name, const char *bias, int rows, int cols) {
  int w = add_weight(g, name, rows, cols);
  return add_node(g, MKC_OP_MATMUL, rows, x, w, bias ? add_weight(g, bias, 1, rows) : -1);
}

static int add_matmul(mkc_graph *g, int x, const char *name, int rows, int cols) {
  return add_linear(g, x, name, NULL, rows, cols);
}

static int add_rope(mkc_graph *g, int x, int heads, int head_dim, double theta, int layout) {
  int id = add_node(g, MKC_OP_ROPE, heads * head_dim, x, -1, -1);
  g->nodes[id].heads = heads;
  g->nodes[id].head_dim = head_dim;
  g->nodes[id].theta = theta;
  g->nodes[id].layout = layout;
  return id;
}

static int add_attention(mkc_graph *g, int q, int k, int v, int layer, int heads, int kv_heads,
                         int head_dim) {
  int id = add_node(g, MKC_OP_ATTENTION, heads * head_dim, q, k, v);
  g->nodes[id].layer = layer;
  g->nodes[id].heads = heads;
  g->nodes[id].kv_heads = kv_heads;
  g->nodes[id].head_dim = head_dim;
  return id;
}

typedef struct llama_dims {
  int vocab, dim, heads, kv_heads, head_dim, ffn, layers, max_ctx, layout;
  double theta, eps;
  int qkv_bias, qk_norm; /* qwen2: Q/K/V biases; qwen3: per-head Q/K norms before RoPE */
} llama_dims;

static void build_llama(mkc_graph *g, const llama_dims *d) {
  char name[64];
  int q_dim = d->heads * d->head_dim, kv_dim = d->kv_heads * d->head_dim;
  graph_init(g, d->vocab, d->max_ctx);
  int tokens = add_node(g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(g, MKC_OP_EMBED, d->dim, add_weight(g, "token_embd.weight", d->vocab, d->dim),
                   tokens, -1);
  for (int l = 0; l < d->layers; l++) {
#define NAME(s) (snprintf(name, sizeof name, "blk.%d." s, l), name)
    char bq[64], bk[64], bv[64];
    snprintf(bq, sizeof bq, "blk.%d.attn_q.bias", l);
    snprintf(bk, sizeof bk, "blk.%d.attn_k.bias", l);
    snprintf(bv, sizeof bv, "blk.%d.attn_v.bias", l);
    int h = add_rmsnorm(g, x, NAME("attn_norm.weight"), d->dim, d->eps);
    int q = add_linear(g, h, NAME("attn_q.weight"), d->qkv_bias ? bq : NULL, q_dim, d->dim);
    int k = add_linear(g, h, NAME("attn_k.weight"), d->qkv_bias ? bk : NULL, kv_dim, d->dim);
    int v = add_linear(g, h, NAME("attn_v.weight"), d->qkv_bias ? bv : NULL, kv_dim, d->dim);
    if (d->qk_norm) {
      q = add_group_norm(g, q, NAME("attn_q_norm.weight"), q_dim, d->head_dim, d->eps);
      k = add_group_norm(g, k, NAME("attn_k_norm.weight"), kv_dim, d->head_dim, d->eps);
    }
    q = add_rope(g, q, d->heads, d->head_dim, d->theta, d->layout);
    k = add_rope(g, k, d->kv_heads, d->head_dim, d->theta, d->layout);
    int att = add_attention(g, q, k, v, l, d->heads, d->kv_heads, d->head_dim);
    int o = add_matmul(g, att, NAME("attn_output.weight"), d->dim, q_dim);
    x = add_node(g, MKC_OP_ADD, d->dim, x, o, -1);
    h = add_rmsnorm(g, x, NAME("ffn_norm.weight"), d->dim, d->eps);
    int gate = add_matmul(g, h, NAME("ffn_gate.weight"), d->ffn, d->dim);
    int up = add_matmul(g, h, NAME("ffn_up.weight"), d->ffn, d->dim);
    int act = add_node(g, MKC_OP_SWIGLU, d->ffn, gate, up, -1);
    int down = add_matmul(g, act, NAME("ffn_down.weight"), d->dim, d->ffn);
    x = add_node(g, MKC_OP_ADD, d->dim, x, down, -1);
#undef NAME
  }
  int h = add_rmsnorm(g, x, "output_norm.weight", d->dim, d->eps);
  int logits = add_matmul(g, h, "output.weight", d->vocab, d->dim);
  add_node(g, MKC_OP_LOGITS, d->vocab, logits, -1, -1);
}

/* ---- the independent llama oracle: whole sequence from scratch, no cache ---- */

static const mkc_tensor *find(const mkc_weights *w, const char *name) {
  for (int i = 0; i < w->n; i++)
    if (strcmp(w->t[i].name, name) == 0) return &w->t[i];
  return NULL;
}

static double wat(const mkc_tensor *t, int r, int c) {
  return mkc_bf16_to_float(t->data[(size_t)r * t->cols + c]);
}

static void o_norm(double *y, const double *x, const mkc_tensor *w, int n, double eps) {
  double ms = 0;
  for (int i = 0; i < n; i++) ms += x[i] * x[i] / n;
  for (int i = 0; i < n; i++) y[i] = x[i] * wat(w, 0, i) / sqrt(ms + eps);
}

static void o_matmul(double *y, const mkc_tensor *w, const double *x) {
  for (int r = 0; r < w->rows; r++) {
    y[r] = 0;
    for (int c = 0; c < w->cols; c++) y[r] += wat(w, r, c) * x[c];
  }
}

/* A projection with its bias (none: b NULL) and its heads normalized one by one (none: n NULL). */
static void o_project(double *y, const mkc_tensor *w, const mkc_tensor *b, const mkc_tensor *n,
                      int hd, double eps, const double *x) {
  o_matmul(y, w, x);
  for (int r = 0; b && r < w->rows; r++) y[r] += wat(b, 0, r);
  for (int h0 = 0; n && h0 < w->rows; h0 += hd) o_norm(y + h0, y + h0, n, hd, eps);
}

/* RoPE as a complex rotation of each pair. */
static void o_rope(double *x, int heads, int hd, double theta, int layout, int pos) {
  for (int h = 0; h < heads; h++)
    for (int j = 0; j < hd / 2; j++) {
      double *a = &x[h * hd + (layout == MKC_ROPE_NEOX ? j : 2 * j)];
      double *b = &x[h * hd + (layout == MKC_ROPE_NEOX ? j + hd / 2 : 2 * j + 1)];
      double complex z = (*a + I * *b) * cexp(I * pos * exp(-2.0 * j / hd * log(theta)));
      *a = creal(z);
      *b = cimag(z);
    }
}

/* Logits after tokens[0..n). */
static void oracle_llama(const mkc_weights *w, const llama_dims *d, const int *tokens, int n,
                         double *logits) {
  int D = d->dim, hd = d->head_dim, qd = d->heads * hd, kvd = d->kv_heads * hd;
  double *x = calloc((size_t)n * D, sizeof *x), *h = calloc(D, sizeof *h);
  double *q = calloc((size_t)n * qd, sizeof *q), *k = calloc((size_t)n * kvd, sizeof *k);
  double *v = calloc((size_t)n * kvd, sizeof *v), *att = calloc(qd, sizeof *att);
  double *o = calloc(D, sizeof *o), *gate = calloc(d->ffn, sizeof *gate);
  double *up = calloc(d->ffn, sizeof *up), *p = calloc(n, sizeof *p);
  char name[64];
  const mkc_tensor *emb = find(w, "token_embd.weight");
  for (int t = 0; t < n; t++)
    for (int i = 0; i < D; i++) x[t * D + i] = wat(emb, tokens[t], i);
  for (int l = 0; l < d->layers; l++) {
#define T(s) (snprintf(name, sizeof name, "blk.%d." s, l), find(w, name))
    for (int t = 0; t < n; t++) {
      o_norm(h, &x[t * D], T("attn_norm.weight"), D, d->eps);
      /* biases and head norms are absent (NULL) where the graph has none */
      const mkc_tensor *wq = T("attn_q.weight"), *bq = T("attn_q.bias"),
                       *nq = T("attn_q_norm.weight");
      const mkc_tensor *wk = T("attn_k.weight"), *bk = T("attn_k.bias"),
                       *nk = T("attn_k_norm.weight");
      const mkc_tensor *wv = T("attn_v.weight"), *bv = T("attn_v.bias");
      o_project(&q[t * qd], wq, bq, nq, hd, d->eps, h);
      o_project(&k[t * kvd], wk, bk, nk, hd, d->eps, h);
      o_project(&v[t * kvd], wv, bv, NULL, hd, d->eps, h);
      o_rope(&q[t * qd], d->heads, hd, d->theta, d->layout, t);
      o_rope(&k[t * kvd], d->kv_heads, hd, d->theta, d->layout, t);
    }
    for (int t = 0; t < n; t++) { /* causal attention, each position in turn */
      for (int hh = 0; hh < d->heads; hh++) {
        int kh = hh / (d->heads / d->kv_heads);
        double z = 0;
        for (int s = 0; s <= t; s++) {
          double dot = 0;
          for (int i = 0; i < hd; i++) dot += q[t * qd + hh * hd + i] * k[s * kvd + kh * hd + i];
          z += p[s] = exp(dot / sqrt(hd)); /* small scores here: no max needed */
        }
        for (int i = 0; i < hd; i++) {
          att[hh * hd + i] = 0;
          for (int s = 0; s <= t; s++) att[hh * hd + i] += p[s] / z * v[s * kvd + kh * hd + i];
        }
      }
      o_matmul(o, T("attn_output.weight"), att);
      for (int i = 0; i < D; i++) x[t * D + i] += o[i];
      o_norm(h, &x[t * D], T("ffn_norm.weight"), D, d->eps);
      o_matmul(gate, T("ffn_gate.weight"), h);
      o_matmul(up, T("ffn_up.weight"), h);
      for (int i = 0; i < d->ffn; i++) gate[i] = gate[i] * up[i] / (1 + exp(-gate[i]));
      o_matmul(o, T("ffn_down.weight"), gate);
      for (int i = 0; i < D; i++) x[t * D + i] += o[i];
    }
#undef T
  }
  o_norm(h, &x[(n - 1) * D], find(w, "output_norm.weight"), D, d->eps);
  o_matmul(logits, find(w, "output.weight"), h);
  free(x), free(h), free(q), free(k), free(v), free(att), free(o), free(gate), free(up), free(p);
}

static double max_rel_diff(const double *a, const double *b, int n) {
  double diff = 0, scale = 0;
  for (int i = 0; i < n; i++) {
    diff = fmax(diff, fabs(a[i] - b[i]));
    scale = fmax(scale, fabs(b[i]));
  }
  return diff / fmax(scale, 1e-300);
}

/* Overwrite a tensor with chosen values (exact in bf16). */
static void set_tensor(mkc_weights *w, const char *name, const float *values) {
  mkc_tensor *t = (mkc_tensor *)find(w, name);
  for (int i = 0; i < t->rows * t->cols; i++) t->data[i] = mkc_float_to_bf16(values[i]);
}

/* ---- tests ---- */

static void test_bf16(void) {
  CHECK(mkc_bf16_to_float(0x3f80) == 1.0f);
  CHECK(mkc_bf16_to_float(0xc020) == -2.5f);
  CHECK(mkc_float_to_bf16(1.0f) == 0x3f80);
  int round_trip_ok = 1;
  for (unsigned h = 0; h < 0x10000; h++) {
    float f = mkc_bf16_to_float((uint16_t)h);
    if (!isnan(f) && mkc_float_to_bf16(f) != h) round_trip_ok = 0;
  }
  CHECK(round_trip_ok);
  CHECK(mkc_float_to_bf16(1.00390625f) == 0x3f80);  /* 1 + 2^-8: tie, stays at even 1.0 */
  CHECK(mkc_float_to_bf16(1.01171875f) == 0x3f82);  /* 1 + 3*2^-8: tie, up to even */
  CHECK(mkc_float_to_bf16(-1.00390625f) == 0xbf80); /* sign does not change the tie rule */
  CHECK(mkc_float_to_bf16(1.0f + 0x1p-8f + 0x1p-16f) == 0x3f81); /* above the tie: up */
  CHECK(mkc_float_to_bf16(1.0f + 0x1p-8f - 0x1p-16f) == 0x3f80); /* below the tie: down */
  CHECK(mkc_float_to_bf16(INFINITY) == 0x7f80);
  CHECK(mkc_float_to_bf16(FLT_MAX) == 0x7f80);
  CHECK(isnan(mkc_bf16_to_float(mkc_float_to_bf16(NAN))));
  CHECK(isnan(mkc_bf16_to_float(mkc_float_to_bf16(-NAN))));
}

static int same_tensor(const mkc_tensor *a, const mkc_tensor *b) {
  return a->rows == b->rows && a->cols == b->cols &&
         memcmp(a->data, b->data, (size_t)a->rows * a->cols * sizeof *a->data) == 0;
}

static void test_random_weights(void) {
  mkc_graph a, b;
  graph_init(&a, 10, 4);
  add_weight(&a, "blk.0.attn_q.weight", 64, 64);
  add_weight(&a, "token_embd.weight", 10, 16);
  add_weight(&a, "output_norm.weight", 1, 16);
  graph_init(&b, 10, 4);
  add_weight(&b, "blk.0.ffn_up.weight", 8, 16);
  add_weight(&b, "output_norm.weight", 1, 16);
  add_weight(&b, "token_embd.weight", 10, 16);
  add_weight(&b, "blk.0.attn_q.weight", 64, 64);
  mkc_weights wa, wb, wc;
  CHECK(mkc_weights_random(&wa, &a, 42) == 0);
  CHECK(mkc_weights_random(&wb, &b, 42) == 0);
  CHECK(mkc_weights_random(&wc, &a, 43) == 0);
  CHECK(wa.n == 3 && wb.n == 4 && wc.n == 3);
  const char *names[] = {"blk.0.attn_q.weight", "token_embd.weight", "output_norm.weight"};
  for (int i = 0; i < 3; i++) {
    CHECK(same_tensor(find(&wa, names[i]), find(&wb, names[i])));  /* order-independent */
    CHECK(!same_tensor(find(&wa, names[i]), find(&wc, names[i]))); /* seed matters */
  }

  const mkc_tensor *norm = find(&wa, "output_norm.weight");
  int in_range = 1, varied = 0;
  for (int i = 0; i < 16; i++) {
    float f = mkc_bf16_to_float(norm->data[i]);
    in_range &= f >= 0.896f && f <= 1.102f; /* 0.9, 1.1 plus half a bf16 ulp */
    varied |= f != mkc_bf16_to_float(norm->data[0]);
  }
  CHECK(in_range && varied);

  const mkc_tensor *emb = find(&wa, "token_embd.weight");
  double abs_sum = 0;
  in_range = 1;
  for (int i = 0; i < 160; i++) {
    float f = mkc_bf16_to_float(emb->data[i]);
    in_range &= fabsf(f) <= 0.1f * (1 + 0x1p-8f);
    abs_sum += fabsf(f);
  }
  CHECK(in_range);
  CHECK_NEAR(abs_sum / 160, 0.05, 0.015); /* E|U(-0.1,0.1)| = 0.05 */

  /* U(-1,1) * sqrt(3/cols) has variance 1/cols: cols * var ~ 1 over 4096 samples. */
  const mkc_tensor *wq = find(&wa, "blk.0.attn_q.weight");
  double bound = sqrt(3.0 / 64) * (1 + 0x1p-8), sum = 0, sum2 = 0;
  in_range = 1;
  for (int i = 0; i < 64 * 64; i++) {
    double f = mkc_bf16_to_float(wq->data[i]);
    in_range &= fabs(f) <= bound;
    sum += f;
    sum2 += f * f;
  }
  CHECK(in_range);
  CHECK_NEAR(64 * sum2 / 4096, 1.0, 0.1);
  CHECK(fabs(sum / 4096) < 0.02);

  mkc_weights_free(&wa), mkc_weights_free(&wb), mkc_weights_free(&wc);
  CHECK(wa.n == 0 && wa.t == NULL);
  mkc_graph_free(&a), mkc_graph_free(&b);
}

static void test_weights_get(void) {
  mkc_graph g;
  graph_init(&g, 10, 4);
  add_weight(&g, "blk.0.attn_q.weight", 8, 16);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 1) == 0);
  const mkc_tensor *t = mkc_weights_get(&w, "blk.0.attn_q.weight", 8, 16);
  CHECK(t && strcmp(t->name, "blk.0.attn_q.weight") == 0 && t->rows == 8 && t->cols == 16);

  capture_begin();
  t = mkc_weights_get(&w, "blk.0.attn_q.weight", 16, 8);
  const char *msg = capture_end();
  CHECK(t == NULL);
  CHECK_CONTAINS(msg, "mkc: error: weight blk.0.attn_q.weight: Expected [16, 8], Actual [8, 16]");

  capture_begin();
  t = mkc_weights_get(&w, "blk.0.attn_k.weight", 8, 16);
  msg = capture_end();
  CHECK(t == NULL);
  CHECK_CONTAINS(msg, "mkc: error: weight blk.0.attn_k.weight: missing");
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

static void test_arena(void) {
  mkc_graph g;
  graph_init(&g, 10, 4);
  add_weight(&g, "blk.0.attn_q.weight", 3, 5); /* stride 8: 3 pad elements a row */
  add_weight(&g, "output_norm.weight", 1, 16); /* no padding */
  add_weight(&g, "blk.0.attn_k.weight", 2, 3);
  g.weights[1].offset += 8; /* a gap between slots must stay zero too */
  g.weights[2].offset += 8;
  g.weight_elems += 16;
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 7) == 0);
  uint16_t *arena = mkc_weights_arena(&w, &g);
  CHECK(arena != NULL);
  if (!arena) return;
  char *covered = calloc(g.weight_elems, 1);
  int rows_ok = 1, pad_zero = 1;
  for (int i = 0; i < g.n_weights; i++) {
    const mkc_weight_info *wi = &g.weights[i];
    const mkc_tensor *t = find(&w, wi->name);
    for (int r = 0; r < wi->rows; r++)
      for (int c = 0; c < wi->cols; c++) {
        size_t at = wi->offset + (size_t)r * wi->row_stride + c;
        rows_ok &= arena[at] == t->data[r * wi->cols + c] && arena[at] != 0;
        covered[at] = 1;
      }
  }
  for (size_t i = 0; i < g.weight_elems; i++) pad_zero &= covered[i] || arena[i] == 0;
  CHECK(rows_ok);
  CHECK(pad_zero);
  CHECK(arena[5] == 0 && arena[6] == 0 && arena[7] == 0 && arena[8] != 0); /* row 0 pad, row 1 */
  free(covered);
  free(arena);

  g.weight_elems -= 17; /* the last slot no longer fits */
  capture_begin();
  arena = mkc_weights_arena(&w, &g);
  const char *msg = capture_end();
  CHECK(arena == NULL);
  CHECK_CONTAINS(msg, "mkc: error: weight blk.0.attn_k.weight: arena slot");
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

static void test_rmsnorm(void) {
  mkc_graph g;
  graph_init(&g, 6, 4);
  int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(&g, MKC_OP_EMBED, 6, add_weight(&g, "token_embd.weight", 3, 6), tokens, -1);
  int y = add_rmsnorm(&g, x, "output_norm.weight", 6, 1e-5);
  add_node(&g, MKC_OP_LOGITS, 6, y, -1, -1);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 3) == 0);
  float emb[18] = {0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 1, -2, 0.5f, 4, 0, -0.25f};
  set_tensor(&w, "token_embd.weight", emb);
  const mkc_tensor *nw = find(&w, "output_norm.weight");
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  double out[6];
  CHECK(mkc_ref_step(r, 1, out) == 0);
  for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], 3.0 / sqrt(9.0 + 1e-5) * wat(nw, 0, i), 1e-14);
  /* mean of squares of (1, -2, .5, 4, 0, -.25) = 21.3125 / 6 */
  CHECK(mkc_ref_step(r, 2, out) == 0);
  for (int i = 0; i < 6; i++)
    CHECK_NEAR(out[i], emb[12 + i] / sqrt(21.3125 / 6 + 1e-5) * wat(nw, 0, i), 1e-14);
  /* all-zero row: eps keeps it finite and zero */
  CHECK(mkc_ref_step(r, 0, out) == 0);
  CHECK(out[0] == 0 && out[5] == 0);
  mkc_ref_close(r);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

/* Per-head norm: each group of 3 of the 6 values normalized on its own, one weight [3] for all. */
static void test_group_norm(void) {
  mkc_graph g;
  graph_init(&g, 6, 4);
  int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(&g, MKC_OP_EMBED, 6, add_weight(&g, "token_embd.weight", 2, 6), tokens, -1);
  int y = add_group_norm(&g, x, "blk.0.attn_q_norm.weight", 6, 3, 1e-6);
  add_node(&g, MKC_OP_LOGITS, 6, y, -1, -1);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 3) == 0);
  float emb[12] = {0, 0, 0, 0, 0, 0, 1, -2, 0.5f, 4, 0, -0.25f};
  set_tensor(&w, "token_embd.weight", emb);
  const mkc_tensor *nw = find(&w, "blk.0.attn_q_norm.weight");
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  double out[6];
  /* mean squares: (1 + 4 + .25) / 3 and (16 + 0 + .0625) / 3 */
  CHECK(mkc_ref_step(r, 1, out) == 0);
  for (int i = 0; i < 6; i++)
    CHECK_NEAR(out[i], emb[6 + i] / sqrt((i < 3 ? 5.25 : 16.0625) / 3 + 1e-6) * wat(nw, 0, i % 3),
               1e-14);
  mkc_ref_close(r);
  /* a group that does not divide the vector, and a weight of the wrong size */
  const char *expect[2] = {"group 4, eps 1e-06: sizes must agree", "group 2, eps 1e-06"};
  for (int bad = 0; bad < 2; bad++) {
    g.nodes[y].group = bad ? 2 : 4;
    capture_begin();
    r = mkc_ref_open(&g, &w);
    const char *msg = capture_end();
    CHECK(r == NULL);
    CHECK_CONTAINS(msg, "test.graph:5: error: node 4 (rmsnorm): x [6], weight "
                        "blk.0.attn_q_norm.weight [1, 3], output [6]");
    CHECK_CONTAINS(msg, expect[bad]);
  }
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

/* Q/K/V bias: y = W x + b, with values exact in bf16. */
static void test_matmul_bias(void) {
  mkc_graph g;
  graph_init(&g, 3, 4);
  int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(&g, MKC_OP_EMBED, 4, add_weight(&g, "token_embd.weight", 2, 4), tokens, -1);
  int y = add_linear(&g, x, "blk.0.attn_v.weight", "blk.0.attn_v.bias", 3, 4);
  add_node(&g, MKC_OP_LOGITS, 3, y, -1, -1);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 4) == 0);
  const mkc_tensor *b = find(&w, "blk.0.attn_v.bias");
  CHECK(b && b->rows == 1 && b->cols == 3);
  float emb[8] = {0, 0, 0, 0, 1, 2, -1, 0.5f};
  float wv[12] = {1, 0, 0, 0, 0, 1, 1, 0, 0.5f, 0.25f, -2, 4};
  float bias[3] = {0.125f, -1, 3};
  set_tensor(&w, "token_embd.weight", emb);
  set_tensor(&w, "blk.0.attn_v.weight", wv);
  set_tensor(&w, "blk.0.attn_v.bias", bias);
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  double out[3];
  CHECK(mkc_ref_step(r, 0, out) == 0); /* x = 0: the bias alone */
  CHECK(out[0] == 0.125 && out[1] == -1 && out[2] == 3);
  CHECK(mkc_ref_step(r, 1, out) == 0);
  CHECK(out[0] == 1 + 0.125 && out[1] == 2 - 1 - 1 && out[2] == 0.5 + 0.5 + 2 + 2 + 3);
  mkc_ref_close(r);
  /* a bias of the wrong length */
  g.weights[g.nodes[g.nodes[y].in[2]].weight].cols = 2;
  capture_begin();
  r = mkc_ref_open(&g, &w);
  const char *msg = capture_end();
  CHECK(r == NULL);
  CHECK_CONTAINS(msg, "test.graph:6: error: node 5 (matmul): bias (input 2) is node 4, expected an "
                      "earlier weight of [3]");
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

/* tokens -> embed -> rope -> logits, so the logits are the rotated embedding. */
static void test_rope(void) {
  double out[2][8];
  for (int layout = 0; layout < 2; layout++) {
    mkc_graph g;
    graph_init(&g, 8, 8);
    int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
    int x = add_node(&g, MKC_OP_EMBED, 8, add_weight(&g, "token_embd.weight", 5, 8), tokens, -1);
    int y = add_rope(&g, x, 2, 4, 100.0, layout);
    add_node(&g, MKC_OP_LOGITS, 8, y, -1, -1);
    mkc_weights w;
    CHECK(mkc_weights_random(&w, &g, 5) == 0);
    const mkc_tensor *emb = find(&w, "token_embd.weight");
    mkc_ref *r = mkc_ref_open(&g, &w);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(mkc_ref_step(r, 3, out[layout]) == 0); /* pos 0: identity */
    for (int i = 0; i < 8; i++) CHECK(out[layout][i] == wat(emb, 3, i));
    CHECK(mkc_ref_step(r, 1, out[layout]) == 0); /* pos 1 */
    CHECK(mkc_ref_step(r, 3, out[layout]) == 0); /* pos 2 */
    CHECK(mkc_ref_pos(r) == 3);
    /* direct formula: angle_j = p * 100^(-2j/4) = 2 * (1, 0.1) */
    double e[8], expect[8];
    for (int i = 0; i < 8; i++) e[i] = expect[i] = wat(emb, 3, i);
    double angle[2] = {2.0, 0.2};
    for (int h = 0; h < 2; h++)
      for (int j = 0; j < 2; j++) {
        int ia = h * 4 + (layout == MKC_ROPE_NEOX ? j : 2 * j);
        int ib = h * 4 + (layout == MKC_ROPE_NEOX ? j + 2 : 2 * j + 1);
        expect[ia] = e[ia] * cos(angle[j]) - e[ib] * sin(angle[j]);
        expect[ib] = e[ia] * sin(angle[j]) + e[ib] * cos(angle[j]);
      }
    for (int i = 0; i < 8; i++) CHECK_NEAR(out[layout][i], expect[i], 1e-14);
    /* truncate back to pos 2: the same token at the same position gives the same values */
    mkc_ref_truncate(r, 2);
    CHECK(mkc_ref_pos(r) == 2);
    double again[8];
    CHECK(mkc_ref_step(r, 3, again) == 0);
    CHECK(memcmp(again, out[layout], sizeof again) == 0);
    mkc_ref_close(r);
    mkc_weights_free(&w);
    mkc_graph_free(&g);
  }
  double diff = 0;
  for (int i = 0; i < 8; i++) diff = fmax(diff, fabs(out[0][i] - out[1][i]));
  CHECK(diff > 1e-2); /* interleaved and neox pair different elements */
}

/* ---- RoPE scaling: the reference's frequencies against the published formulas ---- */

/* What the reference's rope node of one head does to pair j at position 1:
 * its angle (the pair's frequency) and its length factor (mscale), read off
 * the rotated embedding (1, 1/2) of every pair. */
static mkc_factors copy_factors(const mkc_factors *f) {
  mkc_factors c = {0, f->n > 0 ? malloc((size_t)f->n * sizeof *c.v) : NULL};
  if (c.v) memcpy(c.v, f->v, (size_t)f->n * sizeof *c.v), c.n = f->n;
  return c;
}

static int measure_rope(const mkc_node *attrs, double *freq, double *mscale) {
  int hd = attrs->head_dim;
  mkc_graph g;
  graph_init(&g, hd, 4); /* the logits are the rotated embedding: vocab = head_dim */
  int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(&g, MKC_OP_EMBED, hd, add_weight(&g, "token_embd.weight", 2, hd), tokens, -1);
  int y = add_rope(&g, x, 1, hd, attrs->theta, MKC_ROPE_INTERLEAVED);
  mkc_node *nd = &g.nodes[y];
  nd->rope_scaling = attrs->rope_scaling;
  nd->rope_factor = attrs->rope_factor;
  nd->rope_low_freq_factor = attrs->rope_low_freq_factor;
  nd->rope_high_freq_factor = attrs->rope_high_freq_factor;
  nd->rope_orig_ctx = attrs->rope_orig_ctx;
  nd->rope_beta_fast = attrs->rope_beta_fast;
  nd->rope_beta_slow = attrs->rope_beta_slow;
  nd->rope_ext_factor = attrs->rope_ext_factor;
  nd->rope_attn_factor = attrs->rope_attn_factor;
  nd->rot_dim = attrs->rot_dim;
  nd->rope_short_factor = copy_factors(&attrs->rope_short_factor); /* mkc_graph_free frees them */
  nd->rope_long_factor = copy_factors(&attrs->rope_long_factor);
  add_node(&g, MKC_OP_LOGITS, hd, y, -1, -1);
  mkc_weights w;
  float emb[2 * 256];
  for (int i = 0; i < 2 * hd; i++) emb[i] = i % 2 ? 0.5f : 1.0f;
  int ok = hd <= 256 && mkc_weights_random(&w, &g, 1) == 0;
  if (ok) set_tensor(&w, "token_embd.weight", emb);
  mkc_ref *r = ok ? mkc_ref_open(&g, &w) : NULL;
  double out[256];
  ok = r && mkc_ref_step(r, 0, out) == 0 && mkc_ref_step(r, 1, out) == 0;
  for (int j = 0; ok && j < hd / 2; j++) {
    /* (a + ib)(1 + i/2) = mscale e^(i angle) (1 + i/2) */
    double complex z = (out[2 * j] + I * out[2 * j + 1]) / (1.0 + 0.5 * I);
    freq[j] = carg(z);
    mscale[j] = cabs(z);
  }
  mkc_ref_close(r);
  if (ok) mkc_weights_free(&w);
  mkc_graph_free(&g);
  return ok ? 0 : -1;
}

static mkc_node rope_attrs(int scaling, double theta, int hd, double factor) {
  mkc_node nd = {.theta = theta, .head_dim = hd, .rope_scaling = scaling, .rope_factor = factor};
  return nd;
}

/* transformers' _compute_llama3_parameters, in its own shape: torch.where over
 * the wavelengths, the medium band where neither test holds. */
static double hf_llama3(const mkc_node *a, int j) {
  double inv_freq = 1 / pow(a->theta, 2.0 * j / a->head_dim), wavelen = 2 * M_PI / inv_freq;
  double low_wavelen = a->rope_orig_ctx / a->rope_low_freq_factor;
  double high_wavelen = a->rope_orig_ctx / a->rope_high_freq_factor;
  double llama = wavelen > low_wavelen ? inv_freq / a->rope_factor : inv_freq;
  double smooth = (a->rope_orig_ctx / wavelen - a->rope_low_freq_factor) /
                  (a->rope_high_freq_factor - a->rope_low_freq_factor);
  double smoothed = (1 - smooth) * llama / a->rope_factor + smooth * llama;
  int medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
  return medium ? smoothed : llama;
}

/* transformers' _compute_yarn_parameters (truncate: the default), with
 * llama.cpp's ext_factor and attn_factor (ggml's rope_yarn) on top: 1 and 1
 * are transformers' own. */
static double hf_yarn(const mkc_node *a, int j, double *mscale) {
  int dim = a->head_dim;
  double corr_low =
      dim * log(a->rope_orig_ctx / (a->rope_beta_fast * 2 * M_PI)) / (2 * log(a->theta));
  double corr_high =
      dim * log(a->rope_orig_ctx / (a->rope_beta_slow * 2 * M_PI)) / (2 * log(a->theta));
  double low = fmax(floor(corr_low), 0), high = fmin(ceil(corr_high), dim - 1);
  if (low == high) high += 0.001;
  double ramp = fmin(fmax((j - low) / (high - low), 0), 1);
  double extrapolation = (1 - ramp) * a->rope_ext_factor;
  double pos_freq = pow(a->theta, 2.0 * j / dim);
  *mscale = a->rope_attn_factor * (a->rope_factor <= 1 ? 1 : 0.1 * log(a->rope_factor) + 1);
  return 1 / (a->rope_factor * pos_freq) * (1 - extrapolation) + 1 / pos_freq * extrapolation;
}

/* transformers' _compute_longrope_parameters for a sequence as long as measure_rope's graph's
 * context (4 positions): 1 / (ext_factors * base^(arange(0, dim, 2) / dim)), the long factors
 * past the original context, and attention_factor on cos and sin; the factors a float32 tensor,
 * the attention factor applied to float32 cos and sin. */
static double hf_longrope(const mkc_node *a, int j, double *mscale) {
  const int seq_len = 4;
  const mkc_factors *ext =
      seq_len > a->rope_orig_ctx ? &a->rope_long_factor : &a->rope_short_factor;
  *mscale = (float)a->rope_attn_factor;
  return 1 / ((float)ext->v[j] * pow(a->theta, (double)(2 * j) / a->head_dim));
}

/* transformers' _compute_default_rope_parameters with partial_rotary_factor: 1 / base^(arange(0,
 * dim, 2) / dim) over dim = rot_dim dims; the pairs past them are not rotated (apply_rotary_pos_emb
 * passes q[..., rotary_dim:] through): frequency 0, mscale 1. */
static double hf_partial(const mkc_node *a, int j, double *mscale) {
  *mscale = 1;
  return 2 * j < a->rot_dim ? 1 / pow(a->theta, (double)(2 * j) / a->rot_dim) : 0;
}

/* Every pair's frequency and mscale as the reference applies them vs want(). */
static void check_scaled(const char *label, const mkc_node *a,
                         double (*want)(const mkc_node *, int, double *)) {
  double freq[128], mscale[128];
  if (!CHECK(measure_rope(a, freq, mscale) == 0)) return;
  double worst = 0, worst_m = 0;
  for (int j = 0; j < a->head_dim / 2; j++) {
    double m, f = want(a, j, &m);
    worst = fmax(worst, f != 0 ? fabs(freq[j] - f) / f : fabs(freq[j])); /* 0: not rotated */
    worst_m = fmax(worst_m, fabs(mscale[j] - m));
  }
  if (!check(worst <= 1e-6 && worst_m <= 1e-12, label, __FILE__, __LINE__))
    fprintf(stderr, "  frequencies off by %.3g relative, mscale by %.3g\n", worst, worst_m);
}

static double want_llama3(const mkc_node *a, int j, double *m) {
  *m = 1;
  return hf_llama3(a, j);
}
static double want_linear(const mkc_node *a, int j, double *m) { /* positions / factor */
  *m = 1;
  return pow(a->theta, -2.0 * j / a->head_dim) / a->rope_factor;
}

static void test_rope_scaling(void) {
  /* Llama-3.2-1B: theta 500000, head_dim 64, factor 32, low 1, high 4, original 8192. Pairs
   * j <= 14 are kept (wavelength 2 pi 500000^(j/32) < 8192/4 = 2048), j >= 18 divided by 32
   * (> 8192), and 15..17 mixed: j = 16 by hand, wavelength 2 pi sqrt(500000) = 4442.883,
   * smooth (8192/4442.883 - 1)/3 = 0.2812826, divisor 1/((1 - 0.2812826)/32 + 0.2812826) =
   * 3.292262; the converter's rope_freqs.weight holds the same. */
  mkc_node llama32 = rope_attrs(MKC_ROPE_SCALING_LLAMA3, 500000, 64, 32);
  llama32.rope_low_freq_factor = 1;
  llama32.rope_high_freq_factor = 4;
  llama32.rope_orig_ctx = 8192;
  double freq[128], mscale[128]; /* up to 256-dim heads */
  const double divisor[32] = {1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1,
                              1.6513292457638984,
                              3.2922621029408843,
                              9.666728978753293,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32,
                              32};
  if (CHECK(measure_rope(&llama32, freq, mscale) == 0)) {
    double worst = 0;
    for (int j = 0; j < 32; j++) {
      double base = pow(500000, -j / 32.0);
      worst = fmax(worst, fabs(freq[j] * divisor[j] - base) / base);
      worst = fmax(worst, fabs(mscale[j] - 1));
    }
    CHECK_NEAR(worst, 0, 1e-6); /* Llama 3.2 1B's divisors by hand */
    CHECK_NEAR(divisor[16], 1 / ((1 - 0.2812826) / 32 + 0.2812826), 1e-6);
  }
  check_scaled("llama3, Llama-3.2-1B's parameters: transformers' formula", &llama32, want_llama3);
  /* llama3-tiny's: every band in 8 pairs */
  mkc_node tiny = rope_attrs(MKC_ROPE_SCALING_LLAMA3, 10000, 16, 8);
  tiny.rope_low_freq_factor = 1;
  tiny.rope_high_freq_factor = 4;
  tiny.rope_orig_ctx = 64;
  check_scaled("llama3, llama3-tiny's parameters", &tiny, want_llama3);
  mkc_node wide = rope_attrs(MKC_ROPE_SCALING_LLAMA3, 500000, 128, 8); /* Llama 3.1 8B */
  wide.rope_low_freq_factor = 1;
  wide.rope_high_freq_factor = 4;
  wide.rope_orig_ctx = 8192;
  check_scaled("llama3, Llama-3.1-8B's parameters", &wide, want_llama3);

  mkc_node linear = rope_attrs(MKC_ROPE_SCALING_LINEAR, 10000, 16, 4);
  check_scaled("linear: positions / 4", &linear, want_linear);

  /* YaRN: yarn-tiny's, Qwen2.5's (theta 1e6, 128 dims, x4 past 32768), and llama.cpp's
   * ext_factor / attn_factor away from 1 */
  mkc_node yarn = rope_attrs(MKC_ROPE_SCALING_YARN, 10000, 16, 4);
  yarn.rope_orig_ctx = 64;
  yarn.rope_beta_fast = 32;
  yarn.rope_beta_slow = 1;
  yarn.rope_ext_factor = 1;
  yarn.rope_attn_factor = 1;
  check_scaled("yarn, yarn-tiny's parameters: transformers' formula", &yarn, hf_yarn);
  mkc_node qwen = yarn;
  qwen.theta = 1e6;
  qwen.head_dim = 128;
  qwen.rope_orig_ctx = 32768;
  check_scaled("yarn, Qwen2.5's parameters", &qwen, hf_yarn);
  if (CHECK(measure_rope(&qwen, freq, mscale) == 0))
    CHECK_NEAR(mscale[0], 1 + 0.1 * log(4), 1e-12); /* 1.138629 on cos and sin */
  mkc_node mixed = qwen;
  mixed.rope_ext_factor = 0.5;
  mixed.rope_attn_factor = 2;
  mixed.rope_beta_fast = 16;
  mixed.rope_beta_slow = 2;
  check_scaled("yarn, ext_factor 0.5, attn_factor 2, betas 16/2", &mixed, hf_yarn);

  /* LongRoPE, Phi-3-mini-128k-instruct's attention factor (sqrt(1 + ln 32 / ln 4096)) on 8 pairs:
   * a context within the original one takes the short factors, one past it the long ones */
  double short_f[8] = {1, 1.02, 1.05, 1.1, 1.25, 1.5, 1.9, 2.4};
  double long_f[8] = {1.1, 1.4, 2.2, 3.6, 5.5, 8, 11.5, 16};
  mkc_node lr = rope_attrs(MKC_ROPE_SCALING_LONGROPE, 10000, 16, 0);
  lr.rope_attn_factor = sqrt(1 + log(32) / log(4096));
  lr.rope_short_factor = (mkc_factors){8, short_f};
  lr.rope_long_factor = (mkc_factors){8, long_f};
  lr.rope_orig_ctx = 4; /* measure_rope's context: 4 positions, within */
  check_scaled("longrope within the original context: the short factors", &lr, hf_longrope);
  if (CHECK(measure_rope(&lr, freq, mscale) == 0))
    CHECK_NEAR(freq[7] * 2.4f, pow(10000, -14.0 / 16), 1e-9); /* by hand: the last pair's */
  lr.rope_orig_ctx = 3;                                       /* past it */
  check_scaled("longrope past the original context: the long factors", &lr, hf_longrope);
  if (CHECK(measure_rope(&lr, freq, mscale) == 0)) {
    CHECK_NEAR(freq[7] * 16, pow(10000, -14.0 / 16), 1e-9);
    CHECK_NEAR(mscale[3], 1.1902381181716919, 1e-12); /* Phi-3-mini-128k's 1.19024, a float */
  }
  /* partial RoPE (Phi-4-mini: 96 of 128 dims): 12 of 16, plain and with longrope's 6 factors */
  mkc_node partial = rope_attrs(MKC_ROPE_SCALING_NONE, 10000, 16, 0);
  partial.rot_dim = 12;
  check_scaled("partial RoPE, 12 of 16 dims: theta^(-2j/12), pairs 6 and 7 not rotated", &partial,
               hf_partial);
  if (CHECK(measure_rope(&partial, freq, mscale) == 0))
    CHECK(freq[6] == 0 && freq[7] == 0 && mscale[7] == 1); /* passed through exactly */
  mkc_node partial_lr = lr;
  partial_lr.rot_dim = 12;
  partial_lr.rope_short_factor.n = partial_lr.rope_long_factor.n = 6;
  if (CHECK(measure_rope(&partial_lr, freq, mscale) == 0)) {
    CHECK_NEAR(freq[5] * 8, pow(10000, -10.0 / 12), 1e-9); /* the long list's 6th */
    CHECK(freq[6] == 0 && mscale[6] == 1);
  }
  mkc_node odd_rot = partial;
  odd_rot.rot_dim = 11;
  CHECK(measure_rope(&odd_rot, freq, mscale) != 0); /* an odd count of dims: refused */
  mkc_node short_list = lr;
  short_list.rope_long_factor.n = 7;                   /* a list of head_dim / 2 - 1 */
  CHECK(measure_rope(&short_list, freq, mscale) != 0); /* 7 long factors: refused */
  mkc_node zero = lr;
  double bad_f[8] = {1, 1, 1, 0, 1, 1, 1, 1};
  zero.rope_short_factor = (mkc_factors){8, bad_f};
  CHECK(measure_rope(&zero, freq, mscale) != 0); /* a factor of 0: refused */
}

/* q = k = v = the embedding (identity projections): attention by hand. */
static void test_attention(void) {
  mkc_graph g;
  graph_init(&g, 4, 3);
  int tokens = add_node(&g, MKC_OP_TOKENS, 1, -1, -1, -1);
  int x = add_node(&g, MKC_OP_EMBED, 4, add_weight(&g, "token_embd.weight", 3, 4), tokens, -1);
  int q = add_matmul(&g, x, "blk.0.attn_q.weight", 4, 4);
  int k = add_matmul(&g, x, "blk.0.attn_k.weight", 4, 4);
  int v = add_matmul(&g, x, "blk.0.attn_v.weight", 4, 4);
  int att = add_attention(&g, q, k, v, 0, 1, 1, 4);
  add_node(&g, MKC_OP_LOGITS, 4, att, -1, -1);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 9) == 0);
  float emb[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0.5f, -1, 2, 0.25f};
  float eye[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  set_tensor(&w, "token_embd.weight", emb);
  set_tensor(&w, "blk.0.attn_q.weight", eye);
  set_tensor(&w, "blk.0.attn_k.weight", eye);
  set_tensor(&w, "blk.0.attn_v.weight", eye);
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  double out[4];
  CHECK(mkc_ref_step(r, 2, out) == 0); /* one token: softmax of one score is 1, output = v */
  for (int i = 0; i < 4; i++) CHECK(out[i] == emb[8 + i]);
  /* token 1 at pos 1: scores (e1.e2, e1.e1) / sqrt(4) = (-1/2, 1/2) */
  CHECK(mkc_ref_step(r, 1, out) == 0);
  double p0 = exp(-0.5) / (exp(-0.5) + exp(0.5)), p1 = 1 - p0;
  CHECK_NEAR(out[0], 0.5 * p0, 1e-15);
  CHECK_NEAR(out[1], -p0 + p1, 1e-15);
  CHECK_NEAR(out[2], 2 * p0, 1e-15);
  CHECK_NEAR(out[3], 0.25 * p0, 1e-15);
  /* token 0 at pos 2: scores (0.5, 0, 1) / 2 */
  CHECK(mkc_ref_step(r, 0, out) == 0);
  double s[3] = {exp(0.25), exp(0), exp(0.5)}, z = s[0] + s[1] + s[2];
  CHECK_NEAR(out[0], (0.5 * s[0] + s[2]) / z, 1e-15);
  CHECK_NEAR(out[1], (-s[0] + s[1]) / z, 1e-15);
  CHECK_NEAR(out[2], 2 * s[0] / z, 1e-15);
  CHECK_NEAR(out[3], 0.25 * s[0] / z, 1e-15);

  capture_begin();
  int rc = mkc_ref_step(r, 1, out);
  const char *msg = capture_end();
  CHECK(rc == -1 && mkc_ref_pos(r) == 3);
  CHECK_CONTAINS(msg, "mkc: error: context full (3 tokens)");
  mkc_ref_close(r);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

/* head_dim * 4 heads need not be dim (16): qwen3's are not. */
static void test_llama(int layout, int head_dim, int qkv_bias, int qk_norm) {
  llama_dims d = {.vocab = 13,
                  .dim = 16,
                  .heads = 4,
                  .kv_heads = 2,
                  .head_dim = head_dim,
                  .qkv_bias = qkv_bias,
                  .qk_norm = qk_norm,
                  .ffn = 24,
                  .layers = 2,
                  .max_ctx = 5,
                  .layout = layout,
                  .theta = 10000,
                  .eps = 1e-5};
  mkc_graph g;
  build_llama(&g, &d);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 2024) == 0);
  CHECK((find(&w, "blk.1.attn_v.bias") != NULL) == qkv_bias);
  CHECK((find(&w, "blk.1.attn_k_norm.weight") != NULL) == qk_norm);
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  int tokens[5] = {3, 7, 1, 12, 0};
  double got[13], want[13];
  for (int i = 0; i < 5; i++) {
    CHECK(mkc_ref_step(r, tokens[i], got) == 0);
    oracle_llama(&w, &d, tokens, i + 1, want);
    CHECK(max_rel_diff(got, want, 13) < 1e-12);
  }
  CHECK(mkc_ref_pos(r) == 5);
  capture_begin();
  int rc = mkc_ref_step(r, 1, got);
  const char *msg = capture_end();
  CHECK(rc == -1 && mkc_ref_pos(r) == 5);
  CHECK_CONTAINS(msg, "mkc: error: context full (5 tokens)");

  /* forget tokens 2.. and continue down another branch */
  mkc_ref_truncate(r, 2);
  CHECK(mkc_ref_pos(r) == 2);
  int branch[3] = {3, 7, 9};
  CHECK(mkc_ref_step(r, 9, got) == 0);
  oracle_llama(&w, &d, branch, 3, want);
  CHECK(max_rel_diff(got, want, 13) < 1e-12);
  CHECK(mkc_ref_pos(r) == 3);

  capture_begin();
  int rc_hi = mkc_ref_step(r, 13, got), rc_lo = mkc_ref_step(r, -1, got);
  msg = capture_end();
  CHECK(rc_hi == -1 && rc_lo == -1 && mkc_ref_pos(r) == 3);
  CHECK_CONTAINS(msg, "mkc: error: token 13 outside the vocab [0, 13)");
  mkc_ref_close(r);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

/* The random weights keep a greedy run finite and bounded for thousands of steps. */
static void test_long_run(void) {
  llama_dims d = {.vocab = 64,
                  .dim = 32,
                  .heads = 4,
                  .kv_heads = 2,
                  .head_dim = 8,
                  .ffn = 64,
                  .layers = 2,
                  .max_ctx = 2000,
                  .layout = MKC_ROPE_NEOX,
                  .theta = 10000,
                  .eps = 1e-5};
  mkc_graph g;
  build_llama(&g, &d);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 11) == 0);
  mkc_ref *r = mkc_ref_open(&g, &w);
  CHECK(r != NULL);
  if (!r) return;
  double logits[64], max_abs = 0;
  int token = 1, finite = 1;
  for (int i = 0; i < d.max_ctx; i++) {
    if (mkc_ref_step(r, token, logits) != 0) break;
    for (int j = 0; j < 64; j++) {
      finite &= isfinite(logits[j]);
      max_abs = fmax(max_abs, fabs(logits[j]));
    }
    token = mkc_argmax(logits, 64);
  }
  CHECK(mkc_ref_pos(r) == d.max_ctx);
  CHECK(finite && max_abs < 1e3);
  mkc_ref_close(r);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
}

static void test_graph_errors(void) {
  llama_dims d = {.vocab = 13,
                  .dim = 16,
                  .heads = 4,
                  .kv_heads = 2,
                  .head_dim = 4,
                  .ffn = 24,
                  .layers = 1,
                  .max_ctx = 5,
                  .layout = 0,
                  .theta = 10000,
                  .eps = 1e-5};
  mkc_graph g;
  build_llama(&g, &d);
  mkc_weights w;
  CHECK(mkc_weights_random(&w, &g, 1) == 0);

  /* a matmul whose output length disagrees with its weight */
  int id = -1;
  for (int i = 0; i < g.n_nodes; i++)
    if (g.nodes[i].op == MKC_OP_MATMUL && id < 0) id = i;
  g.nodes[id].n++;
  capture_begin();
  mkc_ref *r = mkc_ref_open(&g, &w);
  const char *msg = capture_end();
  CHECK(r == NULL);
  char expect[128];
  snprintf(expect, sizeof expect, "test.graph:%d: error: node %d (matmul):", id + 1, id);
  CHECK_CONTAINS(msg, expect);
  g.nodes[id].n--;

  /* a weight in the store with another shape than the graph wants */
  mkc_graph g2;
  d.vocab = 14;
  build_llama(&g2, &d);
  capture_begin();
  r = mkc_ref_open(&g2, &w);
  msg = capture_end();
  CHECK(r == NULL);
  CHECK_CONTAINS(msg, "mkc: error: weight token_embd.weight: Expected [14, 16], Actual [13, 16]");
  mkc_graph_free(&g2);

  /* a weight the store does not have */
  mkc_graph g3;
  d.vocab = 13;
  build_llama(&g3, &d);
  free(g3.weights[g3.n_weights - 1].name);
  g3.weights[g3.n_weights - 1].name = strdup("output_tied.weight");
  capture_begin();
  r = mkc_ref_open(&g3, &w);
  msg = capture_end();
  CHECK(r == NULL);
  CHECK_CONTAINS(msg, "mkc: error: weight output_tied.weight: missing");
  mkc_graph_free(&g3);

  /* an input that is not an earlier node, and a graph without logits */
  int saved = g.nodes[id].in[0];
  g.nodes[id].in[0] = id;
  capture_begin();
  r = mkc_ref_open(&g, &w);
  msg = capture_end();
  CHECK(r == NULL);
  CHECK_CONTAINS(msg, "expected an earlier node");
  g.nodes[id].in[0] = saved;
  g.n_nodes--;
  capture_begin();
  r = mkc_ref_open(&g, &w);
  msg = capture_end();
  CHECK(r == NULL);
  CHECK_CONTAINS(msg, "test.graph: error: graph has no logits node");
  g.n_nodes++;
  r = mkc_ref_open(&g, &w); /* restored: opens */
  CHECK(r != NULL);
  mkc_ref_close(r);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
  CHECK(g.nodes == NULL && g.weights == NULL && g.graph_path == NULL && g.n_weights == 0);
}

static void test_misc(void) {
  double x[5] = {1, 3, -2, 3, 2};
  CHECK(mkc_argmax(x, 5) == 1);
  CHECK(mkc_argmax(x, 1) == 0);
  CHECK(mkc_argmax(x, 0) == -1);
  CHECK(strcmp(mkc_op_name(MKC_OP_TOKENS), "tokens") == 0);
  CHECK(strcmp(mkc_op_name(MKC_OP_ATTENTION), "attention") == 0);
  CHECK(strcmp(mkc_op_name(MKC_OP_LOGITS), "logits") == 0);
  CHECK(strcmp(mkc_op_name(MKC_OP_COUNT), "unknown") == 0);
  CHECK(strcmp(mkc_op_name(-1), "unknown") == 0);
}

int main(void) {
  test_bf16();
  test_random_weights();
  test_weights_get();
  test_arena();
  test_rmsnorm();
  test_group_norm();
  test_matmul_bias();
  test_rope();
  test_rope_scaling();
  test_attention();
  test_llama(MKC_ROPE_INTERLEAVED, 4, 0, 0);
  test_llama(MKC_ROPE_NEOX, 4, 0, 0);
  test_llama(MKC_ROPE_NEOX, 4, 1, 0); /* qwen2 */
  test_llama(MKC_ROPE_NEOX, 6, 0, 1); /* qwen3 */
  test_llama(MKC_ROPE_INTERLEAVED, 6, 1, 1);
  test_long_run();
  test_graph_errors();
  test_misc();
  printf("%d passed, %d failed\n", n_passed, n_failed);
  return n_failed != 0;
}
