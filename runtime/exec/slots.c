/* The slots' pool (exec/slots.h): an array of step states, one per slot, that
 * the backend hands the slot kernel as its state. */
#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/session_impl.h"

struct mkc_slots {
  const mkc_graph *g;
  mkc_backend *b;
  mkc_state *states; /* [g->slots]: the kernel's state array */
  int *tokens;       /* [g->slots][max_ctx]: the tokens each slot's cache holds */
  int *first;        /* [g->slots]: a slot's first row in the last step, -1: it sat out */
  int *ran;          /* [g->slots]: its inputs in the last step */
};

mkc_slots *mkc_slots_open(enum mkc_backend_kind kind, const mkc_graph *g, const mkc_kernel_src *src,
                          const mkc_weights *w, int blocks) {
  if (g->slots < 1) {
    fprintf(stderr, "mkc: error: the kernel serves one sequence; generate it with --slots B\n");
    return NULL;
  }
  if (kind == MKC_BACKEND_REF) {
    fprintf(stderr, "mkc: error: the ref backend runs no slot kernel (compare each slot with a "
                    "session of its own)\n");
    return NULL;
  }
  mkc_slots *p = calloc(1, sizeof *p);
  size_t n = (size_t)g->slots;
  if (p) {
    p->g = g;
    p->states = calloc(n, sizeof *p->states);
    p->tokens = malloc(n * (size_t)g->max_ctx * sizeof *p->tokens);
    p->first = malloc(n * sizeof *p->first);
    p->ran = calloc(n, sizeof *p->ran);
  }
  if (!p || !p->states || !p->tokens || !p->first || !p->ran) {
    fprintf(stderr, "mkc: error: out of memory opening %zu slots\n", n);
    mkc_slots_close(p);
    return NULL;
  }
  for (size_t s = 0; s < n; s++) p->first[s] = -1;
  p->b = mkc_session_open_backend(kind, g, src, w, blocks);
  if (!p->b) {
    mkc_slots_close(p);
    return NULL;
  }
  return p;
}

void mkc_slots_close(mkc_slots *p) {
  if (!p) return;
  if (p->b) p->b->ops->close(p->b);
  free(p->states);
  free(p->tokens);
  free(p->first);
  free(p->ran);
  free(p);
}

int mkc_slots_count(const mkc_slots *p) { return p->g->slots; }

const mkc_graph *mkc_slots_graph(const mkc_slots *p) { return p->g; }

const char *mkc_slots_describe(const mkc_slots *p) { return p->b->ops->describe(p->b); }

static int bad_slot(const mkc_slots *p, int s) {
  if (s >= 0 && s < p->g->slots) return 0;
  fprintf(stderr, "mkc: error: slot %d: the kernel has slots 0..%d\n", s, p->g->slots - 1);
  return 1;
}

int mkc_slots_set_inputs(mkc_slots *p, int s, const int *inputs, int n, int n_fixed) {
  if (bad_slot(p, s)) return -1;
  const mkc_graph *g = p->g;
  if (n == 0) {
    p->states[s].n_inputs = 0;
    return 0;
  }
  if (n < 0 || n > g->t_chunk || n_fixed < 0 || n_fixed >= n ||
      (n > g->t_max && n_fixed != n - 1)) {
    fprintf(stderr,
            "mkc: error: slot %d: %d inputs (%d known) is no step: up to %d, or a prompt chunk of "
            "up to %d known ones\n",
            s, n, n_fixed, g->t_max, g->t_chunk);
    return -1;
  }
  for (int t = 0; t < n; t++)
    if (inputs[t] < 0 || inputs[t] >= g->vocab) {
      fprintf(stderr, "mkc: error: slot %d: token %d is outside the vocabulary (0..%d)\n", s,
              inputs[t], g->vocab - 1);
      return -1;
    }
  mkc_state *st = &p->states[s];
  st->n_inputs = n;
  st->n_fixed = n_fixed;
  memcpy(st->inputs, inputs, (size_t)n * sizeof *inputs);
  return 0;
}

int mkc_slots_set_sampling(mkc_slots *p, int s, const mkc_sampling *o) {
  if (bad_slot(p, s) || mkc_sampling_check(o) != 0) return -1;
  p->states[s].sampling = *o;
  return p->b->ops->write_sampling ? p->b->ops->write_sampling(p->b, p->states) : 0;
}

int mkc_slots_step(mkc_slots *p) {
  const mkc_graph *g = p->g;
  int rows = 0, active = 0, pos[MKC_SLOTS_CAP];
  for (int s = 0; s < g->slots; s++) {
    mkc_state *st = &p->states[s];
    st->round_max = 0;
    st->draft_layers = st->draft_left = st->draft_n = 0;
    st->flow_count = 0;
    pos[s] = st->pos;
    p->ran[s] = st->n_inputs;
    p->first[s] = st->n_inputs > 0 ? rows : -1;
    rows += st->n_inputs;
    active += st->n_inputs > 0;
  }
  if (active == 0) return 0;
  int rc = p->b->ops->step(p->b, p->states);
  for (int s = 0; s < g->slots; s++) {
    mkc_state *st = &p->states[s];
    if (p->ran[s] == 0) continue;
    /* the inputs whose K/V the slot's cache now holds */
    if (rc == 0 && st->status == MKC_STATUS_OK)
      memcpy(p->tokens + (size_t)s * g->max_ctx + pos[s], st->inputs,
             (size_t)(st->pos - pos[s]) * sizeof *st->inputs);
    st->n_inputs = 0;
  }
  return rc == 0 ? 0 : -1;
}

int mkc_slots_result(const mkc_slots *p, int s, mkc_step_result *r) {
  memset(r, 0, sizeof *r);
  if (s < 0 || s >= p->g->slots || p->ran[s] == 0) return 0;
  const mkc_state *st = &p->states[s];
  r->status = st->status;
  if (st->status == MKC_STATUS_OK) {
    r->n_out = st->n_out;
    r->n_accepted = st->n_accepted;
    memcpy(r->out, st->out_tokens, (size_t)st->n_out * sizeof *r->out);
  }
  return 1;
}

const float *mkc_slots_logits(mkc_slots *p, int s, int t) {
  if (s < 0 || s >= p->g->slots || p->ran[s] == 0 || p->states[s].status != MKC_STATUS_OK)
    return NULL;
  /* a chunk past t_max ran alone and kept its last input's logits only, at row 0 */
  if (p->ran[s] > p->g->t_max) return t == p->ran[s] - 1 ? p->b->ops->logits(p->b, 0) : NULL;
  return t >= 0 && t < p->ran[s] ? p->b->ops->logits(p->b, p->first[s] + t) : NULL;
}

int mkc_slots_pos(const mkc_slots *p, int s) { return p->states[s].pos; }

const int *mkc_slots_tokens(const mkc_slots *p, int s) {
  return p->tokens + (size_t)s * p->g->max_ctx;
}

int mkc_slots_clear(mkc_slots *p, int s) {
  if (bad_slot(p, s)) return -1;
  if (p->b->ops->set_slot_pos && p->b->ops->set_slot_pos(p->b, s, 0) != 0) return -1;
  p->states[s].pos = 0;
  p->states[s].n_inputs = 0;
  p->ran[s] = 0;
  return 0;
}

size_t mkc_slots_kv_used(const mkc_slots *p, int s) {
  /* each slot's cache is whole (no pages yet): a slot holding any token uses all of it */
  return p->states[s].pos > 0 ? p->g->kv_bytes / (size_t)p->g->slots : 0;
}

size_t mkc_slots_kv_total(const mkc_slots *p) { return p->g->kv_bytes; }
