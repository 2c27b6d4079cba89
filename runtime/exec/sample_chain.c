/* llama.cpp's samplers beyond the kernel's (sample_chain.h says the chain and its semantics). */
#include "sample_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Token id's text (none past the texts). */
static const char *text_of(const mkc_token_texts *t, int id, size_t *n) {
  if (id < 0 || id >= t->n) {
    *n = 0;
    return "";
  }
  *n = t->off[id + 1] - t->off[id];
  return t->bytes + t->off[id];
}

static int holds(const char *text, size_t n, const char *b, size_t len) {
  for (size_t i = 0; i + len <= n; i++)
    if (memcmp(text + i, b, len) == 0) return 1;
  return 0;
}

/* Whether token id's text holds a breaker whole. */
static int holds_breaker(const mkc_sampling_more *m, const mkc_token_texts *t, int id) {
  size_t n;
  const char *text = text_of(t, id, &n);
  for (int k = 0; k < m->n_breakers; k++)
    if (holds(text, n, m->breakers[k], strlen(m->breakers[k]))) return 1;
  return 0;
}

/* Whether the text of w[0..j) ends with b[0..len). */
static int text_ends_with(const mkc_token_texts *t, const int *w, int j, const char *b,
                          size_t len) {
  while (len > 0) {
    if (--j < 0) return 0;
    size_t n;
    const char *text = text_of(t, w[j], &n);
    size_t k = n < len ? n : len;
    if (memcmp(text + n - k, b + len - k, k) != 0) return 0;
    len -= k;
  }
  return 1;
}

/* Whether an occurrence of a breaker ends in token w[j]'s text: held whole, or its tail opening
 * the text and its head closing the tokens before. */
static int breaker_ends_at(const mkc_sampling_more *m, const mkc_token_texts *t, const int *w,
                           int j) {
  size_t n;
  const char *text = text_of(t, w[j], &n);
  for (int k = 0; k < m->n_breakers; k++) {
    const char *b = m->breakers[k];
    size_t len = strlen(b);
    if (holds(text, n, b, len)) return 1;
    for (size_t s = 1; s < len; s++)
      if (len - s <= n && memcmp(text, b + s, len - s) == 0 && text_ends_with(t, w, j, b, s))
        return 1;
  }
  return 0;
}

typedef struct repeat {
  int id, len;
} repeat;

static int by_id_then_longer(const void *a, const void *b) {
  const repeat *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (y->len > x->len) - (y->len < x->len);
}

void mkc_dry_penalize(const mkc_sampling_more *m, const mkc_token_texts *t, const int *window,
                      int n_window, double *logit, int n_logits) {
  if (!mkc_dry_on(m) || n_window <= 0) return;
  int N = m->dry_penalty_last_n < 0 || m->dry_penalty_last_n > n_window ? n_window
                                                                        : m->dry_penalty_last_n;
  int allowed = m->dry_allowed_length;
  if (N <= allowed) return;
  const int *w = window + n_window - N;
  /* a repeat reaches back no further than the tokens after the last breaker */
  int limit = N;
  for (int i = 0; i < N; i++)
    if (breaker_ends_at(m, t, w, N - 1 - i)) {
      limit = i;
      break;
    }
  if (limit < allowed) return;
  /* z[k]: the tokens that end at w[N-1-k] and at the window's end alike (the Z-function of the
   * window read backwards) */
  int *z = malloc((size_t)N * sizeof *z);
  repeat *found = malloc((size_t)N * sizeof *found);
  if (!z || !found) {
    fputs("mkc: error: DRY: out of memory (the repeat is left unpenalized)\n", stderr);
    free(z), free(found);
    return;
  }
  int n_found = 0;
  z[0] = N;
  for (int k = 1, l = 0, r = 0; k < N; k++) {
    int len = k < r ? (r - k < z[k - l] ? r - k : z[k - l]) : 0;
    while (k + len < N && w[N - 1 - len] == w[N - 1 - k - len]) len++;
    z[k] = len;
    if (k + len > r) l = k, r = k + len;
    if (len > limit) len = limit;
    /* the token that followed that repeat would extend this one */
    if (len >= allowed && w[N - k] >= 0 && w[N - k] < n_logits)
      found[n_found++] = (repeat){w[N - k], len};
  }
  qsort(found, (size_t)n_found, sizeof *found, by_id_then_longer);
  /* exponents past this would overflow a float's range */
  int max_exp = m->dry_base > 1.000001f ? (int)(88.7228391 / log(m->dry_base)) : 0;
  for (int i = 0; i < n_found; i++) {
    if (i > 0 && found[i].id == found[i - 1].id) continue; /* its longest came first */
    if (holds_breaker(m, t, found[i].id)) continue;
    int e = found[i].len - allowed;
    if (max_exp > 0 && e > max_exp) e = max_exp;
    logit[found[i].id] -= m->dry_multiplier * pow(m->dry_base, e);
  }
  free(z);
  free(found);
}

