/* See kv_rows.h. */
#include "kv_rows.h"

#include <stdint.h>
#include <stdio.h>

#include "mkc_state.h"

/* Bytes one position takes in a store: every attention node's K and V rows,
 * and the history's int. */
static size_t position_bytes(const mkc_graph *g) {
  size_t bytes = sizeof(int), elem = (size_t)mkc_kv_dtype_bytes(g->kv_dtype);
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *nd = &g->nodes[i];
    if (nd->op == MKC_OP_ATTENTION) bytes += 2 * (size_t)nd->kv_heads * nd->head_dim * elem;
  }
  return bytes;
}

size_t mkc_kv_store_bytes(const mkc_graph *g, int rows) {
  return (size_t)(rows > 0 ? rows : 0) * position_bytes(g);
}

/* One side of a copy: a store of `rows` rows (rows > 0), at row `at`, or the
 * cache at position `at`: a slot's (at: NULL, a plain kernel's), from element
 * `base` (a whole cache's slot) or through its page table. */
typedef struct side {
  int rows, at;
  const int *table;
  size_t base;
} side;

/* One kv head's K or V block: in a store, at byte `block` ([rows][head_dim]);
 * in the cache, kv head `head` of the node's K or V at element `slot`, `ring`
 * rows (paged: the pool's rows). */
typedef struct block {
  size_t block, slot;
  int head, ring;
} block;

/* Byte offset of the range's i-th position on side s, and in *run how many
 * positions from it lie in consecutive rows (a ring wraps, a page ends);
 * SIZE_MAX for a page the table does not hold. */
static size_t offset_of(const mkc_graph *g, side s, block b, int i, size_t row_bytes, int *run) {
  if (s.rows > 0) {
    *run = s.rows - (s.at + i);
    return b.block + (size_t)(s.at + i) * row_bytes;
  }
  int p = s.at + i, row;
  if (s.table) {
    int i_page = p / MKC_KV_PAGE, page = s.table[i_page];
    if (page < 0 || page >= g->kv_pages) return SIZE_MAX;
    row = page * MKC_KV_PAGE + p % MKC_KV_PAGE;
    *run = MKC_KV_PAGE - p % MKC_KV_PAGE;
    /* the next pages of the table that follow it in the pool: one piece (one copy on cuda) */
    for (int q = i_page + 1, next = page + 1; q < g->slot_pages && s.table[q] == next; q++, next++)
      *run += MKC_KV_PAGE;
  } else {
    row = p % b.ring;
    *run = b.ring - row;
  }
  return (s.base + b.slot) * (size_t)mkc_kv_dtype_bytes(g->kv_dtype) +
         ((size_t)b.head * b.ring + row) * row_bytes;
}

/* The cache side of a copy from position `at`: slot at->slot's. */
static side cache_side(const mkc_graph *g, const mkc_kv_slot *slot, int at) {
  side s = {0, at, NULL, 0};
  if (!slot || g->slots == 0) return s; /* a plain kernel's one cache */
  if (g->kv_pages > 0)
    s.table = slot->table;
  else /* each slot a whole cache, one after another */
    s.base = (size_t)slot->slot * (g->kv_bytes / (size_t)g->slots) /
             (size_t)mkc_kv_dtype_bytes(g->kv_dtype);
  return s;
}

/* Float offset of the history of the cache's slot. */
static size_t history_of(const mkc_graph *g, const mkc_kv_slot *slot) {
  return g->history_offset + (slot ? (size_t)slot->slot * g->history_floats : 0);
}

int mkc_kv_rows_copy(const mkc_graph *g, const mkc_kv_slot *at, int dst_rows, int dst_at,
                     int src_rows, int src_at, int n, mkc_kv_piece_fn piece, void *ctx) {
  if (n <= 0) return 0;
  if (g->slots > 0 && !at && (dst_rows == 0 || src_rows == 0)) {
    fprintf(stderr, "mkc: error: a KV copy on a slot kernel names no slot\n");
    return -1;
  }
  side dst = dst_rows > 0 ? (side){dst_rows, dst_at, NULL, 0} : cache_side(g, at, dst_at);
  side src = src_rows > 0 ? (side){src_rows, src_at, NULL, 0} : cache_side(g, at, src_at);
  int dst_arena = dst_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_CACHE;
  int src_arena = src_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_CACHE;
  size_t elem = (size_t)mkc_kv_dtype_bytes(g->kv_dtype);
  size_t dst_block = 0, src_block = 0; /* byte offsets of the current block in each store */
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *nd = &g->nodes[i];
    if (nd->op != MKC_OP_ATTENTION) continue;
    size_t row_bytes = (size_t)nd->head_dim * elem;
    int ring = mkc_node_kv_rows(g, nd);
    /* A ring holds the last `ring` positions of a range at most: the earlier
     * ones share their rows, so copying them to or from the cache is moot.
     * Pages hold every position. */
    int first = g->kv_pages == 0 && (dst_rows == 0 || src_rows == 0) && n > ring ? n - ring : 0;
    for (int kv = 0; kv < 2; kv++) {
      size_t slot = kv ? nd->kv_v : nd->kv_k;
      for (int h = 0; h < nd->kv_heads; h++) {
        block db = {dst_block, slot, h, ring}, sb = {src_block, slot, h, ring};
        for (int p = first, len; p < n; p += len) {
          int dst_run, src_run;
          size_t d = offset_of(g, dst, db, p, row_bytes, &dst_run);
          size_t s = offset_of(g, src, sb, p, row_bytes, &src_run);
          if (d == SIZE_MAX || s == SIZE_MAX) {
            fprintf(stderr, "mkc: error: slot %d holds no KV page for position %d\n",
                    at ? at->slot : 0, (d == SIZE_MAX ? dst_at : src_at) + p);
            return -1;
          }
          len = n - p < dst_run ? n - p : dst_run;
          if (src_run < len) len = src_run;
          int rc = piece(ctx, dst_arena, d, src_arena, s, (size_t)len * row_bytes);
          if (rc) return rc;
        }
        dst_block += (size_t)dst_rows * row_bytes;
        src_block += (size_t)src_rows * row_bytes;
      }
    }
  }
  /* the history: position p's token at int p of scratch's history */
  size_t dst_hist = dst_rows > 0 ? dst_block + (size_t)dst_at * sizeof(int)
                                 : (history_of(g, at) + (size_t)dst_at) * sizeof(float);
  size_t src_hist = src_rows > 0 ? src_block + (size_t)src_at * sizeof(int)
                                 : (history_of(g, at) + (size_t)src_at) * sizeof(float);
  return piece(ctx, dst_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_SCRATCH, dst_hist,
               src_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_SCRATCH, src_hist,
               (size_t)n * sizeof(int));
}
