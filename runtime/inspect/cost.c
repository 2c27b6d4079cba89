/* What each template call costs, read from its literal arguments in the AST
 * (each found by the parameter name the template's definition gives it),
 * and the cross-check against what codegen recorded. Both sides count the
 * same things (docs/INSPECT.md): every distinct global byte a stage reads or
 * writes once per step (weights, activations, KV rows; not the state struct
 * or the 8-byte argmax partials), and the multiply-add FLOPs of matmuls and
 * attention over the padded rows the kernel really runs. The count is
 * deliberately made again here from the code, apart from codegen's: it is the
 * oracle that codegen's stage metadata is checked against. */
#include "inspect.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long mkc_qty_eval(mkc_qty q, mkc_step_point at) {
  long long T = at.tokens, ctx = at.pos + at.tokens;
  long long att = T * at.pos + T * (T + 1) / 2; /* token t sees pos + t + 1 positions */
  return q.c + q.t * T + q.ctx * ctx + q.att * att;
}

static int qty_eq(mkc_qty a, mkc_qty b) {
  return a.c == b.c && a.t == b.t && a.ctx == b.ctx && a.att == b.att;
}

static void qty_str(mkc_qty q, char *out, size_t size) {
  int n = 0;
  out[0] = 0;
  const long long v[4] = {q.c, q.t, q.ctx, q.att};
  static const char *const unit[4] = {"", "*t", "*ctx", "*att"};
  for (int i = 0; i < 4; i++)
    if (v[i]) n += snprintf(out + n, size - (size_t)n, "%s%lld%s", n ? "+" : "", v[i], unit[i]);
  if (!n) snprintf(out, size, "0");
}

/* ---- the AST side: one model per template, arguments by parameter name ---- */

typedef struct model_ctx {
  mkc_stage *s;
  const mkc_call *call;
  int kv_elem; /* bytes per KV cache element (the header's KV type) */
  char problem[200];
} model_ctx;

static int arena_of(const char *base) {
  if (strcmp(base, "weights") == 0) return MKC_ARENA_WEIGHTS;
  if (strcmp(base, "scratch") == 0) return MKC_ARENA_SCRATCH;
  if (strcmp(base, "kv") == 0) return MKC_ARENA_KV;
  return -1;
}

/* Where the callee's parameter `name` is in its definition, or -1 with a problem
 * recorded: the template's signature is the one definition of its arguments. */
static int param(model_ctx *m, const char *name) {
  const mkc_call *c = m->call;
  for (int i = 0; i < c->n_params; i++)
    if (strcmp(c->params[i], name) == 0) return i;
  if (m->problem[0]) return -1;
  if (c->template_file[0])
    snprintf(m->problem, sizeof m->problem,
             "%s at line %d: its template (%s:%d) has no parameter %s", c->name, c->line,
             c->template_file, c->template_line, name);
  else
    snprintf(m->problem, sizeof m->problem,
             "%s at line %d: no template definition names its parameter %s", c->name, c->line,
             name);
  return -1;
}

/* A constant argument; records a problem when it is not one. */
static long long num(model_ctx *m, const char *name) {
  int i = param(m, name);
  if (i < 0) return 0;
  const mkc_arg *a = &m->call->args[i];
  if (i >= m->call->n_args || a->kind != MKC_ARG_INT) {
    if (!m->problem[0])
      snprintf(m->problem, sizeof m->problem, "%s at line %d: argument %d is not a constant",
               m->call->name, m->call->line, i + 1);
    return 0;
  }
  return a->value;
}

/* A region of the stage's AST side: identical (direction, arena, offset) entries merge to
 * the larger size, as the rms prologue reads part of what the matvec reads. */
static void add_region(mkc_stage *s, int write, int arena, long long offset, mkc_qty bytes) {
  for (int k = 0; k < s->n_ast_regions; k++) {
    mkc_region *r = &s->ast_regions[k];
    if (r->write == write && r->arena == arena && r->offset == offset) {
      if (bytes.c > r->bytes.c) r->bytes.c = bytes.c;
      if (bytes.t > r->bytes.t) r->bytes.t = bytes.t;
      if (bytes.ctx > r->bytes.ctx) r->bytes.ctx = bytes.ctx;
      return;
    }
  }
  if (s->n_ast_regions == 2 * MKC_INSPECT_MAX_REGIONS) return;
  mkc_region *r = &s->ast_regions[s->n_ast_regions++];
  memset(r, 0, sizeof *r);
  r->write = write;
  r->arena = arena;
  r->offset = offset;
  r->bytes = bytes;
}

