/* The cuda backend behind the backend interface (backend/backend.h): the
 * kernel on the device (backend.c), compiled through the kernel cache or
 * loaded from an image, with host copies of what tests and tools read. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kv_rows.h"
#include "kcache.h"
#include "nvrtc.h"

typedef struct cuda_backend {
  mkc_backend base;
  const mkc_graph *g;
  mkc_cuda_kernel *kernel;
  float *host_logits; /* [g->step_rows][g->logits_stride]: the last step's, copied on first use */
  int logits_copied;
  void *host_kv; /* g->kv_bytes, copied at each ask */
  char describe[256];
} cuda_backend;

static cuda_backend *cuda(mkc_backend *b) { return (cuda_backend *)b; }

static int step(mkc_backend *b, mkc_state *st) {
  cuda_backend *c = cuda(b);
  c->logits_copied = 0;
  return mkc_cuda_step(c->kernel, st);
}

static const float *logits(mkc_backend *b, int t) {
  cuda_backend *c = cuda(b);
  const mkc_graph *g = c->g;
  /* One copy of every row of the last step, on first use. */
  if (!c->logits_copied &&
      mkc_cuda_read_scratch(c->kernel, g->logits_offset, (size_t)g->step_rows * g->logits_stride,
                            c->host_logits) != 0)
    return NULL;
  c->logits_copied = 1;
  return c->host_logits + (size_t)t * g->logits_stride;
}

static const void *kv(mkc_backend *b) {
  cuda_backend *c = cuda(b);
  if (!c->host_kv) c->host_kv = malloc(c->g->kv_bytes ? c->g->kv_bytes : 4);
  return c->host_kv && mkc_cuda_read_kv(c->kernel, c->host_kv) == 0 ? c->host_kv : NULL;
}

static void reset(mkc_backend *b) { mkc_cuda_reset_state(cuda(b)->kernel); }

static int rewind_to(mkc_backend *b, int pos) { return mkc_cuda_set_pos(cuda(b)->kernel, 0, pos); }

static int set_slot_pos(mkc_backend *b, int slot, int pos) {
  return mkc_cuda_set_pos(cuda(b)->kernel, slot, pos);
}

static int read_scratch(mkc_backend *b, size_t offset, size_t n, float *dst) {
  return mkc_cuda_read_scratch(cuda(b)->kernel, offset, n, dst);
}

static int write_scratch(mkc_backend *b, size_t offset, size_t n, const float *src) {
  return mkc_cuda_write_scratch(cuda(b)->kernel, offset, n, src);
}

/* The rows at the feature's stride, in one copy on the session's stream. */
static int write_feature(mkc_backend *b, const float *rows, int n, int T) {
  const mkc_graph *g = cuda(b)->g;
  float *staged = calloc((size_t)T * g->feature_stride, sizeof *staged);
  if (!staged) {
    fprintf(stderr, "mkc: error: out of memory for a step's feature\n");
    return -1;
  }
  for (int t = 0; t < T; t++)
    memcpy(staged + (size_t)t * g->feature_stride, rows + (size_t)t * n, (size_t)n * sizeof *rows);
  int rc = mkc_cuda_write_scratch(cuda(b)->kernel, g->feature_offset, (size_t)T * g->feature_stride,
                                  staged);
  free(staged);
  return rc;
}

static int hidden(mkc_backend *b, int slot, int t, float *dst) {
  const mkc_graph *g = cuda(b)->g;
  return read_scratch(b, mkc_graph_hidden_at(g, slot, t), (size_t)g->dim, dst);
}

static int write_sampling(mkc_backend *b, const mkc_state *st) {
  return mkc_cuda_write_sampling(cuda(b)->kernel, st);
}

static double copy_bandwidth(mkc_backend *b, size_t bytes) {
  return mkc_cuda_copy_bandwidth(cuda(b)->kernel, bytes);
}

/* A snapshot's store (backend/kv_rows.h) in device memory. Its functions are
 * deliberately alike the other backends' (rows of the interface). */
typedef struct cuda_store {
  int rows;
  size_t bytes;
  CUdeviceptr mem;
} cuda_store;

static void *store_open(mkc_backend *b, int rows) {
  cuda_store *st = calloc(1, sizeof *st);
  if (!st) {
    fprintf(stderr, "mkc: error: out of memory for a KV snapshot\n");
    return NULL;
  }
  st->rows = rows;
  st->bytes = mkc_kv_store_bytes(cuda(b)->g, rows);
  st->mem = mkc_cuda_store_alloc(cuda(b)->kernel, st->bytes);
  if (!st->mem) {
    free(st);
    return NULL;
  }
  return st;
}

static int slot_copy(mkc_backend *b, const mkc_kv_slot *at, void *dst, int dst_at, const void *src,
                     int src_at, int n) {
  const cuda_store *d = dst, *s = src;
  return mkc_cuda_store_copy(cuda(b)->kernel, at, d ? d->mem : 0, d ? d->rows : 0, dst_at,
                             s ? s->mem : 0, s ? s->rows : 0, src_at, n);
}

static int store_copy(mkc_backend *b, void *dst, int dst_at, const void *src, int src_at, int n) {
  return slot_copy(b, NULL, dst, dst_at, src, src_at, n);
}

