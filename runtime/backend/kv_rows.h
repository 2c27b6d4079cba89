/* What the kernel keeps per position, and where, for the backends that run
 * it (cpu, cuda): every attention node's K and V rows in the KV cache
 * ([kv_head][kv_rows][head_dim] at the node's kv_k and kv_v; position p at
 * row p % kv_rows, which a sliding window's ring makes fewer than max_ctx),
 * and the token at the position in scratch's history (mkc_accept writes it;
 * the penalties read it). A snapshot's store (exec/snapshot.c) holds the same
 * for `rows` positions, laid out
 *
 *   [attention node][K|V][kv_head][rows][head_dim]  elements of g->kv_dtype
 *   [rows]                                           ints: the history
 *
 * so copying n positions is one contiguous piece per node, K or V and kv
 * head, and one for the history, whichever way it goes. The backends do
 * the copies (memcpy, cuMemcpyDtoDAsync); this file says which. */
#ifndef MKC_BACKEND_KV_ROWS_H
#define MKC_BACKEND_KV_ROWS_H

#include <stddef.h>

#include "codegen/graph.h"

/* Where a piece lies: the KV cache, the scratch arena (the history), or a
 * store (the copy's source or destination, as the side says). */
enum mkc_kv_arena { MKC_KV_ARENA_CACHE, MKC_KV_ARENA_SCRATCH, MKC_KV_ARENA_STORE };

/* Bytes of a store of `rows` positions. */
size_t mkc_kv_store_bytes(const mkc_graph *g, int rows);

/* One contiguous piece: bytes from src_arena + src to dst_arena + dst. */
typedef int (*mkc_kv_piece_fn)(void *ctx, int dst_arena, size_t dst, int src_arena, size_t src,
                               size_t bytes);

/* Which sequence's positions "the cache" means in a slot kernel (g->slots >
 * 0, templates/slots.cuh): slot `slot`'s, in its own cache, or paged
 * (g->kv_pages > 0) on the pool's pages its table names (g->slot_pages ints,
 * every page the copy touches held); its history is the slot's. */
typedef struct mkc_kv_slot {
  int slot;
  const int *table;
} mkc_kv_slot;

/* Calls piece() for each piece of copying n positions to dst from src: a
 * side with store_rows > 0 is a store of that many rows, at row `at`; with
 * store_rows 0 it is the cache (slot `at`'s; NULL: a plain kernel's), at
 * position `at`. A ring takes part with the last kv_rows positions of the
 * range at most (the earlier ones share their rows), cut where it wraps; a
 * store row it skips is left as it was; a page run ends at its page. Stops at
 * the first nonzero return and returns it; 0 when all went, -1 after a
 * message for a page the table does not hold. */
int mkc_kv_rows_copy(const mkc_graph *g, const mkc_kv_slot *at, int dst_rows, int dst_at,
                     int src_rows, int src_at, int n, mkc_kv_piece_fn piece, void *ctx);

#endif
