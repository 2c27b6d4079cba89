/* The reference executor (see reference.h). Deliberately plain: one node at a
 * time, double everywhere, no fusion, so that a mismatch with a kernel points
 * at the kernel. */
#include "reference.h"
#include "delta_rule.h"
#include "formats/dequant.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mkc_ref {
  const mkc_graph *g;
  const mkc_tensor **tensor; /* [n_nodes]: a WEIGHT node's tensor, else NULL */
  float **deq;               /* [n_nodes]: a block-typed tensor dequantized (formats/dequant.c) */
  double **value;            /* [n_nodes][node.n]: this token's outputs; NULL for WEIGHT */
  int n_layers;              /* cache layers: 1 + the largest attention or recurrent layer */
  /* [n_layers] a row's doubles in k_cache and v_cache, 0 for a layer with no cache: attention's
   * kv_heads * head_dim in both; a recurrent layer's convolution input (channels) in k_cache and
   * its state after the position (heads * k_dim * v_dim) in v_cache */
  int *k_dim, *v_dim;
  double **k_cache; /* [n_layers][max_ctx][k_dim] */
  double **v_cache; /* [n_layers][max_ctx][v_dim] */
  double *scores;   /* [max_ctx] one head's attention scores */
  /* [n_nodes] a RECURRENT node's weights widened once (the convolution's [channels][conv], then
   * A_log and dt_bias [heads]) and its convolution output [channels]; a MOE node's room (moe());
   * else NULL */
  double **rec;
  int logits_node;       /* the LOGITS node whose input is the step's output */
  int hidden_node;       /* the LM head's input before its norm, or -1 (mkc_ref_hidden) */
  int feature_node;      /* the FEATURE node, or -1 */
  double *feature;       /* [its n]: the next step's feature (mkc_ref_set_feature) */
  int pos;               /* tokens whose K/V rows are valid */
  const void *kernel_kv; /* a kernel's cache to compare appends with (mkc_ref_follow_kv) */
  mkc_ref_kv_stats kv_stats;
};

static double bf16(uint16_t h) { return (double)mkc_bf16_to_float(h); }

static mkc_delta_shape delta_shape(const mkc_node *nd) {
  return (mkc_delta_shape){nd->heads, nd->head_dim, nd->v_dim, nd->conv};
}

/* Element i (row-major) of weight node id: a bf16 value, or a block type's
 * value as the format's own dequantizer gives it, not the kernel's decoder. */
static double weight_at(const mkc_ref *r, int id, size_t i) {
  return r->deq[id] ? (double)r->deq[id][i] : bf16(r->tensor[id]->data[i]);
}

/* A K or V value as the kernel's cache stores it: rounded to the graph's KV
 * type (to nearest even; through float, as the kernel holds it), so the
 * reference models the storage and computes in double otherwise. f32 keeps
 * the double: the kernel's float storage rounds below its float arithmetic's
 * own error, so modelling it would add nothing. */
static double kv_stored(int dtype, double x) {
  switch (dtype) {
  case MKC_KV_DTYPE_BF16:
    return (double)mkc_bf16_to_float(mkc_float_to_bf16((float)x));
  case MKC_KV_DTYPE_F16:
    return (double)mkc_f16_to_float(mkc_float_to_f16((float)x));
  default:
    return x;
  }
}

