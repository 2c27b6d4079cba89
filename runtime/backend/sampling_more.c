/* The options of the samplers the kernel lacks (sampling_more.h). */
#include "sampling_more.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void mkc_sampling_more_init(mkc_sampling_more *m) {
  *m = (mkc_sampling_more){
      .typical_p = 1,
      .top_n_sigma = -1,
      .xtc_threshold = 0.1f,
      .dynatemp_exponent = 1,
      .mirostat_tau = 5,
      .mirostat_eta = 0.1f,
      .dry_base = 1.75f,
      .dry_allowed_length = 2,
      .dry_penalty_last_n = 64,
  };
  static const char *const breakers[] = {"\n", ":", "\"", "*"};
  for (int i = 0; i < 4; i++) mkc_sampling_more_add_breaker(m, breakers[i], 1);
}

int mkc_dry_on(const mkc_sampling_more *m) {
  return m->dry_multiplier != 0 && m->dry_base >= 1 && m->dry_penalty_last_n != 0;
}

int mkc_sampling_more_on(const mkc_sampling_more *m) {
  return (m->typical_p > 0 && m->typical_p < 1) || m->top_n_sigma > 0 ||
         (m->xtc_probability > 0 && m->xtc_threshold <= 0.5f) || m->dynatemp_range > 0 ||
         m->mirostat != 0 || mkc_dry_on(m);
}

void mkc_sampling_more_names(const mkc_sampling_more *m, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
#define NAME(on, ...)                                                                              \
  if ((on) && at < n) {                                                                            \
    int w = snprintf(buf + at, n - at, "%s", at ? ", " : "");                                      \
    if (w > 0) at += (size_t)w;                                                                    \
    if (at < n && (w = snprintf(buf + at, n - at, __VA_ARGS__)) > 0) at += (size_t)w;              \
  }
  NAME(m->mirostat, "mirostat %d (tau %g, eta %g)", m->mirostat, m->mirostat_tau, m->mirostat_eta);
  if (m->mirostat) return; /* the chain's others do not run */
  NAME(mkc_dry_on(m), "DRY %g", m->dry_multiplier);
  NAME(m->top_n_sigma > 0, "top-n-sigma %g", m->top_n_sigma);
  NAME(m->typical_p > 0 && m->typical_p < 1, "typical %g", m->typical_p);
  NAME(m->xtc_probability > 0 && m->xtc_threshold <= 0.5f, "XTC %g at %g", m->xtc_probability,
       m->xtc_threshold);
  NAME(m->dynatemp_range > 0, "dynamic temperature +-%g", m->dynatemp_range);
#undef NAME
}

int mkc_sampling_more_check(const mkc_sampling_more *m, char *why, size_t n_why) {
  const char *bad = NULL;
  if (!(m->typical_p >= 0 && m->typical_p <= 1e6))
    bad = "--typical: expected a number in [0, 1] (0 or 1: off)";
  else if (!(fabsf(m->top_n_sigma) <= 1e6))
    bad = "--top-nsigma: expected a finite number (<= 0: off)";
  else if (!(m->xtc_probability >= 0 && m->xtc_probability <= 1))
    bad = "--xtc-probability: expected a number in [0, 1]";
  else if (!(m->xtc_threshold >= 0 && m->xtc_threshold <= 1))
    bad = "--xtc-threshold: expected a number in [0, 1] (> 0.5: off)";
  else if (!(m->dynatemp_range >= 0 && m->dynatemp_range <= 1e6))
    bad = "--dynatemp-range: expected a number >= 0";
  else if (!(m->dynatemp_exponent >= 0 && m->dynatemp_exponent <= 1e6))
    bad = "--dynatemp-exp: expected a number >= 0";
  else if (m->mirostat < 0 || m->mirostat > 2)
    bad = "--mirostat: expected 0 (off), 1 or 2";
  else if (!(fabsf(m->mirostat_tau) <= 1e6) || !(fabsf(m->mirostat_eta) <= 1e6))
    bad = "--mirostat-ent/--mirostat-lr: expected a finite number";
  else if (!(fabsf(m->dry_multiplier) <= 1e6) || !(m->dry_base >= 0 && m->dry_base <= 1e6))
    bad = "--dry-multiplier/--dry-base: expected a finite number (base >= 0)";
  else if (m->dry_allowed_length < 0 || m->dry_penalty_last_n < -1)
    bad = "--dry-allowed-length: expected >= 0; --dry-penalty-last-n: expected >= -1";
  else if (m->n_breakers < 0 || m->n_breakers > MKC_DRY_BREAKERS)
    bad = "--dry-sequence-breaker: too many";
  if (bad) snprintf(why, n_why, "%s", bad);
  return bad ? -1 : 0;
}

int mkc_sampling_more_add_breaker(mkc_sampling_more *m, const char *text, size_t n) {
  if (n < 1 || n >= MKC_DRY_BREAKER_LEN || m->n_breakers >= MKC_DRY_BREAKERS) return -1;
  memcpy(m->breakers[m->n_breakers], text, n);
  m->breakers[m->n_breakers++][n] = '\0';
  return 0;
}
