/* Prompt-lookup drafting: cheap, weight-free, and good on repetitive text. */
#include "draft.h"

int mkc_draft_lookup(const int *hist, int n, int k, int *out) {
  if (k <= 0) return 0;
  for (int len = MKC_DRAFT_NGRAM_MAX; len >= 1; len--) {
    if (len >= n) continue;
    const int *suffix = hist + n - len;
    /* The most recent earlier match wins: recent text predicts best. */
    for (int start = n - len - 1; start >= 0; start--) {
      int j = 0;
      while (j < len && hist[start + j] == suffix[j]) j++;
      if (j < len) continue;
      int got = 0;
      for (int i = start + len; i < n && got < k; i++) out[got++] = hist[i];
      if (got > 0) return got;
    }
  }
  return 0;
}