/* "GRAPH:LINE: error: node N (op): message", the project's one error format. */
static void node_error(const mkc_graph *g, int id, const char *fmt, ...) {
  const mkc_node *nd = &g->nodes[id];
  va_list ap;
  fprintf(stderr, "%s:%d: error: node %d (%s): ", g->graph_path ? g->graph_path : "graph", nd->line,
          id, mkc_op_name(nd->op));
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* Length of input k of node id as a value (WEIGHT nodes have no value: -1). */
static int in_len(const mkc_graph *g, int id, int k) {
  const mkc_node *src = &g->nodes[g->nodes[id].in[k]];
  return src->op == MKC_OP_WEIGHT ? -1 : src->n;
}

static const mkc_weight_info *in_weight(const mkc_graph *g, int id, int k) {
  const mkc_node *src = &g->nodes[g->nodes[id].in[k]];
  return src->op == MKC_OP_WEIGHT ? &g->weights[src->weight] : NULL;
}

static int n_inputs_of(int op) {
  switch (op) {
  case MKC_OP_TOKENS:
  case MKC_OP_WEIGHT:
  case MKC_OP_FEATURE:
    return 0;
  case MKC_OP_ROPE:
  case MKC_OP_LOGITS:
    return 1;
  case MKC_OP_ATTENTION:
    return 3;
  case MKC_OP_RECURRENT:
  case MKC_OP_MOE:
    return 5;
  default:
    return 2;
  }
}

/* The op is known, its inputs are earlier nodes, and each is a weight exactly
 * where the op takes one. */
static int check_inputs(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  if (nd->op < 0 || nd->op >= MKC_OP_COUNT) {
    node_error(g, id, "unknown op %d", nd->op);
    return -1;
  }
  int need = n_inputs_of(nd->op);
  for (int k = 0; k < MKC_NODE_INPUTS; k++) {
    int in = nd->in[k];
    if (k < need && (in < 0 || in >= id)) {
      node_error(g, id, "input %d is node %d, expected an earlier node", k, in);
      return -1;
    }
  }
  if (nd->op != MKC_OP_WEIGHT && nd->op != MKC_OP_TOKENS && nd->n <= 0) { /* FEATURE too */
    node_error(g, id, "output length %d", nd->n);
    return -1;
  }
  for (int k = 0; k < need; k++) {
    /* Only EMBED, RMSNORM, MATMUL, RECURRENT and MOE take a weight, and only as in[0] / in[1] /
     * in[1] / in[2..4] / in[1..4]. */
    int wants_weight = (nd->op == MKC_OP_EMBED && k == 0) ||
                       ((nd->op == MKC_OP_RMSNORM || nd->op == MKC_OP_MATMUL) && k == 1) ||
                       (nd->op == MKC_OP_RECURRENT && k >= 2) || (nd->op == MKC_OP_MOE && k >= 1);
    int is_weight = g->nodes[nd->in[k]].op == MKC_OP_WEIGHT;
    if (wants_weight != is_weight) {
      node_error(g, id, "input %d is a %s node, expected %s", k,
                 mkc_op_name(g->nodes[nd->in[k]].op), wants_weight ? "a weight" : "a value");
      return -1;
    }
  }
  return 0;
}

static int check_weight(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  if (nd->weight < 0 || nd->weight >= g->n_weights) {
    node_error(g, id, "weight index %d outside [0, %d)", nd->weight, g->n_weights);
    return -1;
  }
  return 0;
}

static int check_embed(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  const mkc_weight_info *w = in_weight(g, id, 0);
  if (g->nodes[nd->in[1]].op != MKC_OP_TOKENS) {
    node_error(g, id, "input 1 is a %s node, expected tokens", mkc_op_name(g->nodes[nd->in[1]].op));
    return -1;
  }
  if (w->cols != nd->n) {
    node_error(g, id, "output length %d, embedding %s has %d columns", nd->n, w->name, w->cols);
    return -1;
  }
  return 0;
}

static int check_rmsnorm(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  const mkc_weight_info *w = in_weight(g, id, 1);
  if (in_len(g, id, 0) != nd->n || nd->group <= 0 || nd->n % nd->group ||
      (long)w->rows * w->cols != nd->group || nd->eps < 0) {
    node_error(g, id, "x [%d], weight %s [%d, %d], output [%d], group %d, eps %g: sizes must agree",
               in_len(g, id, 0), w->name, w->rows, w->cols, nd->n, nd->group, nd->eps);
    return -1;
  }
  return 0;
}

static int check_matmul(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  const mkc_weight_info *w = in_weight(g, id, 1);
  if (in_len(g, id, 0) != w->cols || nd->n != w->rows) {
    node_error(g, id, "x [%d] times %s [%d, %d] gives [%d], output is [%d]", in_len(g, id, 0),
               w->name, w->rows, w->cols, w->rows, nd->n);
    return -1;
  }
  if (nd->in[2] >= 0) { /* the bias */
    const mkc_weight_info *b = nd->in[2] < id ? in_weight(g, id, 2) : NULL;
    if (!b || (long)b->rows * b->cols != nd->n) {
      node_error(g, id, "bias (input 2) is node %d, expected an earlier weight of [%d]", nd->in[2],
                 nd->n);
      return -1;
    }
  }
  return 0;
}

/* The dims a rope node rotates, each head's first (partial RoPE: fewer than head_dim). */
static int rot_dim(const mkc_node *nd) { return nd->rot_dim > 0 ? nd->rot_dim : nd->head_dim; }

/* A longrope list: one positive divisor per pair. */
static int factors_ok(const mkc_factors *f, int pairs) {
  if (f->n != pairs || !f->v) return 0;
  for (int j = 0; j < pairs; j++)
    if (!(f->v[j] > 0) || !isfinite(f->v[j])) return 0;
  return 1;
}

/* The scaling's parameters, those its type reads, in their ranges. */
static int rope_scaling_ok(const mkc_node *nd) {
  switch (nd->rope_scaling) {
  case MKC_ROPE_SCALING_NONE:
    return 1;
  case MKC_ROPE_SCALING_LINEAR:
    return nd->rope_factor > 0 && isfinite(nd->rope_factor);
  case MKC_ROPE_SCALING_LLAMA3:
    return nd->rope_factor >= 1 && isfinite(nd->rope_factor) && nd->rope_orig_ctx > 0 &&
           nd->rope_low_freq_factor > 0 && nd->rope_high_freq_factor > nd->rope_low_freq_factor &&
           isfinite(nd->rope_high_freq_factor);
  case MKC_ROPE_SCALING_YARN:
    return nd->rope_factor >= 1 && isfinite(nd->rope_factor) && nd->rope_orig_ctx > 0 &&
           nd->rope_beta_fast > 0 && nd->rope_beta_slow > 0 && nd->rope_ext_factor >= 0 &&
           nd->rope_attn_factor > 0 && isfinite(nd->rope_beta_fast + nd->rope_beta_slow) &&
           isfinite(nd->rope_ext_factor + nd->rope_attn_factor);
  case MKC_ROPE_SCALING_LONGROPE:
    return nd->rope_orig_ctx > 0 && nd->rope_attn_factor > 0 && isfinite(nd->rope_attn_factor) &&
           factors_ok(&nd->rope_short_factor, rot_dim(nd) / 2) &&
           factors_ok(&nd->rope_long_factor, rot_dim(nd) / 2);
  default:
    return 0;
  }
}

static int check_rope(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  if (nd->heads <= 0 || nd->head_dim <= 0 || nd->head_dim % 2 || nd->rot_dim < 0 ||
      nd->rot_dim > nd->head_dim || nd->rot_dim % 2 || nd->n != nd->heads * nd->head_dim ||
      in_len(g, id, 0) != nd->n || nd->theta <= 0 ||
      (nd->layout != MKC_ROPE_INTERLEAVED && nd->layout != MKC_ROPE_NEOX)) {
    node_error(g, id,
               "x [%d], output [%d], heads %d, head_dim %d (even), rot_dim %d (even, <= head_dim), "
               "theta %g, layout %d",
               in_len(g, id, 0), nd->n, nd->heads, nd->head_dim, nd->rot_dim, nd->theta,
               nd->layout);
    return -1;
  }
  if (!rope_scaling_ok(nd)) {
    node_error(g, id,
               "RoPE scaling %s (%d): factor %g, low/high freq factor %g/%g, orig ctx %d, beta "
               "fast/slow %g/%g, ext factor %g, attn factor %g, %d short and %d long factors (of "
               "head_dim / 2) out of range",
               mkc_rope_scaling_name(nd->rope_scaling), nd->rope_scaling, nd->rope_factor,
               nd->rope_low_freq_factor, nd->rope_high_freq_factor, nd->rope_orig_ctx,
               nd->rope_beta_fast, nd->rope_beta_slow, nd->rope_ext_factor, nd->rope_attn_factor,
               nd->rope_short_factor.n, nd->rope_long_factor.n);
    return -1;
  }
  return 0;
}

/* A layer has one cache: one attention or recurrent node; *max_layer grows to the largest layer. */
static int claim_layer(const mkc_graph *g, int id, int *max_layer) {
  const mkc_node *nd = &g->nodes[id];
  for (int j = 0; j < id; j++)
    if ((g->nodes[j].op == MKC_OP_ATTENTION || g->nodes[j].op == MKC_OP_RECURRENT) &&
        g->nodes[j].layer == nd->layer) {
      node_error(g, id, "layer %d already has %s node %d", nd->layer, mkc_op_name(g->nodes[j].op),
                 j);
      return -1;
    }
  if (nd->layer > *max_layer) *max_layer = nd->layer;
  return 0;
}

/* Optional input k: absent (-1), or an earlier weight of n values. */
static int optional_weight(const mkc_graph *g, int id, int k, long n, const char *what) {
  int in = g->nodes[id].in[k];
  if (in < 0) return 0;
  const mkc_weight_info *w = in < id ? in_weight(g, id, k) : NULL;
  if (!w || (long)w->rows * w->cols != n) {
    node_error(g, id, "%s (input %d) is node %d, expected an earlier weight of [%ld]", what, k, in,
               n);
    return -1;
  }
  return 0;
}

static int check_attention(const mkc_graph *g, int id, int *max_layer) {
  const mkc_node *nd = &g->nodes[id];
  int q_dim = nd->heads * nd->head_dim, kv_dim = nd->kv_heads * nd->head_dim;
  if (nd->heads <= 0 || nd->kv_heads <= 0 || nd->head_dim <= 0 || nd->heads % nd->kv_heads ||
      nd->layer < 0 || in_len(g, id, 0) != q_dim || in_len(g, id, 1) != kv_dim ||
      in_len(g, id, 2) != kv_dim || nd->n != q_dim || nd->window < 0 || nd->kv_rows < 0 ||
      nd->kv_rows > g->max_ctx) {
    node_error(g, id,
               "q [%d], k [%d], v [%d], output [%d] with heads %d, kv_heads %d, head_dim %d, "
               "layer %d, window %d, kv_rows %d of max_ctx %d",
               in_len(g, id, 0), in_len(g, id, 1), in_len(g, id, 2), nd->n, nd->heads, nd->kv_heads,
               nd->head_dim, nd->layer, nd->window, nd->kv_rows, g->max_ctx);
    return -1;
  }
  if (optional_weight(g, id, 3, nd->heads, "sinks") != 0) return -1;
  return claim_layer(g, id, max_layer);
}

/* A gated delta-rule layer (exec/delta_rule.h): mixed [channels], gates [2 heads], the
 * convolution's weight [channels][conv], A_log and dt_bias [1][heads] -> [heads * v_dim]. */
static int check_recurrent(const mkc_graph *g, int id, int *max_layer) {
  const mkc_node *nd = &g->nodes[id];
  const mkc_weight_info *conv = in_weight(g, id, 2), *a_log = in_weight(g, id, 3),
                        *dt_bias = in_weight(g, id, 4);
  int H = nd->heads, ok = H > 0 && nd->head_dim > 0 && nd->v_dim > 0 && nd->conv > 0 && H <= 4096 &&
                          nd->head_dim <= 4096 && nd->v_dim <= 4096 && nd->conv <= 64 &&
                          nd->layer >= 0;
  long channels = ok ? (long)H * (2 * nd->head_dim + nd->v_dim) : 0;
  if (!ok || in_len(g, id, 0) != channels || in_len(g, id, 1) != 2 * H || !conv || !a_log ||
      !dt_bias || conv->rows != channels || conv->cols != nd->conv || a_log->rows != 1 ||
      a_log->cols != H || dt_bias->rows != 1 || dt_bias->cols != H ||
      (long)nd->n != (long)H * nd->v_dim) {
    node_error(g, id,
               "mixed [%d], gates [%d], output [%d] with heads %d, k_dim %d, v_dim %d, conv %d, "
               "layer %d: expected mixed [heads (2 k_dim + v_dim)], gates [2 heads], output "
               "[heads v_dim], a convolution weight [that][conv] and A_log, dt_bias [1][heads]",
               in_len(g, id, 0), in_len(g, id, 1), nd->n, H, nd->head_dim, nd->v_dim, nd->conv,
               nd->layer);
    return -1;
  }
  return claim_layer(g, id, max_layer);
}

/* A sparse MLP: x [dim], router [experts][dim], gate and up [experts * ffn][dim], down
 * [experts * dim][ffn] -> [dim]. */
static int check_moe(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  const mkc_weight_info *router = in_weight(g, id, 1), *gate = in_weight(g, id, 2),
                        *up = in_weight(g, id, 3), *down = in_weight(g, id, 4);
  int E = nd->experts, dim = in_len(g, id, 0);
  int ffn = E > 0 && gate ? gate->rows / E : 0;
  if (E <= 0 || E > 1024 || nd->experts_used <= 0 || nd->experts_used > E ||
      nd->experts_used > MKC_MOE_USED_MAX || nd->n != dim || !router || router->rows != E ||
      router->cols != dim || !gate || ffn <= 0 || gate->rows != E * ffn || gate->cols != dim ||
      !up || up->rows != gate->rows || up->cols != dim || !down || down->rows != E * dim ||
      down->cols != ffn || nd->act < MKC_ACT_SILU || nd->act > MKC_ACT_SWIGLU_OAI) {
    node_error(g, id,
               "input [%d], output [%d], experts %d, used %d, act %d: expected a router "
               "[experts][dim], gate and up [experts * ffn][dim], down [experts * dim][ffn], "
               "used 1..min(experts, %d)",
               dim, nd->n, E, nd->experts_used, nd->act, MKC_MOE_USED_MAX);
    return -1;
  }
  /* the biases: all four or none */
  int biases = (nd->in[5] >= 0) + (nd->in[6] >= 0) + (nd->in[7] >= 0) + (nd->in[8] >= 0);
  if (biases != 0 && biases != 4) {
    node_error(g, id, "%d of the four biases (inputs 5..8): all four or none", biases);
    return -1;
  }
  if (optional_weight(g, id, 5, E, "router bias") != 0 ||
      optional_weight(g, id, 6, gate->rows, "gate bias") != 0 ||
      optional_weight(g, id, 7, gate->rows, "up bias") != 0 ||
      optional_weight(g, id, 8, down->rows, "down bias") != 0)
    return -1;
  return 0;
}

/* ADD and SWIGLU: two inputs and the output, all one length. */
static int check_elementwise(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  if (in_len(g, id, 0) != nd->n || in_len(g, id, 1) != nd->n) {
    node_error(g, id, "inputs [%d] and [%d], output [%d]: sizes must agree", in_len(g, id, 0),
               in_len(g, id, 1), nd->n);
    return -1;
  }
  return 0;
}

static int check_logits(const mkc_graph *g, int id) {
  const mkc_node *nd = &g->nodes[id];
  if (in_len(g, id, 0) != nd->n || nd->n != g->vocab) {
    node_error(g, id, "input [%d], output [%d], vocab %d: sizes must agree", in_len(g, id, 0),
               nd->n, g->vocab);
    return -1;
  }
  return 0;
}

/* Every size and attr the step relies on, so a bad graph fails here with its
 * node named instead of reading out of bounds later. codegen/ir.lua checked
 * most of it already: an oracle must not trust the code under test. */
static int check_node(const mkc_graph *g, int id, int *max_layer) {
  if (check_inputs(g, id) != 0) return -1;
  switch (g->nodes[id].op) {
  case MKC_OP_WEIGHT:
    return check_weight(g, id);
  case MKC_OP_EMBED:
    return check_embed(g, id);
  case MKC_OP_RMSNORM:
    return check_rmsnorm(g, id);
  case MKC_OP_MATMUL:
    return check_matmul(g, id);
  case MKC_OP_ROPE:
    return check_rope(g, id);
  case MKC_OP_ATTENTION:
    return check_attention(g, id, max_layer);
  case MKC_OP_RECURRENT:
    return check_recurrent(g, id, max_layer);
  case MKC_OP_MOE:
    return check_moe(g, id);
  case MKC_OP_SWIGLU:
    if (g->nodes[id].act < MKC_ACT_SILU || g->nodes[id].act > MKC_ACT_SWIGLU_OAI) {
      node_error(g, id, "act %d is none of enum mkc_act", g->nodes[id].act);
      return -1;
    }
    return check_elementwise(g, id);
  case MKC_OP_ADD:
    return check_elementwise(g, id);
  case MKC_OP_LOGITS:
    return check_logits(g, id);
  default: /* TOKENS: nothing to check */
    return 0;
  }
}

static int alloc_doubles(double **p, size_t n) {
  *p = calloc(n ? n : 1, sizeof **p);
  if (!*p) fprintf(stderr, "mkc: error: reference: out of memory (%zu doubles)\n", n);
  return *p ? 0 : -1;
}

/* Recurrent node id's r->rec: its weights widened to double, once, and room for its convolution
 * output (recurrent()). 0 or -1. */
static int widen_recurrent(mkc_ref *r, int id) {
  const mkc_node *nd = &r->g->nodes[id];
  mkc_delta_shape ds = delta_shape(nd);
  size_t ch = (size_t)mkc_delta_channels(&ds), n_conv = ch * (size_t)nd->conv;
  if (alloc_doubles(&r->rec[id], n_conv + 2 * (size_t)nd->heads + ch) != 0) return -1;
  double *w = r->rec[id];
  for (size_t i = 0; i < n_conv; i++) w[i] = weight_at(r, nd->in[2], i);
  for (int h = 0; h < nd->heads; h++) {
    w[n_conv + h] = weight_at(r, nd->in[3], (size_t)h);
    w[n_conv + nd->heads + h] = weight_at(r, nd->in[4], (size_t)h);
  }
  return 0;
}

mkc_ref *mkc_ref_open(const mkc_graph *g, const mkc_weights *w) {
  if (g->max_ctx <= 0 || g->vocab <= 0) {
    fprintf(stderr, "mkc: error: reference: max_ctx %d and vocab %d must be positive\n", g->max_ctx,
            g->vocab);
    return NULL;
  }
  int max_layer = -1;
  for (int id = 0; id < g->n_nodes; id++)
    if (check_node(g, id, &max_layer) != 0) return NULL;

  mkc_ref *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->g = g;
  r->logits_node = r->hidden_node = r->feature_node = -1;
  r->n_layers = max_layer + 1;
  r->tensor = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->tensor);
  r->deq = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->deq);
  r->value = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->value);
  r->k_dim = calloc(r->n_layers ? r->n_layers : 1, sizeof *r->k_dim);
  r->v_dim = calloc(r->n_layers ? r->n_layers : 1, sizeof *r->v_dim);
  r->k_cache = calloc(r->n_layers ? r->n_layers : 1, sizeof *r->k_cache);
  r->v_cache = calloc(r->n_layers ? r->n_layers : 1, sizeof *r->v_cache);
  if (!r->tensor || !r->deq || !r->value || !r->k_dim || !r->v_dim || !r->k_cache || !r->v_cache)
    goto fail;
  if (alloc_doubles(&r->scores, (size_t)g->max_ctx) != 0) goto fail;
  if (!(r->rec = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->rec))) goto fail;

  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    if (nd->op == MKC_OP_WEIGHT) {
      const mkc_weight_info *info = &g->weights[nd->weight];
      const mkc_tensor *t = mkc_weights_get(w, info->name, info->rows, info->cols);
      if (!(r->tensor[id] = t)) goto fail;
      if (t->blocks) {
        size_t n = (size_t)t->rows * (size_t)t->cols;
        if (!(r->deq[id] = malloc(n * sizeof *r->deq[id]))) goto fail;
        if (mkc_dequant_f32((uint32_t)t->type, t->blocks, n, r->deq[id]) != 0) {
          fprintf(stderr, "mkc: error: weight %s: the reference cannot read type %d\n", t->name,
                  t->type);
          goto fail;
        }
      }
      continue;
    }
    if (alloc_doubles(&r->value[id], (size_t)nd->n) != 0) goto fail;
    if (nd->op == MKC_OP_LOGITS) r->logits_node = id;
    if (nd->op == MKC_OP_FEATURE) {
      if (r->feature_node >= 0) {
        node_error(g, id, "a second feature (node %d is one): a graph has one", r->feature_node);
        goto fail;
      }
      r->feature_node = id;
      if (alloc_doubles(&r->feature, (size_t)nd->n) != 0) goto fail;
    }
    if (nd->op == MKC_OP_RECURRENT && widen_recurrent(r, id) != 0) goto fail;
    /* a MOE node's room: the router's probabilities, then the chosen experts' ids and hidden
     * values (moe()) */
    if (nd->op == MKC_OP_MOE &&
        alloc_doubles(&r->rec[id],
                      (size_t)nd->experts +
                          (size_t)nd->experts_used *
                              (1 + (size_t)r->tensor[nd->in[2]]->rows / (size_t)nd->experts)) != 0)
      goto fail;
    if (nd->op == MKC_OP_ATTENTION || nd->op == MKC_OP_RECURRENT) {
      mkc_delta_shape ds = delta_shape(nd);
      int l = nd->layer;
      r->k_dim[l] =
          nd->op == MKC_OP_ATTENTION ? nd->kv_heads * nd->head_dim : mkc_delta_channels(&ds);
      r->v_dim[l] = nd->op == MKC_OP_ATTENTION ? r->k_dim[l] : mkc_delta_state_size(&ds);
      if (alloc_doubles(&r->k_cache[l], (size_t)g->max_ctx * r->k_dim[l]) != 0 ||
          alloc_doubles(&r->v_cache[l], (size_t)g->max_ctx * r->v_dim[l]) != 0)
        goto fail;
    }
  }
  if (r->logits_node < 0) {
    fprintf(stderr, "%s: error: graph has no logits node\n",
            g->graph_path ? g->graph_path : "graph");
    goto fail;
  }
  const mkc_node *norm = mkc_graph_final_norm(g); /* its input is the hidden state */
  if (norm) r->hidden_node = norm->in[0];
  return r;
