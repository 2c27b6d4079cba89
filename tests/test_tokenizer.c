/* Tokenizers. Without data: small vocabularies written with the GGUF writer
 * check SentencePiece merging by score (best pair first, leftmost on ties),
 * byte fallback and the unknown token, byte-level BPE merging by rank,
 * special and user-defined tokens, the streaming detokenizer (characters
 * held until whole, U+FFFD for ill-formed bytes), each pre-tokenizer split
 * against splits the real patterns make (computed with Python's `regex`;
 * and 400 random texts a pattern split by HF tokenizers' own Split,
 * tests/data/pretokenize_fixtures.jsonl), the GGUF pre-tokenizer names
 * llama.cpp reads as each pattern, tokenizer.json loading, and one exact
 * message for each kind of bad metadata. With MKC_TEST_DATA (tests/data/fetch.sh): llama.cpp's
 * tokenizer test vocabularies (llama-spm, llama-bpe, qwen2, gpt-2) encode every test string to the
 * ids Hugging Face's tokenizers gave (the .out files), from the GGUF and from a tokenizer.json made
 * of the same vocabulary, and decode back to the string; SmolLM2's tokenizer round-trips
 * multilingual text, maps single-token words and special tokens to their ids, and streams an
 * emoji's byte tokens without a partial character; and texts with control bytes and ill-formed
 * UTF-8 encode on all five vocabularies to the ids HF's tokenizers gave
 * (tests/data/tokenize_fixtures.txt, which also holds llama.cpp's). */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "scratch.h"
#include "hf_tokenizer_json.h"
#include "util/files.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/impl.h"
#include "tokenizer/utf8.h"

/* s with control characters as \xNN, for one-line check names. */
static const char *shown(const char *s) {
  static char text[4][1024];
  static int next;
  char *p = text[next++ % 4];
  size_t k = 0;
  for (; s && *s && k + 5 < sizeof text[0]; s++)
    k += (size_t)snprintf(p + k, sizeof text[0] - k, (unsigned char)*s < 32 ? "\\x%02x" : "%c",
                          (unsigned char)*s);
  p[k] = '\0';
  return p;
}

/* "1 2 3" for ids[0..n). */
static const char *ids_text(const int *ids, int n) {
  static char text[4][8192];
  static int next;
  char *p = text[next++ % 4];
  size_t len = 0;
  p[0] = '\0';
  for (int i = 0; i < n && len + 16 < sizeof text[0]; i++)
    len += (size_t)snprintf(p + len, sizeof text[0] - len, "%s%d", i ? " " : "", ids[i]);
  return p;
}

/* Encodes text and compares the ids with expected ("1 2 3"). */
static void expect_ids(const mkc_tokenizer *t, const char *text, int add_bos, int special,
                       const char *expected, const char *name) {
  int *ids = NULL;
  int n = mkc_tokenizer_encode(t, text, strlen(text), add_bos, special, &ids);
  const char *actual = n < 0 ? "(error)" : ids_text(ids, n);
  if (strcmp(actual, expected) == 0)
    CHECK(1, "%s: %s", name, expected);
  else
    CHECK(0, "%s: expected [%s], actual [%s]", name, expected, actual);
  free(ids);
}

/* decode(ids) == expected, bytes for bytes. */
static void expect_text(const mkc_tokenizer *t, const int *ids, int n, int special,
                        const char *expected, const char *name) {
  char *text = mkc_tokenizer_decode(t, ids, n, special);
  if (text && strcmp(text, expected) == 0)
    CHECK(1, "%s: '%s'", name, shown(expected));
  else
    CHECK(0, "%s: expected '%s', actual '%s'", name, shown(expected),
          text ? shown(text) : "(null)");
  free(text);
}

static int id_of(const mkc_tokenizer *t, const char *text) {
  return mkc_tokenizer_find(t, text, strlen(text));
}

/* ---- small vocabularies ---- */

/* A SentencePiece vocabulary: <unk> <s> </s>, optionally the 256 byte
 * tokens, then normal tokens with the scores that decide the merges. */
static const char *const SPM_PIECES[] = {"\xe2\x96\x81",
                                         "a",
                                         "b",
                                         "c",
                                         "\xe2\x96\x81"
                                         "a",
                                         "ab",
                                         "bc",
                                         "abc",
                                         "aa"};
static const float SPM_SCORES[] = {-10, -10, -10, -10, -2, -3, -1, -4, -5};
#define N_SPM_PIECES (int)(sizeof SPM_PIECES / sizeof *SPM_PIECES)

static int write_spm(const char *path, int with_bytes, int with_unk) {
  static char byte_names[256][8];
  const char *tokens[3 + 256 + N_SPM_PIECES];
  float scores[3 + 256 + N_SPM_PIECES];
  int32_t types[3 + 256 + N_SPM_PIECES];
  int n = 0;
  const char *specials[] = {with_unk ? "<unk>" : "<pad>", "<s>", "</s>"};
  for (int i = 0; i < 3; i++)
    tokens[n] = specials[i], scores[n] = 0, types[n++] = i == 0 && with_unk ? 2 : 3;
  for (int b = 0; with_bytes && b < 256; b++) {
    snprintf(byte_names[b], sizeof byte_names[b], "<0x%02X>", b);
    tokens[n] = byte_names[b], scores[n] = 0, types[n++] = 6;
  }
  for (int i = 0; i < N_SPM_PIECES; i++)
    tokens[n] = SPM_PIECES[i], scores[n] = SPM_SCORES[i], types[n++] = 1;
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int bad = mkc_gguf_set_str(w, "tokenizer.ggml.model", "llama");
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_STRING, tokens, (uint64_t)n);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.scores", MKC_GGUF_FLOAT32, scores, (uint64_t)n);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.token_type", MKC_GGUF_INT32, types, (uint64_t)n);
  bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
  bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
  if (with_unk) bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  return bad;
}

static mkc_tokenizer *open_tokenizer(const char *path) {
  mkc_gguf *f = mkc_gguf_open(path);
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  mkc_gguf_close(f); /* the tokenizer keeps copies */
  return t;
}