/* A global range the call touches through parameter `name` (a null pointer: none). */
static void touch(model_ctx *m, const char *name, int write, mkc_qty bytes) {
  int i = param(m, name);
  if (i < 0 || i >= m->call->n_args) return;
  const mkc_arg *a = &m->call->args[i];
  if (a->kind == MKC_ARG_NULL) return;
  int arena = a->kind == MKC_ARG_BUFFER ? arena_of(a->base) : -1;
  if (arena < 0) {
    if (!m->problem[0])
      snprintf(m->problem, sizeof m->problem,
               "%s at line %d: argument %d is not a weights/scratch/kv offset", m->call->name,
               m->call->line, i + 1);
    return;
  }
  add_region(m->s, write, arena, a->value, bytes);
}

/* Bytes of `rows` rows of the matrix argument `name`: its row bytes as
 * mkc_wmat_of gives them (bf16 or a quantized block type). */
static long long matrix_bytes(model_ctx *m, const char *name, long long rows) {
  int i = param(m, name);
  if (i < 0 || i >= m->call->n_args) return 0;
  const mkc_arg *a = &m->call->args[i];
  if (a->row_bytes <= 0 && !m->problem[0])
    snprintf(m->problem, sizeof m->problem,
             "%s at line %d: argument %d is not a matrix, mkc_wmat_of(weights + N, BYTES, TYPE)",
             m->call->name, m->call->line, i + 1);
  return rows * a->row_bytes;
}

static void work(model_ctx *m, mkc_qty items, const char *unit, mkc_qty flops) {
  m->s->ast_items = items;
  snprintf(m->s->ast_unit, sizeof m->s->ast_unit, "%s", unit);
  m->s->ast_flops = flops;
}

static int is_null(model_ctx *m, const char *name) {
  int i = param(m, name);
  return i >= 0 && i < m->call->n_args && m->call->args[i].kind == MKC_ARG_NULL;
}

#define Q(c_, t_, ctx_, att_) ((mkc_qty){(c_), (t_), (ctx_), (att_)})
#define PADDED(n) (((n) + 7) / 8 * 8) /* a weight row as the arena holds it */
#define NORM_READ(n_chunks)                                                                        \
  touch(m, "norm_w", 0, Q(16 * (n_chunks), 0, 0, 0)) /* norm weights: a padded row of bf16 */

static void model_embed(model_ctx *m) {
  long long dim = num(m, "dim");
  touch(m, "table", 0, Q(0, matrix_bytes(m, "table", 1), 0, 0)); /* one table row per token */
  touch(m, "x", 1, Q(0, 4 * dim, 0, 0));
  work(m, Q(0, dim, 0, 0), "thread", Q(0, 0, 0, 0));
}

static void model_rms_prologue(model_ctx *m) { touch(m, "x", 0, Q(0, 4 * num(m, "n"), 0, 0)); }

/* The matmul stages' tiled twins (templates/gemm.cuh, prompt chunks) touch
 * the same ranges as the CUDA-core calls beside them, per token and per step;
 * the stage's items and flops are the CUDA-core call's (a decode step's). */
static void matvec_ranges(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  touch(m, "w", 0, Q(matrix_bytes(m, "w", rows), 0, 0, 0));
  touch(m, "x", 0, Q(0, 4 * cols, 0, 0));
  NORM_READ(cols / 8);
  touch(m, "out", 1, Q(0, 4 * rows, 0, 0));
  if (num(m, "accumulate")) touch(m, "out", 0, Q(0, 4 * rows, 0, 0)); /* read-modify-write */
  touch(m, "bias", 0, Q(2 * PADDED(rows), 0, 0, 0));                  /* the bias (null: none) */
}

static void model_matvec(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  matvec_ranges(m);
  work(m, Q(rows, 0, 0, 0), "warp", Q(0, 2 * rows * cols, 0, 0));
}

static void swiglu_ranges(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  touch(m, "w_gate", 0, Q(matrix_bytes(m, "w_gate", rows), 0, 0, 0));
  touch(m, "w_up", 0, Q(matrix_bytes(m, "w_up", rows), 0, 0, 0));
  touch(m, "x", 0, Q(0, 4 * cols, 0, 0));
  NORM_READ(cols / 8);
  touch(m, "out", 1, Q(0, 4 * rows, 0, 0));
}

static void model_matvec_swiglu(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  swiglu_ranges(m);
  work(m, Q(rows, 0, 0, 0), "warp", Q(0, 4 * rows * cols, 0, 0));
}

