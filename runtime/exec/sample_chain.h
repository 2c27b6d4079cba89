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

#include "backend/sampling_more.h"
#include "mkc_state.h"

/* A candidate: its logit and its index. The order is logit descending, ties by the lower
 * index: one total order, so every truncation is a prefix of it. */
typedef struct mkc_cand {
  double l;
  int i;
} mkc_cand;

/* Whether a comes before b in that order (inline: the hot loops of selection and sort). */
static inline int mkc_cand_before(const mkc_cand *a, const mkc_cand *b) {
  return a->l > b->l || (a->l == b->l && a->i < b->i);
}

/* Reorders c[0..n) so that its first k (0 < k < n) are the first k in order, among
 * themselves in any order: quickselect. */
void mkc_cand_first_k(mkc_cand *c, int n, int k);

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
