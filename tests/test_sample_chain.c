/* llama.cpp's samplers the kernel lacks (exec/sample_chain.h), chosen on the host.
 *
 * Oracles that are not the code under test:
 *  - with every sampler of its own off, the chain gives the kernel's sampling oracle's
 *    distribution (exec/sampler_ref.h, written apart) for random logits and options;
 *  - each sampler on a distribution small enough to work out by hand (typical-p, top-n-sigma,
 *    XTC, mirostat 2), or by its published formula in a line of this file (dynamic
 *    temperature, mirostat 1's k);
 *  - DRY against a brute force over every earlier position (the code uses the Z-function), on
 *    random windows, and by hand for breakers (one token, spanning two) and the exponent's cap;
 *  - the host's choice (exec/constrain.h, a free document) against the chain's distribution
 *    by chi-square, plain draws and speculative verdicts on drafts, each shown to catch a
 *    planted bug; mirostat's state followed token by token. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "stats.h"

#include "exec/constrain.h"
#include "exec/sample_chain.h"
#include "exec/sampler_ref.h"

#define P_MIN 1e-4 /* a fit this unlikely fails the check */

static uint64_t rng_state = 777;
static double uniform01(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) * 0x1p-53;
}

/* chain probabilities of logits l[0..n) at temperature 1, nothing else on but more. */
static int chain(const mkc_sampling_more *m, const double *l, int n, double mu, double u,
                 double *p) {
  mkc_sampling o = {.temp = 1, .top_p = 1};
  return mkc_chain_probs(&o, m, l, n, n, mu, u, p);
}

static void off(mkc_sampling_more *m) { mkc_sampling_more_init(m); }

static double max_diff(const double *a, const double *b, int n) {
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
  return d;
}

/* ---- the chain with its own samplers off is the kernel's oracle ---- */

#define V 200

static void test_kernel_oracle(void) {
  mkc_sampling_more m;
  off(&m);
  CHECK(!mkc_sampling_more_on(&m), "llama.cpp's defaults: every sampler here is off");
  mkc_sampling_more zero = {0};
  CHECK(!mkc_sampling_more_on(&zero), "all-zero options: every sampler off");
  int bad = 0, cases = 0;
  float logits[V];
  double pen[V], want[V], got[V];
  int window[40];
  for (int k = 0; k < 300; k++) {
    for (int i = 0; i < V; i++) logits[i] = (float)(uniform01() * 12 - 6);
    if (k % 7 == 0) logits[k % V] = -INFINITY;
    for (int i = 0; i < 40; i++) window[i] = (int)(uniform01() * 30);
    mkc_sampling o = {.temp = k % 5 == 0 ? 0 : (float)(0.2 + uniform01() * 1.5),
                      .top_k = k % 3 == 0 ? 0 : 1 + (int)(uniform01() * 60),
                      .top_p = k % 4 == 0 ? 1 : (float)(0.3 + uniform01() * 0.7),
                      .min_p = k % 2 ? 0 : (float)(uniform01() * 0.2),
                      .repeat_penalty = (float)(1 + uniform01()),
                      .presence_penalty = (float)uniform01(),
                      .frequency_penalty = (float)uniform01() * 0.5f,
                      .repeat_last_n = (int)(uniform01() * 40)};
    mkc_sampler_ref_penalize(logits, V, window, 40, &o, pen);
    mkc_sampler_ref_probs(logits, V, window, 40, &o, want);
    int kept = mkc_chain_probs(&o, &m, pen, V, V, 10, 0.5, got);
    bad += kept <= 0 || max_diff(want, got, V) > 1e-12;
    cases++;
  }
  CHECK(bad == 0,
        "%d random cases (temperature or greedy, top-k, top-p, min-p, penalties): the chain "
        "with its own samplers off gives the kernel's oracle's distribution (%d differ)",
        cases, bad);
}

/* ---- each sampler by hand ---- */

/* the logits of probabilities p[0..n) */
static void logits_of(const double *p, int n, double *l) {
  for (int i = 0; i < n; i++) l[i] = log(p[i]);
}

