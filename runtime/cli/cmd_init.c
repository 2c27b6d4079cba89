/* mkc init: a model file with seeded random weights for a graph and preset
 * (GGUF with the metadata a loader reads, or a Hugging Face folder), so the
 * whole model-file path runs without downloading a model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "codegen/host.h"
#include "commands.h"
#include "formats/gguf.h"
#include "formats/hf.h"
#include "formats/safetensors.h"
#include "formats/weights.h"
#include "model/model_file.h"
#include "util/text.h"

static const char USAGE[] =
    "usage: mkc init [GRAPH] --preset P --seed S [--ctx N] -o FILE.gguf|DIR\n"
    "\n"
    "Writes the graph's weights, seeded random (as `mkc run --random-weights S`),\n"
    "as BF16 tensors: in a GGUF file with llama (or qwen2/qwen3) metadata, or,\n"
    "when -o does not end in .gguf, as a Hugging Face folder (config.json and\n"
    "model.safetensors, Q/K rows in transformers' order).\n"
    "The preset's RoPE scaling goes with it: llama3 (e.g. --preset llama3-tiny)\n"
    "as Llama 3.1+ files carry it, an F32 rope_freqs.weight; linear and yarn\n"
    "(linear-tiny, yarn-tiny) as rope.scaling.* metadata; rope_scaling in\n"
    "config.json.\n"
    "GRAPH defaults to graphs/llama.lua in the mkc tree.\n";

static int usage_error(const char *fmt, const char *arg) {
  return mkc_cli_usage_error_in("init", fmt, arg);
}

/* The first node of op kind op, for attributes the preset set on it. */
static const mkc_node *first_node(const mkc_graph *g, int op) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == op) return &g->nodes[i];
  return NULL;
}

static int has_weight(const mkc_graph *g, const char *name) {
  for (int i = 0; i < g->n_weights; i++)
    if (strcmp(g->weights[i].name, name) == 0) return 1;
  return 0;
}

/* The GGUF architecture whose loader reads this graph's weights as they are:
 * Q/K/V biases are qwen2's, per-head Q/K norms qwen3's. */
static const char *architecture(const mkc_graph *g) {
  if (has_weight(g, "blk.0.attn_q_norm.weight")) return "qwen3";
  if (has_weight(g, "blk.0.attn_q.bias")) return "qwen2";
  return "llama";
}

static int set_u32(mkc_gguf_writer *out, const char *arch, const char *key, int v) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  return mkc_gguf_set_u32(out, full, (uint32_t)v);
}

static int set_f32(mkc_gguf_writer *out, const char *arch, const char *key, double v) {
  char full[128];
  snprintf(full, sizeof full, "%s%s%s", arch ? arch : "", arch ? "." : "", key);
  return mkc_gguf_set_f32(out, full, (float)v);
}

/* The RoPE scaling as llama.cpp reads it: ARCH.rope.scaling.* for linear and
 * yarn (YaRN's defaults left out); for llama3, rope_freqs.weight (added with
 * the tensors) and, for mkc, the parameters the tensor alone does not give
 * (llama.cpp reads original_context_length for YaRN only). */
static int set_rope_scaling(mkc_gguf_writer *out, const char *arch, const mkc_rope_scaling *s) {
  char key[128];
  int bad = 0;
  if (s->type == MKC_ROPE_SCALING_NONE) return 0;
  if (s->type == MKC_ROPE_SCALING_LLAMA3)
    return set_u32(out, arch, "rope.scaling.original_context_length", s->orig_ctx) |
           set_f32(out, NULL, "mkc.rope.scaling.low_freq_factor", s->low_freq_factor) |
           set_f32(out, NULL, "mkc.rope.scaling.high_freq_factor", s->high_freq_factor);
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  bad |= mkc_gguf_set_str(out, key, mkc_rope_scaling_name(s->type));
  bad |= set_f32(out, arch, "rope.scaling.factor", s->factor);
  if (s->type != MKC_ROPE_SCALING_YARN) return bad;
  bad |= set_u32(out, arch, "rope.scaling.original_context_length", s->orig_ctx);
  if (s->attn_factor != 1) bad |= set_f32(out, arch, "rope.scaling.attn_factor", s->attn_factor);
  if (s->beta_fast != 32) bad |= set_f32(out, arch, "rope.scaling.yarn_beta_fast", s->beta_fast);
  if (s->beta_slow != 1) bad |= set_f32(out, arch, "rope.scaling.yarn_beta_slow", s->beta_slow);
  if (s->ext_factor != 1) bad |= set_f32(out, arch, "rope.scaling.yarn_ext_factor", s->ext_factor);
  return bad;
}

