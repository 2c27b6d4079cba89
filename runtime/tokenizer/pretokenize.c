/* The pre-tokenizers of byte-level BPE models, written out by hand from
 * their regular expressions (leftmost alternative first, greedy, with the
 * backtracking the patterns need). \p{L}, \p{N}, \s as in runtime/tokenizer/utf8.h; a
 * byte that is not well-formed UTF-8 counts as a character of its own that
 * is none of them.
 *
 * gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * qwen2:  llama3 with \p{N} (one digit at a time) for \p{N}{1,3}
 * smollm: every \p{N} is a piece of its own (HF's Digits(individual_digits)),
 *         then gpt2 on the text between them
 * tekken: [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|
 *         [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|
 *         \p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *         (Mistral's tokenizer.json; llama.cpp approximates its cases by
 *         ASCII's, docs/DECISIONS.md)
 * gpt4o:  tekken with (?i:'s|'t|'re|'ve|'m|'ll|'d)? after each word form and
 *         \p{N}{1,3} for \p{N} (GPT-4o's o200k; Phi-4-mini, Llama 4)
 * Text that no alternative matches becomes a piece of its own, as HF's
 * Split(behavior = Isolated) keeps it. */
#include <stdlib.h>

#include "impl.h"
#include "utf8.h"

enum {
  C_LETTER = 1,
  C_NUMBER = 2,
  C_SPACE = 4,
  C_NEWLINE = 8, /* \r or \n, also C_SPACE */
  C_UPPER = 16,  /* Lu or Lt, also C_LETTER */
  C_LOWER = 32,  /* Ll, also C_LETTER */
  C_MARK = 64,   /* M*: none of the others */
};               /* C_UPPER, C_LOWER and C_MARK: looked up for Tekken's pattern only */

typedef struct text {
  const uint8_t *cls; /* [n] class bits per character */
  const int32_t *cp;  /* [n] code point, -1 if ill-formed */
} text;

#define IS(i, c) (t->cls[i] & (c))
#define OTHER(i) (!IS(i, C_LETTER | C_NUMBER | C_SPACE)) /* [^\s\p{L}\p{N}] */

/* Case folding as (?i) does it for these letters: ASCII, and U+017F (long
 * s) folds to s. */
static int32_t fold(int32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c == 0x17f ? 's' : c; }

