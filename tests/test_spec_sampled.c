/* Speculation stays lossless when sampling: on `tiny` (top-k 3, so the first
 * three tokens have at most 27 outcomes), the joint distribution of the first
 * three emitted tokens over 10,000 sequences is the exact distribution, with
 * drafts and without them — n-gram drafts at K = 1 and 4, and scripted drafts
 * that are likely, impossible (always rejected) or alternate — by a chi-square
 * goodness-of-fit test (p >= 0.001). The exact distribution is the oracle's:
 * the reference executor's logits through the sampling oracle (sampler_ref.h).
 * A planted bug in the kernel's accept (a draft kept with probability
 * sqrt(p)) fails the same test. Also: the same seed gives the same tokens,
 * different seeds differ, and greedy decoding is unchanged by the sampler
 * being in the kernel (temperature 0 = argmax). And the candidates stage (a
 * small top-k) draws what the full path draws. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/decode.h"
#include "fixture.h"
#include "exec/reference.h"
#include "exec/sampler_ref.h"
#include "stats.h"

/* Sequences a histogram: against exact probabilities, 10,000 give a drafted
 * run's frequencies the variance 20,000 a side gave in the two-sample test
 * against a plain run this replaced (p(1-p)/10,000 per outcome either way). */
#define SEQS 10000
#define N_TOK 3
#define VOCAB_OUT 27 /* (top-k 3)^3 outcomes, numbered by the ranks seen */
#define P_MIN 0.001
#define LOSSLESS_BLOCKS 1 /* the histograms' grid (lossless()) */

static const int PROMPT[] = {1, 2, 3, 1, 2}; /* one step of tiny at K = 4 */
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

static mkc_sampling options(unsigned seed) {
  mkc_sampling o;
  memset(&o, 0, sizeof o);
  o.temp = 3.0f;
  o.top_k = 3;
  o.top_p = 1.0f;
  o.repeat_penalty = 1.0f;
  o.seed_lo = seed;
  o.seed_hi = 0x5eedu;
  return o;
}

/* Scripted drafts: each step offers `k` drafts from a policy of the history. */
enum policy { NGRAM, LIKELY, IMPOSSIBLE, ALTERNATE, MODERATE };

typedef struct run {
  mkc_session *s;
  const mkc_graph *g;
  int likely, moderate, impossible; /* token ids the scripted policies offer */
} run;

/* The first N_TOK tokens of one sampled sequence; 0 or -1. Every sequence
 * starts from the prompt less its last token, held in the cache (a rewind
 * keeps it): only the last prompt token is fed again, under the new seed. */
static int sequence(run *r, unsigned seed, enum policy pol, int k, int *out) {
  mkc_sampling o = options(seed);
  if (mkc_session_pos(r->s) < N_PROMPT - 1) {
    mkc_session_reset(r->s);
    mkc_step_result res;
    if (mkc_session_step(r->s, PROMPT, N_PROMPT - 1, N_PROMPT - 2, &res) != 0 || res.status)
      return -1;
  }
  if (mkc_session_rewind(r->s, N_PROMPT - 1) != 0 || mkc_session_set_sampling(r->s, &o) != 0)
    return -1;
  if (pol == NGRAM) {
    mkc_decode_stats st;
    mkc_decode_opts d = {.draft_max = k};
    int buf[N_TOK + 1];
    if (mkc_decode_more(r->s, r->g, PROMPT, N_PROMPT, N_PROMPT - 1, N_TOK, &d, buf, &st) != 0)
      return -1;
    memcpy(out, buf, N_TOK * sizeof *out);
    return 0;
  }
  mkc_step_result res;
  if (mkc_session_step(r->s, PROMPT + N_PROMPT - 1, 1, 0, &res) != 0 || res.status) return -1;
  int n = 0, last = res.out[0];
  out[n++] = last;
  for (int step = 0; n < N_TOK; step++) {
    int in[MKC_T_CAP] = {last};
    for (int j = 1; j <= k; j++) {
      int likely = pol == LIKELY || (pol == ALTERNATE && (step + j) % 2 == 0);
      in[j] = pol == MODERATE ? r->moderate : likely ? r->likely : r->impossible;
    }
    if (mkc_session_step(r->s, in, 1 + k, 0, &res) != 0 || res.status) return -1;
    for (int i = 0; i < res.n_out && n < N_TOK; i++) out[n++] = res.out[i];
    last = res.out[res.n_out - 1];
  }
  return 0;
}

