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

/* The chain's names (llama.cpp's canonical ones, then its aliases), each to its place. */
static const struct {
  const char *name;
  int at;
} NAMES[] = {
    {"penalties", 0}, {"dry", 1},     {"top_n_sigma", 2}, {"top_k", 3},       {"typ_p", 4},
    {"top_p", 5},     {"min_p", 6},   {"xtc", 7},         {"temperature", 8}, {"top-n-sigma", 2},
    {"topnsigma", 2}, {"top-k", 3},   {"topk", 3},        {"typ-p", 4},       {"typp", 4},
    {"typ", 4},       {"typical", 4}, {"typical_p", 4},   {"top-p", 5},       {"topp", 5},
    {"nucleus", 5},   {"min-p", 6},   {"minp", 6},        {"temp", 8},
};
static const char LETTERS[] = "edskypmxt";

int mkc_samplers_parse(const char *text, size_t n, int letters, unsigned *set, char *why,
                       size_t n_why) {
  int last = -1;
  *set = 0;
  for (size_t i = 0; i < n;) {
    size_t len = letters ? 1 : strcspn(text + i, ";");
    if (len > n - i) len = n - i;
    char name[32];
    int at = -1;
    if (len > 0 && len < sizeof name) {
      for (size_t k = 0; k < len; k++) /* llama.cpp's names are matched lower-cased */
        name[k] = text[i + k] >= 'A' && text[i + k] <= 'Z' ? (char)(text[i + k] + 32) : text[i + k];
      name[len] = '\0';
      const char *l = letters ? strchr(LETTERS, name[0]) : NULL;
      if (l && name[0]) at = (int)(l - LETTERS);
      for (size_t k = 0; !letters && k < sizeof NAMES / sizeof *NAMES && at < 0; k++)
        if (strcmp(name, NAMES[k].name) == 0) at = NAMES[k].at;
    }
    if (at < 0) {
      snprintf(why, n_why, "%s '%.*s' is none of llama.cpp's samplers that mkc runs (%s)",
               letters ? "letter" : "name", (int)(len < 31 ? len : 31), text + i,
               letters ? "edskypmxt"
                       : "penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, "
                         "temperature");
      return -1;
    }
    if (*set & (1u << at)) {
      snprintf(why, n_why, "'%.*s' is given twice", (int)(len < 31 ? len : 31), text + i);
      return -1;
    }
    if (at < last) {
      snprintf(why, n_why,
               "'%.*s' is out of llama.cpp's order (%s): mkc runs that order, leaving out the "
               "samplers not given",
               (int)(len < 31 ? len : 31), text + i,
               letters ? LETTERS
                       : "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
      return -1;
    }
    *set |= 1u << at;
    last = at;
    i += len + (!letters && i + len < n); /* past the ';' */
  }
  return 0;
}

void mkc_samplers_apply(unsigned set, mkc_sampling *o, mkc_sampling_more *m) {
  if (!(set & MKC_SAMPLER_PENALTIES))
    o->repeat_penalty = 1, o->presence_penalty = o->frequency_penalty = 0;
  if (!(set & MKC_SAMPLER_DRY)) m->dry_multiplier = 0;
  if (!(set & MKC_SAMPLER_TOP_N_SIGMA)) m->top_n_sigma = -1;
  if (!(set & MKC_SAMPLER_TOP_K)) o->top_k = 0;
  if (!(set & MKC_SAMPLER_TYPICAL)) m->typical_p = 1;
  if (!(set & MKC_SAMPLER_TOP_P)) o->top_p = 1;
  if (!(set & MKC_SAMPLER_MIN_P)) o->min_p = 0;
  if (!(set & MKC_SAMPLER_XTC)) m->xtc_probability = 0;
  if (!(set & MKC_SAMPLER_TEMPERATURE) && !m->mirostat) {
    if (o->temp > 0) o->temp = 1;
    m->dynatemp_range = 0;
  }
}
