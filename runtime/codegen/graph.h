/* The graph and its generation-time plan as the C runtime sees them: produced
 * by codegen (Lua) through runtime/codegen/host.c, read by the reference
 * executor, the weight store and the backends. */
#ifndef MKC_GRAPH_H
#define MKC_GRAPH_H

#include <stddef.h>

/* The graph's ops, the one list both sides read: X(ENUM, lua) gives enum
 * mkc_op's MKC_OP_ENUM and the name codegen uses; the host gives codegen the
 * names, and codegen/ir.lua checks at load that it checks exactly these. */
#define MKC_OPS(X)                                                                                 \
  X(TOKENS, tokens)       /* the step's input token ids */                                         \
  X(WEIGHT, weight)       /* a named weight tensor */                                              \
  X(EMBED, embed)         /* in: weight [vocab][dim], tokens -> [dim] */                           \
  X(RMSNORM, rmsnorm)     /* in: x [n], weight [group]; attrs eps, group */                        \
  X(MATMUL, matmul)       /* in: x [cols], weight [rows][cols], bias [rows] or -1 -> [rows] */     \
  X(ROPE, rope)           /* in: x [heads*head_dim]; attrs heads, head_dim, theta, layout */       \
  X(ATTENTION, attention) /* in: q, k, v, sinks [heads] or -1; attrs layer, heads, kv_heads,       \
                             head_dim: appends k, v (a sink: a score that joins the softmax's sum, \
                             with no value: gpt-oss) */                                            \
  X(ADD, add)             /* in: a, b */                                                           \
  X(SWIGLU, swiglu)       /* in: gate, up -> silu(gate) * up */                                    \
  X(LOGITS, logits)   /* in: x [vocab]: the step's output; greedy choice + speculative accept */   \
  X(FEATURE, feature) /* n floats per input the host writes before the step (a drafter's           \
                         conditioning: the target's hidden state); read only by matmuls */         \
  /* in: mixed [q|k|v] before the convolution, gates [a|b], conv weight [channels][conv],          \
   * A_log [heads], dt_bias [heads]; attrs layer, heads, head_dim (k), v_dim, conv: a gated        \
   * delta-rule layer's recurrence -> [heads*v_dim] (exec/delta_rule.h; reference only) */         \
  X(RECURRENT, recurrent)                                                                          \
  /* in: x [dim], router [experts][dim], gate and up [experts * ffn][dim], down                    \
   * [experts * dim][ffn] (expert e's rows from e * rows), then their biases or -1 (all four or    \
   * none: router [experts], gate and up [experts * ffn], down [experts * dim]); attrs experts,    \
   * experts_used, norm_topk, act: a sparse MLP, the sum over the experts_used largest of          \
   * softmax(router x) (those weights renormalized to sum 1 with norm_topk) of each one's          \
   * down(glu(gate x, up x)) -> [dim] (Qwen3-MoE, Mixtral, gpt-oss) */                             \
  X(MOE, moe)

#define MKC_OP_ENUM(e, lua) MKC_OP_##e,
enum mkc_op { MKC_OPS(MKC_OP_ENUM) MKC_OP_COUNT };
#undef MKC_OP_ENUM

enum mkc_rope_layout { MKC_ROPE_INTERLEAVED = 0, MKC_ROPE_NEOX = 1 };
/* A gated MLP's glu(gate, up) (codegen/ir.lua: ir.ACTS): act(gate) * up with SiLU or GELU's tanh
 * form, or gpt-oss's: gate and up clamped (MKC_OAI_LIMIT), gate * sigmoid(MKC_OAI_ALPHA * gate) *
 * (up + 1). */
enum mkc_act { MKC_ACT_SILU = 0, MKC_ACT_GELU_TANH = 1, MKC_ACT_SWIGLU_OAI = 2 };
#define MKC_OAI_ALPHA 1.702
#define MKC_OAI_LIMIT 7.0

/* How a model trained on a shorter context stretches RoPE's frequencies for a
 * longer one (docs/MODELS.md): X(ENUM, name). none: plain RoPE; linear:
 * positions / factor; llama3: Llama 3.1+'s per-frequency factors (factor,
 * low/high_freq_factor, orig_ctx); yarn: YaRN as llama.cpp computes it
 * (factor, orig_ctx, beta_fast/slow, ext_factor, attn_factor). */
#define MKC_ROPE_SCALINGS(X)                                                                       \
  X(NONE, none) X(LINEAR, linear) X(LLAMA3, llama3) X(YARN, yarn) X(LONGROPE, longrope)

#define MKC_ROPE_SCALING_ENUM(e, name) MKC_ROPE_SCALING_##e,
enum mkc_rope_scaling_type { MKC_ROPE_SCALINGS(MKC_ROPE_SCALING_ENUM) MKC_ROPE_SCALING_COUNT };
#undef MKC_ROPE_SCALING_ENUM

