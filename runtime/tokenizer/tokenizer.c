/* The tokenizer every loader builds (mkc_tok_build): the vocabulary with a
 * hash of its texts, the merges keyed by id pairs, the special tokens by
 * first byte, and encode, which splits the text at special tokens and hands
 * each run between them to the model (spm.c, bpe.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/files.h"
#include "util/text.h"
#include "impl.h"
#include "utf8.h"

int mkc_tok_reserve(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

int mkc_tok_push(mkc_tok_ids *out, int id) {
  if (out->n == out->cap && mkc_tok_reserve((void **)&out->v, &out->cap, out->n + 1, sizeof(int)))
    return -2;
  out->v[out->n++] = id;
  return 0;
}

void mkc_tok_work_free(mkc_tok_work *w) {
  free(w->syms);
  free(w->heap);
  free(w->buf);
  memset(w, 0, sizeof *w);
}

/* ---- lookups ---- */

static uint32_t text_hash(const char *s, size_t n) {
  uint64_t h = mkc_fnv1a(MKC_FNV_OFFSET, s, n);
  return (uint32_t)(h ^ h >> 32);
}

int mkc_tok_lookup(const mkc_tokenizer *t, const char *s, size_t n) {
  if (n == 0) return -1;
  for (uint32_t i = text_hash(s, n) & t->slot_mask;; i = (i + 1) & t->slot_mask) {
    int32_t id = t->slots[i];
    if (id < 0) return -1;
    size_t m;
    const char *p = mkc_tok_text(t, id, &m);
    if (m == n && memcmp(p, s, n) == 0) return id;
  }
}

int mkc_tok_text_id(const mkc_tokenizer *t, const char *s, size_t n) {
  int id = mkc_tok_lookup(t, s, n);
  if (id < 0) return -1;
  int type = t->type[id];
  return type == MKC_TOK_NORMAL || type == MKC_TOK_UNDEFINED || type == MKC_TOK_USER_DEFINED ? id
                                                                                             : -1;
}

static uint32_t pair_hash(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key;
}

static uint64_t pair_key(int left, int right) {
  return (uint64_t)(uint32_t)(left + 1) << 32 | (uint32_t)right;
}

int mkc_tok_merge_rank(const mkc_tokenizer *t, int left, int right, int *result) {
  if (!t->merge_key) return -1;
  uint64_t key = pair_key(left, right);
  for (uint32_t i = pair_hash(key) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
    if (t->merge_key[i] == 0) return -1;
    if (t->merge_key[i] == key) {
      *result = t->merge_id[i];
      return t->merge_rank[i];
    }
  }
}

/* ---- build ---- */

static uint32_t table_size(size_t n) {
  uint32_t size = 16;
  while (size < 2 * n) size *= 2;
  return size;
}

static int build_vocab(mkc_tokenizer *t, const mkc_tok_spec *spec) {
  int n = spec->n_vocab;
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (spec->tokens[i].n > MKC_TOKEN_MAX_BYTES) {
      mkc_error_in(t->source, "token %d is %zu bytes long (at most %d)", i, spec->tokens[i].n,
                   MKC_TOKEN_MAX_BYTES);
      return -1;
    }
    total += spec->tokens[i].n;
  }
  if (total >= UINT32_MAX) {
    mkc_error_in(t->source, "the token texts are %llu bytes (at most 4 GiB)",
                 (unsigned long long)total);
    return -1;
  }
  t->text = malloc(total + 1);
  t->text_off = malloc((n + 1) * sizeof *t->text_off);
  t->score = calloc(n, sizeof *t->score);
  t->type = malloc(n);
  t->eog = calloc(n, 1);
  t->slot_mask = table_size(n) - 1;
  t->slots = malloc(((size_t)t->slot_mask + 1) * sizeof *t->slots);
  if (!t->text || !t->text_off || !t->score || !t->type || !t->eog || !t->slots) return -2;
  memset(t->slots, 0xff, ((size_t)t->slot_mask + 1) * sizeof *t->slots);
  uint32_t off = 0;
  for (int i = 0; i < n; i++) {
    t->text_off[i] = off;
    if (spec->tokens[i].n) memcpy(t->text + off, spec->tokens[i].s, spec->tokens[i].n);
    off += (uint32_t)spec->tokens[i].n;
    if (spec->scores) t->score[i] = spec->scores[i];
    t->type[i] = spec->types ? spec->types[i] : MKC_TOK_NORMAL;
  }
  t->text_off[n] = off;
  t->text[off] = '\0';
  for (int i = 0; i < n; i++) { /* the first of equal texts wins */
    size_t m;
    const char *s = mkc_tok_text(t, i, &m);
    if (m == 0 || mkc_tok_lookup(t, s, m) >= 0) continue;
    uint32_t k = text_hash(s, m) & t->slot_mask;
    while (t->slots[k] >= 0) k = (k + 1) & t->slot_mask;
    t->slots[k] = i;
  }
  /* Without token types, SentencePiece's <0xXX> tokens are still bytes. */
  if (!spec->types && t->mode != MKC_TOK_BPE) {
    for (int b = 0; b < 256; b++) {
      char name[8];
      snprintf(name, sizeof name, "<0x%02X>", b);
      int id = mkc_tok_lookup(t, name, 6);
      if (id >= 0) t->type[id] = MKC_TOK_BYTE;
    }
  }
  return 0;
}

