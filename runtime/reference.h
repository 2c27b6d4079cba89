/* The reference executor: the correctness oracle for every emitted kernel.
 * Interprets g->nodes op by op, one token at a time, with no fusion; every
 * value and every sum in double, weights widened from bf16 exactly, its own
 * double KV cache of g->max_ctx positions. */
#ifndef MKC_REFERENCE_H
#define MKC_REFERENCE_H

#include "graph.h"
#include "weights.h"

typedef struct mkc_ref mkc_ref;

/* Checks the graph (input ids, sizes, attrs) and binds every WEIGHT node to
 * its tensor. NULL + message on a bad graph or a missing/misshapen weight.
 * g and w must outlive the returned executor. */
mkc_ref *mkc_ref_open(const mkc_graph *g, const mkc_weights *w);

/* Processes one token at position mkc_ref_pos(r), appends its K/V, writes the
 * logits of the next token (g->vocab doubles). Returns 0, or -1 with a
 * message: "mkc: error: context full (N tokens)" when pos == max_ctx, or a
 * token outside the vocab. On error the position does not move. */
int mkc_ref_step(mkc_ref *r, int token, double *logits);

int mkc_ref_pos(const mkc_ref *r);
void mkc_ref_truncate(mkc_ref *r, int pos); /* forget tokens >= pos */
void mkc_ref_close(mkc_ref *r);

int mkc_argmax(const double *x, int n); /* first index of the maximum; -1 if n <= 0 */

#endif