static void test_typical(void) {
  double p4[] = {.5, .25, .125, .125}, l[4], got[4];
  logits_of(p4, 4, l);
  mkc_sampling_more m;
  off(&m);
  /* H = 1.75 ln 2; |-ln p - H|: 0.52, 0.17, 0.87, 0.87; by it: 1, 0, 2, 3 */
  m.typical_p = 0.5f;
  chain(&m, l, 4, 0, 1, got);
  double want[] = {2 / 3.0, 1 / 3.0, 0, 0};
  CHECK(max_diff(got, want, 4) < 1e-12,
        "typical 0.5 on (.5 .25 .125 .125): keeps the two nearest the entropy (mass .75 > .5)");
  m.typical_p = 0.2f;
  chain(&m, l, 4, 0, 1, got);
  double only1[] = {0, 1, 0, 0};
  CHECK(max_diff(got, only1, 4) < 1e-12,
        "typical 0.2: keeps only the most typical token, not the likeliest");
  mkc_sampling greedy = {.temp = 0, .top_p = 1};
  mkc_chain_probs(&greedy, &m, l, 4, 4, 0, 1, got);
  CHECK(max_diff(got, only1, 4) < 1e-12,
        "typical 0.2, temperature 0: greedy takes the best token typical kept (llama.cpp's order)");
  m.typical_p = 0.75f;
  chain(&m, l, 4, 0, 1, got);
  double three[] = {.5 / .875, .25 / .875, .125 / .875, 0};
  CHECK(max_diff(got, three, 4) < 1e-12,
        "typical 0.75: mass .75 is not above .75, so a third token joins (ties: the lower id)");
}

static void test_top_n_sigma(void) {
  double l[] = {0, 1, 2, 3, 10}, got[5];
  mkc_sampling_more m;
  off(&m);
  /* mean 3.2, standard deviation sqrt(12.56) = 3.544 */
  m.top_n_sigma = 1;
  chain(&m, l, 5, 0, 1, got);
  CHECK(got[4] == 1, "top-n-sigma 1 on (0 1 2 3 10): only 10 is within one sigma of the max");
  m.top_n_sigma = 2;
  chain(&m, l, 5, 0, 1, got);
  double e = exp(-7.0);
  double want[] = {0, 0, 0, e / (1 + e), 1 / (1 + e)};
  CHECK(max_diff(got, want, 5) < 1e-12, "top-n-sigma 2: 3 and 10 stay (10 - 7.09 = 2.91)");
  double ninf[] = {-INFINITY, 1, 2, 3, 10};
  m.top_n_sigma = 1.2f;
  chain(&m, ninf, 5, 0, 1, got);
  /* over the finite four: mean 4, sd sqrt(((9 + 4 + 1 + 36) / 4)) = 3.536; 10 - 4.24 = 5.76 */
  CHECK(got[4] == 1 && got[0] == 0, "top-n-sigma leaves -inf logits out of mean and deviation");
}

static void test_xtc(void) {
  double p4[] = {.4, .3, .2, .1}, l[4], got[4];
  logits_of(p4, 4, l);
  mkc_sampling_more m;
  off(&m);
  m.xtc_probability = 0.5f;
  m.xtc_threshold = 0.25f;
  chain(&m, l, 4, 0, 0.2, got);
  double want[] = {0, .5, 2 / 6.0, 1 / 6.0};
  CHECK(max_diff(got, want, 4) < 1e-12,
        "XTC at .25 (draw .2 < .5): the top choices but the least likely of them go");
  chain(&m, l, 4, 0, 0.7, got);
  CHECK(max_diff(got, p4, 4) < 1e-12, "XTC's draw .7 >= .5: nothing goes");
  m.xtc_threshold = 0.45f;
  chain(&m, l, 4, 0, 0, got);
  CHECK(max_diff(got, p4, 4) < 1e-12, "XTC at .45: one token above it or none, nothing goes");
  m.xtc_threshold = 0.6f;
  CHECK(!mkc_sampling_more_on(&m), "XTC with a threshold above .5 is off");
}

