/* mkc init: a model file with seeded random weights for a graph and preset
 * (GGUF with the metadata a loader reads, or a Hugging Face folder), so the
 * whole model-file path runs without downloading a model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "codegen/host.h"
#include "commands.h"
#include "formats/fused.h"
#include "formats/gguf.h"
#include "formats/hf.h"
#include "formats/quantize.h"
#include "formats/safetensors.h"
#include "formats/weights.h"
#include "init_vocab.h"
#include "model/model_file.h"
#include "util/clock.h"
#include "util/text.h"

static const char USAGE[] =
    "usage: mkc init [GRAPH] --preset P --seed S [--ctx N] [--type T]\n"
    "                [--vocab FILE.gguf] [--tensor-type NAME=T]... [--arch A]\n"
    "                [--pooling P] -o FILE.gguf|DIR\n"
    "\n"
    "Writes the graph's weights, seeded random (as `mkc run --random-weights S`):\n"
    "in a GGUF file with llama (or qwen2/qwen3) metadata, or, when -o does not\n"
    "end in .gguf, as a Hugging Face folder (config.json and model.safetensors,\n"
    "BF16, Q/K rows in transformers' order).\n"
    "--type T: the GGUF type of the matrices (attention and FFN weights,\n"
    "token_embd, output): bf16 (the default), f16, f32, q8_0, q4_0, q4_1, q5_0,\n"
    "q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s,\n"
    "iq1_s, iq1_m, iq4_nl or iq4_xs, in any case; the bf16 values are converted or\n"
    "quantized (the iq1/iq2/iq3 types to each group's nearest grid entry, without\n"
    "llama.cpp's importance search: a larger error than llama-quantize's). Norm\n"
    "vectors and biases stay BF16. A matrix whose columns are not whole blocks\n"
    "of T (32 elements; 256 for the K and IQ types but iq4_nl) falls back as\n"
    "llama.cpp's quantize does: q4_k to Q5_0, q5_k to Q5_1, q6_k to Q8_0, q2_k,\n"
    "q3_k and the iq types to IQ4_NL when the columns are whole 32s, else BF16;\n"
    "init says so.\n"
    "--tensor-type NAME=T: the tensor called NAME (its GGUF name) in type T,\n"
    "whatever --type says; repeatable.\n"
    "--arch phi3: a phi3 file, each layer's Q, K and V in one matrix (GGUF\n"
    "attn_qkv, HF qkv_proj) and its gate and up in one (ffn_up, gate_up_proj),\n"
    "as Phi-3's files store them; the preset must have NEOX RoPE and nothing\n"
    "phi3 lacks (odd has).\n"
    "--arch exaone: an exaone file (EXAONE 3.x: llama's layers, NEOX RoPE\n"
    "halves); the preset must have llama's layers and NEOX RoPE (GGUF only).\n"
    "--vocab FILE.gguf: the model's vocabulary is FILE's tokenizer (every\n"
    "tokenizer.* key is copied, the chat template with them; the preset's vocab\n"
    "size becomes FILE's token count), so random weights read and write text in\n"
    "a real model's tokens (GGUF only).\n"
    "--pooling none|mean|cls|last|rank: the GGUF's ARCH.pooling_type, as an\n"
    "embedding model's file says how `mkc embed` pools (GGUF only).\n"
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

/* The first attention node with a sliding window, or NULL. */
static const mkc_node *windowed(const mkc_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_ATTENTION && g->nodes[i].window > 0) return &g->nodes[i];
  return NULL;
}

/* The RoPE of the model's global layers (a local layer's may have a base of
 * its own: Gemma 3), else the first. A NoPE layer's rope node carries the
 * global base and scaling too (graphs/llama.lua), though it rotates nothing. */
static const mkc_node *global_rope(const mkc_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_ATTENTION && !g->nodes[i].window)
      return &g->nodes[g->nodes[i].in[0]];
  return first_node(g, MKC_OP_ROPE);
}

static int has_weight(const mkc_graph *g, const char *name) {
  for (int i = 0; i < g->n_weights; i++)
    if (strcmp(g->weights[i].name, name) == 0) return 1;
  return 0;
}

/* The first layer whose attention has no RoPE (its rope nodes pass q and k through: NoPE), plus
 * 1: the interval its file says, every N layers from layer N - 1; 0 where every layer has RoPE. */
static int nope_every(const mkc_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_ATTENTION && g->nodes[g->nodes[i].in[0]].nope)
      return g->nodes[i].layer + 1;
  return 0;
}

/* The first attention node whose NoPE mark is not "every `every` layers from layer every - 1"
 * (0: none), or NULL. */
static const mkc_node *nope_mismatch(const mkc_graph *g, int every) {
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *a = &g->nodes[i];
    if (a->op == MKC_OP_ATTENTION &&
        g->nodes[a->in[0]].nope != (every && (a->layer + 1) % every == 0))
      return a;
  }
  return NULL;
}

/* The GGUF architecture whose loader reads this graph's weights as they are:
 * norms after attention and the MLP are Gemma's (gemma3's with per-head Q/K
 * norms, else gemma2's), scaled embeddings or GeGLU without them Gemma 1's,
 * Q/K/V biases qwen2's, per-head Q/K norms qwen3's, layers without RoPE
 * SmolLM3's, layers without norms before attention EXAONE 4's. */
static const char *architecture(const mkc_graph *g) {
  if (has_weight(g, "blk.0.attn_sinks.weight")) return "gpt-oss";
  if (!has_weight(g, "blk.0.attn_norm.weight")) return "exaone4"; /* norms after only */
  if (nope_every(g)) return "smollm3";
  const mkc_node *add = first_node(g, MKC_OP_ADD), *logits = first_node(g, MKC_OP_LOGITS);
  if ((add && add->scale > 0) || (logits && logits->scale > 0))
    return first_node(g, MKC_OP_MOE) ? "granitemoe" : "granite";
  if (has_weight(g, "blk.0.post_attention_norm.weight"))
    return has_weight(g, "blk.0.attn_q_norm.weight") ? "gemma3" : "gemma2";
  const mkc_node *embed = first_node(g, MKC_OP_EMBED), *swiglu = first_node(g, MKC_OP_SWIGLU);
  if ((embed && embed->scale > 0 && embed->scale != 1) ||
      (swiglu && swiglu->act == MKC_ACT_GELU_TANH)) /* Gemma 1's, without norms after */
    return "gemma";
  if (first_node(g, MKC_OP_MOE)) /* experts: qwen3moe's with head norms, else Mixtral's llama */
    return has_weight(g, "blk.0.attn_q_norm.weight") ? "qwen3moe" : "llama";
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
  if (s->type == MKC_ROPE_SCALING_LONGROPE) /* as llama.cpp's converter: no type, no factor */
    return set_u32(out, arch, "rope.scaling.original_context_length", s->orig_ctx) |
           (s->attn_factor != 1 ? set_f32(out, arch, "rope.scaling.attn_factor", s->attn_factor)
                                : 0);
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

/* Llama 3's rope_freqs.weight, or longrope's rope_factors_short.weight and
 * rope_factors_long.weight: F32 [rotated dims / 2], each pair's frequency divisor. */
static int add_rope_freqs(mkc_gguf_writer *out, const mkc_model_desc *d) {
  const mkc_rope_scaling *s = &d->rope_scaling;
  float divisor[4096];
  int half = s->type == MKC_ROPE_SCALING_LONGROPE ? s->n_factors : d->head_dim / 2;
  int64_t ne[1] = {half};
  if (s->type == MKC_ROPE_SCALING_LONGROPE) {
    const struct {
      const char *name;
      const double *v;
    } lists[] = {{"rope_factors_short.weight", s->short_factor},
                 {"rope_factors_long.weight", s->long_factor}};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
      for (int j = 0; j < half; j++) divisor[j] = (float)lists[i].v[j];
      if (mkc_gguf_add_tensor(out, lists[i].name, MKC_GGML_F32, 1, ne, divisor)) return -1;
    }
    return 0;
  }
  if (s->type != MKC_ROPE_SCALING_LLAMA3) return 0;
  if (half > (int)(sizeof divisor / sizeof *divisor)) {
    fprintf(stderr, "mkc: error: init: head dim %d is too wide for rope_freqs.weight\n",
            d->head_dim);
    return -1;
  }
  for (int j = 0; j < half; j++) divisor[j] = (float)mkc_llama3_rope_divisor(d, j);
  return mkc_gguf_add_tensor(out, "rope_freqs.weight", MKC_GGML_F32, 1, ne, divisor); /* copied */
}

