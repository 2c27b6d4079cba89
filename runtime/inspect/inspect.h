/* `mkc inspect`: what an emitted megakernel does, stage by stage. Two views
 * of each stage are read from the file and held side by side: what codegen
 * recorded in the stage comment (metadata: graph nodes, items, smem, global
 * traffic, flops) and what libclang's AST of the code shows (the template
 * calls, their literal arguments, the sync). Costs are modelled from both;
 * any disagreement is kept as a mismatch, never smoothed over. */
#ifndef MKC_INSPECT_H
#define MKC_INSPECT_H

#include <stddef.h>
#include <stdio.h>

#include "codegen/unfold.h"

#define MKC_INSPECT_MAX_NODES 16
#define MKC_INSPECT_MAX_REGIONS 16
#define MKC_INSPECT_MAX_SMEM 16 /* shared-memory regions of a stage (a wide LM head has 11) */
#define MKC_INSPECT_MAX_CALLS 8
#define MKC_INSPECT_MAX_ARGS 48 /* mkc_gemm_qkv takes 36 */

enum mkc_arena { MKC_ARENA_WEIGHTS, MKC_ARENA_SCRATCH, MKC_ARENA_KV, MKC_ARENA_COUNT };

/* A per-step quantity: c + t*T + ctx*(pos+T) + att*sum_t(pos+t+1), for a step
 * of T input tokens starting with pos positions in the KV cache. */
typedef struct mkc_qty {
  long long c, t, ctx, att;
} mkc_qty;

/* The step a cost is evaluated for, and the grid that shares the work. */
typedef struct mkc_step_point {
  int tokens; /* T */
  int pos;    /* KV positions before the step */
  int blocks; /* grid size */
} mkc_step_point;

/* A global buffer range a stage reads or writes. Offsets count elements of
 * the arena (bf16 for weights, float for scratch, the KV type for KV). */
typedef struct mkc_region {
  int write;
  int arena; /* enum mkc_arena */
  long long offset;
  mkc_qty bytes;
  char name[96];
} mkc_region;

typedef struct mkc_smem_region {
  char name[32];
  long offset, bytes;
} mkc_smem_region;

/* What codegen recorded about a stage in its comment. */
typedef struct mkc_stage_meta {
  int index, n_stages; /* "stage i/n" */
  char kind[32];
  int line;                            /* of the stage comment in the file */
  char *labels[MKC_INSPECT_MAX_NODES]; /* graph nodes, as the comment names them */
  int nodes[MKC_INSPECT_MAX_NODES];    /* their ids (mkc_graph.nodes indices) */
  int n_nodes;
  char work[160];
  mkc_qty items;
  char unit[32]; /* warp, block, thread, thread of block 0 */
  mkc_qty flops;
  char sync[16]; /* grid, none, end */
  mkc_smem_region smem[MKC_INSPECT_MAX_SMEM];
  int n_smem;
  long smem_bytes;
  mkc_region regions[MKC_INSPECT_MAX_REGIONS];
  int n_regions;
} mkc_stage_meta;

/* An argument of a template call as the AST shows it. */
enum mkc_arg_kind {
  MKC_ARG_OTHER,  /* an expression mkc does not model */
  MKC_ARG_INT,    /* a constant integer */
  MKC_ARG_FLOAT,  /* a constant float */
  MKC_ARG_NULL,   /* a null pointer constant */
  MKC_ARG_BUFFER, /* kernel parameter or smem + a constant */
  MKC_ARG_NAME,   /* a local or parameter by name: pos, T, state */
};

typedef struct mkc_arg {
  int kind;
  char base[16];   /* weights, scratch, kv, smem, state, pos, T, ... */
  long long value; /* int constant, or the offset from base */
  double fvalue;
  /* A matrix, mkc_wmat_of(weights + N, ROW_BYTES, TYPE) (templates/weights.cuh):
   * a BUFFER at weights + N with row_bytes > 0; 0 for any other argument. */
  long long row_bytes;
} mkc_arg;

typedef struct mkc_call {
  char name[48];
  int line;               /* in the file */
  char template_file[64]; /* where the callee is defined, through #line */
  int template_line;
  /* the callee's parameter names, from its definition: the cost model finds arguments by name */
  int n_params;
  char params[MKC_INSPECT_MAX_ARGS][32];
  int n_args;
  mkc_arg args[MKC_INSPECT_MAX_ARGS];
} mkc_call;

/* A stage as the AST shows it: the calls between its comment and the next. */
typedef struct mkc_stage_ast {
  int first_line, last_line;     /* in the file: the comment through the sync */
  int u_first_line, u_last_line; /* the same in the unfolded text (r->unfolded) */
  mkc_call calls[MKC_INSPECT_MAX_CALLS];
  int n_calls;
  char sync[16]; /* grid (mkc_grid_sync), counter (mkc_wait_*), none */
  int sync_line;
} mkc_stage_ast;

/* One stage of the report: both views and the costs derived from them. */
typedef struct mkc_stage {
  mkc_stage_meta meta;
  mkc_stage_ast ast;
  /* modelled from the AST's calls (the metadata's are in meta) */
  mkc_region ast_regions[2 * MKC_INSPECT_MAX_REGIONS];
  int n_ast_regions;
  mkc_qty ast_items, ast_flops;
  char ast_unit[32];
} mkc_stage;

