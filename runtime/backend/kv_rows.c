/* See kv_rows.h. */
#include "kv_rows.h"

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

/* One side of a copy: a store of `rows` rows (rows > 0) or the cache. */
typedef struct side {
  int rows, at;
} side;

/* Where row `at + i` of one kv head's K or V lies: in a store, `block` is
 * the byte offset of this (node, K|V, head)'s [rows][head_dim] block; in
 * the cache, `slot` the element offset of the node's K or V slot. */
static size_t row_offset(const mkc_graph *g, side s, size_t block, size_t slot, int head,
                         int head_dim, size_t row_bytes) {
  if (s.rows > 0) return block + (size_t)s.at * row_bytes;
  size_t elem = (size_t)mkc_kv_dtype_bytes(g->kv_dtype);
  return (slot + ((size_t)head * g->max_ctx + s.at) * head_dim) * elem;
}

int mkc_kv_rows_copy(const mkc_graph *g, int dst_rows, int dst_at, int src_rows, int src_at, int n,
                     mkc_kv_piece_fn piece, void *ctx) {
  if (n <= 0) return 0;
  side dst = {dst_rows, dst_at}, src = {src_rows, src_at};
  int dst_arena = dst_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_CACHE;
  int src_arena = src_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_CACHE;
  size_t elem = (size_t)mkc_kv_dtype_bytes(g->kv_dtype);
  size_t dst_block = 0, src_block = 0; /* byte offsets of the current block in each store */
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *nd = &g->nodes[i];
    if (nd->op != MKC_OP_ATTENTION) continue;
    size_t row_bytes = (size_t)nd->head_dim * elem;
    for (int kv = 0; kv < 2; kv++) {
      size_t slot = kv ? nd->kv_v : nd->kv_k;
      for (int h = 0; h < nd->kv_heads; h++) {
        int rc =
            piece(ctx, dst_arena, row_offset(g, dst, dst_block, slot, h, nd->head_dim, row_bytes),
                  src_arena, row_offset(g, src, src_block, slot, h, nd->head_dim, row_bytes),
                  (size_t)n * row_bytes);
        if (rc) return rc;
        dst_block += (size_t)dst_rows * row_bytes;
        src_block += (size_t)src_rows * row_bytes;
      }
    }
  }
  /* the history: position p's token at int p of scratch's history */
  size_t dst_hist = dst_rows > 0 ? dst_block + (size_t)dst_at * sizeof(int)
                                 : (g->history_offset + (size_t)dst_at) * sizeof(float);
  size_t src_hist = src_rows > 0 ? src_block + (size_t)src_at * sizeof(int)
                                 : (g->history_offset + (size_t)src_at) * sizeof(float);
  return piece(ctx, dst_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_SCRATCH, dst_hist,
               src_rows > 0 ? MKC_KV_ARENA_STORE : MKC_KV_ARENA_SCRATCH, src_hist,
               (size_t)n * sizeof(int));
}
