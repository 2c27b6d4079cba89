/* tokenizer.json for a GGUF vocabulary, written as Hugging Face ships such
 * a model: the tokenizer tests load both and compare, and the model tests
 * turn a GGUF model into a Hugging Face folder. */
#ifndef MKC_HF_TOKENIZER_JSON_H
#define MKC_HF_TOKENIZER_JSON_H

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

/* The patterns HF ships in tokenizer.json (Split, behavior Isolated). */
static const char LLAMA3_REGEX[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_REGEX[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Mistral Nemo's */
static const char TEKKEN_REGEX[] = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*["
                                   "\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{"
                                   "L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}"
                                   "\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{"
                                   "N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* GPT-4o's o200k (Phi-4-mini's tokenizer.json) */
static const char GPT4O_REGEX[] = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{"
                                  "Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'"
                                  "re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}"
                                  "\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}"
                                  "\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
                                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!"
                                  "\\S)|\\s+";

static cJSON *byte_level(int use_regex) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "type", "ByteLevel");
  cJSON_AddBoolToObject(p, "add_prefix_space", 0);
  cJSON_AddBoolToObject(p, "use_regex", use_regex);
  return p;
}

static cJSON *sequence(cJSON *first, cJSON *second) {
  cJSON *p = cJSON_CreateObject(), *steps = cJSON_AddArrayToObject(p, "pretokenizers");
  cJSON_AddStringToObject(p, "type", "Sequence");
  cJSON_AddItemToArray(steps, first);
  cJSON_AddItemToArray(steps, second);
  return p;
}

typedef struct spm_merge {
  float score;
  int id, split;
} spm_merge;

static int by_score(const void *a, const void *b) {
  const spm_merge *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->split - y->split;
}

/* tokenizer.json for the GGUF's vocabulary, as HF ships such a model:
 * byte-level BPE with its pre-tokenizer, or Llama-2's SentencePiece-style
 * BPE whose merges (every split of a token into two tokens, best score
 * first) reproduce merging by score. NULL if the file is neither. */
static char *json_from_gguf(const mkc_gguf *f) {
  const mkc_gguf_kv *tokens, *types, *merges = NULL, *scores = NULL;
  const char *model_name = "", *pre_name = "default";
  mkc_gguf_get_str(f, "tokenizer.ggml.model", &model_name);
  mkc_gguf_get_str(f, "tokenizer.ggml.pre", &pre_name);
  if (mkc_gguf_get_arr(f, "tokenizer.ggml.tokens", MKC_GGUF_STRING, &tokens) != 1 ||
      mkc_gguf_get_arr(f, "tokenizer.ggml.token_type", -1, &types) != 1)
    return NULL;
  int spm = strcmp(model_name, "llama") == 0, n = (int)tokens->n;
  if (spm ? mkc_gguf_get_arr(f, "tokenizer.ggml.scores", -1, &scores) != 1
          : mkc_gguf_get_arr(f, "tokenizer.ggml.merges", -1, &merges) != 1)
    return NULL;
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *vocab = cJSON_AddObjectToObject(model, "vocab"),
        *merge_list = cJSON_AddArrayToObject(model, "merges");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  cJSON_AddStringToObject(model, "type", "BPE");
  char **text = calloc((size_t)n, sizeof *text);
  for (int i = 0; i < n; i++) {
    mkc_gguf_str s = mkc_gguf_arr_str(tokens, (uint64_t)i);
    text[i] = strndup(s.s, (size_t)s.len);
    cJSON_AddNumberToObject(vocab, text[i], i);
    int64_t type = mkc_gguf_arr_int(types, (uint64_t)i);
    if (type == 2 || type == 3) {
      cJSON *tok = cJSON_CreateObject();
      cJSON_AddNumberToObject(tok, "id", i);
      cJSON_AddStringToObject(tok, "content", text[i]);
      cJSON_AddBoolToObject(tok, "special", 1);
      cJSON_AddItemToArray(added, tok);
    }
  }
  if (spm) {
    mkc_tokenizer *t = mkc_tokenizer_from_gguf(f);
    spm_merge *list = NULL;
    size_t count = 0, cap = 0;
    for (int i = 0; t && i < n; i++) {
      size_t len = strlen(text[i]);
      if (mkc_gguf_arr_int(types, (uint64_t)i) != 1) continue;
      for (size_t k = 1; k < len; k++) {
        if (((unsigned char)text[i][k] & 0xc0) == 0x80) continue; /* inside a character */
        int left = mkc_tokenizer_find(t, text[i], k),
            right = mkc_tokenizer_find(t, text[i] + k, len - k);
        if (left < 0 || right < 0 || mkc_gguf_arr_int(types, (uint64_t)left) != 1 ||
            mkc_gguf_arr_int(types, (uint64_t)right) != 1)
          continue;
        if (count == cap) list = realloc(list, (cap = cap ? 2 * cap : 1024) * sizeof *list);
        list[count++] = (spm_merge){(float)mkc_gguf_arr_float(scores, (uint64_t)i), i, (int)k};
      }
    }
    qsort(list, count, sizeof *list, by_score);
    for (size_t m = 0; m < count; m++) {
      char *s = text[list[m].id], *left = strndup(s, (size_t)list[m].split);
      cJSON *pair = cJSON_CreateArray();
      cJSON_AddItemToArray(pair, cJSON_CreateString(left));
      cJSON_AddItemToArray(pair, cJSON_CreateString(s + list[m].split));
      cJSON_AddItemToArray(merge_list, pair);
      free(left);
    }
    free(list);
    mkc_tokenizer_free(t);
    cJSON_AddBoolToObject(model, "byte_fallback", 1);
    cJSON_AddStringToObject(model, "unk_token", "<unk>");
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer"), *steps;
    cJSON_AddStringToObject(norm, "type", "Sequence");
    steps = cJSON_AddArrayToObject(norm, "normalizers");
    cJSON_AddItemToArray(steps, cJSON_Parse("{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"}"));
    cJSON_AddItemToArray(steps, cJSON_Parse("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                                            "\"content\":\"\xe2\x96\x81\"}"));
    cJSON_AddNullToObject(root, "pre_tokenizer");
  } else {
    for (uint64_t m = 0; m < merges->n; m++) {
      mkc_gguf_str s = mkc_gguf_arr_str(merges, m);
      char *merge = strndup(s.s, (size_t)s.len);
      cJSON_AddItemToArray(merge_list, cJSON_CreateString(merge));
      free(merge);
    }
    const char *regex = strcmp(pre_name, "llama-bpe") == 0 ? LLAMA3_REGEX
                        : strcmp(pre_name, "qwen2") == 0   ? QWEN2_REGEX
                        : strcmp(pre_name, "tekken") == 0  ? TEKKEN_REGEX
                        : strcmp(pre_name, "gpt-4o") == 0  ? GPT4O_REGEX
                                                           : NULL;
    cJSON *pre;
    if (regex) {
      cJSON *split = cJSON_CreateObject(), *pattern = cJSON_AddObjectToObject(split, "pattern");
      cJSON_AddStringToObject(split, "type", "Split");
      cJSON_AddStringToObject(pattern, "Regex", regex);
      cJSON_AddStringToObject(split, "behavior", "Isolated");
      cJSON_AddBoolToObject(split, "invert", 0);
      pre = sequence(split, byte_level(0));
    } else if (strcmp(pre_name, "smollm") == 0 || strcmp(pre_name, "refact") == 0 ||
               strcmp(pre_name, "starcoder") == 0 || strcmp(pre_name, "command-r") == 0) {
      /* StarCoder's tokenizer.json (SmolLM's, Refact's and Command R's alike) */
      pre =
          sequence(cJSON_Parse("{\"type\":\"Digits\",\"individual_digits\":true}"), byte_level(1));
    } else {
      pre = byte_level(1);
    }
    cJSON_AddItemToObject(root, "pre_tokenizer", pre);
    cJSON_AddBoolToObject(model, "ignore_merges",
                          strcmp(pre_name, "llama-bpe") == 0 || strcmp(pre_name, "tekken") == 0);
  }
  char *json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  for (int i = 0; i < n; i++) free(text[i]);
  free(text);
  return json;
}

#endif