/* What a Gemma model (gemma = 1, 2 or 3) says beyond the sizes, into d, or -1
 * with a message where the graph differs from what its loaders derive
 * (desc_gguf.c and hf_config.c: read_gemma) and the file cannot say so: the
 * window and its pattern (L local layers then 1 global, from layer 0), Gemma
 * 3's local RoPE base (Gemma 2's local layers share the global one),
 * embeddings times sqrt(dim), the default score scale, GeGLU, the soft caps
 * (Gemma 2: both; Gemma 3: the logits' only, as llama.cpp reads them; Gemma
 * 1 has no windows or caps, nor Q/K norms, biases or experts). Not a Gemma
 * (gemma = 0): -1 where the graph has windows or caps, which no other
 * architecture carries. */
static int describe_gemma(const mkc_graph *g, const char *preset, int gemma, mkc_model_desc *d) {
  const mkc_node *embed = first_node(g, MKC_OP_EMBED), *swiglu = first_node(g, MKC_OP_SWIGLU);
  const mkc_node *att = windowed(g), *logits = first_node(g, MKC_OP_LOGITS);
  const mkc_node *rope = global_rope(g);
  int period = 0;
  double theta_swa = 0, attn_cap = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *a = &g->nodes[i];
    if (a->op != MKC_OP_ATTENTION) continue;
    if (a->scale > 0 || (attn_cap >= 0 && a->softcap != attn_cap)) {
      fprintf(stderr, "mkc: error: preset %s: layer %d %s, which mkc's model files do not carry\n",
              preset, a->layer,
              a->scale > 0 ? "scales its attention scores otherwise"
                           : "caps its attention scores unlike the layers before it");
      return -1;
    }
    attn_cap = a->softcap;
    if (!a->window && !period) period = a->layer + 1;
    if (a->window && !theta_swa) theta_swa = g->nodes[a->in[0]].theta;
  }
  if (!period) period = g->n_layers + 1;
  for (int i = 0; att && i < g->n_nodes; i++) {
    const mkc_node *a = &g->nodes[i];
    int local = a->layer % period < period - 1;
    if (a->op == MKC_OP_ATTENTION && (a->window != (local ? att->window : 0) ||
                                      (local && g->nodes[a->in[0]].theta != theta_swa))) {
      fprintf(stderr,
              "mkc: error: preset %s: its sliding windows are not %d local layers then "
              "1 global with one window and RoPE base, which mkc's model files carry\n",
              preset, period - 1);
      return -1;
    }
  }
  double final_cap = logits ? logits->softcap : 0;
  attn_cap = attn_cap > 0 ? attn_cap : 0;
  int gelu = swiglu && swiglu->act == MKC_ACT_GELU_TANH;
  if (!gemma) { /* scaled embeddings or GeGLU made it a gemma file (architecture) */
    if (att && strcmp(d->arch, "exaone4") == 0 && !attn_cap && !final_cap) { /* its windows */
      d->sliding_window = att->window;
      d->swa_local = period - 1, d->swa_global = 1;
      d->rope_theta_swa = rope && theta_swa != rope->theta ? theta_swa : 0;
      return 0;
    }
    if (!att && !attn_cap && !final_cap) return 0;
    fprintf(stderr, "mkc: error: preset %s: %s, which a%s %s file does not carry (%s files do)\n",
            preset, att ? "sliding windows" : "soft caps", strchr("aeiou", d->arch[0]) ? "n" : "",
            d->arch, att ? "gemma2, gemma3, exaone4 and gpt-oss" : "gemma2 and gemma3");
    return -1;
  }
  const char *extra = has_weight(g, "blk.0.attn_q_norm.weight") ? "per-head Q/K norms"
                      : has_weight(g, "blk.0.attn_q.bias")      ? "Q/K/V biases"
                      : first_node(g, MKC_OP_MOE)               ? "experts"
                                                                : NULL;
  if (gemma == 1 && extra) {
    fprintf(stderr,
            "mkc: error: preset %s: scaled embeddings or a GELU-gated MLP make it a gemma file, "
            "which has no %s\n",
            preset, extra);
    return -1;
  }
  double want = sqrt((double)g->dim);
  if (!embed || fabs(embed->scale - want) > 1e-6 * want || !gelu) {
    fprintf(stderr,
            "mkc: error: preset %s: a gemma%d file's embeddings are scaled by sqrt(dim) = "
            "%g and its MLP is GELU-gated; the preset has %g and %s\n",
            preset, gemma, want, embed && embed->scale > 0 ? embed->scale : 1.0,
            gelu ? "GELU" : "SiLU");
    return -1;
  }
  /* llama.cpp reads Gemma 2's caps (absent: 50 and 30, so a file cannot say none), only
   * Gemma 3's final one, and none of Gemma 1's */
  if (gemma == 2 ? !attn_cap || !final_cap : gemma == 3 ? attn_cap > 0 : attn_cap || final_cap) {
    fprintf(stderr,
            "mkc: error: preset %s: %s; the preset caps its scores at %g and its logits at %g "
            "(0: none)\n",
            preset,
            gemma == 2   ? "a gemma2 file caps both its attention scores and its logits"
            : gemma == 3 ? "a gemma3 file does not cap its attention scores"
                         : "a gemma file caps neither its attention scores nor its logits",
            attn_cap, final_cap);
    return -1;
  }
  if (gemma == 1 && att) {
    fprintf(stderr,
            "mkc: error: preset %s: a gemma file has no sliding windows (gemma2's and gemma3's "
            "do)\n",
            preset);
    return -1;
  }
  if (gemma == 2 && att && rope && theta_swa != rope->theta) {
    fprintf(stderr,
            "mkc: error: preset %s: a gemma2 file's local layers have the global layers' RoPE "
            "base (%g); the preset's have %g\n",
            preset, rope->theta, theta_swa);
    return -1;
  }
  d->embed_scale = want;
  d->ffn_gelu = 1;
  d->post_norms = gemma > 1;
  d->attn_softcap = attn_cap, d->final_softcap = final_cap;
  if (att) {
    d->sliding_window = att->window;
    d->swa_local = period - 1, d->swa_global = 1; /* past the last layer: every layer local */
    d->rope_theta_swa = gemma == 2 ? 0 : theta_swa;
  }
  return 0;
}

/* Granite's multipliers into d, or -1 with a message where the graph has what a granite file
 * cannot say: llama's layers otherwise (no post norms, GELU, windows or caps), one scale for
 * every layer's scores and one for every residual add. A file says the scores' scale always
 * (config.json's attention_multiplier defaults to 1, not 1 / sqrt(head_dim)). */
