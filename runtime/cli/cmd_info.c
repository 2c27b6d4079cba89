/* mkc info: what a model file holds, read through the checking readers:
 * architecture and sizes (GGUF metadata or config.json), tensors by type, the
 * tokenizer, and the graph preset mkc derives from them. Text from the file
 * is shown escaped (mkc_shown). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "formats/gguf.h"
#include "formats/gguf_override.h"
#include "loaded.h"
#include "model/chat_template.h"
#include "model/model_file.h"
#include "formats/safetensors.h"
#include "tokenizer/tokenizer.h"
#include "util/text.h"

static const char USAGE[] =
    "usage: mkc info -m FILE.gguf|DIR [--override-kv KEY=TYPE:VALUE,...]\n"
    "\n"
    "DIR: a Hugging Face folder (config.json, safetensors, tokenizer.json).\n"
    "--override-kv: a GGUF file's metadata as a run with the same flags reads it\n"
    "(llama.cpp's: TYPE int, float, bool or str; commas join several).\n";

static int usage_error(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in("info", fmt, arg);
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

/* The graph preset mkc makes of the model, and its tokenizer. */
static void print_model(const mkc_model_file *mf) {
  char desc[768];
  mkc_model_desc_format(&mf->desc, desc, sizeof desc);
  if (mf->tok) {
    const mkc_tokenizer *t = mf->tok;
    /* fill-in-the-middle (serve's /infill) needs the three markers */
    char fim[96] = "";
    int pre = mkc_tokenizer_fim(t, MKC_FIM_PRE), suf = mkc_tokenizer_fim(t, MKC_FIM_SUF),
        mid = mkc_tokenizer_fim(t, MKC_FIM_MID);
    if (pre >= 0 && suf >= 0 && mid >= 0)
      snprintf(fim, sizeof fim, ", fill-in-the-middle (prefix %d, suffix %d, middle %d)", pre, suf,
               mid);
    printf("tokenizer: %s, %d tokens, bos %d, eos %d%s%s\n", mkc_tokenizer_kind(t),
           mkc_tokenizer_n_vocab(t), mkc_tokenizer_bos(t), mkc_tokenizer_eos(t),
           mkc_tokenizer_add_bos(t) ? ", adds bos" : "", fim);
  }
  printf("graph: graphs/llama.lua, preset %s (%s)\n", mf->desc.name, desc);
  int family = mf->chat_template ? mkc_chat_detect(mf->chat_template) : MKC_CHAT_UNKNOWN;
  printf("chat template: %s\n", !mf->chat_template ? "none (chat needs --chat-template NAME)"
                                : family < 0 ? "not recognised (chat needs --chat-template NAME)"
                                             : mkc_chat_family_name(family));
  /* What run, chat, gen and bench use without --ctx (loaded.c): the same words. */
  int train = mf->desc.ctx_train, used = mkc_default_ctx(train);
  if (used < train)
    printf("context: %d positions (trained on %d, capped at %d: raise it with --ctx %d)\n", used,
           train, MKC_DEFAULT_CTX, train);
  else
    printf("context: %d positions (as trained)\n", used);
}

