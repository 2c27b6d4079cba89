/* JSON a byte at a time (json_accept.h): a pushdown recognizer whose stack
 * is one bit per open container. */
#include "json_accept.h"

#include <string.h>

enum mode {
  TOP,        /* the document's value, whitespace before it */
  VALUE,      /* a value: after ':' or a list's ',' */
  LIST_FIRST, /* after '[': a value or ']' */
  KEY_FIRST,  /* after '{': a key or '}' */
  KEY,        /* after an object's ',': a key */
  COLON,      /* after a key */
  AFTER,      /* after a value in a container: ',' or its closer */
  DONE,       /* the document is whole: whitespace only */
  STRING,     /* in a value string */
  KEY_STRING, /* in a key */
  ESCAPE,     /* after '\' (the string's kind kept in `literal`) */
  HEX,        /* \u's digits (left of them) */
  UTF8,       /* a character's continuation bytes (left of them, the next in lo..hi) */
  LITERAL,    /* true, false or null (`literal`), `left` letters read */
  MINUS,      /* after '-': a digit */
  ZERO,       /* a leading 0: the number may end, or '.', 'e' */
  INT,        /* more integer digits */
  DOT,        /* after '.': a digit */
  FRACTION,   /* fraction digits */
  EXP,        /* after 'e': a sign or a digit */
  EXP_SIGN,   /* after the exponent's sign: a digit */
  EXP_DIGITS  /* exponent digits */
};

static const char *const LITERALS[3] = {"true", "false", "null"};

