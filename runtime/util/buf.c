/* See buf.h. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void mkc_buf_put_n(mkc_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->n + n + 1 > cap) cap *= 2;
    char *grown = realloc(b->s, cap);
    if (!grown) {
      b->oom = 1;
      return;
    }
    b->s = grown, b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

void mkc_buf_put(mkc_buf *b, const char *s) { mkc_buf_put_n(b, s, strlen(s)); }
