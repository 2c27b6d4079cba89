/* Which matrices a test's kernel keeps in blocks (an mkc_gen_opts.weight_type
 * callback, for tests with no model file): given the bf16 kernel's graph, for
 * the shapes, Q4_K (or k_type) where the columns are whole 256s; with
 * q6_k_mix, attn_v and ffn_down Q6_K, as Q4_K_M and Q5_K_M files mix them.
 * Where the columns are whole 32s only, llama.cpp's fallback: Q5_0 for Q4_K,
 * Q5_1 for Q5_K, Q8_0 for Q6_K (bf16 for Q2_K and Q3_K). The norms stay bf16. */
#ifndef MKC_TEST_QUANTIZED_H
#define MKC_TEST_QUANTIZED_H

#include <string.h>

#include "codegen/host.h"
#include "formats/dequant.h"

typedef struct quantized_plan {
  const mkc_graph *bf16; /* the same kernel's graph with every weight bf16 */
  int q6_k_mix;
  int k_type; /* the K type of the other matrices: 0 for Q4_K, or another K type */
} quantized_plan;

static int quantized_type(void *ctx, const char *name) {
  const quantized_plan *q = ctx;
  for (int i = 0; i < q->bf16->n_weights; i++) {
    const mkc_weight_info *w = &q->bf16->weights[i];
    if (strcmp(w->name, name) != 0 || w->rows == 1) continue;
    int k = q->q6_k_mix && (strstr(name, "attn_v") || strstr(name, "ffn_down")) ? MKC_GGML_Q6_K
            : q->k_type                                                         ? q->k_type
                                                                                : MKC_GGML_Q4_K;
    if (w->cols % 256 == 0) return k;
    if (w->cols % 32 != 0) return -1;
    return k == MKC_GGML_Q4_K   ? MKC_GGML_Q5_0
           : k == MKC_GGML_Q5_K ? MKC_GGML_Q5_1
           : k == MKC_GGML_Q6_K ? MKC_GGML_Q8_0
                                : -1; /* Q2_K, Q3_K: llama.cpp's IQ4_NL, not read here */
  }
  return -1;
}

#endif
