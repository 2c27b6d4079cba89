/* Embeddings: a text's vector from the model itself, as llama.cpp's and
 * ollama's embedding endpoints give it. Each input's output of the final norm
 * (the LM head's input after output_norm: llama.cpp's result_norm) is pooled
 * over the text: the mean, the first (cls) or the last input's, then
 * normalized as --embd-normalize says (euclidean by default). Generation
 * models' files name no pooling; they pool the last input, as ollama does for
 * them (its runner falls back to the last input's output). */
#ifndef MKC_EMBED_H
#define MKC_EMBED_H

#include "codegen/model_desc.h"
#include "exec/session.h"
#include "formats/weights.h"

/* "mean", "cls", "last" -> enum mkc_pooling; -1 for anything else
 * (model_desc.h's mkc_pooling_name the other way). */
int mkc_pooling_parse(const char *name);

/* The pooling an embedding uses: asked (a flag or a request) when not
 * MKC_POOL_UNSET, else the file's, else last. -1 after a message for one mkc
 * cannot give: none (one vector per input, llama.cpp's --pooling none) or rank
 * (a reranker's classifier head). */
int mkc_pooling_choose(int asked, int file);

/* --embd-normalize's values, as llama.cpp's: -1 none, 0 scaled so the largest
 * |value| is 32760 (int16's range), 1 taxicab, 2 euclidean, p > 2 the p-norm. */
#define MKC_EMBD_NORMALIZE_DEFAULT 2

typedef struct mkc_embedder {
  mkc_session *s; /* NULL: opened by mkc_embedder_init, for mkc_embed_add's rows alone */
  int dim;
  float *norm_w; /* the final norm's weight [dim] */
  double eps;
  float *row; /* [dim]: one input's hidden state */
} mkc_embedder;

/* The final norm of s's graph from w: 0, or -1 after a message (a graph whose
 * logits are not matmul(rmsnorm(x)) has no place for an embedding). */
int mkc_embedder_open(mkc_embedder *e, mkc_session *s, const mkc_weights *w);
/* The same for g's hidden states from elsewhere (a slot kernel's: mkc_slots_hidden), which the
 * caller pools with mkc_embed_add and mkc_embed_end. */
int mkc_embedder_init(mkc_embedder *e, const mkc_graph *g, const mkc_weights *w);
void mkc_embedder_close(mkc_embedder *e);

/* Whether input pos of an n-token text goes into its pooling. */
int mkc_embed_pools(int pooling, int pos, int n);
/* acc[dim] += row (a hidden state, dim floats) through the final norm, in double. */
void mkc_embed_add(const mkc_embedder *e, const float *row, double *acc);
/* The vector of an n-token text from its pooled rows' sum acc: dim floats into out,
 * normalized as mkc_embed does. */
void mkc_embed_end(const mkc_embedder *e, const double *acc, int n, int pooling, int normalize,
                   float *out);

/* Feeds tokens[0..n-1] from position 0 (the session is reset; n within the
 * context) in prompt chunks and writes the pooled, normalized vector: dim
 * floats into out. 0, or -1 after a message. */
int mkc_embed(mkc_embedder *e, const int *tokens, int n, int pooling, int normalize, float *out);

/* v[0..n) normalized as mkc_embed does (exposed for tests). */
void mkc_embd_normalize(float *v, int n, int normalize);

#endif