/* What both Q/K/V calls touch: weights, biases, the input, q, the KV rows. */
static void qkv_ranges(model_ctx *m) {
  long long cols = 8 * num(m, "n_chunks"), heads = num(m, "heads"), kvh = num(m, "kv_heads");
  long long hd = num(m, "head_dim"), kv_row = m->kv_elem * kvh * hd;
  touch(m, "w_q", 0, Q(matrix_bytes(m, "w_q", heads * hd), 0, 0, 0));
  touch(m, "w_k", 0, Q(matrix_bytes(m, "w_k", kvh * hd), 0, 0, 0));
  touch(m, "w_v", 0, Q(matrix_bytes(m, "w_v", kvh * hd), 0, 0, 0));
  touch(m, "b_q", 0, Q(2 * PADDED(heads * hd), 0, 0, 0)); /* biases (null: none) */
  touch(m, "b_k", 0, Q(2 * PADDED(kvh * hd), 0, 0, 0));
  touch(m, "b_v", 0, Q(2 * PADDED(kvh * hd), 0, 0, 0));
  touch(m, "x", 0, Q(0, 4 * cols, 0, 0));
  NORM_READ(cols / 8);
  touch(m, "q_norm_w", 0, Q(2 * PADDED(hd), 0, 0, 0)); /* head norm weights (null: none) */
  touch(m, "k_norm_w", 0, Q(2 * PADDED(hd), 0, 0, 0));
  touch(m, "q_out", 1, Q(0, 4 * heads * hd, 0, 0));
  touch(m, "k_cache", 1, Q(0, kv_row, 0, 0)); /* K rows at pos..pos+T-1 */
  touch(m, "v_cache", 1, Q(0, kv_row, 0, 0));
}

static void model_gemm_matvec(model_ctx *m) { matvec_ranges(m); }
static void model_gemm_swiglu(model_ctx *m) { swiglu_ranges(m); }
static void model_gemm_qkv(model_ctx *m) { qkv_ranges(m); }

static void model_qkv_rope(model_ctx *m) {
  long long cols = 8 * num(m, "n_chunks"), heads = num(m, "heads"), kvh = num(m, "kv_heads");
  long long hd = num(m, "head_dim");
  qkv_ranges(m);
  /* head_ready: a counter per head, not counted. A normed head is written raw and read back:
   * q in place, k in k_raw (both float). */
  if (!is_null(m, "q_norm_w")) touch(m, "q_out", 0, Q(0, 4 * heads * hd, 0, 0));
  if (is_null(m, "k_norm_w") != is_null(m, "k_raw") && !m->problem[0])
    snprintf(m->problem, sizeof m->problem,
             "%s at line %d: a K head norm needs k_raw and k_raw needs a K head norm",
             m->call->name, m->call->line);
  touch(m, "k_raw", 1, Q(0, 4 * kvh * hd, 0, 0));
  touch(m, "k_raw", 0, Q(0, 4 * kvh * hd, 0, 0));
  work(m, Q((heads + 2 * kvh) * hd / 2, 0, 0, 0), "warp",
       Q(0, 2 * (heads + 2 * kvh) * hd * cols, 0, 0));
}

/* The experts' first half (templates/moe.cuh): at most K experts' gate and up rows an input
 * (which ones depends on the input), its row and router scores read, its K experts' hidden
 * rows and its choice (K ids, K weights) written. */
static void model_moe_up(model_ctx *m) {
  long long K = num(m, "K"), ffn = num(m, "ffn"), cols = 8 * num(m, "n_chunks");
  touch(m, "router", 0, Q(0, 4 * num(m, "E"), 0, 0));
  touch(m, "w_gate", 0, Q(0, matrix_bytes(m, "w_gate", K * ffn), 0, 0));
  touch(m, "w_up", 0, Q(0, matrix_bytes(m, "w_up", K * ffn), 0, 0));
  touch(m, "x", 0, Q(0, 4 * cols, 0, 0));
  NORM_READ(cols / 8);
  touch(m, "b_gate", 0, Q(0, 2 * K * ffn, 0, 0)); /* the K experts' biases (null: none) */
  touch(m, "b_up", 0, Q(0, 2 * K * ffn, 0, 0));
  touch(m, "out", 1, Q(0, 4 * K * ffn, 0, 0));
  touch(m, "choice", 1, Q(0, 4 * 2 * K, 0, 0));
  work(m, Q(0, K * ffn, 0, 0), "warp", Q(0, 4 * K * ffn * cols, 0, 0));
}

/* The second half: K experts' down rows an input, its hidden rows and choice read, added into
 * the residual (read-modify-write). */
