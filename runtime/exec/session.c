/* Sessions on the cpu backend (the emitted megakernel on the SIMT emulator)
 * and on the ref backend (the reference executor behind the same step
 * contract). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/backend.h"
#include "backend/cuda/backend.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/kcache.h"
#include "mkc_state.h"
#include "reference.h"

struct mkc_session {
  enum mkc_backend_kind kind;
  const mkc_graph *g;
  int blocks;
  /* cpu */
  mkc_cpu_kernel *kernel;
  uint16_t *weights;
  float *scratch;
  void *kv; /* g->kv_bytes */
  mkc_state *state;
  /* cuda: host copies of what tests and tools read */
  mkc_cuda_backend *cuda;
  float *host_logits;
  void *host_kv;
  int t_read; /* logits rows copied since the last step */
  char describe[256];
  /* ref */
  mkc_ref *ref;
  double *ref_logits; /* [t_max][vocab] */
  float *logits;      /* [t_max][vocab]: the ref's logits as floats */
};

const char *mkc_status_name(int status) {
  switch (status) {
  case MKC_STATUS_OK:
    return "ok";
  case MKC_STATUS_CTX_FULL:
    return "context full";
  case MKC_STATUS_BAD_INPUT:
    return "bad input";
  case MKC_STATUS_NONFINITE:
    return "non-finite logits";
  default:
    return "unknown status";
  }
}

static int cuda_open(mkc_session *s, const void *image);

mkc_session *mkc_session_open(enum mkc_backend_kind kind, const mkc_graph *g,
                              const mkc_kernel_src *src, const mkc_weights *w, int blocks) {
  mkc_session *s = calloc(1, sizeof *s);
  if (!s) goto oom;
  s->kind = kind;
  s->g = g;
  s->blocks = blocks > 0 ? blocks : 4;
  if (s->blocks > MKC_MAX_BLOCKS) {
    fprintf(stderr, "mkc: error: %d blocks: the kernel is planned for at most %d\n", s->blocks,
            MKC_MAX_BLOCKS);
    goto fail;
  }
  if (g->t_max < 1 || g->t_max > MKC_T_CAP) {
    fprintf(stderr, "mkc: error: the plan takes %d inputs per step, expected 1..%d\n", g->t_max,
            MKC_T_CAP);
    goto fail;
  }
  if (kind == MKC_BACKEND_REF) {
    snprintf(s->describe, sizeof s->describe, "reference executor, float64");
    s->ref = mkc_ref_open(g, w);
    s->ref_logits = malloc((size_t)g->t_max * g->vocab * sizeof *s->ref_logits);
    s->logits = malloc((size_t)g->t_max * g->vocab * sizeof *s->logits);
    if (!s->ref) goto fail;
    if (!s->ref_logits || !s->logits) goto oom;
    return s;
  }
  s->weights = mkc_weights_arena(w, g);
  if (!s->weights) goto fail;
  if (kind == MKC_BACKEND_CUDA) {
    mkc_cuda_device dev;
    char why[512];
    if (mkc_cuda_device_get(&dev, why, sizeof why) != 0) {
      fprintf(stderr, "mkc: error: %s; use --backend cpu\n", why);
      goto fail;
    }
    mkc_compiled c;
    if (mkc_kcache_compile(src->source, src->file_name, dev.arch, &c) != 0) goto fail;
    if (cuda_open(s, c.cubin) != 0) {
      mkc_compiled_free(&c);
      goto fail;
    }
    snprintf(s->describe + strlen(s->describe), sizeof s->describe - strlen(s->describe),
             ", %d registers, %d B spilled%s", c.ptxas.registers, c.ptxas.spill_stores,
             c.from_cache ? ", from the kernel cache" : "");
    mkc_compiled_free(&c);
    return s;
  }
  /* Zeroed: row padding in scratch must read as zero (see codegen/buffers.lua). */
  s->scratch = calloc(g->scratch_floats ? g->scratch_floats : 1, sizeof *s->scratch);
  s->kv = calloc(g->kv_bytes ? g->kv_bytes : 4, 1);
  s->state = calloc(1, sizeof *s->state);
  if (!s->scratch || !s->kv || !s->state) goto oom;
  char templates[4200];
  snprintf(templates, sizeof templates, "%s/templates", mkc_home());
  s->kernel = mkc_cpu_kernel_open(src->source, src->file_name, templates);
  if (!s->kernel) goto fail;
  snprintf(s->describe, sizeof s->describe, "%d blocks x %d threads on the SIMT emulator",
           s->blocks, g->threads);
  return s;
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
fail:
  mkc_session_close(s);
  return NULL;
}

