/* See token_line.h. */
#include "token_line.h"

#include <stdint.h>

static void print_piece(FILE *out, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    int whole = len > 0 && i + (size_t)len <= n;
    for (int k = 1; whole && k < len; k++) whole = ((unsigned char)s[i + k] >> 6) == 2;
    if (whole && (len > 1 || (c >= 0x20 && c != 0x7f))) {
      fwrite(s + i, 1, (size_t)len, out);
      i += (size_t)len;
    } else if (c == '\n' || c == '\t') {
      fputs(c == '\n' ? "\\n" : "\\t", out);
      i++;
    } else {
      fprintf(out, "\\x%02x", c);
      i++;
    }
  }
}

void mkc_print_token_line(FILE *out, const mkc_tokenizer *t, int id) {
  fprintf(out, "%6d", id);
  if (!t) {
    fputc('\n', out);
    return;
  }
  const uint32_t *off;
  const char *pieces = mkc_tokenizer_pieces(t, &off);
  fputs(" -> '", out);
  if (id >= 0 && id < mkc_tokenizer_n_vocab(t))
    print_piece(out, pieces + off[id], off[id + 1] - off[id]);
  fputs("'\n", out);
}

void mkc_print_token_list(FILE *out, const mkc_tokenizer *t, const char *what, const int *ids,
                          int n) {
  fprintf(out, "mkc: the %s: %d tokens\n", what, n);
  for (int i = 0; i < n; i++) mkc_print_token_line(out, t, ids[i]);
}