static void model_moe_down(model_ctx *m) {
  long long K = num(m, "K"), dim = num(m, "dim"), cols = 8 * num(m, "n_chunks");
  touch(m, "w_down", 0, Q(0, matrix_bytes(m, "w_down", K * dim), 0, 0));
  touch(m, "b_down", 0, Q(0, 2 * K * dim, 0, 0)); /* the K experts' biases (null: none) */
  touch(m, "hidden", 0, Q(0, 4 * K * num(m, "ffn"), 0, 0));
  touch(m, "choice", 0, Q(0, 4 * 2 * K, 0, 0));
  touch(m, "out", 0, Q(0, 4 * dim, 0, 0));
  touch(m, "out", 1, Q(0, 4 * dim, 0, 0));
  work(m, Q(0, dim, 0, 0), "warp", Q(0, 2 * K * dim * cols, 0, 0));
}

/* What both attention calls touch (the tiled one: templates/gemm_attn.cuh). */
static void attention_ranges(model_ctx *m) {
  long long heads = num(m, "heads"), group = num(m, "group"), hd = num(m, "head_dim");
  long long kvh = group > 0 ? heads / group : 0, kv_row = m->kv_elem * kvh * hd;
  touch(m, "q", 0, Q(0, 4 * heads * hd, 0, 0));
  touch(m, "k_cache", 0, Q(0, 0, kv_row, 0)); /* every cached row of each kv head, once */
  touch(m, "v_cache", 0, Q(0, 0, kv_row, 0));
  touch(m, "out", 1, Q(0, 4 * heads * hd, 0, 0));
  touch(m, "sinks", 0, Q(2 * PADDED(heads), 0, 0, 0)); /* the sinks (null: none) */
}

static void model_gemm_attention(model_ctx *m) { attention_ranges(m); }

static void model_attention(model_ctx *m) {
  long long heads = num(m, "heads"), group = num(m, "group"), hd = num(m, "head_dim");
  long long pass = num(m, "pass_heads"), passes = pass > 0 ? (group + pass - 1) / pass : 0;
  long long kvh = group > 0 ? heads / group : 0;
  attention_ranges(m);
  /* a unit per kv head, pass of its query heads and token (split-KV: the split partials,
   * per block and not per position, are not counted, as the argmax partials) */
  work(m, Q(0, kvh * passes, 0, 0), "block", Q(0, 0, 0, 4 * hd * heads));
}

/* Deliberately alike model_matvec: the LM head is a matvec into the logits. */
static void lm_head_ranges(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  touch(m, "w", 0, Q(matrix_bytes(m, "w", rows), 0, 0, 0));
  touch(m, "x", 0, Q(0, 4 * cols, 0, 0));
  NORM_READ(cols / 8);
  touch(m, "logits", 1, Q(0, 4 * rows, 0, 0));
}

static void model_lm_head(model_ctx *m) {
  long long rows = num(m, "rows"), cols = 8 * num(m, "n_chunks");
  lm_head_ranges(m);
  work(m, Q(rows, 0, 0, 0), "warp", Q(0, 2 * rows * cols, 0, 0));
}

/* A wide slot step's LM head (templates/gemm.cuh): the same ranges. */
static void model_gemm_lm_head(model_ctx *m) { lm_head_ranges(m); }

static void model_accept(model_ctx *m) {
  work(m, Q(0, 1, 0, 0), "thread of block 0", Q(0, 0, 0, 0));
}

/* The sampler: a block per input position; its traffic (the logits again,
 * only when sampling) is not counted, as the emitter declares. */
static void model_sample(model_ctx *m) { work(m, Q(0, 1, 0, 0), "block", Q(0, 0, 0, 0)); }

/* The sampler's candidates: every block's slice of each position's logits;
 * as for the sampler, its traffic is not counted. */
static void model_sample_cands(model_ctx *m) {
  work(m, Q(0, num(m, "vocab"), 0, 0), "thread", Q(0, 0, 0, 0));
}

/* A layer's output kept for the host: every input's row, a thread per value;
 * its few KB are not counted, as the emitter declares. */
static void model_keep(model_ctx *m) { work(m, Q(0, num(m, "n"), 0, 0), "thread", Q(0, 0, 0, 0)); }

/* bench --stages' clock reading: one word of block 0, not counted. */
static void model_stage_time(model_ctx *m) { (void)m; }

/* A flow wait (templates/common.cuh) moves no data; its place in the stage is
 * checked by check_flow. */
static void model_flow_wait(model_ctx *m) { (void)m; }

/* An L2 prefetch of rows the stage's own calls read (and count). */
static void model_prefetch_first(model_ctx *m) { (void)m; }