fail:
  mkc_ref_close(r);
  return NULL;
}

/* Each run of `group` values normalized on its own (group = n: the whole vector). */
static void rmsnorm(double *y, const double *x, const uint16_t *w, int n, int group, double eps) {
  for (int g0 = 0; g0 < n; g0 += group) {
    double ss = 0;
    for (int i = 0; i < group; i++) ss += x[g0 + i] * x[g0 + i];
    double inv = 1.0 / sqrt(ss / group + eps);
    for (int i = 0; i < group; i++) y[g0 + i] = x[g0 + i] * inv * bf16(w[i]);
  }
}

/* y = W x (+ bias, where there is one): W is weight node w_id. */
static void matmul(const mkc_ref *r, double *y, const double *x, int w_id, const mkc_tensor *bias) {
  const mkc_tensor *w = r->tensor[w_id];
  for (int i = 0; i < w->rows; i++) {
    size_t row = (size_t)i * w->cols;
    double sum = 0;
    for (int c = 0; c < w->cols; c++) sum += weight_at(r, w_id, row + c) * x[c];
    y[i] = bias ? sum + bf16(bias->data[i]) : sum;
  }
}

/* YaRN's ramp end: the pair whose frequency turns n_rot times in the
 * original context, d ln(orig / (2 pi n_rot)) / (2 ln theta), d the rotated dims. */