/* The kernel file's header, as codegen wrote it. */
typedef struct mkc_inspect_header {
  char generator[32]; /* "mkc 0.1.0" */
  char graph[256], preset[64];
  int draft_max, t_max, max_ctx, threads, max_blocks;
  int n_stages, n_grid_barriers, n_flow_waits;
  long long scratch_floats, kv_elems, weight_elems, smem_bytes;
  long long
      rowmap_bytes;  /* a slot kernel's row map, ahead of the stages' smem (MKC_ROWMAP_BYTES) */
  char kv_dtype[8];  /* the KV cache's element type: bf16, f16, f32 */
  int kv_elem_bytes; /* 2, 2, 4 */
  int format;        /* the inspect format of the stage comments */
} mkc_inspect_header;

typedef struct mkc_resources {
  int available;
  char arch[16];
  char why[600]; /* when not available */
  int nvrtc_version;
  int registers, barriers;
  long spill_store_bytes, spill_load_bytes, stack_bytes, smem_static_bytes, cmem_bytes;
} mkc_resources;

typedef struct mkc_gpu {
  const char *id, *name;
  double bandwidth; /* bytes/s of device memory */
  double fp32;      /* FLOP/s on the CUDA cores (what the templates use) */
  double bf16_tensor;
  int sms;
} mkc_gpu;

typedef struct mkc_mismatch {
  int stage; /* 1-based; 0 for the whole kernel */
  char what[256];
} mkc_mismatch;

typedef struct mkc_inspect_report {
  char *path;   /* as given */
  char *source; /* the file's text */
  mkc_unfolded
      unfolded;    /* the text with its layer loop written out (what the stages are read from) */
  char *file_name; /* the kernel's own name (#line "llama.tiny.cu") */
  mkc_inspect_header header;
  int kernel_line; /* where mkc_step is defined */
  int n_stages;
  mkc_stage *stages;
  mkc_mismatch *mismatches;
  int n_mismatches;
  mkc_step_point at;
  const mkc_gpu *gpu;
  mkc_resources res;
} mkc_inspect_report;

typedef struct mkc_inspect_opts {
  int tokens;       /* 0: 1 */
  int pos;          /* < 0: max_ctx / 2 */
  int blocks;       /* 0: the GPU's SM count */
  const char *gpu;  /* NULL: h100 */
  const char *arch; /* NULL: no compile; "" for the default arch */
} mkc_inspect_opts;

/* Reads, parses (libclang) and models the kernel at path. On a file that is
 * not an mkc kernel or does not parse, prints clang's diagnostics (file:line)
 * and returns -1. Mismatches between the two views are in r, not errors. */
int mkc_inspect_open(const char *path, const mkc_inspect_opts *o, mkc_inspect_report *r);
void mkc_inspect_close(mkc_inspect_report *r);

/* --check: clang's warnings over the emitted code, printed file:line with
 * the template line they come from. Returns the number of warnings and
 * errors, or -1 when the file cannot be read or libclang is missing. */
int mkc_inspect_check(const char *path);

/* Metadata (meta.c): header and stage comments from the text. */
int mkc_meta_header(const char *source, mkc_inspect_header *h, char *why, size_t why_size);
int mkc_meta_stage(const char *comment, mkc_stage_meta *m, char *why, size_t why_size);
void mkc_meta_free(mkc_stage_meta *m);

/* AST (ast.c): fills r->stages[*].ast from the parse. */
int mkc_ast_read(mkc_inspect_report *r);

/* The cost model (cost.c). */
long long mkc_qty_eval(mkc_qty q, mkc_step_point at);
void mkc_model_crosscheck(mkc_inspect_report *r);
long long mkc_stage_bytes(const mkc_stage *s, int write, mkc_step_point at);
long long mkc_stage_per_block(const mkc_stage *s, int threads, mkc_step_point at);
double mkc_stage_floor(const mkc_stage *s, const mkc_gpu *gpu, mkc_step_point at,
                       int *compute_bound);
const mkc_gpu *mkc_gpu_find(const char *id);
const mkc_gpu *mkc_gpu_table(int *n);

/* Resources (resources.c): NVRTC compile and the ptxas report
 * (runtime/backend/cuda/ptxas.h); res->why says why when they are not available. */
void mkc_resources_get(const char *source, const char *name, const char *arch, mkc_resources *res);
const char *mkc_default_arch(char *buf, size_t size);
const char *mkc_default_gpu(void); /* the table id of the GPU libcuda finds, else "h100" */

/* Output (print.c). */
void mkc_inspect_print(const mkc_inspect_report *r, FILE *f);
void mkc_inspect_print_json(const mkc_inspect_report *r, FILE *f);
int mkc_inspect_print_stage(const mkc_inspect_report *r, const char *which, FILE *f);

/* --diff (diff.c): prints the differences; returns how many. */
int mkc_inspect_diff(const mkc_inspect_report *a, const mkc_inspect_report *b, FILE *f);

#endif
