/* JSON Schema compiled into nodes (json_schema.h). */
#include "json_schema.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keywords read past: they describe, they do not constrain. */
static const char *const ANNOTATIONS[] = {
    "title",     "description", "default", "examples",    "$comment", "$schema", "$id", "readOnly",
    "writeOnly", "deprecated",  "$defs",   "definitions", "strict",   "name",    NULL};

/* Keywords followed. additionalProperties is taken whatever it says: no
 * property beyond the declared ones is ever written, which every value of
 * it allows. */
static const char *const FOLLOWED[] = {"type",  "properties", "required", "additionalProperties",
                                       "items", "minItems",   "maxItems", "enum",
                                       "const", "anyOf",      "oneOf",    "$ref",
                                       NULL};

typedef struct compiler {
  mkc_schema *s;
  int cap_nodes, cap_props, cap_lits;
  size_t cap_store;
  size_t *prop_at, *lit_at; /* texts as offsets into store until the end */
  const cJSON *root;
  const cJSON **seen; /* the schema object each node was made from, for $ref's cycles */
  char *why;
  size_t why_cap;
  int depth;
} compiler;

static int fail(compiler *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(c->why, c->why_cap, "json schema: ");
  if (n > 0 && (size_t)n < c->why_cap) vsnprintf(c->why + n, c->why_cap - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static int in_list(const char *const *list, const char *s) {
  for (; *list; list++)
    if (strcmp(*list, s) == 0) return 1;
  return 0;
}

/* A new node (zeroed); its index, or -1. */
static int new_node(compiler *c, const cJSON *from) {
  mkc_schema *s = c->s;
  if (s->n_nodes >= 65535) return fail(c, "more than 65535 schemas");
  if (s->n_nodes == c->cap_nodes) {
    int cap = c->cap_nodes ? 2 * c->cap_nodes : 16;
    mkc_schema_node *n = realloc(s->nodes, (size_t)cap * sizeof *n);
    const cJSON **seen = realloc(c->seen, (size_t)cap * sizeof *seen);
    if (n) s->nodes = n;
    if (seen) c->seen = seen;
    if (!n || !seen) return fail(c, "out of memory");
    c->cap_nodes = cap;
  }
  memset(&s->nodes[s->n_nodes], 0, sizeof *s->nodes);
  c->seen[s->n_nodes] = from;
  return s->n_nodes++;
}

/* text[0..n) kept in the store; its offset, or (size_t)-1. */
static size_t keep(compiler *c, const char *text, size_t n) {
  mkc_schema *s = c->s;
  if (s->n_store + n + 1 > c->cap_store) {
    size_t cap = (s->n_store + n + 1) * 2;
    char *st = realloc(s->store, cap);
    if (!st) return (size_t)fail(c, "out of memory");
    s->store = st, c->cap_store = cap;
  }
  memcpy(s->store + s->n_store, text, n);
  s->store[s->n_store + n] = 0;
  s->n_store += n + 1;
  return s->n_store - n - 1;
}

/* A property or literal slot; its index, or -1. */
static int new_text(compiler *c, int lit, const char *text, size_t n, int node) {
  mkc_schema *s = c->s;
  mkc_schema_text **arr = lit ? &s->lits : &s->props;
  int *count = lit ? &s->n_lits : &s->n_props, *cap = lit ? &c->cap_lits : &c->cap_props;
  size_t **at = lit ? &c->lit_at : &c->prop_at;
  if (*count == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    mkc_schema_text *a = realloc(*arr, (size_t)nc * sizeof *a);
    size_t *o = realloc(*at, (size_t)nc * sizeof *o);
    if (a) *arr = a;
    if (o) *at = o;
    if (!a || !o) return fail(c, "out of memory");
    *cap = nc;
  }
  size_t off = keep(c, text, n);
  if (off == (size_t)-1) return -1;
  (*arr)[*count] = (mkc_schema_text){NULL, (uint32_t)n, (uint16_t)node};
  (*at)[*count] = off;
  return (*count)++;
}

static int compile(compiler *c, const cJSON *sch, const char *where);

/* $ref: "#" or "#/$defs/NAME" ("#/definitions/NAME"), in this document. */
static int resolve(compiler *c, const char *ref, const char *where) {
  const cJSON *target = NULL;
  if (strcmp(ref, "#") == 0)
    target = c->root;
  else if (strncmp(ref, "#/$defs/", 8) == 0)
    target = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->root, "$defs"),
                                              ref + 8);
  else if (strncmp(ref, "#/definitions/", 14) == 0)
    target = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(c->root, "definitions"), ref + 14);
  if (!target)
    return fail(c,
                "%s: $ref \"%s\" names nothing here (\"#/$defs/NAME\" or "
                "\"#/definitions/NAME\" of this schema)",
                where, ref);
  for (int i = 1; i < c->s->n_nodes; i++) /* made already (or being made: a cycle) */
    if (c->seen[i] == target) return i;
  return compile(c, target, ref);
}

