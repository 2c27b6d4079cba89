/* A growing text: what renderers and writers append to. */
#ifndef MKC_BUF_H
#define MKC_BUF_H

#include <stddef.h>

/* s[0..n), NUL-terminated once anything was put; oom once an allocation
 * failed (later puts do nothing, and the owner frees s and reports it). */
typedef struct mkc_buf {
  char *s;
  size_t n, cap;
  int oom;
} mkc_buf;

void mkc_buf_put_n(mkc_buf *b, const char *s, size_t n);
void mkc_buf_put(mkc_buf *b, const char *s);

#endif
