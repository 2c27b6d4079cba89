/* Encoders of the ggml types of one or two bits a weight, and NVFP4: ggml's own reference
 * quantizers' rules (no error search, no importance matrix: llama.cpp has none for these), so a
 * file mkc writes in them holds the bytes llama-quantize would write. */
#ifndef MKC_QUANTIZE_LOW_H
#define MKC_QUANTIZE_LOW_H

#include <stdint.h>

void mkc_quantize_tq1_0(const float *x, uint8_t *b); /* 256 values, 54 bytes */
void mkc_quantize_tq2_0(const float *x, uint8_t *b); /* 256 values, 66 bytes */
void mkc_quantize_q1_0(const float *x, uint8_t *b);  /* 128 values, 18 bytes */
void mkc_quantize_q2_0(const float *x, uint8_t *b);  /* 64 values, 18 bytes */
void mkc_quantize_nvfp4(const float *x, uint8_t *b); /* 64 values, 36 bytes */

/* The index of the FP4 level (mkc_mxfp4_levels) whose value times d is nearest v, the lower on a
 * tie (ggml's best_index_mxfp4): MXFP4's and NVFP4's codes. */
int mkc_fp4_code(float v, float d);

#endif