static int cuda_open(mkc_session *s, const void *image) {
  const mkc_graph *g = s->g;
  const char *env = getenv("MKC_CUDA_GRAPH");
  int use_graph = !(env && strcmp(env, "0") == 0);
  s->kind = MKC_BACKEND_CUDA;
  s->cuda = mkc_cuda_open(g, image, s->weights, use_graph);
  s->state = calloc(1, sizeof *s->state);
  s->host_logits = malloc((size_t)g->t_max * g->logits_stride * sizeof *s->host_logits);
  if (!s->cuda || !s->state || !s->host_logits) return -1;
  free(s->weights); /* on the device now */
  s->weights = NULL;
  snprintf(s->describe, sizeof s->describe, "%d blocks x %d threads, %s", mkc_cuda_blocks(s->cuda),
           g->threads,
           mkc_cuda_graph_in_use(s->cuda) ? "CUDA graph replay" : "direct cooperative launches");
  return 0;
}

mkc_session *mkc_session_open_image(const mkc_graph *g, const mkc_weights *w, const void *image) {
  mkc_session *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->g = g;
  s->weights = mkc_weights_arena(w, g);
  if (!s->weights || cuda_open(s, image) != 0) {
    mkc_session_close(s);
    return NULL;
  }
  return s;
}

const char *mkc_session_backend(const mkc_session *s) {
  return s->kind == MKC_BACKEND_CUDA ? "cuda" : s->kind == MKC_BACKEND_REF ? "ref" : "cpu";
}

const char *mkc_session_describe(const mkc_session *s) { return s->describe; }

/* The kernel's accept rule (templates/accept.cuh) over the ref's choices. */
static int ref_step(mkc_session *s, const int *inputs, int T, int f, mkc_step_result *r) {
  const mkc_graph *g = s->g;
  int pos = mkc_ref_pos(s->ref), choice[MKC_T_CAP];
  if (pos + T > g->max_ctx) {
    r->status = MKC_STATUS_CTX_FULL;
    return 0;
  }
  for (int t = 0; t < T; t++)
    if (inputs[t] < 0 || inputs[t] >= g->vocab) {
      r->status = MKC_STATUS_BAD_INPUT;
      return 0;
    }
  for (int t = 0; t < T; t++) {
    double *lg = s->ref_logits + (size_t)t * g->vocab;
    if (mkc_ref_step(s->ref, inputs[t], lg) != 0) {
      mkc_ref_truncate(s->ref, pos);
      return -1;
    }
    for (int i = 0; i < g->vocab; i++) s->logits[(size_t)t * g->vocab + i] = (float)lg[i];
    choice[t] = mkc_argmax(lg, g->vocab);
  }
  int a = f;
  while (a + 1 < T && inputs[a + 1] == choice[a]) a++;
  for (int t = f; t <= a; t++) r->out[t - f] = choice[t];
  r->n_out = a - f + 1;
  r->n_accepted = a - f;
  r->status = MKC_STATUS_OK;
  mkc_ref_truncate(s->ref, pos + a + 1);
  return 0;
}

