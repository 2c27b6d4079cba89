/* The GBNF compiler (gbnf.h): a recursive-descent reading of the text into
 * rules of alternatives, then the checks (every rule defined, a root, no
 * left recursion) and one flat copy for the matcher (gbnf_rules.h). */
#include "gbnf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gbnf_rules.h"
#include "text.h"
#include "utf8.h"

#define RULES_MAX 65536
#define ELEMS_MAX (1 << 22)
#define NEST_MAX 200 /* groups inside groups */
#define CP_MAX 0x10FFFFu

typedef struct seq {
  gb_elem *e;
  uint32_t n, cap;
} seq;

typedef struct prule {
  char *name;     /* NULL: a group's or a repetition's */
  int owner;      /* the named rule it was written in */
  const char *at; /* its definition, or where it was first named */
  int defined;
  seq *alts;
  uint32_t n_alts, cap_alts;
} prule;

typedef struct parser {
  const char *text, *p, *end;
  char *why;
  size_t cap;
  int failed, depth, current; /* the named rule being read */
  prule *rules;
  uint32_t n_rules, cap_rules, n_elems;
  gb_range *ranges;
  uint32_t n_ranges, cap_ranges;
  uint32_t names[2 * RULES_MAX]; /* named rules by name's hash: number + 1, 0 free */
} parser;

__attribute__((format(printf, 3, 4))) static void fail(parser *ps, const char *at, const char *fmt,
                                                       ...) {
  if (ps->failed) return;
  ps->failed = 1;
  int line = 1, col = 1;
  for (const char *q = ps->text; q < at && q < ps->end; q++)
    if (*q == '\n')
      line++, col = 1;
    else
      col++;
  int k = snprintf(ps->why, ps->cap, "%d:%d: ", line, col);
  va_list ap;
  va_start(ap, fmt);
  if (k >= 0 && (size_t)k < ps->cap) vsnprintf(ps->why + k, ps->cap - (size_t)k, fmt, ap);
  va_end(ap);
}

static void *grow(parser *ps, void *p, uint32_t *cap, uint32_t need, size_t size) {
  if (need <= *cap) return p;
  uint32_t n = *cap ? *cap : 8;
  while (n < need) n *= 2;
  void *q = realloc(p, (size_t)n * size);
  if (!q) {
    fail(ps, ps->p, "out of memory");
    return p;
  }
  *cap = n;
  return q;
}

static void push(parser *ps, seq *s, gb_elem e) {
  if (++ps->n_elems > ELEMS_MAX) return fail(ps, ps->p, "the grammar is too large");
  s->e = grow(ps, s->e, &s->cap, s->n + 1, sizeof *s->e);
  if (!ps->failed) s->e[s->n++] = e;
}

static void append(parser *ps, seq *to, const seq *from) {
  for (uint32_t i = 0; i < from->n && !ps->failed; i++) push(ps, to, from->e[i]);
}

static int new_rule(parser *ps, char *name, const char *at) {
  if (ps->n_rules >= RULES_MAX) {
    free(name);
    fail(ps, at, "the grammar is too large (over %d rules with its groups and repetitions)",
         RULES_MAX);
    return -1;
  }
  ps->rules = grow(ps, ps->rules, &ps->cap_rules, ps->n_rules + 1, sizeof *ps->rules);
  if (ps->failed) {
    free(name);
    return -1;
  }
  ps->rules[ps->n_rules] = (prule){.name = name, .owner = ps->current, .at = at};
  return (int)ps->n_rules++;
}

static void add_alt(parser *ps, int r, seq s) {
  prule *pr = &ps->rules[r];
  pr->alts = grow(ps, pr->alts, &pr->cap_alts, pr->n_alts + 1, sizeof *pr->alts);
  if (ps->failed) {
    free(s.e);
    return;
  }
  pr->alts[pr->n_alts++] = s;
}

