/* Embeddings from the kernel's hidden states (embed.h): the final norm is
 * applied here, in double, to each input's hidden state the session keeps,
 * and pooled over the text. */
#include "embed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mkc_pooling_parse(const char *name) {
  int p = mkc_pooling_from_name(name);
  return p >= MKC_POOL_MEAN && p <= MKC_POOL_LAST ? p : -1;
}

int mkc_pooling_choose(int asked, int file) {
  int p = asked != MKC_POOL_UNSET ? asked : file != MKC_POOL_UNSET ? file : MKC_POOL_LAST;
  if (p == MKC_POOL_NONE && asked == MKC_POOL_UNSET) p = MKC_POOL_LAST; /* a generation model's */
  if (p == MKC_POOL_RANK) {
    fprintf(stderr, "mkc: error: the model's pooling is rank (a reranker): its classifier head "
                    "is not something mkc runs; give --pooling mean, cls or last for an "
                    "embedding of its hidden states\n");
    return -1;
  }
  if (p == MKC_POOL_UNKNOWN) {
    fprintf(stderr, "mkc: error: the model's sentence-transformers pooling is not mean, cls or "
                    "last (max, one of the weighted means, or several at once), which mkc does "
                    "not give; --pooling mean, cls or last pools otherwise\n");
    return -1;
  }
  if (p < MKC_POOL_MEAN || p > MKC_POOL_LAST) {
    fprintf(stderr,
            "mkc: error: pooling %s: an embedding is one vector, pooled by mean, cls or "
            "last\n",
            mkc_pooling_name(p));
    return -1;
  }
  return p;
}

int mkc_embedder_init(mkc_embedder *e, const mkc_graph *g, const mkc_weights *w) {
  memset(e, 0, sizeof *e);
  const mkc_node *norm = mkc_graph_final_norm(g);
  const mkc_node *wn = norm ? &g->nodes[norm->in[1]] : NULL;
  if (!wn || wn->op != MKC_OP_WEIGHT || norm->group != norm->n || norm->n != g->dim) {
    fprintf(stderr,
            "mkc: error: embeddings: %s's logits are not matmul(rmsnorm(x)) of the "
            "model's width: no final norm to take an embedding from\n",
            g->graph_path ? g->graph_path : "the graph");
    return -1;
  }
  const mkc_weight_info *info = &g->weights[wn->weight];
  const mkc_tensor *t = mkc_weights_get(w, info->name, info->rows, info->cols);
  if (!t) return -1;
  e->dim = g->dim;
  e->eps = norm->eps;
  e->norm_w = malloc((size_t)g->dim * sizeof *e->norm_w);
  e->row = malloc((size_t)g->dim * sizeof *e->row);
  if (!e->norm_w || !e->row) {
    fprintf(stderr, "mkc: error: embeddings: out of memory\n");
    mkc_embedder_close(e);
    return -1;
  }
  mkc_tensor_row_f32(t, 0, e->norm_w);
  return 0;
}

int mkc_embedder_open(mkc_embedder *e, mkc_session *s, const mkc_weights *w) {
  if (mkc_embedder_init(e, mkc_session_graph(s), w) != 0) return -1;
  e->s = s;
  return 0;
}

void mkc_embedder_close(mkc_embedder *e) {
  free(e->norm_w);
  free(e->row);
  memset(e, 0, sizeof *e);
}

void mkc_embd_normalize(float *v, int n, int normalize) {
  if (normalize < 0) return;
  double sum = 0;
  for (int i = 0; i < n; i++) {
    double a = fabs(v[i]);
    if (normalize == 0)
      sum = fmax(sum, a);
    else if (normalize == 2)
      sum += a * a;
    else
      sum += pow(a, normalize);
  }
  double norm = normalize == 0   ? sum / 32760.0 /* int16's range, as llama.cpp */
                : normalize == 1 ? sum
                : normalize == 2 ? sqrt(sum)
                                 : pow(sum, 1.0 / normalize);
  if (norm > 0)
    for (int i = 0; i < n; i++) v[i] = (float)(v[i] / norm);
}

int mkc_embed_pools(int pooling, int pos, int n) {
  return pooling == MKC_POOL_MEAN || (pooling == MKC_POOL_CLS && pos == 0) ||
         (pooling == MKC_POOL_LAST && pos == n - 1);
}

void mkc_embed_add(const mkc_embedder *e, const float *row, double *acc) {
  double ss = 0;
  for (int i = 0; i < e->dim; i++) ss += (double)row[i] * row[i];
  double inv = 1.0 / sqrt(ss / e->dim + e->eps);
  for (int i = 0; i < e->dim; i++) acc[i] += row[i] * inv * e->norm_w[i];
}

void mkc_embed_end(const mkc_embedder *e, const double *acc, int n, int pooling, int normalize,
                   float *out) {
  double div = pooling == MKC_POOL_MEAN ? n : 1;
  for (int i = 0; i < e->dim; i++) out[i] = (float)(acc[i] / div);
  mkc_embd_normalize(out, e->dim, normalize);
}

int mkc_embed(mkc_embedder *e, const int *tokens, int n, int pooling, int normalize, float *out) {
  const mkc_graph *g = mkc_session_graph(e->s);
  if (n < 1 || n > g->max_ctx) {
    fprintf(stderr,
            "mkc: error: an embedding of %d tokens: the context holds %d (and at least one is "
            "needed)\n",
            n, g->max_ctx);
    return -1;
  }
  double *acc = calloc((size_t)e->dim, sizeof *acc);
  int rc = acc ? 0 : -1;
  if (rc) fprintf(stderr, "mkc: error: embeddings: out of memory\n");
  mkc_session_reset(e->s);
  for (int pos = 0; rc == 0 && pos < n;) {
    int T = mkc_session_prompt_inputs(e->s, n - pos);
    mkc_step_result r;
    if (mkc_session_step(e->s, tokens + pos, T, T - 1, &r) != 0) {
      rc = -1;
      break;
    }
    if (r.status != MKC_STATUS_OK) {
      fprintf(stderr, "mkc: error: an embedding's step at position %d: %s\n", pos,
              mkc_status_name(r.status));
      rc = -1;
      break;
    }
    for (int t = 0; rc == 0 && t < T; t++)
      if (mkc_embed_pools(pooling, pos + t, n) && (rc = mkc_session_hidden(e->s, t, e->row)) == 0)
        mkc_embed_add(e, e->row, acc);
    pos += T;
  }
  if (rc == 0) mkc_embed_end(e, acc, n, pooling, normalize, out);
  free(acc);
  return rc;
}
