/* SentencePiece-style encoding (Llama, Llama-2): the run gets a leading
 * space, every space becomes "▁" (U+2581), the text splits into UTF-8
 * characters, and neighbours merge: by the joined token's score as
 * SentencePiece's BPE does (GGUF "llama"), or by the rank in a merges list
 * (Llama-2's tokenizer.json). A symbol that is no token comes out as its
 * bytes' <0xXX> tokens, or as the unknown token when one is missing. */
#include <string.h>

#include "util/files.h"
#include "impl.h"
#include "utf8.h"

static const char SPACE_MARK[] = "\xe2\x96\x81"; /* ▁ */

/* The bytes of a symbol that is no token. */
static int fall_back(const mkc_tokenizer *t, const char *s, size_t n, mkc_tok_ids *out) {
  size_t k = 0;
  while (k < n && t->byte_token[(unsigned char)s[k]] >= 0) k++;
  if (k == n) {
    for (k = 0; k < n; k++) {
      int rc = mkc_tok_push(out, t->byte_token[(unsigned char)s[k]]);
      if (rc) return rc;
    }
    return 0;
  }
  if (t->unk >= 0) return mkc_tok_push(out, t->unk);
  mkc_error_in(t->source, "no token for the byte 0x%02X: no <0x%02X> token and no unknown token",
               (unsigned char)s[k], (unsigned char)s[k]);
  return -1;
}

int mkc_tok_encode_spm(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, size_t n,
                       mkc_tok_ids *out) {
  /* The text as SentencePiece sees it: "▁" for each space, one in front. */
  if (mkc_tok_reserve((void **)&w->buf, &w->cap_buf, 3 * n + 3, 1)) return MKC_TOK_NOMEM;
  size_t m = 0;
  if (t->add_space_prefix) memcpy(w->buf, SPACE_MARK, 3), m = 3;
  for (size_t i = 0; i < n; i++) {
    if (text[i] == ' ')
      memcpy(w->buf + m, SPACE_MARK, 3), m += 3;
    else
      w->buf[m++] = text[i];
  }
  if (mkc_tok_reserve((void **)&w->syms, &w->cap_syms, m, sizeof *w->syms)) return MKC_TOK_NOMEM;
  int k = 0;
  for (size_t i = 0; i < m; k++) {
    int32_t cp;
    int len = mkc_utf8_next(w->buf + i, m - i, &cp);
    if (len <= 0) len = 1; /* an ill-formed byte is a symbol of its own */
    w->syms[k] = (mkc_tok_sym){(uint32_t)i, (uint32_t)len, mkc_tok_text_id(t, w->buf + i, len),
                               k - 1, k + 1};
    i += (size_t)len;
  }
  if (k == 0) return 0;
  w->syms[k - 1].next = -1;
  int rc = mkc_tok_merge(t, w, w->buf, k, t->mode == MKC_TOK_SPM);
  for (int s = 0; s >= 0 && rc == 0; s = w->syms[s].next) {
    const mkc_tok_sym *sym = &w->syms[s];
    rc = sym->id >= 0 ? mkc_tok_push(out, sym->id)
                      : fall_back(t, w->buf + sym->start, sym->len, out);
  }
  return rc;
}
