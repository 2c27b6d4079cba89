/* The cpu backend behind the backend interface (backend/backend.h): the
 * emitted kernel, built and loaded by backend.c, stepped on the SIMT emulator
 * over host buffers. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kv_rows.h"

typedef struct cpu_backend {
  mkc_backend base;
  const mkc_graph *g;
  int blocks;
  mkc_cpu_kernel *kernel;
  uint16_t *weights; /* [g->weight_elems] bf16: the kernel's arena */
  float *scratch;    /* [g->scratch_floats], the logits among them */
  void *kv;          /* g->kv_bytes */
  char describe[128];
} cpu_backend;

static cpu_backend *cpu(mkc_backend *b) { return (cpu_backend *)b; }

static int step(mkc_backend *b, mkc_state *st) {
  cpu_backend *c = cpu(b);
  return mkc_cpu_kernel_launch(c->kernel, c->blocks, c->g->threads, c->g->smem_bytes, c->weights,
                               c->scratch, c->kv, st);
}

static int read_scratch(mkc_backend *b, size_t offset, size_t n, float *dst) {
  memcpy(dst, cpu(b)->scratch + offset, n * sizeof *dst);
  return 0;
}

static int write_scratch(mkc_backend *b, size_t offset, size_t n, const float *src) {
  memcpy(cpu(b)->scratch + offset, src, n * sizeof *src);
  return 0;
}

static int write_feature(mkc_backend *b, const float *rows, int n, int T) {
  cpu_backend *c = cpu(b);
  for (int t = 0; t < T; t++)
    memcpy(c->scratch + c->g->feature_offset + (size_t)t * c->g->feature_stride,
           rows + (size_t)t * n, (size_t)n * sizeof *rows);
  return 0;
}

static int hidden(mkc_backend *b, int slot, int t, float *dst) {
  const mkc_graph *g = cpu(b)->g;
  return read_scratch(b, mkc_graph_hidden_at(g, slot, t), (size_t)g->dim, dst);
}

static const float *logits(mkc_backend *b, int t) {
  cpu_backend *c = cpu(b);
  return c->scratch + c->g->logits_offset + (size_t)t * c->g->logits_stride;
}

static const void *kv(mkc_backend *b) { return cpu(b)->kv; }

/* A snapshot's store (backend/kv_rows.h): host memory, as the cache is. Its
 * functions are deliberately alike the other backends' (rows of the interface). */
typedef struct cpu_store {
  int rows;
  size_t bytes;
  unsigned char data[];
} cpu_store;

static void *store_open(mkc_backend *b, int rows) {
  size_t bytes = mkc_kv_store_bytes(cpu(b)->g, rows);
  cpu_store *st = calloc(1, sizeof *st + bytes);
  if (!st) {
    fprintf(stderr, "mkc: error: out of memory for a KV snapshot (%zu bytes)\n", bytes);
    return NULL;
  }
  st->rows = rows;
  st->bytes = bytes;
  return st;
}

typedef struct copy_ends {
  cpu_backend *c;
  unsigned char *dst_store;
  const unsigned char *src_store;
} copy_ends;

static int copy_piece(void *ctx, int dst_arena, size_t dst, int src_arena, size_t src,
                      size_t bytes) {
  copy_ends *e = ctx;
  unsigned char *cache = e->c->kv, *scratch = (unsigned char *)e->c->scratch;
  unsigned char *to = dst_arena == MKC_KV_ARENA_STORE   ? e->dst_store
                      : dst_arena == MKC_KV_ARENA_CACHE ? cache
                                                        : scratch;
  const unsigned char *from = src_arena == MKC_KV_ARENA_STORE   ? e->src_store
                              : src_arena == MKC_KV_ARENA_CACHE ? cache
                                                                : scratch;
  memmove(to + dst, from + src, bytes);
  return 0;
}

static int slot_copy(mkc_backend *b, const mkc_kv_slot *at, void *dst, int dst_at, const void *src,
                     int src_at, int n) {
  cpu_store *d = dst;
  const cpu_store *s = src;
  copy_ends e = {cpu(b), d ? d->data : NULL, s ? s->data : NULL};
  return mkc_kv_rows_copy(cpu(b)->g, at, d ? d->rows : 0, dst_at, s ? s->rows : 0, src_at, n,
                          copy_piece, &e);
}

static int store_copy(mkc_backend *b, void *dst, int dst_at, const void *src, int src_at, int n) {
  return slot_copy(b, NULL, dst, dst_at, src, src_at, n);
}

static void *store_read(mkc_backend *b, const void *store, size_t *bytes) {
  const cpu_store *st = store;
  void *copy = malloc(st->bytes ? st->bytes : 1);
  if (!copy) {
    fprintf(stderr, "mkc: error: out of memory reading a KV snapshot\n");
    return NULL;
  }
  memcpy(copy, st->data, st->bytes);
  *bytes = st->bytes;
  return copy;
}

static int store_write(mkc_backend *b, void *store, const void *host, size_t bytes) {
  cpu_store *st = store;
  if (bytes != st->bytes) {
    fprintf(stderr, "mkc: error: %zu bytes of KV rows for a store of %zu\n", bytes, st->bytes);
    return -1;
  }
  memcpy(st->data, host, bytes);
  return 0;
}

static void store_close(mkc_backend *b, void *store) { free(store); }

static const char *describe(const mkc_backend *b) { return ((const cpu_backend *)b)->describe; }

static void close_cpu(mkc_backend *b) {
  cpu_backend *c = cpu(b);
  if (c->kernel) mkc_cpu_kernel_close(c->kernel);
  free(c->weights);
  free(c->scratch);
  free(c->kv);
  free(c);
}

/* This backend's row of the interface: deliberately alike the other backends'. */
static const mkc_backend_ops cpu_ops = {
    .name = "cpu",
    .step = step,
    .rounds = 1,
    .read_scratch = read_scratch,
    .write_scratch = write_scratch,
    .write_feature = write_feature,
    .hidden = hidden,
    .logits = logits,
    .kv = kv,
    .store_open = store_open,
    .store_copy = store_copy,
    .slot_copy = slot_copy,
    .store_read = store_read,
    .store_write = store_write,
    .store_close = store_close,
    .describe = describe,
    .close = close_cpu,
};

mkc_backend *mkc_cpu_backend_open(const mkc_graph *g, const mkc_kernel_src *src,
                                  const mkc_weights *w, int blocks) {
  cpu_backend *c = calloc(1, sizeof *c);
  if (!c) goto oom;
  c->base.ops = &cpu_ops;
  c->g = g;
  c->blocks = blocks;
  c->weights = mkc_weights_arena(w, g);
  if (!c->weights) goto fail;
  /* Zeroed: row padding in scratch must read as zero (see codegen/buffers.lua). */
  c->scratch = calloc(g->scratch_floats ? g->scratch_floats : 1, sizeof *c->scratch);
  c->kv = calloc(g->kv_bytes ? g->kv_bytes : 4, 1);
  if (!c->scratch || !c->kv) goto oom;
  char templates[4200];
  snprintf(templates, sizeof templates, "%s/templates", mkc_home());
  c->kernel = mkc_cpu_kernel_open(src->source, src->file_name, templates);
  if (!c->kernel) goto fail;
  snprintf(c->describe, sizeof c->describe, "%d blocks x %d threads on the SIMT emulator", blocks,
           g->threads);
  return &c->base;
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
fail:
  if (c) close_cpu(&c->base);
  return NULL;
}
