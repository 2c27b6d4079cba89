/* mkc perplexity --kl-divergence: how far a model's distributions lie from
 * a reference model's at each scored position of a text (the reference's
 * saved as formats/logits_file.h's rows), summed and reported as
 * llama-perplexity reports them: both perplexities and their ratio, the KL
 * divergence's mean and percentiles, the difference in the probability of
 * the text's token (Δp), and how often both models' top token agree. */
#ifndef MKC_KLD_H
#define MKC_KLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen/graph.h"
#include "formats/logits_file.h"

typedef struct mkc_kld {
  double sum_nll, sum_nll2, sum_nll_base, sum_nll_base2, sum_nll_nll_base;
  double sum_kld, sum_kld2, sum_p_diff, sum_p_diff2, sum_p_diff4;
  float max_p_diff;
  long n_same_top, count;
  float *klds, *p_diffs; /* each position's, for the percentiles (cap of them) */
  size_t cap;
} mkc_kld;

/* -log p(tok) under logits (vocab of them), as llama-perplexity works it out: the largest
 * subtracted, the sum of the exponentials in double. */
double mkc_token_nll(const float *logits, int vocab, int tok);

/* Room for n positions. 0, or -1 when out of memory. */
int mkc_kld_open(mkc_kld *k, size_t n);
void mkc_kld_close(mkc_kld *k);

/* One position: this model's logits (n_vocab), the reference's row there
 * and the text's next token tok. */
void mkc_kld_add(mkc_kld *k, const float *logits, int n_vocab, const uint16_t *base_row, int tok);

/* The table's head, and its line after chunk `chunk` (1-based): the
 * estimates so far with their standard errors. */
void mkc_kld_print_head(FILE *out);
void mkc_kld_print_chunk(const mkc_kld *k, int chunk, FILE *out);

/* The closing statistics (sorts the positions' values); nothing under 100
 * positions, too few for them, as llama-perplexity prints nothing. */
void mkc_kld_print_report(mkc_kld *k, FILE *out);

/* The files (kld_file.c). --kl-divergence: the reference's file open at its
 * rows, its header in *h and its tokens in *toks (malloc'd); NULL after a
 * message. Then its counts and tokens checked against the model g: 0, or -1
 * after a message. */
FILE *mkc_kld_open_base(const char *path, mkc_logits_head *h, int **toks);
int mkc_kld_check_base(const char *path, const mkc_logits_head *h, const int *toks,
                       const mkc_graph *g);
/* --kl-divergence-base alone: a temporary file beside path (its name into
 * tmp), its header and the chunks' tokens written as tokenized; NULL after a
 * message. Closing renames it over path when whole: 0, or -1 after a
 * message with the temporary gone. */
FILE *mkc_kld_open_save(const char *path, char *tmp, size_t cap, const int *toks, int n_ctx,
                        int vocab, int chunks);
int mkc_kld_close_save(FILE *f, const char *tmp, const char *path);

#endif
