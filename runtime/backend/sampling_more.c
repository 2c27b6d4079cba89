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

#define AT(f) offsetof(mkc_sampling_more, f)
const mkc_sampling_more_option mkc_sampling_more_options[MKC_SAMPLING_MORE_OPTIONS] = {
    {"--typical", "typical_p", 0, 1, 0, AT(typical_p)},
    {"--top-nsigma", "top_n_sigma", -1e6, 1e6, 0, AT(top_n_sigma)},
    {"--xtc-probability", "xtc_probability", 0, 1, 0, AT(xtc_probability)},
    {"--xtc-threshold", "xtc_threshold", 0, 1, 0, AT(xtc_threshold)},
    {"--dynatemp-range", "dynatemp_range", 0, 1e6, 0, AT(dynatemp_range)},
    {"--dynatemp-exp", "dynatemp_exponent", 0, 1e6, 0, AT(dynatemp_exponent)},
    {"--mirostat", "mirostat", 0, 2, 1, AT(mirostat)},
    {"--mirostat-lr", "mirostat_eta", 0, 1e6, 0, AT(mirostat_eta)},
    {"--mirostat-ent", "mirostat_tau", 0, 1e6, 0, AT(mirostat_tau)},
    {"--dry-multiplier", "dry_multiplier", 0, 1e6, 0, AT(dry_multiplier)},
    {"--dry-base", "dry_base", 0, 1e6, 0, AT(dry_base)},
    {"--dry-allowed-length", "dry_allowed_length", 0, 1 << 20, 1, AT(dry_allowed_length)},
    {"--dry-penalty-last-n", "dry_penalty_last_n", -1, 1 << 30, 1, AT(dry_penalty_last_n)},
};
#undef AT

int mkc_sampling_more_fits(int k, double x) {
  const mkc_sampling_more_option *o = &mkc_sampling_more_options[k];
  return x >= o->lo && x <= o->hi && (!o->is_int || x == floor(x));
}

double mkc_sampling_more_get(const mkc_sampling_more *m, int k) {
  const char *at = (const char *)m + mkc_sampling_more_options[k].at;
  return mkc_sampling_more_options[k].is_int ? *(const int *)at : *(const float *)at;
}

void mkc_sampling_more_put(mkc_sampling_more *m, int k, double x) {
  char *at = (char *)m + mkc_sampling_more_options[k].at;
  if (mkc_sampling_more_options[k].is_int)
    *(int *)at = (int)x;
  else
    *(float *)at = (float)x;
}

int mkc_sampling_more_check(const mkc_sampling_more *m, char *why, size_t n_why) {
  for (int k = 0; k < MKC_SAMPLING_MORE_OPTIONS; k++) {
    const mkc_sampling_more_option *o = &mkc_sampling_more_options[k];
    if (!mkc_sampling_more_fits(k, mkc_sampling_more_get(m, k))) {
      snprintf(why, n_why, "%s (%s): expected %s in %.15g..%.15g", o->flag, o->field,
               o->is_int ? "a whole number" : "a number", o->lo, o->hi);
      return -1;
    }
  }
  if (m->n_breakers < 0 || m->n_breakers > MKC_DRY_BREAKERS) {
    snprintf(why, n_why, "--dry-sequence-breaker: at most %d", MKC_DRY_BREAKERS);
    return -1;
  }
  return 0;
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
