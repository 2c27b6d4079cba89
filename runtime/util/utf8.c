/* See utf8.h. */
#include "utf8.h"

#include <string.h>

int mkc_utf8_next(const char *s, size_t n, int32_t *cp) {
  const unsigned char *u = (const unsigned char *)s;
  unsigned char lo, hi; /* the range of the next byte */
  uint32_t v;
  int more = mkc_utf8_lead(u[0], &v, &lo, &hi);
  if (more < 0) return -1;
  for (int i = 1; i <= more; i++) {
    if ((size_t)i >= n) return 0;
    unsigned char b = u[i];
    if (b < lo || b > hi) return -i;
    v = v << 6 | (b & 0x3fu);
    lo = 0x80, hi = 0xbf;
  }
  *cp = (int32_t)v;
  return more + 1;
}

int mkc_utf8_valid(const char *s, size_t n) {
  int32_t cp;
  for (size_t i = 0; i < n;) {
    int len = mkc_utf8_next(s + i, n - i, &cp);
    if (len <= 0) return 0;
    i += (size_t)len;
  }
  return 1;
}

size_t mkc_utf8_replace_invalid(const char *s, size_t n, char *out) {
  size_t m = 0;
  int32_t cp;
  for (size_t i = 0; i < n;) {
    int len = mkc_utf8_next(s + i, n - i, &cp);
    if (len > 0) {
      memcpy(out + m, s + i, (size_t)len);
      m += (size_t)len;
      i += (size_t)len;
      continue;
    }
    memcpy(out + m, "\xef\xbf\xbd", 3); /* U+FFFD for the maximal subpart */
    m += 3;
    i += len < 0 ? (size_t)-len : n - i; /* 0: a character cut short by the end */
  }
  return m;
}

int mkc_utf8_put(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xc0 | cp >> 6);
    o[1] = (unsigned char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xe0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    o[2] = (unsigned char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (unsigned char)(0xf0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
  o[3] = (unsigned char)(0x80 | (cp & 0x3f));
  return 4;
}
