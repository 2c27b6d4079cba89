/* Draft sources behind one interface (issue 15): each proposes up to K
 * tokens to follow the history, and is told how many of them the target
 * accepted, so it forgets the rest. One table of functions per source,
 * chosen when the drafter opens:
 *   - prompt lookup: the longest recent n-gram that ends the history is
 *     looked up earlier in it, and the tokens that followed it there are
 *     proposed (no weights);
 *   - a model's own greedy steps on its own session and KV cache
 *     (draft_model.c): self-speculation (the target's first L layers with
 *     its final norm and LM head, a kernel of its own) or a draft model
 *     file with the target's vocabulary;
 *   - a head conditioned on the target's hidden state, a block of drafts
 *     per step of its own kernel (draft_head.c). */
#ifndef MKC_DRAFT_H
#define MKC_DRAFT_H

#include "session.h"

#define MKC_DRAFT_NGRAM_MAX 3 /* longest suffix tried */

typedef struct mkc_drafter_ops mkc_drafter_ops;

/* An open draft source: every source's own state starts with this. */
typedef struct mkc_drafter {
  const mkc_drafter_ops *ops;
  char name[128]; /* "prompt lookup", "self-speculation (first 8 of 30 layers)", ... */
  long steps;     /* draft kernel steps run (0 for prompt lookup) */
} mkc_drafter;

struct mkc_drafter_ops {
  /* Writes up to k (>= 1) tokens proposed to follow hist[0..n-1] into out;
   * returns how many (0..k), or -1 after a message when the source failed. */
  int (*propose)(mkc_drafter *d, const int *hist, int n, int k, int *out);
  /* The target kept n_accepted tokens of the last proposal (made with
   * history n): the source forgets the others. 0, or -1 after a message.
   * NULL here: nothing to forget. */
  int (*accepted)(mkc_drafter *d, int n_accepted);
  /* The draft's session, or NULL (a source without one). */
  mkc_session *(*session)(mkc_drafter *d);
  void (*close)(mkc_drafter *d);
};

/* Prompt lookup (never fails; NULL only when out of memory). */
mkc_drafter *mkc_drafter_lookup(void);

/* Always k tokens (the last one repeated), so that every step verifies
 * k + 1 tokens: what bench times a verify step with. NULL when out of memory. */
mkc_drafter *mkc_drafter_full(void);

/* A model's greedy steps on session s (not shared with anything else; the
 * drafter owns and closes it) over graph g (g->vocab = the target's,
 * g->max_ctx >= the target's; g must outlive the drafter). name: how the
 * stats call the source. NULL + message on failure (s is closed then). */
mkc_drafter *mkc_drafter_model(mkc_session *s, const mkc_graph *g, const char *name);
/* llama.cpp's --draft-p-min on a model drafter: it stops at the first choice whose probability
 * among the draft's 10 likeliest tokens (llama.cpp drafts through a top-k 10 sampler) is below
 * p_min, and does not propose it. The draft session computes those log-probabilities from then
 * on (sampling.logprobs 10). 0 < p_min <= 1. 0, or -1 after a message (not a model drafter). */
int mkc_drafter_model_p_min(mkc_drafter *d, float p_min);
/* --draft-p-min's rule, for a session drafter and the slots' draft pool (exec/draft_slots.h):
 * whether a choice of log-probability lp is likely enough, its probability among the step's
 * MKC_DRAFT_P_MIN_TOP likeliest tokens (ids, their lps; an id of -1: none) at least p_min (p_min
 * <= 0: always). */
#define MKC_DRAFT_P_MIN_TOP 10 /* llama.cpp's draft sampler: top-k 10 */
int mkc_draft_confident(float p_min, float lp, const int *ids, const float *lps);

/* A head conditioned on the target's hidden state (graphs/draft_head.lua,
 * exec/draft_head.c): each proposal is one step of session head (owned, as
 * above) over graph g, fed the history's last token then mask_token, each
 * input with the outputs of target layers[0..n_layers) (n_layers 0: its last
 * layer) that target's last step left at the input that chose that token
 * (mkc_session_last_choice), one after another; the drafts are its choices
 * after each input, at most g->t_max. No hidden state there: no drafts. The
 * target's kernel must keep those layers (mkc_gen_opts.keep_layers; the last
 * is always kept), g's feature must be n_layers * target_g->dim wide and its
 * vocabulary the target's. NULL + message (head closed then). */
mkc_drafter *mkc_drafter_head(mkc_session *head, const mkc_graph *g, mkc_session *target,
                              const mkc_graph *target_g, const int *layers, int n_layers,
                              int mask_token, const char *name);

/* The calls through the table (see mkc_drafter_ops). */
int mkc_drafter_propose(mkc_drafter *d, const int *hist, int n, int k, int *out);
int mkc_drafter_accepted(mkc_drafter *d, int n_accepted);
mkc_session *mkc_drafter_session(mkc_drafter *d);
const char *mkc_drafter_name(const mkc_drafter *d);
void mkc_drafter_close(mkc_drafter *d);

/* Prompt lookup itself: writes up to k proposed tokens after hist[0..n-1]
 * into out; returns how many. */
int mkc_draft_lookup(const int *hist, int n, int k, int *out);

#endif
