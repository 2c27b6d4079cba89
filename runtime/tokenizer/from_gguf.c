/* The tokenizer from GGUF metadata, the keys llama.cpp's converters write:
 * tokenizer.ggml.model, .pre, .tokens, .scores, .token_type, .merges, the
 * special token ids, .add_bos_token and .add_space_prefix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/text.h"
#include "impl.h"

#define MAX_VOCAB (1 << 24)

/* tokenizer.ggml.pre values and the pattern each names: every name
 * llama.cpp reads as one of the patterns mkc splits with (its
 * llama-vocab.cpp; DeepSeek-R1's Qwen distills keep Qwen2's pattern, Falcon3
 * Llama 3's, StarCoder's digits-apart split serves Refact, Command R and
 * SmolLM), with the same ignore_merges. */
static const struct {
  const char *name;
  int pre, ignore_merges;
} PRES[] = {
    {"default", MKC_PRE_GPT2, 0},      {"gpt2", MKC_PRE_GPT2, 0},
    {"gpt-2", MKC_PRE_GPT2, 0},        {"phi-2", MKC_PRE_GPT2, 0},
    {"jina-es", MKC_PRE_GPT2, 0},      {"jina-de", MKC_PRE_GPT2, 0},
    {"jina-v2-es", MKC_PRE_GPT2, 0},   {"jina-v2-de", MKC_PRE_GPT2, 0},
    {"gigachat", MKC_PRE_GPT2, 0},     {"a.x-4.0", MKC_PRE_GPT2, 0},
    {"mellum", MKC_PRE_GPT2, 0},       {"exaone4", MKC_PRE_GPT2, 0},
    {"llama-bpe", MKC_PRE_LLAMA3, 1},  {"llama3", MKC_PRE_LLAMA3, 1},
    {"llama-v3", MKC_PRE_LLAMA3, 1},   {"falcon3", MKC_PRE_LLAMA3, 1},
    {"falcon-h1", MKC_PRE_LLAMA3, 1},  {"pixtral", MKC_PRE_LLAMA3, 1},
    {"midm-2.0", MKC_PRE_LLAMA3, 1},   {"lfm2", MKC_PRE_LLAMA3, 1},
    {"qwen2", MKC_PRE_QWEN2, 0},       {"deepseek-r1-qwen", MKC_PRE_QWEN2, 0},
    {"megrez", MKC_PRE_QWEN2, 0},      {"kormo", MKC_PRE_QWEN2, 0},
    {"smollm", MKC_PRE_SMOLLM, 0},     {"starcoder", MKC_PRE_SMOLLM, 0},
    {"refact", MKC_PRE_SMOLLM, 0},     {"command-r", MKC_PRE_SMOLLM, 0},
    {"codeshell", MKC_PRE_SMOLLM, 0},  {"exaone", MKC_PRE_SMOLLM, 0},
    {"minerva-7b", MKC_PRE_SMOLLM, 0}, {"mellum2", MKC_PRE_SMOLLM, 0},
    {"tekken", MKC_PRE_TEKKEN, 1},     {"gpt-4o", MKC_PRE_GPT4O, 0},
    {"llama4", MKC_PRE_GPT4O, 0},      {"kanana2", MKC_PRE_GPT4O, 0},
    {"talkie", MKC_PRE_GPT4O, 0},
};

static int is_integer_type(uint32_t type) {
  return type <= MKC_GGUF_INT32 || type == MKC_GGUF_UINT64 || type == MKC_GGUF_INT64;
}

/* A numeric array with one entry per token: 1, 0 when absent, -1 after a
 * message. */
static int per_token_array(const mkc_gguf *f, const char *key, int n_vocab, int want_float,
                           const mkc_gguf_kv **kv) {
  int rc = mkc_gguf_get_arr(f, key, -1, kv);
  if (rc <= 0) return rc;
  uint32_t type = (*kv)->elem_type;
  if (want_float ? type != MKC_GGUF_FLOAT32 && type != MKC_GGUF_FLOAT64 : !is_integer_type(type)) {
    mkc_error_in(f->path, "metadata '%s': Expected an array of %s, Actual an array of %s", key,
                 want_float ? "f32" : "integers", mkc_gguf_vtype_name(type));
    return -1;
  }
  if ((*kv)->n != (uint64_t)n_vocab) {
    mkc_error_in(f->path, "%s has %llu entries for %d tokens", key, (unsigned long long)(*kv)->n,
                 n_vocab);
    return -1;
  }
  return 1;
}

