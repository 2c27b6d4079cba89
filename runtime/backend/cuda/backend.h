/* CUDA backend: the megakernel on a GPU. Weights uploaded once, scratch, KV
 * cache and decode state in device memory, every block resident
 * (cooperative launch, grid from occupancy), the step captured once in a CUDA
 * graph and replayed: no launch argument changes between steps. */
#ifndef MKC_BACKEND_CUDA_H
#define MKC_BACKEND_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/kv_rows.h"
#include "codegen/host.h"
#include "driver.h"
#include "formats/weights.h"
#include "mkc_state.h"

typedef struct mkc_cuda_kernel mkc_cuda_kernel;

/* The backend the session calls (backend/backend.h): src compiled for dev
 * through the kernel cache (kcache.h), or an image made ahead of time (a
 * cubin, or PTX the driver compiles: aot.h), with w's arena uploaded.
 * MKC_CUDA_GRAPH=0 launches every step directly instead of replaying a CUDA
 * graph. g must outlive it. NULL + message on failure. */
mkc_backend *mkc_cuda_backend_open(const mkc_graph *g, const mkc_kernel_src *src,
                                   const mkc_weights *w, const mkc_cuda_device *dev);
mkc_backend *mkc_cuda_backend_open_image(const mkc_graph *g, const mkc_weights *w,
                                         const mkc_cuda_device *dev, const void *image);

/* The kernel on the device, as the backend above (ops.c) drives it. */

/* The kernel in image (a cubin, or NUL-terminated PTX for the driver to JIT)
 * on dev, the first device (driver.h). weights: the kernel's arena
 * (g->weight_elems bf16). use_graph 0 launches directly every step (for
 * comparison). NULL + message on failure. */
mkc_cuda_kernel *mkc_cuda_open(const mkc_graph *g, const mkc_cuda_device *dev, const void *image,
                               const uint16_t *weights, int use_graph);

/* Writes st's inputs into the device state, runs the step, reads the state
 * back into st (statuses, counts, tokens); a slot kernel's st is its array
 * of g->slots states. 0 or -1 after printing why. */
int mkc_cuda_step(mkc_cuda_kernel *b, mkc_state *st);

/* Copies floats [offset, offset + n) of scratch to host; the whole KV cache
 * (g->kv_bytes) to host. */
int mkc_cuda_read_scratch(mkc_cuda_kernel *b, size_t offset, size_t n, float *host);
/* Writes n floats from host at float offset `offset` of the scratch, on the
 * session's stream before its next step. 0 or -1 after a message. */
int mkc_cuda_write_scratch(mkc_cuda_kernel *b, size_t offset, size_t n, const float *host);
int mkc_cuda_read_kv(mkc_cuda_kernel *b, void *host);

/* Zeroes the device state: pos 0, as freshly opened. 0 or -1. */
int mkc_cuda_reset_state(mkc_cuda_kernel *b);
/* Sets the device state's pos (a rewind; a slot kernel's slot's), on the stream. 0 or -1. */
int mkc_cuda_set_pos(mkc_cuda_kernel *b, int slot, int pos); /* slot: 0 in a plain kernel */
/* Copies st->sampling into the device state (each slot's from st[s]), on the
 * stream. 0 or -1. */
int mkc_cuda_write_sampling(mkc_cuda_kernel *b, const mkc_state *st);

/* Snapshots' stores (backend/kv_rows.h) in device memory. Alloc: zeroed on
 * the stream; 0 after a message. Copy: n positions to dst from src (a store of *_rows rows at its
 * row *_at, or with *_rows 0 the cache, slot at's, at position *_at), device to device
 * on the stream, ordered with the steps; nothing waits. Read: a store's
 * bytes to the host, on the stream. Free: after the stream's work. */
CUdeviceptr mkc_cuda_store_alloc(mkc_cuda_kernel *b, size_t bytes);
int mkc_cuda_store_copy(mkc_cuda_kernel *b, const mkc_kv_slot *at, CUdeviceptr dst, int dst_rows,
                        int dst_at, CUdeviceptr src, int src_rows, int src_at, int n);
int mkc_cuda_store_read(mkc_cuda_kernel *b, CUdeviceptr store, size_t bytes, void *host);
int mkc_cuda_store_write(mkc_cuda_kernel *b, CUdeviceptr store, size_t bytes, const void *host);
void mkc_cuda_store_free(mkc_cuda_kernel *b, CUdeviceptr store);

int mkc_cuda_blocks(const mkc_cuda_kernel *b);       /* grid size in use */
int mkc_cuda_graph_in_use(const mkc_cuda_kernel *b); /* 0 when capture was refused */

/* Device-to-device copy bandwidth in GB/s (bytes read + written per second)
 * over a buffer of `bytes`, best of a few runs; < 0 on failure. */
double mkc_cuda_copy_bandwidth(mkc_cuda_kernel *b, size_t bytes);

void mkc_cuda_close(mkc_cuda_kernel *b);

#endif