/* An L2 prefetch of the next stage's weights (MKC_NEXT_PREFETCH): a hint; that stage counts
 * their bytes. */
static void model_prefetch_next(model_ctx *m) { (void)m; }

/* A block barrier (a slot kernel's, between slots' calls): no global traffic. */
static void model_sync_block(model_ctx *m) { (void)m; }

static const struct {
  const char *name;
  void (*model)(model_ctx *m);
} MODELS[] = {
    {"mkc_embed", model_embed},
    {"mkc_rms_prologue", model_rms_prologue},
    {"mkc_matvec", model_matvec},
    {"mkc_matvec_swiglu", model_matvec_swiglu},
    {"mkc_qkv_rope", model_qkv_rope},
    {"mkc_attention", model_attention},
    {"mkc_lm_head", model_lm_head},
    {"mkc_accept", model_accept},
    {"mkc_sample", model_sample},
    {"mkc_sample_cands", model_sample_cands},
    {"mkc_keep", model_keep},
    {"mkc_stage_time", model_stage_time},
    {"mkc_flow_wait", model_flow_wait},
    {"mkc_prefetch_first", model_prefetch_first},
    {"mkc_prefetch_next", model_prefetch_next},
    {"mkc_sync_block", model_sync_block},
    {"mkc_gemm_matvec", model_gemm_matvec},
    {"mkc_gemm_swiglu", model_gemm_swiglu},
    {"mkc_gemm_qkv", model_gemm_qkv},
    {"mkc_gemm_attention", model_gemm_attention},
    {"mkc_gemm_lm_head", model_gemm_lm_head},
    {"mkc_moe_up", model_moe_up},
    {"mkc_moe_down", model_moe_down},
};

static void model_call(model_ctx *m) {
  for (size_t i = 0; i < sizeof MODELS / sizeof *MODELS; i++)
    if (strcmp(m->call->name, MODELS[i].name) == 0) {
      MODELS[i].model(m);
      return;
    }
  snprintf(m->problem, sizeof m->problem, "%s at line %d: a call mkc inspect has no model for",
           m->call->name, m->call->line);
}

/* A tiled twin (mkc_gemm_*, a prompt chunk's variant of the stage) must
 * touch every range exactly as the stage's other calls (its CUDA-core twin)
 * do: the metadata is compared with the larger of two sizes, so a literal
 * changed in one variant alone would otherwise go unseen. */
static void check_twin(mkc_stage *s, int twin, int kv_elem, char *problem, size_t size) {
  static mkc_stage alone, rest; /* regions only; too large for the stack */
  alone.n_ast_regions = rest.n_ast_regions = 0;
  for (int i = 0; i < s->ast.n_calls; i++) {
    model_ctx m = {i == twin ? &alone : &rest, &s->ast.calls[i], kv_elem, ""};
    model_call(&m);
  }
  for (int k = 0; k < alone.n_ast_regions && !problem[0]; k++) {
    const mkc_region *a = &alone.ast_regions[k];
    int same = 0;
    for (int j = 0; j < rest.n_ast_regions; j++) {
      const mkc_region *b = &rest.ast_regions[j];
      same |= a->write == b->write && a->arena == b->arena && a->offset == b->offset &&
              qty_eq(a->bytes, b->bytes);
    }
    if (!same) {
      char q[64];
      qty_str(a->bytes, q, sizeof q);
      snprintf(problem, size,
               "%s at line %d %s %s+%lld (%s bytes), which its CUDA-core twin does not alike",
               s->ast.calls[twin].name, s->ast.calls[twin].line, a->write ? "writes" : "reads",
               a->arena == MKC_ARENA_WEIGHTS ? "weights"
               : a->arena == MKC_ARENA_KV    ? "kv"
                                             : "scratch",
               a->offset, q);
    }
  }
}

/* Builds the AST-side regions, items and flops of a stage; problems found
 * on the way are returned through problem (first one only). */
static void model_stage(mkc_stage *s, int kv_elem, char *problem, size_t size) {
  s->n_ast_regions = 0;
  memset(&s->ast_items, 0, sizeof s->ast_items);
  memset(&s->ast_flops, 0, sizeof s->ast_flops);
  s->ast_unit[0] = 0;
  problem[0] = 0;
  for (int i = 0; i < s->ast.n_calls; i++) {
    model_ctx m = {s, &s->ast.calls[i], kv_elem, ""};
    model_call(&m);
    if (m.problem[0] && !problem[0]) snprintf(problem, size, "%s", m.problem);
  }
  for (int i = 0; i < s->ast.n_calls && !problem[0]; i++)
    if (strncmp(s->ast.calls[i].name, "mkc_gemm_", 9) == 0)
      check_twin(s, i, kv_elem, problem, size);
}