static double yarn_dim(const mkc_node *nd, double n_rot) {
  return rot_dim(nd) * log(nd->rope_orig_ctx / (2 * M_PI * n_rot)) / (2 * log(nd->theta));
}

/* Pair j's frequency (radians per position) and, in *mscale, what cos and sin
 * are multiplied by: theta^(-2j/d), scaled as the node says. Written from the
 * published formulas (transformers' _compute_linear_scaling / _llama3 / _yarn
 * parameters, llama.cpp's ggml_rope_yarn_corr_dims and rope_yarn), in double,
 * apart from the kernel's templates/qkv_rope.cuh on purpose. */
static double rope_freq(const mkc_node *nd, int max_ctx, int j, double *mscale) {
  double base = pow(nd->theta, -2.0 * j / rot_dim(nd)), factor = nd->rope_factor;
  *mscale = 1;
  switch (nd->rope_scaling) {
  case MKC_ROPE_SCALING_LINEAR:
    return base / factor;
  case MKC_ROPE_SCALING_LLAMA3: {
    double wavelen = 2 * M_PI / base, orig = nd->rope_orig_ctx;
    double low = nd->rope_low_freq_factor, high = nd->rope_high_freq_factor;
    if (wavelen < orig / high) return base;         /* high frequencies: kept */
    if (wavelen > orig / low) return base / factor; /* low: interpolated */
    double smooth = (orig / wavelen - low) / (high - low);
    return (1 - smooth) * base / factor + smooth * base;
  }
  case MKC_ROPE_SCALING_YARN: {
    double lo = fmax(0, floor(yarn_dim(nd, nd->rope_beta_fast)));
    double hi = fmin(rot_dim(nd) - 1, ceil(yarn_dim(nd, nd->rope_beta_slow)));
    double ramp = 1 - fmin(1, fmax(0, (j - lo) / fmax(0.001, hi - lo)));
    double extrapolated = ramp * nd->rope_ext_factor;
    *mscale = nd->rope_attn_factor * (nd->rope_ext_factor != 0 ? 1 + 0.1 * log(factor) : 1);
    return base / factor * (1 - extrapolated) + base * extrapolated;
  }
  case MKC_ROPE_SCALING_LONGROPE: {
    /* LongRoPE (Phi-3, transformers' _compute_longrope_parameters): the long list where the
     * context reaches past the original one (llama.cpp's choice by n_ctx; transformers' by the
     * sequence's length), cos and sin times attn_factor; both in float32, as llama.cpp's F32
     * tensors and transformers' float32 ones hold them (so a GGUF and a config.json agree) */
    const mkc_factors *f =
        max_ctx > nd->rope_orig_ctx ? &nd->rope_long_factor : &nd->rope_short_factor;
    *mscale = (float)nd->rope_attn_factor;
    return base / (float)f->v[j];
  }
  default:
    return base;
  }
}

