/* The decode loop: prompt in chunks of known tokens, then generation with
 * drafts (a draft source: exec/draft.h) verified inside the target's kernel
 * step: greedy, or sampled in the kernel as the session's sampling options
 * say (mkc_session_set_sampling), drafts kept with speculative sampling's
 * rule. */
#ifndef MKC_DECODE_H
#define MKC_DECODE_H

#include <signal.h>

#include "constrain.h"
#include "draft.h"
#include "session.h"

typedef struct mkc_decode_stats {
  int steps;     /* kernel steps, prompt chunks included */
  int launches;  /* generation's backend calls (host round trips): gen_steps, or fewer
                    with rounds */
  int gen_steps; /* steps that emitted generated tokens */
  long drafted;  /* draft tokens offered to the kernel */
  long accepted; /* draft tokens the kernel accepted */
  int generated; /* tokens written to out */
  int ctx_full;  /* generation stopped because the context was full */
  int stopped;   /* generation stopped because on_token said so */
  int complete;  /* the constrained document was whole: 1 JSON, 2 a grammar's (mkc_constraint_done)
                  */
  int fed;       /* prompt tokens the kernel processed (the rest were cached) */
  int shifts;    /* context shifts (opts->shift) */
  int shift_fed; /* history tokens fed again after them */
  int shift_steps;        /* the kernel steps that fed them (in steps too) */
  int depth_lo, depth_hi; /* the draft depths the steps asked for (adaptive: exec/depth.h) */
  double prompt_seconds;  /* wall time until the prompt was in the cache */
  double seconds;         /* wall time of the whole loop */
  /* Speculation during generation, as ollama's drafter counts it: */
  const char *draft_source; /* the drafter's name (valid while the drafter is open) */
  int rounds;               /* generation steps that offered drafts */
  int mismatches;           /* rounds in which a draft was rejected */
  int all_accepted;         /* rounds in which every draft was accepted */
  int fallbacks;            /* times the adaptive gate found speculation did not pay */
  long draft_steps;         /* kernel steps the drafter ran (a draft model's) */
  /* Where generation's time went: drafting (proposals and roll-backs),
   * target (its steps, as steps of one input would have cost) and verify
   * (what the steps cost beyond that: the drafts' rows, verified in the same
   * kernel step). verify is -1 when no one-input step was measured to split
   * by; then target is the steps' whole time. */
  double draft_seconds, target_seconds, verify_seconds;
  /* The target's generation steps by inputs T: how many, and their seconds. */
  int step_count[MKC_T_CAP + 1];
  double step_seconds[MKC_T_CAP + 1];
} mkc_decode_stats;

/* How to choose tokens and whom to tell. */
typedef struct mkc_decode_opts {
  int draft_max; /* drafts per step (clamped to the kernel's t_max - 1 and to the context) */
  /* Nonzero: the depth follows the acceptance rate within [draft_min,
   * draft_max], and rounds decode plainly while speculation does not pay
   * for its measured cost (exec/depth.h); else every step offers draft_max. */
  int adaptive, draft_min;
  /* Where drafts come from (exec/draft.h); NULL: prompt lookup. Its state
   * follows the history the loop gives it, so one drafter serves a whole
   * conversation. */
  mkc_drafter *drafter;
  /* > 1: up to this many draft-and-verify rounds per kernel launch, drafted
   * inside the kernel (mkc_session_rounds) by prompt lookup or, with
   * draft_layers, by its first layers: one host round trip per `rounds` steps.
   * Only with no drafter, a fixed depth (adaptive 0) and no log-probabilities
   * (mkc_decode_rounds_check).
   * Tokens reach on_token a launch at a time; a stop asked for mid-launch
   * leaves the later rounds' tokens in the cache (mkc_decode_more forgets
   * them). 0 or 1: a launch per step. */
  int rounds;
  /* > 0, with rounds > 1 and no drafter: the kernel drafts every round with
   * its own first draft_layers layers (self-speculation in the kernel,
   * templates/rounds.cuh; the session's kernel must have
   * g->draft_in_kernel). */
  int draft_layers;
  /* Tokens that end generation (end-of-generation ids): a launch of rounds
   * ends at the round that emits one, instead of running on past it. The
   * first MKC_ROUND_STOPS are passed to the kernel; on_token still decides. */
  const int *stop_ids;
  int n_stop_ids;
  /* Called with each generated token, in order, as soon as it is known;
   * nonzero stops generation after that token. May be NULL. */
  int (*on_token)(void *ctx, int id);
  void *ctx;
  /* Read before every step: nonzero stops the loop there (with stats->stopped),
   * prompt or generation; a signal handler's flag. May be NULL. */
  const volatile sig_atomic_t *interrupted;
  /* With the session's sampling.logprobs = n > 0: called before on_token
   * with the token's log-probability and the n most likely tokens at its
   * place (mkc_session_logprobs). May be NULL. */
  void (*on_logprobs)(void *ctx, int id, float lp, const int *ids, const float *lps, int n);
  /* Constrained output (exec/constrain.h; the caller starts its document):
   * every token is chosen on the host from its step's logits, among those
   * that keep the answer JSON (or the grammar's), by the session's sampling
   * options; drafts are verified on the host too (mkc_constraint_verify:
   * greedy, the same choices; sampled, speculative sampling over the
   * constrained distribution), no rounds (they would be the kernel's
   * choices), and generation ends, with stats->complete, once the document
   * is whole. NULL: none. */
  mkc_constraint *constraint;
  /* Context shift (llama.cpp's --context-shift), nonzero: when generation
   * fills the context and tokens are still wanted, the history keeps its
   * first n_keep tokens and the later half of the rest (the oldest half
   * after them is dropped), and generation goes on from it. The kept
   * tokens after n_keep are fed again (re-evaluated at their new
   * positions, context_shift.c), so what follows is what a fresh decode of
   * the shortened history gives. n_gen < 0 then asks for no bound (out
   * must be NULL: the tokens reach on_token only). 0: generation ends at
   * the full context, with stats->ctx_full. */
  int shift;
  int n_keep;    /* tokens at the history's start that a shift keeps (clamped) */
  int n_discard; /* tokens after them that a shift drops (llama-server's; 0: half) */
  /* The context a shift fills, when smaller than the kernel's (ollama's num_ctx); 0: the
   * kernel's. (Without a shift the caller's token budget keeps within it.) */
  int max_ctx;
} mkc_decode_opts;