/* tokenizer.ggml.NAME_token_id into *id: -1 when absent or negative. */
static int token_id(const mkc_gguf *f, const char *name, int n_vocab, int *id) {
  char key[64];
  snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", name);
  int64_t v;
  int rc = mkc_gguf_get_int(f, key, &v);
  *id = -1;
  if (rc < 0) return -1;
  if (rc == 0 || v < 0) return 0;
  if (v >= n_vocab) {
    mkc_error_in(f->path, "%s is %lld, beyond the %d tokens", key, (long long)v, n_vocab);
    return -1;
  }
  *id = (int)v;
  return 0;
}

static int get_flag(const mkc_gguf *f, const char *key, int *v) {
  *v = -1;
  return mkc_gguf_get_bool(f, key, v) < 0 ? -1 : 0;
}

/* tokenizer.ggml.model and .pre: spec's mode, pre-tokenizer and ignore_merges. */
static int read_mode(const mkc_gguf *f, mkc_tok_spec *spec) {
  const char *src = f->path, *model, *pre = NULL;
  int rc = mkc_gguf_get_str(f, "tokenizer.ggml.model", &model);
  if (rc <= 0) {
    if (rc == 0) mkc_error_in(src, "no tokenizer.ggml.model: the file has no tokenizer");
    return -1;
  }
  if (strcmp(model, "llama") == 0) {
    spec->mode = MKC_TOK_SPM;
  } else if (strcmp(model, "gpt2") == 0) {
    spec->mode = MKC_TOK_BPE;
  } else {
    mkc_error_in(src, "tokenizer.ggml.model '%s' is not supported (mkc reads 'llama' and 'gpt2')",
                 mkc_shown(model));
    return -1;
  }
  if (mkc_gguf_get_str(f, "tokenizer.ggml.pre", &pre) < 0) return -1;
  if (spec->mode != MKC_TOK_BPE) return 0;
  size_t k = 0, n = sizeof PRES / sizeof *PRES;
  while (k < n && strcmp(PRES[k].name, pre ? pre : "default") != 0) k++;
  if (k == n) {
    char known[600] = "";
    for (size_t i = 0, len = 0; i < n && len < sizeof known; i++)
      len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", PRES[i].name);
    mkc_error_in(src, "tokenizer.ggml.pre '%s' is not supported (mkc knows %s)",
                 mkc_shown(pre ? pre : "default"), known);
    return -1;
  }
  spec->pre = PRES[k].pre;
  spec->ignore_merges = PRES[k].ignore_merges;
  return 0;
}

/* The vocabulary's arrays; scores, types and merges NULL where absent. */
typedef struct vocab_arrays {
  const mkc_gguf_kv *tokens, *scores, *types, *merges;
} vocab_arrays;

/* The arrays spec's mode needs, each checked for length; sets spec's n_vocab. */
static int read_arrays(const mkc_gguf *f, mkc_tok_spec *spec, vocab_arrays *a) {
  const char *src = f->path;
  *a = (vocab_arrays){0};
  int rc = mkc_gguf_get_arr(f, "tokenizer.ggml.tokens", MKC_GGUF_STRING, &a->tokens);
  if (rc <= 0) {
    if (rc == 0) mkc_error_in(src, "no tokenizer.ggml.tokens");
    return -1;
  }
  if (a->tokens->n == 0 || a->tokens->n > MAX_VOCAB) {
    mkc_error_in(src, "tokenizer.ggml.tokens has %llu entries (1 to %d)",
                 (unsigned long long)a->tokens->n, MAX_VOCAB);
    return -1;
  }
  int n = spec->n_vocab = (int)a->tokens->n;
  rc = per_token_array(f, "tokenizer.ggml.scores", n, 1, &a->scores);
  if (rc < 0) return -1;
  if (rc == 0 && spec->mode == MKC_TOK_SPM) {
    mkc_error_in(src, "no tokenizer.ggml.scores: SentencePiece merges by score");
    return -1;
  }
  if (per_token_array(f, "tokenizer.ggml.token_type", n, 0, &a->types) < 0) return -1;
  if (spec->mode != MKC_TOK_BPE) return 0;
  rc = mkc_gguf_get_arr(f, "tokenizer.ggml.merges", MKC_GGUF_STRING, &a->merges);
  if (rc <= 0) {
    if (rc == 0) mkc_error_in(src, "no tokenizer.ggml.merges: byte-level BPE needs them");
    return -1;
  }
  if (a->merges->n > INT32_MAX / 2) {
    mkc_error_in(src, "tokenizer.ggml.merges has %llu entries (at most %d)",
                 (unsigned long long)a->merges->n, INT32_MAX / 2);
    return -1;
  }
  return 0;
}