/* Llama 3's rope_freqs.weight: F32 [head_dim / 2], each pair's frequency divisor. */
static int add_rope_freqs(mkc_gguf_writer *out, const mkc_model_desc *d) {
  if (d->rope_scaling.type != MKC_ROPE_SCALING_LLAMA3) return 0;
  float divisor[4096];
  int half = d->head_dim / 2;
  if (half > (int)(sizeof divisor / sizeof *divisor)) {
    fprintf(stderr, "mkc: error: init: head dim %d is too wide for rope_freqs.weight\n",
            d->head_dim);
    return -1;
  }
  for (int j = 0; j < half; j++) divisor[j] = (float)mkc_llama3_rope_divisor(d, j);
  int64_t ne[1] = {half};
  return mkc_gguf_add_raw(out, "rope_freqs.weight", MKC_GGML_F32, 1, ne, divisor);
}

static int set_metadata(mkc_gguf_writer *out, const mkc_graph *g, const char *name) {
  const mkc_node *rope = first_node(g, MKC_OP_ROPE), *norm = first_node(g, MKC_OP_RMSNORM);
  const char *arch = architecture(g);
  char key[128];
  int bad = mkc_gguf_set_str(out, "general.architecture", arch);
  bad |= mkc_gguf_set_str(out, "general.name", name);
  bad |= set_u32(out, arch, "block_count", g->n_layers);
  bad |= set_u32(out, arch, "context_length", g->max_ctx);
  bad |= set_u32(out, arch, "embedding_length", g->dim);
  bad |= set_u32(out, arch, "feed_forward_length", g->ffn);
  bad |= set_u32(out, arch, "attention.head_count", g->n_heads);
  bad |= set_u32(out, arch, "attention.head_count_kv", g->n_kv_heads);
  /* head_dim need not be dim / n_heads: loaders read it from these */
  bad |= set_u32(out, arch, "attention.key_length", g->head_dim);
  bad |= set_u32(out, arch, "attention.value_length", g->head_dim);
  bad |= set_u32(out, arch, "rope.dimension_count", g->head_dim);
  bad |= set_u32(out, arch, "vocab_size", g->vocab);
  if (rope) {
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    bad |= mkc_gguf_set_f32(out, key, (float)rope->theta);
    /* the architecture implies a layout (llama: interleaved pairs, qwen:
     * NEOX halves); say which one the graph uses */
    bad |= mkc_gguf_set_str(out, "mkc.rope.layout",
                            rope->layout == MKC_ROPE_NEOX ? "neox" : "interleaved");
  }
  if (norm) {
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    bad |= mkc_gguf_set_f32(out, key, (float)norm->eps);
  }
  return bad ? -1 : 0;
}

/* The rope node's scaling as a model description holds it. */
static void rope_scaling(const mkc_node *rope, mkc_rope_scaling *s) {
  *s = (mkc_rope_scaling){.type = MKC_ROPE_SCALING_NONE, .factor = 1};
  if (!rope || rope->rope_scaling == MKC_ROPE_SCALING_NONE) return;
  *s = (mkc_rope_scaling){.type = rope->rope_scaling,
                          .factor = rope->rope_factor,
                          .low_freq_factor = rope->rope_low_freq_factor,
                          .high_freq_factor = rope->rope_high_freq_factor,
                          .orig_ctx = rope->rope_orig_ctx,
                          .beta_fast = rope->rope_beta_fast,
                          .beta_slow = rope->rope_beta_slow,
                          .ext_factor = rope->rope_ext_factor,
                          .attn_factor = rope->rope_attn_factor};
}

/* What config.json says of the graph: the inverse of mkc_hf_config_read. */
static void describe(const mkc_graph *g, mkc_model_desc *d) {
  const mkc_node *rope = first_node(g, MKC_OP_ROPE), *norm = first_node(g, MKC_OP_RMSNORM);
  memset(d, 0, sizeof *d);
  snprintf(d->arch, sizeof d->arch, "%s", architecture(g));
  d->vocab = g->vocab, d->dim = g->dim, d->n_layers = g->n_layers, d->n_heads = g->n_heads;
  d->n_kv_heads = g->n_kv_heads, d->head_dim = g->head_dim, d->ffn = g->ffn;
  d->ctx_train = g->max_ctx;
  d->rope_theta = rope ? rope->theta : 10000.0;
  d->norm_eps = norm ? norm->eps : 1e-5;
  d->rope_layout = rope ? rope->layout : MKC_ROPE_INTERLEAVED;
  rope_scaling(rope, &d->rope_scaling);
  d->tied = !has_weight(g, "output.weight");
  d->qkv_bias = has_weight(g, "blk.0.attn_q.bias");
  d->qk_norm = has_weight(g, "blk.0.attn_q_norm.weight");
}

/* Tensors as the graph names them: matrices ne {cols, rows}, vectors ne {cols}.
 * The bf16 data is little-endian in memory, as in the file. */