static int describe_granite(const mkc_graph *g, const char *preset, mkc_model_desc *d) {
  const mkc_node *embed = first_node(g, MKC_OP_EMBED), *logits = first_node(g, MKC_OP_LOGITS);
  const mkc_node *swiglu = first_node(g, MKC_OP_SWIGLU), *add = first_node(g, MKC_OP_ADD);
  double attn = -1;
  const char *why = has_weight(g, "blk.0.post_attention_norm.weight") ? "norms after attention"
                    : swiglu && swiglu->act == MKC_ACT_GELU_TANH      ? "a GELU-gated MLP"
                    : windowed(g)                                     ? "sliding windows"
                    : logits && logits->softcap > 0                   ? "a logit cap"
                                                                      : NULL;
  for (int i = 0; !why && i < g->n_nodes; i++) {
    const mkc_node *a = &g->nodes[i];
    double s = a->scale > 0 ? a->scale : a->op == MKC_OP_ATTENTION ? 1 / sqrt(a->head_dim) : 1;
    if (a->op == MKC_OP_ATTENTION && a->softcap > 0) why = "capped attention scores";
    if (a->op == MKC_OP_ATTENTION && attn >= 0 && s != attn) why = "layers with other score scales";
    if (a->op == MKC_OP_ATTENTION) attn = s;
    if (a->op == MKC_OP_ADD && s != (add->scale > 0 ? add->scale : 1))
      why = "residual adds with other scales";
  }
  if (why) {
    fprintf(stderr, "mkc: error: preset %s: a granite file (its multipliers) cannot carry %s\n",
            preset, why);
    return -1;
  }
  d->embed_scale = embed && embed->scale > 0 ? embed->scale : 1;
  d->attn_scale = attn > 0 ? attn : 1 / sqrt(g->head_dim);
  d->residual_scale = add && add->scale > 0 ? add->scale : 1;
  d->logit_scale = logits && logits->scale > 0 ? 1 / logits->scale : 1;
  return 0;
}

/* Granite's keys (llama.cpp's granite: logit_scale required), from d (describe_granite). */
static int set_granite(mkc_gguf_writer *out, const mkc_model_desc *d) {
  if (!mkc_granite_family(d->arch)) return 0;
  return set_f32(out, d->arch, "embedding_scale", d->embed_scale) |
         set_f32(out, d->arch, "residual_scale", d->residual_scale) |
         set_f32(out, d->arch, "attention.scale", d->attn_scale) |
         set_f32(out, d->arch, "logit_scale", d->logit_scale);
}

/* gpt-oss's parts, which only a gpt-oss file carries: -1 with a message where a graph of another
 * architecture has one (attention sinks, a bias on a matrix other than Q/K/V, experts' biases,
 * its glu). */
static int refuse_gptoss(const mkc_graph *g, const char *preset) {
  const char *what = NULL;
  for (int i = 0; i < g->n_nodes && !what; i++) {
    const mkc_node *a = &g->nodes[i];
    const char *w =
        a->op == MKC_OP_MATMUL && a->in[2] >= 0 ? g->weights[g->nodes[a->in[2]].weight].name : NULL;
    if (a->op == MKC_OP_ATTENTION && a->in[3] >= 0)
      what = "attention sinks";
    else if (w && !strstr(w, "attn_q.") && !strstr(w, "attn_k.") && !strstr(w, "attn_v."))
      what = "a bias on a matrix other than Q, K or V";
    else if (a->op == MKC_OP_MOE && a->in[5] >= 0)
      what = "experts with biases";
    else if ((a->op == MKC_OP_MOE || a->op == MKC_OP_SWIGLU) && a->act == MKC_ACT_SWIGLU_OAI)
      what = "gpt-oss's clamped glu";
  }
  if (!what) return 0;
  fprintf(stderr,
          "mkc: error: preset %s: %s without attention sinks in every layer: mkc's model files "
          "carry them only in a gpt-oss file\n",
          preset, what);
  return -1;
}

/* gpt-oss's layers as its file says them (desc_gguf.c: read_gptoss): in every layer a sink per
 * head, biases on Q/K/V and the output projection, experts with biases and its glu; local layers
 * on one window taking turns with global ones from layer 0, one RoPE for both. Into d, or -1
 * after a message. */
static int describe_gptoss(const mkc_graph *g, const char *preset, mkc_model_desc *d) {
  const char *why = NULL;
  int window = 0;
  for (int i = 0; i < g->n_nodes && !why; i++) {
    const mkc_node *a = &g->nodes[i];
    if (a->op == MKC_OP_ATTENTION) {
      if (a->in[3] < 0) why = "a layer without attention sinks";
      if (a->scale > 0 || a->softcap > 0) why = "a scale or cap on the attention scores";
      if (a->window && window && a->window != window) why = "windows of two sizes";
      if (a->window) window = a->window;
      if ((a->layer % 2 == 0) != (a->window > 0))
        why = "layers that are not local and global in turn from layer 0";
    }
    if (a->op == MKC_OP_MOE && (a->in[5] < 0 || a->act != MKC_ACT_SWIGLU_OAI))
      why = "experts without biases or gpt-oss's glu";
  }
  const char *need[] = {"blk.0.attn_q.bias", "blk.0.attn_output.bias",
                        "blk.0.post_attention_norm.weight"};
  for (size_t i = 0; i < sizeof need / sizeof *need && !why; i++)
    if (!has_weight(g, need[i])) why = need[i];
  if (!why && (!first_node(g, MKC_OP_MOE) || !window)) why = "no experts or no sliding window";
  if (why) {
    fprintf(stderr, "mkc: error: preset %s: a gpt-oss file cannot carry it: %s\n", preset, why);
    return -1;
  }
  d->sliding_window = window, d->swa_local = 1, d->swa_global = 1;
  return 0;
}

/* What the graph has beyond llama's layers that a smollm3 or exaone4 file cannot say (whose
 * loaders assert every dim rotated), or NULL: Gemma's scaled embeddings and GeGLU, Granite's
 * multipliers, partial RoPE. */
static const char *beyond_llama(const mkc_graph *g) {
  const mkc_node *embed = first_node(g, MKC_OP_EMBED), *swiglu = first_node(g, MKC_OP_SWIGLU);
  const mkc_node *add = first_node(g, MKC_OP_ADD), *logits = first_node(g, MKC_OP_LOGITS);
  const mkc_node *rope = first_node(g, MKC_OP_ROPE);
  return embed && embed->scale > 0 && embed->scale != 1 ? "scaled embeddings"
         : swiglu && swiglu->act != MKC_ACT_SILU        ? "an MLP gated otherwise than SiLU"
         : (add && add->scale > 0) || (logits && logits->scale > 0) ? "Granite's multipliers"
         : rope && rope->rot_dim > 0 && rope->rot_dim < g->head_dim ? "partial RoPE"
                                                                    : NULL;
}

/* A SmolLM3 model's NoPE layers into d (every N layers from layer N - 1, as config.json's
 * no_rope_layer_interval says them), or -1 with a message where the graph's are otherwise or it
 * has what a smollm3 file cannot carry: llama's layers else (describe_gemma refuses windows and
 * caps). */
static int describe_smollm3(const mkc_graph *g, const char *preset, mkc_model_desc *d) {
  int every = nope_every(g);
  const mkc_node *a = nope_mismatch(g, every);
  if (a) {
    fprintf(stderr,
            "mkc: error: preset %s: layer %d %s RoPE, unlike every %d layers from layer %d: mkc's "
            "model files carry NoPE layers so only\n",
            preset, a->layer, g->nodes[a->in[0]].nope ? "has no" : "has", every, every - 1);
    return -1;
  }
  const char *why = has_weight(g, "blk.0.attn_q_norm.weight")           ? "per-head Q/K norms"
                    : has_weight(g, "blk.0.attn_q.bias")                ? "Q/K/V biases"
                    : has_weight(g, "blk.0.post_attention_norm.weight") ? "norms after attention"
                    : first_node(g, MKC_OP_MOE)                         ? "experts"
                                                                        : beyond_llama(g);
  if (why) {
    fprintf(stderr,
            "mkc: error: preset %s: layers without RoPE make it a smollm3 file, which has no %s\n",
            preset, why);
    return -1;
  }
  d->nope_interval = every;
  return describe_gemma(g, preset, 0, d);
}

