/* The tokenizer from a Hugging Face folder: tokenizer.json ("model" of type
 * BPE: byte-level with the pre-tokenizer GPT-2, Llama-3, Qwen2 or SmolLM
 * ships, or SentencePiece-style with "▁" and byte_fallback as Llama-2
 * ships), added_tokens as special tokens, and tokenizer_config.json for
 * bos_token, eos_token and add_bos_token. Patterns are recognised by their
 * exact text: an unknown one is an error, never a guess. Not read: the
 * normalizers other than Llama-2's (Qwen2's NFC is not applied), lstrip and
 * rstrip of added tokens; a Metaspace "first" prepend scheme adds the space
 * before every run between special tokens, as "always" does. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"
#include "util/text.h"
#include "impl.h"

#define MAX_VOCAB (1 << 24)

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Mistral's Tekken (Mistral Nemo, Mistral Small 3, Ministral) */
static const char TEKKEN_PATTERN[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* GPT-4o's o200k (Phi-4-mini, Llama 4): Tekken's with contractions and \p{N}{1,3} */
static const char GPT4O_PATTERN[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct loader {
  char json_name[1100], config_name[1100]; /* for messages */
  mkc_tok_spec spec;
  mkc_tok_str *tokens; /* [n_vocab] */
  uint8_t *types;
  mkc_tok_str *merges; /* [n_merges][2] */
} loader;

static const char *type_of(const cJSON *node) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(node, "type");
  return cJSON_IsString(type) ? type->valuestring : "";
}

static int is_true(const cJSON *node, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(node, key));
}

static const char *string_at(const cJSON *node, const char *key) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(node, key);
  return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* The pre-tokenizer: byte-level (MKC_PRE_*), MKC_PRE_NONE for
 * SentencePiece-style, -1 after a message. */
static int read_pre(loader *l, const cJSON *root, int *space_prefix) {
  const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  *space_prefix = 0;
  if (strcmp(type_of(pre), "ByteLevel") == 0) {
    if (!is_true(pre, "add_prefix_space") && !cJSON_IsFalse(cJSON_GetObjectItem(pre, "use_regex")))
      return MKC_PRE_GPT2;
  } else if (strcmp(type_of(pre), "Sequence") == 0) {
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
    const cJSON *a = cJSON_GetArrayItem(steps, 0), *b = cJSON_GetArrayItem(steps, 1);
    int two = cJSON_GetArraySize(steps) == 2 && strcmp(type_of(b), "ByteLevel") == 0 &&
              !is_true(b, "add_prefix_space");
    const char *regex = string_at(cJSON_GetObjectItemCaseSensitive(a, "pattern"), "Regex");
    const char *behavior = string_at(a, "behavior");
    if (two && strcmp(type_of(a), "Split") == 0 && regex && behavior &&
        strcmp(behavior, "Isolated") == 0 && !is_true(a, "invert")) {
      if (strcmp(regex, LLAMA3_PATTERN) == 0) return MKC_PRE_LLAMA3;
      if (strcmp(regex, QWEN2_PATTERN) == 0) return MKC_PRE_QWEN2;
      if (strcmp(regex, GPT2_PATTERN) == 0) return MKC_PRE_GPT2;
      if (strcmp(regex, TEKKEN_PATTERN) == 0) return MKC_PRE_TEKKEN;
      if (strcmp(regex, GPT4O_PATTERN) == 0) return MKC_PRE_GPT4O;
    }
    if (two && strcmp(type_of(a), "Digits") == 0 && is_true(a, "individual_digits") &&
        is_true(b, "use_regex"))
      return MKC_PRE_SMOLLM;
  } else if (strcmp(type_of(pre), "Metaspace") == 0) {
    const char *scheme = string_at(pre, "prepend_scheme");
    *space_prefix = is_true(pre, "add_prefix_space") || (scheme && strcmp(scheme, "never") != 0);
    return MKC_PRE_NONE;
  } else if (cJSON_IsNull(pre) || !pre) {
    /* Llama-2: normalizer Sequence [Prepend "▁", Replace " " -> "▁"] */
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(norm, "normalizers"), *step;
    int replace = 0;
    cJSON_ArrayForEach(step, steps) {
      const char *prepend = string_at(step, "prepend");
      *space_prefix |=
          strcmp(type_of(step), "Prepend") == 0 && prepend && strcmp(prepend, "\xe2\x96\x81") == 0;
      const char *content = string_at(step, "content");
      replace |=
          strcmp(type_of(step), "Replace") == 0 && content && strcmp(content, "\xe2\x96\x81") == 0;
    }
    if (replace || is_true(model, "byte_fallback")) return MKC_PRE_NONE;
  }
  char *text = pre ? cJSON_PrintUnformatted(pre) : NULL;
  mkc_error_in(l->json_name,
               "pre_tokenizer %.300s is not supported (mkc knows ByteLevel, the GPT-2, Llama-3, "
               "Qwen2 and Tekken Split patterns with ByteLevel, Digits with ByteLevel, and "
               "SentencePiece-style \xe2\x96\x81 for spaces)",
               text ? text : "null");
  free(text);
  return -1;
}