/* Outcomes (t1, t2, t3) -> buckets, in the order the oracle gives them
 * (top-k 3: at most 27); one more bucket for an outcome it never gives. */
typedef struct buckets {
  int seen[VOCAB_OUT][N_TOK], n;
} buckets;

static int bucket_of(const buckets *b, const int *t) {
  for (int i = 0; i < b->n; i++)
    if (memcmp(b->seen[i], t, sizeof b->seen[i]) == 0) return i;
  return VOCAB_OUT;
}

/* Counts of SEQS sequences under a policy. */
static int histogram(run *r, enum policy pol, int k, const buckets *b, long *counts) {
  memset(counts, 0, (VOCAB_OUT + 1) * sizeof *counts);
  int t[N_TOK];
  for (unsigned s = 0; s < SEQS; s++) {
    if (sequence(r, 1000003u * (unsigned)pol + 7919u * (unsigned)k + s, pol, k, t) != 0) return -1;
    counts[bucket_of(b, t)]++;
  }
  return 0;
}

/* The oracle: the exact distribution of the first N_TOK tokens, each drawn
 * from the sampling oracle's probabilities on the reference executor's logits
 * after the prompt and the tokens before it. Fills b (the outcomes with
 * nonzero probability, at most VOCAB_OUT) and p (theirs; 0 past b->n and for
 * the last bucket, outcomes the oracle never gives). *gap: the smallest
 * distance between the 3rd and 4th logit over the prefixes, over the largest
 * |logit|, which must leave top-k 3 the same set under the kernel's logits.
 * 0, or -1. */