/* The first rot_dim(nd) dims of each head rotated; the others copied as they are (all of them in
 * a NoPE layer). */
static void rope(double *y, const double *x, const mkc_node *nd, int max_ctx, int pos) {
  int hd = nd->head_dim, half = nd->nope ? 0 : rot_dim(nd) / 2;
  memcpy(y, x, (size_t)nd->n * sizeof *y);
  for (int h = 0; h < nd->heads; h++) {
    double *head = y + (size_t)h * hd;
    for (int j = 0; j < half; j++) {
      double mscale, angle = pos * rope_freq(nd, max_ctx, j, &mscale);
      double c = cos(angle) * mscale, s = sin(angle) * mscale;
      /* interleaved (GGUF llama): pair (2j, 2j+1); neox (rotate-half): (j, j + rot/2) */
      int ia = nd->layout == MKC_ROPE_NEOX ? j : 2 * j;
      int ib = nd->layout == MKC_ROPE_NEOX ? j + half : 2 * j + 1;
      double a = head[ia], b = head[ib];
      head[ia] = a * c - b * s;
      head[ib] = a * s + b * c;
    }
  }
}

static double kernel_kv_at(const mkc_ref *r, size_t at) {
  switch (r->g->kv_dtype) {
  case MKC_KV_DTYPE_BF16:
    return (double)mkc_bf16_to_float(((const uint16_t *)r->kernel_kv)[at]);
  case MKC_KV_DTYPE_F16:
    return (double)mkc_f16_to_float(((const uint16_t *)r->kernel_kv)[at]);
  default:
    return (double)((const float *)r->kernel_kv)[at];
  }
}