static const char *const ARENA[MKC_ARENA_COUNT] = {"weights", "scratch", "kv"};

__attribute__((format(printf, 3, 4))) static void mismatch(mkc_inspect_report *r, int stage,
                                                           const char *fmt, ...) {
  mkc_mismatch *m = realloc(r->mismatches, (size_t)(r->n_mismatches + 1) * sizeof *m);
  if (!m) return;
  r->mismatches = m;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m[r->n_mismatches].what, sizeof m->what, fmt, ap);
  va_end(ap);
  m[r->n_mismatches++].stage = stage;
}

/* Items, flops and sync: the comment's against the code's. */
static void check_work(mkc_inspect_report *r, int n, const mkc_stage *s) {
  const mkc_stage_meta *mt = &s->meta;
  char a[64], b[64];
  if (!qty_eq(mt->items, s->ast_items) || strcmp(mt->unit, s->ast_unit) != 0) {
    qty_str(mt->items, a, sizeof a);
    qty_str(s->ast_items, b, sizeof b);
    mismatch(r, n, "items: metadata %s (one %s each), code %s (one %s each)", a, mt->unit, b,
             s->ast_unit[0] ? s->ast_unit : "?");
  }
  if (!qty_eq(mt->flops, s->ast_flops)) {
    qty_str(mt->flops, a, sizeof a);
    qty_str(s->ast_flops, b, sizeof b);
    mismatch(r, n, "flops: metadata %s, code %s", a, b);
  }
  const char *want_sync = strcmp(mt->sync, "grid") == 0   ? "grid"
                          : strcmp(mt->sync, "flow") == 0 ? "flow"
                                                          : "none";
  if (strcmp(want_sync, s->ast.sync) != 0)
    mismatch(r, n, "sync: metadata %s, code %s", mt->sync, s->ast.sync);
}

/* Whether some call of the stage passes smem + offset. */
static int smem_passed(const mkc_stage *s, long offset) {
  for (int c = 0; c < s->ast.n_calls; c++)
    for (int k = 0; k < s->ast.calls[c].n_args; k++) {
      const mkc_arg *arg = &s->ast.calls[c].args[k];
      if (arg->kind == MKC_ARG_BUFFER && strcmp(arg->base, "smem") == 0 && arg->value == offset)
        return 1;
    }
  return 0;
}

/* smem: the offsets the calls use are the regions' offsets, and fit the stage. */
static void check_smem(mkc_inspect_report *r, int n, const mkc_stage *s) {
  const mkc_stage_meta *mt = &s->meta;
  for (int c = 0; c < s->ast.n_calls; c++)
    for (int k = 0; k < s->ast.calls[c].n_args; k++) {
      const mkc_arg *arg = &s->ast.calls[c].args[k];
      if (arg->kind != MKC_ARG_BUFFER || strcmp(arg->base, "smem") != 0) continue;
      int found = 0;
      for (int j = 0; j < mt->n_smem; j++) found |= mt->smem[j].offset == arg->value;
      if (!found)
        mismatch(r, n, "%s at line %d uses smem + %lld, which starts no smem region of the stage",
                 s->ast.calls[c].name, s->ast.calls[c].line, arg->value);
    }
  for (int j = 0; j < mt->n_smem; j++)
    if (!smem_passed(s, mt->smem[j].offset))
      mismatch(r, n, "smem region %s at %ld is never passed to a call", mt->smem[j].name,
               mt->smem[j].offset);
  if (mt->smem_bytes > r->header.smem_bytes)
    mismatch(r, n, "smem %ld bytes, more than the kernel's %lld", mt->smem_bytes,
             r->header.smem_bytes);
}

