/* Sessions: the checks every backend shares, then one call through the
 * backend's table (backend/backend.h), chosen when the session opens: the cpu
 * backend (the emitted kernel on the SIMT emulator), the cuda backend (on a
 * GPU) or the ref backend (the reference executor behind the same step
 * contract). */
#include "session.h"
#include "draft.h"

#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/stage_timers.h"
#include "backend/cpu/backend.h"
#include "backend/cuda/backend.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "mkc_state.h"
#include "ref_backend.h"
#include "session_impl.h"
#include "util/clock.h"

int mkc_backend_kind_from_name(const char *name) {
  static const char *const NAMES[] = {[MKC_BACKEND_CPU] = "cpu",
                                      [MKC_BACKEND_REF] = "ref",
                                      [MKC_BACKEND_CUDA] = "cuda",
                                      [MKC_BACKEND_AUTO] = "auto"};
  for (int k = 0; name && k < (int)(sizeof NAMES / sizeof *NAMES); k++)
    if (strcmp(name, NAMES[k]) == 0) return k;
  return -1;
}

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

/* The cpu backend runs a block per OS thread: as many as there are cores
 * this process may use (at least 2, so grid barriers are always exercised),
 * within the plan's limit. */
static int default_blocks(void) {
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
  if (n < 2) n = 2;
  return n > MKC_MAX_BLOCKS ? MKC_MAX_BLOCKS : n;
}

/* The backend of kind, after the grid and the plan are checked; cuda and auto
 * ask for the device here, once. auto takes the cpu backend where no device
 * answers, or where one does but NVRTC, which the cuda backend compiles with,
 * is not usable (with a warning). */
mkc_backend *mkc_session_open_backend(enum mkc_backend_kind kind, const mkc_graph *g,
                                      const mkc_kernel_src *src, const mkc_weights *w, int blocks) {
  if (blocks <= 0) blocks = default_blocks(); /* only the cpu backend uses it */
  if (blocks > MKC_MAX_BLOCKS) {
    fprintf(stderr, "mkc: error: %d blocks: the kernel is planned for at most %d\n", blocks,
            MKC_MAX_BLOCKS);
    return NULL;
  }
  if (g->t_max < 1 || g->t_max > MKC_T_CAP || g->t_chunk < g->t_max || g->t_chunk > MKC_CHUNK_CAP ||
      g->step_rows < g->t_max || g->step_rows > g->t_chunk) {
    fprintf(stderr,
            "mkc: error: the plan takes %d inputs per step, %d rows per step and %d per prompt "
            "chunk, expected 1..%d, that..the chunk's, and that..%d\n",
            g->t_max, g->step_rows, g->t_chunk, MKC_T_CAP, MKC_CHUNK_CAP);
    return NULL;
  }
  if (kind == MKC_BACKEND_REF) return mkc_ref_backend_open(g, w);
  if (kind == MKC_BACKEND_CUDA || kind == MKC_BACKEND_AUTO) {
    mkc_cuda_device dev;
    char why[512];
    if (mkc_cuda_device_get(&dev, why, sizeof why) == 0) {
      if (kind == MKC_BACKEND_CUDA || mkc_nvrtc_version(why, sizeof why) >= 0)
        return mkc_cuda_backend_open(g, src, w, &dev);
      fprintf(
          stderr,
          "mkc: warning: the CUDA device (%s, %s) answers, but NVRTC is not usable: %s; running on "
          "the cpu backend (set MKC_NVRTC or CUDA_HOME to a CUDA toolkit's NVRTC, or run an "
          "image from mkc compile with --kernel)\n",
          dev.name, dev.arch, why);
      return mkc_cpu_backend_open(g, src, w, blocks);
    }
    if (kind == MKC_BACKEND_CUDA) {
      fprintf(stderr, "mkc: error: %s; use --backend cpu\n", why);
      return NULL;
    }
  }
  return mkc_cpu_backend_open(g, src, w, blocks);
}

