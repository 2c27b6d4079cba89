/* Byte-level BPE (GPT-2 and its descendants: Llama-3, Qwen2, SmolLM). The
 * text is split by the model's pre-tokenizer pattern (pretokenize.c); each
 * piece's bytes become the printable characters GPT-2 maps them to, and
 * neighbours merge by their rank in the merges list, lowest first. Llama-3
 * keeps a piece whole when it is a token already (ignore_merges). A byte
 * whose character is no token is left out, as llama.cpp and HF's BPE
 * without an unknown token do: never the unknown token a GGUF names, which
 * may be an end-of-generation token (SmolLM2's <|endoftext|>). */
#include "impl.h"
#include "utf8.h"

/* GPT-2's map: the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
 * themselves; the other 68 (0..32, 127..160, 173), in order, for U+0100.. */
uint32_t mkc_bpe_byte_char(int b) {
  if (b <= 32) return 256u + (uint32_t)b;
  if (b >= 127 && b <= 160) return (uint32_t)b + 162u;
  if (b == 173) return 323u;
  return (uint32_t)b;
}

int mkc_bpe_char_byte(int32_t cp) {
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 255 && cp != 173)) return cp;
  if (cp >= 256 && cp <= 288) return cp - 256;
  if (cp >= 289 && cp <= 322) return cp - 162;
  if (cp == 323) return 173;
  return -1;
}

typedef struct bpe_run {
  const mkc_tokenizer *t;
  mkc_tok_work *w;
  mkc_tok_ids *out;
} bpe_run;

static int encode_word(void *ctx, const char *s, size_t n) {
  bpe_run *run = ctx;
  const mkc_tokenizer *t = run->t;
  mkc_tok_work *w = run->w;
  if (t->ignore_merges) {
    if (mkc_tok_reserve((void **)&w->buf, &w->cap_buf, 2 * n, 1)) return MKC_TOK_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      m += (size_t)mkc_utf8_put(mkc_bpe_byte_char((unsigned char)s[i]), w->buf + m);
    int id = mkc_tok_text_id(t, w->buf, m);
    if (id >= 0) return mkc_tok_push(run->out, id);
  }
  if (mkc_tok_reserve((void **)&w->syms, &w->cap_syms, n, sizeof *w->syms)) return MKC_TOK_NOMEM;
  for (size_t i = 0; i < n; i++)
    w->syms[i] = (mkc_tok_sym){(uint32_t)i, 1, t->byte_token[(unsigned char)s[i]], (int32_t)i - 1,
                               (int32_t)i + 1};
  w->syms[n - 1].next = -1;
  int rc = mkc_tok_merge(t, w, s, (int)n, 0);
  int after_unk = 0;
  for (int k = 0; k >= 0 && rc == 0; k = w->syms[k].next) {
    int id = w->syms[k].id; /* -1: a single byte whose character is no token */
    if (id < 0 && (!t->unk_chars || (t->fuse_unk && after_unk))) continue;
    after_unk = id < 0;
    rc = mkc_tok_push(run->out, id < 0 ? t->unk : id);
  }
  return rc;
}

int mkc_tok_encode_bpe(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, size_t n,
                       mkc_tok_ids *out) {
  bpe_run run = {t, w, out};
  return mkc_pretokenize(t->pre, text, n, encode_word, &run);
}