static void test_spm(void) {
  const char *path = tmp_path("spm.gguf");
  CHECK(write_spm(path, 1, 1) == 0, "spm: write a vocabulary with byte tokens");
  mkc_tokenizer *t = open_tokenizer(path);
  CHECK(t != NULL, "spm: loads");
  if (!t) return;
  CHECK(strcmp(mkc_tokenizer_kind(t), "spm") == 0, "spm: kind '%s'", mkc_tokenizer_kind(t));
  CHECK_INT(mkc_tokenizer_n_vocab(t), 3 + 256 + N_SPM_PIECES, "spm: n_vocab");
  CHECK_INT(mkc_tokenizer_bos(t), 1, "spm: bos");
  CHECK_INT(mkc_tokenizer_eos(t), 2, "spm: eos");
  CHECK_INT(mkc_tokenizer_add_bos(t), 1, "spm: adds BOS by default (no add_bos_token key)");
  CHECK_INT(mkc_tokenizer_eos_after(t), -1,
            "spm: no EOS after a text by default (no add_eos_token)");
  CHECK(mkc_tokenizer_is_eog(t, 2) && !mkc_tokenizer_is_eog(t, 1), "spm: eos ends generation");
  enum { SP = 259, A, B, C, SP_A, AB, BC, ABC, AA };
  char want[64];
  /* "▁abc": bc (-1) first, then ▁a (-2) beats abc (-4); lowest-first or
   * leftmost-first would give other splits. */
  snprintf(want, sizeof want, "%d %d", SP_A, BC);
  expect_ids(t, "abc", 0, 0, want, "spm: 'abc' merges the best-scoring pair first");
  /* "▁caaa" has no ▁c or ca: the two aa candidates tie, the left one wins */
  snprintf(want, sizeof want, "%d %d %d %d", SP, C, AA, A);
  expect_ids(t, "caaa", 0, 0, want, "spm: equal scores merge leftmost first");
  snprintf(want, sizeof want, "%d %d", SP, SP_A);
  expect_ids(t, " a", 0, 0, want, "spm: a space becomes \xe2\x96\x81 after the added one");
  snprintf(want, sizeof want, "%d %d %d", SP, 3 + 0xc3, 3 + 0xa9);
  expect_ids(t, "\xc3\xa9", 0, 0, want, "spm: 'e-acute' falls back to <0xC3> <0xA9>");
  snprintf(want, sizeof want, "1 %d %d", SP_A, B);
  expect_ids(t, "<s>ab", 0, 1, want, "spm: parse_special makes '<s>' the BOS token");
  snprintf(want, sizeof want, "%d %d %d %d %d", SP, 3 + '<', 3 + 's', 3 + '>', AB);
  expect_ids(t, "<s>ab", 0, 0, want, "spm: without parse_special '<s>' is text");
  snprintf(want, sizeof want, "1 %d %d", SP_A, BC);
  expect_ids(t, "abc", 1, 0, want, "spm: add_bos prepends <s>");
  expect_ids(t, "", 0, 0, "", "spm: the empty text is no tokens (no space added)");

  int abc[] = {SP_A, BC}, spaced[] = {SP, SP_A}, bytes[] = {1, SP, 3 + 0xc3, 3 + 0xa9, 2};
  expect_text(t, abc, 2, 0, "abc", "spm: the first piece loses its leading space");
  expect_text(t, spaced, 2, 0, " a", "spm: only one space is dropped");
  expect_text(t, bytes, 5, 0, "\xc3\xa9", "spm: control tokens print nothing, bytes join");
  /* the space goes with the first piece that prints, here <s> (as HF's Strip decoder) */
  expect_text(t, bytes, 5, 1, "<s> \xc3\xa9</s>", "spm: show_special prints them");

  /* Streaming: a character split over byte tokens comes out whole. */
  mkc_detok d;
  char out[MKC_DETOK_MAX];
  mkc_detok_init(&d, t, 0);
  size_t n1 = mkc_detok_push(&d, 3 + 0xc3, out, sizeof out);
  size_t n2 = mkc_detok_push(&d, 3 + 0xa9, out, sizeof out);
  CHECK(n1 == 0 && n2 == 2 && memcmp(out, "\xc3\xa9", 2) == 0,
        "spm: <0xC3> prints nothing, <0xA9> then prints the whole 'e-acute'");
  mkc_detok_init(&d, t, 0);
  n1 = mkc_detok_push(&d, 3 + 0xff, out, sizeof out);
  CHECK(n1 == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0, "spm: <0xFF> prints U+FFFD at once");
  n1 = mkc_detok_push(&d, 3 + 0xe2, out, sizeof out);
  n2 = mkc_detok_push(&d, 3 + 0x82, out, sizeof out);
  size_t n3 = mkc_detok_push(&d, A, out, sizeof out);
  CHECK(n1 == 0 && n2 == 0 && n3 == 4 &&
            memcmp(out,
                   "\xef\xbf\xbd"
                   "a",
                   4) == 0,
        "spm: E2 82 then 'a': one U+FFFD for the broken character, then 'a'");
  n1 = mkc_detok_push(&d, 3 + 0xf0, out, sizeof out);
  n2 = mkc_detok_flush(&d, out, sizeof out);
  CHECK(n1 == 0 && n2 == 3 && memcmp(out, "\xef\xbf\xbd", 3) == 0,
        "spm: flush turns an incomplete character into U+FFFD");
  CHECK_INT(mkc_detok_push(&d, 100000, out, sizeof out), 0,
            "spm: an id out of range prints nothing");
  mkc_tokenizer_free(t);

  /* Without byte tokens: the unknown token, or an error when there is none. */
  path = tmp_path("spm-unk.gguf");
  write_spm(path, 0, 1);
  t = open_tokenizer(path);
  CHECK(t != NULL, "spm without byte tokens: loads");
  if (t) {
    snprintf(want, sizeof want, "%d %d %d", SP - 256, 0, SP_A - 256);
    expect_ids(t, "\xc3\xa9 a", 0, 0, want, "spm without byte tokens: 'e-acute' is <unk>");
    mkc_tokenizer_free(t);
  }
  path = tmp_path("spm-none.gguf");
  write_spm(path, 0, 0);
  t = open_tokenizer(path);
  if (t) {
    int *ids = NULL;
    check_stderr_begin();
    int n = mkc_tokenizer_encode(t, "\xc3\xa9", 2, 0, 0, &ids);
    char *msg = check_stderr_end();
    char expected[1024];
    snprintf(expected, sizeof expected,
             "mkc: error: %s: no token for the byte 0xC3: no <0xC3> token and no unknown token\n",
             path);
    CHECK(n == -1 && ids == NULL && strcmp(msg, expected) == 0,
          "spm without byte tokens or <unk>: encode fails with a message");
    free(msg);
    mkc_tokenizer_free(t);
  }
}

/* A byte-level BPE vocabulary: the 256 byte characters (id = byte), a few
 * merged tokens, a control and a user-defined token. breakage names one
 * defect to write instead (for the error tests), NULL for none. */
enum { BC = 256, AB, AA, G_A, EOT, TOOL, N_BPE };

static int write_bpe(const char *path, const char *breakage) {
  static char chars[256][4];
  const char *tokens[N_BPE + 1];
  int32_t types[N_BPE + 1];
  float scores[N_BPE + 1] = {0};
  for (int b = 0; b < 256; b++) {
    chars[b][mkc_utf8_put(mkc_bpe_byte_char(b), chars[b])] = '\0';
    tokens[b] = chars[b], types[b] = 1;
  }
  const char *more[] = {"bc",
                        "ab",
                        "aa",
                        "\xc4\xa0"
                        "a",
                        "<|endoftext|>",
                        "<tool>"};
  for (int i = BC; i < N_BPE; i++) tokens[i] = more[i - BC], types[i] = 1;
  types[EOT] = 3, types[TOOL] = 4;
  const char *merges[] = {"b c", "a b", "a a", "\xc4\xa0 a", "c c"};
  int n_tokens = N_BPE, n_merges = 4, n_types = N_BPE;
  const char *brk = breakage ? breakage : "";
  if (strcmp(brk, "token-too-long") == 0) {
    static char long_token[1026];
    memset(long_token, 'x', 1025);
    tokens[5] = long_token;
  }
  if (strcmp(brk, "bad-type") == 0) types[5] = 9;
  if (strcmp(brk, "short-types") == 0) n_types--;
  if (strcmp(brk, "merge-unknown") == 0) merges[1] = "a q!";
  if (strcmp(brk, "merge-no-space") == 0) merges[0] = "bc";
  if (strcmp(brk, "merge-not-token") == 0) n_merges = 5;
  if (strcmp(brk, "no-byte-4") == 0) tokens[4] = "<no byte 4>";
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int bad = 0;
  if (strcmp(brk, "no-model") != 0)
    bad |= mkc_gguf_set_str(w, "tokenizer.ggml.model",
                            strcmp(brk, "model-bert") == 0 ? "bert" : "gpt2");
  /* "pre-NAME": tokenizer.ggml.pre NAME */
  bad |= mkc_gguf_set_str(w, "tokenizer.ggml.pre", strncmp(brk, "pre-", 4) == 0 ? brk + 4 : "gpt2");
  if (strcmp(brk, "no-tokens") == 0)
    ;
  else if (strcmp(brk, "tokens-u32") == 0)
    bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_UINT32, types, (uint64_t)n_tokens);
  else
    bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_STRING, tokens,
                            strcmp(brk, "empty-tokens") == 0 ? 0 : (uint64_t)n_tokens);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.token_type", MKC_GGUF_INT32, types, (uint64_t)n_types);
  if (strcmp(brk, "short-scores") == 0)
    bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.scores", MKC_GGUF_FLOAT32, scores, 3);
  if (strcmp(brk, "string-scores") == 0)
    bad |=
        mkc_gguf_set_arr(w, "tokenizer.ggml.scores", MKC_GGUF_STRING, tokens, (uint64_t)n_tokens);
  if (strcmp(brk, "no-merges") != 0)
    bad |=
        mkc_gguf_set_arr(w, "tokenizer.ggml.merges", MKC_GGUF_STRING, merges, (uint64_t)n_merges);
  bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.bos_token_id",
                          strcmp(brk, "bos-out-of-range") == 0 ? N_BPE : EOT);
  bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", EOT);
  if (strcmp(brk, "fim-keys") == 0) { /* the file names its FIM tokens */
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.fim_pre_token_id", TOOL);
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.fim_suf_token_id", AA);
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.fim_mid_token_id", AB);
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.fim_sep_token_id", BC);
  }
  if (strcmp(brk, "fim-out-of-range") == 0)
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.fim_mid_token_id", N_BPE + 3);
  if (strcmp(brk, "no-byte-4") == 0) /* as SmolLM2's GGUF names it */
    bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", EOT);
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  return bad;
}

