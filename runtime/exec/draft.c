/* The draft sources' interface, and prompt lookup: cheap, weight-free, and
 * good on repetitive text. */
#include "draft.h"

#include <stdio.h>
#include <stdlib.h>

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

static int lookup_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  return mkc_draft_lookup(hist, n, k, out);
}

static void plain_close(mkc_drafter *d) { free(d); }

/* A weight-free source: the interface and nothing else. */
static mkc_drafter *plain_drafter(const mkc_drafter_ops *ops, const char *name) {
  mkc_drafter *d = calloc(1, sizeof *d);
  if (!d) {
    fprintf(stderr, "mkc: error: out of memory opening the %s drafter\n", name);
    return NULL;
  }
  d->ops = ops;
  snprintf(d->name, sizeof d->name, "%s", name);
  return d;
}

static const mkc_drafter_ops LOOKUP = {.propose = lookup_propose, .close = plain_close};

mkc_drafter *mkc_drafter_lookup(void) { return plain_drafter(&LOOKUP, "prompt lookup"); }

int mkc_drafter_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  return k > 0 ? d->ops->propose(d, hist, n, k, out) : 0;
}

int mkc_drafter_accepted(mkc_drafter *d, int n_accepted) {
  return d->ops->accepted ? d->ops->accepted(d, n_accepted) : 0;
}

mkc_session *mkc_drafter_session(mkc_drafter *d) {
  return d->ops->session ? d->ops->session(d) : NULL;
}

const char *mkc_drafter_name(const mkc_drafter *d) { return d->name; }

void mkc_drafter_close(mkc_drafter *d) {
  if (d) d->ops->close(d);
}

/* Always k tokens, the last one repeated: every step verifies k + 1 tokens,
 * whatever the target keeps (bench's verify rows time such a step). */
static int full_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  if (n < 1) return 0;
  for (int i = 0; i < k; i++) out[i] = hist[n - 1];
  return k;
}

static const mkc_drafter_ops FULL = {.propose = full_propose, .close = plain_close};

mkc_drafter *mkc_drafter_full(void) {
  return plain_drafter(&FULL, "full drafts (the last token repeated)");
}