/* Global ranges, both ways: each listed one is touched with its size, each touched one listed. */
static void check_regions(mkc_inspect_report *r, int n, const mkc_stage *s) {
  const mkc_stage_meta *mt = &s->meta;
  char a[64], b[64];
  for (int j = 0; j < mt->n_regions; j++) {
    const mkc_region *g = &mt->regions[j];
    const mkc_region *c = NULL;
    for (int k = 0; k < s->n_ast_regions; k++)
      if (s->ast_regions[k].write == g->write && s->ast_regions[k].arena == g->arena &&
          s->ast_regions[k].offset == g->offset)
        c = &s->ast_regions[k];
    qty_str(g->bytes, a, sizeof a);
    if (!c) {
      mismatch(r, n, "metadata %s %s+%lld %s bytes (%s), which no call %s",
               g->write ? "writes" : "reads", ARENA[g->arena], g->offset, a, g->name,
               g->write ? "writes" : "reads");
    } else if (!qty_eq(g->bytes, c->bytes)) {
      qty_str(c->bytes, b, sizeof b);
      mismatch(r, n, "%s %s+%lld (%s): metadata %s bytes, code %s", g->write ? "write" : "read",
               ARENA[g->arena], g->offset, g->name, a, b);
    }
  }
  for (int k = 0; k < s->n_ast_regions; k++) {
    const mkc_region *c = &s->ast_regions[k];
    int listed = 0;
    for (int j = 0; j < mt->n_regions; j++)
      listed |= mt->regions[j].write == c->write && mt->regions[j].arena == c->arena &&
                mt->regions[j].offset == c->offset;
    if (!listed) {
      qty_str(c->bytes, b, sizeof b);
      mismatch(r, n, "the code %s %s+%lld (%s bytes), which the metadata does not list",
               c->write ? "writes" : "reads", ARENA[c->arena], c->offset, b);
    }
  }
}

/* A stage after one that ends in a flow arrival waits for it before anything
 * but prefetches; no other stage waits (it would wait for arrivals that never
 * come). */
static void check_flow(mkc_inspect_report *r, int i) {
  const mkc_stage *s = &r->stages[i];
  int after_flow = i > 0 && strcmp(r->stages[i - 1].ast.sync, "flow") == 0, waits = 0, early = 0;
  for (int c = 0; c < s->ast.n_calls; c++) {
    if (strcmp(s->ast.calls[c].name, "mkc_flow_wait") == 0)
      waits++;
    else if (!waits && strcmp(s->ast.calls[c].name, "mkc_prefetch_first") != 0 &&
             strcmp(s->ast.calls[c].name, "mkc_prefetch_next") != 0 && !early)
      early = s->ast.calls[c].line;
  }
  if (after_flow && waits != 1)
    mismatch(r, i + 1, "%d flow waits after the last stage's flow arrival, not 1", waits);
  else if (after_flow && early)
    mismatch(r, i + 1, "line %d runs before the stage's flow wait", early);
  else if (!after_flow && waits)
    mismatch(r, i + 1, "a flow wait with no flow arrival before it (it would never end)");
}

/* One stage: the model's problems, its place, items, flops, sync, smem and every global range. */
static void check_stage(mkc_inspect_report *r, int i) {
  mkc_stage *s = &r->stages[i];
  const mkc_stage_meta *mt = &s->meta;
  char problem[200];
  model_stage(s, r->header.kv_elem_bytes, problem, sizeof problem);
  int n = i + 1;
  if (problem[0]) mismatch(r, n, "%s", problem);
  if (mt->index != n || mt->n_stages != r->n_stages)
    mismatch(r, n, "the comment says stage %d/%d, but it is stage %d of %d in the body", mt->index,
             mt->n_stages, n, r->n_stages);
  check_work(r, n, s);
  check_flow(r, i);
  check_smem(r, n, s);
  check_regions(r, n, s);
}

void mkc_model_crosscheck(mkc_inspect_report *r) {
  const mkc_inspect_header *h = &r->header;
  if (r->n_stages != h->n_stages)
    mismatch(r, 0, "the header plans %d stages, the body has %d", h->n_stages, r->n_stages);
  int barriers = 0, flows = 0;
  long smem = 0;
  for (int i = 0; i < r->n_stages; i++) {
    check_stage(r, i);
    barriers += strcmp(r->stages[i].ast.sync, "grid") == 0;
    flows += strcmp(r->stages[i].ast.sync, "flow") == 0;
    if (r->stages[i].meta.smem_bytes > smem) smem = r->stages[i].meta.smem_bytes;
  }
  if (barriers != h->n_grid_barriers)
    mismatch(r, 0, "the header plans %d grid barriers, the body has %d", h->n_grid_barriers,
             barriers);
  if (flows != h->n_flow_waits)
    mismatch(r, 0, "the header plans %d flow waits, the body has %d", h->n_flow_waits, flows);
  if (smem + h->rowmap_bytes != h->smem_bytes)
    mismatch(r, 0,
             "the header's smem is %lld bytes, the largest stage uses %ld (and the row map %lld)",
             h->smem_bytes, smem, h->rowmap_bytes);
}

long long mkc_stage_bytes(const mkc_stage *s, int write, mkc_step_point at) {
  long long sum = 0;
  for (int j = 0; j < s->meta.n_regions; j++)
    if (s->meta.regions[j].write == write) sum += mkc_qty_eval(s->meta.regions[j].bytes, at);
  return sum;
}

