/* Sessions on the cpu backend (the emitted megakernel on the SIMT emulator)
 * and on the ref backend (the reference executor behind the same step
 * contract). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "mkc_state.h"
#include "reference.h"

struct mkc_session {
  enum mkc_backend_kind kind;
  const mkc_graph *g;
  int blocks;
  /* cpu */
  mkc_cpu_kernel *kernel;
  uint16_t *weights;
  float *scratch, *kv;
  mkc_state *state;
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
    s->ref = mkc_ref_open(g, w);
    s->ref_logits = malloc((size_t)g->t_max * g->vocab * sizeof *s->ref_logits);
    s->logits = malloc((size_t)g->t_max * g->vocab * sizeof *s->logits);
    if (!s->ref) goto fail;
    if (!s->ref_logits || !s->logits) goto oom;
    return s;
  }
  s->weights = mkc_weights_arena(w, g);
  if (!s->weights) goto fail;
  /* Zeroed: row padding in scratch must read as zero (see codegen/buffers.lua). */
  s->scratch = calloc(g->scratch_floats ? g->scratch_floats : 1, sizeof *s->scratch);
  s->kv = calloc(g->kv_floats ? g->kv_floats : 1, sizeof *s->kv);
  s->state = calloc(1, sizeof *s->state);
  if (!s->scratch || !s->kv || !s->state) goto oom;
  char templates[4200];
  snprintf(templates, sizeof templates, "%s/templates", mkc_home());
  s->kernel = mkc_cpu_kernel_open(src->source, src->file_name, templates);
  if (!s->kernel) goto fail;
  return s;
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
fail:
  mkc_session_close(s);
  return NULL;
}

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
  st->n_inputs = n_inputs;
  st->n_fixed = n_fixed;
  memcpy(st->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  if (mkc_cpu_kernel_launch(s->kernel, s->blocks, s->g->threads, s->g->smem_bytes, s->weights,
                            s->scratch, s->kv, st) != 0)
    return -1;
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

const float *mkc_session_logits(const mkc_session *s, int t) {
  if (s->kind == MKC_BACKEND_REF) return s->logits + (size_t)t * s->g->vocab;
  return s->scratch + s->g->logits_offset + (size_t)t * s->g->logits_stride;
}

const float *mkc_session_kv(const mkc_session *s) {
  return s->kind == MKC_BACKEND_CPU ? s->kv : NULL;
}

void mkc_session_close(mkc_session *s) {
  if (!s) return;
  if (s->kernel) mkc_cpu_kernel_close(s->kernel);
  free(s->weights);
  free(s->scratch);
  free(s->kv);
  free(s->state);
  if (s->ref) mkc_ref_close(s->ref);
  free(s->ref_logits);
  free(s->logits);
  free(s);
}