/* An EXAONE 4 model into d, or -1 with a message where the graph has what an exaone4 file
 * cannot carry: its layers have norms after attention and the MLP and per-head Q/K norms, no
 * biases or experts, Gemma's scaling or caps (describe_gemma), and RoPE in every layer but the
 * global ones of its windows (llama.cpp's and transformers' exaone4). */
static int describe_exaone4(const mkc_graph *g, const char *preset, mkc_model_desc *d) {
  const char *why = !has_weight(g, "blk.0.post_attention_norm.weight")
                        ? "no norms after attention and the MLP"
                    : !d->qk_norm               ? "no per-head Q/K norms"
                    : d->qkv_bias               ? "Q/K/V biases"
                    : first_node(g, MKC_OP_MOE) ? "experts"
                                                : beyond_llama(g);
  if (why) {
    fprintf(stderr,
            "mkc: error: preset %s: no norms before attention and the MLP make it an exaone4 "
            "file, which cannot carry %s\n",
            preset, why);
    return -1;
  }
  if (describe_gemma(g, preset, 0, d)) return -1;
  d->post_norms = d->no_pre_norms = 1;
  int every = d->sliding_window && d->swa_global ? d->swa_local + d->swa_global : 0;
  const mkc_node *a = nope_mismatch(g, every);
  if (a) {
    fprintf(stderr,
            "mkc: error: preset %s: layer %d %s RoPE; an exaone4 file's layers have it but for "
            "the global layers of its windows\n",
            preset, a->layer, g->nodes[a->in[0]].nope ? "has no" : "has");
    return -1;
  }
  d->nope_interval = every;
  return 0;
}

/* What a folder cannot say that a GGUF can: an exaone4 folder's local layers have the global
 * RoPE base (Exaone4Config has one rotary embedding). */
static int fits_folder(const mkc_model_desc *d, const char *preset) {
  if (strcmp(d->arch, "exaone4") != 0 || d->rope_theta_swa <= 0) return 0;
  fprintf(stderr,
          "mkc: error: preset %s: local layers with a RoPE base of their own (%g): an exaone4 "
          "folder's have the global one (Exaone4Config has one); use -o FILE.gguf\n",
          preset, d->rope_theta_swa);
  return -1;
}

/* What a GGUF cannot say that a folder can: a smollm3 GGUF's NoPE layers are llama.cpp's, every
 * 4th (no key says another interval); a 64-layer exaone4 GGUF has windows and no other has
 * (llama.cpp's 32B; no key turns them on or off); a gemma or gemma2 GGUF's head is token_embd
 * (llama.cpp's loaders take no output.weight there). */
static int fits_gguf(const mkc_model_desc *d, const char *preset) {
  int gemma = mkc_gemma_version(d->arch);
  if ((gemma == 1 || gemma == 2) && !d->tied) {
    fprintf(stderr,
            "mkc: error: preset %s: a separate LM head: a %s GGUF's is token_embd (llama.cpp's "
            "loader takes no output.weight); its Hugging Face folder can say it (-o DIR)\n",
            preset, d->arch);
    return -1;
  }
  if (strcmp(d->arch, "exaone4") == 0 && !d->sliding_window && d->n_layers == 64) {
    fprintf(stderr,
            "mkc: error: preset %s: 64 layers without sliding windows: llama.cpp gives a 64-layer "
            "exaone4 GGUF windows (the 32B's); its Hugging Face folder can say none (-o DIR)\n",
            preset);
    return -1;
  }
  if (strcmp(d->arch, "smollm3") == 0 && d->nope_interval && d->nope_interval != 4) {
    fprintf(stderr,
            "mkc: error: preset %s: NoPE every %d layers: a smollm3 GGUF's are every 4 "
            "(llama.cpp's step; no key says another); its Hugging Face folder can say it (-o "
            "DIR)\n",
            preset, d->nope_interval);
    return -1;
  }
  if (strcmp(d->arch, "exaone4") == 0 && d->sliding_window && d->n_layers != 64) {
    fprintf(stderr,
            "mkc: error: preset %s: sliding windows in %d layers: an exaone4 GGUF has them only "
            "with 64 layers (llama.cpp's 32B; no key turns them on); its Hugging Face folder can "
            "say them (-o DIR)\n",
            preset, d->n_layers);
    return -1;
  }
  return 0;
}

/* What a model file says beyond the sizes: gpt-oss's layers, SmolLM3's NoPE layers, EXAONE 4's
 * norms and windows, Granite's multipliers or Gemma's (describe_gemma). */
static int describe_extras(const mkc_graph *g, const char *preset, mkc_model_desc *d) {
  if (mkc_gptoss(d->arch)) return describe_gptoss(g, preset, d);
  if (refuse_gptoss(g, preset) != 0) return -1;
  if (strcmp(d->arch, "smollm3") == 0) return describe_smollm3(g, preset, d);
  if (strcmp(d->arch, "exaone4") == 0) return describe_exaone4(g, preset, d);
  if (mkc_granite_family(d->arch)) return describe_granite(g, preset, d);
  return describe_gemma(g, preset, mkc_gemma_version(d->arch), d);
}

/* A Gemma file's window keys and soft caps, from d (describe_gemma): keys
 * llama.cpp's loaders read too (gemma2's defaults: a window of 4096 on 1 local
 * : 1 global, caps 50 and 30; gemma3's: no window, a period of 6, local base
 * 10000, no cap). */
static int set_gemma(mkc_gguf_writer *out, const mkc_model_desc *d) {
  const char *arch = d->arch;
  int bad = 0;
  if (mkc_gemma_version(arch) == 2) {
    bad |= set_f32(out, arch, "attn_logit_softcapping", d->attn_softcap);
    if (!d->sliding_window) bad |= set_u32(out, arch, "attention.sliding_window_pattern", 1);
  }
  if (d->final_softcap > 0) bad |= set_f32(out, arch, "final_logit_softcapping", d->final_softcap);
  if (!d->sliding_window) return bad;
  bad |= set_u32(out, arch, "attention.sliding_window", d->sliding_window);
  bad |= set_u32(out, arch, "attention.sliding_window_pattern", d->swa_local + 1);
  if (d->rope_theta_swa > 0) bad |= set_f32(out, arch, "rope.freq_base_swa", d->rope_theta_swa);
  return bad;
}