/* The sliding windows' rings of g, one per (rows, window) pair. 0 or -1. */
static int find_rings(mkc_session *s) {
  const mkc_graph *g = s->g;
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *nd = &g->nodes[i];
    int rows = mkc_node_kv_rows(g, nd), r = 0;
    if (nd->op != MKC_OP_ATTENTION || rows >= g->max_ctx) continue;
    while (r < s->n_rings && (s->rings[r].rows != rows || s->rings[r].window != nd->window)) r++;
    if (r < s->n_rings) continue;
    mkc_ring *more = realloc(s->rings, (size_t)(s->n_rings + 1) * sizeof *more);
    if (!more) return -1;
    s->rings = more;
    s->rings[s->n_rings++] = (mkc_ring){rows, nd->window, nd->layer, 0};
  }
  return 0;
}

static void free_session(mkc_session *s) {
  free(s->rings);
  free(s->tokens);
  free(s);
}

/* A session of g with its tokens and rings, no backend yet; NULL + message
 * when out of memory. */
static mkc_session *new_session(const mkc_graph *g) {
  mkc_session *s = calloc(1, sizeof *s);
  if (!s) goto oom;
  s->g = g;
  s->last_choice = -1;
  s->tokens = malloc((size_t)g->max_ctx * sizeof *s->tokens);
  if (s->tokens && find_rings(s) == 0) return s;
  free_session(s);
oom:
  fprintf(stderr, "mkc: error: out of memory opening a session\n");
  return NULL;
}

int mkc_ring_needs(const mkc_ring *r, int pos) {
  return pos - r->window + 1 > 0 ? pos - r->window + 1 : 0;
}

mkc_session *mkc_session_open(enum mkc_backend_kind kind, const mkc_graph *g,
                              const mkc_kernel_src *src, const mkc_weights *w, int blocks) {
  mkc_session *s = new_session(g);
  if (!s) return NULL;
  s->b = mkc_session_open_backend(kind, g, src, w, blocks);
  if (!s->b) {
    free_session(s);
    return NULL;
  }
  return s;
}

mkc_session *mkc_session_open_image(const mkc_graph *g, const mkc_weights *w,
                                    const mkc_cuda_device *dev, const void *image) {
  mkc_session *s = new_session(g);
  if (!s) return NULL;
  s->b = mkc_cuda_backend_open_image(g, w, dev, image);
  if (!s->b) {
    free_session(s);
    return NULL;
  }
  return s;
}

const char *mkc_session_backend(const mkc_session *s) { return s->b->ops->name; }

const char *mkc_session_describe(const mkc_session *s) { return s->b->ops->describe(s->b); }

const mkc_graph *mkc_session_graph(const mkc_session *s) { return s->g; }

int mkc_session_kernel_rounds(const mkc_session *s) { return s->b->ops->rounds; }

int mkc_session_prompt_inputs(const mkc_session *s, int remaining) {
  return remaining < s->g->t_chunk ? remaining : s->g->t_chunk;
}

/* A step of n_inputs from pos ran (rc: the backend's return): the rings lose
 * the rows it overwrote, unless it was refused whole (or failed: who knows). */
static void after_step(mkc_session *s, int rc, int status, int pos, int n_inputs) {
  if (rc == 0 && (status == MKC_STATUS_CTX_FULL || status == MKC_STATUS_BAD_INPUT)) return;
  for (int i = 0; i < s->n_rings; i++) {
    mkc_ring *ring = &s->rings[i];
    if (pos + n_inputs - ring->rows > ring->intact_from)
      ring->intact_from = pos + n_inputs - ring->rows;
  }
}

