/* What the run-like commands (run, bench) share: their flags, and turning
 * flags into a graph, weights and an open session on the chosen backend. */
#ifndef MKC_CLI_H
#define MKC_CLI_H

#include "aot.h"
#include "codegen_host.h"
#include "model.h"
#include "session.h"
#include "weights.h"

typedef struct mkc_cli {
  const char *graph, *preset, *out, *prompt_ids, *backend, *kernel_dir, *archs;
  const char *model_path, *prompt; /* -m FILE|DIR, -p TEXT */
  const char *kv_dtype;            /* --kv-dtype bf16|f16|f32 (NULL: $MKC_KV_DTYPE, else bf16) */
  int draft_max, max_ctx, n_gen, have_n, blocks, have_seed;
  unsigned long long seed;        /* --random-weights */
  double temp;                    /* --temp: 0 greedy */
  unsigned long long sample_seed; /* --seed: the sampler's */
  const char *positional;         /* gen GRAPH, compile KERNEL */
} mkc_cli;

/* Prints "mkc: error: <fmt with arg>" and the --help hint; returns 2. */
int mkc_cli_usage_error(const char *fmt, const char *arg);

/* A whole-string non-negative integer (a seed): 0, or -1 (no message). */
int mkc_parse_seed(const char *s, unsigned long long *v);

/* With -m, --preset, --graph and --random-weights have no place: the usage
 * error "CMD: -m brings its own ..." (2), else 0. */
int mkc_cli_check_model(const mkc_cli *c, const char *cmd);

/* Parses argv[first..]; `allowed` lists the flags this command takes, e.g.
 * "--preset -n --draft-max". Returns 0 or 2 (after printing why). */
int mkc_cli_parse(int argc, char **argv, int first, const char *allowed, int want_positional,
                  mkc_cli *c);

/* A model ready to decode: its graph and kernel, weights, one session. */
typedef struct mkc_model {
  mkc_model_file file; /* with -m: the model file (its tokenizer in file.tok) */
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
  mkc_session *s;
  mkc_manifest manifest; /* with --kernel */
} mkc_model;

/* Graph (or the -m model file's description, or --kernel DIR's manifest) ->
 * codegen: m->g and m->src, cheap (a model file is mapped, not read), so
 * callers check their inputs against the plan before anything heavy. With
 * -m the context is --ctx, else the model's training context capped at
 * MKC_DEFAULT_CTX. 0, or -1 after printing why. */
int mkc_model_plan(const mkc_cli *c, mkc_model *m);

#define MKC_DEFAULT_CTX 4096

/* Then the model file's weights (or random ones) and a session on --backend (auto: cuda where a
 * device exists, else cpu): the kernel is compiled and weights placed here. */
int mkc_model_start(const mkc_cli *c, mkc_model *m);

void mkc_model_close(mkc_model *m);

#endif
