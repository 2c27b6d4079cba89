/* See json_format.h. */
#include "json_format.h"

#include <stdio.h>
#include <stdlib.h>

mkc_constraint *mkc_json_format_open(const mkc_tokenizer *t) {
  mkc_vocab_text v = {.n = mkc_tokenizer_n_vocab(t)};
  uint8_t *plain = malloc((size_t)v.n + 1);
  if (!plain) {
    fputs("mkc: error: out of memory\n", stderr);
    return NULL;
  }
  for (int i = 0; i < v.n; i++) plain[i] = (uint8_t)mkc_tokenizer_is_text(t, i);
  v.bytes = mkc_tokenizer_pieces(t, &v.off);
  v.plain = plain;
  mkc_constraint *c = mkc_constraint_open(&v);
  free(plain);
  return c;
}