/* Appends one token's K or V (x: kv_heads * head_dim values) at pos of cache,
 * rounded to the KV type; with a kernel's cache, compares (mkc_ref_follow_kv).
 * slot: the element offset of this K or V in the kernel's cache. */
static void append_kv(mkc_ref *r, double *cache, const double *x, const mkc_node *nd, size_t slot,
                      const char *what) {
  int hd = nd->head_dim, kv_dim = nd->kv_heads * hd, dtype = r->g->kv_dtype;
  mkc_ref_kv_stats *st = &r->kv_stats;
  for (int h = 0; h < nd->kv_heads; h++) {
    const double *xh = x + (size_t)h * hd;
    double scale = 0;
    for (int i = 0; i < hd; i++) scale = fmax(scale, fabs(xh[i]));
    for (int i = 0; i < hd; i++) {
      double stored = kv_stored(dtype, xh[i]);
      if (r->kernel_kv) {
        /* the kernel's row of pos: a sliding window's ring keeps it at pos % rows */
        int rows = mkc_node_kv_rows(r->g, nd);
        double kern = kernel_kv_at(r, slot + ((size_t)h * rows + r->pos % rows) * hd + i);
        double tie = MKC_REF_KV_TIE * scale;
        double dev =
            dtype == MKC_KV_DTYPE_F32 ? fabs(kern - xh[i]) : fabs(xh[i] - (kern + stored) / 2);
        st->checked++;
        if (dtype == MKC_KV_DTYPE_F32 ? dev <= tie : kern == stored) {
          /* the kernel holds what the reference does */
          if (dtype == MKC_KV_DTYPE_F32 && dev > st->max_dev * scale) st->max_dev = dev / scale;
        } else if (dtype != MKC_KV_DTYPE_F32 && dev <= tie) {
          stored = kern; /* a value at a midpoint: the kernel rounded it the other way */
          st->followed++;
          if (dev > st->max_dev * scale) st->max_dev = dev / scale;
        } else if (!st->mismatched++) {
          snprintf(st->first, sizeof st->first,
                   "layer %d %s pos %d head %d [%d]: %.9g rounds to %.9g, the kernel holds %.9g",
                   nd->layer, what, r->pos, h, i, xh[i], stored, kern);
        }
      }
      cache[(size_t)r->pos * kv_dim + (size_t)h * hd + i] = stored;
    }
  }
}

/* Gemma 2's soft cap: c tanh(x / c), or x where c is 0. */
static double softcap(double x, double c) { return c > 0 ? c * tanh(x / c) : x; }

/* The token at pos sees the positions [first, pos]: all of them, or with a
 * sliding window the last `window`, its own included. The cache keeps every
 * position; the window is a mask here, not the kernel's ring. */
static void attention(mkc_ref *r, double *out, const double *q, const double *k, const double *v,
                      const mkc_node *nd) {
  int hd = nd->head_dim, kv_dim = r->k_dim[nd->layer], group = nd->heads / nd->kv_heads;
  double *k_cache = r->k_cache[nd->layer], *v_cache = r->v_cache[nd->layer];
  append_kv(r, k_cache, k, nd, nd->kv_k, "K");
  append_kv(r, v_cache, v, nd, nd->kv_v, "V");
  int first = nd->window > 0 && r->pos - nd->window + 1 > 0 ? r->pos - nd->window + 1 : 0;
  double scale = nd->scale > 0 ? nd->scale : 1.0 / sqrt((double)hd);
  int sinks = nd->in[3] >= 0;
  for (int h = 0; h < nd->heads; h++) {
    const double *qh = q + (size_t)h * hd;
    size_t kv_off = (size_t)(h / group) * hd;
    double max = -INFINITY;
    for (int s = first; s <= r->pos; s++) {
      const double *ks = k_cache + (size_t)s * kv_dim + kv_off;
      double dot = 0;
      for (int i = 0; i < hd; i++) dot += qh[i] * ks[i];
      r->scores[s] = softcap(dot * scale, nd->softcap);
      if (r->scores[s] > max) max = r->scores[s];
    }
    /* a sink: a score with no value, in the sum only (gpt-oss) */
    double sink = sinks ? weight_at(r, nd->in[3], (size_t)h) : -INFINITY;
    if (sink > max) max = sink;
    double sum = exp(sink - max);
    for (int s = first; s <= r->pos; s++) sum += r->scores[s] = exp(r->scores[s] - max);
    double *oh = out + (size_t)h * hd;
    for (int i = 0; i < hd; i++) oh[i] = 0;
    for (int s = first; s <= r->pos; s++) {
      const double *vs = v_cache + (size_t)s * kv_dim + kv_off;
      double p = r->scores[s] / sum;
      for (int i = 0; i < hd; i++) oh[i] += p * vs[i];
    }
  }
}

