/* mkc perplexity --kl-divergence's sums and report (kld.h). The arithmetic
 * is llama-perplexity's, float where it works in float, so that the two
 * tools' numbers for the same logits agree to their printed digits. */
#include "kld.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/logits_file.h"

double mkc_token_nll(const float *logits, int vocab, int tok) {
  float max = logits[0];
  for (int i = 1; i < vocab; i++)
    if (logits[i] > max) max = logits[i];
  double sum = 0;
  for (int i = 0; i < vocab; i++) sum += expf(logits[i] - max);
  return -(logits[tok] - max - log(sum));
}

int mkc_kld_open(mkc_kld *k, size_t n) {
  memset(k, 0, sizeof *k);
  k->klds = malloc((n ? n : 1) * sizeof *k->klds);
  k->p_diffs = malloc((n ? n : 1) * sizeof *k->p_diffs);
  k->cap = n;
  if (k->klds && k->p_diffs) return 0;
  mkc_kld_close(k);
  return -1;
}

void mkc_kld_close(mkc_kld *k) {
  free(k->klds);
  free(k->p_diffs);
  memset(k, 0, sizeof *k);
}

void mkc_kld_add(mkc_kld *k, const float *logits, int n_vocab, const uint16_t *base_row, int tok) {
  float max_logit = logits[0];
  int top = 0; /* the first of the largest */
  for (int i = 1; i < n_vocab; i++)
    if (logits[i] > max_logit) max_logit = logits[i], top = i;
  double sum_exp = 0;
  for (int i = 0; i < n_vocab; i++) sum_exp += expf(logits[i] - max_logit);
  const float log_sum_exp = (float)log(sum_exp);
  float scale, min_log_prob;
  mkc_logits_row_params(base_row, &scale, &min_log_prob);
  const uint16_t *level = base_row + 4;

  const float nll = max_logit + log_sum_exp - logits[tok];
  const float nll_base = -(scale * level[tok] + min_log_prob);
  k->sum_nll += nll, k->sum_nll2 += nll * nll;
  k->sum_nll_base += nll_base, k->sum_nll_base2 += nll_base * nll_base;
  k->sum_nll_nll_base += nll * nll_base;

  /* KL(base || this): the reference's probabilities below e^-16 are left out, as its levels
   * hold nothing under 16 below its largest logit */
  const float log_norm = max_logit + log_sum_exp;
  double kld = 0;
  int top_base = 0;
  float top_base_lp = 0;
  for (int i = 0; i < n_vocab; i++) {
    const float lp_base = scale * level[i] + min_log_prob;
    if (i == 0 || lp_base > top_base_lp) top_base_lp = lp_base, top_base = i;
    if (lp_base > -16.f) kld += expf(lp_base) * (lp_base - logits[i] + log_norm);
  }
  k->sum_kld += kld, k->sum_kld2 += kld * kld;
  k->n_same_top += top == top_base;

  const float p_diff = expf(-nll) - expf(-nll_base);
  const double p_diff2 = p_diff * p_diff;
  k->sum_p_diff += p_diff, k->sum_p_diff2 += p_diff2, k->sum_p_diff4 += p_diff2 * p_diff2;
  if (fabsf(p_diff) > k->max_p_diff) k->max_p_diff = fabsf(p_diff);
  if ((size_t)k->count < k->cap) k->klds[k->count] = (float)kld, k->p_diffs[k->count] = p_diff;
  k->count++;
}

/* A mean and its standard error (none under 11 values). */
typedef struct estimate {
  double mean, err;
} estimate;

static estimate estimate_of(double sum, double sum2, long n) {
  if (n < 1) return (estimate){0, 0};
  double mean = sum / n, var = sum2 / n - mean * mean;
  return (estimate){mean, var > 0 && n > 10 ? sqrt(var / (n - 1)) : 0};
}