static int exact_outcomes(const fixture *fx, const int *prefix, int depth, double mass, buckets *b,
                          double *p, double *gap) {
  int n = N_PROMPT + depth, V = fx->g.vocab, ok = 1;
  mkc_ref *ref = mkc_ref_open(&fx->g, &fx->w);
  double *logits = malloc(V * sizeof *logits), *probs = malloc(V * sizeof *probs);
  float *f = malloc(V * sizeof *f);
  ok = ref && logits && probs && f;
  for (int i = 0; ok && i < n; i++) ok = mkc_ref_step(ref, prefix[i], logits) == 0;
  if (ok) {
    mkc_sampling o = options(0);
    double top[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, largest = 0;
    for (int v = 0; v < V; v++) {
      f[v] = (float)logits[v];
      largest = fmax(largest, fabs(logits[v]));
      for (int j = 0; j < 4; j++)
        if (logits[v] > top[j]) {
          memmove(top + j + 1, top + j, (3 - j) * sizeof *top);
          top[j] = logits[v];
          break;
        }
    }
    if (top[2] - top[3] < *gap * largest) *gap = (top[2] - top[3]) / largest;
    ok = mkc_sampler_ref_probs(f, V, prefix, n, &o, probs) == 0;
  }
  mkc_ref_close(ref);
  free(logits);
  free(f);
  int next[N_PROMPT + N_TOK];
  memcpy(next, prefix, n * sizeof *next);
  for (int v = 0; ok && v < V; v++) {
    if (probs[v] <= 0) continue;
    next[n] = v;
    if (depth + 1 < N_TOK) {
      ok = exact_outcomes(fx, next, depth + 1, mass * probs[v], b, p, gap) == 0;
    } else if (b->n < VOCAB_OUT) {
      memcpy(b->seen[b->n], next + N_PROMPT, sizeof b->seen[0]);
      p[b->n++] = mass * probs[v];
    } else {
      ok = 0; /* more than top-k 3 allows */
    }
  }
  free(probs);
  return ok ? 0 : -1;
}

/* The chi-square goodness-of-fit p-value of a histogram against the oracle. */
static double fits(const long *counts, const double *p, int *dof) {
  return chi2_p_value(counts, p, VOCAB_OUT + 1, SEQS, dof);
}

static void lossless(void) {
  fixture fx;
  /* One warp per block: the same kernel with a quarter of the emulated
   * threads, so 70,000 sequences take minutes, not a quarter hour. And one
   * block (LOSSLESS_BLOCKS): the accept and the draws are what this tests,
   * and a grid of one has no blocks waiting on each other, which made the
   * histograms 2.2 times slower where another test shares the cores. That the
   * candidates' union over blocks draws what one block draws is
   * test_sampler's, bit for bit. */
  memset(&fx, 0, sizeof fx);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts go = {.graph_path = graph, .preset = "tiny", .draft_max = 4, .threads = 32};
  if (!CHECK(mkc_codegen(&go, &fx.g, &fx.src) == 0 && mkc_weights_random(&fx.w, &fx.g, 42) == 0,
             "tiny, 32 threads per block")) {
    fixture_close(&fx);
    return;
  }
  run r = {mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, LOSSLESS_BLOCKS), &fx.g, -1, -1,
           0};
  static long counts[VOCAB_OUT + 1];
  static double exact[VOCAB_OUT + 1];
  buckets b = {0};
  double gap = INFINITY;
  /* The gap must be well past the kernel's logit error, which test_kernel
   * bounds by 1e-4 of the largest |logit|, or top-k 3 could keep another set. */
  int oracle = exact_outcomes(&fx, PROMPT, 0, 1.0, &b, exact, &gap);
  if (!CHECK(oracle == 0 && gap > 4e-4,
             "the oracle: %d outcomes of the first %d tokens (top-k 3), the 3rd and 4th logit "
             "at least %.3g of the largest |logit| apart",
             b.n, N_TOK, gap))
    goto done;
  double total = 0;
  for (int i = 0; i < b.n; i++) total += exact[i];
  CHECK(b.n == VOCAB_OUT && fabs(total - 1) < 1e-12,
        "the oracle: all 27 outcomes, probabilities summing to 1 (%.15f)", total);
  /* Drafts for the second token: its most and second most likely values after
   * the most likely first token, and one no outcome has. */
  int top = 0, second = -1;
  for (int i = 1; i < b.n; i++)
    if (exact[i] > exact[top]) top = i;
  for (int i = 0; i < b.n; i++)
    if (i != top && b.seen[i][1] != b.seen[top][1] && (second < 0 || exact[i] > exact[second]))
      second = i;
  r.likely = b.seen[top][1];
  r.moderate = second >= 0 ? b.seen[second][1] : r.likely;
  for (int used = 1; used;) {
    used = 0;
    for (int i = 0; i < b.n; i++)
      for (int p = 0; p < N_TOK; p++) used |= b.seen[i][p] == r.impossible;
    if (used) r.impossible++;
  }
  static const struct {
    const char *name;
    enum policy pol;
    int k;
  } RUNS[] = {
      {"plain sampling", NGRAM, 0},
      {"n-gram drafts, K = 1", NGRAM, 1},
      {"n-gram drafts, K = 4", NGRAM, 4},
      {"scripted likely drafts, K = 2", LIKELY, 2},
      {"scripted impossible drafts, K = 2", IMPOSSIBLE, 2},
      {"scripted alternating drafts, K = 4", ALTERNATE, 4},
  };
  for (size_t i = 0; i < sizeof RUNS / sizeof *RUNS; i++) {
    int dof = 0;
    double p = r.s && histogram(&r, RUNS[i].pol, RUNS[i].k, &b, counts) == 0
                   ? fits(counts, exact, &dof)
                   : -1;
    CHECK(p >= P_MIN,
          "%s: the first %d tokens of %d sequences are distributed as the oracle's "
          "(p = %.4g, %d dof)",
          RUNS[i].name, N_TOK, SEQS, p, dof);
  }

  /* Same seed, same tokens (any K); different seeds differ. */
  int a[N_TOK], a2[N_TOK], c[N_TOK];
  int same = 1, differ = 0;
  for (unsigned s = 0; s < 50; s++) {
    sequence(&r, s, NGRAM, 4, a);
    sequence(&r, s, NGRAM, 4, a2);
    sequence(&r, s + 1000, NGRAM, 4, c);
    same &= memcmp(a, a2, sizeof a) == 0;
    differ += memcmp(a, c, sizeof a) != 0;
  }
  CHECK(same, "the same seed gives the same tokens (50 seeds, K = 4)");
  CHECK(differ >= 25, "different seeds give different tokens (%d of 50 differ)", differ);

  /* A planted bug: the draft kept with probability sqrt(p_t(draft)). */
  mkc_session_close(r.s);
  r.s = NULL;
  if (!CHECK(fixture_plant(&fx.src, "< p_draft[a - t0])", "< sqrtf(p_draft[a - t0]))") == 0,
             "planted accept bug: the kernel has the accept test"))
    goto done;
  r.s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, LOSSLESS_BLOCKS);
  int dof = 0;
  double p = r.s && histogram(&r, MODERATE, 2, &b, counts) == 0 ? fits(counts, exact, &dof) : -1;
  CHECK(p < P_MIN, "planted bug (accept with sqrt(p)): the same test fails (p = %.3g)", p);