static int class_of_kind(int kind) {
  switch (kind) {
  case MKC_SCHEMA_OBJECT:
    return MKC_CLASS_OBJECT;
  case MKC_SCHEMA_ARRAY:
    return MKC_CLASS_ARRAY;
  case MKC_SCHEMA_STRING:
    return MKC_CLASS_STRING;
  case MKC_SCHEMA_NUMBER:
  case MKC_SCHEMA_INTEGER:
    return MKC_CLASS_NUMBER;
  case MKC_SCHEMA_BOOLEAN:
    return MKC_CLASS_BOOLEAN;
  case MKC_SCHEMA_NULL:
    return MKC_CLASS_NULL;
  default:
    return -1;
  }
}

/* Adds node `alt` to the union u (by class); -1 when two alternatives share one. */
static int add_alt(compiler *c, int u, int alt, const char *where) {
  const mkc_schema_node *a = &c->s->nodes[alt];
  if (a->kind == MKC_SCHEMA_UNION) {
    for (int k = 0; k < MKC_CLASS_N; k++)
      if (a->alt[k] && add_alt(c, u, a->alt[k], where) != 0) return -1;
    return 0;
  }
  int k = class_of_kind(a->kind);
  if (k < 0)
    return fail(c,
                "%s: an alternative of any value or of an enum is not offered (alternatives "
                "of different types are)",
                where);
  uint16_t *slot = &c->s->nodes[u].alt[k];
  if (*slot) {
    /* integer or number: the number */
    if (k == MKC_CLASS_NUMBER) {
      if (a->kind == MKC_SCHEMA_NUMBER) *slot = (uint16_t)alt;
      return 0;
    }
    return fail(c,
                "%s: two alternatives of the same type (anyOf, oneOf or a list of types) are "
                "not offered: mkc tells alternatives apart by their first byte",
                where);
  }
  *slot = (uint16_t)alt;
  return 0;
}

static int whole_count(const cJSON *v, int *out) {
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0)
    return -1;
  *out = v->valuedouble > MKC_SCHEMA_ITEMS_MAX ? -2 : (int)v->valuedouble;
  return 0;
}

