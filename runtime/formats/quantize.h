/* Quantizers: floats to the ggml types mkc reads, as a GGUF file stores them,
 * so `mkc init` and the tests can write quantized models. The reader
 * (dequant.h) defines what an encoding means; these round every element to
 * the nearest value of its block's grid, with scales chosen so that the grid
 * reaches each block's extremes (quantize.c says how, type by type, and what
 * error that bounds). */
#ifndef MKC_QUANTIZE_H
#define MKC_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

/* Encodes n floats at src as F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, MXFP4, NVFP4,
 * TQ1_0, TQ2_0, Q1_0 or Q2_0 at dst:
 * little-endian bytes as in a GGUF file, n / block
 * * block_bytes of them. Returns 0, or -1 for another type or an n that is not a multiple of the
 * type's block. The inputs are meant to be finite: a block whose scale would pass f16's largest
 * value (65504) saturates there. */
int mkc_quantize(uint32_t type, const float *src, size_t n, void *dst);

/* The same split over up to threads threads (at most 32; ranges of whole blocks, the same
 * bytes as mkc_quantize gives): the IQ types take 0.1 to 0.4 s per million values on one
 * core. */
int mkc_quantize_parallel(uint32_t type, const float *src, size_t n, void *dst, int threads);

/* Encodes rows x cols floats (row-major, cols a multiple of the type's block) as mkc_quantize
 * does, but with each block's scales fitted for the least weighted squared error sum w (x - x')^2
 * (quantize_fit.c), w = importance[column] (an importance matrix's means of squared inputs;
 * NULL: 1): never more error per block than mkc_quantize's covering scales. Types without a fit
 * (mkc_quantize_has_fit 0: Q8_0, the grid types, MXFP4, NVFP4, the ternary and
 * one- and two-bit types, the floats) are written as mkc_quantize
 * writes them, importance unused. Up to threads threads; 0 or -1 (a type or cols it cannot). */
int mkc_quantize_fit(uint32_t type, const float *src, size_t rows, size_t cols,
                     const float *importance, void *dst, int threads);
int mkc_quantize_has_fit(uint32_t type);

/* The bytes of a row of cols elements of a known type (quantizable or not),
 * or 0 for an unknown type or a cols that is not a positive multiple of the
 * type's block (such a row cannot be stored in that type). */
size_t mkc_quant_row_bytes(uint32_t type, int cols);

#endif
