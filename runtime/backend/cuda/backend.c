/* See backend.h. Every driver call goes through CU_CHECK. */
#include "backend.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kv_rows.h"
#include "driver.h"
#include "util/clock.h"

struct mkc_cuda_kernel {
  const mkc_graph *g;
  mkc_cuda_device dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction step;
  CUstream stream;
  CUdeviceptr weights, scratch, kv, state;
  void *args[4];
  int blocks;
  CUgraph graph;
  CUgraphExec graph_exec;
};

/* The kernel's states: a slot kernel's one per slot (templates/slots.cuh). */
static size_t n_states(const mkc_graph *g) { return g->slots > 0 ? (size_t)g->slots : 1; }

/* MKC_CUDA_BLOCKS=N: a grid of exactly N blocks instead of what occupancy
 * allows (*blocks, the most that are co-resident). The kernel's split-K and
 * split-KV partitions follow the grid, so two kernels compared bit for bit
 * (a slot kernel and the plain one, tests/test_slots.c) need the same grid.
 * 0, or -1 after a message when N is no number or more than fit. */
static int grid_override(int *blocks, int most) {
  const char *env = getenv("MKC_CUDA_BLOCKS");
  if (!env || !*env) return 0;
  char *end;
  long n = strtol(env, &end, 10);
  if (*end || n < 1 || n > most) {
    fprintf(stderr,
            "mkc: error: cuda: MKC_CUDA_BLOCKS must be a grid of 1..%d blocks (the most that are "
            "co-resident here), got \"%s\"\n",
            most, env);
    return -1;
  }
  *blocks = (int)n;
  return 0;
}

static int launch(mkc_cuda_kernel *b) {
  CU_CHECK(LaunchCooperativeKernel(b->step, (unsigned)b->blocks, 1, 1, (unsigned)b->g->threads, 1,
                                   1, (unsigned)b->g->smem_bytes, b->stream, b->args));
  return 0;
fail:
  return -1;
}

/* Captures one step. A driver that refuses to capture a cooperative launch
 * leaves direct launches in place, and says which call refused, once. */
static void capture(mkc_cuda_kernel *b) {
  const char *failed = NULL;
  int line = 0;
  CUresult err = 0;
#define ATTEMPT(name, args)                                                                        \
  do {                                                                                             \
    CUresult r_ = mkc_cu.name args;                                                                \
    if (r_ != 0 && !failed) failed = "cu" #name, line = __LINE__, err = r_;                        \
  } while (0)
  ATTEMPT(StreamBeginCapture, (b->stream, MKC_CU_CAPTURE_MODE_THREAD_LOCAL));
  if (!failed) {
    ATTEMPT(LaunchCooperativeKernel, (b->step, (unsigned)b->blocks, 1, 1, (unsigned)b->g->threads,
                                      1, 1, (unsigned)b->g->smem_bytes, b->stream, b->args));
    /* The capture ends whatever the launch did. */
    ATTEMPT(StreamEndCapture, (b->stream, &b->graph));
  }
  if (!failed) ATTEMPT(GraphInstantiateWithFlags, (&b->graph_exec, b->graph, 0));
#undef ATTEMPT
  if (failed) {
    fprintf(stderr,
            "mkc: warning: cuda: %s failed at %s:%d: %s; the step is not captured in a CUDA "
            "graph: launching directly\n",
            failed, __FILE__, line, mkc_cu_error_name(err));
    if (b->graph) CU_WARN(GraphDestroy(b->graph));
    b->graph = NULL;
    b->graph_exec = NULL;
  }
}

