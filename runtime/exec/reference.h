/* The reference executor: the correctness oracle for every emitted kernel.
 * Interprets g->nodes op by op, one token at a time, with no fusion; every
 * value and every sum in double, weights widened from bf16 exactly, its own
 * double KV cache of g->max_ctx positions whose K and V values are rounded to
 * g->kv_dtype as they are appended (bf16, f16; f32: kept as computed), as the
 * kernel's cache stores them. */
#ifndef MKC_REFERENCE_H
#define MKC_REFERENCE_H

#include "codegen/graph.h"
#include "formats/weights.h"

typedef struct mkc_ref mkc_ref;

/* Checks the graph (input ids, sizes, attrs) and binds every WEIGHT node to
 * its tensor. NULL + message on a bad graph or a missing/misshapen weight.
 * g and w must outlive the returned executor. */
mkc_ref *mkc_ref_open(const mkc_graph *g, const mkc_weights *w);

/* Processes one token at position mkc_ref_pos(r), appends its K/V, writes the
 * logits of the next token (g->vocab doubles; logits NULL: none, and the LM
 * head's matmul is skipped, its input computed as ever). Returns 0, or -1 with a
 * message: "mkc: error: context full (N tokens)" when pos == max_ctx, or a
 * token outside the vocab. On error the position does not move. */
int mkc_ref_step(mkc_ref *r, int token, double *logits);

/* Checking a kernel's KV cache. The reference's K and V values are doubles,
 * the kernel's floats a little off them; where the two lie on either side of
 * a rounding midpoint of the KV type they round to neighbouring values, one
 * unit apart, and nothing is wrong, but one such value moves a logit by far
 * more than float arithmetic does. With kv set (the kernel's cache after the
 * step the reference runs next: g->kv_bytes, at the attention nodes' kv_k and
 * kv_v), every K and V value appended is compared with the kernel's: it must
 * be the reference's own rounding, or, for a value within MKC_REF_KV_TIE of
 * its head's largest |value| from a midpoint, the other neighbour, which the
 * reference then stores too (f32: within MKC_REF_KV_TIE of the double).
 * Anything else is counted as a mismatch. NULL (the default): decide alone. */
#define MKC_REF_KV_TIE (1.0 / 16384) /* 2^-14: far above float's discrepancy */

typedef struct mkc_ref_kv_stats {
  long checked;    /* K and V values compared with the kernel's */
  long followed;   /* near-midpoint values stored as the kernel's other neighbour */
  long mismatched; /* values the kernel held otherwise */
  /* How much of MKC_REF_KV_TIE the kernel used: the largest |kernel -
   * reference| (f32), or |reference - midpoint| of a followed value (bf16,
   * f16), over the head's largest |value|. */
  double max_dev;
  char first[160]; /* the first mismatch, described */
} mkc_ref_kv_stats;

void mkc_ref_follow_kv(mkc_ref *r, const void *kv);

/* The feature (MKC_OP_FEATURE) of the next mkc_ref_step: n floats, n the
 * node's size (zeros until set). 0, or -1 with a message: no feature, or n
 * wrong. */
int mkc_ref_set_feature(mkc_ref *r, const float *f, int n);
/* The last step's hidden state: the LM head's input before its norm (*n
 * doubles), or NULL in a graph whose logits are not matmul(rmsnorm(x)). */
const double *mkc_ref_hidden(const mkc_ref *r, int *n);
const mkc_ref_kv_stats *mkc_ref_kv_check(const mkc_ref *r);
/* The last step's output of node id (its n doubles; a matmul's input is its in[0]'s), or NULL for
 * a WEIGHT node: what an importance matrix sums (exec/imatrix_acc.h). */
const double *mkc_ref_value(const mkc_ref *r, int id);
/* A MOE node's last step: its experts_used chosen experts' ids (the returned doubles, the most
 * likely first) and each one's hidden values, the down matrix's input (*hidden: experts_used rows
 * of the experts' width); NULL for another node. */
const double *mkc_ref_moe(const mkc_ref *r, int id, const double **hidden);

int mkc_ref_pos(const mkc_ref *r);
void mkc_ref_truncate(mkc_ref *r, int pos); /* forget tokens >= pos */
/* Sets pos (0..max_ctx): the cache holds positions [0, pos), as after a
 * snapshot's rows were written back (exec/ref_backend.c). */
void mkc_ref_seek(mkc_ref *r, int pos);

/* Layers 0..mkc_ref_layers(r) - 1 may have a cache: layer's K (v = 0) or V
 * (v = 1) values, [max_ctx][*kv_dim] doubles as appended; NULL for a layer
 * without one. A recurrent layer's rows are its convolution's input at each
 * position (v = 0) and its state after each position (v = 1), so a rollback
 * is a move of pos as for attention. Snapshots copy rows in and out of it. */
int mkc_ref_layers(const mkc_ref *r);
double *mkc_ref_kv_cache(mkc_ref *r, int layer, int v, int *kv_dim);
void mkc_ref_close(mkc_ref *r);

int mkc_argmax(const double *x, int n); /* first index of the maximum; -1 if n <= 0 */

#endif