done:
  mkc_session_close(r.s);
  fixture_close(&fx);
}

/* Log-probabilities from the kernel against the oracle's log-softmax of the
 * kernel's own logits after penalties and temperature (<= 1e-4), for emitted
 * tokens at input 0 and, with drafts, past it; and the top 5 the same. */
static void logprobs(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, 0, 42) == 0, "tiny fixture")) return;
  mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  mkc_sampling o = options(9);
  o.top_k = 0, o.temp = 0.7f, o.repeat_penalty = 1.3f, o.repeat_last_n = 8, o.logprobs = 5;
  /* hist: every token so far, the last one the next step's inputs[0] */
  int hist[128], n = 0, worst_id = 0, checked = 0;
  double worst = 0;
  for (int i = 0; i < N_PROMPT; i++) hist[n++] = PROMPT[i];
  int ok = s && mkc_session_set_sampling(s, &o) == 0;
  for (int step = 0; ok && step < 12; step++) {
    /* the prompt, then steps of 1 input or 3 (two drafts, some accepted) */
    int in[3] = {hist[n - 1], hist[n - 1], hist[n - 2]}, T = step % 2 ? 3 : 1;
    int fixed = step == 0 ? N_PROMPT - 1 : 0;
    mkc_step_result r;
    ok = (step == 0 ? mkc_session_step(s, PROMPT, N_PROMPT, fixed, &r)
                    : mkc_session_step(s, in, T, 0, &r)) == 0 &&
         r.status == 0;
    for (int i = 0; ok && i < r.n_out; i++) {
      int ids[5];
      float lp, lps[5];
      double want[256];
      /* the window: every token up to and including input fixed + i */
      ok = mkc_session_logprobs(s, i, &lp, ids, lps) == 0 &&
           mkc_sampler_ref_logprobs(mkc_session_logits(s, fixed + i), fx.g.vocab, hist, n, &o,
                                    want) == 0;
      if (!ok) break;
      double d = fabs(lp - want[r.out[i]]);
      for (int k = 0; k < 5; k++) d = fmax(d, fabs(lps[k] - want[ids[k]]));
      for (int k = 1; k < 5; k++) ok &= lps[k] <= lps[k - 1];
      for (int id = 0; id < fx.g.vocab; id++) /* nothing outside the top 5 beats the 5th */
        ok &= want[id] <= want[ids[4]] + 1e-4 || id == ids[0] || id == ids[1] || id == ids[2] ||
              id == ids[3];
      if (d > worst) worst = d, worst_id = r.out[i];
      checked++;
      hist[n++] = r.out[i]; /* an accepted draft (input i + 1) or the new token */
    }
  }
  CHECK(ok && checked >= 12 && worst <= 1e-4,
        "logprobs: %d emitted tokens' log-probabilities and top 5 equal the oracle's log-softmax "
        "after penalties and temperature (worst %.2g, token %d)",
        checked, worst, worst_id);
  mkc_session_close(s);
  fixture_close(&fx);
}

