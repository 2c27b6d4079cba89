/* mkc perplexity's files of log-probabilities (kld.h): the reference's
 * opened and checked against the model, and a new one written through a
 * temporary name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kld.h"
#include "util/files.h"

/* --kl-divergence: the file of log-probabilities open at its rows, its header in *h and its
 * tokens in *toks (malloc'd). NULL after a message. */
FILE *mkc_kld_open_base(const char *path, mkc_logits_head *h, int **toks) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  unsigned char head[MKC_LOGITS_HEAD];
  char why[200];
  *toks = NULL;
  if (!f) return mkc_error_in(path, "cannot open: %s", strerror(errno)), NULL;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return mkc_error_in(path, "not a regular file"), NULL;
  }
  size_t got = fread(head, 1, sizeof head, f);
  if (mkc_logits_head_parse(head, got, (uint64_t)st.st_size, h, why, sizeof why) != 0) {
    fclose(f);
    return mkc_error_in(path, "%s", why), NULL;
  }
  size_t n = (size_t)h->n_chunk * (size_t)h->n_ctx; /* within the file's size */
  int32_t *ids = malloc(n * sizeof *ids);
  if (!ids || fread(ids, sizeof *ids, n, f) != n) {
    const char *why = ids ? "its tokens cut short (changed while read?)" : "out of memory";
    free(ids);
    fclose(f);
    return mkc_error_in(path, "%s", why), NULL;
  }
  *toks = (int *)ids;
  return f;
}

/* The tokens of a file of log-probabilities, checked against the model: 0, or -1 after a
 * message. */
int mkc_kld_check_base(const char *path, const mkc_logits_head *h, const int *toks,
                       const mkc_graph *g) {
  if (h->n_vocab != g->vocab)
    return mkc_error_in(path,
                        "log-probabilities over %d tokens, where the model has %d: another "
                        "vocabulary's",
                        h->n_vocab, g->vocab);
  if (g->max_ctx < h->n_ctx)
    return mkc_error_in(path, "chunks of %d tokens, where the model's context is %d (-c)", h->n_ctx,
                        g->max_ctx);
  for (size_t i = 0; i < (size_t)h->n_chunk * h->n_ctx; i++)
    if (toks[i] < 0 || toks[i] >= g->vocab)
      return mkc_error_in(path, "token %d at position %zu is outside the vocabulary (0..%d)",
                          toks[i], i, g->vocab - 1);
  return 0;
}

/* --kl-divergence-base without --kl-divergence: a temporary file beside path, its header and
 * the chunks' tokens written (as tokenized). NULL after a message. */
FILE *mkc_kld_open_save(const char *path, char *tmp, size_t cap, const int *toks, int n_ctx,
                        int vocab, int chunks) {
  unsigned char head[MKC_LOGITS_HEAD];
  FILE *f = mkc_atomic_open(path, tmp, cap);
  if (!f && !tmp[0]) return mkc_error_in(path, "name too long"), NULL;
  if (!f) return mkc_error_in(path, "cannot write: %s", strerror(errno)), NULL;
  mkc_logits_head_write(head, n_ctx, vocab, chunks);
  size_t n = (size_t)chunks * n_ctx;
  if (fwrite(head, 1, sizeof head, f) != sizeof head || fwrite(toks, sizeof *toks, n, f) != n) {
    mkc_atomic_abandon(f, tmp);
    return mkc_error_in(path, "cannot write: %s", strerror(errno)), NULL;
  }
  return f;
}

/* The saved file complete: renamed over path. 0, or -1 after a message (the temporary gone). */
int mkc_kld_close_save(FILE *f, const char *tmp, const char *path) {
  if (mkc_atomic_commit(f, tmp, path) == 0) return 0;
  return mkc_error_in(path, "cannot write: %s", strerror(errno));
}