void mkc_json_acc_init(mkc_json_acc *a, int object_only) {
  memset(a, 0, sizeof *a);
  a->mode = TOP;
  a->object_only = object_only != 0;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whitespace between tokens, within the run's bounds. */
static int space(mkc_json_acc *a, unsigned char c) {
  if (a->ws >= MKC_JSON_WS_MAX || (c == '\n' && a->lf >= 1)) return -1;
  a->ws++;
  a->lf += c == '\n';
  return 0;
}

static int in_object(const mkc_json_acc *a) { return (a->objects >> (a->depth - 1)) & 1; }

/* A value has ended: the document is whole, or its container goes on. */
static void value_done(mkc_json_acc *a) { a->mode = a->depth == 0 ? DONE : AFTER; }

static int open(mkc_json_acc *a, int object) {
  if (a->depth >= MKC_JSON_DEPTH_MAX) return -1;
  uint64_t bit = 1ull << a->depth;
  a->objects = object ? a->objects | bit : a->objects & ~bit;
  a->depth++;
  a->mode = object ? KEY_FIRST : LIST_FIRST;
  return 0;
}

static int close_container(mkc_json_acc *a, int object) {
  if (a->depth == 0 || in_object(a) != object) return -1;
  a->depth--;
  value_done(a);
  return 0;
}

/* The first byte of a value. */
static int value_start(mkc_json_acc *a, unsigned char c) {
  if (a->mode == TOP && a->object_only && c != '{') return -1;
  switch (c) {
  case '{':
    return open(a, 1);
  case '[':
    return open(a, 0);
  case '"':
    a->mode = STRING;
    return 0;
  case '-':
    a->mode = MINUS;
    return 0;
  case '0':
    a->mode = ZERO;
    return 0;
  case 't':
  case 'f':
  case 'n':
    a->literal = c == 't' ? 0 : c == 'f' ? 1 : 2;
    a->left = 1;
    a->mode = LITERAL;
    return 0;
  default:
    if (c >= '1' && c <= '9') {
      a->mode = INT;
      return 0;
    }
    return -1;
  }
}

/* A byte between tokens: whitespace, or what the mode opens with. */
static int between(mkc_json_acc *a, unsigned char c) {
  if (is_space(c)) return space(a, c);
  switch (a->mode) {
  case TOP:
  case VALUE:
    return value_start(a, c);
  case LIST_FIRST:
    return c == ']' ? close_container(a, 0) : value_start(a, c);
  case KEY_FIRST:
    if (c == '}') return close_container(a, 1);
    /* fall through */
  case KEY:
    if (c != '"') return -1;
    a->mode = KEY_STRING;
    return 0;
  case COLON:
    if (c != ':') return -1;
    a->mode = VALUE;
    return 0;
  case AFTER:
    if (c == ',') {
      a->mode = in_object(a) ? KEY : VALUE;
      return 0;
    }
    return c == '}' || c == ']' ? close_container(a, c == '}') : -1;
  default:
    return -1; /* DONE */
  }
}

/* A byte of a string (not an escape's). */
static int string_byte(mkc_json_acc *a, unsigned char c) {
  if (c == '"') {
    if (a->mode == KEY_STRING)
      a->mode = COLON;
    else
      value_done(a);
    return 0;
  }
  if (c == '\\') {
    a->literal = a->mode; /* which kind of string to go back to */
    a->mode = ESCAPE;
    return 0;
  }
  if (c < 0x20) return -1; /* control characters must be escaped */
  if (c < 0x80) return 0;
  if (c < 0xc2 || c > 0xf4) return -1; /* a continuation byte, an overlong lead, past U+10FFFF */
  /* UTF-8's lead bytes and the first continuation's range (RFC 3629) */
  a->left = c <= 0xdf ? 1 : c <= 0xef ? 2 : 3;
  a->lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80; /* no overlong forms */
  a->hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf; /* no surrogates, nothing past U+10FFFF */
  a->literal = a->mode;
  a->mode = UTF8;
  return 0;
}

/* A byte of a number; one that cannot go on in it ends the number and is
 * read as what follows a value. */
static int number_byte(mkc_json_acc *a, unsigned char c) {
  int digit = is_digit(c);
  switch (a->mode) {
  case MINUS:
    if (!digit) return -1;
    a->mode = c == '0' ? ZERO : INT;
    return 0;
  case DOT:
  case EXP_SIGN:
    if (!digit) return -1;
    a->mode = a->mode == DOT ? FRACTION : EXP_DIGITS;
    return 0;
  case EXP:
    if (c == '+' || c == '-') {
      a->mode = EXP_SIGN;
      return 0;
    }
    if (!digit) return -1;
    a->mode = EXP_DIGITS;
    return 0;
  case INT:
  case FRACTION:
  case EXP_DIGITS:
    if (digit) return 0;
    /* fall through */
  default: /* ZERO, or the digits above ended */
    if (a->mode != EXP_DIGITS && (c == 'e' || c == 'E')) {
      a->mode = EXP;
      return 0;
    }
    if (a->mode != FRACTION && a->mode != EXP_DIGITS && c == '.') {
      a->mode = DOT;
      return 0;
    }
    break;
  }
  value_done(a);
  return between(a, c);
}

/* mkc_json_acc_byte, but a may be changed when c is refused. */
static int step(mkc_json_acc *a, unsigned char c) {
  if (!is_space(c)) a->ws = a->lf = 0;
  switch (a->mode) {
  case STRING:
  case KEY_STRING:
    return string_byte(a, c);
  case ESCAPE:
    if (c == 'u') {
      a->left = 4;
      a->mode = HEX;
      return 0;
    }
    if (!strchr("\"\\/bfnrt", c) || c == 0) return -1;
    a->mode = a->literal;
    return 0;
  case HEX:
    if (!is_hex(c)) return -1;
    if (--a->left == 0) a->mode = a->literal;
    return 0;
  case UTF8:
    if (c < a->lo || c > a->hi) return -1;
    a->lo = 0x80, a->hi = 0xbf;
    if (--a->left == 0) a->mode = a->literal;
    return 0;
  case LITERAL: {
    const char *word = LITERALS[a->literal];
    if (c != (unsigned char)word[a->left]) return -1;
    if (word[++a->left] == '\0') value_done(a);
    return 0;
  }
  case MINUS:
  case ZERO:
  case INT:
  case DOT:
  case FRACTION:
  case EXP:
  case EXP_SIGN:
  case EXP_DIGITS:
    return number_byte(a, c);
  default:
    return between(a, c);
  }
}

int mkc_json_acc_byte(mkc_json_acc *a, unsigned char c) {
  mkc_json_acc was = *a;
  if (step(a, c) == 0) return 0;
  *a = was;
  return -1;
}

int mkc_json_acc_text(mkc_json_acc *a, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (mkc_json_acc_byte(a, (unsigned char)s[i]) != 0) return -1;
  return 0;
}

int mkc_json_acc_in_string(const mkc_json_acc *a) {
  return a->mode == STRING || a->mode == KEY_STRING;
}

int mkc_json_acc_done(const mkc_json_acc *a) {
  if (a->mode == DONE) return 1;
  return a->depth == 0 &&
         (a->mode == ZERO || a->mode == INT || a->mode == FRACTION || a->mode == EXP_DIGITS);
}