mkc_cuda_kernel *mkc_cuda_open(const mkc_graph *g, const mkc_cuda_device *dev, const void *image,
                               const uint16_t *weights, int use_graph) {
  mkc_cuda_kernel *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->g = g;
  b->dev = *dev;
  if (!b->dev.cooperative) {
    fprintf(stderr,
            "mkc: error: cuda: %s cannot launch cooperative kernels: the megakernel needs every "
            "block resident\n",
            b->dev.name);
    free(b);
    return NULL;
  }
  if ((int)g->smem_bytes > b->dev.smem_optin) {
    fprintf(
        stderr,
        "mkc: error: cuda: the kernel needs %zu bytes of shared memory per block; %s allows %d\n",
        g->smem_bytes, b->dev.name, b->dev.smem_optin);
    free(b);
    return NULL;
  }
  CU_CHECK(DevicePrimaryCtxRetain(&b->ctx, b->dev.dev));
  CU_CHECK(CtxSetCurrent(b->ctx));
  CU_CHECK(ModuleLoadData(&b->module, image));
  CU_CHECK(ModuleGetFunction(&b->step, b->module, "mkc_step"));
  if (g->smem_bytes > 48 * 1024)
    CU_CHECK(FuncSetAttribute(b->step, MKC_CU_FUNC_MAX_DYNAMIC_SHARED, (int)g->smem_bytes));
  int per_sm = 0;
  CU_CHECK(OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, b->step, g->threads, g->smem_bytes));
  if (per_sm < 1) {
    fprintf(stderr, "mkc: error: cuda: not one block of mkc_step fits on an SM of %s\n",
            b->dev.name);
    goto fail;
  }
  int resident = per_sm * b->dev.sm_count; /* the most a cooperative grid may take */
  if (resident > MKC_MAX_BLOCKS) resident = MKC_MAX_BLOCKS;
  /* The grid: as many as fit, up to the kernel's plan per SM (fewer registers than planned do
   * not grow it; MKC_CUDA_BLOCKS may) */
  if (g->blocks_per_sm > 0 && per_sm > g->blocks_per_sm) per_sm = g->blocks_per_sm;
  b->blocks = per_sm * b->dev.sm_count;
  if (b->blocks > resident) b->blocks = resident;
  if (grid_override(&b->blocks, resident) != 0) goto fail;
  CU_CHECK(StreamCreate(&b->stream, MKC_CU_STREAM_NON_BLOCKING));
  size_t wbytes = g->weight_elems * sizeof(uint16_t),
         sbytes = (g->scratch_floats ? g->scratch_floats : 1) * 4,
         kbytes = g->kv_bytes ? g->kv_bytes : 4;
  CU_CHECK(MemAlloc(&b->weights, wbytes ? wbytes : 2));
  CU_CHECK(MemAlloc(&b->scratch, sbytes));
  CU_CHECK(MemAlloc(&b->kv, kbytes));
  CU_CHECK(MemAlloc(&b->state, n_states(g) * sizeof(mkc_state)));
  /* Every write to the session's memory goes on its stream, ordered with
   * the steps: the legacy NULL stream, where cuMemsetD8 and cuMemcpyHtoD run
   * and return before the device is done, does not synchronize with a
   * non-blocking stream. From pageable memory the upload is staged before the
   * call returns; the synchronization reports a failed setup here, and leaves
   * the stream empty for the capture. */
  if (wbytes) CU_CHECK(MemcpyHtoDAsync(b->weights, weights, wbytes, b->stream));
  /* Zeroed: padding in scratch must read as zero (codegen/buffers.lua). */
  CU_CHECK(MemsetD8Async(b->scratch, 0, sbytes, b->stream));
  CU_CHECK(MemsetD8Async(b->kv, 0, kbytes, b->stream));
  CU_CHECK(MemsetD8Async(b->state, 0, n_states(g) * sizeof(mkc_state), b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  b->args[0] = &b->weights;
  b->args[1] = &b->scratch;
  b->args[2] = &b->kv;
  b->args[3] = &b->state;
  if (use_graph) capture(b);
  return b;
fail:
  mkc_cuda_close(b);
  return NULL;
}

int mkc_cuda_step(mkc_cuda_kernel *b, mkc_state *st) {
  /* round_max .. n_fixed and inputs[] are adjacent in mkc_state: one copy in per state (a slot
   * kernel's each; an idle slot's n_inputs 0 is copied too). From pageable memory a copy is
   * staged before the call returns, so one buffer serves them all. */
  enum { HEAD = (offsetof(mkc_state, inputs) - offsetof(mkc_state, round_max)) / sizeof(int) };
  int staged[HEAD + MKC_CHUNK_CAP];
  int n = (int)n_states(b->g);
  for (int s = 0; s < n; s++) {
    memcpy(staged, &st[s].round_max, HEAD * sizeof(int));
    memcpy(staged + HEAD, st[s].inputs, (size_t)st[s].n_inputs * sizeof *st->inputs);
    CU_CHECK(MemcpyHtoDAsync(b->state + s * sizeof(mkc_state) + offsetof(mkc_state, round_max),
                             staged, (HEAD + (size_t)st[s].n_inputs) * sizeof(int), b->stream));
  }
  if (b->graph_exec)
    CU_CHECK(GraphLaunch(b->graph_exec, b->stream));
  else if (launch(b) != 0)
    return -1;
  /* what the kernel writes: everything above the inputs (mkc_state.h), the rounds only when run */
  int rounds = st->round_max > 1 ? st->round_max : 0;
  for (int s = 0; s < n; s++)
    CU_CHECK(MemcpyDtoHAsync(&st[s], b->state + s * sizeof(mkc_state),
                             offsetof(mkc_state, rounds) + rounds * sizeof(mkc_round), b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  return 0;
fail:
  return -1;
}

/* Reads, too, are on the session's stream, after its steps. */
int mkc_cuda_read_scratch(mkc_cuda_kernel *b, size_t offset, size_t n, float *host) {
  CU_CHECK(
      MemcpyDtoHAsync(host, b->scratch + offset * sizeof(float), n * sizeof(float), b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  return 0;
fail:
  return -1;
}

int mkc_cuda_write_scratch(mkc_cuda_kernel *b, size_t offset, size_t n, const float *host) {
  CU_CHECK(
      MemcpyHtoDAsync(b->scratch + offset * sizeof(float), host, n * sizeof(float), b->stream));
  CU_CHECK(StreamSynchronize(b->stream)); /* host may be freed on return */
  return 0;
fail:
  return -1;
}

int mkc_cuda_read_kv(mkc_cuda_kernel *b, void *host) {
  CU_CHECK(MemcpyDtoHAsync(host, b->kv, b->g->kv_bytes, b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  return 0;
fail:
  return -1;
}

/* On the stream: after the last step, before the next one's inputs. */
int mkc_cuda_reset_state(mkc_cuda_kernel *b) {
  CU_CHECK(MemsetD8Async(b->state, 0, n_states(b->g) * sizeof(mkc_state), b->stream));
  return 0;
fail:
  return -1;
}

int mkc_cuda_set_pos(mkc_cuda_kernel *b, int slot, int pos) {
  CU_CHECK(MemcpyHtoDAsync(b->state + slot * sizeof(mkc_state) + offsetof(mkc_state, pos), &pos,
                           sizeof pos, b->stream));
  CU_CHECK(StreamSynchronize(b->stream)); /* pos is on this stack frame */
  return 0;
fail:
  return -1;
}

int mkc_cuda_write_sampling(mkc_cuda_kernel *b, const mkc_state *st) {
  for (size_t s = 0; s < n_states(b->g); s++)
    CU_CHECK(MemcpyHtoDAsync(b->state + s * sizeof(mkc_state) + offsetof(mkc_state, sampling),
                             &st[s].sampling, sizeof st->sampling, b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  return 0;
fail:
  return -1;
}

CUdeviceptr mkc_cuda_store_alloc(mkc_cuda_kernel *b, size_t bytes) {
  CUdeviceptr p = 0;
  CU_CHECK(MemAlloc(&p, bytes ? bytes : 4));
  /* Zeroed, as the cpu backend's: rows a ring does not hold read as zeros, not as garbage. */
  CU_CHECK(MemsetD8Async(p, 0, bytes ? bytes : 4, b->stream));
  return p;
fail:
  if (p) CU_WARN(MemFree(p));
  return 0;
}

typedef struct copy_ends {
  mkc_cuda_kernel *b;
  CUdeviceptr dst_store, src_store;
} copy_ends;

static CUdeviceptr arena(const copy_ends *e, int which, CUdeviceptr store) {
  return which == MKC_KV_ARENA_STORE   ? store
         : which == MKC_KV_ARENA_CACHE ? e->b->kv
                                       : e->b->scratch;
}

static int copy_piece(void *ctx, int dst_arena, size_t dst, int src_arena, size_t src,
                      size_t bytes) {
  copy_ends *e = ctx;
  CU_CHECK(MemcpyDtoDAsync(arena(e, dst_arena, e->dst_store) + dst,
                           arena(e, src_arena, e->src_store) + src, bytes, e->b->stream));
  return 0;
fail:
  return -1;
}

int mkc_cuda_store_copy(mkc_cuda_kernel *b, const mkc_kv_slot *at, CUdeviceptr dst, int dst_rows,
                        int dst_at, CUdeviceptr src, int src_rows, int src_at, int n) {
  copy_ends e = {b, dst, src};
  return mkc_kv_rows_copy(b->g, at, dst_rows, dst_at, src_rows, src_at, n, copy_piece, &e);
}

int mkc_cuda_store_read(mkc_cuda_kernel *b, CUdeviceptr store, size_t bytes, void *host) {
  if (bytes) CU_CHECK(MemcpyDtoHAsync(host, store, bytes, b->stream));
  CU_CHECK(StreamSynchronize(b->stream));
  return 0;
fail:
  return -1;
}

int mkc_cuda_store_write(mkc_cuda_kernel *b, CUdeviceptr store, size_t bytes, const void *host) {
  if (bytes) CU_CHECK(MemcpyHtoDAsync(store, host, bytes, b->stream));
  CU_CHECK(StreamSynchronize(b->stream)); /* host may go once this returns */
  return 0;
fail:
  return -1;
}

void mkc_cuda_store_free(mkc_cuda_kernel *b, CUdeviceptr store) {
  /* Copies queued from or to it finish first. */
  CU_WARN(StreamSynchronize(b->stream));
  CU_WARN(MemFree(store));
}

int mkc_cuda_blocks(const mkc_cuda_kernel *b) { return b->blocks; }
int mkc_cuda_graph_in_use(const mkc_cuda_kernel *b) { return b->graph_exec != NULL; }

double mkc_cuda_copy_bandwidth(mkc_cuda_kernel *b, size_t bytes) {
  CUdeviceptr src = 0, dst = 0;
  double best = -1;
  CU_CHECK(MemAlloc(&src, bytes));
  CU_CHECK(MemAlloc(&dst, bytes));
  /* On the session's stream, like everything else of the session's. */
  CU_CHECK(MemsetD8Async(src, 1, bytes, b->stream));
  for (int i = 0; i < 6; i++) {
    CU_CHECK(StreamSynchronize(b->stream));
    double t0 = mkc_seconds();
    CU_CHECK(MemcpyDtoDAsync(dst, src, bytes, b->stream));
    CU_CHECK(StreamSynchronize(b->stream));
    double gbs = 2.0 * (double)bytes / (mkc_seconds() - t0) / 1e9;
    if (i > 0 && gbs > best) best = gbs; /* the first run warms up */
  }
fail:
  /* Nothing queued outlives the buffers. */
  CU_WARN(StreamSynchronize(b->stream));
  if (src) CU_WARN(MemFree(src));
  if (dst) CU_WARN(MemFree(dst));
  return best;
}

void mkc_cuda_close(mkc_cuda_kernel *b) {
  if (!b) return;
  /* Work a failed step left queued finishes before its memory goes. */
  if (b->stream) CU_WARN(StreamSynchronize(b->stream));
  if (b->graph_exec) CU_WARN(GraphExecDestroy(b->graph_exec));
  if (b->graph) CU_WARN(GraphDestroy(b->graph));
  if (b->stream) CU_WARN(StreamDestroy(b->stream));
  if (b->weights) CU_WARN(MemFree(b->weights));
  if (b->scratch) CU_WARN(MemFree(b->scratch));
  if (b->kv) CU_WARN(MemFree(b->kv));
  if (b->state) CU_WARN(MemFree(b->state));
  if (b->module) CU_WARN(ModuleUnload(b->module));
  if (b->ctx) CU_WARN(DevicePrimaryCtxRelease(b->dev.dev));
  free(b);
}