static int word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* The rule named text[0..n), made (undefined) at its first mention. */
static int rule_named(parser *ps, const char *text, size_t n, const char *at) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)text[i]) * 16777619u;
  uint32_t k = h % (2 * RULES_MAX);
  for (; ps->names[k]; k = (k + 1) % (2 * RULES_MAX)) {
    const char *name = ps->rules[ps->names[k] - 1].name;
    if (strlen(name) == n && !memcmp(name, text, n)) return (int)ps->names[k] - 1;
  }
  char *name = malloc(n + 1);
  if (!name) {
    fail(ps, at, "out of memory");
    return -1;
  }
  memcpy(name, text, n);
  name[n] = 0;
  int r = new_rule(ps, name, at);
  if (r >= 0) ps->names[k] = (uint32_t)r + 1; /* at most RULES_MAX: the table never fills */
  return r;
}

/* Spaces, tabs and comments; line ends too when lines is set. */
static void skip_space(parser *ps, int lines) {
  while (ps->p < ps->end) {
    char c = *ps->p;
    if (c == ' ' || c == '\t' || (lines && (c == '\n' || c == '\r')))
      ps->p++;
    else if (c == '#')
      while (ps->p < ps->end && *ps->p != '\n') ps->p++;
    else
      break;
  }
}

static int hex_digits(parser *ps, int n, uint32_t *cp) {
  *cp = 0;
  for (int i = 0; i < n; i++) {
    int d = ps->p < ps->end ? mkc_hex_digit(*ps->p) : -1;
    if (d < 0) {
      fail(ps, ps->p, "expected %d hex digits", n);
      return -1;
    }
    *cp = *cp * 16 + (uint32_t)d;
    ps->p++;
  }
  return 0;
}

/* One character of a literal or class: an escape or a UTF-8 sequence. */
static int read_char(parser *ps, uint32_t *cp) {
  const char *at = ps->p;
  unsigned char c = (unsigned char)*ps->p++;
  if (c == '\\') {
    char e = ps->p < ps->end ? *ps->p++ : 0;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
      if (hex_digits(ps, digits, cp) != 0) return -1;
      if (*cp > CP_MAX || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
        fail(ps, at, "\\%c%.*s is not a Unicode character", e, digits, at + 2);
        return -1;
      }
      return 0;
    }
    const char *from = "tnr\\\"[]-", *to = "\t\n\r\\\"[]-";
    const char *k = e ? strchr(from, e) : NULL;
    if (!k) {
      fail(ps, at, "unknown escape \\%c (\\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)",
           e ? e : ' ');
      return -1;
    }
    *cp = (unsigned char)to[k - from];
    return 0;
  }
  int32_t v;
  int len = mkc_utf8_next(at, (size_t)(ps->end - at), &v);
  if (len <= 0) { /* ill-formed, or cut short by the text's end */
    fail(ps, at, "not UTF-8");
    return -1;
  }
  ps->p = at + len;
  *cp = (uint32_t)v;
  return 0;
}

