/* llama-perplexity's files of log-probabilities (logits_file.h). */
#include "logits_file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char MAGIC[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

static int32_t i32_at(const unsigned char *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

static void put_i32(unsigned char *p, int32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (unsigned char)((uint32_t)v >> (8 * k));
}

size_t mkc_logits_row_len(int n_vocab) { return 2 * (((size_t)n_vocab + 1) / 2) + 4; }

int mkc_logits_head_parse(const unsigned char *bytes, size_t n, uint64_t file_size,
                          mkc_logits_head *h, char *why, size_t cap) {
  memset(h, 0, sizeof *h);
  if (n < sizeof MAGIC || memcmp(bytes, MAGIC, sizeof MAGIC) != 0)
    return snprintf(why, cap, "not a file of log-probabilities (no \"_logits_\" at its start)"), -1;
  if (n < MKC_LOGITS_HEAD)
    return snprintf(why, cap, "cut short: %zu bytes, where the header is %d", n, MKC_LOGITS_HEAD),
           -1;
  uint32_t n_ctx = (uint32_t)i32_at(bytes + 8);
  int32_t n_vocab = i32_at(bytes + 12), n_chunk = i32_at(bytes + 16);
  if (n_ctx < 3 || n_ctx > INT32_MAX)
    return snprintf(why, cap, "a context of %u tokens, which scores nothing (3 at least)", n_ctx),
           -1;
  if (n_vocab < 1 || n_chunk < 1)
    return snprintf(why, cap, "%d tokens in the vocabulary and %d chunks: both must be positive",
                    (int)n_vocab, (int)n_chunk),
           -1;
  if ((uint64_t)n_ctx * (uint64_t)n_chunk > INT32_MAX)
    return snprintf(why, cap, "%d chunks of %u tokens: more than 2^31 - 1 tokens in all",
                    (int)n_chunk, n_ctx),
           -1;
  h->n_ctx = (int)n_ctx, h->n_vocab = n_vocab, h->n_chunk = n_chunk;
  h->rows = h->n_ctx - 1 - h->n_ctx / 2;
  h->row_len = mkc_logits_row_len(n_vocab);
  h->tokens = MKC_LOGITS_HEAD;
  /* 2^31 tokens at most, so tokens and rows fit 64 bits; the overflow checks are a guard */
  uint64_t tokens = 4 * (uint64_t)h->n_ctx * (uint64_t)n_chunk;
  uint64_t rows = (uint64_t)n_chunk * (uint64_t)h->rows, want = 0;
  int over = __builtin_mul_overflow(rows, (uint64_t)h->row_len * 2, &rows) ||
             __builtin_add_overflow(tokens, (uint64_t)MKC_LOGITS_HEAD, &want) ||
             __builtin_add_overflow(want, rows, &want);
  h->data = MKC_LOGITS_HEAD + tokens;
  if (over || want != file_size) {
    int at =
        snprintf(why, cap, "%llu bytes, where %d chunks of %d tokens with a vocabulary of %d make ",
                 (unsigned long long)file_size, (int)n_chunk, h->n_ctx, (int)n_vocab);
    if (at >= 0 && (size_t)at < cap) {
      if (over)
        snprintf(why + at, cap - (size_t)at, "more than 2^64");
      else
        snprintf(why + at, cap - (size_t)at, "%llu", (unsigned long long)want);
    }
    return -1;
  }
  return 0;
}

void mkc_logits_head_write(unsigned char *out, int n_ctx, int n_vocab, int n_chunk) {
  memcpy(out, MAGIC, sizeof MAGIC);
  put_i32(out + 8, n_ctx);
  put_i32(out + 12, n_vocab);
  put_i32(out + 16, n_chunk);
}

double mkc_logits_row_encode(const float *logits, int n_vocab, int tok, uint16_t *row) {
  float max_logit = logits[0], min_logit = logits[0];
  for (int i = 1; i < n_vocab; i++) {
    if (logits[i] > max_logit) max_logit = logits[i];
    if (logits[i] < min_logit) min_logit = logits[i];
  }
  if (min_logit < max_logit - 16) min_logit = max_logit - 16; /* the levels span 16 at most */
  double sum_exp = 0;
  for (int i = 0; i < n_vocab; i++) sum_exp += expf(logits[i] - max_logit);
  const float log_sum_exp = (float)log(sum_exp);
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  size_t len = mkc_logits_row_len(n_vocab);
  memset(row, 0, len * sizeof *row);
  memcpy(row, &scale, sizeof scale);
  memcpy(row + 2, &min_log_prob, sizeof min_log_prob);
  if (scale != 0) {
    const float inv_scale = 1 / scale;
    for (int i = 0; i < n_vocab; i++) /* to the nearest level, ties to even, as llama.cpp rounds */
      row[4 + i] =
          logits[i] > min_logit ? (uint16_t)lrintf(inv_scale * (logits[i] - min_logit)) : 0;
  }
  return max_logit + log_sum_exp - logits[tok];
}

void mkc_logits_row_params(const uint16_t *row, float *scale, float *min_log_prob) {
  memcpy(scale, row, sizeof *scale);
  memcpy(min_log_prob, row + 2, sizeof *min_log_prob);
}
