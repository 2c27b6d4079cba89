/* libFuzzer target for split models (formats/gguf_shards.c): the input is the second of two
 * files, beside a fixed first one (split.count 2, a tensor "a.weight", split.tensors.count 3),
 * both written to a scratch folder as PREFIX-0000K-of-00002.gguf, and the first opened. Whatever
 * the second holds, the model opens or fails with a message; what opens has every tensor once,
 * each read through the file that holds it. Seeds in fuzz/corpus/gguf_split: a second file of
 * two tensors (it opens), one claiming to be the first, and one repeating "a.weight". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"

static char dir[64], first[4096], second[4096];

static void cleanup(void) { /* the scratch folder goes with the process */
  unlink(first);
  unlink(second);
  rmdir(dir);
}

/* The scratch folder and the first file, once; 0 or -1. */
static int setup(void) {
  static int done = 0;
  if (done) return done > 0 ? 0 : -1;
  done = -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/mkc-split-fuzz-XXXXXX",
           tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
  if (!mkdtemp(dir)) return -1;
  atexit(cleanup);
  snprintf(first, sizeof first, "%s/m-00001-of-00002.gguf", dir);
  snprintf(second, sizeof second, "%s/m-00002-of-00002.gguf", dir);
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  uint16_t no = 0, count = 2;
  int32_t tensors = 3;
  const int64_t ne[2] = {32, 2};
  float values[64] = {0};
  int rc = !w || mkc_gguf_set_str(w, "general.architecture", "llama") ||
           mkc_gguf_set(w, "split.no", MKC_GGUF_UINT16, &no) ||
           mkc_gguf_set(w, "split.count", MKC_GGUF_UINT16, &count) ||
           mkc_gguf_set(w, "split.tensors.count", MKC_GGUF_INT32, &tensors) ||
           mkc_gguf_add_tensor(w, "a.weight", MKC_GGML_F32, 2, ne, values) ||
           mkc_gguf_write(w, first);
  mkc_gguf_writer_free(w);
  if (rc) return -1;
  done = 1;
  return 0;
}

static int read_nothing(void *ctx) {
  (void)ctx;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (setup() != 0) abort();
  FILE *out = fopen(second, "wb");
  if (!out) abort();
  if ((size && fwrite(data, 1, size, out) != size) | (fclose(out) != 0)) abort();
  mkc_gguf *f = mkc_gguf_open(first);
  if (!f) return 0;
  volatile unsigned sink = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const mkc_gguf_tensor *t = &f->tensors[i];
    if (mkc_gguf_find_tensor(f, t->name) != t) abort(); /* names are unique over both files */
    if (t->shard > 1 || (t->shard == 1) != (strcmp(mkc_gguf_tensor_path(f, t), second) == 0))
      abort();
    uint8_t *copy = malloc(t->n_bytes ? t->n_bytes : 1);
    if (copy && mkc_gguf_copy_tensor(f, t, copy) == 0)
      for (uint64_t k = 0; k < t->n_bytes; k++) sink += copy[k];
    free(copy);
    mkc_gguf_read_tensor(f, t, read_nothing, NULL);
  }
  (void)sink;
  mkc_gguf_close(f);
  return 0;
}