static void test_dynatemp(void) {
  double l[] = {2, 1, 0}, got[3], want[3];
  mkc_sampling_more m;
  off(&m);
  m.dynatemp_range = 0.5f;
  m.dynatemp_exponent = 2;
  mkc_sampling o = {.temp = 1, .top_p = 1};
  mkc_chain_probs(&o, &m, l, 3, 3, 0, 1, got);
  /* the formula: softmax at 1, its entropy over ln 3, to the power, into [0.5, 1.5] */
  double s = exp(2) + exp(1) + 1, h = 0;
  for (int i = 0; i < 3; i++) h -= exp(l[i]) / s * log(exp(l[i]) / s);
  double t = 0.5 + 1.0 * pow(h / log(3), 2), z = 0;
  for (int i = 0; i < 3; i++) z += want[i] = exp(l[i] / t);
  for (int i = 0; i < 3; i++) want[i] /= z;
  CHECK(max_diff(got, want, 3) < 1e-12,
        "dynamic temperature 1 +- 0.5, exponent 2, on (2 1 0): temperature %.4f from the "
        "entropy",
        t);
}

static void test_mirostat(void) {
  double p4[] = {.5, .25, .125, .125}, l[4], got[4];
  logits_of(p4, 4, l);
  mkc_sampling_more m;
  off(&m);
  m.mirostat = 2;
  /* surprises 1, 2, 3, 3 bits */
  chain(&m, l, 4, 2.5, 1, got);
  double two[] = {2 / 3.0, 1 / 3.0, 0, 0};
  CHECK(max_diff(got, two, 4) < 1e-12, "mirostat 2, mu 2.5: tokens of surprise <= 2.5 bits");
  chain(&m, l, 4, 0.5, 1, got);
  CHECK(got[0] == 1, "mirostat 2, mu 0.5: none within it, the likeliest stays");
  m.mirostat_tau = 5, m.mirostat_eta = 0.1f;
  CHECK_NEAR(mkc_mirostat_update(&m, 10, 0.25), 10 - 0.1 * (2 - 5), 1e-6,
             "mirostat's mu after a token of probability .25: mu - eta (2 bits - tau)");
  /* mirostat 1 on a Zipf distribution of exponent 1.5 over 1000 tokens: the estimate is 1.5
   * exactly, so k = (eps 2^mu / (1 - N^-eps))^(1/s) */
  enum { N = 1000 };
  static double zl[N], zp[N];
  for (int i = 0; i < N; i++) zl[i] = -1.5 * log(i + 1.0);
  m.mirostat = 1;
  double mu = 6, k = pow(0.5 * pow(2, mu) / (1 - pow(N, -0.5)), 1 / 1.5);
  mkc_sampling o = {.temp = 1, .top_p = 1};
  mkc_chain_probs(&o, &m, zl, N, N, mu, 1, zp);
  int kept = 0;
  for (int i = 0; i < N; i++) kept += zp[i] > 0;
  CHECK(kept == (int)k && zp[kept - 1] > 0,
        "mirostat 1 on Zipf 1.5, mu 6: the top %d tokens (k = %.3f)", kept, k);
  mkc_sampling hot = {.temp = 2, .top_p = 1};
  m.mirostat = 2;
  mkc_chain_probs(&hot, &m, l, 4, 4, 100, 1, got);
  double z = 0, want[4];
  for (int i = 0; i < 4; i++) z += want[i] = exp(l[i] / 2);
  for (int i = 0; i < 4; i++) want[i] /= z;
  CHECK(max_diff(got, want, 4) < 1e-12, "mirostat after the temperature (llama.cpp's chain)");
}

/* ---- DRY ---- */

/* A toy vocabulary: a b c x \n y z q : and then two letters each. */
#define TV 64
static char tv_bytes[TV * 2];
static uint32_t tv_off[TV + 1];
enum { A, B, C, X, NL, Y, Z, Q, COLON };

static mkc_token_texts toy(void) {
  static const char *const T[] = {"a", "b", "c", "x", "\n", "y", "z", "q", ":"};
  size_t at = 0;
  for (int i = 0; i < TV; i++) {
    tv_off[i] = (uint32_t)at;
    if (i < 9) {
      memcpy(tv_bytes + at, T[i], strlen(T[i]));
      at += strlen(T[i]);
    } else {
      tv_bytes[at++] = (char)('d' + i % 13);
      tv_bytes[at++] = (char)('D' + i / 13);
    }
  }
  tv_off[TV] = (uint32_t)at;
  return (mkc_token_texts){TV, tv_bytes, tv_off};
}