/* The KV cache's element type. The kernel rounds K and V to it (to nearest
 * even) when it appends them, and the reference executor rounds alike; f32
 * (0, the value of a graph built by hand) is the reference's unrounded cache. */
enum mkc_kv_dtype {
  MKC_KV_DTYPE_F32 = 0,
  MKC_KV_DTYPE_BF16 = 1,
  MKC_KV_DTYPE_F16 = 2,
  MKC_KV_DTYPE_COUNT
};

/* A node's fields, the one list both sides read: X(KIND, member, lua) is
 * mkc_node's member, read by the host from the field lua of the node codegen
 * exports (codegen/main.lua exports exactly the fields the host names). KIND
 * gives the C type and how the value is read:
 *   OP      int, enum mkc_op from the op's name
 *   INPUTS  int[MKC_NODE_INPUTS], node ids from a list; -1 where unused
 *   INT     int; 0 where absent        INDEX  int; -1 where absent
 *   DOUBLE  double; 0 where absent     SIZE   size_t; 0 where absent
 *   LAYOUT  int, enum mkc_rope_layout from "interleaved" or "neox"
 *   SCALING int, enum mkc_rope_scaling_type from its name; NONE where absent
 *   FACTORS mkc_factors, a list of numbers (mkc_graph_free frees it); empty where absent */
#define MKC_NODE_FIELDS(X)                                                                         \
  X(OP, op, op)                                                                                    \
  X(INPUTS, in, inputs)                                                                            \
  X(INT, n, n)             /* per-token output length (weights: rows) */                           \
  X(INDEX, weight, weight) /* MKC_OP_WEIGHT: index into mkc_graph.weights */                       \
  X(INT, line, line)       /* line in the graph file that created the node */                      \
  X(DOUBLE, eps, eps)      /* rmsnorm */                                                           \
  X(INT, group, group)     /* rmsnorm: values normalized together (n, or head_dim: per head) */    \
  X(DOUBLE, theta, theta)  /* rope base */                                                         \
  X(LAYOUT, layout, layout)                                                                        \
  X(INT, rot_dim, rot_dim) /* rope: the dims rotated, each head's first (0: head_dim) */           \
  X(INT, nope, nope)       /* rope: 1: none rotated, x passed through (a NoPE layer) */            \
  X(SCALING, rope_scaling, rope_scaling) /* rope: none, or the rope_* below scale it */            \
  X(DOUBLE, rope_factor, rope_factor)    /* the context's extension factor */                      \
  X(DOUBLE, rope_low_freq_factor, rope_low_freq_factor)   /* llama3 */                             \
  X(DOUBLE, rope_high_freq_factor, rope_high_freq_factor) /* llama3 */                             \
  X(INT, rope_orig_ctx,                                                                            \
    rope_orig_ctx) /* llama3, yarn, longrope: the context before the extension */                  \
  X(DOUBLE, rope_beta_fast, rope_beta_fast) /* yarn: the ramp's ends, in rotations */              \
  X(DOUBLE, rope_beta_slow, rope_beta_slow)                                                        \
  X(DOUBLE, rope_ext_factor, rope_ext_factor) /* yarn: how much of the ramp to apply */            \
  X(DOUBLE, rope_attn_factor,                                                                      \
    rope_attn_factor) /* yarn (with 1 + 0.1 ln factor), longrope: on cos, sin */                   \
  /* longrope: each pair's frequency divisor, head_dim / 2 of them: the short ones where the       \
   * kernel's context is at most rope_orig_ctx, else the long ones (as llama.cpp picks) */         \
  X(FACTORS, rope_short_factor, rope_short_factor)                                                 \
  X(FACTORS, rope_long_factor, rope_long_factor)                                                   \
  X(INT, heads, heads)                                                                             \
  X(INT, kv_heads, kv_heads)                                                                       \
  X(INT, head_dim, head_dim)                                                                       \
  X(INT, layer, layer)                                                                             \
  X(INT, window, window) /* attention: sees its own and the window - 1 positions before; 0: all */ \
  /* attention: element offsets of its K and V slots in the kernel's KV cache,                     \
   * each [kv_heads][kv_rows][head_dim] (0 in a graph built by hand) */                            \
  X(SIZE, kv_k, kv_k)                                                                              \
  X(SIZE, kv_v, kv_v)                                                                              \
  /* attention: rows per kv head in those slots: max_ctx, or with a window a ring of               \
   * window + t_max rows, position p at row p % kv_rows (0 in a graph built by hand: max_ctx) */   \
  X(INT, kv_rows, kv_rows)                                                                         \
  X(INT, v_dim, v_dim) /* recurrent: values per head (head_dim: keys per head) */                  \
  X(INT, conv, conv)   /* recurrent: the causal convolution's width, inputs */                     \
  /* embed: each embedding times it; attention: the scores'; add: its second operand's (a + s b);  \
   * logits: each logit's, before the cap; 0: the default (1; attention: 1 / sqrt(head_dim)) */    \
  X(DOUBLE, scale, scale)                                                                          \
  X(INT, act, act)                   /* swiglu, moe: enum mkc_act, the gate's activation */        \
  X(INT, experts, experts)           /* moe: the experts, each an MLP of its own */                \
  X(INT, experts_used, experts_used) /* moe: the experts each input runs (top-k) */                \
  X(INT, norm_topk, norm_topk) /* moe: 1: the chosen experts' weights renormalized to sum 1 */     \
  X(DOUBLE, softcap, softcap)  /* attention (scaled scores), logits: c * tanh(x / c); 0: none */   \
  /* matmul, moe, in an imatrix kernel (mkc_gen_opts.imatrix): the float offset in scratch where   \
   * its input's squares are summed, one float a column (a moe's experts' after: imatrix_acc.c;    \
   * 0: none, or another kernel) */                                                                \
  X(SIZE, imatrix, imatrix)