static int by_lo(const void *a, const void *b) {
  const gb_range *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* A class of the ranges r[0..n) (negated: the others), sorted and merged. */
static gb_elem chars(parser *ps, gb_range *r, uint32_t n, int negated) {
  if (n) qsort(r, n, sizeof *r, by_lo);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (m && r[i].lo <= r[m - 1].hi + 1) {
      if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
    } else
      r[m++] = r[i];
  gb_elem e = {GB_CHARS, ps->n_ranges, 0};
  uint32_t next = 0; /* negated: the first code point not yet ruled out */
  for (uint32_t i = 0; i <= m && !ps->failed; i++) {
    gb_range add;
    if (!negated) {
      if (i == m) break;
      add = r[i];
    } else {
      uint32_t hi = i < m ? r[i].lo : CP_MAX + 1;
      if (hi <= next) {
        next = r[i].hi + 1;
        continue;
      }
      add = (gb_range){next, hi - 1};
      if (i < m) next = r[i].hi + 1;
    }
    ps->ranges = grow(ps, ps->ranges, &ps->cap_ranges, ps->n_ranges + 1, sizeof *ps->ranges);
    if (!ps->failed) ps->ranges[ps->n_ranges++] = add, e.b++;
  }
  return e;
}

static void read_literal(parser *ps, seq *out) {
  const char *at = ps->p++;
  while (!ps->failed) {
    if (ps->p >= ps->end) return fail(ps, at, "the literal has no closing quote");
    if (*ps->p == '"') {
      ps->p++;
      return;
    }
    uint32_t cp;
    if (read_char(ps, &cp) != 0) return;
    gb_range r = {cp, cp};
    push(ps, out, chars(ps, &r, 1, 0));
  }
}

static void read_class(parser *ps, seq *out) {
  const char *at = ps->p++;
  int negated = ps->p < ps->end && *ps->p == '^';
  ps->p += negated;
  gb_range *r = NULL;
  uint32_t n = 0, cap = 0;
  while (!ps->failed) {
    if (ps->p >= ps->end) {
      fail(ps, at, "the character class has no closing ]");
      break;
    }
    if (*ps->p == ']') {
      if (n == 0) { /* llama.cpp reads it as nothing at all: say so rather than guess */
        fail(ps, at, "an empty character class (%s)", negated ? "[^]" : "[]");
        break;
      }
      ps->p++;
      push(ps, out, chars(ps, r, n, negated));
      break;
    }
    const char *from = ps->p;
    uint32_t lo, hi;
    if (read_char(ps, &lo) != 0) break;
    hi = lo;
    if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
      ps->p++;
      if (read_char(ps, &hi) != 0) break;
      if (hi < lo) {
        fail(ps, from, "the range's end comes before its start");
        break;
      }
    }
    r = grow(ps, r, &cap, n + 1, sizeof *r);
    if (!ps->failed) r[n++] = (gb_range){lo, hi};
  }
  free(r);
}

static void read_alternates(parser *ps, int rule, int nested);

/* A group or a repetition's rule with these alternatives (seqs taken over). */
static gb_elem ref_of(parser *ps, seq *alts, int n, const char *at) {
  int r = new_rule(ps, NULL, at);
  for (int i = 0; i < n; i++)
    if (r >= 0)
      add_alt(ps, r, alts[i]);
    else
      free(alts[i].e);
  return (gb_elem){GB_REF, r < 0 ? 0 : (uint32_t)r, 0};
}

static seq single(parser *ps, gb_elem x) {
  seq s = {0};
  push(ps, &s, x);
  return s;
}

/* x* as rule R ::= x R | (nothing). */
static gb_elem star(parser *ps, gb_elem x, const char *at) {
  int r = new_rule(ps, NULL, at);
  if (r < 0) return x;
  seq loop = single(ps, x);
  push(ps, &loop, (gb_elem){GB_REF, (uint32_t)r, 0});
  add_alt(ps, r, loop);
  add_alt(ps, r, (seq){0});
  return (gb_elem){GB_REF, (uint32_t)r, 0};
}

/* x? as rule R ::= x | (nothing); with then (a rule, or none), x then | (nothing). */
static gb_elem optional(parser *ps, gb_elem x, const gb_elem *then, const char *at) {
  seq alts[2] = {single(ps, x), {0}};
  if (then) push(ps, &alts[0], *then);
  return ref_of(ps, alts, 2, at);
}

static unsigned long read_count(parser *ps) {
  unsigned long v = 0;
  const char *at = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
    v = v * 10 + (unsigned long)(*ps->p++ - '0');
    if (v > MKC_GBNF_REPEAT_MAX) {
      fail(ps, at, "a repetition count above %d", MKC_GBNF_REPEAT_MAX);
      return 0;
    }
  }
  if (ps->p == at) fail(ps, at, "expected a number");
  return v;
}

