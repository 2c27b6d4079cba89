/* Hugging Face tensor names as GGUF names (llama, mistral, qwen2, qwen3,
 * gemma, gemma2 and gemma3 checkpoints: model.layers.N.* and three globals), Gemma's norms
 * stored as their scale less 1, and the Q/K row order GGUF uses for
 * interleaved RoPE. */
#include "hf.h"
#include "safetensors.h"
#include "util/text.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct name_pair {
  const char *gguf, *hf;
} name_pair;

static const name_pair GLOBAL_NAMES[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

/* After "blk.N." and "model.layers.N.". */
static const name_pair LAYER_NAMES[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate_inp.weight", "mlp.gate.weight"}, /* qwen3_moe's router */
};

/* Mixtral's sparse MLP is block_sparse_moe, and Granite MoE's, with its own router. Looked up
 * before LAYER_NAMES. */
static const name_pair MIXTRAL_LAYER_NAMES[] = {
    {"ffn_gate_inp.weight", "block_sparse_moe.gate.weight"},
};
static const name_pair GRANITEMOE_LAYER_NAMES[] = {
    {"ffn_gate_inp.weight", "block_sparse_moe.router.layer.weight"},
};

/* The experts' matrices: GGUF's one 3-d tensor a kind, HF's one a kind and
 * expert (qwen3_moe's mlp.experts.E.gate_proj, Mixtral's
 * block_sparse_moe.experts.E.w1; w3 is up, w2 down). */
static const struct {
  const char *gguf, *hf, *mixtral;
} EXPERT_NAMES[] = {
    {"ffn_gate_exps.weight", "gate_proj", "w1"},
    {"ffn_up_exps.weight", "up_proj", "w3"},
    {"ffn_down_exps.weight", "down_proj", "w2"},
};

/* Gemma 2's and 3's four norms a layer (EXAONE 4's two after): their post_attention_layernorm
 * follows attention, where the others' is the norm before the MLP. Looked up
 * before LAYER_NAMES. */
static const name_pair GEMMA_LAYER_NAMES[] = {
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
};

#define COUNT(a) (int)(sizeof a / sizeof *a)

/* "PREFIX" N "." rest: the layer number (decimal, no leading zeros) and the
 * rest, or -1. */
static int layer_of(const char *name, const char *prefix, const char **rest) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n) != 0) return -1;
  const char *p = name + n;
  long layer = 0;
  if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != '.')) return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    layer = layer * 10 + (*p - '0');
    if (layer > INT_MAX) return -1;
  }
  if (*p != '.') return -1;
  *rest = p + 1;
  return (int)layer;
}

/* rest's counterpart in table, or NULL. */
static const name_pair *pair_of(const name_pair *table, int n, const char *rest, int from_hf) {
  for (int i = 0; i < n; i++)
    if (strcmp(rest, from_hf ? table[i].hf : table[i].gguf) == 0) return &table[i];
  return NULL;
}

/* from_hf = 0: GGUF -> HF; 1: HF -> GGUF. */
static int translate(const char *arch, const char *name, char *out, size_t cap, int from_hf) {
  for (int i = 0; i < COUNT(GLOBAL_NAMES); i++) {
    const name_pair *p = &GLOBAL_NAMES[i];
    if (strcmp(name, from_hf ? p->hf : p->gguf) == 0) {
      int n = snprintf(out, cap, "%s", from_hf ? p->gguf : p->hf);
      return n >= 0 && (size_t)n < cap ? 0 : -1;
    }
  }
  const char *rest;
  int layer = layer_of(name, from_hf ? "model.layers." : "blk.", &rest);
  if (layer < 0) return -1;
  const name_pair *p = NULL;
  if (mkc_gemma_version(arch) > 1 || strcmp(arch, "exaone4") == 0) /* Gemma 1's are llama's */
    p = pair_of(GEMMA_LAYER_NAMES, COUNT(GEMMA_LAYER_NAMES), rest, from_hf);
  if (strcmp(arch, "mixtral") == 0)
    p = pair_of(MIXTRAL_LAYER_NAMES, COUNT(MIXTRAL_LAYER_NAMES), rest, from_hf);
  if (strcmp(arch, "granitemoe") == 0)
    p = pair_of(GRANITEMOE_LAYER_NAMES, COUNT(GRANITEMOE_LAYER_NAMES), rest, from_hf);
  if (!p) p = pair_of(LAYER_NAMES, COUNT(LAYER_NAMES), rest, from_hf);
  if (!p) return -1;
  int n = from_hf ? snprintf(out, cap, "blk.%d.%s", layer, p->gguf)
                  : snprintf(out, cap, "model.layers.%d.%s", layer, p->hf);
  return n >= 0 && (size_t)n < cap ? 0 : -1;
}