int mkc_session_step(mkc_session *s, const int *inputs, int n_inputs, int n_fixed,
                     mkc_step_result *r) {
  memset(r, 0, sizeof *r);
  if (n_inputs < 1 || n_inputs > s->g->t_chunk || n_fixed < 0 || n_fixed >= n_inputs ||
      (n_inputs > s->g->t_max && n_fixed != n_inputs - 1)) {
    r->status = MKC_STATUS_BAD_INPUT;
    return 0;
  }
  mkc_state *st = &s->state;
  st->round_max = 0;
  st->draft_layers = st->draft_left = st->draft_n = 0;
  st->flow_count = 0; /* the kernel's flow waits count this launch's arrivals from 0 */
  st->n_inputs = n_inputs;
  st->n_fixed = n_fixed;
  memcpy(st->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  int pos = st->pos;
  double t0 = mkc_seconds();
  int rc = s->b->ops->step(s->b, st);
  s->step_seconds = mkc_seconds() - t0;
  after_step(s, rc, st->status, pos, n_inputs);
  s->last_choice = -1;
  if (rc != 0) return -1;
  r->status = st->status;
  if (st->status != MKC_STATUS_OK) return 0;
  s->last_choice = n_fixed + st->n_accepted;
  /* the inputs whose K/V the cache now holds: the fixed ones and the accepted drafts */
  memcpy(s->tokens + pos, inputs, (size_t)(st->pos - pos) * sizeof *inputs);
  r->n_out = st->n_out;
  r->n_accepted = st->n_accepted;
  memcpy(r->out, st->out_tokens, (size_t)st->n_out * sizeof *r->out);
  return 0;
}

static int stops_at(const mkc_rounds_req *q, const int *tokens, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < q->n_stops; j++)
      if (tokens[i] == q->stops[j]) return 1;
  return 0;
}

/* The rounds step by step, as the kernel's loop runs them (templates/rounds.cuh). */
static int rounds_by_step(mkc_session *s, const int *inputs, int n_inputs, const mkc_rounds_req *q,
                          mkc_round *out, int *n_rounds) {
  int in[MKC_T_CAP], emitted = 0;
  memcpy(in, inputs, (size_t)n_inputs * sizeof *in);
  for (int i = 0; i < q->rounds; i++) {
    mkc_step_result r;
    if (mkc_session_step(s, in, n_inputs, 0, &r) != 0) return -1;
    out[i] = (mkc_round){
        .n_in = n_inputs, .n_out = r.n_out, .n_accepted = r.n_accepted, .status = r.status};
    memcpy(out[i].out_tokens, r.out, (size_t)r.n_out * sizeof *r.out);
    *n_rounds = i + 1;
    emitted += r.n_out;
    int pos = s->state.pos;
    if (r.status != MKC_STATUS_OK || stops_at(q, r.out, r.n_out) || emitted >= q->budget ||
        pos >= s->g->max_ctx)
      break;
    int k = q->drafts, want = q->budget - emitted, room = s->g->max_ctx - pos;
    if (k > want - 1) k = want - 1;
    if (k > room - 1) k = room - 1;
    /* the history: the cached tokens and the last emitted one, at pos */
    in[0] = r.out[r.n_out - 1];
    s->tokens[pos] = in[0];
    n_inputs = 1 + mkc_draft_lookup(s->tokens, pos + 1, k, in + 1);
  }
  return 0;
}

