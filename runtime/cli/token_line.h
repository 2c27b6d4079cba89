/* One token as llama.cpp's tools list it: "    ID -> 'PIECE'", the piece's
 * bytes that do not print as UTF-8 (control bytes, part of a character) as
 * \xHH, a newline or tab as \n, \t. tokenize's lines and run's
 * --verbose-prompt. */
#ifndef MKC_TOKEN_LINE_H
#define MKC_TOKEN_LINE_H

#include <stdio.h>

#include "tokenizer/tokenizer.h"

/* t NULL: the id alone. */
void mkc_print_token_line(FILE *out, const mkc_tokenizer *t, int id);
/* --verbose-prompt's list: "mkc: the WHAT: N tokens", then a line each. */
void mkc_print_token_list(FILE *out, const mkc_tokenizer *t, const char *what, const int *ids,
                          int n);

#endif
