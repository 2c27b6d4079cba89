/* See ref_backend.h. */
#include "ref_backend.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct ref_backend {
  mkc_backend base;
  const mkc_graph *g;
  mkc_ref *ref;
  double *ref_logits; /* [t_max][vocab] */
  float *logits;      /* [t_max][vocab]: the ref's logits as floats */
} ref_backend;

static ref_backend *ref(mkc_backend *b) { return (ref_backend *)b; }

/* The kernel's accept rule (templates/accept.cuh) over the ref's choices, written again
 * on purpose: the ref is the oracle the kernel's accept is checked against. */
static int step(mkc_backend *b, mkc_state *st) {
  ref_backend *r = ref(b);
  const mkc_graph *g = r->g;
  const int *inputs = st->inputs;
  int T = st->n_inputs, f = st->n_fixed, t0 = T > g->t_max ? T - 1 : 0;
  int pos = mkc_ref_pos(r->ref), choice[MKC_T_CAP];
  if (pos + T > g->max_ctx) {
    st->status = MKC_STATUS_CTX_FULL;
    return 0;
  }
  for (int t = 0; t < T; t++)
    if (inputs[t] < 0 || inputs[t] >= g->vocab) {
      st->status = MKC_STATUS_BAD_INPUT;
      return 0;
    }
  /* as the kernel keeps them: the logits from input t0 on (a prompt chunk: its last), at t - t0 */
  for (int t = 0; t < T; t++) {
    int row = t < t0 ? 0 : t - t0;
    double *lg = r->ref_logits + (size_t)row * g->vocab;
    if (mkc_ref_step(r->ref, inputs[t], lg) != 0) {
      mkc_ref_truncate(r->ref, pos);
      return -1;
    }
    if (t < t0) continue;
    for (int i = 0; i < g->vocab; i++) r->logits[(size_t)row * g->vocab + i] = (float)lg[i];
    choice[row] = mkc_argmax(lg, g->vocab);
  }
  int a = f;
  while (a + 1 < T && inputs[a + 1] == choice[a - t0]) a++;
  for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
  st->n_out = a - f + 1;
  st->n_accepted = a - f;
  st->status = MKC_STATUS_OK;
  st->pos = pos + a + 1;
  mkc_ref_truncate(r->ref, st->pos);
  return 0;
}

static const float *logits(mkc_backend *b, int row) {
  return ref(b)->logits + (size_t)row * ref(b)->g->vocab;
}

static void reset(mkc_backend *b) { mkc_ref_truncate(ref(b)->ref, 0); }

static int rewind_to(mkc_backend *b, int pos) {
  mkc_ref_truncate(ref(b)->ref, pos);
  return 0;
}

static const char *describe(const mkc_backend *b) { return "reference executor, float64"; }

static void close_ref(mkc_backend *b) {
  ref_backend *r = ref(b);
  if (r->ref) mkc_ref_close(r->ref);
  free(r->ref_logits);
  free(r->logits);
  free(r);
}

/* This backend's row of the interface: deliberately alike the other backends'. */
static const mkc_backend_ops ref_ops = {
    .name = "ref",
    .step = step,
    .logits = logits,
    .reset = reset,
    .rewind = rewind_to,
    .describe = describe,
    .close = close_ref,
};

mkc_backend *mkc_ref_backend_open(const mkc_graph *g, const mkc_weights *w) {
  ref_backend *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  r->base.ops = &ref_ops;
  r->g = g;
  r->ref = mkc_ref_open(g, w);
  r->ref_logits = malloc((size_t)g->t_max * g->vocab * sizeof *r->ref_logits);
  r->logits = malloc((size_t)g->t_max * g->vocab * sizeof *r->logits);
  if (!r->ref) goto fail;
  if (!r->ref_logits || !r->logits) goto oom;
  return &r->base;
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
fail:
  if (r) close_ref(&r->base);
  return NULL;
}

mkc_ref *mkc_ref_backend_executor(mkc_backend *b) {
  return b->ops == &ref_ops ? ref(b)->ref : NULL;
}