static void build_byte_tokens(mkc_tokenizer *t) {
  for (int b = 0; b < 256; b++) {
    char name[8];
    int id;
    if (t->mode == MKC_TOK_BPE) {
      id = mkc_tok_text_id(t, name, (size_t)mkc_utf8_put(mkc_bpe_byte_char(b), name));
    } else {
      snprintf(name, sizeof name, "<0x%02X>", b);
      id = mkc_tok_lookup(t, name, 6);
    }
    t->byte_token[b] = id;
  }
}

static int build_merges(mkc_tokenizer *t, const mkc_tok_spec *spec) {
  if (spec->n_merges == 0) return 0;
  t->merge_mask = table_size((size_t)spec->n_merges) - 1;
  size_t size = (size_t)t->merge_mask + 1;
  t->merge_key = calloc(size, sizeof *t->merge_key);
  t->merge_rank = malloc(size * sizeof *t->merge_rank);
  t->merge_id = malloc(size * sizeof *t->merge_id);
  char *joined = malloc(2 * MKC_TOKEN_MAX_BYTES + 1);
  if (!t->merge_key || !t->merge_rank || !t->merge_id || !joined) {
    free(joined);
    return -2;
  }
  int rc = 0;
  for (int r = 0; r < spec->n_merges && rc == 0; r++) {
    const mkc_tok_str *pair = &spec->merges[2 * r];
    int side[2];
    for (int k = 0; k < 2; k++) side[k] = mkc_tok_lookup(t, pair[k].s, pair[k].n);
    for (int k = 0; k < 2 && rc == 0; k++) {
      if (side[k] >= 0) continue;
      mkc_error_in(t->source, "%s[%d] '%s %s': '%s' is not a token", spec->merges_name, r,
                   mkc_shown_n(pair[0].s, pair[0].n), mkc_shown_n(pair[1].s, pair[1].n),
                   mkc_shown_n(pair[k].s, pair[k].n));
      rc = -1;
    }
    if (rc) break;
    size_t n = pair[0].n + pair[1].n;
    memcpy(joined, pair[0].s, pair[0].n);
    memcpy(joined + pair[0].n, pair[1].s, pair[1].n);
    int id = mkc_tok_lookup(t, joined, n);
    if (id < 0) {
      mkc_error_in(t->source, "%s[%d] '%s %s': the merged '%s' is not a token", spec->merges_name,
                   r, mkc_shown_n(pair[0].s, pair[0].n), mkc_shown_n(pair[1].s, pair[1].n),
                   mkc_shown_n(joined, n));
      rc = -1;
      break;
    }
    uint64_t key = pair_key(side[0], side[1]);
    uint32_t k = pair_hash(key) & t->merge_mask;
    while (t->merge_key[k] && t->merge_key[k] != key) k = (k + 1) & t->merge_mask;
    if (t->merge_key[k]) continue; /* a repeated pair keeps its first rank */
    t->merge_key[k] = key;
    t->merge_rank[k] = r;
    t->merge_id[k] = id;
    t->n_merges++;
  }
  free(joined);
  return rc;
}