static int set_metadata(mkc_gguf_writer *out, const mkc_graph *g, const char *arch,
                        const char *name) {
  const mkc_node *rope = global_rope(g), *norm = first_node(g, MKC_OP_RMSNORM);
  char key[128];
  int bad = mkc_gguf_set_str(out, "general.architecture", arch);
  bad |= mkc_gguf_set_str(out, "general.name", name);
  bad |= set_u32(out, arch, "block_count", g->n_layers);
  bad |= set_u32(out, arch, "context_length", g->max_ctx);
  bad |= set_u32(out, arch, "embedding_length", g->dim);
  int own_width = mkc_experts_own_width(arch);
  if (!first_node(g, MKC_OP_MOE) || own_width)
    bad |= set_u32(out, arch, "feed_forward_length", g->ffn);
  bad |= set_u32(out, arch, "attention.head_count", g->n_heads);
  bad |= set_u32(out, arch, "attention.head_count_kv", g->n_kv_heads);
  /* head_dim need not be dim / n_heads: loaders read it from these */
  bad |= set_u32(out, arch, "attention.key_length", g->head_dim);
  bad |= set_u32(out, arch, "attention.value_length", g->head_dim);
  bad |= set_u32(out, arch, "rope.dimension_count",
                 rope && rope->rot_dim > 0 ? rope->rot_dim : g->head_dim);
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
  const mkc_node *moe = first_node(g, MKC_OP_MOE);
  if (moe) {
    int expert_ffn = mkc_moe_ffn(g, moe);
    bad |= set_u32(out, arch, "expert_count", moe->experts);
    bad |= set_u32(out, arch, "expert_used_count", moe->experts_used);
    if (!own_width) /* Mixtral's and Granite MoE's: the dense width */
      bad |= set_u32(out, arch, "feed_forward_length", expert_ffn);
    else
      bad |= set_u32(out, arch, "expert_feed_forward_length", expert_ffn);
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
  const mkc_factors *lists[] = {&rope->rope_short_factor, &rope->rope_long_factor};
  double *into[] = {s->short_factor, s->long_factor};
  for (int i = 0; i < 2 && s->type == MKC_ROPE_SCALING_LONGROPE; i++) {
    s->n_factors = lists[i]->n < MKC_ROPE_MAX_PAIRS ? lists[i]->n : MKC_ROPE_MAX_PAIRS;
    memcpy(into[i], lists[i]->v, (size_t)s->n_factors * sizeof *into[i]);
  }
}

/* What config.json says of the graph: the inverse of mkc_hf_config_read. */
static void describe(const mkc_graph *g, mkc_model_desc *d) {
  const mkc_node *rope = global_rope(g), *norm = first_node(g, MKC_OP_RMSNORM);
  memset(d, 0, sizeof *d);
  snprintf(d->arch, sizeof d->arch, "%s", architecture(g));
  d->vocab = g->vocab, d->dim = g->dim, d->n_layers = g->n_layers, d->n_heads = g->n_heads;
  d->n_kv_heads = g->n_kv_heads, d->head_dim = g->head_dim, d->ffn = g->ffn;
  d->ctx_train = g->max_ctx;
  d->rope_theta = rope ? rope->theta : 10000.0;
  d->norm_eps = norm ? norm->eps : 1e-5;
  d->rope_layout = rope ? rope->layout : MKC_ROPE_INTERLEAVED;
  rope_scaling(rope, &d->rope_scaling);
  d->rope_dim = rope && rope->rot_dim > 0 && rope->rot_dim < g->head_dim ? rope->rot_dim : 0;
  d->tied = !has_weight(g, "output.weight");
  d->qkv_bias = has_weight(g, "blk.0.attn_q.bias");
  d->qk_norm = has_weight(g, "blk.0.attn_q_norm.weight");
  const mkc_node *moe = first_node(g, MKC_OP_MOE);
  if (moe) {
    d->n_experts = moe->experts, d->n_experts_used = moe->experts_used;
    d->expert_ffn = mkc_moe_ffn(g, moe);
    d->norm_topk = moe->norm_topk;
  }
}

/* A graph's experts as a file can say them: the same in every layer, their MLP SiLU-gated, and
 * in a GGUF (whose loaders always renormalize) their weights renormalized; a llama file's
 * (Mixtral's) experts are feed_forward_length wide, so its dense size is theirs. 0, or -1 after
 * a message. */
static int experts_fit(const mkc_graph *g, const char *preset, const mkc_model_desc *d, int gguf) {
  const char *why = NULL;
  int moe_layers = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *m = &g->nodes[i];
    if (m->op != MKC_OP_MOE) continue;
    moe_layers++;
    if (m->experts != d->n_experts || m->experts_used != d->n_experts_used ||
        mkc_moe_ffn(g, m) != d->expert_ffn || m->norm_topk != d->norm_topk)
      why = "layers with other experts";
    else if (m->act != (mkc_gptoss(d->arch) ? MKC_ACT_SWIGLU_OAI : MKC_ACT_SILU))
      why = "GELU-gated experts";
  }
  if (!why && moe_layers && moe_layers != g->n_layers) why = "dense layers among the sparse ones";
  if (!why && moe_layers && strcmp(d->arch, "llama") != 0 && strcmp(d->arch, "mixtral") != 0 &&
      strcmp(d->arch, "qwen3moe") != 0 && strcmp(d->arch, "granitemoe") != 0 &&
      !mkc_gptoss(d->arch))
    why = "experts beside what only another architecture's file says (mkc writes experts in "
          "llama (Mixtral), qwen3moe, granitemoe and gpt-oss files)";
  if (!why && moe_layers && !d->norm_topk && (gguf || strcmp(d->arch, "qwen3moe") != 0))
    why = "experts' weights left as the softmax gives them (only a qwen3_moe folder can say so: "
          "GGUF loaders and Mixtral's and Granite MoE's configs renormalize them)";
  if (!why) return 0;
  fprintf(stderr, "mkc: error: preset %s: %s, which mkc's model files do not carry\n", preset, why);
  return -1;
}

/* The types --type and --tensor-type take, by name (any case). */
static const struct {
  const char *name;
  uint32_t type;
} TYPE_NAMES[] = {
    {"bf16", MKC_GGML_BF16},     {"f16", MKC_GGML_F16},         {"f32", MKC_GGML_F32},
    {"q8_0", MKC_GGML_Q8_0},     {"q4_0", MKC_GGML_Q4_0},       {"q4_1", MKC_GGML_Q4_1},
    {"q5_0", MKC_GGML_Q5_0},     {"q5_1", MKC_GGML_Q5_1},       {"q2_k", MKC_GGML_Q2_K},
    {"q3_k", MKC_GGML_Q3_K},     {"q4_k", MKC_GGML_Q4_K},       {"q5_k", MKC_GGML_Q5_K},
    {"q6_k", MKC_GGML_Q6_K},     {"iq2_xxs", MKC_GGML_IQ2_XXS}, {"iq2_xs", MKC_GGML_IQ2_XS},
    {"iq2_s", MKC_GGML_IQ2_S},   {"iq3_xxs", MKC_GGML_IQ3_XXS}, {"iq3_s", MKC_GGML_IQ3_S},
    {"iq1_s", MKC_GGML_IQ1_S},   {"iq1_m", MKC_GGML_IQ1_M},     {"iq4_nl", MKC_GGML_IQ4_NL},
    {"iq4_xs", MKC_GGML_IQ4_XS}, {"mxfp4", MKC_GGML_MXFP4},     {"nvfp4", MKC_GGML_NVFP4},
    {"tq1_0", MKC_GGML_TQ1_0},   {"tq2_0", MKC_GGML_TQ2_0},     {"q1_0", MKC_GGML_Q1_0},
    {"q2_0", MKC_GGML_Q2_0}};
#define TYPE_CHOICES                                                                               \
  "bf16, f16, f32, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq2_xxs, iq2_xs, "  \
  "iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m, iq4_nl, iq4_xs, mxfp4, nvfp4, tq1_0, tq2_0, q1_0, q2_0"

static int type_named(const char *name, uint32_t *type) {
  for (size_t i = 0; i < sizeof TYPE_NAMES / sizeof *TYPE_NAMES; i++)
    if (strcasecmp(name, TYPE_NAMES[i].name) == 0) return *type = TYPE_NAMES[i].type, 0;
  return -1;
}

/* --tensor-type NAME=T, as given. */
typedef struct tensor_type {
  const char *arg; /* NAME=T */
  int name_len;
  uint32_t type;
} tensor_type;

typedef struct init_flags {
  const char *graph, *preset, *path;
  long max_ctx;
  unsigned long long seed;
  const char *type_arg; /* --type as given, or NULL */
  uint32_t type;        /* the matrices' type */
  tensor_type *tensor_types;
  int n_tensor_types;
  int pooling; /* --pooling: enum mkc_pooling, llama.cpp's pooling_type + 1 (0: not written) */
  int phi3;    /* --arch phi3: Q/K/V and gate/up fused, as phi3 files store them */
  int exaone;  /* --arch exaone: llama's layers with NEOX RoPE, as EXAONE 3.x's files say */
  const char *vocab; /* --vocab FILE.gguf: its tokenizer, and the model's vocabulary its size */
} init_flags;