/* The special token ids and the two flags. */
static int read_specials(const mkc_gguf *f, mkc_tok_spec *spec) {
  int n = spec->n_vocab;
  if (token_id(f, "bos", n, &spec->bos) || token_id(f, "eos", n, &spec->eos) ||
      token_id(f, "unknown", n, &spec->unk) || token_id(f, "padding", n, &spec->pad) ||
      token_id(f, "eot", n, &spec->eot) || token_id(f, "eom", n, &spec->eom) ||
      token_id(f, "fim_pre", n, &spec->fim[MKC_FIM_PRE]) ||
      token_id(f, "fim_suf", n, &spec->fim[MKC_FIM_SUF]) ||
      token_id(f, "fim_mid", n, &spec->fim[MKC_FIM_MID]) ||
      token_id(f, "fim_pad", n, &spec->fim[MKC_FIM_PAD]) ||
      token_id(f, "fim_rep", n, &spec->fim[MKC_FIM_REP]) ||
      token_id(f, "fim_sep", n, &spec->fim[MKC_FIM_SEP]) ||
      get_flag(f, "tokenizer.ggml.add_bos_token", &spec->add_bos) ||
      get_flag(f, "tokenizer.ggml.add_eos_token", &spec->add_eos) ||
      get_flag(f, "tokenizer.ggml.add_space_prefix", &spec->add_space_prefix))
    return -1;
  return 0;
}

/* Each token's text, score (if score) and type (if type), checked. */
static int copy_tokens(const char *src, const vocab_arrays *a, int n, mkc_tok_str *strs,
                       float *score, uint8_t *type) {
  for (int i = 0; i < n; i++) {
    mkc_gguf_str s = mkc_gguf_arr_str(a->tokens, (uint64_t)i);
    strs[i] = (mkc_tok_str){s.s, (size_t)s.len};
    if (score) {
      score[i] = (float)mkc_gguf_arr_float(a->scores, (uint64_t)i);
      if (isnan(score[i])) {
        mkc_error_in(src, "tokenizer.ggml.scores[%d] is not a number", i);
        return -1;
      }
    }
    if (type) {
      int64_t v = mkc_gguf_arr_int(a->types, (uint64_t)i);
      if (v < MKC_TOK_UNDEFINED || v > MKC_TOK_BYTE) {
        mkc_error_in(src, "tokenizer.ggml.token_type[%d] is %lld, not a token type (0..6)", i,
                     (long long)v);
        return -1;
      }
      type[i] = (uint8_t)v;
    }
  }
  return 0;
}

/* Each merge "left right" into pairs[2r], pairs[2r+1]. */
static int split_merges(const char *src, const mkc_gguf_kv *merges, int n_merges,
                        mkc_tok_str *pairs) {
  for (int r = 0; r < n_merges; r++) {
    mkc_gguf_str s = mkc_gguf_arr_str(merges, (uint64_t)r);
    const char *space = s.len ? memchr(s.s, ' ', (size_t)s.len) : NULL;
    if (!space) {
      mkc_error_in(src, "tokenizer.ggml.merges[%d] '%s' is not two tokens and a space between", r,
                   mkc_shown_n(s.s, (size_t)s.len));
      return -1;
    }
    size_t left = (size_t)(space - s.s);
    pairs[2 * r] = (mkc_tok_str){s.s, left};
    pairs[2 * r + 1] = (mkc_tok_str){space + 1, (size_t)s.len - left - 1};
  }
  return 0;
}

mkc_tokenizer *mkc_tokenizer_from_gguf(const mkc_gguf *f) {
  const char *src = f->path;
  mkc_tok_spec spec = {.source = src, .merges_name = "tokenizer.ggml.merges", .end_token = -1};
  vocab_arrays a;
  if (read_mode(f, &spec) || read_arrays(f, &spec, &a) || read_specials(f, &spec)) return NULL;

  int n = spec.n_vocab;
  mkc_tok_str *strs = malloc((size_t)n * sizeof *strs);
  float *score = a.scores ? malloc((size_t)n * sizeof *score) : NULL;
  uint8_t *type = a.types ? malloc((size_t)n) : NULL;
  spec.n_merges = a.merges ? (int)a.merges->n : 0;
  mkc_tok_str *pairs = malloc(((size_t)spec.n_merges * 2 + 1) * sizeof *pairs);
  mkc_tokenizer *t = NULL;
  if (!strs || (a.scores && !score) || (a.types && !type) || !pairs) {
    mkc_error_in(src, "out of memory");
    goto done;
  }
  if (copy_tokens(src, &a, n, strs, score, type) ||
      split_merges(src, a.merges, spec.n_merges, pairs))
    goto done;
  if (spec.unk < 0 && type) /* SentencePiece files name it by type */
    for (int i = 0; i < n && spec.unk < 0; i++)
      if (type[i] == MKC_TOK_UNKNOWN) spec.unk = i;
  spec.tokens = strs;
  spec.scores = score;
  spec.types = type;
  spec.merges = pairs;
  t = mkc_tok_build(&spec);
done:
  free(strs);
  free(score);
  free(type);
  free(pairs);
  return t;
}
