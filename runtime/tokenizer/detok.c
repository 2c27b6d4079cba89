/* What tokens print. Each token's piece is worked out once at load time:
 * byte-level BPE maps its characters back to bytes, SentencePiece turns "▁"
 * into a space and <0xXX> into the byte, control tokens keep their text.
 * The streaming detokenizer then only joins pieces into whole UTF-8
 * characters. */
#include <stdlib.h>
#include <string.h>

#include "impl.h"
#include "utf8.h"
#include "util/text.h"

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

/* The piece of token id written to out (room for the token's text). */
static size_t piece_of(const mkc_tokenizer *t, int id, char *out) {
  size_t n;
  const char *s = mkc_tok_text(t, id, &n);
  int type = t->type[id];
  int plain = type == MKC_TOK_NORMAL || type == MKC_TOK_UNDEFINED || type == MKC_TOK_UNUSED ||
              type == MKC_TOK_BYTE;
  if (t->mode == MKC_TOK_BPE && plain) { /* back to bytes, or as it is if any char has none */
    size_t m = 0;
    for (size_t i = 0; i < n;) {
      int32_t cp;
      int len = mkc_utf8_next(s + i, n - i, &cp);
      int b = len > 0 ? mkc_bpe_char_byte(cp) : -1;
      if (b < 0) break;
      out[m++] = (char)b;
      i += (size_t)len;
      if (i == n) return m;
    }
  } else if (t->mode != MKC_TOK_BPE && type == MKC_TOK_BYTE) {
    int hi = n == 6 ? mkc_hex_digit(s[3]) : -1, lo = n == 6 ? mkc_hex_digit(s[4]) : -1;
    if (hi >= 0 && lo >= 0 && memcmp(s, "<0x", 3) == 0 && s[5] == '>') {
      out[0] = (char)(hi * 16 + lo);
      return 1;
    }
  } else if (t->mode != MKC_TOK_BPE && (plain || type == MKC_TOK_USER_DEFINED)) {
    size_t m = 0;
    for (size_t i = 0; i < n;) {
      if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0)
        out[m++] = ' ', i += 3;
      else
        out[m++] = s[i++];
    }
    return m;
  }
  if (n) memcpy(out, s, n);
  return n;
}

int mkc_tok_build_pieces(mkc_tokenizer *t) {
  t->piece =
      malloc((size_t)t->text_off[t->n_vocab] + 1); /* a piece is never longer than its text */
  t->piece_off = malloc(((size_t)t->n_vocab + 1) * sizeof *t->piece_off);
  if (!t->piece || !t->piece_off) return -1;
  uint32_t off = 0;
  for (int i = 0; i < t->n_vocab; i++) {
    t->piece_off[i] = off;
    off += (uint32_t)piece_of(t, i, t->piece + off);
  }
  t->piece_off[t->n_vocab] = off;
  return 0;
}

void mkc_detok_init(mkc_detok *d, const mkc_tokenizer *t, int show_special) {
  memset(d, 0, sizeof *d);
  d->t = t;
  d->show_special = show_special;
}

/* Writes the whole characters of pending + s[0..n) that fit, keeps an
 * incomplete one at the end. */
static size_t emit(mkc_detok *d, const char *s, size_t n, char *out, size_t cap) {
  char buf[MKC_TOKEN_MAX_BYTES + 4];
  size_t m = (size_t)d->n_pending;
  memcpy(buf, d->pending, m);
  memcpy(buf + m, s, n);
  m += n;
  d->n_pending = 0;
  size_t w = 0;
  for (size_t i = 0; i < m;) {
    int32_t cp;
    int len = mkc_utf8_next(buf + i, m - i, &cp);
    if (len == 0) { /* the start of a character: wait for the rest */
      d->n_pending = (int)(m - i);
      memcpy(d->pending, buf + i, m - i);
      break;
    }
    const char *c = len > 0 ? buf + i : REPLACEMENT;
    size_t clen = len > 0 ? (size_t)len : 3;
    if (w + clen > cap) break;
    memcpy(out + w, c, clen);
    w += clen;
    i += len > 0 ? (size_t)len : (size_t)-len;
  }
  return w;
}

size_t mkc_detok_push(mkc_detok *d, int id, char *out, size_t cap) {
  const mkc_tokenizer *t = d->t;
  if (id < 0 || id >= t->n_vocab) return 0;
  int type = t->type[id];
  if (!d->show_special &&
      (type == MKC_TOK_CONTROL || type == MKC_TOK_UNKNOWN || type == MKC_TOK_UNUSED))
    return 0;
  const char *p = t->piece + t->piece_off[id];
  size_t n = t->piece_off[id + 1] - t->piece_off[id];
  if (n == 0) return 0;
  if (!d->started && t->mode != MKC_TOK_BPE && t->add_space_prefix && p[0] == ' ') p++, n--;
  d->started = 1;
  return emit(d, p, n, out, cap);
}

size_t mkc_detok_push_shown(mkc_detok *d, int id, char *out, size_t cap) {
  int show_special = d->show_special;
  d->show_special = 1;
  size_t n = mkc_detok_push(d, id, out, cap);
  d->show_special = show_special;
  return n;
}

size_t mkc_detok_flush(mkc_detok *d, char *out, size_t cap) {
  if (d->n_pending == 0) return 0;
  d->n_pending = 0;
  if (cap < 3) return 0;
  memcpy(out, REPLACEMENT, 3);
  return 3;
}

const char *mkc_tokenizer_pieces(const mkc_tokenizer *t, const uint32_t **off) {
  *off = t->piece_off;
  return t->piece;
}

int mkc_tokenizer_is_text(const mkc_tokenizer *t, int id) {
  if (id < 0 || id >= t->n_vocab || t->eog[id]) return 0;
  int type = t->type[id];
  return type != MKC_TOK_CONTROL && type != MKC_TOK_UNKNOWN && type != MKC_TOK_UNUSED;
}

char *mkc_tokenizer_decode(const mkc_tokenizer *t, const int *ids, int n, int show_special) {
  size_t len = 0, cap = 256;
  char *text = malloc(cap), chunk[MKC_DETOK_MAX];
  if (!text) return NULL;
  mkc_detok d;
  mkc_detok_init(&d, t, show_special);
  for (int i = 0; i <= n; i++) {
    size_t m = i < n ? mkc_detok_push(&d, ids[i], chunk, sizeof chunk)
                     : mkc_detok_flush(&d, chunk, sizeof chunk);
    if (len + m + 1 > cap) {
      while (len + m + 1 > cap) cap *= 2;
      char *grown = realloc(text, cap);
      if (!grown) {
        free(text);
        return NULL;
      }
      text = grown;
    }
    memcpy(text + len, chunk, m);
    len += m;
  }
  text[len] = '\0';
  return text;
}