/* tokenizer.ggml.pre names other than the patterns' own, as llama.cpp reads
 * them (llama-vocab.cpp), and Tekken's defaults: BOS and whole-word tokens. */
static void test_pre_names(void) {
  static const struct {
    const char *pre, *kind;
    int add_bos;
  } NAMES[] = {
      {"deepseek-r1-qwen", "bpe (qwen2)", 0},
      {"megrez", "bpe (qwen2)", 0},
      {"falcon3", "bpe (llama3)", 1},
      {"pixtral", "bpe (llama3)", 1},
      {"phi-2", "bpe (gpt2)", 0},
      {"tekken", "bpe (tekken)", 1},
      {"gpt-4o", "bpe (gpt4o)", 0},
      {"llama4", "bpe (gpt4o)", 0},
  };
  for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) {
    char brk[64], name[80];
    snprintf(brk, sizeof brk, "pre-%s", NAMES[i].pre);
    snprintf(name, sizeof name, "pre-%s.gguf", NAMES[i].pre);
    const char *path = tmp_path(name);
    mkc_tokenizer *t = write_bpe(path, brk) == 0 ? open_tokenizer(path) : NULL;
    CHECK(t && strcmp(mkc_tokenizer_kind(t), NAMES[i].kind) == 0 &&
              mkc_tokenizer_add_bos(t) == NAMES[i].add_bos,
          "bpe: tokenizer.ggml.pre '%s' reads as %s, %s BOS", NAMES[i].pre, NAMES[i].kind,
          NAMES[i].add_bos ? "with" : "no");
    /* the split itself: the fixtures below */
    if (t && (strcmp(NAMES[i].pre, "tekken") == 0 || strcmp(NAMES[i].pre, "gpt-4o") == 0)) {
      char want[64], label[96];
      snprintf(want, sizeof want, "%d %d %d %d", 'a', 'B', ' ', AB);
      snprintf(label, sizeof label, "%s: 'aB ab' encodes through its split", NAMES[i].kind);
      expect_ids(t, "aB ab", 0, 0, want, label);
      mkc_gguf *f = mkc_gguf_open(path);
      char *json = f ? json_from_gguf(f) : NULL;
      mkc_tokenizer *tj = json ? mkc_tok_from_json(json, strlen(json), NULL, 0, "tj") : NULL;
      CHECK(tj && strcmp(mkc_tokenizer_kind(tj), NAMES[i].kind) == 0,
            "tokenizer.json: %s's Split pattern with ByteLevel reads as %s", NAMES[i].pre,
            tj ? mkc_tokenizer_kind(tj) : "-");
      snprintf(label, sizeof label, "tokenizer.json (%s): 'aB ab'", NAMES[i].pre);
      if (tj) expect_ids(tj, "aB ab", 0, 0, want, label);
      mkc_tokenizer_free(tj);
      free(json);
      mkc_gguf_close(f);
    }
    mkc_tokenizer_free(t);
  }
}

static void test_bpe(void) {
  const char *path = tmp_path("bpe.gguf");
  CHECK(write_bpe(path, NULL) == 0, "bpe: write a vocabulary");
  mkc_tokenizer *t = open_tokenizer(path);
  CHECK(t != NULL, "bpe: loads");
  if (!t) return;
  CHECK(strcmp(mkc_tokenizer_kind(t), "bpe (gpt2)") == 0, "bpe: kind '%s'", mkc_tokenizer_kind(t));
  CHECK_INT(mkc_tokenizer_add_bos(t), 0, "bpe: no BOS by default for gpt2");
  CHECK(mkc_tokenizer_is_eog(t, EOT) && !mkc_tokenizer_is_eog(t, TOOL),
        "bpe: <|endoftext|> ends generation, <tool> does not");
  char want[128];
  snprintf(want, sizeof want, "%d %d", 'a', BC);
  expect_ids(t, "abc", 0, 0, want, "bpe: 'abc': 'b c' (rank 0) before 'a b' (rank 1)");
  snprintf(want, sizeof want, "%d %d", AA, 'a');
  expect_ids(t, "aaa", 0, 0, want, "bpe: 'aaa': the left 'a a' first");
  snprintf(want, sizeof want, "%d %d %d", AB, ' ', AB);
  expect_ids(t, "ab ab", 0, 0, want, "bpe: ' ab': 'a b' before the space joins");
  snprintf(want, sizeof want, "%d", G_A);
  expect_ids(t, " a", 0, 0, want, "bpe: ' a' is one token");
  snprintf(want, sizeof want, "%d %d", 'x', EOT);
  expect_ids(t, "x<|endoftext|>", 0, 1, want, "bpe: parse_special finds <|endoftext|>");
  snprintf(want, sizeof want, "%d %d %d %d %d", 'x', '<', '|', 'e', 'n');
  int *ids = NULL;
  int n = mkc_tokenizer_encode(t, "x<|endoftext|>", 14, 0, 0, &ids);
  CHECK(n == 14 && strncmp(ids_text(ids, n), want, strlen(want)) == 0,
        "bpe: without parse_special '<|endoftext|>' is 13 byte tokens after 'x'");
  free(ids);
  snprintf(want, sizeof want, "%d %d %d", 'x', TOOL, 'y');
  expect_ids(t, "x<tool>y", 0, 0, want, "bpe: a user-defined token is found without parse_special");
  /* Each ill-formed byte is read as U+FFFD (EF BF BD), as Python's
   * b"\xff\xfe".decode("utf-8", "replace") gives two of them. */
  snprintf(want, sizeof want, "%d %d %d %d %d %d", 0xef, 0xbf, 0xbd, 0xef, 0xbf, 0xbd);
  expect_ids(t, "\xff\xfe", 0, 0, want, "bpe: bytes that are not UTF-8 read as U+FFFD");
  snprintf(want, sizeof want, "%d %d", EOT, 'a');
  expect_ids(t, "a", 1, 0, want, "bpe: add_bos prepends the BOS id");

  int invalid[] = {0xff, 0xfe}, special[] = {'a', EOT, TOOL};
  expect_text(t, invalid, 2, 0, "\xef\xbf\xbd\xef\xbf\xbd", "bpe: FF FE decode to two U+FFFD");
  expect_text(t, special, 3, 0, "a<tool>", "bpe: control hidden, user-defined shown");
  expect_text(t, special, 3, 1, "a<|endoftext|><tool>", "bpe: show_special shows both");
  {
    mkc_detok d;
    char out[MKC_DETOK_MAX];
    mkc_detok_init(&d, t, 0);
    size_t shown = mkc_detok_push_shown(&d, EOT, out, sizeof out);
    int same = shown == 13 && memcmp(out, "<|endoftext|>", 13) == 0;
    CHECK(same && mkc_detok_push(&d, EOT, out, sizeof out) == 0,
          "bpe: push_shown prints <|endoftext|>, a plain push after it still hides it");
  }

  /* U+1F600 is F0 9F 98 80: nothing until the fourth byte. */
  const unsigned char emoji[] = {0xf0, 0x9f, 0x98, 0x80};
  mkc_detok d;
  char out[MKC_DETOK_MAX];
  size_t got[4];
  mkc_detok_init(&d, t, 0);
  for (int i = 0; i < 4; i++) got[i] = mkc_detok_push(&d, emoji[i], out, sizeof out);
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0 && got[3] == 4 && memcmp(out, emoji, 4) == 0,
        "bpe: an emoji's 4 byte tokens print 0, 0, 0, then all 4 bytes");
  mkc_tokenizer_free(t);

  /* A byte whose character is no token is left out, as llama.cpp's BPE
   * does: not the unknown id, which here (as in SmolLM2) ends generation. */
  path = tmp_path("bpe-no-byte-4.gguf");
  t = write_bpe(path, "no-byte-4") == 0 ? open_tokenizer(path) : NULL;
  CHECK(t != NULL, "bpe without a token for byte 4: loads");
  if (t) {
    snprintf(want, sizeof want, "%d %d", 'a', 'b');
    expect_ids(t,
               "a\x04"
               "b",
               0, 0, want, "bpe: byte 4 with no token is left out, never <unk>");
    snprintf(want, sizeof want, "%d %d %d", 'a', 0, 'b');
    int *ids = NULL;
    int n = mkc_tokenizer_encode(t,
                                 "a\x00\x04"
                                 "b",
                                 4, 0, 0, &ids);
    CHECK(n == 3 && strcmp(ids_text(ids, n), want) == 0,
          "bpe: NUL through the API is byte 0's token, byte 4 left out: %s", ids_text(ids, n));
    free(ids);
    mkc_tokenizer_free(t);
  }
}