/* model.vocab and added_tokens into l->tokens and l->types. */
static int read_vocab(loader *l, const cJSON *model, const cJSON *added) {
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *item;
  if (!cJSON_IsObject(vocab)) {
    mkc_error_in(l->json_name, "model.vocab is missing or not an object");
    return -1;
  }
  int n = 0;
  cJSON_ArrayForEach(item, vocab) {
    if (!cJSON_IsNumber(item) || item->valuedouble != (double)item->valueint ||
        item->valueint < 0 || item->valueint >= MAX_VOCAB) {
      mkc_error_in(l->json_name, "model.vocab['%.200s'] is not an id in 0..%d", item->string,
                   MAX_VOCAB - 1);
      return -1;
    }
    if (item->valueint >= n) n = item->valueint + 1;
  }
  int k = 0;
  cJSON_ArrayForEach(item, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    if (!cJSON_IsNumber(id) || id->valuedouble != (double)id->valueint || id->valueint < 0 ||
        id->valueint >= MAX_VOCAB || !string_at(item, "content")) {
      mkc_error_in(l->json_name, "added_tokens[%d] has no id in 0..%d or no content", k,
                   MAX_VOCAB - 1);
      return -1;
    }
    if (id->valueint >= n) n = id->valueint + 1;
    k++;
  }
  if (n == 0) {
    mkc_error_in(l->json_name, "model.vocab is empty");
    return -1;
  }
  l->tokens = calloc((size_t)n, sizeof *l->tokens);
  l->types = calloc((size_t)n, 1);
  if (!l->tokens || !l->types) return -2;
  l->spec.n_vocab = n;
  cJSON_ArrayForEach(item, vocab) {
    mkc_tok_str *t = &l->tokens[item->valueint];
    if (t->s) {
      mkc_error_in(l->json_name, "model.vocab: '%.200s' and '%.200s' both have id %d", t->s,
                   item->string, item->valueint);
      return -1;
    }
    *t = (mkc_tok_str){item->string, strlen(item->string)};
    l->types[item->valueint] = MKC_TOK_NORMAL;
  }
  cJSON_ArrayForEach(item, added) {
    int id = cJSON_GetObjectItemCaseSensitive(item, "id")->valueint;
    const char *content = string_at(item, "content");
    mkc_tok_str *t = &l->tokens[id];
    if (t->s && strcmp(t->s, content) != 0) {
      mkc_error_in(l->json_name, "id %d is '%.200s' in model.vocab and '%.200s' in added_tokens",
                   id, t->s, content);
      return -1;
    }
    *t = (mkc_tok_str){content, strlen(content)};
    l->types[id] = is_true(item, "special") ? MKC_TOK_CONTROL : MKC_TOK_USER_DEFINED;
  }
  for (int i = 0; i < n; i++) {
    if (!l->tokens[i].s) {
      mkc_error_in(l->json_name, "no token has id %d (ids run to %d)", i, n - 1);
      return -1;
    }
  }
  return 0;
}

