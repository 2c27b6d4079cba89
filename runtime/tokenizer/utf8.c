/* UTF-8 decoding with the Unicode rules for what is well-formed (no overlong
 * forms, no surrogates, nothing above U+10FFFF), and category lookups. */
#include "utf8.h"

#include <string.h>

extern const uint32_t mkc_unicode_letters[][2], mkc_unicode_numbers[][2];
extern const int mkc_unicode_letters_count, mkc_unicode_numbers_count;

int mkc_utf8_next(const char *s, size_t n, int32_t *cp) {
  const unsigned char *u = (const unsigned char *)s;
  unsigned c = u[0], lo = 0x80, hi = 0xbf; /* the range of the second byte */
  int more;
  int32_t v;
  if (c < 0x80) {
    *cp = (int32_t)c;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    more = 1, v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    more = 2, v = c & 0x0f;
    if (c == 0xe0) lo = 0xa0; /* overlong below */
    if (c == 0xed) hi = 0x9f; /* surrogates above */
  } else if (c >= 0xf0 && c <= 0xf4) {
    more = 3, v = c & 0x07;
    if (c == 0xf0) lo = 0x90; /* overlong below */
    if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
  } else {
    return -1;
  }
  for (int i = 1; i <= more; i++) {
    if ((size_t)i >= n) return 0;
    unsigned b = u[i];
    if (b < lo || b > hi) return -i;
    v = v << 6 | (int32_t)(b & 0x3f);
    lo = 0x80, hi = 0xbf;
  }
  *cp = v;
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

static int in_ranges(const uint32_t (*r)[2], int n, int32_t cp) {
  if (cp < 0) return 0;
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if ((uint32_t)cp < r[mid][0])
      hi = mid - 1;
    else if ((uint32_t)cp > r[mid][1])
      lo = mid + 1;
    else
      return 1;
  }
  return 0;
}

int mkc_unicode_is_letter(int32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return in_ranges(mkc_unicode_letters, mkc_unicode_letters_count, cp);
}

int mkc_unicode_is_number(int32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(mkc_unicode_numbers, mkc_unicode_numbers_count, cp);
}

/* White_Space (Unicode PropList.txt), which is what \s means in the
 * tokenizers' patterns: tab..carriage return, space, NEL, NBSP, the Zs
 * spaces, line and paragraph separators. */
int mkc_unicode_is_space(int32_t cp) {
  switch (cp) {
  case 0x09:
  case 0x0a:
  case 0x0b:
  case 0x0c:
  case 0x0d:
  case 0x20:
  case 0x85:
  case 0xa0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202f:
  case 0x205f:
  case 0x3000:
    return 1;
  default:
    return cp >= 0x2000 && cp <= 0x200a;
  }
}
