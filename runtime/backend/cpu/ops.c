/* The cpu backend behind the backend interface (backend/backend.h): the
 * emitted kernel, built and loaded by backend.c, stepped on the SIMT emulator
 * over host buffers. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

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

static const float *logits(mkc_backend *b, int t) {
  cpu_backend *c = cpu(b);
  return c->scratch + c->g->logits_offset + (size_t)t * c->g->logits_stride;
}

static const void *kv(mkc_backend *b) { return cpu(b)->kv; }

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
    .read_scratch = read_scratch,
    .logits = logits,
    .kv = kv,
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