/* Items the busiest block (block 0) takes: work is dealt round-robin over the
 * grid's warps, threads or blocks. */
long long mkc_stage_per_block(const mkc_stage *s, int threads, mkc_step_point at) {
  long long items = mkc_qty_eval(s->meta.items, at), per = 0, workers;
  const char *u = s->meta.unit;
  if (strcmp(u, "block") == 0) return (items + at.blocks - 1) / at.blocks;
  if (strcmp(u, "thread of block 0") == 0) return items;
  workers = strcmp(u, "warp") == 0 ? threads / 32 : threads;
  long long grid = workers * at.blocks;
  for (long long g = 0; g < workers && g < items; g++) per += (items - 1 - g) / grid + 1;
  return per;
}

double mkc_stage_floor(const mkc_stage *s, const mkc_gpu *gpu, mkc_step_point at,
                       int *compute_bound) {
  double bytes = (double)(mkc_stage_bytes(s, 0, at) + mkc_stage_bytes(s, 1, at));
  double t_mem = bytes / gpu->bandwidth;
  double t_flop = (double)mkc_qty_eval(s->meta.flops, at) / gpu->fp32;
  if (compute_bound) *compute_bound = t_flop > t_mem;
  return t_flop > t_mem ? t_flop : t_mem;
}

/* Datasheet figures, dense (no sparsity). The templates run fp32 FMAs on the
 * CUDA cores, so the floor uses the FP32 peak; the tensor-core figure is shown
 * for reference. */
static const mkc_gpu GPUS[] = {
    /* NVIDIA H100 Tensor Core GPU datasheet (2023), SXM5: 3.35 TB/s HBM3, FP32 67 TFLOPS,
     * BF16 tensor 989.5 TFLOPS dense; 132 SMs (H100 whitepaper). */
    {"h100", "NVIDIA H100 SXM5 80GB", 3.35e12, 67e12, 989.5e12, 132},
    /* same datasheet, PCIe: 2.0 TB/s HBM2e, FP32 51 TFLOPS, BF16 756 TFLOPS; 114 SMs. */
    {"h100-pcie", "NVIDIA H100 PCIe 80GB", 2.0e12, 51e12, 756e12, 114},
    /* NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: 4.8 TB/s HBM3e, FP32 67 TFLOPS,
     * BF16 989.5 TFLOPS dense; 132 SMs (same GH100 die as H100 SXM). */
    {"h200", "NVIDIA H200 SXM 141GB", 4.8e12, 67e12, 989.5e12, 132},
    /* NVIDIA A100 Tensor Core GPU datasheet (2021), 80GB SXM: 2.039 TB/s HBM2e, FP32 19.5
     * TFLOPS, BF16 312 TFLOPS dense; 108 SMs (A100 whitepaper). */
    {"a100", "NVIDIA A100 SXM4 80GB", 2.039e12, 19.5e12, 312e12, 108},
    /* same datasheet, 40GB: 1.555 TB/s HBM2. */
    {"a100-40gb", "NVIDIA A100 40GB", 1.555e12, 19.5e12, 312e12, 108},
    /* NVIDIA L40S datasheet (2023): 864 GB/s GDDR6, FP32 91.6 TFLOPS, BF16 362 TFLOPS dense;
     * 142 SMs. */
    {"l40s", "NVIDIA L40S", 864e9, 91.6e12, 362e12, 142},
    /* NVIDIA A10 datasheet (2021): 600 GB/s GDDR6, FP32 31.2 TFLOPS, BF16 125 TFLOPS; 72 SMs. */
    {"a10", "NVIDIA A10", 600e9, 31.2e12, 125e12, 72},
    /* NVIDIA Ada Lovelace architecture whitepaper, RTX 4090: 1008 GB/s GDDR6X, FP32 82.6
     * TFLOPS, BF16 tensor 165.2 TFLOPS (FP32 accumulate); 128 SMs. */
    {"rtx4090", "NVIDIA GeForce RTX 4090", 1008e9, 82.6e12, 165.2e12, 128},
};

const mkc_gpu *mkc_gpu_table(int *n) {
  *n = (int)(sizeof GPUS / sizeof *GPUS);
  return GPUS;
}

const mkc_gpu *mkc_gpu_find(const char *id) {
  for (size_t i = 0; i < sizeof GPUS / sizeof *GPUS; i++)
    if (strcmp(GPUS[i].id, id) == 0) return &GPUS[i];
  return NULL;
}
