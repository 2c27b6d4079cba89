/* What every backend offers the session: one table of functions, chosen once
 * when the session opens (calm's transformer.forward = forward_cuda), so no
 * call branches on the backend. A backend runs the megakernel's step contract
 * (templates/mkc_state.h) on the session's state: the cpu and cuda backends
 * run the emitted kernel, the ref backend the reference executor. Each
 * backend has its own open, since each needs other things to start (a grid
 * size, a device, an image); it returns its state behind an mkc_backend. */
#ifndef MKC_BACKEND_H
#define MKC_BACKEND_H

#include <stddef.h>

#include "backend/kv_rows.h"
#include "mkc_state.h"

typedef struct mkc_backend_ops mkc_backend_ops;

/* An open backend: every backend's own state starts with this. */
typedef struct mkc_backend {
  const mkc_backend_ops *ops;
} mkc_backend;

struct mkc_backend_ops {
  const char *name; /* "cpu", "ref" or "cuda" */

  /* One step on st: reads n_inputs, n_fixed and inputs (in range: the session
   * checked them), writes status and pos and, when ok, n_out, n_accepted and
   * out_tokens. 0, or -1 when the backend itself failed (after printing why). */
  int (*step)(mkc_backend *b, mkc_state *st);
  /* Nonzero: step runs st->round_max > 1 rounds in one call, as the kernel's
   * loop does (templates/rounds.cuh), and fills st->rounds; 0: the session
   * runs the rounds step by step (ref). */
  int rounds;

  /* Row `row` of the last step's logits (g->vocab floats): those after input
   * t0 + row, where t0 is 0, or a prompt chunk's last input (exec/session.c
   * maps inputs to rows); NULL on a failed copy. */
  const float *(*logits)(mkc_backend *b, int row);

  /* The greedy choice after each of the last step's rows, as its accept took
   * it. NULL here: the kernel's, which mkc_accept leaves in scratch at
   * g->choices_offset (read_scratch); ref has its own. */
  const int *(*choices)(mkc_backend *b);

  /* The kernel's KV cache (g->kv_bytes bytes of elements of g->kv_dtype);
   * NULL on a failed copy. NULL here: the backend keeps none (ref). */
  const void *(*kv)(mkc_backend *b);

  /* Forgets every token; the session zeroes its state. NULL here: the state
   * is all there is to forget. */
  void (*reset)(mkc_backend *b);

  /* Moves the kernel's pos: back (a rewind: the cache's rows past it are
   * rewritten by later steps), or to where a snapshot's rows were restored.
   * 0 or -1 after a message. NULL here: the state's pos is all there is to
   * move (cpu). */
  int (*rewind)(mkc_backend *b, int pos);
  /* A slot kernel's (templates/slots.cuh): sets slot's pos, where st is an
   * array of g->slots states for step and write_sampling. 0 or -1 after a
   * message. NULL here: the states are the host's (cpu), or no slots (ref). */
  int (*set_slot_pos)(mkc_backend *b, int slot, int pos);

  /* KV snapshots (exec/snapshot.c). A store holds what the backend keeps per
   * position — every attention layer's K and V rows, and the kernels' token
   * history — for `rows` positions, in the backend's own memory: device
   * memory for cuda, written on the session's stream. NULL + message. */
  void *(*store_open)(mkc_backend *b, int rows);
  /* Copies n positions to dst from src, each a store (from its row dst_at,
   * src_at) or NULL: the cache (from position dst_at, src_at). Positions
   * [at, at + n) of the cache are < max_ctx. 0 or -1 after a message. */
  int (*store_copy)(mkc_backend *b, void *dst, int dst_at, const void *src, int src_at, int n);
  /* store_copy on a slot kernel (g->slots > 0): the cache is slot at->slot's
   * positions (backend/kv_rows.h: paged, through at->table, which the copy
   * only reads). NULL here: the backend runs no slot kernel (ref). */
  int (*slot_copy)(mkc_backend *b, const mkc_kv_slot *at, void *dst, int dst_at, const void *src,
                   int src_at, int n);
  /* A host copy of the store's bytes (malloc'd; *bytes of them): tests
   * compare stores. NULL + message. */
  void *(*store_read)(mkc_backend *b, const void *store, size_t *bytes);
  /* The store's bytes from a host copy store_read gave (a saved prompt's,
   * exec/kv_file.c): 0, or -1 after a message (bytes is not the store's
   * size: another backend's or model's layout). */
  int (*store_write)(mkc_backend *b, void *store, const void *host, size_t bytes);
  void (*store_close)(mkc_backend *b, void *store);

  /* Writes st->sampling where the kernel reads it (once per request, not per
   * step). 0 or -1 after a message. NULL here: the state is the host's. */
  int (*write_sampling)(mkc_backend *b, const mkc_state *st);

  /* Copies scratch floats [offset, offset + n) of the last step to dst (the
   * log-probabilities). 0 or -1. NULL here: no kernel scratch (ref). */
  int (*read_scratch)(mkc_backend *b, size_t offset, size_t n, float *dst);
  /* Writes n floats from src at float offset `offset` of scratch, before the
   * next step (a paged slot kernel's page tables). 0 or -1. NULL: no scratch. */
  int (*write_scratch)(mkc_backend *b, size_t offset, size_t n, const float *src);

  /* Writes the graph's feature (MKC_OP_FEATURE: n floats per input) for
   * inputs 0..T-1 of the next step, rows one after another. 0 or -1 after a
   * message. The session checked n and T. */
  int (*write_feature)(mkc_backend *b, const float *rows, int n, int T);
  /* The hidden state of input t of the last step (g->dim floats) into dst:
   * slot -1, the LM head's input before its norm; slot k, the output of
   * layer g->keep_layers[k]. 0 or -1 after a message. */
  int (*hidden)(mkc_backend *b, int slot, int t, float *dst);

  /* Device-to-device copy bandwidth in GB/s over `bytes`, measured now; < 0
   * on failure. NULL here: no device memory to measure. */
  double (*copy_bandwidth)(mkc_backend *b, size_t bytes);

  const char *(*describe)(const mkc_backend *b); /* how it runs: grid, CUDA graph, registers */
  void (*close)(mkc_backend *b);
};

#endif
