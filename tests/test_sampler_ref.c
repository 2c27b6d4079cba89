/* The sampling oracle (exec/sampler_ref.h) against distributions worked out
 * by hand on vocabularies of 5 to 8 tokens; the chi-square test the kernel's
 * sampler will be judged by (tests/stats.h) against known quantiles, closed
 * forms and simulated draws; the Philox reference (tests/philox_ref.h)
 * against Random123's known-answer vectors. */
#include "check.h"
#include "exec/sampler_ref.h"
#include "philox_ref.h"
#include "stats.h"
#include "util/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-12

/* Every option off: plain softmax at temperature 1. */
static mkc_sampling plain(void) {
  return (mkc_sampling){.temp = 1, .top_p = 1, .repeat_penalty = 1, .repeat_last_n = 64};
}

/* expected[ids[i]] = w[i] / sum(w), 0 elsewhere: a distribution from hand
 * weights, normalized here and nowhere else. */
static void from_weights(const int *ids, const double *w, int n, int vocab, double *expected) {
  double sum = 0;
  for (int i = 0; i < vocab; i++) expected[i] = 0;
  for (int i = 0; i < n; i++) sum += w[i];
  for (int i = 0; i < n; i++) expected[ids[i]] = w[i] / sum;
}

static void check_probs(const char *name, const float *logits, int vocab, const int *window,
                        int n_window, mkc_sampling o, const double *expected) {
  double probs[8];
  int rc = mkc_sampler_ref_probs(logits, vocab, window, n_window, &o, probs);
  CHECK_INT(rc, 0, "%s: returns 0", name);
  for (int i = 0; i < vocab; i++) CHECK_NEAR(probs[i], expected[i], TOL, "%s: p[%d]", name, i);
}

static void test_plain_and_temperature(void) {
  const float logits[5] = {1, 2, 3, 0, -1};
  const int ids[5] = {0, 1, 2, 3, 4};
  double e[5];
  from_weights(ids, (double[]){exp(1), exp(2), exp(3), exp(0), exp(-1)}, 5, 5, e);
  check_probs("all off: softmax", logits, 5, NULL, 0, plain(), e);
  mkc_sampling o = plain();
  o.temp = 2; /* logits / 2 */
  from_weights(ids, (double[]){exp(0.5), exp(1), exp(1.5), exp(0), exp(-0.5)}, 5, 5, e);
  check_probs("temp 2", logits, 5, NULL, 0, o, e);
  o.temp = 0.5; /* logits * 2 */
  from_weights(ids, (double[]){exp(2), exp(4), exp(6), exp(0), exp(-2)}, 5, 5, e);
  check_probs("temp 0.5", logits, 5, NULL, 0, o, e);
}

static void test_top_k(void) {
  const float logits[5] = {1, 2, 3, 0, -1};
  mkc_sampling o = plain();
  o.top_k = 2; /* ids 2 and 1 survive: 1 / (1 + e^-1) and e^-1 / (1 + e^-1) */
  double e[5] = {0, exp(-1) / (1 + exp(-1)), 1 / (1 + exp(-1)), 0, 0};
  check_probs("top-k 2", logits, 5, NULL, 0, o, e);
  o.top_k = 9; /* more than the vocabulary: off */
  from_weights((int[]){0, 1, 2, 3, 4}, (double[]){exp(1), exp(2), exp(3), 1, exp(-1)}, 5, 5, e);
  check_probs("top-k 9 > vocab", logits, 5, NULL, 0, o, e);

  /* Ties at the boundary: three logits of 2; the lower ids win. */
  const float tied[5] = {2, 5, 2, 2, 1};
  o.top_k = 2; /* 5 and the first 2 (id 0) */
  double t2[5] = {exp(-3) / (1 + exp(-3)), 1 / (1 + exp(-3)), 0, 0, 0};
  check_probs("top-k 2, ties at the boundary", tied, 5, NULL, 0, o, t2);
  o.top_k = 3; /* 5, id 0, id 2 */
  from_weights((int[]){1, 0, 2}, (double[]){exp(3), 1, 1}, 3, 5, e);
  check_probs("top-k 3, ties at the boundary", tied, 5, NULL, 0, o, e);
}