/* The primary in *prim with the repetition at ps->p applied. */
static void repeat(parser *ps, seq *prim) {
  const char *at = ps->p;
  char op = *ps->p++;
  if (prim->n != 1) { /* a literal of several characters, or none: a rule of its own */
    seq whole = *prim;
    *prim = (seq){0};
    push(ps, prim, ref_of(ps, &whole, 1, at));
    if (ps->failed) return;
  }
  gb_elem x = prim->e[0];
  prim->n = 0;
  if (op == '*') return push(ps, prim, star(ps, x, at));
  if (op == '+') return push(ps, prim, x), push(ps, prim, star(ps, x, at));
  if (op == '?') return push(ps, prim, optional(ps, x, NULL, at));
  /* {m}, {m,}, {m,n} */
  skip_space(ps, 0);
  unsigned long m = read_count(ps), n = m;
  skip_space(ps, 0);
  int unbounded = 0;
  if (!ps->failed && ps->p < ps->end && *ps->p == ',') {
    ps->p++;
    skip_space(ps, 0);
    if (ps->p < ps->end && *ps->p == '}')
      unbounded = 1;
    else
      n = read_count(ps);
    skip_space(ps, 0);
  }
  if (ps->failed) return;
  if (ps->p >= ps->end || *ps->p != '}') return fail(ps, ps->p, "expected } to close {");
  ps->p++;
  if (n < m) return fail(ps, at, "{%lu,%lu}: the most is less than the least", m, n);
  for (unsigned long i = 0; i < m && !ps->failed; i++) push(ps, prim, x);
  if (unbounded) return push(ps, prim, star(ps, x, at));
  gb_elem tail = x;
  for (unsigned long i = 0; i < n - m && !ps->failed; i++)
    tail = optional(ps, x, i ? &tail : NULL, at);
  if (n > m) push(ps, prim, tail);
}

/* Elements up to an alternative's end: '|', ')', a line's end (outside a
 * group) or the text's. */
static seq read_sequence(parser *ps, int nested) {
  seq out = {0};
  while (ps->p < ps->end && !ps->failed) {
    const char *at = ps->p;
    char c = *ps->p;
    seq prim = {0};
    if (c == '"')
      read_literal(ps, &prim);
    else if (c == '[')
      read_class(ps, &prim);
    else if (c == '.') {
      ps->p++;
      gb_range any = {0, CP_MAX};
      push(ps, &prim, chars(ps, &any, 1, 0));
    } else if (word_char(c)) {
      while (ps->p < ps->end && word_char(*ps->p)) ps->p++;
      int r = rule_named(ps, at, (size_t)(ps->p - at), at);
      if (r >= 0) push(ps, &prim, (gb_elem){GB_REF, (uint32_t)r, 0});
    } else if (c == '(') {
      if (++ps->depth > NEST_MAX) {
        fail(ps, at, "groups nested over %d deep", NEST_MAX);
        break;
      }
      ps->p++;
      skip_space(ps, 1);
      int r = new_rule(ps, NULL, at);
      if (r >= 0) read_alternates(ps, r, 1);
      if (!ps->failed && (ps->p >= ps->end || *ps->p != ')')) fail(ps, at, "the ( is not closed");
      if (ps->failed) break;
      ps->p++;
      ps->depth--;
      if (r >= 0) push(ps, &prim, (gb_elem){GB_REF, (uint32_t)r, 0});
    } else if (c == '<' || c == '!')
      fail(ps, at, "token references (<...>, !<...>) are not supported: write the text");
    else
      break;
    skip_space(ps, nested);
    while (!ps->failed && ps->p < ps->end && strchr("*+?{", *ps->p)) {
      repeat(ps, &prim);
      skip_space(ps, nested);
    }
    append(ps, &out, &prim);
    free(prim.e);
  }
  return out;
}

static void read_alternates(parser *ps, int rule, int nested) {
  add_alt(ps, rule, read_sequence(ps, nested));
  while (!ps->failed && ps->p < ps->end && *ps->p == '|') {
    ps->p++;
    skip_space(ps, 1);
    add_alt(ps, rule, read_sequence(ps, nested));
  }
}

