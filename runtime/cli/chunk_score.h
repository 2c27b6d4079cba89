/* A chunk of text read from an empty cache and scored as llama-perplexity and
 * llama-imatrix score it: each position from `first` on by the log-probability
 * its logits give the text's next token. Shared by mkc perplexity and mkc
 * imatrix, so the two print the same estimates for the same chunks. */
#ifndef MKC_CHUNK_SCORE_H
#define MKC_CHUNK_SCORE_H

#include <stdio.h>

#include "exec/session.h"

/* Called with the logits of each scored position and the text's token after it. 0, or -1
 * after a message (the chunk stops). */
typedef int (*mkc_chunk_row_fn)(void *ctx, const float *logits, int next);

/* Steps toks[0..n_fed) from an empty cache (toks[0] already BOS where it should be): the
 * positions before `first` as prompt chunks, which give no logits, the rest in steps of up to
 * t_max inputs, each of whose positions p below n - 1 calls row(ctx, logits, toks[p + 1]).
 * n_fed is n - 1 where only the scores are wanted (the last token's logits score nothing), n
 * where every token must be read (mkc imatrix's sums). `what` names the command in messages.
 * 0, or -1 after a message. */
int mkc_chunk_score(mkc_session *s, int t_max, const int *toks, int n, int n_fed, int first,
                    const char *what, mkc_chunk_row_fn row, void *ctx);

/* llama-perplexity's and llama-imatrix's running estimate after chunk `chunk` (1-based), from
 * the sum of the scored positions' negative log-likelihoods over count positions so far:
 * "[N]PPL," (no newline). */
void mkc_ppl_print_running(FILE *out, int chunk, double nll, long count);

/* llama-perplexity's closing line from the sums of the scored positions' negative
 * log-likelihoods and of their squares over count positions: the perplexity and its standard
 * error. */
void mkc_ppl_print_final(FILE *out, double nll, double nll2, long count);

#endif