/* The node of one type (type_name) with sch's keywords. */
static int compile_type(compiler *c, const cJSON *sch, const cJSON *from, const char *type_name,
                        const char *where) {
  static const struct {
    const char *name;
    int kind;
  } TYPES[] = {{"object", MKC_SCHEMA_OBJECT},   {"array", MKC_SCHEMA_ARRAY},
               {"string", MKC_SCHEMA_STRING},   {"number", MKC_SCHEMA_NUMBER},
               {"integer", MKC_SCHEMA_INTEGER}, {"boolean", MKC_SCHEMA_BOOLEAN},
               {"null", MKC_SCHEMA_NULL}};
  int kind = -1;
  for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
    if (strcmp(TYPES[i].name, type_name) == 0) kind = TYPES[i].kind;
  if (kind < 0) return fail(c, "%s: type \"%s\" is not a JSON Schema type", where, type_name);
  int id = new_node(c, from); /* before its parts: a $ref among them may name it */
  if (id < 0) return -1;
  c->s->nodes[id].kind = (uint8_t)kind;
  if (kind == MKC_SCHEMA_ARRAY) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(sch, "items");
    int node = 0, lo = 0, hi = MKC_SCHEMA_UNBOUNDED;
    if (items && !cJSON_IsObject(items) && !cJSON_IsTrue(items))
      return fail(c,
                  "%s: items must be a schema (a list of them, prefixItems' older form, is "
                  "not offered)",
                  where);
    if (cJSON_IsObject(items) && (node = compile(c, items, "items")) < 0) return -1;
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(sch, "minItems"),
                *mx = cJSON_GetObjectItemCaseSensitive(sch, "maxItems");
    if ((mn && whole_count(mn, &lo) != 0) || (mx && whole_count(mx, &hi) != 0))
      return fail(c, "%s: minItems and maxItems must be whole numbers >= 0", where);
    if (lo == -2 || hi == -2)
      return fail(c, "%s: minItems and maxItems past %d are not offered", where,
                  MKC_SCHEMA_ITEMS_MAX);
    if (lo > hi) return fail(c, "%s: minItems %d is past maxItems %d", where, lo, hi);
    mkc_schema_node *n = &c->s->nodes[id];
    n->items = (uint16_t)node, n->min_items = (uint16_t)lo, n->max_items = (uint16_t)hi;
    return id;
  }
  if (kind != MKC_SCHEMA_OBJECT) return id;
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(sch, "properties"),
              *req = cJSON_GetObjectItemCaseSensitive(sch, "required");
  if (props && !cJSON_IsObject(props)) return fail(c, "%s: properties must be an object", where);
  if (req && !cJSON_IsArray(req)) return fail(c, "%s: required must be a list of names", where);
  if (!props) {
    if (cJSON_GetArraySize(req) > 0)
      return fail(c, "%s: required names properties that are not declared", where);
    c->s->nodes[id].free = 1;
    return id;
  }
  int n_props = cJSON_GetArraySize(props);
  if (n_props > MKC_SCHEMA_PROPS_MAX)
    return fail(c, "%s: more than %d properties", where, MKC_SCHEMA_PROPS_MAX);
  int first = c->s->n_props;
  /* the slots first, so the properties' own objects take the ones after */
  for (const cJSON *p = props->child; p; p = p->next) {
    for (const char *q = p->string; *q; q++)
      if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
        return fail(c, "%s: the property name \"%s\" would need escapes (not offered)", where,
                    p->string);
    if (!cJSON_IsObject(p) && !cJSON_IsTrue(p))
      return fail(c, "%s: property \"%s\" must be a schema", where, p->string);
    if (new_text(c, 0, p->string, strlen(p->string), 0) < 0) return -1;
  }
  int k = 0;
  for (const cJSON *p = props->child; p; p = p->next, k++) {
    int node = cJSON_IsObject(p) ? compile(c, p, p->string) : 0;
    if (node < 0) return -1;
    c->s->props[first + k].node = (uint16_t)node;
  }
  uint64_t required = 0;
  for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
    int found = -1, i = 0;
    for (const cJSON *p = props->child; p && cJSON_IsString(r); p = p->next, i++)
      if (strcmp(p->string, r->valuestring) == 0) found = i;
    if (found < 0)
      return fail(c, "%s: required names \"%s\", which is not among its properties", where,
                  cJSON_IsString(r) ? r->valuestring : "(not a string)");
    required |= 1ull << found;
  }
  mkc_schema_node *n = &c->s->nodes[id];
  n->first = (uint16_t)first, n->n = (uint16_t)n_props, n->required = required;
  return id;
}