/* The covariance of the two means (none under 10 values). */
static double covariance(double sum_a, double sum_b, double sum_ab, long n) {
  if (n < 10) return 0;
  return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

/* Everything a line and the report share. */
typedef struct summary {
  estimate ln_ppl, ln_ppl_base, kld, p_diff_mse;
  double cov, ratio, ratio_err, rms, rms_err, top, top_err;
} summary;

static summary summarize(const mkc_kld *k) {
  summary s;
  s.ln_ppl = estimate_of(k->sum_nll, k->sum_nll2, k->count);
  s.ln_ppl_base = estimate_of(k->sum_nll_base, k->sum_nll_base2, k->count);
  s.cov = covariance(k->sum_nll, k->sum_nll_base, k->sum_nll_nll_base, k->count);
  s.ratio = s.ln_ppl.mean - s.ln_ppl_base.mean;
  /* a variance rounding took below 0 (a model against its own file) is 0, not a NaN */
  s.ratio_err = sqrt(
      fmax(0, s.ln_ppl.err * s.ln_ppl.err + s.ln_ppl_base.err * s.ln_ppl_base.err - 2 * s.cov));
  s.kld = estimate_of(k->sum_kld, k->sum_kld2, k->count);
  s.p_diff_mse = estimate_of(k->sum_p_diff2, k->sum_p_diff4, k->count);
  s.rms = sqrt(s.p_diff_mse.mean);
  s.rms_err = s.rms > 0 ? 0.5 / s.rms * s.p_diff_mse.err : 0;
  s.top = k->count ? (double)k->n_same_top / k->count : 0;
  s.top_err = k->count > 1 ? sqrt(s.top * (1 - s.top) / (k->count - 1)) : 0;
  return s;
}

void mkc_kld_print_head(FILE *out) {
  fprintf(out, "\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
               "              Δp RMS            Same top p\n");
}

void mkc_kld_print_chunk(const mkc_kld *k, int chunk, FILE *out) {
  summary s = summarize(k);
  double ppl = exp(s.ln_ppl.mean);
  fprintf(out,
          "%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%"
          "    %6.3f ± %6.3f %%\n",
          chunk, ppl, ppl * s.ln_ppl.err, s.ratio, s.ratio_err, s.kld.mean, s.kld.err, 100 * s.rms,
          100 * s.rms_err, 100 * s.top, 100 * s.top_err);
}

static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The value a fraction of the way through v[0..n) (sorted), between neighbours. */
static float percentile(const float *v, size_t n, float fraction) {
  if (fraction <= 0) return v[0];
  if (fraction >= 1) return v[n - 1];
  float p = fraction * (float)(n - 1);
  size_t i = (size_t)p;
  p -= (float)i;
  return (1 - p) * v[i] + p * v[i + 1 < n ? i + 1 : n - 1];
}

static float median(const float *v, size_t n) {
  return n % 2 ? v[n / 2] : 0.5f * (v[n / 2] + v[n / 2 - 1]);
}

void mkc_kld_print_report(mkc_kld *k, FILE *out) {
  size_t n = (size_t)k->count < k->cap ? (size_t)k->count : k->cap;
  if (k->count < 100 || n == 0) return;
  qsort(k->klds, n, sizeof *k->klds, by_value);
  qsort(k->p_diffs, n, sizeof *k->p_diffs, by_value);
  summary s = summarize(k);
  double ppl = exp(s.ln_ppl.mean), ppl_base = exp(s.ln_ppl_base.mean);
  double ppl_err = ppl * s.ln_ppl.err, ppl_base_err = ppl_base * s.ln_ppl_base.err;
  fprintf(out, "====== Perplexity statistics ======\n");
  fprintf(out, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl, ppl_err);
  fprintf(out, "Mean PPL(base)                : %10.6f ± %10.6f\n", ppl_base, ppl_base_err);
  fprintf(out, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n",
          100 * s.cov / (s.ln_ppl.err * s.ln_ppl_base.err));
  fprintf(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", s.ratio, s.ratio_err);
  fprintf(out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", exp(s.ratio),
          exp(s.ratio) * s.ratio_err);
  double ppl_cov = ppl * ppl_base * s.cov;
  fprintf(out, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", ppl - ppl_base,
          sqrt(fmax(0, ppl_err * ppl_err + ppl_base_err * ppl_base_err - 2 * ppl_cov)));

  static const float KLD_AT[] = {0.999f, 0.990f, 0.950f, 0.900f};
  static const float KLD_LOW[] = {0.100f, 0.050f, 0.010f, 0.001f};
  fprintf(out, "\n====== KL divergence statistics ======\n");
  fprintf(out, "Mean    KLD: %10.6f ± %10.6f\n", s.kld.mean, s.kld.err);
  fprintf(out, "Maximum KLD: %10.6f\n", k->klds[n - 1]);
  for (int i = 0; i < 4; i++)
    fprintf(out, "%4.1f%%   KLD: %10.6f\n", 100 * KLD_AT[i], percentile(k->klds, n, KLD_AT[i]));
  fprintf(out, "Median  KLD: %10.6f\n", median(k->klds, n));
  for (int i = 0; i < 4; i++)
    fprintf(out, "%4.1f%%   KLD: %10.6f\n", 100 * KLD_LOW[i], percentile(k->klds, n, KLD_LOW[i]));
  fprintf(out, "Minimum KLD: %10.6f\n", k->klds[0]);

  static const float DP_AT[] = {0.999f, 0.990f, 0.950f, 0.900f, 0.750f};
  static const float DP_LOW[] = {0.250f, 0.100f, 0.050f, 0.010f, 0.001f};
  estimate p_diff = estimate_of(k->sum_p_diff, k->sum_p_diff2, k->count);
  fprintf(out, "\n====== Token probability statistics ======\n");
  fprintf(out, "Mean    Δp: %6.3f ± %5.3f %%\n", 100 * p_diff.mean, 100 * p_diff.err);
  fprintf(out, "Maximum Δp: %6.3f%%\n", 100.0 * k->p_diffs[n - 1]);
  for (int i = 0; i < 5; i++)
    fprintf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * DP_AT[i],
            100.0 * percentile(k->p_diffs, n, DP_AT[i]));
  fprintf(out, "Median  Δp: %6.3f%%\n", 100.0 * median(k->p_diffs, n));
  for (int i = 0; i < 5; i++)
    fprintf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * DP_LOW[i],
            100.0 * percentile(k->p_diffs, n, DP_LOW[i]));
  fprintf(out, "Minimum Δp: %6.3f%%\n", 100.0 * k->p_diffs[0]);
  fprintf(out, "RMS Δp    : %6.3f ± %5.3f %%\n", 100 * s.rms, 100 * s.rms_err);
  fprintf(out, "Same top p: %6.3f ± %5.3f %%\n", 100 * s.top, 100 * s.top_err);
}