/* Whether o->rounds can be had with these options and session: 0, or -1
 * after a message naming what stands in the way. */
int mkc_decode_rounds_check(const mkc_session *s, const mkc_decode_opts *o);

/* Feeds prompt[0..n_prompt-1] (n_prompt >= 1) from position 0 of a fresh
 * session and generates up to n_gen tokens into out as opts says. Stops
 * early, with stats->ctx_full set, when the context is full, or with
 * stats->stopped when on_token asks. Returns 0, or -1 after printing why. */
int mkc_decode_with(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt, int n_gen,
                    const mkc_decode_opts *opts, int *out, mkc_decode_stats *stats);

/* mkc_decode_with on a session that holds a conversation: prompt is the
 * whole history, of which the cache holds the first n_cached tokens (the
 * session's tokens past them, e.g. drafts accepted after a stop, are
 * forgotten); only prompt[n_cached..] is fed (at least the last token). A
 * multi-turn chat keeps its KV this way. Where a sliding window's ring no
 * longer holds the rows the rewind to n_cached needs, the whole prompt is
 * fed again (stats->fed says). */
int mkc_decode_more(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt,
                    int n_cached, int n_gen, const mkc_decode_opts *o, int *out,
                    mkc_decode_stats *stats);

/* mkc_decode_more on the caller's history, which it keeps: hist[0..*n_hist) is
 * the prompt (room for the context + 2 tokens), the generated tokens are
 * appended to it, and a shift (o->shift) drops tokens from it in place, a
 * history already past the context first; *n_hist is then the history's
 * length, which a session that goes on with it (run -i) feeds from. Without
 * o->shift one span, as mkc_decode_span. out: the generated tokens too, or
 * NULL. */
int mkc_decode_history(mkc_session *s, const mkc_graph *g, int *hist, int *n_hist, int n_cached,
                       int n_gen, const mkc_decode_opts *o, int *out, mkc_decode_stats *stats);

/* mkc_decode_more without a context shift (o->shift is not read): one span
 * of the cache; what context_shift.c runs between shifts. */
int mkc_decode_span(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt,
                    int n_cached, int n_gen, const mkc_decode_opts *o, int *out,
                    mkc_decode_stats *stats);

/* The n_keep of a shift that keeps the prompt's first keep tokens as
 * llama.cpp counts them: -1, or past the prompt, all of it; else keep and
 * the BOS (bos: its id, or -1 where the model adds none) that starts it. */
int mkc_shift_keep(int keep, int bos, const int *prompt, int n_prompt);

/* A shift of a history whose first `cached` tokens are in the cache: the tokens it keeps at the
 * start (n_keep, clamped so that one at least goes) in *keep, and returns how many after them
 * go: n_discard (else half of the rest), at most all of the rest but one (llama-server's
 * clamp); 0 when there is nothing to drop. */
int mkc_shift_discard(int cached, int n_keep, int n_discard, int *keep);

/* Splits the steps' time in stats into target_seconds and verify_seconds:
 * what the steps would have cost with one input each (the mean one-input
 * step's), and the rest, the drafts' verification; no one-input step
 * measured: all of it is the target's (verify -1). */
void mkc_decode_split_time(mkc_decode_stats *st);

/* Greedy: mkc_decode_with with only draft_max set.
 * Feeds prompt[0..n_prompt-1] (n_prompt >= 1) from position 0 of a fresh
 * session and generates up to n_gen tokens into out, with at most draft_max
 * drafts per step (clamped to the kernel's t_max - 1 and to the context).
 * Stops early, with stats->ctx_full set, when the context is full. Returns 0,
 * or -1 after printing why (a prompt longer than the context, a backend
 * failure, a refused step). */
int mkc_decode(mkc_session *s, const mkc_graph *g, const int *prompt, int n_prompt, int n_gen,
               int draft_max, int *out, mkc_decode_stats *stats);

#endif
