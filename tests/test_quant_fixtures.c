/* mkc_dequant_f32 against gguf-py and ggml: tests/data/quant_fixtures.txt holds
 * blocks of random bytes of each type mkc reads and the floats gguf-py's
 * dequantizer (gguf.quants.dequantize) gives for them; see
 * tools/gen_quant_fixtures.py for how the blocks were made. The two must
 * agree bit for bit: gguf-py computes in float32 with the same operations in
 * the same order as ggml's reference and dequant.c (Q4_1, Q5_1 d * q + m; Q2_K, Q4_K
 * and Q5_K (d * scale) * q - dmin * min; Q3_K and Q6_K (d * scale) * q, q
 * signed; IQ4_NL d * level, IQ4_XS (d * scale) * level; the IQ2 and IQ3 grid
 * types (d * sub-scale) * grid value, then the sign; IQ1_S and IQ1_M (d *
 * sub-scale) * (grid value + delta); MXFP4 2^(e - 128) * level), each rounded on its
 * own (numpy never fuses a multiply and an add, nor does dequant.c), and f16
 * to float is exact. NaNs are compared by their bits too. The last lines, of
 * TQ1_0, TQ2_0, NVFP4, Q1_0 and Q2_0, are ggml's own C (to_float;
 * tools/quant_ggml_blocks.c), as gguf-py 0.19.0 has no Q1_0 or Q2_0 (on the
 * other three it gives the same bits): TQ1_0 and TQ2_0 d * (trit - 1); Q1_0
 * bit ? d : -d; Q2_0 d * (q - 1); NVFP4 each 16's UE4M3 scale (times 0.5) *
 * FP4 level doubled (MXFP4's levels). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/dequant.h"
#include "util/files.h"

static const char *FIXTURES = MKC_SOURCE_DIR "/tests/data/quant_fixtures.txt";

/* The readable type called name, or -1. */
static int type_named(const char *name) {
  for (uint32_t t = 0; t < MKC_GGML_TYPE_COUNT; t++) {
    const mkc_ggml_type_info *info = mkc_ggml_type(t);
    if (info && info->readable && strcmp(info->name, name) == 0) return (int)t;
  }
  return -1;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* The bytes of an even-length lower-case hex string, or -1. */
static long hex_bytes(const char *hex, uint8_t *out, size_t cap) {
  size_t n = strlen(hex);
  if (n % 2 || n / 2 > cap) return -1;
  for (size_t i = 0; i < n / 2; i++) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return (long)(n / 2);
}

/* One line: TYPE BLOCK-HEX EXPECTED-BITS...; one check for it. per_type
 * counts the lines of each type that were read. */
static void check_line(char *line, int line_no, int *per_type) {
  char *save, *name = strtok_r(line, " ", &save), *hex = strtok_r(NULL, " ", &save);
  int type = name ? type_named(name) : -1;
  static uint8_t block[4096];
  static uint32_t want[4096];
  static float got[4096];
  long n_bytes = hex ? hex_bytes(hex, block, sizeof block) : -1;
  if (type < 0 || n_bytes <= 0) {
    CHECK(0, "line %d: expected a readable type and the block's hex", line_no);
    return;
  }
  const mkc_ggml_type_info *info = mkc_ggml_type((uint32_t)type);
  size_t n = (size_t)(n_bytes / info->block_bytes * info->block), n_want = 0;
  for (char *w; (w = strtok_r(NULL, " ", &save)) && n_want < 4096;)
    want[n_want++] = (uint32_t)strtoul(w, NULL, 16);
  if (n_bytes % info->block_bytes || n_want != n) {
    CHECK(0, "line %d (%s): %ld bytes, %zu expected floats: not one per element of whole blocks",
          line_no, name, n_bytes, n_want);
    return;
  }
  if (mkc_dequant_f32((uint32_t)type, block, n, got) != 0) {
    CHECK(0, "line %d: mkc_dequant_f32 refuses %s", line_no, name);
    return;
  }
  per_type[type]++;
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &got[i], 4);
    if (bits != want[i]) {
      float expected;
      memcpy(&expected, &want[i], 4);
      CHECK(0, "line %d (%s): element %zu: oracle %08x (%.9g), mkc %08x (%.9g)", line_no, name, i,
            want[i], (double)expected, bits, (double)got[i]);
      return;
    }
  }
  CHECK(1, "line %d (%s block %d): %zu floats, bit for bit", line_no, name, per_type[type], n);
}

int main(void) {
  char *text = mkc_read_file(FIXTURES, NULL);
  if (!CHECK(text != NULL, "%s reads", FIXTURES)) return check_done();
  int per_type[MKC_GGML_TYPE_COUNT] = {0}, line_no = 0;
  for (char *save, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    line_no++;
    if (line[0] != '#') check_line(line, line_no, per_type);
  }
  static const char *const TYPES[] = {
      "Q8_0",   "Q4_0",    "Q4_1",   "Q5_0",  "Q5_1",    "Q2_K",  "Q3_K",  "Q4_K",  "Q5_K",
      "Q6_K",   "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL",
      "IQ4_XS", "MXFP4",   "F16",    "BF16",  "TQ1_0",   "TQ2_0", "NVFP4", "Q1_0",  "Q2_0"};
  for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++) {
    int t = type_named(TYPES[i]);
    CHECK(t >= 0 && per_type[t] >= 5, "%s: %d fixture lines (at least 5)", TYPES[i],
          t >= 0 ? per_type[t] : 0);
  }
  free(text);
  return check_done();
}