static void *store_read(mkc_backend *b, const void *store, size_t *bytes) {
  const cuda_store *st = store;
  void *host = malloc(st->bytes ? st->bytes : 1);
  if (!host) {
    fprintf(stderr, "mkc: error: out of memory reading a KV snapshot\n");
    return NULL;
  }
  if (mkc_cuda_store_read(cuda(b)->kernel, st->mem, st->bytes, host) != 0) {
    free(host);
    return NULL;
  }
  *bytes = st->bytes;
  return host;
}

static int store_write(mkc_backend *b, void *store, const void *host, size_t bytes) {
  cuda_store *st = store;
  if (bytes != st->bytes) {
    fprintf(stderr, "mkc: error: %zu bytes of KV rows for a store of %zu\n", bytes, st->bytes);
    return -1;
  }
  return mkc_cuda_store_write(cuda(b)->kernel, st->mem, bytes, host);
}

static void store_close(mkc_backend *b, void *store) {
  cuda_store *st = store;
  mkc_cuda_store_free(cuda(b)->kernel, st->mem);
  free(st);
}

static const char *describe(const mkc_backend *b) { return ((const cuda_backend *)b)->describe; }

static void close_cuda(mkc_backend *b) {
  cuda_backend *c = cuda(b);
  mkc_cuda_close(c->kernel);
  free(c->host_logits);
  free(c->host_kv);
  free(c);
}

/* This backend's row of the interface: deliberately alike the other backends'. */
static const mkc_backend_ops cuda_ops = {
    .name = "cuda",
    .step = step,
    .rounds = 1,
    .logits = logits,
    .kv = kv,
    .reset = reset,
    .rewind = rewind_to,
    .set_slot_pos = set_slot_pos,
    .write_sampling = write_sampling,
    .read_scratch = read_scratch,
    .write_scratch = write_scratch,
    .write_feature = write_feature,
    .hidden = hidden,
    .copy_bandwidth = copy_bandwidth,
    .store_open = store_open,
    .store_copy = store_copy,
    .slot_copy = slot_copy,
    .store_read = store_read,
    .store_write = store_write,
    .store_close = store_close,
    .describe = describe,
    .close = close_cuda,
};

/* The kernel in image on dev, with the arena of weights (which the caller
 * frees: it is on the device now). */
static cuda_backend *start(const mkc_graph *g, const mkc_cuda_device *dev, const void *image,
                           const uint16_t *weights) {
  const char *env = getenv("MKC_CUDA_GRAPH");
  int use_graph = !(env && strcmp(env, "0") == 0);
  cuda_backend *c = calloc(1, sizeof *c);
  if (!c) {
    fprintf(stderr, "mkc: error: out of memory opening a session\n");
    return NULL;
  }
  c->base.ops = &cuda_ops;
  c->g = g;
  c->kernel = mkc_cuda_open(g, dev, image, weights, use_graph);
  if (!c->kernel) goto fail;
  c->host_logits = malloc((size_t)g->step_rows * g->logits_stride * sizeof *c->host_logits);
  if (!c->host_logits) {
    fprintf(stderr, "mkc: error: out of memory opening a session\n");
    goto fail;
  }
  snprintf(c->describe, sizeof c->describe, "%d blocks x %d threads, %s",
           mkc_cuda_blocks(c->kernel), g->threads,
           mkc_cuda_graph_in_use(c->kernel) ? "CUDA graph replay" : "direct cooperative launches");
  return c;
fail:
  close_cuda(&c->base);
  return NULL;
}

mkc_backend *mkc_cuda_backend_open(const mkc_graph *g, const mkc_kernel_src *src,
                                   const mkc_weights *w, const mkc_cuda_device *dev) {
  /* Before the compile: a driver of an older CUDA major version would refuse its cubin. */
  char why[512];
  int nvrtc = mkc_nvrtc_version(why, sizeof why);
  if (nvrtc < 0) {
    fprintf(stderr, "mkc: error: nvrtc: %s\n", why);
    return NULL;
  }
  if (mkc_nvrtc_check_driver(nvrtc, dev->driver_version, 0, NULL) != 0) return NULL;
  uint16_t *weights = mkc_weights_arena(w, g);
  if (!weights) return NULL;
  mkc_compiled k;
  if (mkc_kcache_compile(src->source, src->file_name, dev->arch, dev->driver_version, &k) != 0) {
    free(weights);
    return NULL;
  }
  cuda_backend *c = start(g, dev, k.cubin, weights);
  free(weights);
  if (c)
    snprintf(c->describe + strlen(c->describe), sizeof c->describe - strlen(c->describe),
             ", %d registers, %d B spilled%s", k.ptxas.registers, k.ptxas.spill_stores,
             k.from_cache ? ", from the kernel cache" : "");
  mkc_compiled_free(&k);
  return c ? &c->base : NULL;
}

mkc_backend *mkc_cuda_backend_open_image(const mkc_graph *g, const mkc_weights *w,
                                         const mkc_cuda_device *dev, const void *image) {
  uint16_t *weights = mkc_weights_arena(w, g);
  if (!weights) return NULL;
  cuda_backend *c = start(g, dev, image, weights);
  free(weights);
  return c ? &c->base : NULL;
}
