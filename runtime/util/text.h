/* Small string helpers shared by the readers of names and paths. */
#ifndef MKC_TEXT_H
#define MKC_TEXT_H

#include <stddef.h>

int mkc_ends_with(const char *s, const char *suffix);    /* 1 or 0 */
int mkc_words_hold(const char *words, const char *word); /* space-separated words: 1 or 0 */

/* A hex digit's value (0-9, a-f, A-F), or -1 for any other character. */
int mkc_hex_digit(char c);

/* s[0..n) as messages and listings show text read from a file: printable
 * ASCII and well-formed UTF-8 from U+00A0 up as they are, a backslash
 * doubled, every other byte (controls, DEL, C1 controls, ill-formed UTF-8)
 * as \xNN, so a name cannot move the cursor or hide itself in a terminal.
 * Writes at most cap (>= 4) bytes with the NUL; a cut text ends in "...".
 * Returns out. */
char *mkc_escape(const char *s, size_t n, char *out, size_t cap);

/* mkc_escape of s[0..n) into one of 8 buffers of this thread, for up to 8
 * names in one message; at most about 400 bytes are shown. */
const char *mkc_shown_n(const char *s, size_t n);
/* The same for a NUL-terminated s (NULL shows as ""). */
const char *mkc_shown(const char *s);

/* The message fmt formats, into why[0..cap); returns -1, so that a reader of outside data can
 * `return mkc_refuse(why, cap, "...", ...)` where it finds what it refuses. */
int mkc_refuse(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
