/* libFuzzer target for the tokenizers. The first byte picks what the rest
 * is: (0) a GGUF file whose tokenizer metadata is loaded and, when it loads,
 * used on a fixed text and on the input; (1) text for fixed small
 * vocabularies, SentencePiece and byte-level BPE with each pre-tokenizer;
 * (2) a tokenizer.json. Nothing may crash or read out of bounds, and:
 * pre-tokens cover the text exactly; the streaming detokenizer writes only
 * whole UTF-8 characters and never more than MKC_DETOK_MAX; byte-level BPE
 * decodes valid UTF-8 back exactly, SentencePiece too unless the text holds
 * a literal "▁" (which comes back as a space).
 * Seeds in fuzz/corpus/tokenizer: small vocabularies of each model, texts,
 * tokenizer.json files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/impl.h"
#include "tokenizer/utf8.h"

static int valid_utf8(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    int32_t cp;
    int len = mkc_utf8_next(s + i, n - i, &cp);
    if (len <= 0) return 0;
    i += (size_t)len;
  }
  return 1;
}

/* Encodes, streams the ids back and checks the invariants; returns the
 * decoded text (malloc'd, *len bytes) or NULL. */
static char *round_trip(const mkc_tokenizer *t, const char *s, size_t n, int special,
                        size_t *out_len) {
  int *ids = NULL;
  int count = mkc_tokenizer_encode(t, s, n, special, special, &ids);
  if (count < 0) return NULL;
  for (int i = 0; i < count; i++)
    if (ids[i] < 0 || ids[i] >= mkc_tokenizer_n_vocab(t)) abort();
  mkc_detok d;
  char chunk[MKC_DETOK_MAX + 1];
  size_t len = 0, cap = 64;
  char *text = malloc(cap);
  mkc_detok_init(&d, t, special);
  for (int i = 0; i <= count && text; i++) {
    size_t m = i < count ? mkc_detok_push(&d, ids[i], chunk, MKC_DETOK_MAX)
                         : mkc_detok_flush(&d, chunk, MKC_DETOK_MAX);
    if (m > MKC_DETOK_MAX || !valid_utf8(chunk, m)) abort();
    if (len + m + 1 > cap) {
      while (len + m + 1 > cap) cap *= 2;
      char *grown = realloc(text, cap);
      if (!grown) break;
      text = grown;
    }
    memcpy(text + len, chunk, m);
    len += m;
  }
  if (text) {
    text[len] = '\0';
    char *whole = mkc_tokenizer_decode(t, ids, count, special);
    if (whole && memcmp(whole, text, len + 1) != 0) abort(); /* decode is the stream, flushed */
    free(whole);
    *out_len = len;
  }
  free(ids);
  return text;
}

static int append_piece(void *ctx, const char *s, size_t n) {
  char **at = ctx;
  if (n == 0 || memcmp(*at, s, n) != 0) abort(); /* pieces are the text, in order */
  *at += n;
  return 0;
}

static mkc_tokenizer *fixed[2];

/* A SentencePiece vocabulary with byte fallback and a byte-level one with
 * a few merges and special tokens, built once. */
