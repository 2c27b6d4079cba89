/* libFuzzer target for run --prompt-cache's files (exec/kv_file.h), read from
 * disk: any bytes parse or are refused with a reason, never read past the
 * input; a parsed file's parts are the header's counts and lie inside it,
 * and its windows' positions, tokens and rows add up to the bytes after the
 * header.
 * Seeds in fuzz/corpus/kv_file: a file tiny wrote, and cut ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kv_file.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mkc_kv_file f;
  char why[200] = "";
  /* a copy of exactly size bytes: reading past it is a heap overflow ASan sees */
  unsigned char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  if (mkc_kv_file_parse(copy, size, &f, why, sizeof why) != 0) {
    check(why[0] != 0);
  } else {
    const unsigned char *t = f.tokens, *w = f.held_from;
    size_t rings = (size_t)f.n_rings * 4;
    check(f.n_rings >= 0 && size == 32 + rings + (size_t)f.n_tokens * 4 + f.n_bytes);
    check(w == copy + 32 && t == w + rings && f.rows == t + (size_t)f.n_tokens * 4);
    volatile unsigned sum = 0; /* every byte it points to is readable */
    for (size_t i = 0; i < rings; i++) sum += w[i];
    for (size_t i = 0; i < (size_t)f.n_tokens * 4; i++) sum += t[i];
    for (size_t i = 0; i < f.n_bytes; i++) sum += f.rows[i];
    (void)sum;
  }
  free(copy);
  return 0;
}