int mkc_session_step(mkc_session *s, const int *inputs, int n_inputs, int n_fixed,
                     mkc_step_result *r) {
  memset(r, 0, sizeof *r);
  if (n_inputs < 1 || n_inputs > s->g->t_max || n_fixed < 0 || n_fixed >= n_inputs) {
    r->status = MKC_STATUS_BAD_INPUT;
    return 0;
  }
  if (s->kind == MKC_BACKEND_REF) return ref_step(s, inputs, n_inputs, n_fixed, r);
  mkc_state *st = s->state;
  s->t_read = 0;
  if (s->kind == MKC_BACKEND_CUDA) {
    if (mkc_cuda_step(s->cuda, inputs, n_inputs, n_fixed, st) != 0) return -1;
    goto read_back;
  }
  st->n_inputs = n_inputs;
  st->n_fixed = n_fixed;
  memcpy(st->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  if (mkc_cpu_kernel_launch(s->kernel, s->blocks, s->g->threads, s->g->smem_bytes, s->weights,
                            s->scratch, s->kv, st) != 0)
    return -1;
read_back:
  r->status = st->status;
  if (st->status != MKC_STATUS_OK) return 0;
  r->n_out = st->n_out;
  r->n_accepted = st->n_accepted;
  memcpy(r->out, st->out_tokens, (size_t)st->n_out * sizeof *r->out);
  return 0;
}

int mkc_session_pos(const mkc_session *s) {
  return s->kind == MKC_BACKEND_REF ? mkc_ref_pos(s->ref) : s->state->pos;
}

const float *mkc_session_logits(mkc_session *s, int t) {
  if (s->kind == MKC_BACKEND_REF) return s->logits + (size_t)t * s->g->vocab;
  if (s->kind == MKC_BACKEND_CUDA) {
    /* One copy of every row of the last step, on first use. */
    if (!s->t_read &&
        mkc_cuda_read_scratch(s->cuda, s->g->logits_offset,
                              (size_t)s->g->t_max * s->g->logits_stride, s->host_logits) != 0)
      return NULL;
    s->t_read = 1;
    return s->host_logits + (size_t)t * s->g->logits_stride;
  }
  return s->scratch + s->g->logits_offset + (size_t)t * s->g->logits_stride;
}

const void *mkc_session_kv(mkc_session *s) {
  if (s->kind == MKC_BACKEND_CUDA) {
    if (!s->host_kv) s->host_kv = malloc(s->g->kv_bytes ? s->g->kv_bytes : 4);
    return s->host_kv && mkc_cuda_read_kv(s->cuda, s->host_kv) == 0 ? s->host_kv : NULL;
  }
  return s->kind == MKC_BACKEND_CPU ? s->kv : NULL;
}

struct mkc_ref *mkc_session_ref(mkc_session *s) {
  return s->kind == MKC_BACKEND_REF ? s->ref : NULL;
}

void mkc_session_reset(mkc_session *s) {
  if (s->kind == MKC_BACKEND_REF) {
    mkc_ref_truncate(s->ref, 0);
  } else if (s->kind == MKC_BACKEND_CUDA) {
    memset(s->state, 0, sizeof *s->state);
    mkc_cuda_reset_state(s->cuda);
  } else {
    memset(s->state, 0, sizeof *s->state);
  }
}

double mkc_session_copy_bandwidth(mkc_session *s, size_t bytes) {
  return s->kind == MKC_BACKEND_CUDA ? mkc_cuda_copy_bandwidth(s->cuda, bytes) : -1.0;
}

void mkc_session_close(mkc_session *s) {
  if (!s) return;
  if (s->kernel) mkc_cpu_kernel_close(s->kernel);
  mkc_cuda_close(s->cuda);
  free(s->host_logits);
  free(s->host_kv);
  free(s->weights);
  free(s->scratch);
  free(s->kv);
  free(s->state);
  if (s->ref) mkc_ref_close(s->ref);
  free(s->ref_logits);
  free(s->logits);
  free(s);
}