/* The penalties DRY gives window w[0..n): out[id] = how much id's logit went down. */
static void dry(const mkc_sampling_more *m, const int *w, int n, double *out) {
  mkc_token_texts t = toy();
  for (int i = 0; i < TV; i++) out[i] = 0;
  mkc_dry_penalize(m, &t, w, n, out, TV);
  for (int i = 0; i < TV; i++) out[i] = -out[i];
}

/* Whether pen holds want at id and nothing elsewhere (want in float's precision: the
 * options are floats). */
static int only(const double *pen, int id, double want) {
  for (int i = 0; i < TV; i++)
    if (fabs(pen[i] - (i == id ? want : 0)) > 1e-6 * want) return 0;
  return 1;
}

static void test_dry_by_hand(void) {
  mkc_sampling_more m;
  off(&m);
  m.dry_multiplier = 0.8f; /* base 1.75, allowed 2 */
  double pen[TV];
  dry(&m, (int[]){A, B, C, X, A, B}, 6, pen);
  CHECK(only(pen, C, 0.8), "DRY: a b c x a b -> c would repeat 'a b c': 0.8 x 1.75^0");
  dry(&m, (int[]){A, B, C, X, A, B, C}, 7, pen);
  CHECK(only(pen, X, 0.8 * 1.75), "DRY: a b c x a b c -> x: 0.8 x 1.75^1");
  m.dry_allowed_length = 3;
  dry(&m, (int[]){A, B, C, X, A, B}, 6, pen);
  CHECK(only(pen, -1, 0), "DRY with allowed length 3: a repeat of 2 goes free");
  m.dry_allowed_length = 2;
  m.dry_penalty_last_n = 3;
  dry(&m, (int[]){A, B, C, X, A, B}, 6, pen);
  CHECK(only(pen, -1, 0), "DRY over the last 3 tokens (x a b): no earlier 'a b'");
  m.dry_penalty_last_n = -1;
  int crossing[] = {X, NL, A, B, Y, X, NL, A, B};
  dry(&m, crossing, 9, pen);
  CHECK(only(pen, Y, 0.8), "DRY: x \\n a b y x \\n a b -> y, the repeat cut at the breaker (2)");
  mkc_sampling_more none = m;
  none.n_breakers = 0;
  dry(&none, crossing, 9, pen);
  CHECK(only(pen, Y, 0.8 * 1.75 * 1.75), "  without breakers the repeat is 4 long: 1.75^2");
  dry(&m, (int[]){A, B, NL, A, B}, 5, pen);
  CHECK(only(pen, -1, 0), "DRY: a b \\n a b -> \\n would repeat, but a breaker is never penalized");
  dry(&none, (int[]){A, B, NL, A, B}, 5, pen);
  CHECK(only(pen, NL, 0.8), "  without breakers it is");
  /* a breaker spanning two tokens: "xy" is x then y */
  mkc_sampling_more two = m;
  two.n_breakers = 0;
  mkc_sampling_more_add_breaker(&two, "xy", 2);
  int spanned[] = {A, X, Y, B, A, X, Y, B};
  dry(&two, spanned, 8, pen);
  CHECK(only(pen, -1, 0), "DRY: breaker \"xy\" across tokens x, y: nothing reaches back over it");
  dry(&none, spanned, 8, pen);
  CHECK(only(pen, A, 0.8 * 1.75 * 1.75), "  without it, a x y b repeats: a gets 1.75^2");
  mkc_sampling_more other = two;
  other.n_breakers = 0;
  mkc_sampling_more_add_breaker(&other, "yx", 2);
  dry(&other, spanned, 8, pen);
  CHECK(only(pen, A, 0.8 * 1.75 * 1.75), "  a breaker \"yx\" that never occurs changes nothing");
  /* the exponent's cap: base 2, 400 a's */
  int as[400];
  for (int i = 0; i < 400; i++) as[i] = A;
  mkc_sampling_more big = none;
  big.dry_base = 2, big.dry_allowed_length = 0;
  dry(&big, as, 400, pen);
  int cap = (int)(88.7228391 / log(2.0));
  CHECK(isfinite(pen[A]) && fabs(pen[A] - 0.8 * pow(2, cap)) < 1e-6 * pen[A],
        "DRY: 400 repeats at base 2: the exponent stops at %d, the penalty stays finite", cap);
  m.dry_multiplier = 0;
  dry(&m, (int[]){A, B, C, X, A, B}, 6, pen);
  CHECK(only(pen, -1, 0), "DRY with multiplier 0 is off");
}