static int compile(compiler *c, const cJSON *sch, const char *where) {
  if (cJSON_IsTrue(sch)) return 0;
  if (!cJSON_IsObject(sch)) return fail(c, "%s: a schema must be an object", where);
  if (++c->depth > 64) return fail(c, "%s: nested more than 64 deep", where);
  for (const cJSON *k = sch->child; k; k = k->next)
    if (!in_list(ANNOTATIONS, k->string) && !in_list(FOLLOWED, k->string))
      return fail(c,
                  "%s: \"%s\" is not offered (mkc follows type, properties, required, items, "
                  "minItems, maxItems, enum, const, anyOf, oneOf and $ref)",
                  where, k->string);
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive(sch, "$ref"),
              *en = cJSON_GetObjectItemCaseSensitive(sch, "enum"),
              *cn = cJSON_GetObjectItemCaseSensitive(sch, "const"),
              *type = cJSON_GetObjectItemCaseSensitive(sch, "type");
  const cJSON *any = cJSON_GetObjectItemCaseSensitive(sch, "anyOf");
  if (!any) any = cJSON_GetObjectItemCaseSensitive(sch, "oneOf");
  int id;
  if (ref) {
    if (!cJSON_IsString(ref)) return fail(c, "%s: $ref must be a string", where);
    if (type || en || cn || any)
      return fail(c, "%s: $ref beside other keywords is not offered", where);
    id = resolve(c, ref->valuestring, where);
  } else if (en || cn) {
    /* the values' JSON texts, compact */
    id = new_node(c, sch);
    if (id < 0) return -1;
    int n = en ? cJSON_GetArraySize(en) : 1, first = c->s->n_lits;
    if ((en && !cJSON_IsArray(en)) || n < 1 || n > MKC_SCHEMA_LITS_MAX)
      return fail(c, "%s: enum must list 1 to %d values", where, MKC_SCHEMA_LITS_MAX);
    for (const cJSON *v = en ? en->child : cn; v; v = en ? v->next : NULL) {
      char *text = cJSON_PrintUnformatted(v);
      int slot = text ? new_text(c, 1, text, strlen(text), 0) : fail(c, "out of memory");
      free(text);
      if (slot < 0) return -1;
    }
    mkc_schema_node *node = &c->s->nodes[id];
    node->kind = MKC_SCHEMA_LITERALS, node->first = (uint16_t)first, node->n = (uint16_t)n;
  } else if (any) {
    if (!cJSON_IsArray(any) || cJSON_GetArraySize(any) < 1)
      return fail(c, "%s: anyOf and oneOf must list schemas", where);
    id = new_node(c, sch);
    if (id < 0) return -1;
    c->s->nodes[id].kind = MKC_SCHEMA_UNION;
    for (const cJSON *alt = any->child; alt; alt = alt->next) {
      int a = compile(c, alt, where);
      if (a < 0 || add_alt(c, id, a, where) != 0) return -1;
    }
  } else if (cJSON_IsString(type)) {
    id = compile_type(c, sch, sch, type->valuestring, where);
  } else if (cJSON_IsArray(type)) {
    id = new_node(c, sch);
    if (id < 0) return -1;
    c->s->nodes[id].kind = MKC_SCHEMA_UNION;
    for (const cJSON *t = type->child; t; t = t->next) {
      if (!cJSON_IsString(t)) return fail(c, "%s: type lists names of types", where);
      int a = compile_type(c, sch, NULL, t->valuestring, where);
      if (a < 0 || add_alt(c, id, a, where) != 0) return -1;
    }
  } else if (type) {
    return fail(c, "%s: type must be a name or a list of names", where);
  } else {
    id = 0; /* no type: any value */
  }
  c->depth--;
  return id;
}

mkc_schema *mkc_schema_compile(const char *text, size_t n, char *why, size_t cap) {
  compiler c = {.why = why, .why_cap = cap};
  cJSON *root = cJSON_ParseWithLength(text, n);
  c.s = calloc(1, sizeof *c.s);
  c.root = root;
  int id = -1;
  if (!root)
    fail(&c, "not JSON");
  else if (c.s && new_node(&c, NULL) == 0) /* node 0: any value */
    id = compile(&c, root, "the schema");
  else
    fail(&c, "out of memory");
  if (id >= 0) {
    c.s->root = (uint16_t)id;
    for (int i = 0; i < c.s->n_props; i++) c.s->props[i].s = c.s->store + c.prop_at[i];
    for (int i = 0; i < c.s->n_lits; i++) c.s->lits[i].s = c.s->store + c.lit_at[i];
  }
  free(c.prop_at), free(c.lit_at), free(c.seen);
  cJSON_Delete(root);
  if (id < 0) {
    mkc_schema_free(c.s);
    return NULL;
  }
  return c.s;
}

void mkc_schema_free(mkc_schema *s) {
  if (!s) return;
  free(s->nodes), free(s->props), free(s->lits), free(s->store);
  free(s);
}

int mkc_schema_class(unsigned char c) {
  if (c == '{') return MKC_CLASS_OBJECT;
  if (c == '[') return MKC_CLASS_ARRAY;
  if (c == '"') return MKC_CLASS_STRING;
  if (c == '-' || (c >= '0' && c <= '9')) return MKC_CLASS_NUMBER;
  if (c == 't' || c == 'f') return MKC_CLASS_BOOLEAN;
  if (c == 'n') return MKC_CLASS_NULL;
  return -1;
}
