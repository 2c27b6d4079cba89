/* libFuzzer target for llama-perplexity's files of log-probabilities
 * (formats/logits_file.h, perplexity --kl-divergence-base), the input as a
 * whole file: any bytes parse or are refused with a reason, never read past
 * the input; a parsed file's tokens and rows add up to its size exactly, and
 * its first row's parameters lie inside it.
 * Seeds in fuzz/corpus/logits_file: a small file, cut ones, another magic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/logits_file.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mkc_logits_head h;
  char why[200] = "";
  /* a copy of exactly size bytes: reading past it is a heap overflow ASan sees */
  unsigned char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  if (mkc_logits_head_parse(copy, size, size, &h, why, sizeof why) != 0) {
    check(why[0] != 0);
  } else {
    check(h.n_ctx >= 3 && h.n_vocab >= 1 && h.n_chunk >= 1 && h.rows == h.n_ctx - 1 - h.n_ctx / 2);
    check(h.tokens == MKC_LOGITS_HEAD && h.data == h.tokens + 4 * (uint64_t)h.n_ctx * h.n_chunk);
    check(h.data + (uint64_t)h.n_chunk * h.rows * h.row_len * 2 == size);
    check(h.row_len == mkc_logits_row_len(h.n_vocab) && h.row_len >= (size_t)h.n_vocab + 4);
    uint16_t row[4];
    memcpy(row, copy + h.data, sizeof row); /* the first row's parameters */
    float scale, lo;
    mkc_logits_row_params(row, &scale, &lo);
    volatile float sum = scale + lo;
    (void)sum;
  }
  free(copy);
  return 0;
}