/* Brute force: for each earlier position j, the common suffix of w[..j] and w (capped at the
 * tokens after the last token holding a breaker); the token after j gets the longest. */
static void dry_brute(const mkc_sampling_more *m, const int *w, int n, double *out) {
  for (int i = 0; i < TV; i++) out[i] = 0;
  if (m->dry_penalty_last_n >= 0 && m->dry_penalty_last_n < n) /* the last n only */
    w += n - m->dry_penalty_last_n, n = m->dry_penalty_last_n;
  int limit = n;
  for (int i = n - 1; i >= 0; i--)
    if (w[i] == NL || w[i] == COLON) { /* the toy's single-token breakers */
      limit = n - 1 - i;
      break;
    }
  int best[TV];
  for (int i = 0; i < TV; i++) best[i] = -1;
  for (int j = 0; j < n - 1; j++) {
    int len = 0;
    while (len <= j && w[j - len] == w[n - 1 - len]) len++;
    if (len > limit) len = limit;
    if (len >= m->dry_allowed_length && len > best[w[j + 1]]) best[w[j + 1]] = len;
  }
  if (limit < m->dry_allowed_length) return;
  for (int i = 0; i < TV; i++)
    if (best[i] >= 0 && i != NL && i != COLON)
      out[i] = m->dry_multiplier * pow(m->dry_base, best[i] - m->dry_allowed_length);
}

static void test_dry_brute(void) {
  mkc_sampling_more m;
  off(&m);
  m.n_breakers = 0;
  mkc_sampling_more_add_breaker(&m, "\n", 1);
  mkc_sampling_more_add_breaker(&m, ":", 1);
  m.dry_multiplier = 1.3f;
  int bad = 0, cases = 0, penalized = 0;
  for (int k = 0; k < 400; k++) {
    int n = 1 + (int)(uniform01() * 120), w[120], alphabet = 2 + k % 5;
    for (int i = 0; i < n; i++) w[i] = (int)(uniform01() * alphabet);
    if (k % 3 == 0) w[(int)(uniform01() * n)] = k % 2 ? NL : COLON;
    m.dry_allowed_length = k % 4;
    m.dry_penalty_last_n = k % 2 ? -1 : 64; /* the whole window, or llama.cpp's default 64 */
    double got[TV], want[TV];
    dry(&m, w, n, got);
    dry_brute(&m, w, n, want);
    bad += max_diff(got, want, TV) > 1e-9 * (1 + want[0] + got[0]);
    for (int i = 0; i < TV; i++) penalized += got[i] > 0;
    cases++;
  }
  CHECK(bad == 0 && penalized > 100,
        "DRY on %d random windows (2-6 letters, breakers, allowed 0-3, the last 64 or all) = a "
        "brute force over every earlier position (%d differ; %d penalties)",
        cases, bad, penalized);
}

/* ---- the host's choice: a free document ---- */

#define DRAWS 20000

