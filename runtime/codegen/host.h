/* The C side of codegen: runs the Lua pipeline (codegen/main.lua) in an
 * embedded Lua 5.4 and turns its result into a kernel source and an mkc_graph. */
#ifndef MKC_CODEGEN_HOST_H
#define MKC_CODEGEN_HOST_H

#include "graph.h"
#include "model_desc.h"

typedef struct mkc_gen_opts {
  const char *graph_path; /* graphs/x.lua */
  const char *preset;
  int draft_max; /* drafts per step: the kernel takes T <= draft_max + 1 inputs */
  /* Prompt chunks: a step whose inputs are all known takes up to this many
   * (--ubatch), as tiled products on tensor cores when there are more than
   * draft_max + 1 (templates/gemm.cuh). 0: 128, or the context if shorter;
   * at most MKC_CHUNK_CAP; draft_max + 1 or less: no tiled path. */
  int ubatch;
  int max_ctx; /* 0: the preset's */
  int vocab;   /* 0: the preset's; else its vocabulary this size (init --vocab) */
  int threads; /* 0: 128 */
  /* 0: the preset's layers; else only its first n_layers (1..the preset's):
   * self-speculation's draft, the same weights' first layers with the
   * model's own final norm and LM head. The preset is then called
   * <preset>-L<n_layers>. */
  int n_layers;
  /* The KV cache's element type: "bf16", "f16" or "f32"; NULL: $MKC_KV_DTYPE,
   * else bf16. */
  const char *kv_dtype;
  /* A model file's description: the preset called o->preset (NULL:
   * model->name) is made from it instead of read from the graph file. */
  const mkc_model_desc *model;
  /* How the model file stores the weight called name: its enum mkc_ggml_type,
   * or -1 when unknown. Codegen keeps a matrix of a block type the kernel
   * reads (Q8_0, Q4_[01], Q5_[01], Q[2-6]_K, IQ1/IQ2/IQ3, IQ4_NL, IQ4_XS) in its blocks and plans
   * every other weight as bf16. NULL: every weight is bf16 (random weights, safetensors). */
  int (*weight_type)(void *ctx, const char *name);
  void *weight_type_ctx;
  /* Nonzero: block 0 writes a %globaltimer reading after every stage
   * (mkc_graph.timers_offset; mkc_session_stage_ns): `bench --stages`. */
  int stage_timers;
  /* Nonzero: each matmul stage first adds its input's squares, column by
   * column, into scratch (mkc_graph.imatrix_offset; templates/imatrix.cuh):
   * mkc imatrix's kernel. A plain kernel only. */
  int imatrix;
  /* Layers (0-based, up to MKC_KEEP_MAX) whose outputs every step keeps for
   * the host (mkc_session_hidden_layer): a drafter head's features. */
  const int *keep_layers;
  int n_keep_layers;
  /* 0: a plain kernel, one sequence; 2..MKC_SLOTS_CAP: a slot kernel whose
   * step serves that many sequences (templates/slots.cuh, exec/slots.h). */
  int slots;
  /* 0: each slot a whole cache; else the slots share a pool of this many
   * pages of MKC_KV_PAGE positions (templates/slots.cuh); -1: a pool of as
   * many pages as the whole caches would take. */
  int kv_pages;
  /* A slot kernel's step takes up to this many rows, every slot's (0: t_max);
   * past t_max a step of several slots runs the tiled path (a wide step). */
  int step_rows;
  /* Nonzero: the graph runs on the reference executor (--backend ref), so
   * ops no kernel emits yet (recurrent) are allowed; such a graph comes back
   * with an empty source and no stages. 0: such an op is an error at its
   * line. */
  int reference_only;
} mkc_gen_opts;

typedef struct mkc_kernel_src {
  char *source;    /* the .cu text */
  char *file_name; /* <graph>.<preset>.cu: the name diagnostics use */
} mkc_kernel_src;

/* Where codegen/ and templates/ live: $MKC_HOME, else the directory above the
 * running executable if it holds codegen/main.lua, else the source tree the
 * binary was built from. Never NULL. */
const char *mkc_home(void);

/* Generates the kernel for o. On success fills *g and *src and returns 0; on
 * a bad graph or option prints the "file:line: error: ..." message (or
 * "mkc: error: ...") to stderr and returns -1. */
int mkc_codegen(const mkc_gen_opts *o, mkc_graph *g, mkc_kernel_src *src);

void mkc_kernel_src_free(mkc_kernel_src *src);

/* A fresh Lua state for codegen: codegen/ on its module path, and module
 * "schema" = { ops = {...}, node_fields = {...} }, graph.h's MKC_OPS and
 * MKC_NODE_FIELDS names, which codegen checks its ops against and exports its
 * nodes by. NULL (the error printed) if codegen/ is missing or memory is short. */
struct lua_State *mkc_codegen_state(void);

#endif
