/* See json_text.h. */
#include "json_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "text.h"
#include "utf8.h"

static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && mkc_json_space(s[i])) i++;
  return i;
}

static int hex4(const char *s, unsigned *v) {
  *v = 0;
  for (int k = 0; k < 4; k++) {
    int d = mkc_hex_digit(s[k]);
    if (d < 0) return 0;
    *v = *v * 16 + (unsigned)d;
  }
  return 1;
}

/* A string from s[i] = '"': the index after its closing quote, 0 when it does not close or
 * holds what JSON does not (a control byte, or an escape other than \" \\ \/ \b \f \n \r \t and
 * \u with 4 hex digits: a backslash before a NUL byte had let a NUL into mkc_json_compact's
 * text, which a C string then cut short). */
static size_t skip_string(const char *s, size_t n, size_t i) {
  unsigned cp;
  for (i++; i < n; i++) {
    if (s[i] == '\\') {
      if (++i >= n) return 0;
      if (s[i] == 'u') {
        if (n - i < 5 || !hex4(s + i + 1, &cp)) return 0;
        i += 4;
      } else if (!s[i] || !strchr("\"\\/bfnrt", s[i])) {
        return 0;
      }
    } else if (s[i] == '"') {
      return i + 1;
    } else if ((unsigned char)s[i] < 0x20) {
      return 0;
    }
  }
  return 0;
}

static int in(char c, const char *set) { return c && strchr(set, c); }

/* A number, literal or nested value from s[i]: the index after it, 0 when none. */
static size_t skip_value(const char *s, size_t n, size_t i, int depth) {
  i = skip_ws(s, n, i);
  if (i >= n || depth > 200) return 0;
  if (s[i] == '"') return skip_string(s, n, i);
  if (s[i] == '{' || s[i] == '[') {
    char close = s[i] == '{' ? '}' : ']';
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == close) return i + 1;
    for (;;) {
      if (close == '}') {
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != '"' || !(i = skip_string(s, n, i))) return 0;
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != ':') return 0;
        i++;
      }
      if (!(i = skip_value(s, n, i, depth + 1))) return 0;
      i = skip_ws(s, n, i);
      if (i < n && s[i] == ',') {
        i++;
        continue;
      }
      return i < n && s[i] == close ? i + 1 : 0;
    }
  }
  static const char *const WORDS[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    size_t len = strlen(WORDS[k]);
    if (n - i >= len && memcmp(s + i, WORDS[k], len) == 0) return i + len;
  }
  size_t start = i;
  if (i < n && s[i] == '-') i++;
  if (i >= n || !in(s[i], "0123456789")) return 0;
  while (i < n && in(s[i], "0123456789.eE+-")) i++;
  char num[64];
  size_t len = i - start;
  if (len >= sizeof num) return i; /* long: its digits are kept as they are */
  memcpy(num, s + start, len);
  num[len] = '\0';
  char *end;
  strtod(num, &end);
  return *end ? 0 : i;
}

size_t mkc_json_skip(const char *s, size_t n) { return s ? skip_value(s, n, 0, 0) : 0; }

int mkc_json_at(const char *s, size_t n, const char *path, const char **at, size_t *len) {
  size_t i = skip_ws(s, n, 0);
  while (path && *path) {
    const char *slash = strchr(path, '/');
    size_t plen = slash ? (size_t)(slash - path) : strlen(path);
    if (i >= n || (s[i] != '{' && s[i] != '[')) return 0;
    int object = s[i] == '{';
    long index = object ? -1 : strtol(path, NULL, 10);
    i = skip_ws(s, n, i + 1);
    int found = 0;
    for (long k = 0; i < n && s[i] != (object ? '}' : ']'); k++) {
      if (object) {
        size_t key = i, end = s[i] == '"' ? skip_string(s, n, i) : 0;
        if (!end) return 0;
        found = end - key - 2 == plen && memcmp(s + key + 1, path, plen) == 0;
        i = skip_ws(s, n, end);
        if (i >= n || s[i] != ':') return 0;
        i = skip_ws(s, n, i + 1);
      } else {
        found = k == index;
      }
      if (found) break;
      if (!(i = skip_value(s, n, i, 0))) return 0;
      i = skip_ws(s, n, i);
      if (i < n && s[i] == ',') i = skip_ws(s, n, i + 1);
    }
    if (!found) return 0;
    path = slash ? slash + 1 : path + plen;
  }
  size_t end = skip_value(s, n, i, 0);
  if (!end) return 0;
  *at = s + i;
  *len = end - i;
  return 1;
}

