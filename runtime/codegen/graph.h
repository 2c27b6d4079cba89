/* The graph and its generation-time plan as the C runtime sees them: produced
 * by codegen (Lua) through runtime/codegen/host.c, read by the reference
 * executor, the weight store and the backends. */
#ifndef MKC_GRAPH_H
#define MKC_GRAPH_H

#include <stddef.h>

enum mkc_op {
  MKC_OP_TOKENS,    /* the step's input token ids */
  MKC_OP_WEIGHT,    /* a named weight tensor */
  MKC_OP_EMBED,     /* in: weight [vocab][dim], tokens -> [dim] */
  MKC_OP_RMSNORM,   /* in: x [n], weight [group]; attrs eps, group */
  MKC_OP_MATMUL,    /* in: x [cols], weight [rows][cols], bias [rows] or -1 -> [rows] */
  MKC_OP_ROPE,      /* in: x [heads*head_dim]; attrs heads, head_dim, theta, layout */
  MKC_OP_ATTENTION, /* in: q, k, v; attrs layer, heads, kv_heads, head_dim: appends k,v at pos */
  MKC_OP_ADD,       /* in: a, b */
  MKC_OP_SWIGLU,    /* in: gate, up -> silu(gate) * up */
  MKC_OP_LOGITS,    /* in: x [vocab]: the step's output; greedy choice + speculative accept */
  MKC_OP_COUNT
};

enum mkc_rope_layout { MKC_ROPE_INTERLEAVED = 0, MKC_ROPE_NEOX = 1 };

/* The KV cache's element type. The kernel rounds K and V to it (to nearest
 * even) when it appends them, and the reference executor rounds alike; f32
 * (0, the value of a graph built by hand) is the reference's unrounded cache. */
enum mkc_kv_dtype {
  MKC_KV_DTYPE_F32 = 0,
  MKC_KV_DTYPE_BF16 = 1,
  MKC_KV_DTYPE_F16 = 2,
  MKC_KV_DTYPE_COUNT
};

typedef struct mkc_node {
  int op;       /* enum mkc_op */
  int in[3];    /* input node ids, -1 where unused */
  int n;        /* per-token output length (weights: rows) */
  int weight;   /* MKC_OP_WEIGHT: index into mkc_graph.weights */
  int line;     /* line in the graph file that created the node */
  double eps;   /* rmsnorm */
  int group;    /* rmsnorm: values normalized together (n: the whole vector; head_dim: per head) */
  double theta; /* rope base */
  int layout;   /* enum mkc_rope_layout */
  int heads, kv_heads, head_dim, layer;
  /* attention: element offsets of its K and V slots in the kernel's KV cache,
   * each [kv_heads][max_ctx][head_dim] (0 in a graph built by hand) */
  size_t kv_k, kv_v;
} mkc_node;

typedef struct mkc_weight_info {
  char *name;     /* GGUF name, e.g. blk.0.attn_q.weight */
  int rows, cols; /* row-major [rows][cols]; vectors have rows 1 */
  size_t offset;  /* element offset in the kernel's bf16 weight arena */
  int row_stride; /* elements between rows in the arena (cols padded to 8) */
} mkc_weight_info;

typedef struct mkc_graph {
  char *graph_path, *preset;
  int n_nodes;
  mkc_node *nodes; /* topologically ordered */
  int n_weights;
  mkc_weight_info *weights;
  /* model sizes (from the preset) */
  int vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, max_ctx;
  /* plan: sizes of what the host allocates for the kernel */
  int t_max;             /* 1 + draft_max: inputs per step */
  int threads;           /* threads per block (literal in the kernel) */
  size_t weight_elems;   /* bf16 elements in the weight arena */
  size_t scratch_floats; /* float scratch arena */
  int kv_dtype;          /* enum mkc_kv_dtype */
  size_t kv_bytes;       /* KV cache bytes: the attention nodes' K and V slots, of kv_dtype */
  size_t smem_bytes;     /* dynamic shared memory per block */
  size_t logits_offset;  /* float offset of logits [t_max][logits_stride] in scratch */
  size_t logits_stride;  /* floats between the logits of consecutive inputs */
  int n_stages;          /* stages in the kernel, each ended by a sync */
} mkc_graph;

void mkc_graph_free(mkc_graph *g);
const char *mkc_op_name(int op);
const char *mkc_kv_dtype_name(int dtype);     /* "bf16", "f16", "f32"; "unknown" */
int mkc_kv_dtype_from_name(const char *name); /* enum mkc_kv_dtype, or -1 */

#endif