/* Tokens of `seeds` sampled decodes (N_WIRED each, K = 4 lookup drafts) on
 * session s under options o with seeds 0, 1, ...: into out. */
#define N_WIRED 24
#define WIRED_SEEDS 12
static int wired_decodes(mkc_session *s, const mkc_graph *g, mkc_sampling o,
                         int out[WIRED_SEEDS][N_WIRED]) {
  static const int prompt[] = {1, 2, 3, 1, 2, 3, 1, 2};
  for (unsigned seed = 0; seed < WIRED_SEEDS; seed++) {
    o.seed_lo = seed;
    mkc_decode_stats st;
    mkc_session_reset(s);
    if (mkc_session_set_sampling(s, &o) != 0 ||
        mkc_decode(s, g, prompt, 8, N_WIRED, 4, out[seed], &st) != 0 || st.generated != N_WIRED)
      return -1;
  }
  return 0;
}

/* The emitted step with its candidates stage (every block's slice top-k,
 * templates/sample.cuh) draws what the same kernel draws on the full path (its
 * source with mkc_cands_on replaced by 0): the same tokens for every seed, on
 * 3 blocks (uneven slices), with drafts, so that its scratch, its flow wait and
 * the sampler's reading of it are wired as the template's test assumes. A
 * planted slice that keeps k - 1 changes tokens. */
static void candidates_wired(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, 0, 42) == 0, "tiny fixture")) return;
  mkc_kernel_src full = {strdup(fx.src.source), strdup(fx.src.file_name)};
  mkc_kernel_src bug = {strdup(fx.src.source), strdup(fx.src.file_name)};
  char on[64];
  snprintf(on, sizeof on, "mkc_cands_on(&state->sampling, %d)", fx.g.vocab);
  int replaced = 0;
  while (fixture_plant(&full, on, "0") == 0) replaced++;
  int planted = fixture_plant(&bug, "mkc_key_radix(w + lo, 0, n, k,",
                              "mkc_key_radix(w + lo, 0, n, k - 1,") == 0;
  mkc_session *a = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 3);
  mkc_session *b = mkc_session_open(test_backend(), &fx.g, &full, &fx.w, 3);
  mkc_session *c = mkc_session_open(test_backend(), &fx.g, &bug, &fx.w, 3);
  mkc_sampling every = options(0), two = options(0);
  every.temp = 1.2f, every.top_k = 20, every.top_p = 0.95f, every.min_p = 0.02f;
  every.repeat_penalty = 1.1f, every.presence_penalty = 0.2f, every.repeat_last_n = 16;
  two.temp = 1.5f, two.top_k = 2;
  static int ta[WIRED_SEEDS][N_WIRED], tb[WIRED_SEEDS][N_WIRED];
  const struct {
    const char *name;
    mkc_sampling o;
  } SETS[] = {{"top-k 20, top-p, min-p, penalties", every}, {"top-k 2", two}};
  for (int i = 0; i < 2; i++) {
    int ok = a && b && wired_decodes(a, &fx.g, SETS[i].o, ta) == 0 &&
             wired_decodes(b, &fx.g, SETS[i].o, tb) == 0;
    CHECK(ok && replaced == 2 && memcmp(ta, tb, sizeof ta) == 0,
          "tiny, 3 blocks, %s: %d sampled decodes of %d tokens (K = 4) give the same tokens with "
          "the candidates stage as on the full path (%d uses of mkc_cands_on turned off)",
          SETS[i].name, WIRED_SEEDS, N_WIRED, replaced);
  }
  int ok = planted && c && wired_decodes(c, &fx.g, two, tb) == 0 &&
           wired_decodes(a, &fx.g, two, ta) == 0;
  CHECK(ok && memcmp(ta, tb, sizeof ta) != 0,
        "planted bug (a slice keeps k - 1): top-k 2's tokens change");
  mkc_session_close(a);
  mkc_session_close(b);
  mkc_session_close(c);
  mkc_kernel_src_free(&full);
  mkc_kernel_src_free(&bug);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  candidates_wired();
  logprobs();
  lossless();
  return check_done();
}