int mkc_session_rounds(mkc_session *s, const int *inputs, int n_inputs, const mkc_rounds_req *q,
                       mkc_round *out, int *n_rounds) {
  const mkc_graph *g = s->g;
  *n_rounds = 0;
  s->last_choice = -1; /* set again when the rounds run step by step (rounds_by_step) */
  /* self-speculation in the kernel: its layer loop, a kernel backend, the last token alone and
   * room for the first round's drafts */
  int in_kernel = q->draft_layers > 0;
  if (q->rounds < 1 || q->rounds > MKC_ROUNDS_MAX || q->drafts < 0 || q->drafts >= g->t_max ||
      q->budget < 1 || q->n_stops < 0 || q->n_stops > MKC_ROUND_STOPS || n_inputs < 1 ||
      n_inputs > g->t_max ||
      (in_kernel && (q->rounds < 2 || !g->draft_in_kernel || !s->b->ops->rounds ||
                     q->draft_layers >= g->n_layers || n_inputs != 1 || q->first_drafts < 0 ||
                     q->first_drafts > q->drafts || q->first_drafts > q->budget - 1 ||
                     s->state.pos + q->first_drafts + 1 > g->max_ctx))) {
    out[0] = (mkc_round){.n_in = n_inputs, .status = MKC_STATUS_BAD_INPUT};
    *n_rounds = 1;
    return 0;
  }
  if (!s->b->ops->rounds || q->rounds == 1)
    return rounds_by_step(s, inputs, n_inputs, q, out, n_rounds);
  mkc_state *st = &s->state;
  st->round_max = q->rounds;
  st->draft_layers = q->draft_layers;
  st->draft_left = in_kernel ? q->first_drafts : 0;
  st->draft_n = 0;
  st->flow_count = 0;
  st->round_drafts = q->drafts;
  st->round_budget = q->budget;
  st->n_round_stops = q->n_stops;
  memcpy(st->round_stops, q->stops, sizeof st->round_stops);
  st->n_inputs = n_inputs;
  st->n_fixed = 0;
  memcpy(st->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  int pos = st->pos;
  double t0 = mkc_seconds();
  int rc = s->b->ops->step(s->b, st);
  s->step_seconds = mkc_seconds() - t0;
  st->round_max = 0;
  st->draft_layers = st->draft_left = st->draft_n = 0;
  /* a round the kernel refused before its stages (mkc_step_begin) is not in st->rounds */
  int n = st->n_rounds;
  if (rc == 0 && st->status != MKC_STATUS_OK && n < q->rounds &&
      (n == 0 || st->rounds[n - 1].status == MKC_STATUS_OK))
    st->rounds[n++] = (mkc_round){.n_in = st->n_inputs, .status = st->status};
  int in0 = inputs[0];
  for (int i = 0; i < n; i++) {
    const mkc_round *r = &st->rounds[i];
    after_step(s, rc, r->status, pos, r->n_in);
    if (r->status != MKC_STATUS_OK) break;
    /* the cache now holds the round's first input and its accepted drafts, which the kernel
     * emitted as they were */
    s->tokens[pos] = in0;
    memcpy(s->tokens + pos + 1, r->out_tokens, (size_t)r->n_accepted * sizeof *r->out_tokens);
    pos += r->n_out;
    in0 = r->out_tokens[r->n_out - 1];
  }
  if (rc != 0) return -1;
  if (n > 0) st->n_inputs = st->rounds[n - 1].n_in; /* the logits are the last round's */
  memcpy(out, st->rounds, (size_t)n * sizeof *out);
  *n_rounds = n;
  return 0;
}

int mkc_session_pos(const mkc_session *s) { return s->state.pos; }

const int *mkc_session_tokens(const mkc_session *s) { return s->tokens; }

double mkc_session_step_seconds(const mkc_session *s) { return s->step_seconds; }

/* The row of input t's logits and draws in the backend: a prompt chunk longer
 * than t_max has them for its last input only (templates/lm_head.cuh's t0). */
static int head_row(const mkc_session *s, int t) {
  int T = s->state.n_inputs, t0 = T > s->g->t_max ? T - 1 : 0;
  return t >= t0 && t < T ? t - t0 : -1;
}

const float *mkc_session_logits(mkc_session *s, int t) {
  int row = head_row(s, t);
  return row < 0 ? NULL : s->b->ops->logits(s->b, row);
}

int mkc_session_choices(mkc_session *s, int *out, int n) {
  const mkc_graph *g = s->g;
  int T = s->state.n_inputs;
  if (s->last_choice < 0 || T > g->t_max || n < 1 || n > T) {
    fprintf(stderr, "mkc: error: greedy choices of %d inputs: %s\n", n,
            s->last_choice < 0 ? "no step of this session has them (none ran, or it failed, ran "
                                 "rounds or was rewound)"
            : T > g->t_max     ? "the last step was a prompt chunk, which has its last input's only"
                               : "the last step had fewer");
    return -1;
  }
  if (s->b->ops->choices) { /* ref: the choices its accept took */
    memcpy(out, s->b->ops->choices(s->b), (size_t)n * sizeof *out);
  } else {
    float got[MKC_T_CAP]; /* ints, in scratch's floats */
    if (s->b->ops->read_scratch(s->b, g->choices_offset, (size_t)n, got) != 0) return -1;
    memcpy(out, got, (size_t)n * sizeof *out);
  }
  for (int t = 0; t < n; t++)
    if (out[t] < 0 || out[t] >= g->vocab) out[t] = -1;
  return 0;
}

const void *mkc_session_kv(mkc_session *s) { return s->b->ops->kv ? s->b->ops->kv(s->b) : NULL; }

int mkc_session_set_feature(mkc_session *s, const float *rows, int T) {
  if (s->g->feature_n <= 0) {
    fprintf(stderr, "mkc: error: %s has no feature to set (g.feature)\n", s->g->graph_path);
    return -1;
  }
  if (T < 1 || T > s->g->t_max) {
    fprintf(stderr, "mkc: error: a feature for %d inputs: a step with one takes 1..%d\n", T,
            s->g->t_max);
    return -1;
  }
  return s->b->ops->write_feature(s->b, rows, s->g->feature_n, T);
}

int mkc_session_hidden(mkc_session *s, int t, float *out) {
  return mkc_session_hidden_layer(s, s->g->n_layers - 1, t, out);
}

int mkc_session_hidden_layer(mkc_session *s, int layer, int t, float *out) {
  const mkc_graph *g = s->g;
  int slot = layer == g->n_layers - 1 ? -1 : -2; /* -1: the hidden state every step leaves */
  for (int k = 0; slot == -2 && k < g->n_keep; k++)
    if (g->keep_layers[k] == layer) slot = k;
  if (slot == -2) {
    fprintf(stderr,
            "mkc: error: layer %d's output: the kernel keeps %d layer outputs besides the last "
            "layer's (mkc_gen_opts.keep_layers), not this one\n",
            layer, g->n_keep);
    return -1;
  }
  if (t < 0 || t >= s->state.n_inputs) {
    fprintf(stderr, "mkc: error: hidden state of input %d: the last step had %d\n", t,
            s->state.n_inputs);
    return -1;
  }
  return s->b->ops->hidden(s->b, slot, t, out);
}

int mkc_session_last_choice(const mkc_session *s) { return s->last_choice; }

struct mkc_ref *mkc_session_ref(mkc_session *s) {
  return mkc_ref_backend_executor(s->b);
}

void mkc_session_reset(mkc_session *s) {
  mkc_sampling keep = s->state.sampling;
  memset(&s->state, 0, sizeof s->state);
  for (int i = 0; i < s->n_rings; i++) s->rings[i].intact_from = 0;
  if (s->b->ops->reset) s->b->ops->reset(s->b);
  s->last_choice = -1;
  mkc_sampling off = {0}; /* off is stored as zeros (mkc_session_set_sampling) */
  if (memcmp(&keep, &off, sizeof keep) != 0) mkc_session_set_sampling(s, &keep); /* re-written */
}

int mkc_sampling_check(const mkc_sampling *o) {
  const char *bad = NULL;
  if (!(o->temp >= 0) || o->temp > 1e6)
    bad = "--temp: expected a number >= 0";
  else if (!(o->top_p > 0) || o->top_p > 1e6)
    bad = "--top-p: expected a number in (0, 1]";
  else if (!(o->min_p >= 0) || o->min_p > 1)
    bad = "--min-p: expected a number in [0, 1]";
  else if (!(o->repeat_penalty > 0) || o->repeat_penalty > 1e6)
    bad = "--repeat-penalty: expected a number > 0";
  else if (!(o->presence_penalty > -1e6 && o->presence_penalty < 1e6) ||
           !(o->frequency_penalty > -1e6 && o->frequency_penalty < 1e6))
    bad = "--presence-penalty/--frequency-penalty: expected a finite number";
  else if (o->repeat_last_n < 0 || o->repeat_last_n > MKC_HIST_CAP)
    bad = "--repeat-last-n: expected 0..256";
  else if (o->logprobs < 0 || o->logprobs > MKC_LOGPROBS_MAX)
    bad = "--logprobs: expected 0..20";
  else if (o->n_bias < 0 || o->n_bias > MKC_BIAS_CAP)
    bad = "--logit-bias: at most 128 tokens";
  for (int k = 0; !bad && k < o->n_bias; k++)
    if (o->bias_id[k] < 0 || (k > 0 && o->bias_id[k] <= o->bias_id[k - 1]))
      bad = "--logit-bias: token ids ascending, each once (mkc_sampling)";
    else if (!(o->bias[k] < INFINITY)) /* NaN or +inf: no distribution is left */
      bad = "--logit-bias: a bias is a number or -inf";
  if (bad) {
    fprintf(stderr, "mkc: error: %s\n", bad);
    return -1;
  }
  return 0;
}

int mkc_sampling_check_vocab(const mkc_sampling *o, int vocab) {
  if (mkc_sampling_check(o) != 0) return -1;
  if (o->n_bias > 0 && o->bias_id[o->n_bias - 1] >= vocab) {
    fprintf(stderr, "mkc: error: --logit-bias: token %d is outside the vocabulary (0..%d)\n",
            o->bias_id[o->n_bias - 1], vocab - 1);
    return -1;
  }
  return 0;
}

int mkc_session_set_sampling(mkc_session *s, const mkc_sampling *o) {
  if (mkc_sampling_check_vocab(o, s->g->vocab) != 0) return -1;
  int on = MKC_SAMPLING_ON(o);
  if (on && strcmp(s->b->ops->name, "ref") == 0) {
    fprintf(stderr,
            "mkc: error: the ref backend decodes greedily only (it is the oracle of the "
            "kernel's argmax); sampling, penalties and log-probabilities run on the cpu and cuda "
            "backends\n");
    return -1;
  }
  /* Off is one value (zeros), so greedy requests write nothing to the device. */
  mkc_sampling v = *o;
  if (!on) { /* the logit bias applies greedy too (mkc_state.h) */
    memset(&v, 0, offsetof(mkc_sampling, n_bias));
    memset(v.bias_id + v.n_bias, 0, (size_t)(MKC_BIAS_CAP - v.n_bias) * sizeof *v.bias_id);
    memset(v.bias + v.n_bias, 0, (size_t)(MKC_BIAS_CAP - v.n_bias) * sizeof *v.bias);
  }
  if (memcmp(&v, &s->state.sampling, sizeof v) == 0) return 0;
  s->state.sampling = v;
  if (s->b->ops->write_sampling && s->b->ops->write_sampling(s->b, &s->state) != 0) return -1;
  return 0;
}

int mkc_session_logprobs(mkc_session *s, int i, float *lp, int *ids, float *lps) {
  int n = s->state.sampling.logprobs, at = head_row(s, s->state.n_fixed + i);
  if (n <= 0 || !s->b->ops->read_scratch || i < 0 || i >= s->state.n_out || at < 0) {
    fprintf(stderr,
            "mkc: error: no log-probabilities for emitted token %d (%s backend, "
            "logprobs %d)\n",
            i, s->b->ops->name, n);
    return -1;
  }
  return mkc_logprobs_read(s->b, s->g, at, n, lp, ids, lps);
}

int mkc_logprobs_read(mkc_backend *b, const mkc_graph *g, int row, int n, float *lp, int *ids,
                      float *lps) {
  float v[MKC_LP_STRIDE];
  if (b->ops->read_scratch(b, g->logprobs_offset + (size_t)row * MKC_LP_STRIDE, MKC_LP_STRIDE, v) !=
      0)
    return -1;
  *lp = v[MKC_LP_EMITTED];
  memcpy(ids, v + MKC_LP_IDS, (size_t)n * sizeof *ids);
  memcpy(lps, v + MKC_LP_VALS, (size_t)n * sizeof *lps);
  return 0;
}

const mkc_sampling *mkc_session_sampling(const mkc_session *s) { return &s->state.sampling; }

int mkc_session_stage_ns(mkc_session *s, double *ns) {
  return mkc_backend_stage_ns(s->b, s->g, ns);
}

int mkc_session_imatrix(mkc_session *s, float *sums) {
  const mkc_graph *g = s->g;
  if (!g->imatrix_floats || !s->b->ops->read_scratch || !s->b->ops->write_scratch) {
    fprintf(stderr,
            "mkc: error: imatrix: the %s kernel sums no inputs' squares (it was not "
            "generated for mkc imatrix)\n",
            mkc_session_backend(s));
    return -1;
  }
  float *zeros = calloc(g->imatrix_floats, sizeof *zeros);
  if (!zeros) {
    fprintf(stderr, "mkc: error: imatrix: out of memory\n");
    return -1;
  }
  int rc = s->b->ops->read_scratch(s->b, g->imatrix_offset, g->imatrix_floats, sums) != 0 ||
                   s->b->ops->write_scratch(s->b, g->imatrix_offset, g->imatrix_floats, zeros) != 0
               ? -1
               : 0;
  free(zeros);
  return rc;
}

/* The first ring whose window before pos has lost rows, or NULL. */
static const mkc_ring *lost_window(const mkc_session *s, int pos) {
  for (int i = 0; i < s->n_rings; i++)
    if (pos > 0 && mkc_ring_needs(&s->rings[i], pos) < s->rings[i].intact_from) return &s->rings[i];
  return NULL;
}

int mkc_session_can_rewind(const mkc_session *s, int pos) {
  return pos >= 0 && pos <= s->state.pos && !lost_window(s, pos);
}

int mkc_session_rewind(mkc_session *s, int pos) {
  const mkc_ring *lost = pos >= 0 && pos <= s->state.pos ? lost_window(s, pos) : NULL;
  if (pos < 0 || pos > s->state.pos) {
    fprintf(stderr, "mkc: error: cannot rewind a session at pos %d to %d\n", s->state.pos, pos);
    return -1;
  }
  if (lost) {
    fprintf(stderr,
            "mkc: error: cannot rewind a session at pos %d to %d: layer %d's sliding window needs "
            "the rows of positions [%d, %d), and its ring of %d rows holds them from %d on\n",
            s->state.pos, pos, lost->layer, mkc_ring_needs(lost, pos), pos, lost->rows,
            lost->intact_from);
    return -1;
  }
  if (pos == s->state.pos) return 0;
  if (s->b->ops->rewind && s->b->ops->rewind(s->b, pos) != 0) return -1;
  s->state.pos = pos;
  s->last_choice = -1;
  return 0;
}

double mkc_session_copy_bandwidth(mkc_session *s, size_t bytes) {
  return s->b->ops->copy_bandwidth ? s->b->ops->copy_bandwidth(s->b, bytes) : -1.0;
}

void mkc_session_close(mkc_session *s) {
  if (!s) return;
  if (s->n_snapshots)
    fprintf(stderr, "mkc: warning: a session closes with %d KV snapshots not freed\n",
            s->n_snapshots);
  s->b->ops->close(s->b);
  free_session(s);
}