static void test_free_document(void) {
  mkc_token_texts t = toy();
  mkc_vocab_text v = {TV, t.bytes, t.off, NULL};
  mkc_constraint *c = mkc_constraint_open(&v);
  float logits[TV];
  double l[TV], want[TV], with[TV], without[TV], bug[TV];
  for (int i = 0; i < TV; i++) l[i] = logits[i] = (float)(uniform01() * 4 - 2);
  mkc_sampling o = {.temp = 0.9f, .top_k = 20, .top_p = 0.95f, .repeat_penalty = 1};
  mkc_sampling_more m;
  off(&m);
  m.typical_p = 0.9f, m.xtc_probability = 0.3f, m.xtc_threshold = 0.05f;
  int window[] = {A};
  /* XTC acts on a draw: the distribution is the mixture of the two */
  mkc_chain_probs(&o, &m, l, TV, TV, 0, 0, with);
  mkc_chain_probs(&o, &m, l, TV, TV, 0, 1, without);
  for (int i = 0; i < TV; i++) want[i] = 0.3 * with[i] + 0.7 * without[i];
  mkc_constraint_start_free(c, 1);
  CHECK(mkc_constraint_allowed(c, TV - 1) && !mkc_constraint_allowed(c, TV) &&
            !mkc_constraint_done(c),
        "a free document allows every token of the vocabulary and is never whole");
  int best = 0;
  for (int i = 1; i < TV; i++)
    if (want[i] > want[best]) best = i;
  for (int draft = -1; draft <= best; draft += best + 1) {
    long counts[TV] = {0};
    int failed = 0;
    for (int n = 0; n < DRAWS; n++) {
      mkc_constraint_start_free(c, 100000 + (uint64_t)n * 7919);
      mkc_constraint_set_more(c, &m);
      int id = -1;
      failed |=
          mkc_constraint_verify(c, logits, TV, window, 1, &o, draft, &id, NULL, NULL, NULL) != 0;
      if (id >= 0 && id < TV) counts[id]++;
    }
    double p = failed ? 0 : chi2_p_value(counts, want, TV, DRAWS, NULL);
    CHECK(p >= P_MIN,
          "%s under typical 0.9, XTC 0.3 at 0.05, top-k, top-p: %d tokens fit the chain's "
          "distribution (p = %.3g)",
          draft < 0 ? "plain draws" : "verdicts on the likeliest draft", DRAWS, p);
    /* planted bugs: XTC never acting; the residual drawn with the draft left in */
    double *b = draft < 0 ? without : bug;
    if (draft >= 0)
      for (int i = 0; i < TV; i++)
        bug[i] = (1 - want[draft]) * want[i] + (i == draft) * want[draft];
    double p_bug = chi2_p_value(counts, b, TV, DRAWS, NULL);
    CHECK(p_bug < P_MIN, "  planted bug (%s): the same tokens fail (p = %.3g)",
          draft < 0 ? "XTC never acts" : "the residual keeps the draft", p_bug);
  }
  mkc_constraint_close(c);
}

/* Mirostat's state follows the tokens: a simulation of mu beside the document, every chosen
 * token must be one the simulated mu keeps; with another eta (a planted bug) some is not. */
static int mirostat_follows(double eta_sim) {
  mkc_token_texts t = toy();
  mkc_vocab_text v = {TV, t.bytes, t.off, NULL};
  mkc_constraint *c = mkc_constraint_open(&v);
  mkc_sampling_more m;
  off(&m);
  m.mirostat = 2, m.mirostat_tau = 3, m.mirostat_eta = 0.5f;
  mkc_constraint_start_free(c, 5);
  mkc_constraint_set_more(c, &m);
  mkc_sampling o = {.temp = 1, .top_p = 1};
  mkc_sampling_more sim = m;
  sim.mirostat_eta = (float)eta_sim;
  double mu = 2 * m.mirostat_tau, l[TV], p[TV];
  float logits[TV];
  int outside = 0, window[1] = {0};
  for (int step = 0; step < 300; step++) {
    for (int i = 0; i < TV; i++) l[i] = logits[i] = (float)(uniform01() * 6 - 3);
    int id = -1;
    if (mkc_constraint_next(c, logits, TV, window, 0, &o, &id, NULL, NULL, NULL) != 0) return -1;
    mkc_chain_probs(&o, &sim, l, TV, TV, mu, 1, p);
    if (!(p[id] > 0)) outside++;
    mu = mkc_mirostat_update(&sim, mu, p[id] > 0 ? p[id] : 1e-9);
  }
  mkc_constraint_close(c);
  return outside;
}

static void test_mirostat_state(void) {
  int outside = mirostat_follows(0.5);
  CHECK(outside == 0,
        "mirostat 2 over 300 tokens: each choice is one the followed mu keeps "
        "(%d not)",
        outside);
  int planted = mirostat_follows(0.05);
  CHECK(planted > 0, "  planted bug (mu followed with eta 0.05): %d choices fall outside", planted);
}

