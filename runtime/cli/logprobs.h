/* A generated token as --json and --logprobs print it: a JSON line on stdout
 * ({"id", "text", "logprob", "top": [{"id", "text", "logprob"}, ...]}), or,
 * without --json, a line of log-probabilities on stderr. */
#ifndef MKC_LOGPROBS_H
#define MKC_LOGPROBS_H

#include "tokenizer/tokenizer.h"

/* tok may be NULL (token ids only). lp, ids and lps are NULL without
 * --logprobs (n = 0). */
void mkc_print_token(const mkc_tokenizer *tok, int json, int id, const float *lp, const int *ids,
                     const float *lps, int n);

#endif