/* A recurrent node's step at r->pos: its input row joins the convolution's rows, its state
 * after this position is row pos of the layer's states, from row pos - 1's (zeros at 0). */
static void recurrent(mkc_ref *r, int id, double *out, const double *mixed, const double *gates) {
  const mkc_node *nd = &r->g->nodes[id];
  mkc_delta_shape ds = delta_shape(nd);
  int l = nd->layer, ch = r->k_dim[l], conv = nd->conv;
  size_t ss = (size_t)r->v_dim[l];
  double *rows = r->k_cache[l], *states = r->v_cache[l];
  memcpy(rows + (size_t)r->pos * ch, mixed, (size_t)ch * sizeof *rows);
  const double *window[64]; /* conv <= 64 (check_recurrent) */
  for (int j = 0; j < conv; j++) {
    int p = r->pos - (conv - 1) + j;
    window[j] = p >= 0 ? rows + (size_t)p * ch : NULL;
  }
  double *w = r->rec[id], *a_log = w + (size_t)ch * conv, *dt_bias = a_log + nd->heads,
         *qkv = dt_bias + nd->heads; /* widen_recurrent()'s layout */
  mkc_delta_conv(&ds, window, w, qkv);
  mkc_delta_step(&ds, qkv, gates, a_log, dt_bias,
                 r->pos > 0 ? states + (size_t)(r->pos - 1) * ss : NULL,
                 states + (size_t)r->pos * ss, out);
}

/* The gated MLP's glu(gate, up): act(gate) * up with SiLU or GELU's tanh form (GeGLU), or
 * gpt-oss's clamped form (transformers' GptOssExperts._apply_gate). */
