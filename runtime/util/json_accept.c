/* JSON a byte at a time (json_accept.h): a pushdown recognizer whose stack
 * is one bit per open container. */
#include "json_accept.h"

#include <string.h>

#include "json_schema.h"
#include "json_text.h"
#include "text.h"
#include "utf8.h"

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
  EXP_DIGITS, /* exponent digits */
  LIT_MATCH   /* an enum's value: its texts matched (cands, at) */
};

static const char *const LITERALS[3] = {"true", "false", "null"};

void mkc_json_acc_init(mkc_json_acc *a, int object_only) {
  memset(a, 0, sizeof *a);
  a->mode = TOP;
  a->object_only = object_only != 0;
}

void mkc_json_acc_init_schema(mkc_json_acc *a, const mkc_schema *schema) {
  mkc_json_acc_init(a, 0);
  a->schema = schema;
  a->node = schema->root;
}

/* Whether the schema governs the current container (or the top level). */
static int governed(const mkc_json_acc *a) { return a->schema && a->depth == a->sdepth; }

/* The schema node of the innermost governed container. */
static const mkc_schema_node *frame(const mkc_json_acc *a) {
  return &a->schema->nodes[a->frame_node[a->sdepth - 1]];
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

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

/* node >= 0: the schema's container, governed; -1: any JSON. */
static int open(mkc_json_acc *a, int object, int node) {
  if (a->depth >= MKC_JSON_DEPTH_MAX) return -1;
  if (node >= 0) {
    if (a->sdepth >= MKC_SCHEMA_DEPTH) return -1;
    a->frame_node[a->sdepth] = (uint16_t)node;
    a->frame_pos[a->sdepth++] = 0;
  }
  uint64_t bit = 1ull << a->depth;
  a->objects = object ? a->objects | bit : a->objects & ~bit;
  a->depth++;
  a->mode = object ? KEY_FIRST : LIST_FIRST;
  return 0;
}

static int close_container(mkc_json_acc *a, int object) {
  if (a->depth == 0 || in_object(a) != object) return -1;
  if (governed(a)) {
    const mkc_schema_node *n = frame(a);
    int pos = a->frame_pos[a->sdepth - 1];
    /* not all written (64 properties written: none left to shift in) */
    if (object ? pos < 64 && (n->required >> pos) != 0 : pos < n->min_items) return -1;
    a->sdepth--;
  }
  a->depth--;
  value_done(a);
  return 0;
}

/* The first byte of one of node n's enum texts: the texts that begin with it. */
static int literal_start(mkc_json_acc *a, int node, unsigned char c) {
  const mkc_schema_node *n = &a->schema->nodes[node];
  uint64_t m = 0;
  for (int i = 0; i < n->n; i++) {
    const mkc_schema_text *t = &a->schema->lits[n->first + i];
    if (t->n > 0 && (unsigned char)t->s[0] == c) m |= 1ull << i;
  }
  if (!m) return -1;
  a->cands = m, a->at = 1, a->node = (uint16_t)node;
  a->mode = LIT_MATCH;
  return 0;
}

/* The first byte of a value where the schema governs: whether the node
 * takes it; 1: read it as any JSON would be. */
static int schema_value_start(mkc_json_acc *a, unsigned char c) {
  int node = a->node;
  if (a->sdepth > 0 && !in_object(a)) { /* a list's next item */
    const mkc_schema_node *list = frame(a);
    uint8_t *count = &a->frame_pos[a->sdepth - 1]; /* stops at 255: past maxItems' bound */
    if (*count >= list->max_items) return -1;
    if (*count < 255) (*count)++;
    node = list->items;
  }
  const mkc_schema_node *n = &a->schema->nodes[node];
  if (n->kind == MKC_SCHEMA_UNION) {
    int k = mkc_schema_class(c);
    if (k < 0 || !n->alt[k]) return -1;
    node = n->alt[k];
    n = &a->schema->nodes[node];
  }
  switch (n->kind) {
  case MKC_SCHEMA_OBJECT:
    return c == '{' ? open(a, 1, n->free ? -1 : node) : -1;
  case MKC_SCHEMA_ARRAY:
    return c == '[' ? open(a, 0, node) : -1;
  case MKC_SCHEMA_STRING:
    return c == '"' ? 1 : -1;
  case MKC_SCHEMA_INTEGER:
    a->integer = 1; /* fall through */
  case MKC_SCHEMA_NUMBER:
    return c == '-' || is_digit(c) ? 1 : -1;
  case MKC_SCHEMA_BOOLEAN:
    return c == 't' || c == 'f' ? 1 : -1;
  case MKC_SCHEMA_NULL:
    return c == 'n' ? 1 : -1;
  case MKC_SCHEMA_LITERALS:
    return literal_start(a, node, c);
  default:
    return 1; /* any value */
  }
}

/* The first byte of a value. */
static int value_start(mkc_json_acc *a, unsigned char c) {
  if (a->mode == TOP && a->object_only && c != '{') return -1;
  a->integer = 0;
  if (governed(a)) {
    int rc = schema_value_start(a, c);
    if (rc <= 0) return rc;
  }
  switch (c) {
  case '{':
    return open(a, 1, -1);
  case '[':
    return open(a, 0, -1);
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
  if (mkc_json_space((char)c)) return space(a, c);
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
    if (governed(a)) { /* the properties it may be: up to the next required one, in order */
      const mkc_schema_node *n = frame(a);
      uint64_t m = 0;
      for (int p = a->frame_pos[a->sdepth - 1]; p < n->n; p++) {
        m |= 1ull << p;
        if ((n->required >> p) & 1) break;
      }
      if (!m) return -1;
      a->cands = m, a->at = 0;
    }
    a->mode = KEY_STRING;
    return 0;
  case COLON:
    if (c != ':') return -1;
    a->mode = VALUE;
    return 0;
  case AFTER:
    if (c == ',') {
      /* a property left to write, or room for another item */
      if (governed(a) &&
          a->frame_pos[a->sdepth - 1] >= (in_object(a) ? frame(a)->n : frame(a)->max_items))
        return -1;
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
  uint32_t bits; /* the code point is not kept: only its bytes are checked */
  int more = mkc_utf8_lead(c, &bits, &a->lo, &a->hi);
  if (more < 0) return -1; /* a continuation byte, an overlong lead, past U+10FFFF */
  a->left = (uint8_t)more;
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
    if (!a->integer && a->mode != EXP_DIGITS && (c == 'e' || c == 'E')) {
      a->mode = EXP;
      return 0;
    }
    if (!a->integer && a->mode != FRACTION && a->mode != EXP_DIGITS && c == '.') {
      a->mode = DOT;
      return 0;
    }
    break;
  }
  value_done(a);
  return between(a, c);
}

/* A byte of a key the schema governs: one of the properties it may be. */
static int key_byte(mkc_json_acc *a, unsigned char c) {
  const mkc_schema_node *n = frame(a);
  const mkc_schema_text *props = a->schema->props + n->first;
  uint64_t m = 0;
  for (int p = 0; p < n->n; p++) {
    if (!((a->cands >> p) & 1)) continue;
    if (c == '"' && props[p].n == a->at) { /* the key is property p */
      a->frame_pos[a->sdepth - 1] = (uint8_t)(p + 1);
      a->node = props[p].node;
      a->mode = COLON;
      return 0;
    }
    if (a->at < props[p].n && (unsigned char)props[p].s[a->at] == c) m |= 1ull << p;
  }
  if (!m) return -1;
  a->cands = m, a->at++;
  return 0;
}

/* Whether an enum text among the candidates is matched whole. */
static int literal_whole(const mkc_json_acc *a) {
  const mkc_schema_node *n = &a->schema->nodes[a->node];
  for (int i = 0; i < n->n; i++)
    if (((a->cands >> i) & 1) && a->schema->lits[n->first + i].n == a->at) return 1;
  return 0;
}

/* A byte of an enum's value; one that goes on in no text ends a whole one
 * and is read as what follows a value. */
static int literal_byte(mkc_json_acc *a, unsigned char c) {
  const mkc_schema_node *n = &a->schema->nodes[a->node];
  uint64_t m = 0;
  for (int i = 0; i < n->n; i++) {
    const mkc_schema_text *t = &a->schema->lits[n->first + i];
    if (((a->cands >> i) & 1) && a->at < t->n && (unsigned char)t->s[a->at] == c) m |= 1ull << i;
  }
  if (m) {
    a->cands = m, a->at++;
    return 0;
  }
  if (!literal_whole(a)) return -1;
  value_done(a);
  return between(a, c);
}

/* mkc_json_acc_byte, but a may be changed when c is refused. */
static int step(mkc_json_acc *a, unsigned char c) {
  if (!mkc_json_space((char)c)) a->ws = a->lf = 0;
  switch (a->mode) {
  case KEY_STRING:
    if (governed(a)) return key_byte(a, c);
    /* fall through */
  case STRING:
    return string_byte(a, c);
  case LIT_MATCH:
    return literal_byte(a, c);
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
    if (mkc_hex_digit((char)c) < 0) return -1;
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
  return a->mode == STRING || (a->mode == KEY_STRING && !governed(a));
}

int mkc_json_acc_done(const mkc_json_acc *a) {
  if (a->mode == DONE) return 1;
  if (a->mode == LIT_MATCH) return a->depth == 0 && literal_whole(a);
  return a->depth == 0 &&
         (a->mode == ZERO || a->mode == INT || a->mode == FRACTION || a->mode == EXP_DIGITS);
}
