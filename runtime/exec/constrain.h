/* Constrained output: JSON that parses (and that a JSON schema validates). At each step the token
 * is chosen on the host from the step's logits, among the tokens whose text keeps the answer the
 * beginning of a JSON document (util/json_accept.h): the kernel's own choice is set aside. The
 * choice follows the session's sampling options exactly as the sampling oracle defines them
 * (exec/sampler_ref.h), the tokens that cannot continue the JSON first given probability 0: greedy
 * is the best such token, sampling draws from the distribution renormalized over them. Generation
 * ends when the document is whole. */
#ifndef MKC_CONSTRAIN_H
#define MKC_CONSTRAIN_H

#include <stdint.h>

#include "mkc_state.h"

/* The text of each token, as the answer prints it. */
typedef struct mkc_vocab_text {
  int n;                /* tokens: ids 0..n-1 */
  const char *bytes;    /* their texts back to back */
  const uint32_t *off;  /* [n + 1]: token i is bytes[off[i] .. off[i + 1]) */
  const uint8_t *plain; /* [n]: 0 for a token an answer's text may not hold (control tokens) */
} mkc_vocab_text;

typedef struct mkc_constraint mkc_constraint;

/* The vocabulary's tokens sorted by their text, once per model (v's arrays
 * are copied). NULL after a message. */
mkc_constraint *mkc_constraint_open(const mkc_vocab_text *v);
/* Another document over base's sorted vocabulary and scratch (many sequences
 * at once: mkc serve --parallel, run --batch). base must outlive it, and the
 * two are never used at the same time (one host thread chooses). NULL after a
 * message. */
mkc_constraint *mkc_constraint_share(mkc_constraint *base);
void mkc_constraint_close(mkc_constraint *c);

/* Starts a document: an object (object_only; ollama's format "json",
 * OpenAI's json_object) or any JSON value. seed: the draws of sampling. */
void mkc_constraint_start(mkc_constraint *c, int object_only, uint64_t seed);
/* Starts a document the schema validates (util/json_schema.h; it must
 * outlive the document). */
struct mkc_schema;
void mkc_constraint_start_schema(mkc_constraint *c, const struct mkc_schema *schema, uint64_t seed);

/* Starts a document grammar g reads (util/gbnf.h; it must outlive the
 * document). The first MKC_GRAMMAR_ENDS of end_ids (the model's
 * end-of-generation tokens) may come next wherever the grammar may end; the
 * document is whole after one, or where nothing can follow. 0, or -1 after
 * a message. */
#define MKC_GRAMMAR_ENDS 16
struct mkc_gbnf;
int mkc_constraint_start_grammar(mkc_constraint *c, const struct mkc_gbnf *g, const int *end_ids,
                                 int n_end, uint64_t seed);

/* Starts a document that allows every token of the vocabulary and is never whole: the
 * samplers of sample_chain.h with no format to follow. */
void mkc_constraint_start_free(mkc_constraint *c, uint64_t seed);

/* The samplers the kernel lacks (exec/sample_chain.h) for the document just started: with one
 * on, each choice runs llama.cpp's whole chain over the allowed tokens (m is copied; mirostat's
 * state starts at 2 tau and follows the tokens accepted). */
struct mkc_sampling_more;
void mkc_constraint_set_more(mkc_constraint *c, const struct mkc_sampling_more *m);

/* Whether token id (any id; past the vocabulary: no) may come next. */
int mkc_constraint_allowed(const mkc_constraint *c, int id);

/* allowed[0..n_logits): 1 for the tokens that may come next; their count. */
int mkc_constraint_mask(mkc_constraint *c, uint8_t *allowed, int n_logits);

/* The next token from logits[0..n_logits) of the step, window being the
 * tokens before it (prompt and answer, oldest first) and o the sampling
 * options: into *id. With o->logprobs > 0 also its log-probability and the
 * o->logprobs likeliest tokens (ids -1 past the allowed ones) under the
 * constrained distribution (temperature and penalties applied, no
 * truncation, as the kernel reports them). 0, or -1 after a message (no
 * token of the vocabulary continues the document). */
int mkc_constraint_choose(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                          int n_window, const mkc_sampling *o, int *id, float *lp, int *ids,
                          float *lps);

/* mkc_constraint_choose from the logits of a step (NULL: the step kept none),
 * then mkc_constraint_accept of the token chosen: 0, or -1 after a message. */
int mkc_constraint_next(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                        int n_window, const mkc_sampling *o, int *id, float *lp, int *ids,
                        float *lps);

/* mkc_constraint_next at a draft's place: greedy, the same choice (the
 * caller compares it with the draft); sampled, speculative sampling's
 * verdict: the draft with its probability under the constrained
 * distribution, else a token drawn from that distribution without the draft
 * (renormalized), so that the token has the distribution mkc_constraint_next
 * gives it. draft -1: mkc_constraint_next. 0, or -1 after a message. */
int mkc_constraint_verify(mkc_constraint *c, const float *logits, int n_logits, const int *window,
                          int n_window, const mkc_sampling *o, int draft, int *id, float *lp,
                          int *ids, float *lps);

/* Takes token id as the next: 0, or -1 when it may not come next. */
int mkc_constraint_accept(mkc_constraint *c, int id);

/* Whether the document is whole (generation ends there): 0, or 1 for JSON
 * and 2 for a grammar's (after an end token, or where nothing can follow); a free document
 * never is. */
int mkc_constraint_done(const mkc_constraint *c);

#endif
