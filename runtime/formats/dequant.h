/* ggml tensor types as GGUF files store them: block sizes for every known
 * type (so any file can be bounds-checked and described), half-precision
 * conversions, and dequantization to float and bf16 for the types mkc reads. */
#ifndef MKC_DEQUANT_H
#define MKC_DEQUANT_H

#include <stddef.h>
#include <stdint.h>

/* The file's numbering (ggml_type). Ids not listed are unknown. */
enum mkc_ggml_type {
  MKC_GGML_F32 = 0,
  MKC_GGML_F16 = 1,
  MKC_GGML_Q4_0 = 2,
  MKC_GGML_Q4_1 = 3,
  MKC_GGML_Q5_0 = 6,
  MKC_GGML_Q5_1 = 7,
  MKC_GGML_Q8_0 = 8,
  MKC_GGML_Q8_1 = 9,
  MKC_GGML_Q2_K = 10,
  MKC_GGML_Q3_K = 11,
  MKC_GGML_Q4_K = 12,
  MKC_GGML_Q5_K = 13,
  MKC_GGML_Q6_K = 14,
  MKC_GGML_Q8_K = 15,
  MKC_GGML_IQ2_XXS = 16,
  MKC_GGML_IQ2_XS = 17,
  MKC_GGML_IQ3_XXS = 18,
  MKC_GGML_IQ1_S = 19,
  MKC_GGML_IQ4_NL = 20,
  MKC_GGML_IQ3_S = 21,
  MKC_GGML_IQ2_S = 22,
  MKC_GGML_IQ4_XS = 23,
  MKC_GGML_IQ1_M = 29,
  MKC_GGML_BF16 = 30,
  MKC_GGML_TQ1_0 = 34,
  MKC_GGML_TQ2_0 = 35,
  MKC_GGML_MXFP4 = 39,
  MKC_GGML_NVFP4 = 40,
  MKC_GGML_Q1_0 = 41,
  MKC_GGML_Q2_0 = 42,
  MKC_GGML_TYPE_COUNT = 43 /* ids are below this */
};

/* The block types mkc reads (dequant.c) and writes (quantize.c): X(TYPE, f) for
 * MKC_GGML_TYPE, whose block functions are named block_f in both files. One
 * list, so that a type added has both or neither compiles. */
/* (unformatted: clang-format reflows this macro's lines anew on every run) */
/* clang-format off */
#define MKC_BLOCK_TYPES(X) \
  X(Q4_0, q4_0) X(Q4_1, q4_1) X(Q5_0, q5_0) X(Q5_1, q5_1) X(Q8_0, q8_0) \
  X(Q2_K, q2_k) X(Q3_K, q3_k) X(Q4_K, q4_k) X(Q5_K, q5_k) X(Q6_K, q6_k) \
  X(IQ2_XXS, iq2_xxs) X(IQ2_XS, iq2_xs) X(IQ2_S, iq2_s) X(IQ3_XXS, iq3_xxs) \
  X(IQ3_S, iq3_s) X(IQ1_S, iq1_s) X(IQ1_M, iq1_m) X(IQ4_NL, iq4_nl) X(IQ4_XS, iq4_xs) \
  X(MXFP4, mxfp4) X(NVFP4, nvfp4) X(TQ1_0, tq1_0) X(TQ2_0, tq2_0) X(Q1_0, q1_0) X(Q2_0, q2_0)
/* clang-format on */
/* A table entry of the list: [MKC_GGML_TYPE] = block_f, */
#define MKC_BLOCK_FN(TYPE, f) [MKC_GGML_##TYPE] = block_##f,

typedef struct mkc_ggml_type_info {
  const char *name; /* "Q4_K" */
  int block;        /* elements per block */
  int block_bytes;  /* bytes per block */
  int readable;     /* 1: mkc_dequant_f32 and mkc_dequant_bf16 convert it */
} mkc_ggml_type_info;

/* The type with id type, or NULL for an unknown id. */
const mkc_ggml_type_info *mkc_ggml_type(uint32_t type);

/* "F32, F16, ...": the readable types, for messages. */
const char *mkc_dequant_type_names(void);

/* Converts n elements of a readable type (n a multiple of its block) at src
 * (unaligned is fine) to floats at dst, exactly as ggml's reference does:
 * each block's f16 scales to float, then the block's formula in float
 * (Q4_1: d * q + m; Q4_K and Q5_K: (d * scale) * q - dmin * min; Q6_K:
 * (d * scale) * q). Returns 0, or -1 for a type that is not readable. */
int mkc_dequant_f32(uint32_t type, const void *src, size_t n, float *dst);

/* The same rounded to bf16 (nearest even); BF16 is copied bit for bit. */
int mkc_dequant_bf16(uint32_t type, const void *src, size_t n, uint16_t *dst);

/* IQ4_NL's (and IQ4_XS's) 16 levels: ggml's kvalues_iq4nl. */
extern const int8_t mkc_iq4nl_levels[16];

/* MXFP4's 16 levels: FP4 (E2M1) values doubled, ggml's kvalues_mxfp4 (0, 1, 2, 3, 4, 6, 8, 12, then
 * their negatives), so a block's E8M0 scale byte e counts 2^(e - 128): mkc_e8m0_half. */
extern const int8_t mkc_mxfp4_levels[16];
float mkc_e8m0_half(uint8_t e);

/* NVFP4's scale byte (unsigned E4M3: 4 exponent bits biased by 7, 3 mantissa bits; bit 7 ignored,
 * but the bytes 0 and 0x7f, not 0xff, read 0) as a float, halved as MXFP4's is: the levels are
 * mkc_mxfp4_levels. */
float mkc_ue4m3_half(uint8_t e);

/* The sub-block of 16 that element e (< 256) of a Q2_K or Q3_K block is in:
 * 8 n + 2 j + l / 16 for e = 128 n + 32 j + l. */
int mkc_k16_sub(int e);

float mkc_f16_to_float(uint16_t h);
uint16_t mkc_float_to_f16(float f); /* round to nearest even; NaN stays NaN */

#endif
