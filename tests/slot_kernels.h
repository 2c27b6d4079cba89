/* The kernels of the slot tests (test_slots.c, test_sched.c): tiny's plain
 * kernel and its slot kernels, all of one shape so the kernel cache shares
 * them, with seeded random weights, sessions and pools on one grid, and the
 * plain greedy continuation of a prompt as the oracle. */
#ifndef MKC_TEST_SLOT_KERNELS_H
#define MKC_TEST_SLOT_KERNELS_H

#include <stdlib.h>
#include <string.h>

#include "codegen/host.h"
#include "fixture.h"

#define SLOTS 7
#define DRAFT_MAX 15 /* t_max 16: the rows one step holds */
#define UBATCH 32    /* prompt chunks past 16 go tiled, alone */
#define MAX_CTX 256
/* Every session and slot pool on one grid: the kernel's split-K and split-KV
 * partitions follow the grid, and bit-for-bit checks need the same partition
 * (the cpu backend's blocks; on cuda, MKC_CUDA_BLOCKS: slot_kernels_one_grid) */
#define BLOCKS 5
#define TEXT(x) #x
#define TEXT_OF(x) TEXT(x)

typedef struct kernel {
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
} kernel;

/* The cuda backend's grid, BLOCKS too: set before any session opens. */
static inline void slot_kernels_one_grid(void) { setenv("MKC_CUDA_BLOCKS", TEXT_OF(BLOCKS), 1); }

/* A kernel of preset (NULL: tiny): slots 0, the plain kernel; kv_pages 0,
 * whole caches; step_rows 0, t_max (else a wide kernel, its prompt chunks
 * that long too); kv_dtype NULL: bf16. */
static inline int kernel_open_rows(kernel *k, const char *preset, int slots, int kv_pages,
                                   int step_rows, const char *kv_dtype) {
  memset(k, 0, sizeof *k);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = preset ? preset : "tiny",
                    .draft_max = DRAFT_MAX,
                    .max_ctx = MAX_CTX,
                    .ubatch = step_rows > UBATCH ? step_rows : UBATCH,
                    .slots = slots,
                    .kv_pages = kv_pages,
                    .step_rows = step_rows,
                    .kv_dtype = kv_dtype};
  if (mkc_codegen(&o, &k->g, &k->src) != 0) return -1;
  return mkc_weights_random(&k->w, &k->g, 7);
}

static inline int kernel_open_paged(kernel *k, int slots, int kv_pages) {
  return kernel_open_rows(k, NULL, slots, kv_pages, 0, NULL);
}

static inline int kernel_open(kernel *k, int slots) { return kernel_open_paged(k, slots, 0); }

static inline void kernel_close(kernel *k) {
  mkc_weights_free(&k->w);
  mkc_kernel_src_free(&k->src);
  mkc_graph_free(&k->g);
}

/* The plain greedy continuation of prompt[0..n_prompt), n tokens, one per
 * step, on the backend the slots run on: the oracle's arithmetic is then the
 * slots' (a GPU's fused multiply-adds are not the host's), and the plain
 * kernel is checked against the reference executor elsewhere (test_kernel). */
static inline int greedy_of(kernel *plain, const int *prompt, int n_prompt, int *out, int n) {
  mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  if (!s) return -1;
  mkc_step_result r;
  int rc = 0;
  for (int at = 0; at < n_prompt && rc == 0; at++)
    rc = mkc_session_step(s, prompt + at, 1, 0, &r) || r.status != MKC_STATUS_OK;
  out[0] = r.out[0];
  for (int i = 1; i < n && rc == 0; i++) {
    rc = mkc_session_step(s, &out[i - 1], 1, 0, &r) || r.status != MKC_STATUS_OK;
    out[i] = r.out[0];
  }
  mkc_session_close(s);
  return rc;
}

#endif
