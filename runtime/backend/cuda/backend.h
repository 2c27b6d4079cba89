/* CUDA backend: the megakernel on a GPU. Weights uploaded once, scratch, KV
 * cache and decode state in device memory, every block resident
 * (cooperative launch, grid from occupancy), the step captured once in a CUDA
 * graph and replayed: no launch argument changes between steps. */
#ifndef MKC_BACKEND_CUDA_H
#define MKC_BACKEND_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/graph.h"
#include "mkc_state.h"

typedef struct mkc_cuda_backend mkc_cuda_backend;

/* image: a cubin, or NUL-terminated PTX for the driver to JIT. weights: the
 * kernel's arena (g->weight_elems bf16). use_graph 0 launches directly every
 * step (for comparison). NULL + message on failure. */
mkc_cuda_backend *mkc_cuda_open(const mkc_graph *g, const void *image, const uint16_t *weights,
                                int use_graph);

/* Writes the step's inputs into the device state, runs the step, reads back
 * the state (statuses, counts, tokens). 0 or -1 after printing why. */
int mkc_cuda_step(mkc_cuda_backend *b, const int *inputs, int n_inputs, int n_fixed,
                  mkc_state *out);

/* Copies floats [offset, offset + n) of scratch to host; the whole KV cache
 * (g->kv_bytes) to host. */
int mkc_cuda_read_scratch(mkc_cuda_backend *b, size_t offset, size_t n, float *host);
int mkc_cuda_read_kv(mkc_cuda_backend *b, void *host);

/* Zeroes the device state: pos 0, as freshly opened. 0 or -1. */
int mkc_cuda_reset_state(mkc_cuda_backend *b);

int mkc_cuda_blocks(const mkc_cuda_backend *b);       /* grid size in use */
int mkc_cuda_graph_in_use(const mkc_cuda_backend *b); /* 0 when capture was refused */

/* Device-to-device copy bandwidth in GB/s (bytes read + written per second)
 * over a buffer of `bytes`, best of a few runs; < 0 on failure. */
double mkc_cuda_copy_bandwidth(mkc_cuda_backend *b, size_t bytes);

void mkc_cuda_close(mkc_cuda_backend *b);

#endif
