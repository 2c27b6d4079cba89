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
