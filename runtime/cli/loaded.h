/* A model loaded for decoding, as the run-like commands (gen, run, bench)
 * make it from their flags: its graph and kernel, weights and one session. */
#ifndef MKC_LOADED_H
#define MKC_LOADED_H

#include <stdint.h>

#include "backend/cuda/aot.h"
#include "cli.h"
#include "codegen/host.h"
#include "exec/session.h"
#include "formats/lora.h"
#include "formats/weights.h"
#include "model/model_file.h"

/* A model ready to decode: its graph and kernel, weights, one session. */
typedef struct mkc_loaded_model {
  mkc_model_file file; /* with -m: the model file (its tokenizer in file.tok) */
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
  mkc_session *s;
  mkc_manifest manifest;       /* with --kernel */
  mkc_lora lora[MKC_LORA_MAX]; /* --lora: merged into w as it loads */
  int n_lora;
} mkc_loaded_model;

/* Graph (or the -m model file's description, or --kernel DIR's manifest) ->
 * codegen: m->g and m->src, cheap (a model file is mapped, not read), so
 * callers check their inputs against the plan before anything heavy. With
 * -m the context is --ctx, else the model's training context capped at
 * MKC_DEFAULT_CTX, and the --lora adapters are opened (the matrices they
 * adapt planned in bf16). 0, or -1 after printing why. */
int mkc_loaded_plan(const mkc_cli *c, mkc_loaded_model *m);

#define MKC_DEFAULT_CTX 4096

/* mkc_gen_opts.weight_type of a model with --lora adapters (ctx: the mkc_loaded_model): a
 * matrix one adapts is planned in bf16 (its delta is merged into bf16 rows), the others as the
 * file stores them. */
int mkc_loaded_weight_type(void *ctx, const char *name);

/* The context a model trained on ctx_train positions runs with when --ctx is
 * not given: ctx_train capped at MKC_DEFAULT_CTX. */
int mkc_default_ctx(int ctx_train);

/* Then the model file's weights (or random ones) and a session on --backend (auto: cuda where a
 * device exists, else cpu): the kernel is compiled and weights placed here. */
int mkc_loaded_start(const mkc_cli *c, mkc_loaded_model *m);

/* --prompt-cache's model id (exec/kv_file.h): the kernel's source (graph, sizes, KV type,
 * context) and where the weights come from: a model file's size and first MiB (its metadata),
 * a Hugging Face folder's path, or the random seed; and each --lora adapter's size, first MiB
 * and scale. */
uint64_t mkc_loaded_cache_id(const mkc_cli *c, const mkc_loaded_model *m);
/* Its two parts for a caller that opens something else than a session (run
 * --batch: a slot pool): the weights into m->w (the --lora adapters the plan opened merged
 * into them; 0 or -1), and --backend's kind. */
int mkc_loaded_weights(const mkc_cli *c, mkc_loaded_model *m);
enum mkc_backend_kind mkc_loaded_backend(const mkc_cli *c);

/* Before a long job: when --backend was left to auto, no GPU answers, and
 * `tokens` tokens through m's weights would take the cpu backend more than a
 * few minutes (a rough rate per core), says so with the estimate and asks
 * for --backend cpu: -1. Else 0. */
int mkc_loaded_cpu_guard(const mkc_cli *c, const mkc_loaded_model *m, double tokens,
                         const char *cmd);

void mkc_loaded_close(mkc_loaded_model *m);

#endif
