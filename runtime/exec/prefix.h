/* The pages of a paged slot kernel's pool by the tokens they hold: a trie
 * with a page per node, keyed by its MKC_KV_PAGE tokens under the page
 * before it (the root's children: a sequence's first pages). A page's K/V
 * rows depend only on the tokens up to its last, so a new sequence whose
 * prompt starts with a run of full pages another slot holds can share
 * them (exec/slots.h, mkc_slots_share). */
#ifndef MKC_PREFIX_H
#define MKC_PREFIX_H

typedef struct mkc_prefix mkc_prefix;

/* An empty index of a pool of `pages` pages; NULL when out of memory. */
mkc_prefix *mkc_prefix_open(int pages);
void mkc_prefix_close(mkc_prefix *x);
/* Page `page` holds `tokens` (MKC_KV_PAGE of them) after page `parent` (-1:
 * it is a sequence's first). Nothing when the page is indexed already. */
void mkc_prefix_add(mkc_prefix *x, int parent, const int *tokens, int page);
/* A page holding `tokens` after `parent` (the latest indexed), or -1. */
int mkc_prefix_find(const mkc_prefix *x, int parent, const int *tokens);
/* Page `page` left the pool (no slot holds it): out of the index. */
void mkc_prefix_remove(mkc_prefix *x, int page);
int mkc_prefix_indexed(const mkc_prefix *x, int page);
/* An indexed page's parent (-1: a sequence's first page). */
int mkc_prefix_parent(const mkc_prefix *x, int page);

#endif