/* The type asked for tensor info: the last --tensor-type naming it, else
 * --type for a matrix, else BF16. */
static uint32_t wanted_type(const init_flags *f, const mkc_weight_info *info) {
  for (int k = f->n_tensor_types - 1; k >= 0; k--) {
    const tensor_type *tt = &f->tensor_types[k];
    if ((int)strlen(info->name) == tt->name_len &&
        strncmp(info->name, tt->arg, (size_t)tt->name_len) == 0)
      return tt->type;
  }
  /* gpt-oss's sinks and experts' biases in F32, as its converter stores them: llama.cpp's softmax
   * and its experts' bias add (ggml_add_id) read them as floats whatever their type */
  if (mkc_ends_with(info->name, ".attn_sinks.weight") || mkc_ends_with(info->name, "_exps.bias"))
    return MKC_GGML_F32;
  return info->rows > 1 && mkc_ends_with(info->name, ".weight") ? f->type : MKC_GGML_BF16;
}

/* The type a tensor is stored in: the one wanted, unless its columns are not
 * whole blocks of it (a GGUF row holds whole blocks): then as llama.cpp's
 * quantize falls back, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, TQ1_0, TQ2_0
 * and Q2_0 to Q4_0, and Q2_K, Q3_K and the IQ types of 256 to IQ4_NL when the
 * columns are whole 32s, else BF16 (llama.cpp: F16; for Q1_0, which it does
 * not fall back, an error). */
static uint32_t fitting_type(const mkc_weight_info *info, uint32_t want) {
  const mkc_ggml_type_info *t = mkc_ggml_type(want);
  if (info->cols % t->block == 0) return want;
  uint32_t fallback = want == MKC_GGML_Q4_K   ? MKC_GGML_Q5_0
                      : want == MKC_GGML_Q5_K ? MKC_GGML_Q5_1
                      : want == MKC_GGML_Q6_K ? MKC_GGML_Q8_0
                      : want == MKC_GGML_TQ1_0 || want == MKC_GGML_TQ2_0 || want == MKC_GGML_Q2_0
                          ? MKC_GGML_Q4_0
                      : t->block == 256 ? MKC_GGML_IQ4_NL /* Q2_K, Q3_K, the IQ types */
                                        : MKC_GGML_BF16;
  return info->cols % mkc_ggml_type(fallback)->block == 0 ? fallback : MKC_GGML_BF16;
}

/* The same, a fallback said in one line. */
static uint32_t stored_type(const mkc_weight_info *info, uint32_t want) {
  uint32_t type = fitting_type(info, want);
  if (type != want)
    fprintf(stderr, "mkc: init: %s: %s needs columns in multiples of %d; stored as %s\n",
            info->name, mkc_ggml_type(want)->name, mkc_ggml_type(want)->block,
            mkc_ggml_type(type)->name);
  return type;
}

/* Tensors as the graph names them: matrices ne {cols, rows}, vectors ne {cols}.
 * The bf16 data is little-endian in memory, as in the file; a tensor of
 * another type is encoded into encoded[i] (kept until the file is written).
 * count[type] counts the tensors stored in each type. */
/* Quantizing a real-size model takes a while (the IQ types about 0.1 to 0.4 s per million
 * values a core; init uses every core): past QUIET_VALUES values to encode, init says how far
 * it is at each tenth. */
#define QUIET_VALUES (1 << 26)

/* phi3 stores each layer's Q, K and V as one matrix (attn_qkv) and its MLP's gate and up as one
 * (ffn_up, the gate's rows first). A part of such a matrix: which (0 the attention's, 1 the MLP's),
 * its place in it, and how many parts it has; -1 for any other tensor. */
static int fused_part(const char *name, int *layer, int *group, int *place, int *parts) {
  int n = 0;
  if (sscanf(name, "blk.%d.%n", layer, &n) != 1 || n == 0) return -1;
  for (int g = 0; g < MKC_FUSED_GROUPS; g++)
    for (int p = 0; p < MKC_PHI3_FUSED[g].n_parts; p++)
      if (strcmp(name + n, MKC_PHI3_FUSED[g].gguf_parts[p]) == 0) {
        *group = g, *place = p, *parts = MKC_PHI3_FUSED[g].n_parts;
        return 0;
      }
  return -1;
}

typedef struct fuse_part {
  const void *bytes;
  uint32_t type;
  int rows, cols;
  size_t row_bytes;
} fuse_part;

/* A phi3 part stashed in parts[layer * 5 + group * 3 + place] (MKC_PHI3_FUSED's groups of 3 and
 * 2); once its matrix has every
 * part, the parts' rows one after another into a new *joined (which the caller keeps until
 * the file is written), added as the fused tensor. 0, or -1 after a message. */
static int add_fused(mkc_gguf_writer *out, fuse_part *parts, int layer, int group, int place,
                     int n_parts, fuse_part p, void **joined_out, int *count) {
  fuse_part *mine = &parts[layer * 5 + group * 3];
  mine[place] = p;
  size_t bytes = 0;
  int rows = 0;
  for (int k = 0; k < n_parts; k++) {
    if (!mine[k].bytes) return 0; /* not all in yet */
    if (mine[k].type != p.type || mine[k].cols != p.cols) {
      fprintf(stderr,
              "mkc: error: init: --arch phi3 fuses layer %d's %s into one matrix: give "
              "them one type (--tensor-type)\n",
              layer, group ? "ffn_gate and ffn_up" : "attn_q, attn_k and attn_v");
      return -1;
    }
    bytes += mine[k].row_bytes * (size_t)mine[k].rows;
    rows += mine[k].rows;
  }
  char *joined = malloc(bytes), *at = joined;
  if (!joined) {
    fprintf(stderr, "mkc: error: init: out of memory fusing layer %d\n", layer);
    return -1;
  }
  for (int k = 0; k < n_parts; k++) {
    memcpy(at, mine[k].bytes, mine[k].row_bytes * (size_t)mine[k].rows);
    at += mine[k].row_bytes * (size_t)mine[k].rows;
  }
  *joined_out = joined;
  char name[64];
  snprintf(name, sizeof name, "blk.%d.%s", layer, MKC_PHI3_FUSED[group].gguf);
  int64_t ne[2] = {p.cols, rows};
  if (mkc_gguf_add_raw(out, name, p.type, 2, ne, joined)) return -1;
  count[p.type]++;
  return 0;
}

