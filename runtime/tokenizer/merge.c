/* The merge loop both models share. Candidate pairs of neighbours wait in a
 * binary heap, best first (higher score or lower rank, then further left);
 * a merge joins the right symbol into the left one and offers the two new
 * pairs around it. An entry whose symbols changed since it was pushed is
 * stale and skipped, so each step is O(log n). */
#include <stdlib.h>

#include "impl.h"

typedef struct pair {
  double priority;     /* larger first */
  int32_t left, right; /* symbols */
  uint32_t llen, rlen; /* their lengths when pushed */
  int32_t id;          /* the token they become */
} pair;

static int before(const pair *a, const pair *b) {
  return a->priority > b->priority || (a->priority == b->priority && a->left < b->left);
}

typedef struct heap {
  pair *v;
  size_t n, cap;
} heap;

static int heap_push(heap *h, pair p) {
  if (mkc_tok_reserve((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v)) return MKC_TOK_NOMEM;
  size_t i = h->n++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!before(&p, &h->v[up])) break;
    h->v[i] = h->v[up];
    i = up;
  }
  h->v[i] = p;
  return 0;
}

static pair heap_pop(heap *h) {
  pair top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
    if (!before(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* Pushes the pair (l, r) when it makes a token. */
static int offer(const mkc_tokenizer *t, heap *h, const mkc_tok_sym *syms, const char *text, int l,
                 int r, int by_score) {
  if (l < 0 || r < 0) return 0;
  const mkc_tok_sym *a = &syms[l], *b = &syms[r];
  pair p = {.left = l, .right = r, .llen = a->len, .rlen = b->len};
  if (by_score) {
    p.id = mkc_tok_text_id(t, text + a->start, (size_t)a->len + b->len);
    if (p.id < 0) return 0;
    p.priority = t->score[p.id];
  } else {
    if (a->id < 0 || b->id < 0) return 0;
    int rank = mkc_tok_merge_rank(t, a->id, b->id, &p.id);
    if (rank < 0) return 0;
    p.priority = -(double)rank;
  }
  return heap_push(h, p);
}

int mkc_tok_merge(const mkc_tokenizer *t, mkc_tok_work *w, const char *text, int n, int by_score) {
  mkc_tok_sym *syms = w->syms;
  heap h = {w->heap, 0, w->cap_heap};
  int rc = 0;
  for (int i = 0; i + 1 < n && rc == 0; i++) rc = offer(t, &h, syms, text, i, i + 1, by_score);
  while (h.n && rc == 0) {
    pair p = heap_pop(&h);
    mkc_tok_sym *a = &syms[p.left], *b = &syms[p.right];
    if (a->len != p.llen || b->len != p.rlen || a->next != p.right) continue; /* stale */
    a->len += b->len;
    a->id = p.id;
    a->next = b->next;
    if (b->next >= 0) syms[b->next].prev = p.left;
    b->len = 0;
    rc = offer(t, &h, syms, text, a->prev, p.left, by_score);
    if (rc == 0) rc = offer(t, &h, syms, text, p.left, a->next, by_score);
  }
  w->heap = h.v;
  w->cap_heap = h.cap;
  return rc;
}
