/* See gguf_override.h. */
#include "gguf_override.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/text.h"

#define KEY_MAX 127 /* llama.cpp's bounds: a key and a string value in 128-byte arrays */
#define STR_MAX 127

/* The next CSV field of spec at *at into out (cap bytes): 1, 0 at the end, -1 when it does not
 * fit or a quote is not closed. */
static int next_field(const char **at, char *out, size_t cap) {
  const char *p = *at;
  if (!p) return 0;
  size_t n = 0;
  int quoted = *p == '"';
  if (quoted) p++;
  for (;; p++) {
    if (quoted && *p == '"' && p[1] == '"') {
      p++; /* "" is a quote */
    } else if (quoted && *p == '"') {
      quoted = 0;
      continue;
    } else if (!*p || (!quoted && *p == ',')) {
      break;
    }
    if (n + 1 >= cap) return -1;
    out[n++] = *p;
  }
  if (quoted) return -1;
  out[n] = 0;
  *at = *p ? p + 1 : NULL;
  return 1;
}

typedef struct override {
  char key[KEY_MAX + 1];
  uint32_t type; /* INT64, FLOAT64, BOOL or STRING */
  int64_t i;
  double x;
  uint8_t b;
  const char *str; /* in the field */
} override;

/* One field, KEY=TYPE:VALUE, into o: 0, or -1 after a message. */
static int parse_field(const char *field, override *o) {
  const char *eq = strchr(field, '='), *v;
  char *end;
  if (!eq || eq == field || eq - field > KEY_MAX)
    return mkc_error_in("--override-kv", "'%s': expected KEY=TYPE:VALUE (a key of 1 to %d bytes)",
                        mkc_shown(field), KEY_MAX);
  memcpy(o->key, field, (size_t)(eq - field));
  o->key[eq - field] = 0;
  v = eq + 1;
  errno = 0;
  if (!strncmp(v, "int:", 4)) {
    o->type = MKC_GGUF_INT64;
    o->i = strtoll(v + 4, &end, 10);
    if (!v[4] || *end || errno)
      return mkc_error_in("--override-kv", "%s: expected a whole number after int:, got '%s'",
                          o->key, mkc_shown(v + 4));
  } else if (!strncmp(v, "float:", 6)) {
    o->type = MKC_GGUF_FLOAT64;
    o->x = strtod(v + 6, &end);
    if (!v[6] || *end || errno || !isfinite(o->x))
      return mkc_error_in("--override-kv", "%s: expected a finite number after float:, got '%s'",
                          o->key, mkc_shown(v + 6));
  } else if (!strncmp(v, "bool:", 5)) {
    o->type = MKC_GGUF_BOOL;
    o->b = !strcmp(v + 5, "true");
    if (!o->b && strcmp(v + 5, "false"))
      return mkc_error_in("--override-kv", "%s: expected true or false after bool:, got '%s'",
                          o->key, mkc_shown(v + 5));
  } else if (!strncmp(v, "str:", 4)) {
    o->type = MKC_GGUF_STRING;
    o->str = v + 4;
    if (strlen(o->str) > STR_MAX)
      return mkc_error_in("--override-kv", "%s: a str: value holds at most %d bytes, got %zu",
                          o->key, STR_MAX, strlen(o->str));
  } else {
    return mkc_error_in("--override-kv",
                        "%s: expected the type int:, float:, bool: or str:, got '%s'", o->key,
                        mkc_shown(v));
  }
  return 0;
}

/* Each field of spec through parse_field, then (f not NULL) into f: 0, or -1 after a message. */
static int each_field(const char *spec, mkc_gguf *f) {
  char field[KEY_MAX + STR_MAX + 16];
  const char *at = spec;
  int got, any = 0;
  while ((got = next_field(&at, field, sizeof field)) > 0) {
    override o;
    any = 1;
    if (parse_field(field, &o) != 0) return -1;
    if (!f) continue;
    const mkc_gguf_kv *kv = mkc_gguf_find(f, o.key);
    uint32_t t = kv ? kv->type : o.type;
    int integer = t <= MKC_GGUF_INT32 && t != MKC_GGUF_FLOAT32 && t != MKC_GGUF_BOOL;
    integer |= t == MKC_GGUF_UINT64 || t == MKC_GGUF_INT64;
    int same = o.type == MKC_GGUF_INT64     ? integer
               : o.type == MKC_GGUF_FLOAT64 ? t == MKC_GGUF_FLOAT32 || t == MKC_GGUF_FLOAT64
                                            : t == o.type;
    if (!same)
      return mkc_error_in(f->path, "--override-kv %s: the file's value is of type %s, which %s",
                          o.key, mkc_gguf_vtype_name(t),
                          integer                                          ? "int: sets"
                          : t == MKC_GGUF_FLOAT32 || t == MKC_GGUF_FLOAT64 ? "float: sets"
                          : t == MKC_GGUF_BOOL                             ? "bool: sets"
                          : t == MKC_GGUF_STRING                           ? "str: sets"
                                                                           : "no override sets");
    uint8_t bytes[8];
    uint64_t bits = 0;
    if (o.type == MKC_GGUF_INT64) bits = (uint64_t)o.i;
    if (o.type == MKC_GGUF_FLOAT64) memcpy(&bits, &o.x, 8);
    for (int k = 0; k < 8; k++) bytes[k] = (uint8_t)(bits >> (8 * k)); /* the file's order */
    int rc = o.type == MKC_GGUF_STRING ? mkc_gguf_put(f, o.key, o.type, o.str, strlen(o.str))
             : o.type == MKC_GGUF_BOOL ? mkc_gguf_put(f, o.key, o.type, &o.b, 1)
                                       : mkc_gguf_put(f, o.key, o.type, bytes, 8);
    if (rc != 0) return mkc_error_in(f->path, "--override-kv %s: out of memory", o.key);
  }
  if (got < 0)
    return mkc_error_in("--override-kv", "'%s': a field too long, or a quote not closed",
                        mkc_shown(spec));
  if (!any) return mkc_error_in("--override-kv", "%s", "expected KEY=TYPE:VALUE, got nothing");
  return 0;
}

int mkc_gguf_override_check(const char *spec) { return each_field(spec, NULL); }

int mkc_gguf_override(mkc_gguf *f, const char *spec) { return each_field(spec, f); }
