/* Names and cleanup for the graph view (runtime/codegen/graph.h). */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

const char *mkc_op_name(int op) {
#define MKC_OP_NAME(e, lua) [MKC_OP_##e] = #lua,
  static const char *const names[MKC_OP_COUNT] = {MKC_OPS(MKC_OP_NAME)};
#undef MKC_OP_NAME
  return op >= 0 && op < MKC_OP_COUNT && names[op] ? names[op] : "unknown";
}

static const char *const KV_DTYPES[MKC_KV_DTYPE_COUNT] = {
    [MKC_KV_DTYPE_F32] = "f32", [MKC_KV_DTYPE_BF16] = "bf16", [MKC_KV_DTYPE_F16] = "f16"};

const char *mkc_kv_dtype_name(int dtype) {
  return dtype >= 0 && dtype < MKC_KV_DTYPE_COUNT ? KV_DTYPES[dtype] : "unknown";
}

int mkc_kv_dtype_from_name(const char *name) {
  for (int d = 0; name && d < MKC_KV_DTYPE_COUNT; d++)
    if (strcmp(name, KV_DTYPES[d]) == 0) return d;
  return -1;
}

int mkc_kv_dtype_bytes(int dtype) { return dtype == MKC_KV_DTYPE_F32 ? 4 : 2; }

int mkc_node_kv_rows(const mkc_graph *g, const mkc_node *nd) {
  return nd->kv_rows > 0 ? nd->kv_rows : g->max_ctx;
}

const mkc_node *mkc_graph_final_norm(const mkc_graph *g) {
  const mkc_node *norm = NULL;
  for (int id = 0; id < g->n_nodes; id++) {
    const mkc_node *nd = &g->nodes[id];
    if (nd->op != MKC_OP_LOGITS) continue;
    const mkc_node *mm = &g->nodes[nd->in[0]];
    norm = mm->op == MKC_OP_MATMUL && g->nodes[mm->in[0]].op == MKC_OP_RMSNORM
               ? &g->nodes[mm->in[0]]
               : NULL;
  }
  return norm;
}

size_t mkc_graph_hidden_at(const mkc_graph *g, int slot, int t) {
  size_t at = slot < 0 ? g->hidden_offset : g->keep_offset + (size_t)slot * g->keep_slot;
  return at + (size_t)t * g->hidden_stride;
}

double mkc_graph_params(const mkc_graph *g) {
  double params = 0;
  for (int i = 0; i < g->n_weights; i++) params += (double)g->weights[i].rows * g->weights[i].cols;
  return params;
}

/* The MOE node one of whose inputs first..last is weight i, or NULL. */
static const mkc_node *moe_reading(const mkc_graph *g, int i, int first, int last) {
  for (int n = 0; n < g->n_nodes; n++) {
    const mkc_node *m = &g->nodes[n];
    for (int k = first; m->op == MKC_OP_MOE && m->experts > 0 && k <= last; k++)
      if (m->in[k] >= 0 && g->nodes[m->in[k]].weight == i) return m;
  }
  return NULL;
}

const mkc_node *mkc_graph_weight_moe(const mkc_graph *g, int i) { return moe_reading(g, i, 2, 4); }

const mkc_node *mkc_graph_bias_moe(const mkc_graph *g, int i) { return moe_reading(g, i, 6, 8); }

int mkc_moe_ffn(const mkc_graph *g, const mkc_node *moe) {
  return g->weights[g->nodes[moe->in[2]].weight].rows / moe->experts;
}

/* The share of weight i a one-input step reads: experts_used / experts of an experts' matrix,
 * else all of it. */
static double step_share(const mkc_graph *g, int i) {
  const mkc_node *m = mkc_graph_weight_moe(g, i);
  return m ? (double)m->experts_used / m->experts : 1.0;
}

double mkc_graph_active_params(const mkc_graph *g) {
  double params = 0;
  for (int i = 0; i < g->n_weights; i++)
    params += step_share(g, i) * g->weights[i].rows * g->weights[i].cols;
  return params;
}

double mkc_graph_weight_bytes(const mkc_graph *g) {
  double bytes = 0;
  for (int i = 0; i < g->n_weights; i++)
    bytes += step_share(g, i) * 2.0 * g->weights[i].rows * g->weights[i].row_stride;
  return bytes;
}

static const char *const ROPE_SCALINGS[MKC_ROPE_SCALING_COUNT] = {
#define MKC_ROPE_SCALING_NAME(e, name) [MKC_ROPE_SCALING_##e] = #name,
    MKC_ROPE_SCALINGS(MKC_ROPE_SCALING_NAME)
#undef MKC_ROPE_SCALING_NAME
};

const char *mkc_rope_scaling_name(int type) {
  return type >= 0 && type < MKC_ROPE_SCALING_COUNT ? ROPE_SCALINGS[type] : "unknown";
}

int mkc_rope_scaling_from_name(const char *name) {
  for (int t = 0; name && t < MKC_ROPE_SCALING_COUNT; t++)
    if (strcmp(name, ROPE_SCALINGS[t]) == 0) return t;
  return -1;
}

/* Frees the members only: the struct itself may live on the stack. */
void mkc_graph_free(mkc_graph *g) {
  if (!g) return;
  for (int i = 0; g->weights && i < g->n_weights; i++) free(g->weights[i].name);
  free(g->weights);
  for (int i = 0; g->nodes && i < g->n_nodes; i++) {
    free(g->nodes[i].rope_short_factor.v);
    free(g->nodes[i].rope_long_factor.v);
  }
  free(g->nodes);
  free(g->graph_path);
  free(g->preset);
  memset(g, 0, sizeof *g);
}