static int by_order(const void *a, const void *b) {
  return mkc_cand_before(a, b) ? -1 : mkc_cand_before(b, a) ? 1 : 0;
}

void mkc_cand_first_k(mkc_cand *c, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    mkc_cand pivot = c[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (mkc_cand_before(&c[i], &pivot)) i++;
      while (mkc_cand_before(&pivot, &c[j])) j--;
      if (i <= j) {
        mkc_cand x = c[i];
        c[i++] = c[j], c[j--] = x;
      }
    }
    if (k - 1 <= j)
      hi = j;
    else if (k - 1 >= i)
      lo = i;
    else
      return;
  }
}

/* p[0..n): the softmax of c[0..n) (sorted: c[0] is the largest) at temperature temp; its
 * sum of exp((l - c[0].l) / temp), before the division. */
static double softmax(const mkc_cand *c, int n, double temp, double *p) {
  double sum = 0;
  for (int k = 0; k < n; k++) sum += p[k] = exp((c[k].l - c[0].l) / temp);
  for (int k = 0; k < n; k++) p[k] /= sum;
  return sum;
}

static double entropy(const double *p, int n) {
  double h = 0;
  for (int k = 0; k < n; k++)
    if (p[k] > 0) h -= p[k] * log(p[k]);
  return h;
}

/* Typical-p's order: surprise's distance from the entropy, ascending, then the logit order. */
typedef struct typical {
  double d;
  int k;
} typical;

static int by_distance(const void *a, const void *b) {
  const typical *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return (x->k > y->k) - (x->k < y->k);
}

/* Keeps the candidates of c[0..n) typical-p keeps, in the logit order: how many. */
static int typical_keep(mkc_cand *c, int n, double typical_p, double *p) {
  typical *t = malloc((size_t)n * sizeof *t);
  if (!t) return n; /* out of memory: nothing cut (said by the caller's next malloc, if any) */
  softmax(c, n, 1, p);
  double h = entropy(p, n), cum = 0;
  for (int k = 0; k < n; k++) t[k] = (typical){fabs(-log(p[k]) - h), k};
  qsort(t, (size_t)n, sizeof *t, by_distance);
  int keep = n;
  for (int k = 0; k < n; k++)
    if ((cum += p[t[k].k]) > typical_p) {
      keep = k + 1;
      break;
    }
  /* the kept ones back in the logit order: mark, then compact */
  for (int k = 0; k < keep; k++) p[t[k].k] = -1;
  int m = 0;
  for (int k = 0; k < n; k++)
    if (p[k] == -1) c[m++] = c[k];
  free(t);
  return m;
}

/* Sets probs at the kept candidates c[0..n) from their softmax at temp. */
static void spread(const mkc_cand *c, int n, double temp, double *scratch, double *probs) {
  softmax(c, n, temp, scratch);
  for (int k = 0; k < n; k++) probs[c[k].i] = scratch[k];
}

/* Mirostat's truncation of c[0..n) (scaled by the temperature, in no order): the candidates it
 * keeps moved to the front, in the logit order; how many. No sort of them all: llama.cpp's
 * sorted prefixes are found by a threshold (2) or a selection (1). */
static int mirostat_keep(const mkc_sampling_more *m, mkc_cand *c, int n, int n_vocab, double mu,
                         double *p) {
  double top = c[0].l, z = 0;
  for (int k = 1; k < n; k++) top = fmax(top, c[k].l);
  for (int k = 0; k < n; k++) z += exp(c[k].l - top);
  int keep = 0;
  if (m->mirostat == 2) { /* the prefix whose surprise stays within mu: -log2 p <= mu */
    double floor_l = top + log(z) - mu * log(2.0);
    for (int k = 0; k < n; k++)
      if (c[k].l >= floor_l) c[keep++] = c[k];
    if (keep == 0) mkc_cand_first_k(c, n, 1), keep = 1; /* none: the likeliest */
    qsort(c, (size_t)keep, sizeof *c, by_order);
    return keep;
  }
  /* mirostat 1: Zipf's exponent estimated on the top 100, and the k whose expected surprise
   * is mu */
  int head = n < 100 ? n : 100;
  if (head < n) mkc_cand_first_k(c, n, head);
  qsort(c, (size_t)head, sizeof *c, by_order);
  if (n == 1) return 1;
  for (int k = 0; k < head; k++) p[k] = exp(c[k].l - top) / z;
  double sum_tb = 0, sum_tt = 0;
  for (int k = 0; k < head - 1; k++) {
    double tk = log((k + 2.0) / (k + 1.0)), bk = log(p[k] / p[k + 1]);
    sum_tb += tk * bk;
    sum_tt += tk * tk;
  }
  double s = sum_tb / sum_tt, eps = s - 1;
  double k = pow(eps * pow(2, mu) / (1 - pow(n_vocab, -eps)), 1 / s);
  if (isnan(k)) k = isinf(s) ? 1 : n; /* a point mass at the top, or no estimate */
  keep = k < 1 ? 1 : k >= n ? n : (int)k;
  if (keep > head) { /* past the sorted head: select, then order */
    mkc_cand_first_k(c, n, keep);
    qsort(c, (size_t)keep, sizeof *c, by_order);
  }
  return keep;
}

