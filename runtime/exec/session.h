/* A decoding session: one model's decode state on one backend. A step takes
 * inputs [last, fixed..., drafts...] and reports what the target accepted,
 * exactly as the megakernel's state does (templates/mkc_state.h): the ref
 * backend runs the reference executor through the same contract, so the
 * decode loop above it is the same for every backend. */
#ifndef MKC_SESSION_H
#define MKC_SESSION_H

#include "codegen/host.h"
#include "codegen/graph.h"
#include "mkc_state.h"
#include "formats/weights.h"

/* auto: cuda where a device answers, else cpu. */
enum mkc_backend_kind { MKC_BACKEND_CPU, MKC_BACKEND_REF, MKC_BACKEND_CUDA, MKC_BACKEND_AUTO };

/* "cpu", "ref", "cuda" or "auto" (--backend) -> the kind, or -1. */
int mkc_backend_kind_from_name(const char *name);

typedef struct mkc_session mkc_session;

typedef struct mkc_step_result {
  int status;         /* enum mkc_status; on anything but OK nothing moved */
  int n_out;          /* tokens emitted: n_accepted + 1 */
  int n_accepted;     /* drafts accepted */
  int out[MKC_T_CAP]; /* the emitted tokens */
} mkc_step_result;

/* Opens a session at pos 0. blocks: grid size for the cpu backend (0: 4;
 * cuda sizes its grid from occupancy). The cuda backend compiles src for the
 * device through the kernel cache (kcache.h); MKC_CUDA_GRAPH=0 launches
 * every step directly instead of replaying a CUDA graph. cuda and auto query
 * the device here, once per session. g, src and w must outlive the session.
 * NULL + message on failure. */
mkc_session *mkc_session_open(enum mkc_backend_kind kind, const mkc_graph *g,
                              const mkc_kernel_src *src, const mkc_weights *w, int blocks);

/* A cuda session on dev (the device the caller queried to pick the image)
 * with a ready image (a cubin, or PTX the driver compiles): the
 * ahead-of-time path (aot.h). */
struct mkc_cuda_device;
mkc_session *mkc_session_open_image(const mkc_graph *g, const mkc_weights *w,
                                    const struct mkc_cuda_device *dev, const void *image);

/* "cpu", "ref" or "cuda", and how it runs (grid, CUDA graph, registers). */
const char *mkc_session_backend(const mkc_session *s);
const char *mkc_session_describe(const mkc_session *s);
const mkc_graph *mkc_session_graph(const mkc_session *s);
/* Whether the backend runs a launch's rounds in the kernel (not ref's steps). */
int mkc_session_kernel_rounds(const mkc_session *s);

/* One step. inputs[0] is the token at position pos; inputs[1..n_fixed] are
 * known tokens taken as given; the rest are drafts. Up to g->t_max inputs, or
 * a prompt chunk of up to g->t_chunk, all known (n_fixed = n_inputs - 1).
 * Returns 0 (see r->status for a refused step) or -1 when the backend itself
 * failed. */
int mkc_session_step(mkc_session *s, const int *inputs, int n_inputs, int n_fixed,
                     mkc_step_result *r);

/* How many of `remaining` prompt tokens the next step takes: up to the
 * kernel's prompt chunk (g->t_chunk, tiled past g->t_max). */
int mkc_session_prompt_inputs(const mkc_session *s, int remaining);

/* What a launch of several rounds may run (mkc_session_rounds). */
typedef struct mkc_rounds_req {
  int rounds;                 /* 1..MKC_ROUNDS_MAX */
  int drafts;                 /* drafts per round after the first, 0..g->t_max - 1 */
  int budget;                 /* tokens still wanted, >= 1 */
  int n_stops;                /* 0..MKC_ROUND_STOPS */
  int stops[MKC_ROUND_STOPS]; /* a round that emits one of these ends the launch */
  /* > 0: every round's drafts, the first's included, come from the kernel's first
   * draft_layers layers (self-speculation; rounds >= 2, g->draft_in_kernel, a kernel
   * backend), inputs then being the last token alone and first_drafts the first round's
   * number of drafts */
  int draft_layers, first_drafts;
} mkc_rounds_req;

/* Up to q->rounds decode steps in one backend call, with no host round trip
 * between them: the first on inputs[0..n_inputs) (the last emitted token,
 * then drafts; n_fixed 0), each next one on the last token the one before
 * emitted and up to q->drafts drafts that prompt lookup (mkc_draft_lookup's
 * rule) finds in the session's tokens, fewer where fewer than drafts + 1
 * tokens are still wanted of q->budget or room is left in the context.
 * Stops after a round whose status is not ok or that emitted one of
 * q->stops, once budget tokens are emitted, or with the context full.
 * Writes the rounds run into out[] (each as a step's result, with its
 * inputs count) and how many into *n_rounds. The kernel backends run them in
 * their loop (templates/rounds.cuh); ref steps them one by one, the same
 * rounds. Returns 0, or -1 when the backend failed; refused arguments are a
 * round with status MKC_STATUS_BAD_INPUT. */
int mkc_session_rounds(mkc_session *s, const int *inputs, int n_inputs, const mkc_rounds_req *q,
                       mkc_round *out, int *n_rounds);

int mkc_session_pos(const mkc_session *s); /* tokens whose K/V are in the cache */

