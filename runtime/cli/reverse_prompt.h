/* llama.cpp's -r/--reverse-prompt for run and chat: generation ends at the
 * token whose text completes one of the given strings. */
#ifndef MKC_REVERSE_PROMPT_H
#define MKC_REVERSE_PROMPT_H

#include <stddef.h>

#include "tokenizer/tokenizer.h"

#define MKC_REVERSE_MAX 16 /* -r given at most this often */

/* The completion's text is followed as the model writes it, control tokens'
 * text included, so that -r "<|im_start|>" ends at that token as llama.cpp's
 * reverse prompts of one special token do. A string may begin in earlier
 * tokens and end inside this one. */
typedef struct mkc_reverse {
  const char *const *texts; /* n of them, none empty */
  int n;
  size_t longest;
  mkc_detok detok;
  char *tail; /* the last longest - 1 bytes before the newest piece, then it */
  size_t n_tail;
  int hit; /* 1 + the index of the string found, 0 while none */
} mkc_reverse;

/* 0, or -1 after a message (out of memory). n = 0 follows nothing. */
int mkc_reverse_open(mkc_reverse *r, const mkc_tokenizer *t, const char *const *texts, int n);
/* Adds token id's text; 1 when it completes a string (r->hit says which). */
int mkc_reverse_push(mkc_reverse *r, int id);
void mkc_reverse_close(mkc_reverse *r);

#endif
