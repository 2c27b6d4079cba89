/* The sampling oracle in double (sampler_ref.h says the semantics). Written
 * apart from the kernel's sampler stage on purpose: it is what that stage is
 * checked against. */
#include "sampler_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int bad(const char *what, double got) {
  fprintf(stderr, "mkc: error: sampling: %s (got %g)\n", what, got);
  return -1;
}

static int check_args(const float *logits, int vocab, const int *window, int n_window,
                      const mkc_sampling *o) {
  if (vocab < 1) return bad("vocab must be at least 1", vocab);
  if (n_window < 0) return bad("the window length must not be negative", n_window);
  if (isnan(o->temp) || isinf(o->temp)) return bad("temp must be finite", o->temp);
  if (isnan(o->top_p)) return bad("top_p is NaN", o->top_p);
  if (isnan(o->min_p)) return bad("min_p is NaN", o->min_p);
  if (!(o->repeat_penalty > 0) || isinf(o->repeat_penalty))
    return bad("repeat_penalty must be positive and finite", o->repeat_penalty);
  if (!isfinite(o->presence_penalty))
    return bad("presence_penalty must be finite", o->presence_penalty);
  if (!isfinite(o->frequency_penalty))
    return bad("frequency_penalty must be finite", o->frequency_penalty);
  if (o->repeat_last_n < 0 || o->repeat_last_n > MKC_HIST_CAP)
    return bad("repeat_last_n must be in 0..MKC_HIST_CAP", o->repeat_last_n);
  if (o->logprobs < 0 || o->logprobs > MKC_LOGPROBS_MAX)
    return bad("logprobs must be in 0..MKC_LOGPROBS_MAX", o->logprobs);
  int finite = 0;
  for (int i = 0; i < vocab; i++) {
    if (isnan(logits[i]) || logits[i] == INFINITY) return bad("a logit is NaN or +inf", i);
    finite += logits[i] != -INFINITY;
  }
  if (!finite) return bad("every logit is -inf", vocab);
  for (int i = 0; i < n_window; i++)
    if (window[i] < 0 || window[i] >= vocab)
      return bad("a window token is out of range", window[i]);
  return 0;
}

/* A token is penalized once, at its first occurrence in the counted span,
 * with its count over the span. */
void mkc_sampler_ref_penalize(const float *logits, int vocab, const int *window, int n_window,
                              const mkc_sampling *o, double *pen) {
  for (int i = 0; i < vocab; i++) pen[i] = logits[i];
  int n = n_window < o->repeat_last_n ? n_window : o->repeat_last_n;
  const int *span = window + n_window - n;
  for (int i = 0; i < n; i++) {
    int seen = 0, count = 0;
    for (int j = 0; j < i && !seen; j++) seen = span[j] == span[i];
    if (seen) continue;
    for (int j = i; j < n; j++) count += span[j] == span[i];
    double *l = &pen[span[i]];
    *l = *l <= 0 ? *l * o->repeat_penalty : *l / o->repeat_penalty;
    *l -= count * (double)o->frequency_penalty + o->presence_penalty;
  }
}

/* A candidate token; the array is ordered by penalized logit descending,
 * ties by lower id: one total order, so every truncation is a prefix of it. */
typedef struct candidate {
  double logit;
  int id;
} candidate;

static int by_logit(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* How many of c[0..n) top-p keeps. */
static int top_p_keep(const candidate *c, int n, double top_p) {
  double sum = 0, cum = 0;
  for (int i = 0; i < n; i++) sum += exp(c[i].logit - c[0].logit);
  for (int i = 0; i < n; i++) {
    cum += exp(c[i].logit - c[0].logit) / sum;
    if (cum >= top_p) return i + 1;
  }
  return n;
}

/* How many of c[0..n) min-p keeps: p_i / p_max = exp(l_i - l_max). */
static int min_p_keep(const candidate *c, int n, double min_p) {
  int keep = 1;
  while (keep < n && exp(c[keep].logit - c[0].logit) >= min_p) keep++;
  return keep;
}

int mkc_sampler_ref_probs(const float *logits, int vocab, const int *window, int n_window,
                          const mkc_sampling *o, double *probs) {
  if (check_args(logits, vocab, window, n_window, o)) return -1;
  double *pen = malloc((size_t)vocab * sizeof *pen);
  candidate *c = malloc((size_t)vocab * sizeof *c);
  if (!pen || !c) {
    free(pen);
    free(c);
    return bad("out of memory for the vocabulary", vocab);
  }
  mkc_sampler_ref_penalize(logits, vocab, window, n_window, o, pen);
  for (int i = 0; i < vocab; i++) c[i] = (candidate){pen[i], i}, probs[i] = 0;
  qsort(c, (size_t)vocab, sizeof *c, by_logit);
  if (o->temp <= 0) {
    probs[c[0].id] = 1;
  } else {
    int n = vocab;
    if (o->top_k > 0 && o->top_k < n) n = o->top_k;
    if (o->top_p < 1) n = top_p_keep(c, n, o->top_p);
    if (o->min_p > 0) n = min_p_keep(c, n, o->min_p);
    /* (l_i - l_max) / temp, not l_i / temp - l_max / temp: a tiny temp
     * must not make both inf and their difference NaN. */
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((c[i].logit - c[0].logit) / o->temp);
    for (int i = 0; i < n; i++) probs[c[i].id] = exp((c[i].logit - c[0].logit) / o->temp) / sum;
  }
  free(pen);
  free(c);
  return 0;
}

int mkc_sampler_ref_logprobs(const float *logits, int vocab, const int *window, int n_window,
                             const mkc_sampling *o, double *logprobs) {
  if (check_args(logits, vocab, window, n_window, o)) return -1;
  mkc_sampler_ref_penalize(logits, vocab, window, n_window, o, logprobs);
  double temp = o->temp > 0 ? o->temp : 1, top = -INFINITY, sum = 0;
  for (int i = 0; i < vocab; i++) top = fmax(top, logprobs[i]);
  for (int i = 0; i < vocab; i++) sum += exp((logprobs[i] - top) / temp);
  for (int i = 0; i < vocab; i++) logprobs[i] = (logprobs[i] - top) / temp - log(sum);
  return 0;
}

double mkc_sampler_ref_residual(const double *p, int vocab, int draft, double *residual) {
  if (vocab < 1) return bad("vocab must be at least 1", vocab);
  if (draft < 0 || draft >= vocab) return bad("the draft token is out of range", draft);
  /* The rest's own sum, not 1 - p[draft]: p may be off 1 by rounding. */
  double rest = 0;
  for (int i = 0; i < vocab; i++)
    if (i != draft) rest += p[i];
  int none_left = p[draft] >= 1 || !(rest > 0);
  for (int i = 0; i < vocab; i++) residual[i] = i == draft || none_left ? 0 : p[i] / rest;
  return p[draft] < 1 ? p[draft] : 1;
}
