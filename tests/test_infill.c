/* Fill-in-the-middle prompts (model/infill.c) against llama-server's layout
 * and cuts worked out here by hand. The tokenizer is a byte-level one with no
 * merges, so every text is its bytes (token id = byte), and the FIM markers
 * are the ids the GGUF names: the expected prompts are plain arithmetic on
 * the strings. */
#include <string.h>

#include "check.h"
#include "formats/gguf.h"
#include "model/infill.h"
#include "scratch.h"
#include "tokenizer/impl.h"
#include "tokenizer/utf8.h"

enum { PRE = 256, SUF, MID, REP, SEP, BOS, MERGE_A, N_TOK };

/* A byte-level tokenizer whose tokens 0..255 are the bytes; the FIM markers it names: which
 * bits of "pre suf mid rep sep" (1, 2, 4, 8, 16); bos: BOS added. */
static mkc_tokenizer *byte_tokenizer(int named, int bos) {
  static char chars[256][4];
  const char *tokens[N_TOK];
  int32_t types[N_TOK];
  for (int b = 0; b < 256; b++) {
    chars[b][mkc_utf8_put(mkc_bpe_byte_char(b), chars[b])] = '\0';
    tokens[b] = chars[b], types[b] = 1;
  }
  const char *more[] = {"<pre>", "<suf>", "<mid>", "<rep>", "<sep>", "<s>", "zz"};
  for (int i = PRE; i < N_TOK; i++) tokens[i] = more[i - PRE], types[i] = 3;
  types[MERGE_A] = 1;
  const char *merges[] = {"z z"};
  const char *keys[] = {"fim_pre", "fim_suf", "fim_mid", "fim_rep", "fim_sep"};
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  int bad = mkc_gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
  bad |= mkc_gguf_set_str(w, "tokenizer.ggml.pre", "gpt2");
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.tokens", MKC_GGUF_STRING, tokens, N_TOK);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.token_type", MKC_GGUF_INT32, types, N_TOK);
  bad |= mkc_gguf_set_arr(w, "tokenizer.ggml.merges", MKC_GGUF_STRING, merges, 1);
  for (int k = 0; k < 5; k++)
    if (named >> k & 1) {
      char key[64];
      snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", keys[k]);
      bad |= mkc_gguf_set_u32(w, key, (uint32_t)(PRE + k));
    }
  bad |= mkc_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", BOS);
  mkc_gguf_set(w, "tokenizer.ggml.add_bos_token", MKC_GGUF_BOOL, &(uint8_t){(uint8_t)bos});
  const char *path = tmp_path("bytes.gguf");
  bad |= mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
  mkc_gguf *f = bad ? NULL : mkc_gguf_open(path);
  mkc_tokenizer *t = f ? mkc_tokenizer_from_gguf(f) : NULL;
  mkc_gguf_close(f);
  return t;
}

/* The expected prompt, built as a list. */
typedef struct want {
  int ids[4096];
  int n;
} want;

static void id(want *w, int v) { w->ids[w->n++] = v; }
static void text(want *w, const char *s, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) id(w, (unsigned char)s[i]);
}
static void all(want *w, const char *s) { text(w, s, 0, strlen(s)); }

static void check(const char *name, const mkc_tokenizer *t, const mkc_infill *in, const want *w) {
  int *ids = NULL, n = t ? mkc_infill_prompt(t, in, &ids) : -1, at = -1;
  for (int i = 0; n == w->n && i < n && at < 0; i++)
    if (ids[i] != w->ids[i]) at = i;
  CHECK(n == w->n && at < 0,
        "%s: %d tokens as llama-server lays them out (got %d, first "
        "difference at %d)",
        name, w->n, n, at);
  free(ids);
}

