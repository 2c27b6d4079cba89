/* llama.cpp's escapes in text given on the command line (-p, -r): users
 * coming from llama-cli write "Hello\nWorld" and mean a newline. */
#ifndef MKC_ESCAPES_H
#define MKC_ESCAPES_H

#include <stddef.h>

/* Rewrites s in place: \n \r \t \' \" \\ and \xHH (two hex digits) become
 * the byte they name; a backslash before anything else, or at the end, stays
 * as written. Returns the new length, or (size_t)-1 when an escape names the
 * NUL byte (s is then unchanged): a C string cannot hold it, and cutting the
 * text there would lose the rest without a word. */
size_t mkc_unescape(char *s);

#endif