/* Those tokens, by position (mkc_session_pos of them): the inputs of the
 * steps the kernel kept. */
const int *mkc_session_tokens(const mkc_session *s);

/* Wall time of the last step, seconds: the backend's call (for cuda, the
 * launch and the read-back of the state), not the session's checks. */
double mkc_session_step_seconds(const mkc_session *s);

/* Logits after input t of the last step (g->vocab floats; t < n_inputs); a
 * prompt chunk of more than g->t_max inputs has them after its last input
 * only (NULL for the others). */
const float *mkc_session_logits(mkc_session *s, int t);

/* The greedy choice after each of inputs 0..n-1 of the last step (a step of
 * up to t_max inputs, n <= its inputs): the argmax of that input's logits,
 * ties to the lower id, -1 where every logit is NaN or -inf; under sampling
 * still the argmax, not the draw. The kernel backends read n ints from the
 * device (templates/accept.cuh), where the logits are n rows of the
 * vocabulary; ref gives the choices its own accept took (float64 logits).
 * 0, or -1 after a message. */
int mkc_session_choices(mkc_session *s, int *out, int n);

/* The KV cache of the cpu or cuda backend (g->kv_bytes bytes of elements of
 * g->kv_dtype; for cuda a host copy made now); NULL for ref or on a failed
 * copy. */
const void *mkc_session_kv(mkc_session *s);

/* The reference executor of a ref session (NULL for the others): tests use
 * it to compare a kernel's KV cache with the reference's (mkc_ref_follow_kv). */
struct mkc_ref *mkc_session_ref(mkc_session *s);

/* A graph with a feature (g.feature, MKC_OP_FEATURE: a drafter head's
 * conditioning): its values for inputs 0..T-1 of the next step, T rows of
 * the feature's size; they stay until written again. 0, or -1 after a message
 * (no feature in the graph, T outside 1..t_max). */
int mkc_session_set_feature(mkc_session *s, const float *rows, int T);
/* The hidden state of input t of the last step: the LM head's input before
 * its norm, g->dim floats, into out (every input has one, a prompt chunk's
 * too). 0, or -1 after a message. */
int mkc_session_hidden(mkc_session *s, int t, float *out);
/* The output of layer `layer` at input t of the last step (g->dim floats):
 * the last layer's is the hidden state above; another's only where the
 * kernel was generated to keep it (mkc_gen_opts.keep_layers). 0, or -1 after
 * a message. */
int mkc_session_hidden_layer(mkc_session *s, int layer, int t, float *out);
/* The input of the last step (mkc_session_step) whose logits chose its last
 * emitted token: n_fixed + n_accepted; -1 after a failed step, rounds, a
 * reset or a rewind. */
int mkc_session_last_choice(const mkc_session *s);

/* Forgets every token: pos = 0, as freshly opened (weights and the sampling
 * options stay). */
void mkc_session_reset(mkc_session *s);

/* The request's sampling options (templates/mkc_state.h): temp 0 (the
 * default) is greedy. Checked here: 0, or -1 after a message naming the
 * option out of range. */
int mkc_session_set_sampling(mkc_session *s, const mkc_sampling *o);
/* The same checks without a session: 0, or -1 after the message. */
int mkc_sampling_check(const mkc_sampling *o);
/* ... and the logit bias's ids inside a vocabulary of this size. */
int mkc_sampling_check_vocab(const mkc_sampling *o, int vocab);
const mkc_sampling *mkc_session_sampling(const mkc_session *s);

/* After a step with sampling.logprobs = N > 0: emitted token i's
 * log-probability (*lp) and the N most likely tokens at its place (ids,
 * lps: N each; an id of -1 past the vocabulary), as the kernel computed them
 * (mkc_state.h). 0, or -1 after a message. */
int mkc_session_logprobs(mkc_session *s, int i, float *lp, int *ids, float *lps);

/* Forgets the tokens from pos on (0 <= pos <= mkc_session_pos): the next
 * step's inputs[0] is the token at pos. 0, or -1 after a message. A layer
 * with a sliding window keeps a ring of window + t_max rows, so a rewind
 * reaches back as far as its window's rows are still there: past the last
 * step's inputs always, further only where no later position overwrote them
 * (mkc_session_can_rewind says). */
int mkc_session_rewind(mkc_session *s, int pos);
int mkc_session_can_rewind(const mkc_session *s, int pos); /* 1 when the rewind can be done */

/* cuda: device-to-device copy bandwidth in GB/s measured now over `bytes`;
 * other backends: -1. */
double mkc_session_copy_bandwidth(mkc_session *s, size_t bytes);

void mkc_session_close(mkc_session *s);

const char *mkc_status_name(int status);

/* With a kernel generated with stage timers (mkc_gen_opts.stage_timers): the
 * nanoseconds each of the last step's g->n_stages stages took, by block 0's
 * clock, into ns. 0, or -1 (no timers, or the ref backend). */
int mkc_session_stage_ns(mkc_session *s, double *ns);

/* With an imatrix kernel (mkc_gen_opts.imatrix): the sums of its matmul
 * stages' input squares since the last call (g->imatrix_floats floats, each
 * matmul node's from its imatrix offset less g->imatrix_offset) into sums, and
 * the kernel's sums zeroed. 0, or -1 after a message (another kernel, the ref
 * backend). */
int mkc_session_imatrix(mkc_session *s, float *sums);

#endif