/* Each split against the real pattern's (Python's `regex`, HF's Split
 * with behavior Isolated; pieces joined by '|'). */
static const struct {
  int pre;
  const char *text, *pieces;
} SPLITS[] = {
    {MKC_PRE_GPT2, "Hello world's  end\n\n 123 abc!!", "Hello| world|'s| | end|\n\n| 123| abc|!!"},
    {MKC_PRE_GPT2, "I'VE they'Re\t\tx  \n  y", "I|'|VE| they|'|Re|\t|\t|x|  \n | y"},
    {MKC_PRE_GPT2, " 12345 \xc2\xbd x\xc2\xb2", " 12345| \xc2\xbd| x|\xc2\xb2"},
    {MKC_PRE_GPT2, "(\"quoted\") -- ok?\r\n", "(\"|quoted|\")| --| ok|?|\r\n"},
    {MKC_PRE_GPT2, "a  \n \n  b   ", "a|  \n \n | b|   "},
    {MKC_PRE_GPT2, "'sam x'\xc5\xbf", "'s|am| x|'|\xc5\xbf"},
    {MKC_PRE_GPT2,
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x80\x81"
     "123",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e|\xe3\x80\x81|123"},
    {MKC_PRE_GPT2, "x\xc2\xa0y\xe3\x80\x80z \xe2\x80\xa8",
     "x|\xc2\xa0|y|\xe3\x80\x80|z| \xe2\x80\xa8"},
    {MKC_PRE_LLAMA3, "Hello world's  end\n\n 123 abc!!",
     "Hello| world|'s| | end|\n\n| |123| abc|!!"},
    {MKC_PRE_LLAMA3, "I'VE they'Re\t\tx  \n  y", "I|'VE| they|'Re|\t|\tx|  \n| | y"},
    {MKC_PRE_LLAMA3, " 12345 \xc2\xbd x\xc2\xb2", " |123|45| |\xc2\xbd| x|\xc2\xb2"},
    {MKC_PRE_LLAMA3, "(\"quoted\") -- ok?\r\n", "(\"|quoted|\")| --| ok|?\r\n"},
    {MKC_PRE_LLAMA3, "a  \n \n  b   ", "a|  \n \n| | b|   "},
    {MKC_PRE_LLAMA3, "'sam x'\xc5\xbf", "'s|am| x|'\xc5\xbf"},
    {MKC_PRE_LLAMA3,
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x80\x81"
     "123",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e|\xe3\x80\x81|123"},
    {MKC_PRE_LLAMA3, "x\xc2\xa0y\xe3\x80\x80z \xe2\x80\xa8",
     "x|\xc2\xa0y|\xe3\x80\x80z| \xe2\x80\xa8"},
    {MKC_PRE_QWEN2, "Hello world's  end\n\n 123 abc!!",
     "Hello| world|'s| | end|\n\n| |1|2|3| abc|!!"},
    {MKC_PRE_QWEN2, "I'VE they'Re\t\tx  \n  y", "I|'VE| they|'Re|\t|\tx|  \n| | y"},
    {MKC_PRE_QWEN2, " 12345 \xc2\xbd x\xc2\xb2", " |1|2|3|4|5| |\xc2\xbd| x|\xc2\xb2"},
    {MKC_PRE_QWEN2, "(\"quoted\") -- ok?\r\n", "(\"|quoted|\")| --| ok|?\r\n"},
    {MKC_PRE_QWEN2, "a  \n \n  b   ", "a|  \n \n| | b|   "},
    {MKC_PRE_QWEN2, "'sam x'\xc5\xbf", "'s|am| x|'\xc5\xbf"},
    {MKC_PRE_QWEN2,
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x80\x81"
     "123",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e|\xe3\x80\x81|1|2|3"},
    {MKC_PRE_QWEN2, "x\xc2\xa0y\xe3\x80\x80z \xe2\x80\xa8",
     "x|\xc2\xa0y|\xe3\x80\x80z| \xe2\x80\xa8"},
    {MKC_PRE_SMOLLM, "Hello world's  end\n\n 123 abc!!",
     "Hello| world|'s| | end|\n\n |1|2|3| abc|!!"},
    {MKC_PRE_SMOLLM, "I'VE they'Re\t\tx  \n  y", "I|'|VE| they|'|Re|\t|\t|x|  \n | y"},
    {MKC_PRE_SMOLLM, " 12345 \xc2\xbd x\xc2\xb2", " |1|2|3|4|5| |\xc2\xbd| x|\xc2\xb2"},
    {MKC_PRE_SMOLLM, "(\"quoted\") -- ok?\r\n", "(\"|quoted|\")| --| ok|?|\r\n"},
    {MKC_PRE_SMOLLM, "a  \n \n  b   ", "a|  \n \n | b|   "},
    {MKC_PRE_SMOLLM, "'sam x'\xc5\xbf", "'s|am| x|'|\xc5\xbf"},
    {MKC_PRE_SMOLLM,
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x80\x81"
     "123",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e|\xe3\x80\x81|1|2|3"},
    {MKC_PRE_SMOLLM, "x\xc2\xa0y\xe3\x80\x80z \xe2\x80\xa8",
     "x|\xc2\xa0|y|\xe3\x80\x80|z| \xe2\x80\xa8"},
};

static int join_piece(void *ctx, const char *s, size_t n) {
  char *out = ctx;
  size_t len = strlen(out);
  if (len + n + 2 >= 512) return -1;
  if (len) out[len++] = '|';
  memcpy(out + len, s, n);
  out[len + n] = '\0';
  return 0;
}

static void test_pretokenize(void) {
  static const char *const names[] = {"", "gpt2", "llama3", "qwen2", "smollm"};
  for (size_t i = 0; i < sizeof SPLITS / sizeof *SPLITS; i++) {
    char out[512] = "";
    int rc =
        mkc_pretokenize(SPLITS[i].pre, SPLITS[i].text, strlen(SPLITS[i].text), join_piece, out);
    CHECK(rc == 0 && strcmp(out, SPLITS[i].pieces) == 0, "pre-tokenizer %s: '%s' -> '%s'",
          names[SPLITS[i].pre], shown(SPLITS[i].text), shown(out));
  }
}

/* The pieces of one text, for comparing with a fixture's. */
typedef struct pieces {
  char *at[64];
  int n;
} pieces;

static int keep_piece(void *ctx, const char *s, size_t n) {
  pieces *p = ctx;
  if (p->n == 64 || !(p->at[p->n] = strndup(s, n))) return -1;
  p->n++;
  return 0;
}

/* tests/data/pretokenize_fixtures.jsonl: random texts of every kind of
 * character the patterns tell apart, split by Hugging Face tokenizers'
 * Split (tools/pretokenize_fixtures.py). */
static void test_pretokenize_fixtures(void) {
  static const char *const NAMES[] = {"gpt2", "llama3", "qwen2", "tekken", "gpt4o"};
  static const int PRES[] = {MKC_PRE_GPT2, MKC_PRE_LLAMA3, MKC_PRE_QWEN2, MKC_PRE_TEKKEN,
                             MKC_PRE_GPT4O};
  char *text = mkc_read_file(MKC_SOURCE_DIR "/tests/data/pretokenize_fixtures.jsonl", NULL);
  CHECK(text != NULL, "tests/data/pretokenize_fixtures.jsonl reads");
  if (!text) return;
  enum { N = sizeof NAMES / sizeof *NAMES };
  int cases[N] = {0}, wrong[N] = {0}, bad_lines = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(o, "pre");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "text");
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(o, "pieces");
    int k = 0;
    while (k < N && !(cJSON_IsString(pre) && strcmp(pre->valuestring, NAMES[k]) == 0)) k++;
    if (k == N || !cJSON_IsString(in) || !cJSON_IsArray(want)) {
      bad_lines++;
      cJSON_Delete(o);
      continue;
    }
    pieces got = {0};
    int rc = mkc_pretokenize(PRES[k], in->valuestring, strlen(in->valuestring), keep_piece, &got);
    int same = rc == 0 && got.n == cJSON_GetArraySize(want);
    for (int i = 0; same && i < got.n; i++) {
      const cJSON *w = cJSON_GetArrayItem(want, i);
      same = cJSON_IsString(w) && strcmp(w->valuestring, got.at[i]) == 0;
    }
    if (!same && wrong[k]++ < 3)
      printf("     | %s: '%s' splits otherwise\n", NAMES[k], shown(in->valuestring));
    cases[k]++;
    for (int i = 0; i < got.n; i++) free(got.at[i]);
    cJSON_Delete(o);
  }
  CHECK_INT(bad_lines, 0, "pretokenize_fixtures.jsonl: every line is a case");
  for (int k = 0; k < N; k++)
    CHECK(cases[k] >= 400 && wrong[k] == 0,
          "pre-tokenizer %s: %d of %d random texts split as HF's Split does", NAMES[k],
          cases[k] - wrong[k], cases[k]);
  free(text);
}

/* ---- bad metadata: one exact message each ---- */

static void expect_gguf_error(const char *breakage, const char *message) {
  char name[64], expected[1024];
  snprintf(name, sizeof name, "bad-%s.gguf", breakage);
  const char *path = tmp_path(name);
  if (write_bpe(path, breakage)) {
    CHECK(0, "error %s: could not write the file", breakage);
    return;
  }
  mkc_gguf *f = mkc_gguf_open(path);
  check_stderr_begin();
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  char *msg = check_stderr_end();
  snprintf(expected, sizeof expected, "mkc: error: %s: %s\n", path, message);
  CHECK(f && !t && strcmp(msg, expected) == 0, "error %s: '%s'", breakage, message);
  free(msg);
  mkc_tokenizer_free(t);
  mkc_gguf_close(f);
}

static void test_errors(void) {
  expect_gguf_error("no-model", "no tokenizer.ggml.model: the file has no tokenizer");
  expect_gguf_error("model-bert",
                    "tokenizer.ggml.model 'bert' is not supported (mkc reads 'llama' and 'gpt2')");
  expect_gguf_error("pre-falcon",
                    "tokenizer.ggml.pre 'falcon' is not supported (mkc knows default, gpt2, "
                    "gpt-2, phi-2, jina-es, jina-de, jina-v2-es, jina-v2-de, gigachat, a.x-4.0, "
                    "mellum, exaone4, llama-bpe, llama3, llama-v3, falcon3, falcon-h1, pixtral, "
                    "midm-2.0, lfm2, qwen2, deepseek-r1-qwen, megrez, kormo, smollm, starcoder, "
                    "refact, command-r, codeshell, exaone, minerva-7b, mellum2, tekken, "
                    "gpt-4o, llama4, kanana2, talkie)");
  expect_gguf_error("no-tokens", "no tokenizer.ggml.tokens");
  expect_gguf_error("tokens-u32", "metadata 'tokenizer.ggml.tokens': Expected an array of string, "
                                  "Actual an array of u32");
  expect_gguf_error("empty-tokens", "tokenizer.ggml.tokens has 0 entries (1 to 16777216)");
  expect_gguf_error("token-too-long", "token 5 is 1025 bytes long (at most 1024)");
  expect_gguf_error("short-scores", "tokenizer.ggml.scores has 3 entries for 262 tokens");
  expect_gguf_error("string-scores", "metadata 'tokenizer.ggml.scores': Expected an array of f32, "
                                     "Actual an array of string");
  expect_gguf_error("short-types", "tokenizer.ggml.token_type has 261 entries for 262 tokens");
  expect_gguf_error("bad-type", "tokenizer.ggml.token_type[5] is 9, not a token type (0..6)");
  expect_gguf_error("no-merges", "no tokenizer.ggml.merges: byte-level BPE needs them");
  expect_gguf_error("merge-unknown", "tokenizer.ggml.merges[1] 'a q!': 'q!' is not a token");
  expect_gguf_error("merge-no-space",
                    "tokenizer.ggml.merges[0] 'bc' is not two tokens and a space between");
  expect_gguf_error("merge-not-token",
                    "tokenizer.ggml.merges[4] 'c c': the merged 'cc' is not a token");
  expect_gguf_error("bos-out-of-range",
                    "tokenizer.ggml.bos_token_id is 262, beyond the 262 tokens");
  expect_gguf_error("fim-out-of-range",
                    "tokenizer.ggml.fim_mid_token_id is 265, beyond the 262 tokens");

  /* SentencePiece needs scores. */
  const char *path = tmp_path("spm-no-scores.gguf");
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  const char *tokens[] = {"<unk>", "a"};
  mkc_gguf_set_str(w, "tokenizer.ggml.model", "llama");
  mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_STRING, tokens, 2);
  mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  mkc_gguf *f = mkc_gguf_open(path);
  check_stderr_begin();
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  char *msg = check_stderr_end(), expected[1024];
  snprintf(expected, sizeof expected,
           "mkc: error: %s: no tokenizer.ggml.scores: SentencePiece merges by score\n", path);
  CHECK(!t && strcmp(msg, expected) == 0, "error spm-no-scores: 'no tokenizer.ggml.scores ...'");
  free(msg);
  mkc_gguf_close(f);
}

/* ---- tokenizer.json ---- */

/* A byte-level tokenizer.json like write_bpe's vocabulary. */
static char *bpe_json(const char *pre_tokenizer, const char *model_type) {
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *vocab = cJSON_AddObjectToObject(model, "vocab"),
        *merges = cJSON_AddArrayToObject(model, "merges");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  cJSON_AddStringToObject(model, "type", model_type);
  for (int b = 0; b < 256; b++) {
    char c[5];
    c[mkc_utf8_put(mkc_bpe_byte_char(b), c)] = '\0';
    cJSON_AddNumberToObject(vocab, c, b);
  }
  cJSON_AddNumberToObject(vocab, "ab", 256);
  cJSON_AddNumberToObject(vocab, "<|endoftext|>", 257);
  cJSON_AddItemToArray(merges, cJSON_CreateString("a b"));
  cJSON *eot = cJSON_CreateObject();
  cJSON_AddNumberToObject(eot, "id", 257);
  cJSON_AddStringToObject(eot, "content", "<|endoftext|>");
  cJSON_AddBoolToObject(eot, "special", 1);
  cJSON_AddItemToArray(added, eot);
  cJSON_AddItemToObject(root, "pre_tokenizer", cJSON_Parse(pre_tokenizer));
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

static void expect_json_error(const char *json, const char *config, const char *file,
                              const char *message, const char *name) {
  char expected[1024];
  check_stderr_begin();
  mkc_tokenizer *t =
      mkc_tok_from_json(json, strlen(json), config, config ? strlen(config) : 0, "DIR");
  char *msg = check_stderr_end();
  snprintf(expected, sizeof expected, "mkc: error: DIR/%s: %s\n", file, message);
  CHECK(!t && strcmp(msg, expected) == 0, "tokenizer.json error %s", name);
  free(msg);
  mkc_tokenizer_free(t);
}

/* bpe_json's vocabulary without the characters of bytes 1, 2 and 4; byte
 * 1's place holds "<unk>", named model.unk_token when unk says so. */
static char *bpe_json_unk(const char *byte_level, int unk, int fuse) {
  char *text = bpe_json(byte_level, "BPE");
  cJSON *root = cJSON_Parse(text), *model = cJSON_GetObjectItem(root, "model");
  cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
  const char *names[] = {"<unk>", "<no byte 2>", "<no byte 4>"};
  int bytes[] = {1, 2, 4};
  for (int k = 0; k < 3; k++) {
    char c[5];
    c[mkc_utf8_put(mkc_bpe_byte_char(bytes[k]), c)] = '\0';
    cJSON_DeleteItemFromObject(vocab, c);
    cJSON_AddNumberToObject(vocab, names[k], bytes[k]);
  }
  if (unk) cJSON_AddStringToObject(model, "unk_token", "<unk>");
  cJSON_AddBoolToObject(model, "fuse_unk", fuse);
  free(text);
  text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

/* Characters with no token in HF's BPE: dropped without model.unk_token,
 * else the unknown token, one per run in a word with fuse_unk. Expected ids
 * from tokenizers 0.20 on the same vocabulary. */
static void test_json_unknown(const char *byte_level) {
  static const struct {
    int unk, fuse;
    const char *ids, *name;
  } CASES[] = {
      {0, 0, "97 98 32 32", "without unk_token they are left out"},
      {1, 0, "97 1 1 98 32 1 1 32 1", "with unk_token each is <unk>"},
      {1, 1, "97 1 98 32 1 32 1", "with fuse_unk a run in a word is one <unk>"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    char *json = bpe_json_unk(byte_level, CASES[i].unk, CASES[i].fuse);
    mkc_tokenizer *t = mkc_tok_from_json(json, strlen(json), NULL, 0, "DIR");
    char name[160];
    snprintf(name, sizeof name, "tokenizer.json: bytes 1, 2, 4 have no token: %s", CASES[i].name);
    if (t)
      expect_ids(t,
                 "a\x01\x02"
                 "b \x04\x04 \x01",
                 0, 0, CASES[i].ids, name);
    else
      CHECK(0, "%s: loads", name);
    mkc_tokenizer_free(t);
    free(json);
  }
}

static void test_json(void) {
  const char *byte_level = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}";
  test_json_unknown(byte_level);
  char *json = bpe_json(byte_level, "BPE");
  const char *config =
      "{\"bos_token\":{\"content\":\"<|endoftext|>\"},\"eos_token\":\"<|endoftext|>\","
      "\"add_bos_token\":true,\"add_eos_token\":true}";
  mkdir(tmp_path("hf"), 0755);
  FILE *out = fopen(tmp_path("hf/tokenizer.json"), "w");
  if (out) fputs(json, out), fclose(out);
  out = fopen(tmp_path("hf/tokenizer_config.json"), "w");
  if (out) fputs(config, out), fclose(out);
  mkc_tokenizer *t = mkc_tokenizer_from_hf(tmp_path("hf"));
  CHECK(t != NULL, "tokenizer.json: a byte-level BPE folder loads");
  if (t) {
    CHECK(strcmp(mkc_tokenizer_kind(t), "bpe (gpt2)") == 0, "tokenizer.json: kind '%s'",
          mkc_tokenizer_kind(t));
    CHECK(mkc_tokenizer_bos(t) == 257 && mkc_tokenizer_eos(t) == 257 && mkc_tokenizer_add_bos(t) &&
              mkc_tokenizer_eos_after(t) == 257,
          "tokenizer.json: bos, eos, add_bos_token and add_eos_token from tokenizer_config.json");
    expect_ids(t, "ab ab<|endoftext|>", 1, 1, "257 256 32 256 257",
               "tokenizer.json: BOS, merges, the special token");
    mkc_tokenizer_free(t);
  }
  free(json);

  /* An embedding model's template (Qwen3-Embedding's): the text, then <|endoftext|> */
  json = bpe_json(byte_level, "BPE");
  cJSON *root = cJSON_Parse(json);
  cJSON_AddItemToObject(root, "post_processor",
                        cJSON_Parse("{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":"
                                    "{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":"
                                    "\"<|endoftext|>\",\"type_id\":0}}]}"));
  free(json);
  json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  t = mkc_tok_from_json(json, strlen(json), NULL, 0, "DIR");
  CHECK(t && mkc_tokenizer_eos_after(t) == 257 && !mkc_tokenizer_add_bos(t),
        "tokenizer.json: a TemplateProcessing that ends a text with <|endoftext|>: that token "
        "after a text, no BOS");
  mkc_tokenizer_free(t);
  free(json);

  json = bpe_json(byte_level, "WordPiece");
  expect_json_error(json, NULL, "tokenizer.json", "model.type is 'WordPiece', mkc reads 'BPE'",
                    "WordPiece");
  free(json);
  json = bpe_json("{\"type\":\"Whitespace\"}", "BPE");
  expect_json_error(
      json, NULL, "tokenizer.json",
      "pre_tokenizer {\"type\":\"Whitespace\"} is not supported (mkc knows ByteLevel, "
      "the GPT-2, Llama-3, Qwen2 and Tekken Split patterns with ByteLevel, Digits with "
      "ByteLevel, and SentencePiece-style \xe2\x96\x81 for spaces)",
      "unknown pre-tokenizer");
  free(json);
  json = bpe_json(byte_level, "BPE");
  char *gap = strstr(json, "\"ab\":256");
  if (gap) memcpy(gap, "\"ab\":258", 8);
  expect_json_error(json, NULL, "tokenizer.json", "no token has id 256 (ids run to 258)", "id gap");
  free(json);
  json = bpe_json(byte_level, "BPE");
  char *merge = strstr(json, "\"a b\""), *changed = malloc(strlen(json) + 8);
  if (merge) sprintf(changed, "%.*s\"a zz\"%s", (int)(merge - json), json, merge + 5);
  expect_json_error(merge ? changed : json, NULL, "tokenizer.json",
                    "model.merges[0] 'a zz': 'zz' is not a token", "unknown merge");
  free(changed);
  expect_json_error("{\"model\": [", NULL, "tokenizer.json",
                    "not a JSON object (a syntax error at byte 10)", "bad JSON");
  free(json);
  json = bpe_json(byte_level, "BPE");
  expect_json_error(json, "{\"bos_token\":\"<s>\"}", "tokenizer_config.json",
                    "bos_token <s> is not a token", "bos not a token");
  free(json);
  check_stderr_begin();
  t = mkc_tokenizer_from_hf(tmp_path("no-such-dir"));
  char *msg = check_stderr_end(), expected[1024];
  snprintf(expected, sizeof expected,
           "mkc: error: %s/tokenizer.json: cannot read: No such file or directory\n",
           tmp_path("no-such-dir"));
  CHECK(!t && strcmp(msg, expected) == 0, "tokenizer.json: a missing folder fails with a message");
  free(msg);
}

/* ---- real vocabularies (MKC_TEST_DATA) ---- */

static const char *data_dir(void) {
  const char *dir = getenv("MKC_TEST_DATA");
  return dir && *dir ? dir : NULL;
}

/* llama.cpp's test strings: each followed by "\n__ggml_vocab_test__\n". */
typedef struct vocab_cases {
  char *inp, *out;
  const char *text[256], *ids[256];
  size_t len[256];
  int n;
} vocab_cases;

static int read_cases(const char *gguf_path, vocab_cases *c) {
  char path[1100];
  size_t n;
  snprintf(path, sizeof path, "%s.inp", gguf_path);
  c->inp = mkc_read_file(path, &n);
  snprintf(path, sizeof path, "%s.out", gguf_path);
  c->out = mkc_read_file(path, &n);
  if (!c->inp || !c->out) return -1;
  static const char SEP[] = "\n__ggml_vocab_test__\n";
  char *p = c->inp, *o = c->out, *end;
  for (c->n = 0; c->n < 256 && (end = strstr(p, SEP)); c->n++) {
    c->text[c->n] = p;
    c->len[c->n] = (size_t)(end - p);
    p = end + strlen(SEP);
    char *eol = strchr(o, '\n');
    if (!eol) return -1;
    *eol = '\0';
    c->ids[c->n] = o + (*o == ' '); /* each line starts with a space */
    o = eol + 1;
  }
  return c->n > 0 ? 0 : -1;
}

/* Every string encodes to its .out ids and decodes back to itself. */
static void check_cases(const mkc_tokenizer *t, const vocab_cases *c, const char *name) {
  int wrong = 0, lost = 0;
  for (int i = 0; i < c->n; i++) {
    int *ids = NULL;
    int n = mkc_tokenizer_encode(t, c->text[i], c->len[i], 0, 0, &ids);
    const char *actual = n < 0 ? "(error)" : ids_text(ids, n);
    if (strcmp(actual, c->ids[i]) != 0 && wrong++ < 3)
      printf("     | %s: string %d: expected [%s], actual [%s]\n", name, i, c->ids[i], actual);
    char *text = n < 0 ? NULL : mkc_tokenizer_decode(t, ids, n, 0);
    if ((!text || strlen(text) != c->len[i] || memcmp(text, c->text[i], c->len[i]) != 0) &&
        lost++ < 3)
      printf("     | %s: string %d does not decode back: '%s'\n", name, i, text ? text : "(null)");
    free(text);
    free(ids);
  }
  CHECK_INT(wrong, 0, "%s: %d strings encode to the ids HF's tokenizer gave (.out)", name, c->n);
  CHECK_INT(lost, 0, "%s: %d strings decode back exactly", name, c->n);
}

static void test_vocab(const char *dir, const char *vocab, const char *kind) {
  char path[1024], name[128];
  snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", dir, vocab);
  vocab_cases c = {0};
  mkc_gguf *f = NULL;
  if (read_cases(path, &c) || !(f = mkc_gguf_open(path))) {
    CHECK_SKIP("%s: %s or its .inp/.out missing (run tests/data/fetch.sh)", vocab, path);
    free(c.inp), free(c.out);
    return;
  }
  mkc_tokenizer *t = mkc_tokenizer_from_gguf(f);
  CHECK(t && strcmp(mkc_tokenizer_kind(t), kind) == 0, "%s: GGUF loads as '%s'", vocab, kind);
  if (t) {
    snprintf(name, sizeof name, "%s (GGUF)", vocab);
    check_cases(t, &c, name);
    mkc_tokenizer_free(t);
  }
  char *json = json_from_gguf(f);
  t = json ? mkc_tok_from_json(json, strlen(json), NULL, 0, vocab) : NULL;
  CHECK(t != NULL, "%s: the same vocabulary as tokenizer.json loads (%s)", vocab,
        t ? mkc_tokenizer_kind(t) : "-");
  if (t) {
    snprintf(name, sizeof name, "%s (tokenizer.json)", vocab);
    check_cases(t, &c, name);
    mkc_tokenizer_free(t);
  }
  free(json);
  mkc_gguf_close(f);
  free(c.inp), free(c.out);
}

static const char *const MULTILINGUAL[] = {
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "Caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9"
    "e, na\xc3\xafve fa\xc3\xa7"
    "ade, \xc3\x85ngstr\xc3\xb6m",
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87\xe7\xab\xa0\xe3\x80\x82\xe4\xb8"
    "\xad"
    "\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95\xef\xbc\x8c\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
    "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80 \xce\xb3\xce\xb5\xce"
    "\xb9\xce\xac \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9",
    "emoji: \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd "
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91"
    "\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xe2\x9c\x85",
    "   leading spaces, \t tabs,   runs   of   spaces   ",
    "digits 0 12 345 6789 3.14159 1,000,000 \xd9\xa3\xd9\xa4",
    "line one\nline two\r\n\n\nline five\n",
    "def f(x):\n    return x**2  # comment\n",
    "",
};

/* Fill-in-the-middle's tokens: a file's tokenizer.ggml.fim_*_token_id, else found by text
 * (StarCoder's ids are its published special tokens': <fim_prefix> 1, <fim_middle> 2,
 * <fim_suffix> 3, <fim_pad> 4), the pad and separators ending generation; none in a vocabulary
 * without them. */
static void test_fim(const char *dir) {
  const char *path = tmp_path("fim-keys.gguf");
  mkc_gguf *f = write_bpe(path, "fim-keys") == 0 ? mkc_gguf_open(path) : NULL;
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  CHECK(t && mkc_tokenizer_fim(t, MKC_FIM_PRE) == TOOL && mkc_tokenizer_fim(t, MKC_FIM_SUF) == AA &&
            mkc_tokenizer_fim(t, MKC_FIM_MID) == AB && mkc_tokenizer_fim(t, MKC_FIM_SEP) == BC &&
            mkc_tokenizer_fim(t, MKC_FIM_PAD) == -1 && mkc_tokenizer_fim(t, MKC_FIM_REP) == -1,
        "FIM tokens the GGUF names: pre, suf, mid, sep; no pad, no repo");
  CHECK(t && mkc_tokenizer_is_eog(t, BC) && !mkc_tokenizer_is_eog(t, TOOL),
        "the file separator ends generation, the prefix marker does not");
  mkc_tokenizer_free(t);
  mkc_gguf_close(f);
  static const struct {
    const char *vocab;
    int ids[MKC_FIM_COUNT];
  } WANT[] = {{"starcoder", {1, 3, 2, 4, -1, -1}}, {"qwen2", {-1, -1, -1, -1, -1, -1}}};
  for (size_t v = 0; v < sizeof WANT / sizeof *WANT; v++) {
    char file[1024];
    snprintf(file, sizeof file, "%s/vocab/ggml-vocab-%s.gguf", dir, WANT[v].vocab);
    f = mkc_gguf_open(file);
    t = f ? mkc_tokenizer_from_gguf(f) : NULL;
    char *json = f ? json_from_gguf(f) : NULL;
    mkc_tokenizer *hf = json ? mkc_tok_from_json(json, strlen(json), NULL, 0, WANT[v].vocab) : NULL;
    int same = t && hf;
    for (int k = 0; k < MKC_FIM_COUNT && same; k++)
      same =
          mkc_tokenizer_fim(t, k) == WANT[v].ids[k] && mkc_tokenizer_fim(hf, k) == WANT[v].ids[k];
    CHECK(same,
          "%s: FIM tokens (pre %d, suf %d, mid %d, pad %d, repo %d, sep %d), from the GGUF "
          "and from tokenizer.json",
          WANT[v].vocab, WANT[v].ids[0], WANT[v].ids[1], WANT[v].ids[2], WANT[v].ids[3],
          WANT[v].ids[4], WANT[v].ids[5]);
    if (WANT[v].ids[MKC_FIM_PAD] >= 0)
      CHECK(t && mkc_tokenizer_is_eog(t, WANT[v].ids[MKC_FIM_PAD]) &&
                !mkc_tokenizer_is_eog(t, WANT[v].ids[MKC_FIM_MID]),
            "%s: <fim_pad> ends generation, <fim_middle> does not", WANT[v].vocab);
    mkc_tokenizer_free(t);
    mkc_tokenizer_free(hf);
    free(json);
    mkc_gguf_close(f);
  }
}

static void test_smollm(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir);
  mkc_gguf *f = access(path, R_OK) == 0 ? mkc_gguf_open(path) : NULL;
  if (!f) {
    CHECK_SKIP("SmolLM2: %s missing (run tests/data/fetch.sh)", path);
    return;
  }
  mkc_tokenizer *t = mkc_tokenizer_from_gguf(f);
  mkc_gguf_close(f);
  CHECK(t && strcmp(mkc_tokenizer_kind(t), "bpe (smollm)") == 0,
        "SmolLM2: loads as 'bpe (smollm)'");
  if (!t) return;
  CHECK(mkc_tokenizer_n_vocab(t) == 49152 && mkc_tokenizer_bos(t) == 1 &&
            mkc_tokenizer_eos(t) == 2 && !mkc_tokenizer_add_bos(t),
        "SmolLM2: 49152 tokens, bos 1, eos 2, add_bos_token false");
  CHECK(mkc_tokenizer_is_eog(t, 2) && mkc_tokenizer_is_eog(t, id_of(t, "<|endoftext|>")) &&
            !mkc_tokenizer_is_eog(t, 1),
        "SmolLM2: <|im_end|> and <|endoftext|> end generation, <|im_start|> does not");

  for (size_t i = 0; i < sizeof MULTILINGUAL / sizeof *MULTILINGUAL; i++) {
    const char *s = MULTILINGUAL[i];
    int *ids = NULL;
    int n = mkc_tokenizer_encode(t, s, strlen(s), 0, 0, &ids);
    char *text = n < 0 ? NULL : mkc_tokenizer_decode(t, ids, n, 0);
    /* the same through the streaming detokenizer, one id at a time:
     * every chunk is whole characters */
    mkc_detok d;
    char chunk[MKC_DETOK_MAX], joined[4096];
    size_t len = 0;
    int partial = 0;
    mkc_detok_init(&d, t, 0);
    for (int k = 0; k <= n; k++) {
      size_t m = k < n ? mkc_detok_push(&d, ids[k], chunk, sizeof chunk)
                       : mkc_detok_flush(&d, chunk, sizeof chunk);
      for (size_t j = 0; j < m;) {
        int32_t cp;
        int c = mkc_utf8_next(chunk + j, m - j, &cp);
        if (c <= 0) partial++, c = 1;
        j += (size_t)c;
      }
      if (len + m < sizeof joined) memcpy(joined + len, chunk, m), len += m;
    }
    CHECK(n >= 0 && text && strcmp(text, s) == 0 && len == strlen(s) &&
              memcmp(joined, s, len) == 0 && partial == 0,
          "SmolLM2: text %zu (%d tokens) round-trips, streamed in whole characters", i, n);
    free(text);
    free(ids);
  }

  /* Words that are one token: the GGUF's own spelling (GPT-2's byte map:
   * space is \xc4\xa0, newline \xc4\x8a). */
  static const char *const WORDS[][2] = {
      {"Hello", "Hello"},
      {" world", "\xc4\xa0world"},
      {" the", "\xc4\xa0the"},
      {".", "."},
      {"\n", "\xc4\x8a"},
      {" caf\xc3\xa9", "\xc4\xa0"
                       "caf\xc3\x83\xc2\xa9"},
      {"7", "7"},
  };
  for (size_t i = 0; i < sizeof WORDS / sizeof *WORDS; i++) {
    int id = id_of(t, WORDS[i][1]);
    char want[16];
    snprintf(want, sizeof want, "%d", id);
    CHECK(id >= 0, "SmolLM2: the vocabulary has '%s'", shown(WORDS[i][1]));
    char name[128];
    snprintf(name, sizeof name, "SmolLM2: '%s' is the one token '%s'", shown(WORDS[i][0]),
             shown(WORDS[i][1]));
    if (id >= 0) expect_ids(t, WORDS[i][0], 0, 0, want, name);
  }
  char want[64];
  snprintf(want, sizeof want, "%d %d %d %d", id_of(t, "2"), id_of(t, "0"), id_of(t, "2"),
           id_of(t, "4"));
  expect_ids(t, "2024", 0, 0, want, "SmolLM2: digits are one token each");
  snprintf(want, sizeof want, "%d %d %d", id_of(t, "\xc4\xa0"), id_of(t, "1"), id_of(t, "2"));
  expect_ids(t, " 12", 0, 0, want, "SmolLM2: a space before digits is a token of its own");

  /* Special tokens only with parse_special. */
  const char *chat = "<|im_start|>user\nHi<|im_end|>";
  int *ids = NULL;
  int n = mkc_tokenizer_encode(t, chat, strlen(chat), 0, 1, &ids);
  CHECK(n >= 3 && ids[0] == id_of(t, "<|im_start|>") && ids[0] == 1 && ids[n - 1] == 2,
        "SmolLM2: with parse_special <|im_start|> is id 1 and <|im_end|> id 2 (%s)",
        ids_text(ids, n));
  expect_text(t, ids, n, 0, "user\nHi", "SmolLM2: the special tokens print nothing");
  expect_text(t, ids, n, 1, chat, "SmolLM2: with show_special they print");
  free(ids);
  n = mkc_tokenizer_encode(t, chat, strlen(chat), 0, 0, &ids);
  int found = 0;
  for (int i = 0; i < n; i++) found |= ids[i] == 1 || ids[i] == 2;
  CHECK(n > 3 && !found, "SmolLM2: without parse_special <|im_start|> is text (%d tokens)", n);
  expect_text(t, ids, n, 0, chat, "SmolLM2: ... and decodes back to itself");
  free(ids);

  /* U+1F600 pushed as its four byte tokens: no partial character. */
  const unsigned char emoji[] = {0xf0, 0x9f, 0x98, 0x80};
  mkc_detok d;
  char out[MKC_DETOK_MAX];
  size_t got[4] = {0};
  int byte_ids[4];
  mkc_detok_init(&d, t, 0);
  for (int i = 0; i < 4; i++) {
    char c[4];
    byte_ids[i] = mkc_tokenizer_find(t, c, (size_t)mkc_utf8_put(mkc_bpe_byte_char(emoji[i]), c));
    got[i] = byte_ids[i] < 0 ? 99 : mkc_detok_push(&d, byte_ids[i], out, sizeof out);
  }
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == 0 && got[3] == 4 && memcmp(out, emoji, 4) == 0,
        "SmolLM2: the emoji's byte tokens %s print 0, 0, 0, then the whole emoji",
        ids_text(byte_ids, 4));
  mkc_tokenizer_free(t);
}

/* ---- control bytes and ill-formed UTF-8 (tests/data/tokenize_fixtures.txt) ---- */

/* The fixture's text: \xNN escapes, every other byte as it is. */
static size_t unescape(const char *s, char *out) {
  size_t n = 0;
  while (*s) {
    unsigned v;
    if (s[0] == '\\' && s[1] == 'x' && sscanf(s + 2, "%2x", &v) == 1)
      out[n++] = (char)v, s += 4;
    else
      out[n++] = *s++;
  }
  return n;
}

/* One vocabulary's lines of the fixture against mkc, from the GGUF. */
static void check_fixture(const char *dir, const char *vocab, char **lines, int n) {
  char path[1024];
  if (strcmp(vocab, "smollm2") == 0)
    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir);
  else
    snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", dir, vocab);
  mkc_gguf *f = access(path, R_OK) == 0 ? mkc_gguf_open(path) : NULL;
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  mkc_gguf_close(f);
  if (!t) {
    CHECK_SKIP("%s: %s missing (run tests/data/fetch.sh)", vocab, path);
    return;
  }
  int wrong = 0, cpp_agrees = 0;
  for (int i = 0; i < n; i++) {
    char *field[4], *save = NULL, text[512];
    field[0] = strtok_r(lines[i], "\t", &save);
    for (int k = 1; k < 4; k++) field[k] = strtok_r(NULL, "\t", &save);
    size_t len = unescape(field[1], text);
    int *ids = NULL;
    int m = mkc_tokenizer_encode(t, text, len, 0, 0, &ids);
    const char *actual = m < 0 ? "(error)" : m == 0 ? "-" : ids_text(ids, m);
    if (strcmp(actual, field[2]) != 0 && wrong++ < 5)
      printf("     | %s: '%s': expected [%s] (HF), actual [%s]\n", vocab, field[1], field[2],
             actual);
    cpp_agrees += strcmp(actual, field[3]) == 0;
    free(ids);
  }
  CHECK_INT(wrong, 0,
            "%s: %d texts with control bytes and ill-formed UTF-8 encode to HF's ids "
            "(llama.cpp gives the same for %d)",
            vocab, n, cpp_agrees);
  mkc_tokenizer_free(t);
}