#define MKC_NODE_INPUTS 9
#define MKC_NODE_MEMBER_OP(m) int m;
#define MKC_NODE_MEMBER_INPUTS(m) int m[MKC_NODE_INPUTS];
#define MKC_NODE_MEMBER_INT(m) int m;
#define MKC_NODE_MEMBER_INDEX(m) int m;
#define MKC_NODE_MEMBER_DOUBLE(m) double m;
#define MKC_NODE_MEMBER_SIZE(m) size_t m;
#define MKC_NODE_MEMBER_LAYOUT(m) int m;
#define MKC_NODE_MEMBER_SCALING(m) int m;
#define MKC_NODE_MEMBER_FACTORS(m) mkc_factors m;

typedef struct mkc_factors {
  int n;
  double *v;
} mkc_factors;

typedef struct mkc_node {
#define MKC_NODE_MEMBER(kind, m, lua) MKC_NODE_MEMBER_##kind(m)
  MKC_NODE_FIELDS(MKC_NODE_MEMBER)
#undef MKC_NODE_MEMBER
} mkc_node;

typedef struct mkc_weight_info {
  char *name;     /* GGUF name, e.g. blk.0.attn_q.weight */
  int rows, cols; /* row-major [rows][cols]; vectors have rows 1 */
  size_t offset;  /* offset in the kernel's weight arena, in 2-byte units */
  int row_stride; /* 2-byte units between rows in the arena (bf16: cols padded to 8) */
  /* How the rows are stored: enum mkc_ggml_type (formats/dequant.h), BF16
   * (30), or a block type (Q8_0, Q4_[01], Q5_[01], Q[2-6]_K, IQ1/IQ2/IQ3, IQ4_NL, IQ4_XS) kept as
   * the model file stores it, each row its cols / block blocks, then zero padding to row_stride. */
  int type;
} mkc_weight_info;

#define MKC_KEEP_MAX 8      /* layer outputs a kernel can keep for the host */
#define MKC_MOE_USED_MAX 64 /* a MOE node's experts_used at most (codegen/ir.lua checks it too) */