static void test_top_p(void) {
  /* Eight equal logits: 1/8 each, exactly, so the cumulative sums are exact. */
  const float flat[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  mkc_sampling o = plain();
  o.top_p = 0.25f; /* 1/8 + 1/8 reaches 0.25 exactly: two tokens, the lower ids */
  double e[8] = {0.5, 0.5, 0, 0, 0, 0, 0, 0};
  check_probs("top-p exactly reached", flat, 8, NULL, 0, o, e);
  o.top_p = 0.26f; /* two are not enough: three */
  double e3[8] = {1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 0, 0, 0};
  check_probs("top-p just past", flat, 8, NULL, 0, o, e3);
  o.top_p = 0; /* at least one token */
  double e1[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  check_probs("top-p 0 keeps one", flat, 8, NULL, 0, o, e1);

  /* softmax({3,2,1,0,-1}) = .6364 .2341 .0861 .0317 .0117; cumulative
   * .6364 .8705 .9566 .9883 1 */
  const float logits[5] = {3, 2, 1, 0, -1};
  double e5[5];
  o.top_p = 0.5f; /* the first crosses it */
  check_probs("top-p 0.5", logits, 5, NULL, 0, o, (double[]){1, 0, 0, 0, 0});
  o.top_p = 0.8f;
  check_probs("top-p 0.8", logits, 5, NULL, 0, o,
              (double[]){1 / (1 + exp(-1)), exp(-1) / (1 + exp(-1)), 0, 0, 0});
  o.top_p = 0.9f;
  from_weights((int[]){0, 1, 2}, (double[]){exp(3), exp(2), exp(1)}, 3, 5, e5);
  check_probs("top-p 0.9", logits, 5, NULL, 0, o, e5);
  o.top_p = 1; /* off */
  from_weights((int[]){0, 1, 2, 3, 4}, (double[]){exp(3), exp(2), exp(1), 1, exp(-1)}, 5, 5, e5);
  check_probs("top-p 1 is off", logits, 5, NULL, 0, o, e5);
}

static void test_min_p(void) {
  /* p_i / p_max = e^(l_i - 3): 1, .368, .135, .050, .018 */
  const float logits[5] = {3, 2, 1, 0, -1};
  mkc_sampling o = plain();
  o.min_p = 0.3f;
  check_probs("min-p 0.3", logits, 5, NULL, 0, o,
              (double[]){1 / (1 + exp(-1)), exp(-1) / (1 + exp(-1)), 0, 0, 0});
  o.min_p = 0.1f;
  double e[5];
  from_weights((int[]){0, 1, 2}, (double[]){exp(3), exp(2), exp(1)}, 3, 5, e);
  check_probs("min-p 0.1", logits, 5, NULL, 0, o, e);
  /* min-p 1: exactly the tokens tied with the top (ratio 1 >= 1) */
  const float tied[5] = {1, 4, 4, 2, 4};
  o.min_p = 1;
  check_probs("min-p 1 keeps the ties", tied, 5, NULL, 0, o,
              (double[]){0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3});
  o.min_p = 2; /* nothing qualifies: the top (lowest id) stays */
  check_probs("min-p 2 keeps the top", tied, 5, NULL, 0, o, (double[]){0, 1, 0, 0, 0});
}

static void test_greedy(void) {
  const float tied[5] = {1, 4, 4, 2, 0};
  mkc_sampling o = plain();
  o.temp = 0;
  o.top_k = 1, o.top_p = 0.1f, o.min_p = 0.9f; /* ignored */
  check_probs("temp 0: argmax, ties to the lower id", tied, 5, NULL, 0, o,
              (double[]){0, 1, 0, 0, 0});
  o.temp = -1;
  check_probs("temp -1: argmax", tied, 5, NULL, 0, o, (double[]){0, 1, 0, 0, 0});
  /* The argmax of the penalized logits: 4 / 1.1 = 3.64 < 3.9 */
  const float close[5] = {1, 4, 3.9f, 2, 0};
  o.repeat_penalty = 1.1f;
  check_probs("temp 0 after a repeat penalty", close, 5, (int[]){1}, 1, o,
              (double[]){0, 0, 1, 0, 0});
}

static void test_penalties(void) {
  const float logits[5] = {2, -1, 0.5f, 3, 0};
  const int ids[5] = {0, 1, 2, 3, 4};
  double e[5];
  mkc_sampling o = plain();
  /* rp 2 on ids 0, 1, 4: 2 / 2 = 1, -1 * 2 = -2, 0 * 2 = 0 */
  o.repeat_penalty = 2;
  from_weights(ids, (double[]){exp(1), exp(-2), exp(0.5), exp(3), 1}, 5, 5, e);
  check_probs("repeat penalty, both signs", logits, 5, (int[]){0, 1, 4}, 3, o, e);

  /* id 3 three times, id 1 twice; frequency 0.5, presence 0.25:
   * id 3: 3 - 3 * 0.5 - 0.25 = 1.25; id 1: -1 - 2 * 0.5 - 0.25 = -2.25 */
  const int window[5] = {3, 1, 3, 1, 3};
  o = plain();
  o.frequency_penalty = 0.5f, o.presence_penalty = 0.25f;
  from_weights(ids, (double[]){exp(2), exp(-2.25), exp(0.5), exp(1.25), 1}, 5, 5, e);
  check_probs("frequency and presence, counts 3 and 2", logits, 5, window, 5, o, e);
  /* and rp 2 first: id 3: 3 / 2 - 1.75 = -0.25; id 1: -1 * 2 - 1.25 = -3.25 */
  o.repeat_penalty = 2;
  from_weights(ids, (double[]){exp(2), exp(-3.25), exp(0.5), exp(-0.25), 1}, 5, 5, e);
  check_probs("all three penalties", logits, 5, window, 5, o, e);

  /* repeat_last_n 2 counts only {1, 3}: once each; id 3: 3 / 2 - 0.75,
   * id 1: -1 * 2 - 0.75 */
  o.repeat_last_n = 2;
  from_weights(ids, (double[]){exp(2), exp(-2.75), exp(0.5), exp(0.75), 1}, 5, 5, e);
  check_probs("repeat_last_n cuts the window", logits, 5, window, 5, o, e);
  /* repeat_last_n 3 counts {3, 1, 3}: id 3 twice: 1.5 - 1.25 = 0.25 */
  o.repeat_last_n = 3;
  from_weights(ids, (double[]){exp(2), exp(-2.75), exp(0.5), exp(0.25), 1}, 5, 5, e);
  check_probs("repeat_last_n 3", logits, 5, window, 5, o, e);
  o.repeat_last_n = 0; /* off */
  from_weights(ids, (double[]){exp(2), exp(-1), exp(0.5), exp(3), 1}, 5, 5, e);
  check_probs("repeat_last_n 0: no penalty", logits, 5, window, 5, o, e);
}

/* Every stage at once, each cut placed so that another order of the stages
 * gives another answer (penalties binary fractions, so exact in float).
 * penalties (rp 1.25, frequency 0.125, presence 0.25; window: id 1 twice, id 4):
 *   id 1: 3 / 1.25 - 2 * 0.125 - 0.25 = 1.9;  id 4: 2 / 1.25 - 0.125 - 0.25 = 1.225
 *   -> {0.5, 1.9, 2.5, 1, 1.225, -1, 0, 1.5}; order 2, 1, 7, 4, 3, 0, 6, 5
 * top-k 5: ids 2 1 7 4 3; softmax .4134 .2269 .1521 .1155 .0922
 * top-p 0.85: cumulative .4134 .6402 .7923 .9078 -> ids 2 1 7 4
 *   (temperature first would give .639 .832 .918: three tokens)
 * min-p 0.25: ratios e^-.6 = .549, e^-1 = .368, e^-1.275 = .279: all stay
 *   (after temperature e^-2 = .135 would go)
 * temp 0.5: weights e^5, e^3.8, e^3, e^2.45 */
static void test_combined(void) {
  const float logits[8] = {0.5f, 3, 2.5f, 1, 2, -1, 0, 1.5f};
  const int window[3] = {1, 4, 1};
  mkc_sampling o = plain();
  o.repeat_penalty = 1.25f, o.frequency_penalty = 0.125f, o.presence_penalty = 0.25f;
  o.top_k = 5, o.top_p = 0.85f, o.min_p = 0.25f, o.temp = 0.5f;
  double e[8];
  from_weights((int[]){2, 1, 7, 4}, (double[]){exp(5), exp(3.8), exp(3), exp(2.45)}, 4, 8, e);
  check_probs("penalties, top-k, top-p, min-p, temp", logits, 8, window, 3, o, e);
}

static void test_masked(void) {
  const float logits[6] = {0, -INFINITY, 1, -INFINITY, 0, 0};
  double e[6];
  from_weights((int[]){0, 2, 4, 5}, (double[]){1, exp(1), 1, 1}, 4, 6, e);
  check_probs("-inf logits are masked tokens", logits, 6, NULL, 0, plain(), e);
}

static void test_logprobs(void) {
  const float logits[5] = {1, 2, 3, 0, -1};
  mkc_sampling o = plain();
  o.temp = 2, o.top_k = 1, o.top_p = 0.1f, o.min_p = 0.9f; /* no truncation */
  double lp[5];
  double lse = log(exp(0.5) + exp(1) + exp(1.5) + 1 + exp(-0.5));
  CHECK_INT(mkc_sampler_ref_logprobs(logits, 5, NULL, 0, &o, lp), 0, "logprobs: returns 0");
  const double half[5] = {0.5, 1, 1.5, 0, -0.5};
  for (int i = 0; i < 5; i++)
    CHECK_NEAR(lp[i], half[i] - lse, TOL, "logprobs temp 2, cuts ignored: [%d]", i);
  /* temp 0: divided by 1; a repeat penalty on id 2 (3 -> 1.5) */
  o.temp = 0, o.repeat_penalty = 2;
  lse = log(exp(1) + exp(2) + exp(1.5) + 1 + exp(-1));
  mkc_sampler_ref_logprobs(logits, 5, (int[]){2}, 1, &o, lp);
  const double pen[5] = {1, 2, 1.5, 0, -1};
  for (int i = 0; i < 5; i++)
    CHECK_NEAR(lp[i], pen[i] - lse, TOL, "logprobs temp 0, penalized: [%d]", i);
}

static void test_residual(void) {
  const double p[5] = {0.1, 0.2, 0.3, 0.4, 0};
  double r[5];
  CHECK_NEAR(mkc_sampler_ref_residual(p, 5, 2, r), 0.3, TOL, "residual: accept = p[draft]");
  const double want[5] = {0.1 / 0.7, 0.2 / 0.7, 0, 0.4 / 0.7, 0};
  for (int i = 0; i < 5; i++) CHECK_NEAR(r[i], want[i], TOL, "residual: [%d]", i);
  /* accept * delta(draft) + (1 - accept) * residual is p again */
  for (int i = 0; i < 5; i++)
    CHECK_NEAR(0.3 * (i == 2) + 0.7 * r[i], p[i], TOL, "residual: recombines to p [%d]", i);
  CHECK_NEAR(mkc_sampler_ref_residual(p, 5, 4, r), 0, TOL, "residual: draft of probability 0");
  for (int i = 0; i < 5; i++) CHECK_NEAR(r[i], p[i], TOL, "residual of a p-0 draft is p [%d]", i);
  const double point[5] = {0, 0, 0, 1, 0};
  r[0] = 7;
  CHECK_NEAR(mkc_sampler_ref_residual(point, 5, 3, r), 1, TOL, "residual: p[draft] = 1");
  int zero = 1;
  for (int i = 0; i < 5; i++) zero &= r[i] == 0;
  CHECK(zero, "residual: all zero when nothing is left");
}

static void test_errors(void) {
  const float logits[5] = {1, 2, NAN, 0, -1};
  double probs[5];
  mkc_sampling o = plain();
  check_stderr_begin();
  int rc = mkc_sampler_ref_probs(logits, 5, NULL, 0, &o, probs);
  char *err = check_stderr_end();
  CHECK_INT(rc, -1, "a NaN logit is refused");
  CHECK(strstr(err, "mkc: error: sampling: a logit is NaN or +inf (got 2)") != NULL,
        "the message names the logit");
  free(err);
  const float fine[5] = {1, 2, 3, 0, -1};
  const float none[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  struct {
    const char *name, *message;
    const float *logits;
    int vocab, window_token;
    mkc_sampling o;
  } cases[] = {
      {"vocab 0", "vocab must be at least 1", fine, 0, -1, plain()},
      {"every logit -inf", "every logit is -inf", none, 5, -1, plain()},
      {"repeat_last_n too long", "repeat_last_n must be in 0..MKC_HIST_CAP", fine, 5, -1,
       (mkc_sampling){.temp = 1, .top_p = 1, .repeat_penalty = 1, .repeat_last_n = 257}},
      {"repeat penalty 0", "repeat_penalty must be positive", fine, 5, -1,
       (mkc_sampling){.temp = 1, .top_p = 1, .repeat_penalty = 0}},
      {"temp NaN", "temp must be finite", fine, 5, -1,
       (mkc_sampling){.temp = NAN, .top_p = 1, .repeat_penalty = 1}},
      {"logprobs 21", "logprobs must be in 0..MKC_LOGPROBS_MAX", fine, 5, -1,
       (mkc_sampling){.temp = 1, .top_p = 1, .repeat_penalty = 1, .logprobs = 21}},
      {"window token 5 of 5", "a window token is out of range (got 5)", fine, 5, 5, plain()},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int window = cases[i].window_token;
    check_stderr_begin();
    rc = mkc_sampler_ref_probs(cases[i].logits, cases[i].vocab, &window, window >= 0, &cases[i].o,
                               probs);
    int rc_lp = mkc_sampler_ref_logprobs(cases[i].logits, cases[i].vocab, &window, window >= 0,
                                         &cases[i].o, probs);
    err = check_stderr_end();
    CHECK(rc == -1 && rc_lp == -1 && strstr(err, cases[i].message), "refused: %s", cases[i].name);
    free(err);
  }
  double r[5];
  check_stderr_begin();
  double accept = mkc_sampler_ref_residual((double[]){1, 0, 0, 0, 0}, 5, 5, r);
  free(check_stderr_end());
  CHECK(accept == -1, "residual: a draft out of range is refused");
}

/* Chi-square survival against known quantiles and the closed forms
 * Q = erfc(sqrt(x/2)) (dof 1), e^(-x/2) (dof 2), erfc(sqrt(x/2)) +
 * sqrt(2x/pi) e^(-x/2) (dof 3). */
static void test_chi2_survival(void) {
  struct {
    double x;
    int dof;
    double q;
  } quantiles[] = {{3.841, 1, 0.05},     {18.307, 10, 0.05}, {13.277, 4, 0.01},
                   {124.342, 100, 0.05}, {3.940, 10, 0.95},  {77.929, 100, 0.95}};
  for (size_t i = 0; i < sizeof quantiles / sizeof *quantiles; i++)
    CHECK_NEAR(chi2_survival(quantiles[i].x, quantiles[i].dof), quantiles[i].q, 1e-4,
               "chi2 Q(dof %d, x %g)", quantiles[i].dof, quantiles[i].x);
  const double xs[] = {0.01, 0.5, 1, 2.5, 4, 10, 30};
  for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
    double x = xs[i];
    CHECK_NEAR(chi2_survival(x, 1), erfc(sqrt(x / 2)), 1e-12, "chi2 dof 1 closed form x=%g", x);
    CHECK_NEAR(chi2_survival(x, 2), exp(-x / 2), 1e-12, "chi2 dof 2 closed form x=%g", x);
    CHECK_NEAR(chi2_survival(x, 3), erfc(sqrt(x / 2)) + sqrt(2 * x / M_PI) * exp(-x / 2), 1e-12,
               "chi2 dof 3 closed form x=%g", x);
  }
  CHECK_NEAR(chi2_survival(0, 5), 1, 0, "chi2 Q at x = 0 is 1");
}

/* Bucket merging by hand, 100 draws. */
static void test_chi2_merge(void) {
  int dof;
  /* expected 50 2 40 3 5: 2 and 3 pool into one bucket of 5.
   * stat (48-50)^2/50 + (41-40)^2/40 + (7-5)^2/5 + (4-5)^2/5 = 1.105, dof 3 */
  double x = 1.105;
  double q3 = erfc(sqrt(x / 2)) + sqrt(2 * x / M_PI) * exp(-x / 2);
  double p =
      chi2_p_value((long[]){48, 3, 41, 1, 7}, (double[]){.5, .02, .4, .03, .05}, 5, 100, &dof);
  CHECK_INT(dof, 3, "merge: two small buckets pool into one");
  CHECK_NEAR(p, q3, 1e-12, "merge: p-value of the pooled buckets");
  /* expected 50 2 46 2: the pool (4, observed 5) stays short and joins the
   * smallest bucket, 46 -> 50 observed 44 + 5 = 49: stat 1/50 + 1/50, dof 1 */
  p = chi2_p_value((long[]){51, 2, 44, 3}, (double[]){.5, .02, .46, .02}, 4, 100, &dof);
  CHECK_INT(dof, 1, "merge: a short pool joins the smallest bucket");
  CHECK_NEAR(p, erfc(sqrt(0.04 / 2)), 1e-12, "merge: p-value after the join");
  /* A token expected never but drawn fails outright. */
  p = chi2_p_value((long[]){50, 49, 1}, (double[]){.5, .5, 0}, 3, 100, &dof);
  CHECK(p == 0, "a draw of a probability-0 token gives p = 0");
  p = chi2_p_value((long[]){50, 50, 0}, (double[]){.5, .5, 0}, 3, 100, &dof);
  CHECK_NEAR(p, 1, 1e-12, "a probability-0 token never drawn is fine (stat 0)");
  CHECK_INT(dof, 1, "a probability-0 bucket is no bucket");
  p = chi2_p_value((long[]){50, 49, 0}, (double[]){.5, .5, 0}, 3, 100, &dof);
  CHECK(p == 0, "counts that miss draws give p = 0");
}

/* Draws from probs by the inverse CDF, with splitmix64's top 53 bits. */
static void draw(const double *probs, int vocab, long draws, uint64_t seed, long *counts) {
  for (int i = 0; i < vocab; i++) counts[i] = 0;
  for (long d = 0; d < draws; d++) {
    double u = (mkc_splitmix64(&seed) >> 11) * 0x1p-53, cum = 0;
    int tok = vocab - 1;
    for (int i = 0; i < vocab; i++)
      if (probs[i] > 0 && u < (cum += probs[i])) {
        tok = i;
        break;
      }
    counts[tok]++;
  }
}

static void oracle(int top_k, float temp, double *probs) {
  const float logits[8] = {3, 2.5f, 2, 1.5f, 1, 0.5f, 0, -0.5f};
  mkc_sampling o = plain();
  o.top_k = top_k, o.temp = temp;
  mkc_sampler_ref_probs(logits, 8, NULL, 0, &o, probs);
}

static void test_chi2_simulated(void) {
  enum { DRAWS = 20000 };
  double truth[8], wrong[8];
  long counts[64];
  int dof;
  oracle(4, 0.8f, truth);
  draw(truth, 8, DRAWS, 1, counts);
  double p = chi2_p_value(counts, truth, 8, DRAWS, &dof);
  CHECK(p >= 0.001 && dof == 3, "draws from the truth pass (p %.3g, dof %d)", p, dof);
  oracle(3, 0.8f, wrong); /* top-k one short */
  draw(wrong, 8, DRAWS, 2, counts);
  p = chi2_p_value(counts, truth, 8, DRAWS, &dof);
  CHECK(p < 1e-6, "top-k 3 tested as top-k 4 fails (p %.3g)", p);
  oracle(5, 0.8f, wrong); /* top-k one over: a probability-0 token drawn */
  draw(wrong, 8, DRAWS, 3, counts);
  CHECK(chi2_p_value(counts, truth, 8, DRAWS, &dof) == 0, "top-k 5 tested as top-k 4 fails");
  oracle(6, 0.8f, truth);
  oracle(6, 0.9f, wrong); /* a slightly warm temperature */
  draw(wrong, 8, DRAWS, 4, counts);
  p = chi2_p_value(counts, truth, 8, DRAWS, &dof);
  CHECK(p < 0.001, "temp 0.9 tested as temp 0.8 fails (p %.3g)", p);

  /* Under the truth the p-value is uniform: over 200 seeds about 10 fall
   * below 0.05 (binomial sd 3.1) and they average near 0.5 (sd 0.02). */
  int below = 0;
  double mean = 0;
  for (int seed = 100; seed < 300; seed++) {
    draw(truth, 8, DRAWS, seed, counts);
    p = chi2_p_value(counts, truth, 8, DRAWS, &dof);
    below += p < 0.05, mean += p / 200;
  }
  CHECK(below >= 2 && below <= 22 && fabs(mean - 0.5) < 0.08,
        "p-values under the truth are uniform (%d of 200 below 0.05, mean %.3f)", below, mean);

  /* A long tail of small buckets: 64 tokens, p ~ 2^(-i/4); the tail pools. */
  double tail[64], sum = 0;
  for (int i = 0; i < 64; i++) sum += tail[i] = pow(2, -i / 4.0);
  for (int i = 0; i < 64; i++) tail[i] /= sum;
  draw(tail, 64, DRAWS, 5, counts);
  p = chi2_p_value(counts, tail, 64, DRAWS, &dof);
  CHECK(p >= 0.001 && dof > 10 && dof < 63, "a long tail pools and passes (p %.3g, dof %d)", p,
        dof);
}

/* Random123's kat_vectors for Philox4x32: counter, key -> output. */
static void test_philox(void) {
  struct {
    int rounds;
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {10,
       {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {10,
       {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
      {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
      {7,
       {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
      {7,
       {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
  };
  for (size_t i = 0; i < sizeof kat / sizeof *kat; i++) {
    uint32_t out[4];
    if (kat[i].rounds == 10)
      philox4x32_10(kat[i].ctr, kat[i].key, out);
    else
      philox4x32_r(kat[i].rounds, kat[i].ctr, kat[i].key, out);
    for (int w = 0; w < 4; w++)
      CHECK_INT(out[w], kat[i].out[w], "philox4x32-%d kat %zu word %d", kat[i].rounds, i, w);
  }
}

int main(void) {
  test_plain_and_temperature();
  test_top_k();
  test_top_p();
  test_min_p();
  test_greedy();
  test_penalties();
  test_combined();
  test_masked();
  test_logprobs();
  test_residual();
  test_errors();
  test_chi2_survival();
  test_chi2_merge();
  test_chi2_simulated();
  test_philox();
  return check_done();
}