/* 's 't 're 've 'm 'll 'd at i: the end, or i when none. */
static size_t contraction(const text *t, size_t i, size_t hi, int any_case) {
  if (t->cp[i] != '\'' || i + 1 >= hi) return i;
  int32_t a = t->cp[i + 1], b = i + 2 < hi ? t->cp[i + 2] : 0;
  if (any_case) a = fold(a), b = fold(b);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

static size_t run_of(const text *t, size_t i, size_t hi, int c) {
  while (i < hi && IS(i, c)) i++;
  return i;
}

/* \s+(?!\S)|\s+ at a space: the whole run at the end of the text, else
 * all of it but the last space (which goes with what follows), else one. */
static size_t spaces(const text *t, size_t i, size_t hi) {
  size_t k = run_of(t, i, hi, C_SPACE);
  if (k == hi) return k;
  return k - i >= 2 ? k - 1 : i + 1;
}

/* The end both Llama 3's and Tekken's patterns share:
 * ' ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+', Tekken's with '/'
 * among the trailing newlines ([\r\n/]*). */
static size_t other_or_spaces(const text *t, size_t i, size_t hi, int slash) {
  size_t j = i + (t->cp[i] == ' ' && i + 1 < hi && OTHER(i + 1));
  if (OTHER(j)) {
    while (j < hi && OTHER(j)) j++;
    while (j < hi && (IS(j, C_NEWLINE) || (slash && t->cp[j] == '/'))) j++;
    return j;
  }
  /* \s*[\r\n]+: up to the last newline of the run of spaces */
  size_t k = run_of(t, i, hi, C_SPACE);
  for (size_t m = k; m > i; m--)
    if (IS(m - 1, C_NEWLINE)) return m;
  return spaces(t, i, hi);
}

static size_t next_gpt2(const text *t, size_t i, size_t hi) {
  size_t k = contraction(t, i, hi, 0);
  if (k > i) return k;
  size_t j = i + (t->cp[i] == ' ' && i + 1 < hi && !IS(i + 1, C_SPACE)); /* " ?" */
  if (IS(j, C_LETTER)) return run_of(t, j, hi, C_LETTER);
  if (IS(j, C_NUMBER)) return run_of(t, j, hi, C_NUMBER);
  if (OTHER(j)) {
    while (j < hi && OTHER(j)) j++;
    return j;
  }
  return spaces(t, i, hi);
}

static size_t next_llama3(const text *t, size_t i, size_t hi, int max_digits) {
  size_t k = contraction(t, i, hi, 1);
  if (k > i) return k;
  /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  if (IS(i, C_LETTER)) return run_of(t, i, hi, C_LETTER);
  if (!IS(i, C_NEWLINE | C_NUMBER) && i + 1 < hi && IS(i + 1, C_LETTER))
    return run_of(t, i + 1, hi, C_LETTER);
  /* \p{N}{1,max_digits} */
  if (IS(i, C_NUMBER)) {
    for (k = i; k < hi && k - i < (size_t)max_digits && IS(k, C_NUMBER);) k++;
    return k;
  }
  return other_or_spaces(t, i, hi, 0);
}

/* Tekken's upper part [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and lower part
 * [\p{Ll}\p{Lm}\p{Lo}\p{M}]: a letter of no case (Lm, Lo) or a mark is
 * in both. */
#define UPPERISH(i) ((IS(i, C_LETTER) && !IS(i, C_LOWER)) || IS(i, C_MARK))
#define LOWERISH(i) ((IS(i, C_LETTER) && !IS(i, C_UPPER)) || IS(i, C_MARK))

/* UPPER* LOWER+ from j, the star giving back until the plus can start: the
 * end, or j when it cannot match. */
static size_t upper_star_lower_plus(const text *t, size_t j, size_t hi) {
  size_t r = j;
  while (r < hi && UPPERISH(r)) r++;
  for (size_t k = r + 1; k > j; k--) {
    if (k - 1 < hi && LOWERISH(k - 1)) {
      size_t e = k - 1;
      while (e < hi && LOWERISH(e)) e++;
      return e;
    }
  }
  return j;
}

/* UPPER+ LOWER* from j: the end, or j when it cannot match. */
static size_t upper_plus_lower_star(const text *t, size_t j, size_t hi) {
  size_t r = j;
  while (r < hi && UPPERISH(r)) r++;
  if (r == j) return j;
  while (r < hi && LOWERISH(r)) r++;
  return r;
}

/* Tekken's pattern, or with gpt4o GPT-4o's: each word form followed by an optional
 * (?i:'s|'t|'re|'ve|'m|'ll|'d), and \p{N}{1,3} for Tekken's \p{N}. */
static size_t next_tekken(const text *t, size_t i, size_t hi, int gpt4o) {
  /* [^\r\n\p{L}\p{N}]? before either word form, tried taken, then not */
  int lead = !IS(i, C_LETTER | C_NUMBER | C_NEWLINE) && i + 1 < hi;
  size_t (*const forms[2])(const text *, size_t, size_t) = {upper_star_lower_plus,
                                                            upper_plus_lower_star};
  for (int f = 0; f < 2; f++) {
    size_t k = i;
    if (lead && (k = forms[f](t, i + 1, hi)) == i + 1) k = i;
    if (k == i) k = forms[f](t, i, hi);
    if (k > i) return gpt4o && k < hi ? contraction(t, k, hi, 1) : k;
  }
  if (IS(i, C_NUMBER)) { /* \p{N}, GPT-4o's \p{N}{1,3} */
    size_t k = i + 1;
    while (gpt4o && k < hi && k - i < 3 && IS(k, C_NUMBER)) k++;
    return k;
  }
  return other_or_spaces(t, i, hi, 1);
}

int mkc_pretokenize(int pre, const char *s, size_t n,
                    int (*word)(void *ctx, const char *s, size_t n), void *ctx) {
  uint8_t *cls = malloc(n + 1);
  int32_t *cp = malloc((n + 1) * sizeof *cp);
  uint32_t *off = malloc((n + 1) * sizeof *off); /* byte offset of each character */
  if (!cls || !cp || !off) {
    free(cls), free(cp), free(off);
    return MKC_TOK_NOMEM;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; m++) {
    int32_t c;
    int len = mkc_utf8_next(s + i, n - i, &c);
    if (len <= 0) len = 1, c = -1;
    cp[m] = c;
    off[m] = (uint32_t)i;
    cls[m] = (uint8_t)(mkc_unicode_is_letter(c)   ? C_LETTER
                       : mkc_unicode_is_number(c) ? C_NUMBER
                       : c == '\r' || c == '\n'   ? C_SPACE | C_NEWLINE
                       : mkc_unicode_is_space(c)  ? C_SPACE
                                                  : 0);
    if (pre == MKC_PRE_TEKKEN || pre == MKC_PRE_GPT4O)
      cls[m] |= (uint8_t)(cls[m] & C_LETTER ? (mkc_unicode_is_upper(c) ? C_UPPER : 0) |
                                                  (mkc_unicode_is_lower(c) ? C_LOWER : 0)
                          : !cls[m] && mkc_unicode_is_mark(c) ? C_MARK
                                                              : 0);
    i += (size_t)len;
  }
  off[m] = (uint32_t)n;
  text t = {cls, cp};
  int rc = 0;
  for (size_t i = 0; i < m && rc == 0;) {
    size_t hi = m, k;
    if (pre == MKC_PRE_SMOLLM) { /* digits alone; gpt2 up to the next digit */
      if (cls[i] & C_NUMBER) {
        rc = word(ctx, s + off[i], off[i + 1] - off[i]);
        i++;
        continue;
      }
      for (hi = i; hi < m && !(cls[hi] & C_NUMBER);) hi++;
    }
    for (; i < hi && rc == 0; i = k) {
      k = pre == MKC_PRE_LLAMA3   ? next_llama3(&t, i, hi, 3)
          : pre == MKC_PRE_QWEN2  ? next_llama3(&t, i, hi, 1)
          : pre == MKC_PRE_TEKKEN ? next_tekken(&t, i, hi, 0)
          : pre == MKC_PRE_GPT4O  ? next_tekken(&t, i, hi, 1)
                                  : next_gpt2(&t, i, hi);
      rc = word(ctx, s + off[i], off[k] - off[i]);
    }
  }
  free(cls), free(cp), free(off);
  return rc;
}
