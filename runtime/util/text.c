#include "text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

int mkc_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int mkc_words_hold(const char *words, const char *word) {
  size_t n = strlen(word);
  for (const char *p = words; (p = strstr(p, word)); p += n)
    if ((p == words || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
  return 0;
}

int mkc_hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

char *mkc_escape(const char *s, size_t n, char *out, size_t cap) {
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    char piece[8];
    size_t len = 1;
    int32_t cp = 0;
    int k = c < 0x80 ? 1 : mkc_utf8_next(s + i, n - i, &cp);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      piece[0] = (char)c;
    } else if (c == '\\') {
      memcpy(piece, "\\\\", 2), len = 2;
    } else if (c >= 0x80 && k > 0 && cp >= 0xa0) {
      memcpy(piece, s + i, (size_t)k), len = (size_t)k;
    } else {
      snprintf(piece, sizeof piece, "\\x%02x", c), len = 4, k = 1;
    }
    if (w + len + 4 > cap) { /* room for "..." and the NUL */
      memcpy(out + w, "...", 3), w += 3;
      break;
    }
    memcpy(out + w, piece, len);
    w += len;
    i += (size_t)k;
  }
  out[w] = '\0';
  return out;
}

const char *mkc_shown_n(const char *s, size_t n) {
  static __thread char text[8][400];
  static __thread unsigned next;
  return mkc_escape(s, n, text[next++ % 8], sizeof text[0]);
}

const char *mkc_shown(const char *s) { return mkc_shown_n(s ? s : "", s ? strlen(s) : 0); }

int mkc_refuse(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return -1;
}
