/* The options of llama.cpp's samplers that the kernel's sampler stage does not run (typical-p,
 * top-n-sigma, XTC, dynamic temperature, mirostat, DRY): plain data shared by the command line's
 * flags and serve's request fields; exec/sample_chain.h runs them. */
#ifndef MKC_SAMPLING_MORE_H
#define MKC_SAMPLING_MORE_H

#include <stddef.h>

#include "mkc_state.h"

#define MKC_DRY_BREAKERS 16    /* sequence breakers at most */
#define MKC_DRY_BREAKER_LEN 40 /* bytes of one, with its NUL */

typedef struct mkc_sampling_more {
  float typical_p;         /* locally typical sampling; 0 or >= 1: off (all zero: all off) */
  float top_n_sigma;       /* keep logits >= max - n * their standard deviation; <= 0: off */
  float xtc_probability;   /* exclude top choices this often; 0: off */
  float xtc_threshold;     /* ... those with probability >= it; > 0.5: off */
  float dynatemp_range;    /* temperature in [temp - range, temp + range] by entropy; 0: off */
  float dynatemp_exponent; /* normalized entropy to that range by this power */
  int mirostat;            /* 0: off, 1 or 2: the version (replaces the chain) */
  float mirostat_tau;      /* target surprise (bits) */
  float mirostat_eta;      /* learning rate */
  float dry_multiplier;    /* DRY ("don't repeat yourself"); 0: off */
  float dry_base;          /* penalty multiplier * base ^ (repeat length - allowed length) */
  int dry_allowed_length;  /* repeats up to this long go unpenalized */
  int dry_penalty_last_n;  /* tokens scanned for repeats; -1: the whole context; 0: off */
  int n_breakers;          /* texts a repeat does not reach across */
  char breakers[MKC_DRY_BREAKERS][MKC_DRY_BREAKER_LEN];
} mkc_sampling_more;

/* The options above that a number sets, each once: llama.cpp's flag, llama-server's field
 * (ollama's options share the names it has), the range both take, and the place in
 * mkc_sampling_more: an int where is_int, else a float. */
typedef struct mkc_sampling_more_option {
  const char *flag, *field;
  double lo, hi;
  int is_int;
  size_t at;
} mkc_sampling_more_option;
enum { MKC_SAMPLING_MORE_OPTIONS = 13 };
extern const mkc_sampling_more_option mkc_sampling_more_options[MKC_SAMPLING_MORE_OPTIONS];

/* Whether x is a value option k takes (in range; whole for an int). */
int mkc_sampling_more_fits(int k, double x);
/* Option k of m: read, and set to x (which fits). */
double mkc_sampling_more_get(const mkc_sampling_more *m, int k);
void mkc_sampling_more_put(mkc_sampling_more *m, int k, double x);

/* llama.cpp's defaults: every sampler here off; DRY's breakers "\n" ":" "\"" "*". */
void mkc_sampling_more_init(mkc_sampling_more *m);

/* Whether DRY is on: a multiplier, a base of at least 1, tokens to scan. */
int mkc_dry_on(const mkc_sampling_more *m);

/* Whether one of the samplers is on (the host must choose). */
int mkc_sampling_more_on(const mkc_sampling_more *m);

/* The samplers on, for a stats line: "DRY 0.8, mirostat 2 (tau 5, eta 0.1)" ("" if none). */
void mkc_sampling_more_names(const mkc_sampling_more *m, char *buf, size_t n);

/* The options in their ranges (mkc_sampling_more_options), the breakers' count too: 0, or -1
 * with the reason (naming llama.cpp's flag) in why. */
int mkc_sampling_more_check(const mkc_sampling_more *m, char *why, size_t n_why);

/* Adds breaker text (1 to MKC_DRY_BREAKER_LEN - 1 bytes): 0, or -1 when it does not fit. */
int mkc_sampling_more_add_breaker(mkc_sampling_more *m, const char *text, size_t n);

/* llama.cpp's default chain, a bit a sampler, in its order: --samplers and --sampling-seq name
 * a part of it. */
enum {
  MKC_SAMPLER_PENALTIES = 1u << 0,
  MKC_SAMPLER_DRY = 1u << 1,
  MKC_SAMPLER_TOP_N_SIGMA = 1u << 2,
  MKC_SAMPLER_TOP_K = 1u << 3,
  MKC_SAMPLER_TYPICAL = 1u << 4,
  MKC_SAMPLER_TOP_P = 1u << 5,
  MKC_SAMPLER_MIN_P = 1u << 6,
  MKC_SAMPLER_XTC = 1u << 7,
  MKC_SAMPLER_TEMPERATURE = 1u << 8,
};

/* A chain as llama.cpp names it: names separated by ';' (--samplers "top_k;min_p;temperature",
 * its aliases: "top-k", "topk", "nucleus", "temp", "typ", ...) or, letters set, one letter each
 * (--sampling-seq "kmt", of "edskypmxt"). Into *set, the samplers it holds. 0, or -1 with the
 * reason: a name unknown, one given twice, or an order other than the default's: mkc runs
 * llama.cpp's default order, so a chain that leaves samplers out of it is followed and one that
 * moves them is not. */
int mkc_samplers_parse(const char *text, size_t n, int letters, unsigned *set, char *why,
                       size_t n_why);

/* The samplers left out of set turned off in o and m; the temperature left out is 1 when
 * sampling (greedy stays greedy; mirostat's chain keeps its temperature, as llama.cpp's). */
void mkc_samplers_apply(unsigned set, mkc_sampling *o, mkc_sampling_more *m);

#endif
