/* llama.cpp's samplers that the kernel's sampler stage does not run: typical-p, top-n-sigma,
 * XTC, dynamic temperature, mirostat (1 and 2) and DRY. When a request asks for one, each token
 * is chosen on the host from the step's logits (exec/constrain.h, a document that allows every
 * token unless a format or grammar narrows it), through llama.cpp's default chain:
 *
 *   penalties, DRY, top-n-sigma, top-k, typical-p, top-p, min-p, XTC, temperature (dynamic)
 *
 * or, with mirostat, llama.cpp's other chain: temperature, then mirostat (no penalties, no
 * truncation). Semantics are llama.cpp's (src/llama-sampler.cpp), computed in double; where this
 * file differs it says so. Candidates are ordered by logit descending, ties by lower id. */
#ifndef MKC_SAMPLE_CHAIN_H
#define MKC_SAMPLE_CHAIN_H

#include <stddef.h>
#include <stdint.h>

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

/* llama.cpp's defaults: every sampler here off; DRY's breakers "\n" ":" "\"" "*". */
void mkc_sampling_more_init(mkc_sampling_more *m);

/* Whether one of the samplers is on (the host must choose). */
int mkc_sampling_more_on(const mkc_sampling_more *m);

/* The samplers on, for a stats line: "DRY 0.8, mirostat 2 (tau 5, eta 0.1)" ("" if none). */
void mkc_sampling_more_names(const mkc_sampling_more *m, char *buf, size_t n);

/* The options in range: 0, or -1 with the reason (naming llama.cpp's flag) in why. */
int mkc_sampling_more_check(const mkc_sampling_more *m, char *why, size_t n_why);

/* Adds breaker text (1 to MKC_DRY_BREAKER_LEN - 1 bytes): 0, or -1 when it does not fit. */
int mkc_sampling_more_add_breaker(mkc_sampling_more *m, const char *text, size_t n);

/* The tokens' texts, for DRY's breakers: token i is bytes[off[i] .. off[i + 1]). */
typedef struct mkc_token_texts {
  int n;
  const char *bytes;
  const uint32_t *off;
} mkc_token_texts;

/* DRY: logit[id] (every id of the vocabulary, n_logits) lowered for each token that would
 * extend a repeat of window's tail (the last dry_penalty_last_n tokens of the window, oldest
 * first) longer than dry_allowed_length: multiplier * base ^ (length - allowed), the exponent
 * capped so that the power stays a finite float. A repeat does not reach back across a
 * breaker, and a token holding a breaker is never penalized. mkc matches breakers on the
 * tokens' texts (an occurrence may span tokens); llama.cpp matches the breaker's
 * tokenization, which agrees where the tokenizer does. */
void mkc_dry_penalize(const mkc_sampling_more *m, const mkc_token_texts *t, const int *window,
                      int n_window, double *logit, int n_logits);

/* The chain after the penalties and DRY: probs[0..n) of candidates whose logits are
 * logit[0..n) (ascending ids: index order breaks ties), 0 for those cut. o gives temperature,
 * top-k, top-p and min-p; temp <= 0 is a point mass on the best candidate the truncations keep.
 * n_vocab: the model's vocabulary (mirostat 1's estimate); mu: mirostat's state; u_xtc in
 * [0, 1): XTC's draw (XTC acts when u_xtc < xtc_probability). Returns the number kept (> 0),
 * or -1 when no candidate has a finite logit. */
int mkc_chain_probs(const mkc_sampling *o, const mkc_sampling_more *m, const double *logit, int n,
                    int n_vocab, double mu, double u_xtc, double *probs);

/* Mirostat's state after a token whose probability under the chain was p: mu - eta * (surprise
 * - tau), surprise = -log2 p. It starts at 2 tau. */
double mkc_mirostat_update(const mkc_sampling_more *m, double mu, double p);

#endif