static void build_fixed(void) {
  static char names[256][8], chars[256][4];
  mkc_tok_str tokens[300];
  float scores[300];
  uint8_t types[300];
  const char *spm[] = {"\xe2\x96\x81",    "t", "h", "e", "\xe2\x96\x81t", "he",
                       "\xe2\x96\x81the", "a", "aa"};
  int n = 0;
  const char *control[] = {"<unk>", "<s>", "</s>"};
  for (int i = 0; i < 3; i++)
    tokens[n] = (mkc_tok_str){control[i], strlen(control[i])}, types[n] = i ? 3 : 2,
    scores[n++] = 0;
  for (int b = 0; b < 256; b++) {
    snprintf(names[b], sizeof names[b], "<0x%02X>", b);
    tokens[n] = (mkc_tok_str){names[b], 6}, types[n] = 6, scores[n++] = 0;
  }
  for (int i = 0; i < 9; i++)
    tokens[n] = (mkc_tok_str){spm[i], strlen(spm[i])}, types[n] = 1, scores[n++] = (float)-i;
  fixed[0] = mkc_tok_build(&(mkc_tok_spec){.source = "fuzz-spm",
                                           .mode = MKC_TOK_SPM,
                                           .n_vocab = n,
                                           .tokens = tokens,
                                           .scores = scores,
                                           .types = types,
                                           .bos = 1,
                                           .eos = 2,
                                           .unk = 0,
                                           .pad = -1,
                                           .eot = -1,
                                           .eom = -1,
                                           .add_bos = -1,
                                           .add_space_prefix = -1});
  n = 0;
  for (int b = 0; b < 256; b++) {
    int len = mkc_utf8_put(mkc_bpe_byte_char(b), chars[b]);
    tokens[n] = (mkc_tok_str){chars[b], (size_t)len}, types[n++] = 1;
  }
  const char *more[] = {"\xc4\xa0t",   "th", "the",           "\xc4\xa0th",
                        "\xc4\xa0the", "12", "<|endoftext|>", "<tool>"};
  for (int i = 0; i < 8; i++) tokens[n] = (mkc_tok_str){more[i], strlen(more[i])}, types[n++] = 1;
  types[n - 2] = 3, types[n - 1] = 4;
  const char *merge_text[][2] = {{"\xc4\xa0", "t"},  {"t", "h"},          {"th", "e"},
                                 {"\xc4\xa0t", "h"}, {"\xc4\xa0th", "e"}, {"1", "2"}};
  mkc_tok_str merges[12];
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++)
      merges[2 * i + k] = (mkc_tok_str){merge_text[i][k], strlen(merge_text[i][k])};
  fixed[1] = mkc_tok_build(&(mkc_tok_spec){.source = "fuzz-bpe",
                                           .mode = MKC_TOK_BPE,
                                           .pre = MKC_PRE_GPT2,
                                           .n_vocab = n,
                                           .tokens = tokens,
                                           .types = types,
                                           .n_merges = 6,
                                           .merges = merges,
                                           .merges_name = "merges",
                                           .bos = -1,
                                           .eos = n - 2,
                                           .unk = -1,
                                           .pad = -1,
                                           .eot = -1,
                                           .eom = -1,
                                           .add_bos = -1});
  if (!fixed[0] || !fixed[1]) abort();
}

static void fuzz_text(int pre, const char *s, size_t n) {
  char *at = (char *)s;
  mkc_pretokenize(pre, s, n, append_piece, &at);
  if (at != s + n) abort();
  int valid = valid_utf8(s, n);
  mkc_tokenizer *bpe = fixed[1];
  bpe->pre = pre;
  size_t len;
  for (int special = 0; special < 2; special++) {
    char *text = round_trip(bpe, s, n, special, &len);
    if (!text) abort();
    if (valid && (len != n || memcmp(text, s, n) != 0)) abort();
    free(text);
  }
  char *text = round_trip(fixed[0], s, n, 0, &len);
  if (!text) abort();
  int mark = n >= 3 && memmem(s, n, "\xe2\x96\x81", 3) != NULL;
  if (valid && !mark && (len != n || memcmp(text, s, n) != 0)) abort();
  free(text);
}

static void use(const mkc_tokenizer *t, const char *s, size_t n) {
  static const char sample[] = "Hello world <|im_start|> 123 caf\xc3\xa9 \xf0\x9f\x98\x80\n\n";
  size_t len;
  free(round_trip(t, sample, sizeof sample - 1, 1, &len));
  free(round_trip(t, s, n < 4096 ? n : 4096, 0, &len));
  for (int id = -1; id <= mkc_tokenizer_n_vocab(t) && id < 2000; id++) mkc_tokenizer_is_eog(t, id);
  (void)mkc_tokenizer_kind(t), (void)mkc_tokenizer_add_bos(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fixed[0]) build_fixed();
  if (size < 1) return 0;
  const char *rest = (const char *)data + 1;
  size_t n = size - 1;
  int mode = data[0] % 3;
  if (mode == 0) {
    mkc_gguf *f = mkc_gguf_open_memory(rest, n, "fuzz.gguf");
    mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
    mkc_gguf_close(f);
    if (t) use(t, rest, n);
    mkc_tokenizer_free(t);
  } else if (mode == 1) {
    fuzz_text(1 + data[0] / 3 % 6, rest, n); /* MKC_PRE_GPT2 .. MKC_PRE_GPT4O */
  } else {
    mkc_tokenizer *t = mkc_tok_from_json(rest, n, NULL, 0, "fuzz");
    if (t) use(t, rest, n);
    mkc_tokenizer_free(t);
  }
  return 0;
}
