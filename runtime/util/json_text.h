/* JSON kept as text: finding a value's span in a document, and writing a
 * value again without reading it into doubles, so a number keeps its
 * digits (an id of 19 digits stays that id) and 1.0 stays a float. Inputs
 * are JSON already checked by a parser; on text that is not JSON these
 * fail (0 / NULL), never read past n. */
#ifndef MKC_JSON_TEXT_H
#define MKC_JSON_TEXT_H

#include <stddef.h>

#include "buf.h"

/* Whether c is JSON's whitespace (space, tab, newline, carriage return),
 * which is also what the chat formats put around their tags. */
static inline int mkc_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* The value at s[0..n) (leading whitespace skipped): its length from s,
 * whitespace before it included; 0 when it is not one JSON value. */
size_t mkc_json_skip(const char *s, size_t n);

/* The value at path in the document s[0..n): path's parts are separated by
 * '/', each an object's key (compared as written, without escapes) or a
 * list's index ("3"). 1 with [*at, *at + *len) the value's text (no
 * whitespace around it), 0 when there is none. */
int mkc_json_at(const char *s, size_t n, const char *path, const char **at, size_t *len);

/* The value s[0..n) without the whitespace between its tokens, its strings
 * and numbers as written; malloc'd, NULL when not one JSON value (or out of
 * memory). */
char *mkc_json_compact(const char *s, size_t n);

/* The value s[0..n) as Python's json.dumps(json.loads(s),
 * ensure_ascii=False, indent=indent or None) writes it: ", " and ": "
 * (",\n" and indent spaces a level with indent), strings decoded and
 * escaped again as Python does, an integer as written (-0 as 0), a float as
 * repr() writes it (1.0, 1e-05, 1e+16, Infinity). malloc'd; NULL when not
 * one JSON value (or out of memory). */
char *mkc_json_python(const char *s, size_t n, int indent);

/* The text s (UTF-8) as a JSON string, as Python's json.dumps writes it
 * (ensure_ascii=False): quoted, \" \\ \n \r \t \b \f, other control
 * characters as \u00xx, every other byte as it is. */
void mkc_json_string(mkc_buf *b, const char *s);

/* repr() of a float, as Python writes it (json.dumps writes floats so):
 * the fewest digits that read back as x, positional when the decimal
 * exponent is in -4..15 (with ".0" when whole), else d.ddde+XX; Infinity,
 * -Infinity, NaN. */
void mkc_json_float(mkc_buf *b, double x);

#endif
