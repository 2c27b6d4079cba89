/* See chat_fit.h. */
#include "chat_fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mkc_chat_fit_reserve(int ctx, int limit) {
  return limit >= 1 ? (limit < ctx / 2 ? limit : ctx / 2) : ctx / 4;
}

int mkc_chat_fit_kept(const mkc_chat_msg *msgs, int n, int first, mkc_chat_msg *out) {
  int m = 0;
  for (int i = 0; i < first; i++)
    if (!strcmp(msgs[i].role, "system")) out[m++] = msgs[i];
  for (int i = first; i < n; i++) out[m++] = msgs[i];
  return m;
}

/* The rendering of the chat cut at first, and its length in tokens: 0, or -1. */
static int render_cut(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o,
                      const mkc_tokenizer *tok, int first, mkc_chat_msg *kept, char **text,
                      int *n_tokens) {
  int m = mkc_chat_fit_kept(msgs, n, first, kept);
  *text = mkc_chat_render_prompt(family, kept, m, o);
  if (!*text) return -1;
  int *ids = NULL;
  *n_tokens = mkc_tokenizer_encode(tok, *text, strlen(*text), mkc_tokenizer_add_bos(tok), 1, &ids);
  free(ids);
  if (*n_tokens >= 0) return 0;
  free(*text);
  *text = NULL;
  return -1;
}

int mkc_chat_fit_into(int family, const mkc_chat_msg *msgs, int n, const mkc_chat_opts *o,
                      const mkc_tokenizer *tok, int limit, mkc_chat_fit *f) {
  memset(f, 0, sizeof *f);
  /* the places a cut may go: 0 (nothing left out), then each user message after the first
   * message that is not the system's, the last of them kept whatever its length */
  int *cut = malloc((size_t)(n + 1) * sizeof *cut), n_cut = 1;
  mkc_chat_msg *kept = malloc((size_t)(n + 1) * sizeof *kept);
  if (!cut || !kept) {
    free(cut), free(kept);
    fprintf(stderr, "mkc: error: out of memory fitting the chat into the context\n");
    return -1;
  }
  cut[0] = 0;
  int opened = 0; /* a message other than the system's has come */
  for (int i = 0; i < n; i++) {
    if (opened && !strcmp(msgs[i].role, "user")) cut[n_cut++] = i;
    opened |= strcmp(msgs[i].role, "system") != 0;
  }
  /* The rendering shortens as the cut moves later: the first cut that fits, by halving. lo
   * is a cut known not to fit (or none tried), hi the best that does (or the last). */
  char *best = NULL;
  int best_n = 0, rc = 0, lo = -1, hi = n_cut - 1;
  if (render_cut(family, msgs, n, o, tok, cut[0], kept, &best, &best_n) != 0)
    rc = -1;
  else if (best_n <= limit)
    hi = 0;
  else {
    free(best), best = NULL;
    lo = 0;
    if (render_cut(family, msgs, n, o, tok, cut[hi], kept, &best, &best_n) != 0) rc = -1;
  }
  while (rc == 0 && hi - lo > 1 && best_n <= limit) {
    int mid = lo + (hi - lo) / 2, mid_n;
    char *text;
    if (render_cut(family, msgs, n, o, tok, cut[mid], kept, &text, &mid_n) != 0) {
      rc = -1;
    } else if (mid_n <= limit) {
      free(best);
      best = text, best_n = mid_n, hi = mid;
    } else {
      free(text);
      lo = mid;
    }
  }
  if (rc == 0) {
    f->text = best, f->n_tokens = best_n, f->first = cut[hi];
    f->dropped = n - mkc_chat_fit_kept(msgs, n, cut[hi], kept);
  } else {
    free(best);
  }
  free(cut), free(kept);
  return rc;
}
