/* JSON read a byte at a time, for constrained output: a state that says,
 * for each next byte, whether some JSON document (RFC 8259) still begins
 * with what has been read. The state is a small value: a copy taken before
 * a byte is the state before it, so a token's bytes can be tried and
 * forgotten (exec/constrain.c tries the whole vocabulary at every step).
 *
 * Beyond the grammar, what a model could otherwise do forever is bounded:
 * containers nest at most MKC_JSON_DEPTH_MAX deep, and a run of whitespace
 * holds at most MKC_JSON_WS_MAX bytes and one line feed (a model stuck on
 * newlines is a known failure of unbounded JSON grammars). Strings must be
 * well-formed UTF-8 (no overlong forms, no surrogates), as JSON text is;
 * a \u escape may name any code unit, as the grammar allows. */
#ifndef MKC_JSON_ACCEPT_H
#define MKC_JSON_ACCEPT_H

#include <stddef.h>
#include <stdint.h>

#define MKC_JSON_DEPTH_MAX 64
#define MKC_JSON_WS_MAX 64
#define MKC_SCHEMA_DEPTH 16 /* containers a schema governs, outermost first */

struct mkc_schema;

typedef struct mkc_json_acc {
  uint64_t objects; /* bit d: the container at depth d + 1 is an object (else a list) */
  uint8_t depth;    /* containers open */
  uint8_t mode;     /* what the next byte may be (json_accept.c) */
  uint8_t left;     /* a literal's next letter, \u digits or UTF-8 continuation bytes left */
  uint8_t lo, hi;   /* the next UTF-8 continuation byte's range */
  uint8_t literal;  /* which of true, false, null is being read */
  uint8_t ws, lf;   /* whitespace bytes in the current run, line feeds among them */
  uint8_t object_only;
  /* With a schema (json_schema.h): the outer sdepth containers are its
   * nodes' (deeper ones are any JSON); node is the one the next value must
   * be; a key or an enum's text is matched against cands, at bytes in. */
  const struct mkc_schema *schema;
  uint64_t cands;
  uint16_t node, at;
  uint8_t sdepth, integer;
  uint16_t frame_node[MKC_SCHEMA_DEPTH];
  uint8_t frame_pos[MKC_SCHEMA_DEPTH]; /* an object's next property, a list's items so far
                                          (up to 255) */
} mkc_json_acc;

/* A fresh state. object_only: the document must be an object (ollama's
 * format "json", OpenAI's json_object); else any value. */
void mkc_json_acc_init(mkc_json_acc *a, int object_only);
/* A fresh state for documents the schema validates (it must outlive the state). */
void mkc_json_acc_init_schema(mkc_json_acc *a, const struct mkc_schema *schema);

/* Reads byte c: 0 when the text still begins some document (a moves on),
 * -1 when it cannot (a is left as it was). Once the document is whole, only
 * whitespace follows. */
int mkc_json_acc_byte(mkc_json_acc *a, unsigned char c);

/* mkc_json_acc_byte over s[0..n): 0, or -1 at the first byte refused (a is
 * then in the state before that byte). */
int mkc_json_acc_text(mkc_json_acc *a, const char *s, size_t n);

/* Whether the next byte is read as a string's own text (inside a string,
 * no escape or character under way): then any text of printable bytes, no
 * '"' or '\\', in whole UTF-8 characters is taken as it is. */
int mkc_json_acc_in_string(const mkc_json_acc *a);

/* Whether what was read is a whole document (a number at the top level is
 * one that could also go on: "12" is whole, and so is "123"). */
int mkc_json_acc_done(const mkc_json_acc *a);

#endif