static void read_grammar(parser *ps) {
  skip_space(ps, 1);
  while (ps->p < ps->end && !ps->failed) {
    const char *at = ps->p;
    while (ps->p < ps->end && word_char(*ps->p)) ps->p++;
    if (ps->p == at && *at == '|')
      return fail(ps, at,
                  "'|' at a line's start: outside ( ) a rule ends with its line, so end "
                  "the line before with | or wrap the alternatives in ( )");
    if (ps->p == at) return fail(ps, at, "expected a rule name (letters, digits, '-')");
    size_t n = (size_t)(ps->p - at);
    skip_space(ps, 0);
    if (ps->end - ps->p < 3 || memcmp(ps->p, "::=", 3) != 0)
      return fail(ps, ps->p, "expected ::= after '%.*s'", (int)n, at);
    ps->p += 3;
    skip_space(ps, 1);
    int r = rule_named(ps, at, n, at);
    if (r < 0) return;
    if (ps->rules[r].defined) return fail(ps, at, "rule '%.*s' is defined twice", (int)n, at);
    ps->rules[r].defined = 1;
    ps->rules[r].at = at;
    ps->current = r;
    read_alternates(ps, r, 0);
    if (ps->failed) return;
    if (ps->p < ps->end && *ps->p != '\n' && *ps->p != '\r')
      return fail(ps, ps->p, "unexpected '%c' in rule '%.*s'", *ps->p, (int)n, at);
    skip_space(ps, 1);
  }
}

/* ---- checks ---- */

typedef struct checker {
  parser *ps;
  uint8_t *nullable, *color; /* color: 0 unseen, 1 on the path, 2 done */
} checker;

static void find_nullable(checker *k) {
  parser *ps = k->ps;
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t r = 0; r < ps->n_rules; r++) {
      if (k->nullable[r]) continue;
      for (uint32_t a = 0; a < ps->rules[r].n_alts && !k->nullable[r]; a++) {
        const seq *s = &ps->rules[r].alts[a];
        uint32_t i = 0;
        while (i < s->n && s->e[i].kind == GB_REF && k->nullable[s->e[i].a]) i++;
        if (i == s->n) k->nullable[r] = 1, changed = 1;
      }
    }
  }
}

/* A reference on the path met again: left recursion, said by the rule it names. */
static void left_recursive(parser *ps, uint32_t t) {
  const prule *named = &ps->rules[ps->rules[t].name ? (int)t : ps->rules[t].owner];
  const char *name = named->name ? named->name : "?";
  if (ps->rules[t].name)
    fail(ps, named->at,
         "rule '%s' is left-recursive: it can come back to itself before reading a character",
         name);
  else
    fail(ps, ps->rules[t].at,
         "in rule '%s': a repetition of a part that can match nothing (such as (x?)*), or left "
         "recursion through a group",
         name);
}

/* Depth-first over "r can begin with rule t" from rule `from`, on a stack of its own (rules
 * chain deeper than C's): a rule met again on the path is left recursion. */
typedef struct frame {
  uint32_t rule, alt, elem; /* the next reference to follow: alts[alt].e[elem] */
} frame;

static void left_walk(checker *k, uint32_t from, frame *path) {
  parser *ps = k->ps;
  uint32_t depth = 0;
  path[depth++] = (frame){from, 0, 0};
  k->color[from] = 1;
  while (depth > 0 && !ps->failed) {
    frame *f = &path[depth - 1];
    const prule *pr = &ps->rules[f->rule];
    if (f->alt == pr->n_alts) { /* every way it begins followed */
      k->color[f->rule] = 2;
      depth--;
      continue;
    }
    const seq *s = &pr->alts[f->alt];
    uint32_t i = f->elem;
    /* the reference at i, if the elements before it can match nothing */
    int go = i < s->n && s->e[i].kind == GB_REF && (i == 0 || k->nullable[s->e[i - 1].a]);
    if (!go) {
      f->alt++, f->elem = 0;
      continue;
    }
    f->elem++;
    uint32_t t = s->e[i].a;
    if (k->color[t] == 1) return left_recursive(ps, t);
    if (k->color[t] == 0) {
      k->color[t] = 1;
      path[depth++] = (frame){t, 0, 0};
    }
  }
}

