/* A JSON Schema compiled for constrained output (util/json_accept.h): the
 * recognizer then takes only documents the schema validates. What it
 * writes is a part of what the schema allows, chosen so a byte-level
 * recognizer can follow it (llama.cpp's JSON-schema grammars make the same
 * choices): an object's properties in the schema's order, the required ones
 * always, the others optionally, no others; anyOf between alternatives a
 * first byte tells apart. Keywords that constrain values in ways it does
 * not follow (pattern, minimum, format, ...) are refused by name, never
 * dropped; annotations (title, description, ...) are read past. */
#ifndef MKC_JSON_SCHEMA_H
#define MKC_JSON_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#define MKC_SCHEMA_PROPS_MAX 64  /* properties of one object */
#define MKC_SCHEMA_LITS_MAX 64   /* values of one enum */
#define MKC_SCHEMA_ITEMS_MAX 255 /* minItems, maxItems (none: no bound) */
#define MKC_SCHEMA_UNBOUNDED 0xffff

enum mkc_schema_kind {
  MKC_SCHEMA_ANY, /* any JSON value (node 0) */
  MKC_SCHEMA_OBJECT,
  MKC_SCHEMA_ARRAY,
  MKC_SCHEMA_STRING,
  MKC_SCHEMA_NUMBER,
  MKC_SCHEMA_INTEGER,
  MKC_SCHEMA_BOOLEAN,
  MKC_SCHEMA_NULL,
  MKC_SCHEMA_LITERALS, /* enum or const: one of fixed texts */
  MKC_SCHEMA_UNION     /* by the value's first byte: one node per class */
};

/* The classes of a value by its first byte, for unions. */
enum {
  MKC_CLASS_OBJECT,
  MKC_CLASS_ARRAY,
  MKC_CLASS_STRING,
  MKC_CLASS_NUMBER,
  MKC_CLASS_BOOLEAN,
  MKC_CLASS_NULL,
  MKC_CLASS_N
};

typedef struct mkc_schema_node {
  uint8_t kind;                  /* enum mkc_schema_kind */
  uint8_t free;                  /* an object with no properties declared: any members */
  uint16_t n, first;             /* object: properties [first, first + n); literals: likewise */
  uint64_t required;             /* object: bit p, property first + p must be written */
  uint16_t items;                /* array: its items' node */
  uint16_t min_items, max_items; /* max_items MKC_SCHEMA_UNBOUNDED: none */
  uint16_t alt[MKC_CLASS_N];     /* union: the node of each class (0: that class is refused) */
} mkc_schema_node;

typedef struct mkc_schema_text {
  const char *s; /* a property's name, or a literal's JSON text */
  uint32_t n;
  uint16_t node; /* a property's value */
} mkc_schema_text;

typedef struct mkc_schema {
  mkc_schema_node *nodes;
  int n_nodes;
  mkc_schema_text *props, *lits;
  int n_props, n_lits;
  uint16_t root;
  char *store; /* the texts' bytes */
  size_t n_store;
} mkc_schema;

/* The schema in text[0..n) compiled; NULL with why filled (a message for a
 * 400 answer or the command line). */
mkc_schema *mkc_schema_compile(const char *text, size_t n, char *why, size_t cap);
void mkc_schema_free(mkc_schema *s);

/* The class of a value that begins with byte c, or -1. */
int mkc_schema_class(unsigned char c);

#endif