static double glu(int kind, double g, double u) {
  switch (kind) {
  case MKC_ACT_GELU_TANH:
    return 0.5 * g * (1.0 + tanh(sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * u;
  case MKC_ACT_SWIGLU_OAI:
    g = fmin(g, MKC_OAI_LIMIT);
    u = fmax(fmin(u, MKC_OAI_LIMIT), -MKC_OAI_LIMIT);
    return g / (1.0 + exp(-MKC_OAI_ALPHA * g)) * (u + 1.0);
  default:
    return g / (1.0 + exp(-g)) * u;
  }
}

/* Element i of an optional bias node (-1: none) as a double; 0 where absent. */
static double bias_at(const mkc_ref *r, int id, size_t i) {
  return id >= 0 ? weight_at(r, id, i) : 0;
}

/* Row `row` of weight node w_id (cols values) dotted with x. */
static double dot_row(const mkc_ref *r, int w_id, size_t row, int cols, const double *x) {
  double sum = 0;
  for (int c = 0; c < cols; c++) sum += weight_at(r, w_id, row * (size_t)cols + c) * x[c];
  return sum;
}

/* A sparse MLP: softmax over the router's scores, the experts_used most likely experts (the
 * lower index first among equals), each one's MLP weighted by its probability, renormalized over
 * the chosen with norm_topk (transformers' Qwen3MoeSparseMoeBlock, llama.cpp's build_moe_ffn). */
static void moe(const mkc_ref *r, const mkc_node *nd, double *y, const double *x, double *tmp) {
  int E = nd->experts, K = nd->experts_used, dim = nd->n;
  const mkc_tensor *gate = r->tensor[nd->in[2]];
  int ffn = gate->rows / E;
  /* [E] probabilities, [K] the chosen experts' ids, [K][ffn] their hidden values (mkc_ref_moe) */
  double *p = tmp, *ids = tmp + E, *hidden = tmp + E + K;
  double max = -INFINITY, sum = 0;
  for (int e = 0; e < E; e++) {
    p[e] = dot_row(r, nd->in[1], (size_t)e, dim, x) + bias_at(r, nd->in[5], (size_t)e);
    if (p[e] > max) max = p[e];
  }
  for (int e = 0; e < E; e++) sum += p[e] = exp(p[e] - max);
  for (int e = 0; e < E; e++) p[e] /= sum;
  double w[MKC_MOE_USED_MAX], wsum = 0;
  for (int k = 0; k < K; k++) {
    int best = -1;
    for (int e = 0; e < E; e++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= ids[j] == e;
      if (!taken && (best < 0 || p[e] > p[best])) best = e;
    }
    ids[k] = best;
    wsum += w[k] = p[best];
  }
  for (int i = 0; i < dim; i++) y[i] = 0;
  for (int k = 0; k < K; k++) {
    size_t e = (size_t)ids[k];
    double wk = nd->norm_topk ? w[k] / wsum : w[k], *h = hidden + (size_t)k * ffn;
    for (int f = 0; f < ffn; f++) {
      size_t row = e * ffn + f;
      h[f] = glu(nd->act, dot_row(r, nd->in[2], row, dim, x) + bias_at(r, nd->in[6], row),
                 dot_row(r, nd->in[3], row, dim, x) + bias_at(r, nd->in[7], row));
    }
    for (int i = 0; i < dim; i++)
      y[i] += wk * (dot_row(r, nd->in[4], e * dim + i, ffn, h) +
                    bias_at(r, nd->in[8], e * dim + (size_t)i));
  }
}

int mkc_ref_step(mkc_ref *r, int token, double *logits) {
  const mkc_graph *g = r->g;
  if (r->pos >= g->max_ctx) {
    fprintf(stderr, "mkc: error: context full (%d tokens)\n", g->max_ctx);
    return -1;
  }
  /* no logits asked: the LM head's matmul (the logits' input) and the logits are skipped */
  int head = g->nodes[r->logits_node].in[0];
  if (logits || g->nodes[head].op != MKC_OP_MATMUL) head = -1;
  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    double *y = r->value[id];
    const double *a = nd->in[0] >= 0 ? r->value[nd->in[0]] : NULL;
    const double *b = nd->in[1] >= 0 ? r->value[nd->in[1]] : NULL;
    if (!logits && (id == head || id == r->logits_node)) continue;
    switch (nd->op) {
    case MKC_OP_TOKENS:
      for (int i = 0; i < nd->n; i++) y[i] = token;
      break;
    case MKC_OP_FEATURE:
      memcpy(y, r->feature, (size_t)nd->n * sizeof *y);
      break;
    case MKC_OP_WEIGHT:
      break;
    case MKC_OP_EMBED: {
      const mkc_tensor *w = r->tensor[nd->in[0]];
      if (token < 0 || token >= w->rows) {
        fprintf(stderr, "mkc: error: token %d outside the vocab [0, %d)\n", token, w->rows);
        return -1;
      }
      double scale = nd->scale > 0 ? nd->scale : 1.0;
      for (int i = 0; i < nd->n; i++)
        y[i] = weight_at(r, nd->in[0], (size_t)token * w->cols + i) * scale;
      break;
    }
    case MKC_OP_RMSNORM:
      rmsnorm(y, a, r->tensor[nd->in[1]]->data, nd->n, nd->group, nd->eps);
      break;
    case MKC_OP_MATMUL:
      matmul(r, y, a, nd->in[1], nd->in[2] >= 0 ? r->tensor[nd->in[2]] : NULL);
      break;
    case MKC_OP_ROPE:
      rope(y, a, nd, r->g->max_ctx, r->pos);
      break;
    case MKC_OP_ATTENTION:
      attention(r, y, a, b, r->value[nd->in[2]], nd);
      break;
    case MKC_OP_RECURRENT:
      recurrent(r, id, y, a, b);
      break;
    case MKC_OP_ADD: { /* a + scale * b (Granite's residual_multiplier; 0: 1) */
      double scale = nd->scale > 0 ? nd->scale : 1.0;
      for (int i = 0; i < nd->n; i++) y[i] = a[i] + scale * b[i];
      break;
    }
    case MKC_OP_SWIGLU:
      for (int i = 0; i < nd->n; i++) y[i] = glu(nd->act, a[i], b[i]);
      break;
    case MKC_OP_MOE:
      moe(r, nd, y, a, r->rec[id]);
      break;
    case MKC_OP_LOGITS: { /* scaled (Granite's 1 / logits_scaling; 0: 1), then capped */
      double scale = nd->scale > 0 ? nd->scale : 1.0;
      for (int i = 0; i < nd->n; i++) y[i] = softcap(scale * a[i], nd->softcap);
      break;
    }
    }
  }
  if (logits) memcpy(logits, r->value[r->logits_node], (size_t)g->vocab * sizeof *logits);
  r->pos++;
  return 0;
}

int mkc_ref_set_feature(mkc_ref *r, const float *f, int n) {
  if (r->feature_node < 0 || r->g->nodes[r->feature_node].n != n) {
    fprintf(stderr, "mkc: error: reference: %s\n",
            r->feature_node < 0 ? "the graph has no feature" : "feature of the wrong size");
    return -1;
  }
  for (int i = 0; i < n; i++) r->feature[i] = f[i];
  return 0;
}

const double *mkc_ref_hidden(const mkc_ref *r, int *n) {
  if (r->hidden_node < 0) return NULL;
  *n = r->g->nodes[r->hidden_node].n;
  return r->value[r->hidden_node];
}

void mkc_ref_follow_kv(mkc_ref *r, const void *kv) { r->kernel_kv = kv; }

const mkc_ref_kv_stats *mkc_ref_kv_check(const mkc_ref *r) { return &r->kv_stats; }

const double *mkc_ref_moe(const mkc_ref *r, int id, const double **hidden) {
  const mkc_node *nd = &r->g->nodes[id];
  if (nd->op != MKC_OP_MOE) return NULL;
  *hidden = r->rec[id] + nd->experts + nd->experts_used;
  return r->rec[id] + nd->experts;
}

const double *mkc_ref_value(const mkc_ref *r, int id) {
  return id >= 0 && id < r->g->n_nodes ? r->value[id] : NULL;
}

int mkc_ref_pos(const mkc_ref *r) { return r->pos; }

void mkc_ref_truncate(mkc_ref *r, int pos) {
  if (pos < 0) pos = 0;
  if (pos < r->pos) r->pos = pos; /* rows past pos are overwritten by the next steps */
}

void mkc_ref_seek(mkc_ref *r, int pos) {
  r->pos = pos < 0 ? 0 : pos > r->g->max_ctx ? r->g->max_ctx : pos;
}

int mkc_ref_layers(const mkc_ref *r) { return r->n_layers; }

double *mkc_ref_kv_cache(mkc_ref *r, int layer, int v, int *kv_dim) {
  if (layer < 0 || layer >= r->n_layers || !r->k_dim[layer]) return NULL;
  *kv_dim = v ? r->v_dim[layer] : r->k_dim[layer];
  return v ? r->v_cache[layer] : r->k_cache[layer];
}

void mkc_ref_close(mkc_ref *r) {
  if (!r) return;
  for (int id = 0; r->value && id < r->g->n_nodes; id++) free(r->value[id]);
  for (int id = 0; r->deq && id < r->g->n_nodes; id++) free(r->deq[id]);
  free(r->deq);
  for (int l = 0; l < r->n_layers; l++) {
    if (r->k_cache) free(r->k_cache[l]);
    if (r->v_cache) free(r->v_cache[l]);
  }
  free(r->value);
  free(r->tensor);
  free(r->k_dim);
  free(r->v_dim);
  free(r->k_cache);
  free(r->v_cache);
  free(r->scores);
  for (int id = 0; r->rec && id < r->g->n_nodes; id++) free(r->rec[id]);
  free(r->rec);
  free(r->feature);
  free(r);
}

int mkc_argmax(const double *x, int n) {
  if (n <= 0) return -1;
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}