static int add_weights(mkc_gguf_writer *out, const mkc_graph *g, const mkc_weights *w) {
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    const mkc_tensor *t = mkc_weights_get(w, info->name, info->rows, info->cols);
    int64_t ne[2] = {info->cols, info->rows};
    if (!t ||
        mkc_gguf_add_raw(out, info->name, MKC_GGML_BF16, info->rows == 1 ? 1 : 2, ne, t->data))
      return -1;
  }
  return 0;
}

typedef struct init_flags {
  const char *graph, *preset, *path;
  long max_ctx;
  unsigned long long seed;
} init_flags;

/* init's own flags (it takes a GGUF writer's, not run's): 0, 2 after a usage
 * error, or -1 for --help (printed). */
static int init_flags_parse(int argc, char **argv, init_flags *f) {
  const char *seed_arg = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return -1;
    }
    if (a[0] != '-') {
      if (f->graph) return usage_error("unexpected argument '%s'", a);
      f->graph = a;
      continue;
    }
    if (i + 1 >= argc) return usage_error("%s needs a value", a);
    const char *v = argv[++i];
    char *end;
    if (strcmp(a, "--preset") == 0)
      f->preset = v;
    else if (strcmp(a, "--seed") == 0)
      seed_arg = v;
    else if (strcmp(a, "-o") == 0)
      f->path = v;
    else if (strcmp(a, "--ctx") == 0) {
      errno = 0;
      f->max_ctx = strtol(v, &end, 10);
      if (!*v || *end || errno || f->max_ctx < 1 || f->max_ctx > 1 << 20)
        return usage_error("--ctx: expected an integer in 1..1048576, got '%s'", v);
    } else
      return usage_error("unknown option '%s'", a);
  }
  if (!f->preset) return usage_error("%s", "init: --preset is required");
  if (!seed_arg) return usage_error("%s", "init: --seed SEED is required");
  if (!f->path) return usage_error("%s", "init: -o FILE.gguf (or -o DIR) is required");
  if (mkc_parse_seed(seed_arg, &f->seed) != 0)
    return usage_error("--seed: expected a non-negative integer, got '%s'", seed_arg);
  return 0;
}

int mkc_cmd_init(int argc, char **argv) {
  init_flags f = {0};
  int parsed = init_flags_parse(argc, argv, &f);
  if (parsed) return parsed < 0 ? 0 : parsed;
  const char *graph = f.graph, *preset = f.preset, *path = f.path;
  unsigned long long seed = f.seed;
  long max_ctx = f.max_ctx;

  char graph_path[4200], name[256];
  if (graph)
    snprintf(graph_path, sizeof graph_path, "%s", graph);
  else
    snprintf(graph_path, sizeof graph_path, "%s/graphs/llama.lua", mkc_home());
  const char *base = strrchr(graph_path, '/') ? strrchr(graph_path, '/') + 1 : graph_path;
  int stem = (int)strcspn(base, ".");
  snprintf(name, sizeof name, "%.*s-%s", stem, base, preset);

  mkc_gen_opts o = {
      .graph_path = graph_path, .preset = preset, .draft_max = 0, .max_ctx = (int)max_ctx};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) return 1;
  mkc_kernel_src_free(&src);
  mkc_weights w = {0};
  mkc_gguf_writer *out = NULL;
  int rc = 1;
  if (mkc_weights_random(&w, &g, seed) != 0) goto done;
  if (!mkc_ends_with(path, ".gguf")) {
    mkc_model_desc d;
    describe(&g, &d);
    if (mkc_hf_write(path, &d, &w, MKC_ST_BF16) != 0) goto done;
    fprintf(stderr,
            "mkc: wrote %s/ (%s, seed %llu: config.json, model.safetensors with %d BF16 tensors)\n",
            path, d.arch, seed, g.n_weights);
    rc = 0;
    goto done;
  }
  mkc_model_desc d;
  describe(&g, &d);
  if (!(out = mkc_gguf_writer_new())) goto done;
  if (set_metadata(out, &g, name) || set_rope_scaling(out, d.arch, &d.rope_scaling) ||
      add_weights(out, &g, &w) || add_rope_freqs(out, &d) || mkc_gguf_write(out, path))
    goto done;
  struct stat st;
  fprintf(stderr, "mkc: wrote %s (%s, seed %llu: %d BF16 tensors%s, %lld bytes)\n", path, name,
          seed, g.n_weights,
          d.rope_scaling.type == MKC_ROPE_SCALING_LLAMA3 ? " and rope_freqs.weight (F32)" : "",
          stat(path, &st) == 0 ? (long long)st.st_size : -1LL);
  rc = 0;
done:
  mkc_gguf_writer_free(out);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
  return rc;
}