static void check(parser *ps) {
  for (uint32_t r = 0; r < ps->n_rules && !ps->failed; r++)
    if (ps->rules[r].name && !ps->rules[r].defined)
      fail(ps, ps->rules[r].at, "rule '%s' is not defined", ps->rules[r].name);
  int root = -1;
  for (uint32_t r = 0; r < ps->n_rules; r++)
    if (ps->rules[r].name && !strcmp(ps->rules[r].name, "root")) root = (int)r;
  if (!ps->failed && root < 0) fail(ps, ps->end, "no rule 'root' (where the grammar begins)");
  checker k = {ps, calloc(ps->n_rules + 1, 1), calloc(ps->n_rules + 1, 1)};
  if (!k.nullable || !k.color)
    fail(ps, ps->end, "out of memory");
  else if (!ps->failed) {
    find_nullable(&k);
    frame *path = malloc(((size_t)ps->n_rules + 1) * sizeof *path);
    if (!path) fail(ps, ps->end, "out of memory");
    for (uint32_t r = 0; r < ps->n_rules && !ps->failed; r++)
      if (!k.color[r]) left_walk(&k, r, path);
    free(path);
  }
  free(k.nullable);
  free(k.color);
}

/* ---- the flat copy ---- */

static mkc_gbnf *flatten(parser *ps) {
  mkc_gbnf *g = calloc(1, sizeof *g);
  uint32_t n_alts = 0, n_elems = 0;
  for (uint32_t r = 0; r < ps->n_rules; r++) {
    n_alts += ps->rules[r].n_alts;
    for (uint32_t a = 0; a < ps->rules[r].n_alts; a++) n_elems += ps->rules[r].alts[a].n + 1;
  }
  if (!g || !(g->rules = malloc(((size_t)ps->n_rules + 1) * sizeof *g->rules)) ||
      !(g->alts = malloc(((size_t)n_alts + 1) * sizeof *g->alts)) ||
      !(g->elems = malloc(((size_t)n_elems + 1) * sizeof *g->elems)) ||
      !(g->ranges = malloc(((size_t)ps->n_ranges + 1) * sizeof *g->ranges))) {
    mkc_gbnf_free(g);
    fail(ps, ps->end, "out of memory");
    return NULL;
  }
  if (ps->n_ranges) memcpy(g->ranges, ps->ranges, ps->n_ranges * sizeof *g->ranges);
  g->n_ranges = ps->n_ranges;
  for (uint32_t r = 0; r < ps->n_rules; r++) {
    const prule *pr = &ps->rules[r];
    g->rules[r] = (gb_rule){g->n_alts, pr->n_alts};
    for (uint32_t a = 0; a < pr->n_alts; a++) {
      g->alts[g->n_alts++] = g->n_elems;
      for (uint32_t i = 0; i < pr->alts[a].n; i++) g->elems[g->n_elems++] = pr->alts[a].e[i];
      g->elems[g->n_elems++] = (gb_elem){GB_END, 0, 0};
    }
    if (pr->name && !strcmp(pr->name, "root")) g->root = r;
  }
  g->n_rules = ps->n_rules;
  return g;
}

mkc_gbnf *mkc_gbnf_compile(const char *text, size_t n, char *why, size_t cap) {
  parser *ps = calloc(1, sizeof *ps); /* its name table is 512 KB: not on the stack */
  if (!ps) {
    snprintf(why, cap, "1:1: out of memory");
    return NULL;
  }
  ps->text = ps->p = text, ps->end = text + n, ps->why = why, ps->cap = cap, ps->current = -1;
  if (cap) why[0] = 0;
  read_grammar(ps);
  if (!ps->failed) check(ps);
  mkc_gbnf *g = ps->failed ? NULL : flatten(ps);
  for (uint32_t r = 0; r < ps->n_rules; r++) {
    for (uint32_t a = 0; a < ps->rules[r].n_alts; a++) free(ps->rules[r].alts[a].e);
    free(ps->rules[r].alts);
    free(ps->rules[r].name);
  }
  free(ps->rules);
  free(ps->ranges);
  free(ps);
  return g;
}

void mkc_gbnf_free(mkc_gbnf *g) {
  if (!g) return;
  free(g->elems), free(g->ranges), free(g->alts), free(g->rules);
  free(g);
}
