/* See init_vocab.h. */
#include "init_vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int mkc_init_vocab_open(const char *path, mkc_init_vocab *v) {
  memset(v, 0, sizeof *v);
  if (!(v->f = mkc_gguf_open(path))) return -1;
  mkc_tokenizer *t = mkc_tokenizer_from_gguf(v->f);
  if (!t) { /* the tokenizer's reader said why, naming the file */
    mkc_init_vocab_close(v);
    return -1;
  }
  v->n_vocab = mkc_tokenizer_n_vocab(t);
  mkc_tokenizer_free(t);
  return 0;
}

int mkc_init_vocab_copy(const mkc_init_vocab *v, mkc_gguf_writer *out) {
  for (uint64_t k = 0; k < v->f->n_kv; k++) {
    const mkc_gguf_kv *kv = &v->f->kv[k];
    if (strncmp(kv->key, "tokenizer.", 10) != 0) continue;
    int rc = mkc_gguf_copy_kv(v->f, kv, out);
    if (rc != 0) return -1;
  }
  return 0;
}

void mkc_init_vocab_close(mkc_init_vocab *v) {
  mkc_gguf_close(v->f);
  v->f = NULL;
}
