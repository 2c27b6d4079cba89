/* The weight store: named bf16 tensors (seeded random, or read from a GGUF or
 * safetensors file), looked up by name and shape, and packed into the
 * kernel's padded weight arena. */
#ifndef MKC_WEIGHTS_H
#define MKC_WEIGHTS_H

#include <stdint.h>
#include "codegen/graph.h"

typedef struct mkc_tensor {
  char *name;
  int rows, cols;
  /* enum mkc_ggml_type: a block type the kernel reads (mkc_weight_block_type)
   * kept as the model file stores it, or BF16 */
  int type;
  uint16_t *data;        /* BF16: [rows][cols], row-major, unpadded; else NULL */
  unsigned char *blocks; /* a block type: rows x mkc_quant_row_bytes, as stored; else NULL */
} mkc_tensor;

typedef struct mkc_weights {
  int n;
  mkc_tensor *t; /* [n] */
} mkc_weights;

/* Random weights for every entry of g->weights. Each tensor depends only on
 * (seed, name). Scaled so activations stay finite over long runs:
 * "*norm.weight" ~ 1 + U(-0.1, 0.1), "token_embd.*" ~ U(-0.1, 0.1), everything
 * else ~ U(-1, 1) * sqrt(3 / cols). Rounded to bf16; a weight the plan stores
 * in a block type is those bf16 values quantized to it. Returns 0 or -1. */
int mkc_weights_random(mkc_weights *w, const mkc_graph *g, unsigned long long seed);

/* 1 when the kernel reads matrices of this enum mkc_ggml_type in their blocks
 * (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K, IQ1_*, IQ2_*, IQ3_*, IQ4_NL, IQ4_XS):
 * codegen/wtypes.lua lists the same. */
int mkc_weight_block_type(int type);

/* Building a store for g, as every source of weights does: begin makes
 * room for g->n_weights tensors in w (0, or -1 when out of memory), append
 * adds one named and shaped as info, its data allocated but not filled
 * (NULL when out of memory; w stays freeable). Neither prints. */
int mkc_weights_begin(mkc_weights *w, const mkc_graph *g);
mkc_tensor *mkc_weights_append(mkc_weights *w, const mkc_weight_info *info);

/* Row r of t as floats (cols of them): bf16 widened, or blocks dequantized. */
void mkc_tensor_row_f32(const mkc_tensor *t, int r, float *out);

/* The tensor called name with shape [rows][cols]; on a missing or misshapen
 * tensor prints "mkc: error: weight NAME: ..." and returns NULL. */
const mkc_tensor *mkc_weights_get(const mkc_weights *w, const char *name, int rows, int cols);

/* The kernel's weight arena: g->weight_elems 2-byte units, zero-filled,
 * weight i at g->weights[i].offset with row stride g->weights[i].row_stride
 * (bf16 elements, or a block type's rows as stored).
 * NULL + message on a missing weight or a plan that does not fit. Caller
 * frees. */
uint16_t *mkc_weights_arena(const mkc_weights *w, const mkc_graph *g);

/* llama.cpp's --check-tensors: every value of every tensor finite (a block type's dequantized,
 * so a scale that is not finite shows). 0 after a note of what was checked, or -1 after an
 * error for each tensor at fault (source, a model file, names them). */
int mkc_weights_check(const mkc_weights *w, const char *source);

void mkc_weights_free(mkc_weights *w);

/* "Q4_1+Q8_0": the storage types of g's matrices, in order of first use. */
void mkc_graph_matrix_types(const mkc_graph *g, char *buf, size_t cap);

float mkc_bf16_to_float(uint16_t h);
uint16_t mkc_float_to_bf16(float f); /* round to nearest even; NaN stays NaN */

#endif
