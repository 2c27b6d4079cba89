/* Slots: one step of a slot kernel (mkc gen --slots B, templates/slots.cuh)
 * serves up to B sequences. Each slot has its own pos, KV cache, token
 * history and sampling options; the host gives each slot its inputs for the
 * next step (the last token, known tokens, drafts, as mkc_session_step takes
 * them), or none, and one launch runs them all, reading every weight once.
 * Several slots together take at most g->step_rows inputs, each at most
 * g->t_max (past t_max in all a wide step, on the tiled path); a prompt
 * chunk past t_max runs with its slot alone. Paged, the pool's pages are taken before
 * each step for the positions it writes, and given back when a slot is
 * cleared. */
#ifndef MKC_SLOTS_H
#define MKC_SLOTS_H

#include "exec/session.h"

typedef struct mkc_slots mkc_slots;

/* A pool over a slot kernel (g->slots > 0), every slot empty (pos 0). blocks:
 * the cpu backend's grid (0: its default). NULL + message. */
mkc_slots *mkc_slots_open(enum mkc_backend_kind kind, const mkc_graph *g, const mkc_kernel_src *src,
                          const mkc_weights *w, int blocks);
void mkc_slots_close(mkc_slots *p);
int mkc_slots_count(const mkc_slots *p);
const mkc_graph *mkc_slots_graph(const mkc_slots *p);
const char *mkc_slots_describe(const mkc_slots *p); /* the backend: its name and how it runs */

/* Slot s's inputs for the next step (n 0: it sits the step out); n_fixed as
 * in mkc_session_step. 0, or -1 + message for inputs no step could take. */
int mkc_slots_set_inputs(mkc_slots *p, int s, const int *inputs, int n, int n_fixed);
/* Slot s's sampling options from its next step on (mkc_sampling_check'd). */
int mkc_slots_set_sampling(mkc_slots *p, int s, const mkc_sampling *o);
/* One launch for every slot given inputs; each slot's inputs are then
 * cleared. Returns 0 (each slot's status in its result) or -1 when the
 * backend failed. A step whose slots together pass step_rows, or one of
 * whose several slots passes t_max, is refused for each of them
 * (MKC_STATUS_BAD_INPUT), unless one slot alone takes part. */
int mkc_slots_step(mkc_slots *p);
/* Slot s's result of the last step: 1, or 0 when it sat the step out. */
int mkc_slots_result(const mkc_slots *p, int s, mkc_step_result *r);
/* Slot s's logits after its input t in the last step (g->vocab floats), as
 * mkc_session_logits gives them (a chunk past t_max: its last input's only);
 * NULL when it sat out or has none there. */
const float *mkc_slots_logits(mkc_slots *p, int s, int t);
/* Slot s's hidden state after its input t in the last step (the LM head's input before its
 * norm, g->dim floats) into out, as mkc_session_hidden gives a session's: every input has one,
 * a prompt chunk's too. 0, or -1 after a message. */
int mkc_slots_hidden(mkc_slots *p, int s, int t, float *out);
int mkc_slots_pos(const mkc_slots *p, int s);
/* After a step in which slot s's sampling.logprobs = N > 0: its emitted
 * token i's log-probability (*lp) and the N most likely tokens at its place
 * (ids, lps), as mkc_session_logprobs gives a session's. 0, or -1 after a
 * message. */
int mkc_slots_logprobs(mkc_slots *p, int s, int i, float *lp, int *ids, float *lps);
/* A prompt's next piece with its slot alone, remaining tokens to go: a chunk,
 * as a session feeds it (mkc_session_prompt_inputs), so the prompt's logits
 * are the plain kernel's. */
int mkc_slots_prompt_inputs(const mkc_slots *p, int remaining);
const int *mkc_slots_tokens(const mkc_slots *p, int s); /* the pos tokens its cache holds */
/* Slot s forgets its tokens (pos 0): free for another sequence. 0 or -1. */
int mkc_slots_clear(mkc_slots *p, int s);
/* Slot s forgets its tokens from pos on (the rows past it are rewritten by later steps), as
 * mkc_session_rewind does; whole caches only (a paged pool indexes its full pages by their
 * tokens). Where a layer's window is a ring, the caller rewinds no farther than a step's inputs
 * (the ring keeps those rows). 0, or -1 after a message. */
int mkc_slots_rewind(mkc_slots *p, int s, int pos);
/* The KV bytes slot s holds: whole caches, all of its own once it holds a
 * token; paged (mkc gen --kv-pages), the pages its positions need so far.
 * And the bytes of every slot's cache, or of the pool. */
size_t mkc_slots_kv_used(const mkc_slots *p, int s);
size_t mkc_slots_kv_total(const mkc_slots *p);
/* A kernel generated with stage timers (mkc_gen_opts.stage_timers): the last step's time in each
 * of its g->n_stages stages, ns, block 0's clock, into ns. 0, or -1 (no timers, or the read
 * failed). */
int mkc_slots_stage_ns(mkc_slots *p, double *ns);
/* Paged: the pool's pages held by some slot (a shared page once); and those
 * no slot holds that stay indexed for sharing, a finished sequence's full
 * pages, until the pool needs them (the oldest let go first). */
int mkc_slots_pages_held(const mkc_slots *p);
int mkc_slots_pages_kept(const mkc_slots *p);
/* Paged, on an empty slot s about to take prompt[0..n): shares the longest
 * run of full pages some slot holds, or kept, for the same first tokens (their K/V
 * are what these tokens give), leaving at least the prompt's last token to
 * feed; the slot then starts at that position. Returns the positions shared
 * (a multiple of MKC_KV_PAGE; 0 also when not paged), or -1 + message. A
 * shared page is never written: every slot writes past its own pos. */
int mkc_slots_share(mkc_slots *p, int s, const int *prompt, int n);

/* Slot files (llama-server's slot save and restore on mkc serve --parallel).
 * Slot s's rows of its positions [0, pos): a host copy of a store
 * (backend/kv_rows.h; *bytes of them, malloc'd), its tokens being
 * mkc_slots_tokens'. NULL + message; refused for slots whose sliding windows
 * keep only their last rows (whole caches with rings: not paged). */
void *mkc_slots_read_rows(mkc_slots *p, int s, size_t *bytes);
/* Slot s, cleared, takes n positions: their tokens (in the vocabulary) and
 * rows (bytes of them, as mkc_slots_read_rows gives them; the history in
 * them is rewritten from tokens). Paged, its full pages are then indexed for
 * sharing, as a step's are. 0, or -1 + message, the slot left empty. */
int mkc_slots_write_rows(mkc_slots *p, int s, const int *tokens, int n, const void *rows,
                         size_t bytes);
/* Slot s forgets its tokens as mkc_slots_clear does and, paged, its pages no
 * other slot holds leave the index: no later prompt shares them. 0 or -1. */
int mkc_slots_forget(mkc_slots *p, int s);

#endif