static int by_first_byte_longest(const void *a, const void *b, void *vocab) {
  const mkc_tokenizer *t = vocab;
  int x = *(const int32_t *)a, y = *(const int32_t *)b;
  size_t nx, ny;
  const unsigned char *sx = (const unsigned char *)mkc_tok_text(t, x, &nx);
  const unsigned char *sy = (const unsigned char *)mkc_tok_text(t, y, &ny);
  if (sx[0] != sy[0]) return sx[0] < sy[0] ? -1 : 1;
  if (nx != ny) return nx > ny ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int build_specials(mkc_tokenizer *t) {
  int n = 0;
  for (int i = 0; i < t->n_vocab; i++) {
    int type = t->type[i];
    n += (type == MKC_TOK_CONTROL || type == MKC_TOK_USER_DEFINED || type == MKC_TOK_UNKNOWN) &&
         t->text_off[i + 1] > t->text_off[i];
  }
  t->special = malloc((n ? n : 1) * sizeof *t->special);
  if (!t->special) return -2;
  n = 0;
  for (int i = 0; i < t->n_vocab; i++) {
    int type = t->type[i];
    if ((type == MKC_TOK_CONTROL || type == MKC_TOK_USER_DEFINED || type == MKC_TOK_UNKNOWN) &&
        t->text_off[i + 1] > t->text_off[i])
      t->special[n++] = i;
  }
  qsort_r(t->special, (size_t)n, sizeof *t->special, by_first_byte_longest, t);
  for (int b = 0, k = 0; b <= 256; b++) {
    while (k < n && (unsigned char)t->text[t->text_off[t->special[k]]] < b) k++;
    t->special_first[b] = (uint32_t)k;
  }
  return 0;
}

/* Tokens that end a turn, besides eos/eot/eom, by the names models use. */
static const char *const EOG_NAMES[] = {
    "<|eot_id|>",         "<|im_end|>",      "<|end|>",  "<end_of_turn>",
    "<|endoftext|>",      "<|end_of_text|>", "<EOT>",    "<|eom_id|>",
    "<end_of_utterance>", "<|return|>",      "<|call|>",
};

/* The control (or user-defined) token named name, or -1. */
static int control_named(const mkc_tokenizer *t, const char *name) {
  int id = mkc_tok_lookup(t, name, strlen(name));
  return id >= 0 && (t->type[id] == MKC_TOK_CONTROL || t->type[id] == MKC_TOK_USER_DEFINED) ? id
                                                                                            : -1;
}

static void build_eog(mkc_tokenizer *t) {
  /* FIM's pad and separators end an infill too, as llama.cpp counts them */
  int ids[] = {
      t->eos, t->eot, t->eom, t->fim[MKC_FIM_PAD], t->fim[MKC_FIM_REP], t->fim[MKC_FIM_SEP]};
  for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
    if (ids[k] >= 0) t->eog[ids[k]] = 1;
  for (size_t k = 0; k < sizeof EOG_NAMES / sizeof *EOG_NAMES; k++) {
    int id = control_named(t, EOG_NAMES[k]);
    if (id >= 0) t->eog[id] = 1;
  }
  /* gpt-oss's harmony: <|end|> closes a message (the reasoning, before the
   * reply), <|return|> and <|call|> end the answer (llama.cpp decides the same
   * way) */
  int end = control_named(t, "<|end|>");
  if (end >= 0 && control_named(t, "<|return|>") >= 0 && control_named(t, "<|call|>") >= 0)
    t->eog[end] = 0;
}

static const char *const PRE_NAMES[] = {"", "gpt2", "llama3", "qwen2", "smollm", "tekken", "gpt4o"};

mkc_tokenizer *mkc_tok_build(const mkc_tok_spec *spec) {
  mkc_tokenizer *t = calloc(1, sizeof *t);
  if (!t || !(t->source = strdup(spec->source))) {
    free(t);
    mkc_error_in(spec->source, "out of memory");
    return NULL;
  }
  t->mode = spec->mode;
  t->pre = spec->pre;
  t->n_vocab = spec->n_vocab;
  t->bos = spec->bos, t->eos = spec->eos, t->unk = spec->unk, t->pad = spec->pad;
  t->eot = spec->eot, t->eom = spec->eom;
  for (int k = 0; k < MKC_FIM_COUNT; k++) t->fim[k] = spec->fim[k];
  int *ids[] = {&t->bos,    &t->eos,    &t->unk,    &t->pad,    &t->eot,    &t->eom,
                &t->fim[0], &t->fim[1], &t->fim[2], &t->fim[3], &t->fim[4], &t->fim[5]};
  _Static_assert(MKC_FIM_COUNT == 6, "each FIM token checked");
  for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
    if (*ids[k] >= spec->n_vocab || *ids[k] < -1) *ids[k] = -1; /* loaders check; be safe */
  t->add_space_prefix = spec->add_space_prefix != 0;
  t->ignore_merges = spec->ignore_merges;
  t->unk_chars = spec->unk_chars && t->unk >= 0;
  t->fuse_unk = spec->fuse_unk;
  /* llama.cpp's defaults where the file does not say: BOS for Llama 3's and Tekken's */
  t->add_bos = spec->add_bos >= 0
                   ? spec->add_bos
                   : t->mode != MKC_TOK_BPE || t->pre == MKC_PRE_LLAMA3 || t->pre == MKC_PRE_TEKKEN;
  t->eos_after = spec->add_eos <= 0 ? -1 : spec->end_token >= 0 ? spec->end_token : t->eos;
  if (t->eos_after >= spec->n_vocab) t->eos_after = -1;
  if (t->mode == MKC_TOK_BPE)
    snprintf(t->kind, sizeof t->kind, "bpe (%s)", PRE_NAMES[t->pre]);
  else
    snprintf(t->kind, sizeof t->kind, t->mode == MKC_TOK_SPM ? "spm" : "spm (merges)");
  int rc = build_vocab(t, spec);
  if (rc == 0) {
    build_byte_tokens(t);
    rc = build_merges(t, spec);
  }
  if (rc == 0) rc = build_specials(t);
  if (rc == 0 && mkc_tok_build_pieces(t)) rc = -2;
  if (rc == 0) mkc_tok_find_fim(t);
  if (rc == 0) build_eog(t);
  if (rc == -2) mkc_error_in(t->source, "out of memory");
  if (rc) {
    mkc_tokenizer_free(t);
    return NULL;
  }
  return t;
}

void mkc_tokenizer_free(mkc_tokenizer *t) {
  if (!t) return;
  free(t->source);
  free(t->text);
  free(t->text_off);
  free(t->score);
  free(t->type);
  free(t->eog);
  free(t->piece);
  free(t->piece_off);
  free(t->slots);
  free(t->merge_key);
  free(t->merge_rank);
  free(t->merge_id);
  free(t->special);
  free(t);
}

/* ---- the public accessors ---- */

const char *mkc_tokenizer_kind(const mkc_tokenizer *t) { return t->kind; }
int mkc_tokenizer_n_vocab(const mkc_tokenizer *t) { return t->n_vocab; }
int mkc_tokenizer_bos(const mkc_tokenizer *t) { return t->bos; }
int mkc_tokenizer_eos(const mkc_tokenizer *t) { return t->eos; }
int mkc_tokenizer_add_bos(const mkc_tokenizer *t) { return t->add_bos && t->bos >= 0; }

int mkc_tokenizer_added_bos(const mkc_tokenizer *t) {
  return t && mkc_tokenizer_add_bos(t) ? t->bos : -1;
}
int mkc_tokenizer_eos_after(const mkc_tokenizer *t) { return t->eos_after; }

int mkc_tokenizer_encode_framed(const mkc_tokenizer *t, const char *text, size_t len, int **ids) {
  int n = mkc_tokenizer_encode(t, text, len, mkc_tokenizer_add_bos(t), 1, ids);
  if (n < 0 || t->eos_after < 0) return n;
  int *more = realloc(*ids, (size_t)(n + 1) * sizeof *more);
  if (!more) {
    free(*ids);
    *ids = NULL;
    fprintf(stderr, "mkc: error: %s: out of memory\n", t->source);
    return -1;
  }
  more[n] = t->eos_after;
  *ids = more;
  return n + 1;
}
int mkc_tokenizer_is_eog(const mkc_tokenizer *t, int id) {
  return id >= 0 && id < t->n_vocab && t->eog[id];
}
int mkc_tokenizer_eog_ids(const mkc_tokenizer *t, int *ids, int cap) {
  int n = 0;
  for (int id = 0; id < t->n_vocab && n < cap; id++)
    if (t->eog[id]) ids[n++] = id;
  return n;
}
int *mkc_tokenizer_eog_all(const mkc_tokenizer *t, int *n) {
  *n = 0;
  for (int id = 0; id < t->n_vocab; id++) *n += t->eog[id] != 0;
  if (*n == 0) return NULL;
  int *ids = malloc((size_t)*n * sizeof *ids);
  if (!ids) {
    fprintf(stderr, "mkc: error: out of memory for %d end-of-generation tokens\n", *n);
    *n = -1;
    return NULL;
  }
  mkc_tokenizer_eog_ids(t, ids, *n);
  return ids;
}
int mkc_tokenizer_find(const mkc_tokenizer *t, const char *s, size_t n) {
  return mkc_tok_lookup(t, s, n);
}

/* ---- encode ---- */

/* The special token spelled at s[0..n), longest first, or -1. */
static int special_at(const mkc_tokenizer *t, const char *s, size_t n, int parse_special,
                      size_t *len) {
  unsigned char b = (unsigned char)s[0];
  for (uint32_t k = t->special_first[b]; k < t->special_first[b + 1]; k++) {
    int id = t->special[k];
    if (t->type[id] != MKC_TOK_USER_DEFINED && !parse_special) continue;
    size_t m;
    const char *p = mkc_tok_text(t, id, &m);
    if (m <= n && memcmp(p, s, m) == 0) {
      *len = m;
      return id;
    }
  }
  return -1;
}

static int encode_run(const mkc_tokenizer *t, mkc_tok_work *w, const char *s, size_t n,
                      mkc_tok_ids *out) {
  if (t->mode == MKC_TOK_BPE) return mkc_tok_encode_bpe(t, w, s, n, out);
  return mkc_tok_encode_spm(t, w, s, n, out);
}

int mkc_tokenizer_encode(const mkc_tokenizer *t, const char *text, size_t len, int add_bos,
                         int parse_special, int **ids) {
  *ids = NULL;
  if (len > (size_t)INT32_MAX / 4) {
    mkc_error_in(t->source, "a text of %zu bytes is too long to encode (at most %d)", len,
                 INT32_MAX / 4);
    return -1;
  }
  /* Ill-formed UTF-8 reads as U+FFFD, as it does for Hugging Face's
   * tokenizers, whose input is a decoded string (docs/DECISIONS.md). */
  char *replaced = NULL;
  if (!mkc_utf8_valid(text, len)) {
    if (!(replaced = malloc(3 * len))) {
      mkc_error_in(t->source, "out of memory while encoding");
      return -1;
    }
    len = mkc_utf8_replace_invalid(text, len, replaced);
    text = replaced;
  }
  mkc_tok_ids out = {0};
  mkc_tok_work w = {0};
  int rc = 0;
  if (add_bos && t->bos >= 0) rc = mkc_tok_push(&out, t->bos);
  size_t start = 0;
  for (size_t i = 0; i < len && rc == 0;) {
    size_t m;
    int id = special_at(t, text + i, len - i, parse_special, &m);
    if (id < 0) {
      i++;
      continue;
    }
    if (i > start) rc = encode_run(t, &w, text + start, i - start, &out);
    if (rc == 0) rc = mkc_tok_push(&out, id);
    i += m;
    start = i;
  }
  if (rc == 0 && len > start) rc = encode_run(t, &w, text + start, len - start, &out);
  mkc_tok_work_free(&w);
  free(replaced);
  if (rc == 0 && out.n > INT32_MAX) rc = -2;
  if (rc) {
    if (rc == -2) mkc_error_in(t->source, "out of memory while encoding");
    free(out.v);
    return -1;
  }
  *ids = out.v;
  return (int)out.n;
}
