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
  mkc_imatrix_sums
      s;         /* the entries, in the graph's order, then any loaded (mkc_imatrix_acc_load) */
  size_t cap;    /* entries s's arrays hold */
  int *entry_of; /* [g->n_nodes]: the entry a MATMUL or MOE node feeds (a MOE node's router,
                    then its gate, up and down), else -1 */
  const mkc_graph *g;
  char **owned; /* names made here (fused matrices', loaded entries') */
  size_t n_owned;
} mkc_imatrix_acc;

/* An entry for each collected matmul of g (NULL: none, for mkc_imatrix_acc_load alone). Where the
 * model file d fuses matrices (phi3's attn_qkv, ffn_up: formats/fused.h), their parts feed one
 * entry under the file's name, as llama-imatrix collects the fused matrix (quantize looks it up by
 * that name); d NULL: none fused. 0, or -1 after a message (a is left freeable). */
int mkc_imatrix_acc_open(mkc_imatrix_acc *a, const mkc_graph *g, int output,
                         const struct mkc_model_desc *d);
void mkc_imatrix_acc_add(mkc_imatrix_acc *a, const mkc_ref *r);
/* The same from an imatrix kernel (mkc_gen_opts.imatrix): sums as mkc_session_imatrix took them,
 * over `tokens` inputs. 0, or -1 after a message (a collected matmul the kernel sums nothing for).
 */
int mkc_imatrix_acc_add_kernel(mkc_imatrix_acc *a, const float *sums, long tokens);
/* Adds from's sums and counts into into's (the same graph's). */
void mkc_imatrix_acc_merge(mkc_imatrix_acc *into, const mkc_imatrix_acc *from);
/* Adds a matrix read from a file (llama-imatrix's --in-file): GGUF sums and counts as they are; a
 * .dat's values and calls times chunk_size (its means kept, its calls taken for chunks of that
 * size, as llama-imatrix reads one), a .dat's one count standing for each slice of an entry of
 * several. An entry of a name not here is added. 0, or -1 after a message (an entry of another
 * shape: another model's). */
int mkc_imatrix_acc_load(mkc_imatrix_acc *a, const mkc_imatrix *im, int chunk_size);
/* The most inputs any entry's slice met (llama-imatrix's chunk count is this over the chunk size).
 */
long mkc_imatrix_acc_most(const mkc_imatrix_acc *a);
void mkc_imatrix_acc_free(mkc_imatrix_acc *a);

#endif