static int read_merges(loader *l, const cJSON *model) {
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges"), *item;
  if (!cJSON_IsArray(merges)) {
    mkc_error_in(l->json_name, "model.merges is missing or not an array");
    return -1;
  }
  int n = cJSON_GetArraySize(merges), r = 0;
  l->merges = malloc(((size_t)n * 2 + 1) * sizeof *l->merges);
  if (!l->merges) return -2;
  cJSON_ArrayForEach(item, merges) {
    const char *a = NULL, *b = NULL;
    size_t na = 0;
    if (cJSON_IsString(item)) { /* "left right" */
      const char *space = strchr(item->valuestring, ' ');
      if (space) a = item->valuestring, na = (size_t)(space - a), b = space + 1;
    } else if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 2 &&
               cJSON_IsString(item->child) && cJSON_IsString(item->child->next)) {
      a = item->child->valuestring, na = strlen(a), b = item->child->next->valuestring;
    }
    if (!a) {
      char *text = cJSON_PrintUnformatted(item);
      mkc_error_in(l->json_name, "model.merges[%d] %.200s is not two tokens", r, text ? text : "?");
      free(text);
      return -1;
    }
    l->merges[2 * r] = (mkc_tok_str){a, na};
    l->merges[2 * r + 1] = (mkc_tok_str){b, strlen(b)};
    r++;
  }
  l->spec.n_merges = r;
  l->spec.merges = l->merges;
  return 0;
}

/* A token named in the config: a string, or {"content": string}. */
static int config_token(loader *l, const cJSON *config, const char *key, int *id) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, key);
  const char *s = cJSON_IsString(item) ? item->valuestring : string_at(item, "content");
  if (!item || cJSON_IsNull(item)) return 0;
  int found = -1;
  for (int i = 0; s && i < l->spec.n_vocab && found < 0; i++)
    if (l->tokens[i].n == strlen(s) && memcmp(l->tokens[i].s, s, l->tokens[i].n) == 0) found = i;
  if (found < 0) {
    mkc_error_in(l->config_name, "%s %s is not a token", key, s ? mkc_shown(s) : "(not a string)");
    return -1;
  }
  *id = found;
  return 0;
}

/* Without a config: BOS is what post_processor puts first (Llama's
 * TemplateProcessing), the unknown token is model.unk_token. */
static int token_named(const loader *l, const char *s) {
  for (int i = 0; s && i < l->spec.n_vocab; i++)
    if (strcmp(l->tokens[i].s, s) == 0) return i;
  return -1;
}

