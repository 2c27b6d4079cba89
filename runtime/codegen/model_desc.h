/* What a model file says about its model: the architecture and sizes the
 * graph preset is derived from, whichever format it came in (GGUF metadata,
 * or a Hugging Face config.json). */
#ifndef MKC_MODEL_DESC_H
#define MKC_MODEL_DESC_H

#include <limits.h>
#include <string.h>

/* RoPE scaling: enum mkc_rope_scaling_type (graph.h; NONE: plain RoPE) and
 * its parameters, as a rope node's rope_* fields carry them. */
enum { MKC_ROPE_MAX_PAIRS = 256 }; /* longrope's factors: heads up to 512 dims */
typedef struct mkc_rope_scaling {
  int type;
  double factor;                            /* the context's extension factor */
  double low_freq_factor, high_freq_factor; /* llama3 */
  int orig_ctx;                   /* llama3, yarn, longrope: the context before the extension */
  double beta_fast, beta_slow;    /* yarn: the ramp's ends, in rotations */
  double ext_factor, attn_factor; /* yarn; longrope: attn_factor */
  /* longrope (Phi-3's 128k models): each pair's frequency divisor, for a context of at most
   * orig_ctx (short) and past it (long); n_factors = rope_dim / 2 of each */
  int n_factors;
  double short_factor[MKC_ROPE_MAX_PAIRS], long_factor[MKC_ROPE_MAX_PAIRS];
} mkc_rope_scaling;

/* How an embedding pools the final norm's outputs over a text's tokens: llama.cpp's
 * ARCH.pooling_type numbers plus one (UNSET: the file says nothing; UNKNOWN: a
 * sentence-transformers mode mkc does not give, such as max; exec/embed.h). */
enum mkc_pooling {
  MKC_POOL_UNSET,
  MKC_POOL_NONE,
  MKC_POOL_MEAN,
  MKC_POOL_CLS,
  MKC_POOL_LAST,
  MKC_POOL_RANK,
  MKC_POOL_UNKNOWN
};

/* enum mkc_pooling's names: "none", "mean", "cls", "last", "rank" as llama.cpp spells them. */
static inline const char *mkc_pooling_name(int pooling) {
  static const char *const NAMES[] = {"unset", "none", "mean", "cls", "last", "rank", "unknown"};
  return pooling >= MKC_POOL_UNSET && pooling <= MKC_POOL_UNKNOWN ? NAMES[pooling] : "?";
}

/* A name llama.cpp gives a pooling (none, mean, cls, last, rank) -> enum mkc_pooling, or -1. */
static inline int mkc_pooling_from_name(const char *name) {
  for (int p = MKC_POOL_NONE; p <= MKC_POOL_RANK; p++)
    if (strcmp(name, mkc_pooling_name(p)) == 0) return p;
  return -1;
}

typedef struct mkc_model_desc {
  char arch[32];  /* "llama", "mistral", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", ... */
  char name[128]; /* a preset name: general.name / the folder's name, sanitized */
  int vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn;
  int ctx_train; /* the context the model was trained for */
  double rope_theta, norm_eps;
  int rope_dim;      /* the dims RoPE rotates, each head's first (0: head_dim; Phi-4-mini: 3/4) */
  int nope_interval; /* every nope_interval-th layer has no RoPE (0: none; SmolLM3: 4) */
  int rope_layout;   /* enum mkc_rope_layout of the Q/K rows as mkc stores them */
  int tied;          /* the LM head is token_embd */
  int qkv_bias;      /* qwen2: attn_{q,k,v}.bias */
  int qk_norm;       /* qwen3: attn_{q,k}_norm.weight, RMSNorm per head before RoPE */
  mkc_rope_scaling rope_scaling;
  /* Attention over the last sliding_window positions (0: every position) in the first
   * swa_local layers of every swa_local + swa_global from layer 0, those layers with a RoPE base of
   * their own, unscaled (rope_theta_swa; 0: rope_theta, scaled as the others) */
  int sliding_window, swa_local, swa_global;
  double rope_theta_swa;
  /* Gemma 3: embeddings times embed_scale (0: 1); attention scores times attn_scale (0:
   * 1 / sqrt(head_dim)); a GELU-gated MLP; norms after attention and the MLP, before the
   * residual adds (blk.N.post_attention_norm, blk.N.post_ffw_norm) */
  double embed_scale, attn_scale;
  int ffn_gelu, post_norms;
  int no_pre_norms; /* EXAONE 4: no norm before attention and the MLP (post_norms only) */
  /* Gemma 2: the scaled attention scores and the logits x as c * tanh(x / c) (0: neither) */
  double attn_softcap, final_softcap;
  /* Granite: each residual branch times residual_scale before it is added, the logits divided
   * by logit_scale (0: neither); its embed_scale and attn_scale are the multipliers above */
  double residual_scale, logit_scale;
  int pooling; /* enum mkc_pooling: what the file says an embedding is */
  /* A sparse MLP in every layer (0 experts: a dense one of ffn): n_experts_used of n_experts
   * experts per input, each an MLP of expert_ffn, their weights renormalized with norm_topk */
  int n_experts, n_experts_used, expert_ffn, norm_topk;
} mkc_model_desc;

/* The rows of d's widest experts' matrix an expert: their ffn, or dim (down's). */
static inline int mkc_experts_rows(const mkc_model_desc *d) {
  return d->expert_ffn > d->dim ? d->expert_ffn : d->dim;
}

/* Whether d's experts are ones the graph and kernel take, as both readers check them: at most
 * 1024, at most min(64, all of them) an input, every expert's rows of a matrix an int. */
static inline int mkc_experts_fit(const mkc_model_desc *d) {
  return d->n_experts <= 1024 && d->n_experts_used <= d->n_experts && d->n_experts_used <= 64 &&
         (long long)d->n_experts * mkc_experts_rows(d) <= INT_MAX;
}

/* gpt-oss's layers (GGUF gpt-oss): each attention head's sink (blk.N.attn_sinks), a bias on the
 * attention's output projection and on the router and every expert matrix, its clamped glu; its
 * MLP's norm is blk.N.post_attention_norm. The architecture says all of them. */
static inline int mkc_gptoss(const char *arch) { return arch && strcmp(arch, "gpt-oss") == 0; }
/* Whether an architecture's experts have a width of their own, ARCH.expert_feed_forward_length
 * (qwen3moe, gpt-oss), rather than the dense feed_forward_length (Mixtral's llama, granitemoe):
 * what the GGUF reader reads and init writes. */
static inline int mkc_experts_own_width(const char *arch) {
  return arch && (strcmp(arch, "qwen3moe") == 0 || mkc_gptoss(arch));
}
/* Granite's layers (its multipliers): granite, and granitemoe, the same with experts. */
static inline int mkc_granite_family(const char *arch) {
  return arch && (strcmp(arch, "granite") == 0 || strcmp(arch, "granitemoe") == 0);
}

/* 1, 2 or 3 for the gemma, gemma2 and gemma3 architectures (mkc_model_desc.arch), else 0: the
 * family whose scaled embeddings, GeGLU and norms (stored with + 1) the model files spell alike;
 * 2 and 3 add norms after attention and the MLP, windows and caps. */
static inline int mkc_gemma_version(const char *arch) {
  return !arch                         ? 0
         : strcmp(arch, "gemma") == 0  ? 1
         : strcmp(arch, "gemma2") == 0 ? 2
         : strcmp(arch, "gemma3") == 0 ? 3
                                       : 0;
}

#endif