static void test_fixtures(const char *dir) {
  static const char *const VOCABS[] = {"smollm2", "llama-bpe", "qwen2", "gpt-2", "llama-spm"};
  char *text = mkc_read_file(MKC_SOURCE_DIR "/tests/data/tokenize_fixtures.txt", NULL);
  CHECK(text != NULL, "tests/data/tokenize_fixtures.txt reads");
  if (!text) return;
  char *lines[1024], *save = NULL;
  int n = 0;
  for (char *line = strtok_r(text, "\n", &save); line && n < 1024;
       line = strtok_r(NULL, "\n", &save))
    if (line[0] != '#') lines[n++] = line;
  for (size_t v = 0; v < sizeof VOCABS / sizeof *VOCABS; v++) {
    char *mine[1024];
    int m = 0;
    size_t len = strlen(VOCABS[v]);
    for (int i = 0; i < n; i++)
      if (strncmp(lines[i], VOCABS[v], len) == 0 && lines[i][len] == '\t') mine[m++] = lines[i];
    CHECK(m >= 30, "tokenize_fixtures.txt: %d lines for %s", m, VOCABS[v]);
    if (m) check_fixture(dir, VOCABS[v], mine, m);
  }
  free(text);
}

int main(void) {
  if (scratch_open("tokenizer") != 0) return 1;
  test_spm();
  test_bpe();
  test_pre_names();
  test_pretokenize();
  test_pretokenize_fixtures();
  test_errors();
  test_json();
  const char *dir = data_dir();
  if (!dir) {
    CHECK_SKIP("tokenizer tests on real vocabularies: MKC_TEST_DATA is not set (run "
               "tests/data/fetch.sh)");
  } else {
    test_vocab(dir, "llama-spm", "spm");
    test_vocab(dir, "llama-bpe", "bpe (llama3)");
    test_vocab(dir, "qwen2", "bpe (qwen2)");
    test_vocab(dir, "gpt-2", "bpe (gpt2)");
    /* StarCoder's split (digits apart, then GPT-2's) under llama.cpp's other names for it */
    test_vocab(dir, "refact", "bpe (smollm)");
    test_vocab(dir, "starcoder", "bpe (smollm)");
    test_vocab(dir, "command-r", "bpe (smollm)");
    test_smollm(dir);
    test_fim(dir);
    test_fixtures(dir);
  }
  scratch_close();
  return check_done();
}