int mkc_chain_probs(const mkc_sampling *o, const mkc_sampling_more *m, const double *logit, int n,
                    int n_vocab, double mu, double u_xtc, double *probs) {
  mkc_cand *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
  double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  if (!c || !p) {
    fputs("mkc: error: sampling: out of memory\n", stderr);
    free(c), free(p);
    return -1;
  }
  int cnt = 0;
  for (int i = 0; i < n; i++) {
    probs[i] = 0;
    if (logit[i] != -INFINITY) c[cnt++] = (mkc_cand){logit[i], i};
  }
  int keep = -1;
  if (cnt == 0) goto out;
  double temp = o->temp;
  if (m->mirostat) { /* temperature, then mirostat over everything */
    if (temp <= 0) {
      mkc_cand_first_k(c, cnt, 1);
      probs[c[0].i] = 1;
      keep = 1;
      goto out;
    }
    for (int k = 0; k < cnt; k++) c[k].l /= temp;
    keep = mirostat_keep(m, c, cnt, n_vocab, mu, p);
    spread(c, keep, 1, p, probs);
    goto out;
  }
  if (m->top_n_sigma > 0 && cnt > 1) {
    double max = c[0].l, mean = 0, var = 0;
    for (int k = 0; k < cnt; k++) max = fmax(max, c[k].l), mean += c[k].l / cnt;
    for (int k = 0; k < cnt; k++) var += (c[k].l - mean) * (c[k].l - mean) / cnt;
    int kept = 0;
    for (int k = 0; k < cnt; k++)
      if (!(c[k].l < max - m->top_n_sigma * sqrt(var))) c[kept++] = c[k];
    cnt = kept;
  }
  if (o->top_k > 0 && o->top_k < cnt) {
    mkc_cand_first_k(c, cnt, o->top_k);
    cnt = o->top_k;
  }
  int typical = m->typical_p > 0 && m->typical_p < 1;
  double z = 0; /* top-p's softmax sum over all that reach it (0: over those sorted) */
  if (!typical && o->min_p > 0 && cnt > 64) {
    /* min-p's cut and top-p's are both prefixes of the order, and min-p's threshold is the
     * best token's, which top-p keeps: min-p first is the same, and only its few are sorted
     * (top-p still normalizes over all of them: z) */
    double top = c[0].l;
    for (int k = 1; k < cnt; k++) top = fmax(top, c[k].l);
    int kept = 0;
    for (int k = 0; k < cnt; k++) {
      double r = exp(c[k].l - top);
      z += r;
      if (r >= o->min_p) c[kept++] = c[k];
    }
    cnt = kept;
  }
  qsort(c, (size_t)cnt, sizeof *c, by_order);
  if (typical) cnt = typical_keep(c, cnt, m->typical_p, p);
  if (o->top_p < 1) {
    double few = softmax(c, cnt, 1, p), cum = 0;
    double scale = z > 0 ? few / z : 1; /* p over the sorted few, rescaled to the sum over all */
    for (int k = 0; k < cnt; k++)
      if ((cum += p[k] * scale) >= o->top_p) {
        cnt = k + 1;
        break;
      }
  }
  if (o->min_p > 0) {
    int kept = 1;
    while (kept < cnt && exp(c[kept].l - c[0].l) >= o->min_p) kept++;
    cnt = kept;
  }
  if (m->xtc_probability > 0 && m->xtc_threshold <= 0.5f && cnt >= 2 &&
      u_xtc < m->xtc_probability) { /* all above the threshold but the least likely of them */
    softmax(c, cnt, 1, p);
    int last = 0;
    while (last + 1 < cnt && p[last + 1] >= m->xtc_threshold) last++;
    if (p[0] >= m->xtc_threshold && last > 0) {
      memmove(c, c + last, (size_t)(cnt - last) * sizeof *c);
      cnt -= last;
    }
  }
  if (temp > 0 && m->dynatemp_range > 0 && cnt > 1) { /* the entropy picks the temperature */
    double lo = fmax(0, temp - m->dynatemp_range), hi = temp + m->dynatemp_range;
    softmax(c, cnt, 1, p);
    temp = lo + (hi - lo) * pow(entropy(p, cnt) / log(cnt), m->dynatemp_exponent);
  }
  if (temp <= 0) { /* greedy: the best that the truncations kept */
    probs[c[0].i] = 1;
    keep = 1;
    goto out;
  }
  spread(c, cnt, temp, p, probs);
  keep = cnt;
out:
  free(c);
  free(p);
  return keep;
}

double mkc_mirostat_update(const mkc_sampling_more *m, double mu, double p) {
  return mu - m->mirostat_eta * (-log2(p) - m->mirostat_tau);
}