static int add_weights(mkc_gguf_writer *out, const mkc_graph *g, const mkc_weights *w,
                       const init_flags *f, void **encoded, int *count) {
  fuse_part *parts = f->phi3 ? calloc((size_t)g->n_layers * 5 + 5, sizeof *parts) : NULL;
  if (f->phi3 && !parts) return -1;
  int rc = -1;
  double total = 0, done = 0, start = mkc_seconds();
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    if (fitting_type(info, wanted_type(f, info)) != MKC_GGML_BF16)
      total += (double)info->rows * info->cols;
  }
  int tenth = 0;
  for (int i = 0; i < g->n_weights; i++) {
    const mkc_weight_info *info = &g->weights[i];
    const mkc_tensor *t = mkc_weights_get(w, info->name, info->rows, info->cols);
    if (!t) goto done;
    const uint16_t *bf16 = (const uint16_t *)t->data; /* [rows][cols] */
    uint32_t type = stored_type(info, wanted_type(f, info));
    const void *bytes = bf16;
    if (type != MKC_GGML_BF16) {
      size_t n = (size_t)info->rows * (size_t)info->cols;
      float *values = malloc(n * sizeof *values);
      encoded[i] = malloc((size_t)info->rows * mkc_quant_row_bytes(type, info->cols));
      if (!values || !encoded[i]) {
        free(values);
        fprintf(stderr, "mkc: error: init: out of memory encoding %s\n", info->name);
        goto done;
      }
      for (size_t k = 0; k < n; k++) values[k] = mkc_bf16_to_float(bf16[k]);
      /* cannot fail: type and cols checked */
      mkc_quantize_parallel(type, values, n, encoded[i], (int)sysconf(_SC_NPROCESSORS_ONLN));
      free(values);
      bytes = encoded[i];
      done += (double)n;
      if (total >= QUIET_VALUES && (int)(10 * done / total) > tenth) {
        tenth = (int)(10 * done / total);
        fprintf(stderr, "mkc: init: quantized %.0f%% of %.0fM values (%.0f s)\n",
                100 * done / total, total / 1e6, mkc_seconds() - start);
      }
    }
    int layer, group, place, n_parts;
    if (parts && fused_part(info->name, &layer, &group, &place, &n_parts) == 0 && layer >= 0 &&
        layer < g->n_layers) {
      fuse_part p = {bytes, type, info->rows, info->cols,
                     type == MKC_GGML_BF16 ? (size_t)info->cols * 2
                                           : mkc_quant_row_bytes(type, info->cols)};
      void *joined = NULL;
      if (add_fused(out, parts, layer, group, place, n_parts, p, &joined, count)) goto done;
      if (joined) { /* the last part's own encoding is in it: the joined rows take its place */
        free(encoded[i]);
        encoded[i] = joined;
      }
      continue;
    }
    int64_t ne[3] = {info->cols, info->rows, 1};
    const mkc_node *moe = mkc_graph_weight_moe(g, i); /* a GGUF's 3-d NAME_exps tensor */
    int experts = moe ? moe->experts : 0, n_dims = info->rows == 1 ? 1 : experts ? 3 : 2;
    if (experts) ne[1] = info->rows / experts, ne[2] = experts; /* ne {cols, rows, experts} */
    /* experts' biases (gpt-oss's): ne {rows, experts}, as llama.cpp's openai-moe loader wants */
    const mkc_node *biased = mkc_graph_bias_moe(g, i);
    if (biased) n_dims = 2, ne[0] = info->cols / biased->experts, ne[1] = biased->experts;
    if (mkc_gguf_add_raw(out, info->name, type, n_dims, ne, bytes)) goto done;
    count[type]++;
  }
  rc = 0;
done:
  free(parts);
  return rc;
}

/* "20 BF16 tensors", or "20 tensors (Q8_0 15, BF16 5)". */
static void describe_types(const int *count, int n, char *buf, size_t size) {
  int kinds = 0, last = MKC_GGML_BF16;
  for (int t = 0; t < MKC_GGML_TYPE_COUNT; t++)
    if (count[t]) kinds++, last = t;
  if (kinds <= 1) {
    snprintf(buf, size, "%d %s tensors", n, mkc_ggml_type((uint32_t)last)->name);
    return;
  }
  size_t used = (size_t)snprintf(buf, size, "%d tensors", n);
  const char *sep = " (";
  for (int t = 0; t < MKC_GGML_TYPE_COUNT && used < size; t++) {
    if (!count[t]) continue;
    used += (size_t)snprintf(buf + used, size - used, "%s%s %d", sep,
                             mkc_ggml_type((uint32_t)t)->name, count[t]);
    sep = ", ";
  }
  if (used < size) snprintf(buf + used, size - used, ")");
}

/* --arch phi3: a preset a phi3 file can hold (llama.cpp's phi3: NEOX RoPE, no
 * biases, no per-head norms, no windows, no RoPE scaling but longrope), d's arch then
 * phi3. 0, or -1 after a message. */
static int phi3_fits(const mkc_graph *g, mkc_model_desc *d, const char *preset) {
  const char *why = strcmp(d->arch, "llama") != 0     ? d->arch
                    : d->n_experts                    ? "experts"
                    : d->rope_layout != MKC_ROPE_NEOX ? "interleaved RoPE pairs"
                    : d->rope_scaling.type != MKC_ROPE_SCALING_NONE &&
                            d->rope_scaling.type != MKC_ROPE_SCALING_LONGROPE
                        ? "RoPE scaling other than longrope"
                    : windowed(g) ? "sliding windows"
                                  : NULL;
  if (why) {
    fprintf(
        stderr,
        "mkc: error: init: --arch phi3: preset %s has %s, which a phi3 file does not carry "
        "(phi3: NEOX RoPE halves, no biases or head norms, no windows, no scaling but longrope)\n",
        preset, why);
    return -1;
  }
  snprintf(d->arch, sizeof d->arch, "phi3");
  return 0;
}

/* --arch exaone: a preset an exaone file can hold (llama.cpp's exaone: llama's layers with NEOX
 * RoPE halves, whose scaling is llama's). 0, or -1 after a message. */
static int exaone_fits(const mkc_graph *g, mkc_model_desc *d, const char *preset) {
  const char *why = strcmp(d->arch, "llama") != 0                       ? d->arch
                    : d->n_experts                                      ? "experts"
                    : d->rope_layout != MKC_ROPE_NEOX                   ? "interleaved RoPE pairs"
                    : d->rope_dim                                       ? "partial RoPE"
                    : d->rope_scaling.type == MKC_ROPE_SCALING_LONGROPE ? "longrope scaling"
                    : windowed(g)                                       ? "sliding windows"
                                                                        : NULL;
  if (why) {
    fprintf(stderr,
            "mkc: error: init: --arch exaone: preset %s has %s, which an exaone file does not "
            "carry (exaone: llama's layers with NEOX RoPE halves)\n",
            preset, why);
    return -1;
  }
  snprintf(d->arch, sizeof d->arch, "exaone");
  return 0;
}

/* The tensors a folder of g holds: phi3's fused matrices one for their parts, experts' matrices
 * a tensor an expert (or, fused, gate and up one tensor). */
static int hf_tensors(const mkc_graph *g, const mkc_model_desc *d, int phi3) {
  int n = phi3 ? -3 * g->n_layers : 0, part, parts;
  char name[512];
  for (int i = 0; i < g->n_weights; i++) {
    const char *w = g->weights[i].name;
    n += mkc_hf_expert_name(d->arch, w, 0, name, sizeof name) == 0                 ? d->n_experts
         : mkc_hf_experts_fused(d->arch, w, name, sizeof name, &part, &parts) == 0 ? 1 - part
                                                                                   : 1;
  }
  return n;
}

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
    else if (strcmp(a, "--type") == 0) {
      if (type_named(v, &f->type) != 0)
        return usage_error("--type: expected one of " TYPE_CHOICES ", got '%s'", v);
      f->type_arg = v;
    } else if (strcmp(a, "--tensor-type") == 0) {
      const char *eq = strrchr(v, '=');
      if (!eq || eq == v) return usage_error("--tensor-type: expected NAME=TYPE, got '%s'", v);
      tensor_type *tt = &f->tensor_types[f->n_tensor_types++];
      *tt = (tensor_type){.arg = v, .name_len = (int)(eq - v)};
      if (type_named(eq + 1, &tt->type) != 0)
        return usage_error(
            "--tensor-type: expected a type among " TYPE_CHOICES " after '=', got '%s'", v);
    } else if (strcmp(a, "--arch") == 0) {
      if (strcmp(v, "phi3") != 0 && strcmp(v, "exaone") != 0)
        return usage_error(
            "--arch: expected phi3 or exaone (the others follow from the preset), got '%s'", v);
      f->phi3 = v[0] == 'p', f->exaone = v[0] == 'e';
    } else if (strcmp(a, "--pooling") == 0) {
      if ((f->pooling = mkc_pooling_from_name(v)) < 0)
        return usage_error("--pooling: expected none, mean, cls, last or rank, got '%s'", v);
    } else if (strcmp(a, "--vocab") == 0) {
      f->vocab = v;
    } else if (strcmp(a, "--ctx") == 0) {
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
  if (!mkc_ends_with(f->path, ".gguf")) { /* safetensors has BF16 but no block types */
    if (f->vocab)
      return usage_error("%s", "--vocab: the tokenizer goes into a GGUF file (-o FILE.gguf); init "
                               "does not write a Hugging Face folder's tokenizer.json");
    if (f->pooling)
      return usage_error("%s", "--pooling: a GGUF file's key (-o FILE.gguf); a Hugging Face "
                               "folder says it in sentence-transformers' files, which init does "
                               "not write");
    if (f->type != MKC_GGML_BF16)
      return usage_error("--type %s: a Hugging Face folder is written in BF16 only (-o FILE.gguf "
                         "takes other types)",
                         f->type_arg);
    for (int k = 0; k < f->n_tensor_types; k++)
      if (f->tensor_types[k].type != MKC_GGML_BF16)
        return usage_error("--tensor-type %s: a Hugging Face folder is written in BF16 only (-o "
                           "FILE.gguf takes other types)",
                           f->tensor_types[k].arg);
  }
  return 0;
}

