/* llama-perplexity's files of log-probabilities (--kl-divergence-base
 * FILE, also spelled --save-all-logits): a reference model's distribution
 * at every scored position of a text, which a later run of another model
 * (a quantization of it) is compared with token by token (KL divergence).
 * mkc writes and reads llama.cpp's layout, so either tool's file serves the
 * other:
 *
 *   "_logits_"      8 bytes
 *   n_ctx           u32: tokens a chunk
 *   n_vocab         i32
 *   n_chunk         i32
 *   tokens          n_chunk * n_ctx i32: the text, chunk after chunk, as
 *                   tokenized (not with the BOS each chunk is read from)
 *   rows            per chunk, per scored position (the last
 *                   n_ctx - 1 - n_ctx / 2), one row of nv u16, nv =
 *                   2 * ((n_vocab + 1) / 2) + 4: f32 scale, f32
 *                   min_log_prob, then n_vocab levels (the rest zeros);
 *                   token i's log-probability is scale * level[i] +
 *                   min_log_prob, everything more than 16 below the
 *                   largest logit at level 0
 *
 * little-endian, as llama.cpp writes it on the machines mkc runs on. */
#ifndef MKC_LOGITS_FILE_H
#define MKC_LOGITS_FILE_H

#include <stddef.h>
#include <stdint.h>

#define MKC_LOGITS_HEAD 20 /* bytes before the tokens */

typedef struct mkc_logits_head {
  int n_ctx, n_vocab, n_chunk;
  int rows;        /* scored positions a chunk: n_ctx - 1 - n_ctx / 2 */
  size_t row_len;  /* u16 a row (nv) */
  uint64_t tokens; /* the tokens' offset in the file (MKC_LOGITS_HEAD) */
  uint64_t data;   /* the first row's offset */
} mkc_logits_head;

/* The file's first n bytes (n >= MKC_LOGITS_HEAD for a header; fewer is cut
 * short) of file_size in all: 0, or -1 with why (not such a file, counts
 * that are not positive or whose chunks score nothing, more than 2^31 - 1
 * tokens, a size that is not what the counts make). */
int mkc_logits_head_parse(const unsigned char *bytes, size_t n, uint64_t file_size,
                          mkc_logits_head *h, char *why, size_t cap);

/* The header's bytes for those counts (MKC_LOGITS_HEAD of them). */
void mkc_logits_head_write(unsigned char *out, int n_ctx, int n_vocab, int n_chunk);

size_t mkc_logits_row_len(int n_vocab); /* nv */

/* logits (n_vocab) as a row of mkc_logits_row_len u16, quantized as
 * llama-perplexity quantizes them. Returns token tok's negative
 * log-likelihood, as llama-perplexity works it out there. */
double mkc_logits_row_encode(const float *logits, int n_vocab, int tok, uint16_t *row);

/* A row's scale and min_log_prob. */
void mkc_logits_row_params(const uint16_t *row, float *scale, float *min_log_prob);

#endif
