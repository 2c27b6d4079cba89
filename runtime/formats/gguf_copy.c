/* One metadata entry of a read GGUF file into a writer (gguf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

/* An array of strings: NUL-terminated copies for the writer, which takes C strings (an element
 * holding a NUL byte is refused). */
static int copy_strings(const mkc_gguf_kv *kv, mkc_gguf_writer *out, const char *path) {
  char **s = calloc(kv->n ? kv->n : 1, sizeof *s);
  int rc = s ? 0 : -1;
  if (!s) fprintf(stderr, "mkc: error: out of memory\n");
  for (uint64_t i = 0; rc == 0 && i < kv->n; i++) {
    mkc_gguf_str t = mkc_gguf_arr_str(kv, i);
    if (memchr(t.s, 0, t.len)) {
      fprintf(stderr, "mkc: error: %s: %s[%llu] holds a NUL byte\n", path, kv->key,
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

int mkc_gguf_copy_kv(const mkc_gguf *f, const mkc_gguf_kv *kv, mkc_gguf_writer *out) {
  if (kv->type == MKC_GGUF_ARRAY && kv->elem_type == MKC_GGUF_STRING)
    return copy_strings(kv, out, f->path);
  if (kv->type == MKC_GGUF_ARRAY && kv->elem_type != MKC_GGUF_ARRAY)
    return mkc_gguf_set_arr(out, kv->key, kv->elem_type, kv->value, kv->n);
  if (kv->type == MKC_GGUF_STRING) return mkc_gguf_set(out, kv->key, MKC_GGUF_STRING, &kv->str);
  if (kv->type != MKC_GGUF_ARRAY) return mkc_gguf_set(out, kv->key, kv->type, kv->value);
  fprintf(stderr, "mkc: error: %s: %s is an array of arrays, which mkc does not copy\n", f->path,
          kv->key);
  return -1;
}
