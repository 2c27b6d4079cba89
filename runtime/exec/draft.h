/* Drafts without a draft model: prompt lookup. The longest recent n-gram
 * that ends the history is looked up earlier in the history, and the tokens
 * that followed it there are proposed. */
#ifndef MKC_DRAFT_H
#define MKC_DRAFT_H

#define MKC_DRAFT_NGRAM_MAX 3 /* longest suffix tried */

/* Writes up to k proposed tokens after hist[0..n-1] into out; returns how many. */
int mkc_draft_lookup(const int *hist, int n, int k, int *out);

#endif
