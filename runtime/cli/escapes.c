/* See escapes.h. */
#include "escapes.h"

#include <string.h>

#include "util/text.h"

/* The byte the escape at s (a backslash) names, and its length in *n; -1 for
 * a backslash that escapes nothing. */
static int escaped(const char *s, size_t *n) {
  *n = 2;
  switch (s[1]) {
  case 'n':
    return '\n';
  case 'r':
    return '\r';
  case 't':
    return '\t';
  case '\'':
    return '\'';
  case '"':
    return '"';
  case '\\':
    return '\\';
  case 'x': {
    int hi = mkc_hex_digit(s[2]), lo = hi < 0 ? -1 : mkc_hex_digit(s[3]);
    if (lo < 0) return -1;
    *n = 4;
    return hi * 16 + lo;
  }
  default:
    return -1;
  }
}

size_t mkc_unescape(char *s) {
  size_t n;
  for (const char *p = s; (p = strchr(p, '\\'));) {
    int b = escaped(p, &n);
    if (b == 0) return (size_t)-1;
    p += b < 0 ? 1 : n;
  }
  char *out = s;
  for (const char *p = s; *p;) {
    int b = *p == '\\' ? escaped(p, &n) : -1;
    if (b < 0) {
      *out++ = *p++;
      continue;
    }
    *out++ = (char)b;
    p += n;
  }
  *out = '\0';
  return (size_t)(out - s);
}