/* Every --tensor-type names a tensor of the graph: 0, or 2 after a usage error. */
static int check_tensor_names(const init_flags *f, const mkc_graph *g) {
  for (int k = 0; k < f->n_tensor_types; k++) {
    const tensor_type *tt = &f->tensor_types[k];
    int found = 0;
    for (int i = 0; i < g->n_weights && !found; i++)
      found = (int)strlen(g->weights[i].name) == tt->name_len &&
              strncmp(g->weights[i].name, tt->arg, (size_t)tt->name_len) == 0;
    if (!found) {
      char name[256];
      snprintf(name, sizeof name, "%.*s", tt->name_len, tt->arg);
      fprintf(stderr, "mkc: error: init: --tensor-type: preset %s has no tensor '%s'\n", f->preset,
              name);
      return 2;
    }
  }
  return 0;
}

int mkc_cmd_init(int argc, char **argv) {
  init_flags f = {.type = MKC_GGML_BF16};
  /* at most one --tensor-type per two arguments */
  if (!(f.tensor_types = calloc((size_t)argc / 2 + 1, sizeof *f.tensor_types))) return 1;
  int parsed = init_flags_parse(argc, argv, &f);
  if (parsed) {
    free(f.tensor_types);
    return parsed < 0 ? 0 : parsed;
  }
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

  mkc_init_vocab vocab = {0};
  if (f.vocab && mkc_init_vocab_open(f.vocab, &vocab) != 0) {
    free(f.tensor_types);
    return 1;
  }
  /* reference_only: the graph alone, so a preset no kernel runs is refused below, not at its op */
  mkc_gen_opts o = {.graph_path = graph_path,
                    .preset = preset,
                    .draft_max = 0,
                    .max_ctx = (int)max_ctx,
                    .vocab = vocab.n_vocab,
                    .reference_only = 1};
  mkc_graph g;
  mkc_kernel_src src;
  if (mkc_codegen(&o, &g, &src) != 0) {
    mkc_init_vocab_close(&vocab);
    free(f.tensor_types);
    return 1;
  }
  mkc_kernel_src_free(&src);
  const mkc_node *rec = first_node(&g, MKC_OP_RECURRENT);
  if (rec) {
    fprintf(stderr,
            "mkc: error: preset %s: layer %d is a recurrent (linear attention) layer, which mkc's "
            "model files do not carry yet; run the preset with --random-weights --backend ref "
            "instead\n",
            preset, rec->layer);
    mkc_graph_free(&g);
    mkc_init_vocab_close(&vocab);
    free(f.tensor_types);
    return 1;
  }
  mkc_weights w = {0};
  mkc_gguf_writer *out = NULL;
  void **encoded = calloc((size_t)g.n_weights + 1, sizeof *encoded);
  int count[MKC_GGML_TYPE_COUNT] = {0};
  int rc = check_tensor_names(&f, &g);
  if (rc) goto done;
  rc = 1;
  if (!encoded || mkc_weights_random(&w, &g, seed) != 0) goto done;
  if (!mkc_ends_with(path, ".gguf") && f.exaone) { /* EXAONE 3's folders need its own code */
    fprintf(stderr, "mkc: error: init: --arch exaone writes a GGUF only (-o FILE.gguf)\n");
    goto done;
  }
  if (!mkc_ends_with(path, ".gguf")) {
    mkc_model_desc d;
    describe(&g, &d);
    if (f.phi3 && phi3_fits(&g, &d, preset) != 0) goto done;
    if (d.n_experts && strcmp(d.arch, "llama") == 0) snprintf(d.arch, sizeof d.arch, "mixtral");
    if (mkc_gptoss(d.arch)) { /* its folder (gpt_oss, MXFP4 experts) is not written yet */
      fprintf(stderr,
              "mkc: error: preset %s: gpt-oss's layers go to a GGUF only (-o FILE.gguf); mkc does "
              "not write its Hugging Face folder yet\n",
              preset);
      goto done;
    }
    if (describe_extras(&g, preset, &d) || fits_folder(&d, preset) ||
        experts_fit(&g, preset, &d, 0) || mkc_hf_write(path, &d, &w, MKC_ST_BF16) != 0)
      goto done;
    fprintf(stderr,
            "mkc: wrote %s/ (%s, seed %llu: config.json, model.safetensors with %d BF16 tensors)\n",
            path, d.arch, seed, hf_tensors(&g, &d, f.phi3));
    rc = 0;
    goto done;
  }
  mkc_model_desc d;
  describe(&g, &d);
  if (!(out = mkc_gguf_writer_new())) goto done;
  if (f.phi3 && phi3_fits(&g, &d, preset) != 0) goto done;
  if (f.exaone && exaone_fits(&g, &d, preset) != 0) goto done;
  if (describe_extras(&g, preset, &d) || fits_gguf(&d, preset) || experts_fit(&g, preset, &d, 1) ||
      set_metadata(out, &g, d.arch, name) || (f.vocab && mkc_init_vocab_copy(&vocab, out)) ||
      set_gemma(out, &d) || set_granite(out, &d) ||
      set_rope_scaling(out, d.arch, &d.rope_scaling) ||
      (f.pooling && set_u32(out, d.arch, "pooling_type", f.pooling - 1)) ||
      add_weights(out, &g, &w, &f, encoded, count) || add_rope_freqs(out, &d) ||
      mkc_gguf_write(out, path))
    goto done;
  struct stat st;
  char types[256];
  int n_tensors = 0;
  for (int t = 0; t < MKC_GGML_TYPE_COUNT; t++) n_tensors += count[t];
  describe_types(count, n_tensors, types, sizeof types);
  char with[4300] = "";
  if (f.vocab) snprintf(with, sizeof with, "; %s's tokenizer, %d tokens", f.vocab, g.vocab);
  fprintf(stderr, "mkc: wrote %s (%s, seed %llu: %s%s%s, %lld bytes)\n", path, name, seed, types,
          d.rope_scaling.type == MKC_ROPE_SCALING_LLAMA3 ? " and rope_freqs.weight (F32)"
          : d.rope_scaling.type == MKC_ROPE_SCALING_LONGROPE
              ? " and rope_factors_{short,long}.weight (F32)"
              : "",
          with, stat(path, &st) == 0 ? (long long)st.st_size : -1LL);
  rc = 0;
done:
  for (int i = 0; encoded && i < g.n_weights; i++) free(encoded[i]);
  free(encoded);
  free(f.tensor_types);
  mkc_gguf_writer_free(out);
  mkc_weights_free(&w);
  mkc_graph_free(&g);
  mkc_init_vocab_close(&vocab);
  return rc;
}
