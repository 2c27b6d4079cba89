/* UTF-8 one character at a time, with the Unicode rules for what is
 * well-formed (no overlong forms, no surrogates, nothing above U+10FFFF). */
#ifndef MKC_UTIL_UTF8_H
#define MKC_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The character at s[0..n), n >= 1. Returns its length (1..4) and stores the
 * code point in *cp when s starts with a well-formed character; 0 when all n
 * bytes are a proper prefix of one (more bytes could complete it); -k when
 * the first k bytes are an ill-formed sequence (a maximal subpart, which a
 * decoder replaces with one U+FFFD). */
int mkc_utf8_next(const char *s, size_t n, int32_t *cp);

/* A character's first byte c: how many bytes follow it (0..3; -1 when c
 * cannot begin a character), its bits in *bits, and the range *lo..*hi the
 * next byte must be in, which keeps out overlong forms, surrogates and
 * everything past U+10FFFF (RFC 3629); every later byte is in 0x80..0xbf.
 * Inline: the JSON and grammar walks call it for every lead byte. */
static inline int mkc_utf8_lead(unsigned char c, uint32_t *bits, unsigned char *lo,
                                unsigned char *hi) {
  *lo = 0x80, *hi = 0xbf;
  if (c < 0x80) {
    *bits = c;
    return 0;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    *bits = c & 0x1fu;
    return 1;
  }
  if (c >= 0xe0 && c <= 0xef) {
    *bits = c & 0x0fu;
    if (c == 0xe0) *lo = 0xa0; /* overlong below */
    if (c == 0xed) *hi = 0x9f; /* surrogates above */
    return 2;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    *bits = c & 0x07u;
    if (c == 0xf0) *lo = 0x90; /* overlong below */
    if (c == 0xf4) *hi = 0x8f; /* above U+10FFFF */
    return 3;
  }
  return -1;
}

/* Whether s[0..n) is well-formed UTF-8 throughout. */
int mkc_utf8_valid(const char *s, size_t n);

/* s[0..n) with every ill-formed sequence (each maximal subpart, a
 * truncated character at the end included) replaced by U+FFFD, into out
 * (room for 3 * n bytes); returns the length written. This is the text a
 * decoder following the Unicode standard reads (Python's errors="replace",
 * the WHATWG decoder). */
size_t mkc_utf8_replace_invalid(const char *s, size_t n, char *out);

/* Writes cp (0..0x10FFFF) to out (room for 4 bytes); returns the length. */
int mkc_utf8_put(uint32_t cp, char *out);

#endif
