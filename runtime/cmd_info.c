/* mkc info: what a GGUF file holds, read through the checking reader:
 * architecture and sizes from the metadata, tensors by type, the tokenizer. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "gguf.h"

static const char USAGE[] = "usage: mkc info -m FILE.gguf\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc info --help` for usage)\n");
  return 2;
}

/* A string entry's text, or "none" when absent or not a string. */
static const char *str_or_none(const mkc_gguf *f, const char *key) {
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  return kv && kv->type == MKC_GGUF_STRING ? kv->str : "none";
}

static void print_tensors(const mkc_gguf *f) {
  uint64_t count[MKC_GGML_TYPE_COUNT] = {0}, bytes = 0, params = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    count[f->tensors[i].type]++;
    bytes += f->tensors[i].n_bytes;
    params += f->tensors[i].n_elems;
  }
  printf("tensors: %" PRIu64, f->n_tensors);
  const char *sep = " (";
  for (uint32_t t = 0; t < MKC_GGML_TYPE_COUNT; t++) {
    if (!count[t]) continue;
    printf("%s%s %" PRIu64, sep, mkc_ggml_type(t)->name, count[t]);
    sep = ", ";
  }
  printf("%s\n", f->n_tensors ? ")" : "");
  printf("tensor data: %" PRIu64 " bytes (%.2f MiB), %" PRIu64 " parameters\n", bytes,
         (double)bytes / (1024.0 * 1024.0), params);
}

int mkc_cmd_info(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    }
    if (strcmp(argv[i], "-m") != 0) return usage_error("unknown option '%s'", argv[i]);
    if (i + 1 >= argc) return usage_error("%s needs a value", argv[i]);
    path = argv[++i];
  }
  if (!path) return usage_error("%s", "info: -m FILE.gguf is required");
  mkc_gguf *f = mkc_gguf_open(path);
  if (!f) return 1;
  const char *arch = str_or_none(f, "general.architecture");
  printf("file: %s\n", path);
  printf("format: GGUF v%" PRIu32 ", %zu bytes, alignment %" PRIu64 ", %" PRIu64
         " metadata entries\n",
         f->version, f->size, f->alignment, f->n_kv);
  printf("architecture: %s\n", arch);
  printf("name: %s\n", str_or_none(f, "general.name"));
  /* The architecture's own keys hold the sizes: block_count, embedding_length, ... */
  size_t prefix = strlen(arch);
  for (uint64_t i = 0; i < f->n_kv; i++) {
    const mkc_gguf_kv *kv = &f->kv[i];
    if (strncmp(kv->key, arch, prefix) != 0 || kv->key[prefix] != '.') continue;
    char value[256];
    mkc_gguf_format_value(kv, value, sizeof value);
    printf("%s = %s\n", kv->key, value);
  }
  print_tensors(f);
  const mkc_gguf_kv *tokens = mkc_gguf_find(f, "tokenizer.ggml.tokens");
  printf("tokenizer: %s", str_or_none(f, "tokenizer.ggml.model"));
  if (tokens && tokens->type == MKC_GGUF_ARRAY) printf(" (%" PRIu64 " tokens)", tokens->n);
  printf("\n");
  mkc_gguf_close(f);
  return 0;
}
