/* Statistics for the sampling tests: a chi-square goodness-of-fit test of
 * drawn token counts against the oracle's distribution. Header-only.
 *
 * The p-value is Q(dof/2, x/2), the regularized upper incomplete gamma
 * function, computed by its power series below a + 1 and by a continued
 * fraction (modified Lentz) above, the split Numerical Recipes uses because
 * each converges fast on its side. */
#ifndef MKC_STATS_H
#define MKC_STATS_H

#include <math.h>

#define STATS_EPS 1e-15
#define STATS_ITER_MAX 10000
#define STATS_MIN_EXPECTED 5.0 /* the usual rule for the chi-square approximation */

/* P(a, x) by the series  e^-x x^a / Gamma(a+1) * sum x^n / ((a+1)...(a+n)). */
static inline double stats_gamma_p_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int n = 1; n < STATS_ITER_MAX && fabs(term) > fabs(sum) * STATS_EPS; n++) {
    term *= x / (a + n);
    sum += term;
  }
  return sum * exp(-x + a * log(x) - lgamma(a));
}

/* Q(a, x) by the continued fraction
 * e^-x x^a / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))). */
static inline double stats_gamma_q_fraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < STATS_ITER_MAX; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double step = d * c;
    h *= step;
    if (fabs(step - 1) < STATS_EPS) break;
  }
  return h * exp(-x + a * log(x) - lgamma(a));
}

/* Q(a, x) = Gamma(a, x) / Gamma(a), for a > 0, x >= 0. */
static inline double stats_gamma_q(double a, double x) {
  if (x <= 0) return 1;
  if (x < a + 1) return 1 - stats_gamma_p_series(a, x);
  return stats_gamma_q_fraction(a, x);
}

/* P(X >= x) for X chi-square with dof degrees of freedom. */
static inline double chi2_survival(double x, int dof) { return stats_gamma_q(dof / 2.0, x / 2); }

/* The chi-square goodness-of-fit p-value of observed[n] (counts of draws
 * draws) against expected_probs[n]. Buckets expected below 5 are pooled, in
 * index order, into merged buckets of at least 5; a pool left short at the
 * end joins the smallest bucket. A bucket expected 0 but observed must make
 * any test fail: p = 0 outright. Counts that do not add up to draws are a
 * broken test: p = 0 too. *dof_out (if not NULL): merged buckets - 1. With
 * a single bucket there is nothing to test: p = 1, dof 0. */
static inline double chi2_p_value(const long *observed, const double *expected_probs, int n,
                                  long draws, int *dof_out) {
  double stat = 0, pool_exp = 0, smallest_exp = -1, smallest_obs = 0;
  long total = 0, pool_obs = 0;
  int buckets = 0;
  if (dof_out) *dof_out = -1;
  for (int i = 0; i < n; i++) {
    double e = expected_probs[i] * draws, o = observed[i];
    total += observed[i];
    if (e <= 0) {
      if (observed[i] > 0) return 0;
      continue;
    }
    if (e < STATS_MIN_EXPECTED) {
      pool_exp += e, pool_obs += observed[i];
      if (pool_exp < STATS_MIN_EXPECTED) continue;
      e = pool_exp, o = pool_obs, pool_exp = 0, pool_obs = 0;
    }
    stat += (o - e) * (o - e) / e;
    if (smallest_exp < 0 || e < smallest_exp) smallest_exp = e, smallest_obs = o;
    buckets++;
  }
  if (total != draws) return 0;
  if (pool_exp > 0 && smallest_exp > 0) {
    /* The short pool joins the smallest bucket: its term is taken out and
     * the merged bucket's put in. */
    double e = smallest_exp, o = smallest_obs;
    stat -= (o - e) * (o - e) / e;
    e += pool_exp, o += pool_obs;
    stat += (o - e) * (o - e) / e;
  }
  if (dof_out) *dof_out = buckets > 0 ? buckets - 1 : 0;
  return buckets > 1 ? chi2_survival(stat, buckets - 1) : 1;
}

#endif
