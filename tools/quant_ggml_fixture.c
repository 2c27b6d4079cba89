/* Writes tests/data/quant_ggml.bin: rows of random weights (Gaussian, a few outliers eight
 * times larger), an importance matrix row (log-normal), and ggml's encoding of the rows in each
 * type ggml_quantize_chunk writes, without and with the importance matrix (without only where
 * ggml quantizes without one). test_quantize_fit compares mkc's fitted encodings against these.
 * Then, unweighted only, TQ1_0, TQ2_0, NVFP4, Q1_0 and Q2_0, which ggml quantizes the same with
 * the importance or without (TQ1_0, TQ2_0 and NVFP4 ignore it; Q1_0 and Q2_0, given it, run the
 * same reference row by row: checked here): mkc_quantize must give these bytes exactly.
 * Built and run by tools/quant_ggml_fixture.sh, against llama-cpp-python 0.3.36's ggml.
 *
 * Layout (little-endian): "MKCQGGML", u32 rows, u32 cols, f32 x[rows * cols], f32
 * importance[cols], u32 entries; per entry u32 type (ggml's id), u32 weighted (0 or 1), u64
 * bytes, the bytes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"

enum { ROWS = 16, COLS = 512 };

static uint64_t state = 20261207;
static double uniform(void) { /* [0, 1), splitmix64 */
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}
static double gaussian(void) { return sqrt(-2 * log(1 - uniform())) * cos(2 * M_PI * uniform()); }

int main(int argc, char **argv) {
  static const enum ggml_type TYPES[] = {
      GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,    GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1,  GGML_TYPE_Q2_K,
      GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,    GGML_TYPE_Q5_K,   GGML_TYPE_Q6_K,  GGML_TYPE_IQ4_NL,
      GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
      GGML_TYPE_IQ3_S,  GGML_TYPE_IQ1_S,   GGML_TYPE_IQ1_M};
  /* after the others, so that their entries stay where they were */
  static const enum ggml_type PLAIN[] = {GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_NVFP4,
                                         GGML_TYPE_Q1_0, GGML_TYPE_Q2_0};
  enum { N_TYPES = sizeof TYPES / sizeof *TYPES, N_PLAIN = sizeof PLAIN / sizeof *PLAIN };
  if (argc != 2) return fprintf(stderr, "usage: quant_ggml_fixture OUT\n"), 2;
  static float x[ROWS * COLS], imp[COLS];
  for (int i = 0; i < ROWS * COLS; i++)
    x[i] = (float)(gaussian() * 0.02 * (uniform() < 0.005 ? 8 : 1));
  for (int c = 0; c < COLS; c++) imp[c] = (float)exp(gaussian());
  FILE *f = fopen(argv[1], "wb");
  if (!f) return perror(argv[1]), 1;
  uint32_t head[2] = {ROWS, COLS}, count = 0;
  uint64_t n = 0;
  fwrite("MKCQGGML", 1, 8, f);
  fwrite(head, 4, 2, f);
  fwrite(x, 4, ROWS * COLS, f);
  fwrite(imp, 4, COLS, f);
  for (int t = 0; t < N_TYPES; t++) count += 2 - ggml_quantize_requires_imatrix(TYPES[t]);
  count += N_PLAIN;
  fwrite(&count, 4, 1, f);
  static uint8_t out[ROWS * COLS * 4], with[ROWS * COLS * 4];
  for (int t = 0; t < N_TYPES + N_PLAIN; t++)
    for (uint32_t weighted = 0; weighted < 2; weighted++) {
      enum ggml_type type = t < N_TYPES ? TYPES[t] : PLAIN[t - N_TYPES];
      if (!weighted && ggml_quantize_requires_imatrix(type)) continue;
      if (weighted && t >= N_TYPES) {
        /* no weighted entry: it would repeat the bytes (a ggml that used the weights needs one) */
        if (ggml_quantize_chunk(type, x, with, 0, ROWS, COLS, imp) != n || memcmp(out, with, n))
          return fprintf(stderr, "%s: ggml now uses the importance\n", ggml_type_name(type)), 1;
        continue;
      }
      n = ggml_quantize_chunk(type, x, out, 0, ROWS, COLS, weighted ? imp : NULL);
      uint32_t id = type;
      fwrite(&id, 4, 1, f);
      fwrite(&weighted, 4, 1, f);
      fwrite(&n, 8, 1, f);
      fwrite(out, 1, n, f);
    }
  return fclose(f) != 0;
}
