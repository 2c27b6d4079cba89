/* The page trie (exec/prefix.h): a hash table over (parent, tokens), chained
 * through per-page links, so that adding, finding and removing are O(1)
 * expected and nothing is allocated after opening. Twins (two slots that
 * computed the same tokens' page apart) are both indexed: each is the
 * parent of its own slot's next pages, and either may leave first. */
#include "prefix.h"

#include <stdlib.h>
#include <string.h>

#include "mkc_state.h"

struct mkc_prefix {
  int pages, buckets;
  int *head;         /* [buckets]: the first page of each chain, -1: none */
  int *next;         /* [pages]: the next page in its chain */
  int *parent;       /* [pages] */
  int *tokens;       /* [pages][MKC_KV_PAGE] */
  unsigned char *in; /* [pages]: indexed */
};

static unsigned bucket(const mkc_prefix *x, int parent, const int *tokens) {
  unsigned h = 2166136261u ^ (unsigned)parent;
  for (int i = 0; i < MKC_KV_PAGE; i++) h = (h ^ (unsigned)tokens[i]) * 16777619u;
  return h % (unsigned)x->buckets;
}

mkc_prefix *mkc_prefix_open(int pages) {
  mkc_prefix *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->pages = pages;
  x->buckets = 2 * pages + 1;
  x->head = malloc((size_t)x->buckets * sizeof *x->head);
  x->next = malloc((size_t)pages * sizeof *x->next);
  x->parent = malloc((size_t)pages * sizeof *x->parent);
  x->tokens = malloc((size_t)pages * MKC_KV_PAGE * sizeof *x->tokens);
  x->in = calloc((size_t)pages, 1);
  if (!x->head || !x->next || !x->parent || !x->tokens || !x->in) {
    mkc_prefix_close(x);
    return NULL;
  }
  for (int b = 0; b < x->buckets; b++) x->head[b] = -1;
  return x;
}

void mkc_prefix_close(mkc_prefix *x) {
  if (!x) return;
  free(x->head);
  free(x->next);
  free(x->parent);
  free(x->tokens);
  free(x->in);
  free(x);
}

int mkc_prefix_find(const mkc_prefix *x, int parent, const int *tokens) {
  for (int p = x->head[bucket(x, parent, tokens)]; p >= 0; p = x->next[p])
    if (x->parent[p] == parent &&
        memcmp(x->tokens + (size_t)p * MKC_KV_PAGE, tokens, MKC_KV_PAGE * sizeof *tokens) == 0)
      return p;
  return -1;
}

void mkc_prefix_add(mkc_prefix *x, int parent, const int *tokens, int page) {
  if (x->in[page]) return;
  unsigned b = bucket(x, parent, tokens);
  x->parent[page] = parent;
  memcpy(x->tokens + (size_t)page * MKC_KV_PAGE, tokens, MKC_KV_PAGE * sizeof *tokens);
  x->next[page] = x->head[b];
  x->head[b] = page;
  x->in[page] = 1;
}

void mkc_prefix_remove(mkc_prefix *x, int page) {
  if (!x->in[page]) return;
  int *link = &x->head[bucket(x, x->parent[page], x->tokens + (size_t)page * MKC_KV_PAGE)];
  while (*link != page) link = &x->next[*link];
  *link = x->next[page];
  x->in[page] = 0;
}

int mkc_prefix_indexed(const mkc_prefix *x, int page) { return x->in[page]; }

int mkc_prefix_parent(const mkc_prefix *x, int page) { return x->parent[page]; }