int main(void) {
  if (scratch_open("infill") != 0) return 1;
  const char *prefix = "def f(x):\n    return ", *suffix = "\n\nprint(f(2))\n";
  const char *names[] = {"util.py", NULL}, *texts[] = {"import os\n", "X = 1\n"};

  /* Every marker: the repository form, nothing cut (a batch of 2048, a context of 4096). */
  mkc_tokenizer *t = byte_tokenizer(31, 0);
  mkc_infill in = {.prefix = prefix,
                   .suffix = suffix,
                   .prompt = "x",
                   .extra_names = names,
                   .extra_texts = texts,
                   .n_extra = 2,
                   .n_batch = 2048,
                   .n_predict = 64,
                   .n_ctx = 4096};
  want w = {0};
  id(&w, REP), all(&w, "myproject\n");
  id(&w, SEP), all(&w, "util.py\n"), all(&w, texts[0]);
  id(&w, SEP), all(&w, "tmp\n"), all(&w, texts[1]); /* a chunk without a name is "tmp" */
  id(&w, SEP), all(&w, "filename\n");
  id(&w, PRE), all(&w, prefix), all(&w, "x");
  id(&w, SUF), all(&w, suffix), id(&w, MID);
  check("repository form, two files", t, &in, &w);

  /* The cuts: a batch of 16 keeps the prefix's last 12 tokens and the suffix's first
   * 16 / 4 - (2 + 1) = 1; the extra tokens keep their last 40 - 16 - 2 * 6 = 12. */
  in.n_batch = 16, in.n_ctx = 40, in.n_predict = 6;
  want c = {0};
  want e = {0};
  id(&e, REP), all(&e, "myproject\n");
  id(&e, SEP), all(&e, "util.py\n"), all(&e, texts[0]);
  id(&e, SEP), all(&e, "tmp\n"), all(&e, texts[1]);
  id(&e, SEP), all(&e, "filename\n");
  for (int i = e.n - 12; i < e.n; i++) id(&c, e.ids[i]);
  id(&c, PRE), text(&c, prefix, strlen(prefix) - 12, strlen(prefix)), all(&c, "x");
  id(&c, SUF), text(&c, suffix, 0, 1), id(&c, MID);
  check("a batch of 16 and a context of 40: each part cut", t, &in, &c);
  in.spm = 1; /* the same cuts, the suffix first */
  want cs = {0};
  for (int i = e.n - 12; i < e.n; i++) id(&cs, e.ids[i]);
  id(&cs, SUF), text(&cs, suffix, 0, 1);
  id(&cs, PRE), text(&cs, prefix, strlen(prefix) - 12, strlen(prefix)), all(&cs, "x"), id(&cs, MID);
  check("... suffix first (spm): the same cuts, <suf> suffix before <pre> prefix prompt", t, &in,
        &cs);
  in.spm = 0;
  /* A prompt as long as the suffix's share leaves it nothing; the prompt reads control tokens. */
  in.prompt = "ab<mid>";
  want p = {0};
  for (int i = e.n - 12; i < e.n; i++) id(&p, e.ids[i]);
  id(&p, PRE), text(&p, prefix, strlen(prefix) - 12, strlen(prefix)), all(&p, "ab"), id(&p, MID);
  id(&p, SUF), id(&p, MID);
  check("a prompt of 3 tokens (one a marker): no suffix left", t, &in, &p);
  mkc_tokenizer_free(t);

  /* No file separator: each chunk behind llama-server's snippet line; no repository marker
   * either; BOS (where the model adds it) between the extra and the prefix marker. */
  t = byte_tokenizer(7, 1);
  in = (mkc_infill){.prefix = prefix,
                    .suffix = suffix,
                    .extra_names = names,
                    .extra_texts = texts,
                    .n_extra = 1,
                    .n_batch = 2048,
                    .n_predict = 64,
                    .n_ctx = 4096};
  want s = {0};
  all(&s, "\n\n--- snippet ---\n\n"), all(&s, texts[0]);
  id(&s, BOS), id(&s, PRE), all(&s, prefix), id(&s, SUF), all(&s, suffix), id(&s, MID);
  check("snippet form, BOS after the extra", t, &in, &s);
  /* Suffix first (--spm-infill): the same parts, <suf> suffix before <pre> prefix */
  in.spm = 1;
  want sp = {0};
  all(&sp, "\n\n--- snippet ---\n\n"), all(&sp, texts[0]);
  id(&sp, BOS), id(&sp, SUF), all(&sp, suffix), id(&sp, PRE), all(&sp, prefix), id(&sp, MID);
  check("suffix first (spm), BOS after the extra", t, &in, &sp);
  mkc_tokenizer_free(t);

  /* A model without the three markers cannot fill in: named, refused. */
  t = byte_tokenizer(1, 0);
  char missing[64] = "";
  CHECK(t && mkc_infill_missing(t, missing, sizeof missing) && !strcmp(missing, "suffix, middle"),
        "a model with only the prefix marker lacks '%s'", missing);
  int *ids = NULL;
  CHECK(t && mkc_infill_prompt(t, &in, &ids) == -1 && !ids, "... and gets no prompt");
  mkc_tokenizer_free(t);
  t = byte_tokenizer(7, 0);
  CHECK(t && !mkc_infill_missing(t, missing, sizeof missing), "pre, suf and mid: it can fill in");
  mkc_tokenizer_free(t);
  scratch_close();
  return check_done();
}
