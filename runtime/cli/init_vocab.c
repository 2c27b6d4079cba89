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

/* An array of strings: NUL-terminated copies for the writer (a token may hold a NUL byte:
 * refused, since the writer takes C strings). */
static int copy_strings(const mkc_gguf_kv *kv, mkc_gguf_writer *out, const char *path) {
  char **s = calloc(kv->n ? kv->n : 1, sizeof *s);
  int rc = s ? 0 : -1;
  if (!s) fprintf(stderr, "mkc: error: out of memory\n");
  for (uint64_t i = 0; rc == 0 && i < kv->n; i++) {
    mkc_gguf_str t = mkc_gguf_arr_str(kv, i);
    if (memchr(t.s, 0, t.len)) {
      fprintf(stderr, "mkc: error: --vocab %s: %s[%llu] holds a NUL byte\n", path, kv->key,
              (unsigned long long)i);
      rc = -1;
    } else if (!(s[i] = malloc(t.len + 1))) {
      fprintf(stderr, "mkc: error: out of memory\n");
      rc = -1;
    } else {
      memcpy(s[i], t.s, t.len);
      s[i][t.len] = 0;
    }
  }
  if (rc == 0) rc = mkc_gguf_set_arr(out, kv->key, MKC_GGUF_STRING, s, kv->n);
  for (uint64_t i = 0; s && i < kv->n; i++) free(s[i]);
  free(s);
  return rc;
}

int mkc_init_vocab_copy(const mkc_init_vocab *v, mkc_gguf_writer *out) {
  for (uint64_t k = 0; k < v->f->n_kv; k++) {
    const mkc_gguf_kv *kv = &v->f->kv[k];
    if (strncmp(kv->key, "tokenizer.", 10) != 0) continue;
    int rc;
    if (kv->type == MKC_GGUF_ARRAY && kv->elem_type == MKC_GGUF_STRING)
      rc = copy_strings(kv, out, v->f->path);
    else if (kv->type == MKC_GGUF_ARRAY && kv->elem_type != MKC_GGUF_ARRAY)
      rc = mkc_gguf_set_arr(out, kv->key, kv->elem_type, kv->value, kv->n);
    else if (kv->type == MKC_GGUF_STRING)
      rc = mkc_gguf_set(out, kv->key, MKC_GGUF_STRING, &kv->str);
    else if (kv->type != MKC_GGUF_ARRAY)
      rc = mkc_gguf_set(out, kv->key, kv->type, kv->value);
    else {
      fprintf(stderr,
              "mkc: error: --vocab %s: %s is an array of arrays, which init does not copy\n",
              v->f->path, kv->key);
      rc = -1;
    }
    if (rc != 0) return -1;
  }
  return 0;
}

void mkc_init_vocab_close(mkc_init_vocab *v) {
  mkc_gguf_close(v->f);
  v->f = NULL;
}