static void test_check(void) {
  char why[160];
  mkc_sampling_more m;
  off(&m);
  CHECK(mkc_sampling_more_check(&m, why, sizeof why) == 0, "the defaults pass the check");
  m.mirostat = 3;
  CHECK(mkc_sampling_more_check(&m, why, sizeof why) != 0 && strstr(why, "--mirostat"),
        "mirostat 3 is refused, naming the flag (%s)", why);
  off(&m);
  m.dry_penalty_last_n = -2;
  CHECK(mkc_sampling_more_check(&m, why, sizeof why) != 0, "DRY's last n below -1 is refused");
  char long_one[MKC_DRY_BREAKER_LEN + 1];
  memset(long_one, 'x', sizeof long_one);
  CHECK(mkc_sampling_more_add_breaker(&m, long_one, MKC_DRY_BREAKER_LEN) != 0,
        "a breaker of %d bytes does not fit (no silent cut)", MKC_DRY_BREAKER_LEN);
  char names[160];
  off(&m);
  m.dry_multiplier = 0.8f, m.typical_p = 0.5f;
  mkc_sampling_more_names(&m, names, sizeof names);
  CHECK(strcmp(names, "DRY 0.8, typical 0.5") == 0, "the stats line's names: '%s'", names);
}

/* --samplers and --sampling-seq: the parts of llama.cpp's order, by name and by letter. */
static void test_samplers(void) {
  char why[300];
  unsigned set;
  const struct {
    const char *text;
    int letters;
    unsigned want; /* ~0u: refused */
  } cases[] = {
      {"top_k;min_p;temperature", 0,
       MKC_SAMPLER_TOP_K | MKC_SAMPLER_MIN_P | MKC_SAMPLER_TEMPERATURE},
      {"Top-K;nucleus;TEMP", 0, MKC_SAMPLER_TOP_K | MKC_SAMPLER_TOP_P | MKC_SAMPLER_TEMPERATURE},
      {"penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", 0, 0x1ff},
      {"edskypmxt", 1, 0x1ff},
      {"kmt", 1, MKC_SAMPLER_TOP_K | MKC_SAMPLER_MIN_P | MKC_SAMPLER_TEMPERATURE},
      {"dry;typ;xtc", 0, MKC_SAMPLER_DRY | MKC_SAMPLER_TYPICAL | MKC_SAMPLER_XTC},
      {"", 0, 0},
      {"temperature;top_k", 0, ~0u}, /* out of order */
      {"tk", 1, ~0u},
      {"top_k;topk", 0, ~0u},  /* twice */
      {"top_k;tfs_z", 0, ~0u}, /* unknown */
      {"kz", 1, ~0u},
      {"top_k;;min_p", 0, ~0u},
  };
  int bad = 0;
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    int rc = mkc_samplers_parse(cases[k].text, strlen(cases[k].text), cases[k].letters, &set, why,
                                sizeof why);
    int ok = cases[k].want == ~0u ? rc != 0 && why[0] : rc == 0 && set == cases[k].want;
    if (!ok) printf("     | '%s': rc %d set %#x (%s)\n", cases[k].text, rc, set, rc ? why : "");
    bad += !ok;
  }
  CHECK(bad == 0,
        "%d chains by name and by letter: the parts of llama.cpp's order followed, one out of "
        "order, given twice or unknown refused with a reason (%d wrong)",
        (int)(sizeof cases / sizeof *cases), bad);
  mkc_sampling o = {.temp = 0.7f,
                    .top_k = 40,
                    .top_p = 0.9f,
                    .min_p = 0.05f,
                    .repeat_penalty = 1.1f,
                    .presence_penalty = 0.5f};
  mkc_sampling_more m;
  off(&m);
  m.dry_multiplier = 0.8f, m.typical_p = 0.5f, m.xtc_probability = 0.5f, m.dynatemp_range = 0.2f;
  mkc_samplers_apply(MKC_SAMPLER_MIN_P | MKC_SAMPLER_TYPICAL, &o, &m);
  CHECK(o.top_k == 0 && o.top_p == 1 && o.min_p == 0.05f && o.temp == 1 && o.repeat_penalty == 1 &&
            o.presence_penalty == 0 && m.dry_multiplier == 0 && m.typical_p == 0.5f &&
            m.xtc_probability == 0 && m.dynatemp_range == 0,
        "typ_p;min_p: the others off, the temperature 1");
  o.temp = 0;
  mkc_samplers_apply(MKC_SAMPLER_MIN_P, &o, &m);
  CHECK(o.temp == 0, "  greedy stays greedy without the temperature");
}

int main(void) {
  test_kernel_oracle();
  test_typical();
  test_top_n_sigma();
  test_xtc();
  test_dynatemp();
  test_mirostat();
  test_dry_by_hand();
  test_dry_brute();
  test_free_document();
  test_mirostat_state();
  test_check();
  test_samplers();
  return check_done();
}
