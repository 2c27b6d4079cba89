/* mkc init --vocab FILE.gguf: a model file that carries another GGUF's
 * tokenizer (every tokenizer.* key, the chat template with them), its
 * vocabulary size the model's, so that a random-weight model can read and
 * write a real model's text (tests of a tokenizer's paths: FIM, templates). */
#ifndef MKC_INIT_VOCAB_H
#define MKC_INIT_VOCAB_H

#include "formats/gguf.h"

typedef struct mkc_init_vocab {
  mkc_gguf *f;
  int n_vocab; /* its tokens */
} mkc_init_vocab;

/* Opens path and checks that its tokenizer loads: 0, or -1 after a message. */
int mkc_init_vocab_open(const char *path, mkc_init_vocab *v);
/* Every tokenizer.* key of v's file, into out: 0, or -1 after a message. */
int mkc_init_vocab_copy(const mkc_init_vocab *v, mkc_gguf_writer *out);
void mkc_init_vocab_close(mkc_init_vocab *v);

#endif
