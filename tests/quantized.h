/* Which matrices a test's kernel keeps in blocks (an mkc_gen_opts.weight_type
 * callback, for tests with no model file): given the bf16 kernel's graph, for
 * the shapes, Q4_K (or k_type) where the columns are whole 256s; with
 * q6_k_mix, attn_v and ffn_down Q6_K, as Q4_K_M and Q5_K_M files mix them.
 * Where the columns are whole 32s only, llama.cpp's fallback: Q5_0 for Q4_K,
 * Q5_1 for Q5_K, Q8_0 for Q6_K, IQ4_NL for Q2_K and Q3_K. The norms stay bf16. */
#ifndef MKC_TEST_QUANTIZED_H
#define MKC_TEST_QUANTIZED_H

#include <string.h>

#include "codegen/host.h"
#include "formats/dequant.h"

typedef struct quantized_plan {
  const mkc_graph *bf16; /* the same kernel's graph with every weight bf16 */
  int q6_k_mix;
  int k_type;     /* the K type of the other matrices: 0 for Q4_K, or another K type */
  int every_type; /* instead: each kind of matrix its own block type (1: EVERY_TYPE below, 2:
                     EVERY_GRID, 3: EVERY_LOW) */
} quantized_plan;

/* Matrix kinds and the block types every_type gives them, so that one kernel has a decoder of
 * each type the plan does not already give (for NVRTC to compile them all). */
static const struct {
  const char *kind;
  int type;
} EVERY_TYPE[] = {{"attn_q", MKC_GGML_Q5_1},       {"attn_k", MKC_GGML_Q2_K},
                  {"attn_v", MKC_GGML_IQ4_NL},     {"attn_output", MKC_GGML_IQ4_XS},
                  {"ffn_gate", MKC_GGML_Q3_K},     {"ffn_up", MKC_GGML_Q5_0},
                  {"ffn_down", MKC_GGML_Q5_K},     {"token_embd", MKC_GGML_Q4_0},
                  {"output.weight", MKC_GGML_Q4_1}};

/* The same for the IQ1, IQ2 and IQ3 grid types, and MXFP4 (gpt-oss's experts). */
static const struct {
  const char *kind;
  int type;
} EVERY_GRID[] = {{"attn_q", MKC_GGML_IQ2_XXS},     {"attn_k", MKC_GGML_IQ2_XS},
                  {"attn_v", MKC_GGML_IQ2_S},       {"attn_output", MKC_GGML_IQ3_XXS},
                  {"ffn_gate", MKC_GGML_IQ3_S},     {"ffn_up", MKC_GGML_IQ1_S},
                  {"ffn_down", MKC_GGML_MXFP4},     {"token_embd", MKC_GGML_IQ3_S},
                  {"output.weight", MKC_GGML_IQ1_M}};

/* The same for NVFP4 and the types of one or two bits a weight. */
static const struct {
  const char *kind;
  int type;
} EVERY_LOW[] = {{"attn_q", MKC_GGML_NVFP4},      {"attn_k", MKC_GGML_TQ1_0},
                 {"attn_v", MKC_GGML_TQ2_0},      {"attn_output", MKC_GGML_Q1_0},
                 {"ffn_gate", MKC_GGML_Q2_0},     {"ffn_up", MKC_GGML_TQ1_0},
                 {"ffn_down", MKC_GGML_NVFP4},    {"token_embd", MKC_GGML_Q2_0},
                 {"output.weight", MKC_GGML_Q1_0}};

static int quantized_type(void *ctx, const char *name) {
  const quantized_plan *q = ctx;
  for (int i = 0; i < q->bf16->n_weights; i++) {
    const mkc_weight_info *w = &q->bf16->weights[i];
    if (strcmp(w->name, name) != 0 || w->rows == 1) continue;
    if (q->every_type == 1)
      for (size_t k = 0; k < sizeof EVERY_TYPE / sizeof *EVERY_TYPE; k++)
        if (strstr(name, EVERY_TYPE[k].kind)) return w->cols % 256 == 0 ? EVERY_TYPE[k].type : -1;
    if (q->every_type == 2)
      for (size_t k = 0; k < sizeof EVERY_GRID / sizeof *EVERY_GRID; k++)
        if (strstr(name, EVERY_GRID[k].kind)) return w->cols % 256 == 0 ? EVERY_GRID[k].type : -1;
    if (q->every_type == 3)
      for (size_t k = 0; k < sizeof EVERY_LOW / sizeof *EVERY_LOW; k++)
        if (strstr(name, EVERY_LOW[k].kind)) return w->cols % 256 == 0 ? EVERY_LOW[k].type : -1;
    int k = q->q6_k_mix && (strstr(name, "attn_v") || strstr(name, "ffn_down")) ? MKC_GGML_Q6_K
            : q->k_type                                                         ? q->k_type
                                                                                : MKC_GGML_Q4_K;
    if (w->cols % 256 == 0) return k;
    if (w->cols % 32 != 0) return -1;
    return k == MKC_GGML_Q4_K   ? MKC_GGML_Q5_0
           : k == MKC_GGML_Q5_K ? MKC_GGML_Q5_1
           : k == MKC_GGML_Q6_K ? MKC_GGML_Q8_0
                                : MKC_GGML_IQ4_NL; /* Q2_K, Q3_K */
  }
  return -1;
}

#endif