int mkc_hf_name(const char *arch, const char *gguf_name, char *hf, size_t cap) {
  return translate(arch, gguf_name, hf, cap, 0);
}

int mkc_gguf_name_from_hf(const char *arch, const char *hf_name, char *gguf, size_t cap) {
  return translate(arch, hf_name, gguf, cap, 1);
}

int mkc_hf_experts_fused(const char *arch, const char *gguf_name, char *hf, size_t cap, int *part,
                         int *parts) {
  const char *rest;
  int layer = layer_of(gguf_name, "blk.", &rest);
  if (layer < 0 || strcmp(arch, "granitemoe") != 0) return 1;
  for (int i = 0; i < COUNT(EXPERT_NAMES); i++) {
    if (strcmp(rest, EXPERT_NAMES[i].gguf) != 0) continue;
    int down = i == 2; /* gate and up: input_linear's halves, gate's first; down: output_linear */
    *part = i == 1, *parts = down ? 1 : 2;
    int n = snprintf(hf, cap, "model.layers.%d.block_sparse_moe.%s.weight", layer,
                     down ? "output_linear" : "input_linear");
    return n >= 0 && (size_t)n < cap ? 0 : -1;
  }
  return 1;
}

int mkc_hf_expert_name(const char *arch, const char *gguf_name, int expert, char *hf, size_t cap) {
  const char *rest;
  int layer = layer_of(gguf_name, "blk.", &rest);
  if (strcmp(arch, "granitemoe") == 0) return 1; /* its experts are one tensor: fused */
  for (int i = 0; layer >= 0 && i < COUNT(EXPERT_NAMES); i++) {
    if (strcmp(rest, EXPERT_NAMES[i].gguf) != 0) continue;
    int mixtral = strcmp(arch, "mixtral") == 0;
    int n = snprintf(hf, cap, "model.layers.%d.%s.experts.%d.%s.weight", layer,
                     mixtral ? "block_sparse_moe" : "mlp", expert,
                     mixtral ? EXPERT_NAMES[i].mixtral : EXPERT_NAMES[i].hf);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
  }
  return 1;
}

int mkc_hf_norm_offset(const char *gguf_name, const mkc_model_desc *d) {
  return mkc_gemma_version(d->arch) && mkc_ends_with(gguf_name, "norm.weight");
}

int mkc_hf_rope_heads(const char *gguf_name, const mkc_model_desc *d) {
  const char *rest;
  if (d->rope_layout != MKC_ROPE_INTERLEAVED || layer_of(gguf_name, "blk.", &rest) < 0) return 0;
  if (strcmp(rest, "attn_q.weight") == 0 || strcmp(rest, "attn_q.bias") == 0) return d->n_heads;
  if (strcmp(rest, "attn_k.weight") == 0 || strcmp(rest, "attn_k.bias") == 0) return d->n_kv_heads;
  /* A per-head RMSNorm weight is one head's worth of rows. */
  if (strcmp(rest, "attn_q_norm.weight") == 0 || strcmp(rest, "attn_k_norm.weight") == 0) return 1;
  return 0;
}

int mkc_hf_permute_rows(uint16_t *dst, const uint16_t *src, int n_rows, int row_len, int heads,
                        int inverse) {
  if (heads <= 0 || n_rows <= 0 || row_len < 0 || n_rows % (2 * heads)) return -1;
  int head_dim = n_rows / heads, half = head_dim / 2;
  size_t bytes = (size_t)row_len * sizeof *src;
  for (int h = 0; h < heads; h++) {
    for (int i = 0; i < half; i++) {
      for (int j = 0; j < 2; j++) {
        size_t gguf_row = (size_t)h * head_dim + 2 * i + j;
        size_t hf_row = (size_t)h * head_dim + (size_t)j * half + i;
        size_t to = inverse ? hf_row : gguf_row, from = inverse ? gguf_row : hf_row;
        memcpy(dst + to * row_len, src + from * row_len, bytes);
      }
    }
  }
  return 0;
}

int mkc_hf_name_spelling(const char *hf, int i, char *out, size_t cap) {
  static const char *const text_model[] = {"model.", "language_model.model.",
                                           "model.language_model."};
  static const char *const head[] = {"lm_head.", "language_model.lm_head.", "lm_head."};
  if (i < 0 || i >= COUNT(text_model)) return -1;
  const char *const *prefix = strncmp(hf, "lm_head.", 8) == 0 ? head : text_model;
  size_t n = strlen(prefix[0]);
  int len = strncmp(hf, prefix[0], n) == 0 ? snprintf(out, cap, "%s%s", prefix[i], hf + n)
            : i == 0                       ? snprintf(out, cap, "%s", hf)
                                           : -1;
  return len >= 0 && (size_t)len < cap ? 0 : -1;
}
