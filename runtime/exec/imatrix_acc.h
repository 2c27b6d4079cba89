/* An importance matrix for `mkc imatrix`, summed over a reference executor's steps or taken from
 * an imatrix kernel's sums: each matmul of a layer's weight (blk.*; with output, output.weight
 * too) adds its input's squares column by column and counts its inputs, as llama-imatrix collects
 * them; a MOE node's router every input, and each expert's slice of its _exps tensors the inputs
 * routed to it (llama-imatrix's MUL_MAT_ID entries: a sum and a count an expert). */
#ifndef MKC_IMATRIX_ACC_H
#define MKC_IMATRIX_ACC_H

#include "codegen/graph.h"
#include "exec/reference.h"
#include "formats/imatrix.h"

struct mkc_model_desc;

typedef struct mkc_imatrix_acc {
  mkc_imatrix_sums s; /* the entries, in the graph's order; names borrowed from the graph */
  int *entry_of;      /* [g->n_nodes]: a collected MATMUL node's entry, else -1 */
  const mkc_graph *g;
  char **owned; /* the names mkc_imatrix_acc_fuse made */
  size_t n_owned;
} mkc_imatrix_acc;

/* 0, or -1 (out of memory; a is left freeable). */
int mkc_imatrix_acc_open(mkc_imatrix_acc *a, const mkc_graph *g, int output);
void mkc_imatrix_acc_add(mkc_imatrix_acc *a, const mkc_ref *r);
/* The same from an imatrix kernel (mkc_gen_opts.imatrix): sums as mkc_session_imatrix took them,
 * over `tokens` inputs. 0, or -1 after a message (a collected matmul the kernel sums nothing for).
 */
int mkc_imatrix_acc_add_kernel(mkc_imatrix_acc *a, const float *sums, long tokens);
/* Adds from's sums and counts into into's (the same graph's). */
void mkc_imatrix_acc_merge(mkc_imatrix_acc *into, const mkc_imatrix_acc *from);
/* The model file's fused matrices (phi3's attn_qkv, ffn_up: formats/fused.h) as one entry each,
 * named as the file names them, where the graph reads their parts: the parts see the same
 * inputs, so the fused entry is any part's (llama-imatrix collects the fused matrix; quantize
 * looks it up by that name). Call after the last add or merge. 0, or -1 after a message. */
int mkc_imatrix_acc_fuse(mkc_imatrix_acc *a, const struct mkc_model_desc *d);
void mkc_imatrix_acc_free(mkc_imatrix_acc *a);

#endif
