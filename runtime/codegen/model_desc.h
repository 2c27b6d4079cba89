/* What a model file says about its model: the architecture and sizes the
 * graph preset is derived from, whichever format it came in (GGUF metadata,
 * or a Hugging Face config.json). */
#ifndef MKC_MODEL_DESC_H
#define MKC_MODEL_DESC_H

typedef struct mkc_model_desc {
  char arch[32];  /* "llama", "mistral", "qwen2", "qwen3" */
  char name[128]; /* a preset name: general.name / the folder's name, sanitized */
  int vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn;
  int ctx_train; /* the context the model was trained for */
  double rope_theta, norm_eps;
  int rope_layout; /* enum mkc_rope_layout of the Q/K rows as mkc stores them */
  int tied;        /* the LM head is token_embd */
  int qkv_bias;    /* qwen2: attn_{q,k,v}.bias */
  int qk_norm;     /* qwen3: attn_{q,k}_norm.weight, RMSNorm per head before RoPE */
} mkc_model_desc;

#endif
