/* Prints tests/data/quant_fixtures.txt lines (TYPE BLOCK-HEX EXPECTED-FLOAT-BITS..., read by
 * tests/test_quant_fixtures.c) of TQ1_0, TQ2_0, NVFP4, Q1_0 and Q2_0, 5 blocks each, the floats
 * from ggml's own to_float (gguf-py 0.19.0 has no Q1_0 or Q2_0; on the others it agrees).
 * Every byte is random (splitmix64, a fixed seed) except the f16 scale d, which random bytes would
 * too often make infinite or NaN: moderate and positive in blocks 1 to 3, negative in block 4,
 * zero in block 5. NVFP4's four UE4M3 scale bytes decode finitely whatever they are: random in
 * blocks 1 to 3, then 00 7f ff 80 (ggml reads 00 and 7f as 0; bit 7 is ignored but for 7f: ff
 * is 480 (ggml returns it halved, 240), 80 is 0) and 01 07 08 7e (subnormals, the least normal, the
 * largest). Against llama-cpp-python 0.3.36's ggml (llama.cpp built as tools/quant_ggml_fixture.sh
 * builds it, l: its folder); the lines were appended once:
 *   g++ -O1 -x c tools/quant_ggml_blocks.c -x none -I$l/ggml/include \
 *     $l/build/ggml/src/libggml-base.a -lgomp -lpthread -lm -o /tmp/qgb
 *   /tmp/qgb >>tests/data/quant_fixtures.txt */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggml.h"

enum { SEED = 20261208, BLOCKS = 5 };

static uint64_t state = SEED;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next() >> 11) * 0x1p-53; } /* [0, 1) */

int main(void) {
  static const struct {
    const char *name;
    enum ggml_type type;
    int d_at; /* the f16 d's offset; -1: NVFP4's UE4M3 bytes at 0..3 */
  } TYPES[] = {{"TQ1_0", GGML_TYPE_TQ1_0, 52},
               {"TQ2_0", GGML_TYPE_TQ2_0, 64},
               {"NVFP4", GGML_TYPE_NVFP4, -1},
               {"Q1_0", GGML_TYPE_Q1_0, 0},
               {"Q2_0", GGML_TYPE_Q2_0, 0}};
  static const uint8_t NVFP4_SCALES[2][4] = {{0x00, 0x7f, 0xff, 0x80}, {0x01, 0x07, 0x08, 0x7e}};
  printf("# made by tools/quant_ggml_blocks.c (ggml of llama-cpp-python 0.3.36, seed %d): TYPE "
         "BLOCK-HEX EXPECTED-FLOAT-BITS...\n",
         SEED);
  for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++) {
    const struct ggml_type_traits *traits = ggml_get_type_traits(TYPES[t].type);
    size_t size = traits->type_size, n = (size_t)traits->blck_size;
    for (int b = 0; b < BLOCKS; b++) {
      uint8_t block[256];
      float y[256];
      for (size_t i = 0; i < size; i++) block[i] = (uint8_t)next();
      if (TYPES[t].d_at >= 0) {
        float v = (float)(1e-3 + uniform() * (2.0 - 1e-3));
        ggml_fp16_t h = ggml_fp32_to_fp16(b == BLOCKS - 1 ? 0.0f : b == BLOCKS - 2 ? -v : v);
        memcpy(block + TYPES[t].d_at, &h, 2); /* little-endian, as the file is */
      } else if (b >= BLOCKS - 2)
        memcpy(block, NVFP4_SCALES[b - (BLOCKS - 2)], 4);
      traits->to_float(block, y, (int64_t)n);
      printf("%s ", TYPES[t].name);
      for (size_t i = 0; i < size; i++) printf("%02x", block[i]);
      for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &y[i], 4);
        printf(" %08x", bits);
      }
      printf("\n");
    }
  }
  return 0;
}
