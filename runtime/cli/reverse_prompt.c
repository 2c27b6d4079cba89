/* See reverse_prompt.h. */
#include "reverse_prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mkc_reverse_open(mkc_reverse *r, const mkc_tokenizer *t, const char *const *texts, int n) {
  memset(r, 0, sizeof *r);
  r->texts = texts;
  r->n = n;
  for (int k = 0; k < n; k++)
    if (strlen(texts[k]) > r->longest) r->longest = strlen(texts[k]);
  if (n == 0) return 0;
  mkc_detok_init(&r->detok, t, 1);
  r->detok.started = 1; /* a prompt came first: SentencePiece's space is the completion's */
  r->tail = malloc(r->longest - 1 + MKC_DETOK_MAX);
  if (!r->tail) {
    fprintf(stderr, "mkc: error: out of memory following the reverse prompts\n");
    return -1;
  }
  return 0;
}

int mkc_reverse_push(mkc_reverse *r, int id) {
  if (r->n == 0 || r->hit) return r->hit != 0;
  size_t n = mkc_detok_push(&r->detok, id, r->tail + r->n_tail, MKC_DETOK_MAX);
  r->n_tail += n;
  /* what came before the piece holds no whole string: generation would have ended there */
  for (int k = 0; k < r->n && n; k++)
    if (memmem(r->tail, r->n_tail, r->texts[k], strlen(r->texts[k]))) {
      r->hit = k + 1;
      return 1;
    }
  size_t keep = r->longest - 1;
  if (r->n_tail > keep) {
    memmove(r->tail, r->tail + r->n_tail - keep, keep);
    r->n_tail = keep;
  }
  return 0;
}

void mkc_reverse_close(mkc_reverse *r) {
  free(r->tail);
  r->tail = NULL;
}