static mkc_tokenizer *load(loader *l, const cJSON *root, const cJSON *config) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (!cJSON_IsObject(model) || strcmp(type_of(model), "BPE") != 0) {
    mkc_error_in(l->json_name, "model.type is '%s', mkc reads 'BPE'",
                 model ? mkc_shown(type_of(model)) : "(no model)");
    return NULL;
  }
  int space_prefix, pre = read_pre(l, root, &space_prefix);
  if (pre < 0) return NULL;
  mkc_tok_spec *spec = &l->spec;
  spec->mode = pre == MKC_PRE_NONE ? MKC_TOK_SPM_MERGES : MKC_TOK_BPE;
  spec->pre = pre;
  spec->add_space_prefix = space_prefix;
  spec->ignore_merges = is_true(model, "ignore_merges");
  spec->merges_name = "model.merges";
  spec->bos = spec->eos = spec->unk = spec->pad = spec->eot = spec->eom = -1;
  for (int k = 0; k < MKC_FIM_COUNT; k++) spec->fim[k] = -1; /* found by their texts */
  spec->add_bos = 0;
  int rc = read_vocab(l, model, added);
  if (rc == 0) rc = read_merges(l, model);
  if (rc == -2) mkc_error_in(l->json_name, "out of memory");
  if (rc) return NULL;
  spec->tokens = l->tokens;
  spec->types = l->types;
  if (spec->mode == MKC_TOK_SPM_MERGES) { /* <0xXX> are bytes */
    for (int i = 0; i < spec->n_vocab; i++) {
      const mkc_tok_str *t = &l->tokens[i];
      if (l->types[i] == MKC_TOK_NORMAL && t->n == 6 && memcmp(t->s, "<0x", 3) == 0 &&
          t->s[5] == '>')
        l->types[i] = MKC_TOK_BYTE;
    }
  }
  spec->unk = token_named(l, string_at(model, "unk_token"));
  spec->unk_chars = spec->mode == MKC_TOK_BPE && !is_true(model, "byte_fallback");
  spec->fuse_unk = is_true(model, "fuse_unk");
  if (spec->unk >= 0 && l->types[spec->unk] == MKC_TOK_NORMAL)
    l->types[spec->unk] = MKC_TOK_UNKNOWN;
  const cJSON *post = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
  const cJSON *single = cJSON_GetObjectItemCaseSensitive(post, "single");
  const cJSON *first =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(single, 0), "SpecialToken");
  if (strcmp(type_of(post), "TemplateProcessing") == 0 && first) {
    spec->bos = token_named(l, string_at(first, "id"));
    spec->add_bos = spec->bos >= 0;
  }
  /* a special token after the text (an embedding model's end, e.g. Qwen3-Embedding's) */
  int n_single = cJSON_GetArraySize(single);
  const cJSON *last =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(single, n_single - 1), "SpecialToken");
  spec->end_token = -1;
  if (strcmp(type_of(post), "TemplateProcessing") == 0 && last && n_single > 1) {
    spec->end_token = token_named(l, string_at(last, "id"));
    spec->add_eos = spec->end_token >= 0;
  }
  if (config) {
    if (config_token(l, config, "bos_token", &spec->bos) ||
        config_token(l, config, "eos_token", &spec->eos) ||
        config_token(l, config, "pad_token", &spec->pad))
      return NULL;
    const cJSON *add_bos = cJSON_GetObjectItemCaseSensitive(config, "add_bos_token");
    if (cJSON_IsBool(add_bos)) spec->add_bos = cJSON_IsTrue(add_bos);
    const cJSON *add_eos = cJSON_GetObjectItemCaseSensitive(config, "add_eos_token");
    if (cJSON_IsBool(add_eos)) spec->add_eos = cJSON_IsTrue(add_eos);
  }
  spec->source = l->json_name;
  return mkc_tok_build(spec);
}

static cJSON *parse(const char *text, size_t n, const char *name) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
  if (!root || !cJSON_IsObject(root)) {
    mkc_error_in(name, "not a JSON object (%s at byte %zu)", root ? "a value" : "a syntax error",
                 root || !end ? (size_t)0 : (size_t)(end - text));
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

mkc_tokenizer *mkc_tok_from_json(const char *json, size_t n, const char *config, size_t config_n,
                                 const char *dir) {
  loader l = {0};
  snprintf(l.json_name, sizeof l.json_name, "%s/tokenizer.json", dir);
  snprintf(l.config_name, sizeof l.config_name, "%s/tokenizer_config.json", dir);
  cJSON *root = parse(json, n, l.json_name), *conf = NULL;
  mkc_tokenizer *t = NULL;
  if (root && (!config || (conf = parse(config, config_n, l.config_name))))
    t = load(&l, root, conf);
  cJSON_Delete(root);
  cJSON_Delete(conf);
  free(l.tokens);
  free(l.types);
  free(l.merges);
  return t;
}

mkc_tokenizer *mkc_tokenizer_from_hf(const char *dir) {
  char path[1100];
  size_t n, config_n = 0;
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  char *json = mkc_read_file(path, &n);
  if (!json) {
    mkc_error_in(path, "cannot read: %s", strerror(errno));
    return NULL;
  }
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  char *config = mkc_read_file(path, &config_n); /* optional */
  mkc_tokenizer *t = mkc_tok_from_json(json, n, config, config_n, dir);
  free(json);
  free(config);
  return t;
}