typedef struct mkc_graph {
  char *graph_path, *preset;
  int n_nodes;
  mkc_node *nodes; /* topologically ordered */
  int n_weights;
  mkc_weight_info *weights;
  /* model sizes (from the preset) */
  int vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, max_ctx;
  /* plan: sizes of what the host allocates for the kernel */
  int t_max;     /* 1 + draft_max: inputs per step */
  int t_chunk;   /* inputs of a prompt chunk (all known): T <= t_chunk; tiled past t_max */
  int step_rows; /* a step's rows, and rows of logits: t_max, or a slot kernel's (wide past t_max)
                  */
  int threads;   /* threads per block (literal in the kernel) */
  size_t weight_elems; /* 2-byte units in the weight arena (bf16 elements, or blocks' bytes / 2) */
  size_t scratch_floats; /* float scratch arena */
  int kv_dtype;          /* enum mkc_kv_dtype */
  size_t kv_bytes;       /* KV cache bytes: the attention nodes' K and V slots, of kv_dtype */
  size_t smem_bytes;     /* dynamic shared memory per block */
  int blocks_per_sm;     /* the grid's blocks per SM at most (MKC_MIN_BLOCKS); 0: all that fit */
  size_t logits_offset;  /* float offset of logits [t_max][logits_stride] in scratch */
  size_t logits_stride;  /* floats between the logits of consecutive inputs */
  size_t
      logprobs_offset; /* float offset of [t_max][MKC_LP_STRIDE] log-probabilities (mkc_state.h) */
  size_t history_offset; /* float offset of the token history, [max_ctx] ints (mkc_accept) */
  size_t choices_offset; /* float offset of the greedy choice after each input, [t_max] ints */
  int n_stages;          /* stages in the kernel, each ended by a sync */
  /* float offset of n_stages + 1 u64 %globaltimer readings of block 0 (at the
   * step's start, then after each stage) when generated with stage timers;
   * 0 without */
  size_t timers_offset;
  /* Nonzero: the kernel's layer loop is the model's layers, so its rounds can
   * draft with the first L of them (mkc_rounds_req.draft_layers) */
  int draft_in_kernel;
  /* The hidden state (mkc_session_hidden): the LM head's input before its
   * norm ([dim] per input), at float offset hidden_offset of the kernel's
   * scratch, hidden_stride floats per input. */
  size_t hidden_offset, hidden_stride;
  /* The graph's feature (MKC_OP_FEATURE): feature_n floats per input (0: the
   * graph has none), which the host writes at float offset feature_offset of
   * scratch, feature_stride floats per input. */
  int feature_n;
  size_t feature_offset, feature_stride;
  /* Layer outputs each step keeps (mkc_gen_opts.keep_layers): layer
   * keep_layers[k]'s at float offset keep_offset + k * keep_slot, each input
   * at hidden_stride; the last layer's is the hidden state above. */
  int n_keep;
  int keep_layers[MKC_KEEP_MAX];
  size_t keep_offset, keep_slot;
  /* 0: one sequence; else a slot kernel (templates/slots.cuh): the state is
   * an array of `slots` mkc_state, kv_bytes holds each slot's cache
   * (kv_bytes / slots each), and slot s's token history is at float offset
   * history_offset + s * history_floats. */
  int slots;
  size_t history_floats;
  /* Paged (kv_pages > 0): the slots share a pool of kv_pages pages of
   * MKC_KV_PAGE positions (kv_bytes in all); slot s's page table is
   * slot_pages ints at float offset page_table_offset + s * slot_pages of
   * scratch, written by the host. */
  int kv_pages, slot_pages;
  size_t page_table_offset;
  /* An imatrix kernel (mkc_gen_opts.imatrix): the matmul stages' sums of
   * squares, imatrix_floats floats from float offset imatrix_offset of
   * scratch (each matmul node's at its imatrix field); 0 floats otherwise. */
  size_t imatrix_offset, imatrix_floats;
} mkc_graph;

void mkc_graph_free(mkc_graph *g);
const char *mkc_op_name(int op);
const char *mkc_kv_dtype_name(int dtype);     /* "bf16", "f16", "f32"; "unknown" */
int mkc_kv_dtype_from_name(const char *name); /* enum mkc_kv_dtype, or -1 */
int mkc_kv_dtype_bytes(int dtype);            /* bytes of one element: 4 (f32) or 2 */
/* An attention node's rows per kv head in the kernel's cache: its kv_rows, or
 * max_ctx in a graph built by hand. Fewer than max_ctx: a sliding window's
 * ring, position p at row p % rows. */
int mkc_node_kv_rows(const mkc_graph *g, const mkc_node *nd);
/* Float offset in the kernel's scratch of input t's hidden state (slot -1:
 * the LM head's input) or of layer keep_layers[slot]'s kept output. */
size_t mkc_graph_hidden_at(const mkc_graph *g, int slot, int t);
/* The final norm: the RMSNORM node the logits' matmul reads (logits(matmul(
 * rmsnorm(x, w), head))), whose input x is the hidden state; NULL in a graph
 * shaped otherwise. */
const mkc_node *mkc_graph_final_norm(const mkc_graph *g);
/* The MOE node whose experts' matrix (gate, up or down) weight i is, or NULL. */
const mkc_node *mkc_graph_weight_moe(const mkc_graph *g, int i);
/* The MOE node whose experts' gate, up or down bias (gpt-oss's) weight i is, or NULL. */
const mkc_node *mkc_graph_bias_moe(const mkc_graph *g, int i);
/* A MOE node's experts' width: its gate's rows an expert. */
int mkc_moe_ffn(const mkc_graph *g, const mkc_node *moe);
/* The parameters of every weight of g (rows x cols). */
double mkc_graph_params(const mkc_graph *g);
/* Those a one-input step computes with: experts' matrices at experts_used / experts. */
double mkc_graph_active_params(const mkc_graph *g);
/* The bytes of g's weight arena a one-input step streams: every weight once, as stored, an
 * experts' matrix at experts_used / experts of its bytes (the experts the input runs). */
double mkc_graph_weight_bytes(const mkc_graph *g);

const char *mkc_rope_scaling_name(int type);      /* "none", "linear", ...; "unknown" */
int mkc_rope_scaling_from_name(const char *name); /* enum mkc_rope_scaling_type, or -1 */

#endif
