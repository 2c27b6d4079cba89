/* The sampling oracle: the exact distribution the kernel's sampler stage must
 * draw from, computed in double on the host, written apart from the kernel
 * (an oracle shares no code with what it checks). The chain is llama.cpp's
 * default order: penalties, top-k, top-p, min-p, temperature, draw.
 *
 * Semantics (docs/DECISIONS.md, "sampling order and semantics"):
 *  - window: the tokens before the one sampled, oldest first; only the last
 *    o->repeat_last_n of them count. For each distinct token in them, with
 *    count c: logit <= 0 ? logit * rp : logit / rp, then
 *    logit -= c * frequency + presence.
 *  - temp <= 0: a point mass on the argmax of the penalized logits (ties:
 *    lower id); top-k, top-p and min-p cannot move an argmax, so they are
 *    skipped. The penalties still apply, as in llama.cpp.
 *  - candidates are ordered by penalized logit, descending, ties by lower id.
 *  - top-k: the first k of that order survive (exactly k).
 *  - top-p: on the softmax of the survivors (temperature not yet applied),
 *    the shortest prefix whose cumulative probability reaches top_p; the
 *    token that crosses top_p is kept; at least one token.
 *  - min-p: survivors whose probability is >= min_p * the highest; the top
 *    token always stays.
 *  - temperature: survivors' logits / temp, softmax; cut tokens get 0.
 * Logits may be -inf (a masked token: probability 0), never NaN or +inf, and
 * not all -inf. Near a top-p or min-p boundary float and double may decide
 * differently: tests comparing with a float kernel keep a margin there. */
#ifndef MKC_SAMPLER_REF_H
#define MKC_SAMPLER_REF_H

#include "mkc_state.h"

/* pen[vocab]: the logits after the penalties (the chain's first link). */
void mkc_sampler_ref_penalize(const float *logits, int vocab, const int *window, int n_window,
                              const mkc_sampling *o, double *pen);

/* probs[vocab]: the probability of each token. Returns 0, or -1 on bad
 * arguments (a message on stderr, probs untouched). */
int mkc_sampler_ref_probs(const float *logits, int vocab, const int *window, int n_window,
                          const mkc_sampling *o, double *probs);

/* logprobs[vocab]: log-softmax over the whole vocabulary of the penalized
 * logits / temp (temp <= 0: / 1), no truncation: what --logprobs reports, so
 * a token top-k or top-p cut still has a finite log-probability. Returns 0 or
 * -1 as above. */
int mkc_sampler_ref_logprobs(const float *logits, int vocab, const int *window, int n_window,
                             const mkc_sampling *o, double *logprobs);

/* Sampled speculative verify with a point-mass draft q = delta(draft): the
 * draft is accepted with probability min(1, p[draft] / q[draft]) = p[draft],
 * which is returned; on rejection the token is drawn from residual[vocab] =
 * norm(max(0, p - q)), p with p[draft] removed and renormalized. When nothing
 * is left (p[draft] == 1) residual is all zero. Returns -1 on bad arguments. */
double mkc_sampler_ref_residual(const double *p, int vocab, int draft, double *residual);

#endif