char *mkc_json_compact(const char *s, size_t n) {
  size_t end = mkc_json_skip(s, n);
  if (!end || skip_ws(s, n, end) != n) return NULL;
  mkc_buf b = {0};
  mkc_buf_put(&b, "");
  for (size_t i = 0; i < end;) {
    if (mkc_json_space(s[i])) {
      i++;
    } else if (s[i] == '"') {
      size_t close = skip_string(s, n, i);
      mkc_buf_put_n(&b, s + i, close - i);
      i = close;
    } else {
      mkc_buf_put_n(&b, s + i++, 1);
    }
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* ---- Python's json.dumps ---- */

/* A code point as Python writes it in a string: its escapes, else UTF-8 (a
 * lone surrogate, which UTF-8 cannot hold, as \uXXXX). */
static void put_char(mkc_buf *b, unsigned cp) {
  char esc[8];
  const char *named = cp == '"'    ? "\\\""
                      : cp == '\\' ? "\\\\"
                      : cp == '\n' ? "\\n"
                      : cp == '\r' ? "\\r"
                      : cp == '\t' ? "\\t"
                      : cp == '\b' ? "\\b"
                      : cp == '\f' ? "\\f"
                                   : NULL;
  if (named) {
    mkc_buf_put(b, named);
  } else if (cp < 0x20 || (cp >= 0xd800 && cp < 0xe000)) {
    snprintf(esc, sizeof esc, "\\u%04x", cp);
    mkc_buf_put(b, esc);
  } else {
    char u[4];
    mkc_buf_put_n(b, u, (size_t)mkc_utf8_put(cp, u));
  }
}

void mkc_json_string(mkc_buf *b, const char *s) {
  mkc_buf_put(b, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x80)
      put_char(b, *c);
    else
      mkc_buf_put_n(b, (const char *)c, 1); /* UTF-8 as it is */
  mkc_buf_put(b, "\"");
}

/* The string s[i..close): its escapes decoded, written again as Python does. */
static void put_string(mkc_buf *b, const char *s, size_t i, size_t close) {
  mkc_buf_put(b, "\"");
  for (i++; i < close - 1;) {
    if (s[i] != '\\') {
      size_t run = i;
      while (run < close - 1 && s[run] != '\\' && s[run] != '"') run++;
      mkc_buf_put_n(b, s + i, run - i); /* raw bytes: controls cannot be here */
      i = run;
      continue;
    }
    char e = s[i + 1];
    unsigned cp = e == 'n'   ? '\n'
                  : e == 't' ? '\t'
                  : e == 'r' ? '\r'
                  : e == 'b' ? '\b'
                  : e == 'f' ? '\f'
                             : (unsigned char)e;
    i += 2;
    if (e == 'u' && i + 4 <= close - 1 && hex4(s + i, &cp)) {
      i += 4;
      unsigned lo;
      if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= close - 1 && s[i] == '\\' && s[i + 1] == 'u' &&
          hex4(s + i + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
    }
    put_char(b, cp);
  }
  mkc_buf_put(b, "\"");
}

void mkc_json_float(mkc_buf *b, double x) {
  if (isinf(x) || isnan(x)) {
    mkc_buf_put(b, isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char e[40], digits[24], out[64];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, x);
    if (strtod(e, NULL) == x) break;
  }
  snprintf(e, sizeof e, "%.*e", p - 1, x);
  int nd = 0, neg = e[0] == '-';
  const char *c = e + neg;
  for (; *c && *c != 'e'; c++)
    if (*c != '.') digits[nd++] = *c;
  digits[nd] = '\0';
  int exp = atoi(c + 1);
  char *w = out;
  if (neg) *w++ = '-';
  if (exp < -4 || exp >= 16) {
    *w++ = digits[0];
    if (nd > 1) w += sprintf(w, ".%s", digits + 1);
    sprintf(w, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  } else if (exp < 0) {
    w += sprintf(w, "0.");
    for (int k = 0; k < -exp - 1; k++) *w++ = '0';
    sprintf(w, "%s", digits);
  } else {
    for (int k = 0; k <= exp; k++) *w++ = k < nd ? digits[k] : '0';
    *w++ = '.';
    sprintf(w, "%s", nd > exp + 1 ? digits + exp + 1 : "0");
  }
  mkc_buf_put(b, out);
}

/* A number s[i..end): an integer as written (-0 as 0), a float as repr(). */
static void put_number(mkc_buf *b, const char *s, size_t i, size_t end) {
  int is_float = 0;
  for (size_t k = i; k < end; k++) is_float |= in(s[k], ".eE");
  if (!is_float) {
    size_t digits = i + (s[i] == '-');
    int zero = end - digits == 1 && s[digits] == '0';
    mkc_buf_put_n(b, zero ? s + digits : s + i, zero ? 1 : end - i);
    return;
  }
  char num[512];
  size_t len = end - i < sizeof num - 1 ? end - i : sizeof num - 1;
  memcpy(num, s + i, len);
  num[len] = '\0';
  mkc_json_float(b, strtod(num, NULL));
}

static void put_line(mkc_buf *b, int indent, int depth) {
  mkc_buf_put(b, "\n");
  for (int k = 0; k < indent * depth; k++) mkc_buf_put(b, " ");
}

/* The value at s[i] (skip_value checked it): written; the index after it. */
static size_t put_value(mkc_buf *b, const char *s, size_t n, size_t i, int indent, int depth) {
  i = skip_ws(s, n, i);
  if (s[i] == '"') {
    size_t close = skip_string(s, n, i);
    put_string(b, s, i, close);
    return close;
  }
  if (s[i] == '{' || s[i] == '[') {
    char close = s[i] == '{' ? '}' : ']';
    mkc_buf_put_n(b, s + i, 1);
    i = skip_ws(s, n, i + 1);
    int items = 0;
    while (s[i] != close) {
      mkc_buf_put(b, items++ ? (indent ? "," : ", ") : "");
      if (indent) put_line(b, indent, depth + 1);
      if (close == '}') {
        size_t key_end = skip_string(s, n, i);
        put_string(b, s, i, key_end);
        mkc_buf_put(b, ": ");
        i = skip_ws(s, n, key_end) + 1; /* past ':' */
      }
      i = skip_ws(s, n, put_value(b, s, n, i, indent, depth + 1));
      if (s[i] == ',') i = skip_ws(s, n, i + 1);
    }
    if (indent && items) put_line(b, indent, depth);
    mkc_buf_put_n(b, &close, 1);
    return i + 1;
  }
  size_t end = skip_value(s, n, i, 0);
  if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9'))
    put_number(b, s, i, end);
  else
    mkc_buf_put_n(b, s + i, end - i);
  return end;
}

char *mkc_json_python(const char *s, size_t n, int indent) {
  size_t end = mkc_json_skip(s, n);
  if (!end || skip_ws(s, n, end) != n) return NULL;
  mkc_buf b = {0};
  mkc_buf_put(&b, "");
  put_value(&b, s, n, 0, indent, 0);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