static int info_gguf(const char *path, const char *const *overrides, int n_overrides) {
  mkc_gguf *f = mkc_gguf_open(path);
  if (!f) return 1;
  for (int k = 0; k < n_overrides; k++) /* the file as a run with them reads it */
    if (mkc_gguf_override(f, overrides[k]) != 0) {
      mkc_gguf_close(f);
      return 1;
    }
  const char *arch = str_or_none(f, "general.architecture");
  printf("file: %s\n", path);
  printf("format: GGUF v%" PRIu32 ", %zu bytes, alignment %" PRIu64 ", %" PRIu64
         " metadata entries\n",
         f->version, f->size, f->alignment, f->n_kv);
  if (f->n_split > 1) { /* a split model: the others' sizes, the tensors all files hold */
    size_t all = f->size;
    for (uint32_t k = 0; k + 1 < f->n_split; k++) all += f->shards[k]->size;
    printf("split: %" PRIu32 " files, %zu bytes in all, through %s\n", f->n_split, all,
           f->shards[f->n_split - 2]->path);
  }
  printf("architecture: %s\n", mkc_shown(arch));
  printf("name: %s\n", mkc_shown(str_or_none(f, "general.name")));
  /* The architecture's own keys hold the sizes: block_count, embedding_length, ... */
  size_t prefix = strlen(arch);
  for (uint64_t i = 0; i < f->n_kv; i++) {
    const mkc_gguf_kv *kv = &f->kv[i];
    if (strncmp(kv->key, arch, prefix) != 0 || kv->key[prefix] != '.') continue;
    char value[256];
    mkc_gguf_format_value(kv, value, sizeof value);
    printf("%s = %s\n", mkc_shown(kv->key), value);
  }
  print_tensors(f);
  fflush(stdout);
  /* What mkc would run: a model it cannot run says why on stderr, and info
   * still succeeds, since describing the file was the job. */
  mkc_model_file mf;
  int runs = mkc_model_file_open_with(path, overrides, n_overrides, &mf) == 0;
  if (!runs || !mf.tok) {
    const mkc_gguf_kv *tokens = mkc_gguf_find(f, "tokenizer.ggml.tokens");
    printf("tokenizer: %s", mkc_shown(str_or_none(f, "tokenizer.ggml.model")));
    if (tokens && tokens->type == MKC_GGUF_ARRAY) printf(" (%" PRIu64 " tokens)", tokens->n);
    printf("\n");
  }
  if (runs) {
    print_model(&mf);
    mkc_model_file_close(&mf);
  } else {
    printf("graph: none (mkc cannot run this model: see the error above)\n");
  }
  mkc_gguf_close(f);
  return 0;
}

static int info_hf(const char *path, const char *const *overrides, int n_overrides) {
  mkc_model_file mf; /* overrides: refused there, as a folder has no GGUF metadata */
  if (mkc_model_file_open_with(path, overrides, n_overrides, &mf) != 0) return 1;
  uint64_t count[MKC_ST_DTYPE_COUNT] = {0}, bytes = 0, params = 0;
  int n = mkc_st_count(mf.st), files = 0;
  for (int i = 0; i < n; i++) {
    const mkc_st_tensor *t = mkc_st_tensor_at(mf.st, i);
    count[t->dtype]++;
    bytes += t->n_bytes;
    params += t->n_bytes / (uint64_t)mkc_st_dtype_size(t->dtype);
    if (t->file + 1 > files) files = t->file + 1;
  }
  printf("file: %s\n", path);
  printf("format: safetensors, %d file%s\n", files, files == 1 ? "" : "s");
  printf("architecture: %s\n", mf.desc.arch);
  printf("tensors: %d", n);
  const char *sep = " (";
  for (int d = 0; d < MKC_ST_DTYPE_COUNT; d++) {
    if (!count[d]) continue;
    printf("%s%s %" PRIu64, sep, mkc_st_dtype_name(d), count[d]);
    sep = ", ";
  }
  printf("%s\n", n ? ")" : "");
  printf("tensor data: %" PRIu64 " bytes (%.2f MiB), %" PRIu64 " parameters\n", bytes,
         (double)bytes / (1024.0 * 1024.0), params);
  if (!mf.tok) printf("tokenizer: none\n");
  print_model(&mf);
  mkc_model_file_close(&mf);
  return 0;
}

int mkc_cmd_info(int argc, char **argv) {
  mkc_cli c = {.usage = USAGE};
  int rc = mkc_cli_parse(argc, argv, 2, "-m --override-kv", 0, &c);
  if (rc) return rc == MKC_CLI_HELP ? 0 : rc;
  if (!c.model_path) return usage_error("%s", "info: -m FILE.gguf is required");
  const char *path = c.model_path;
  struct stat st;
  size_t len = strlen(path);
  int hf = (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
           (len > 12 && strcmp(path + len - 12, ".safetensors") == 0) ||
           (len > 23 && strcmp(path + len - 23, ".safetensors.index.json") == 0);
  return hf ? info_hf(path, c.kv_overrides, c.n_kv_overrides)
            : info_gguf(path, c.kv_overrides, c.n_kv_overrides);
}
