/* Hugging Face model folders beyond the safetensors files: config.json as an
 * mkc_model_desc (hf_config.c), HF tensor names as GGUF names and the Q/K row
 * order between them (hf_names.c), and a folder writer for tests (hf_write.c). */
#ifndef MKC_HF_H
#define MKC_HF_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/model_desc.h"
#include "weights.h"

/* DIR/config.json as a model description: model_type llama, mistral, qwen2,
 * qwen3, gemma3_text, or gemma3 (its text_config); the sizes, rope_theta,
 * rms_norm_eps, tie_word_embeddings, Gemma 3's windows, local RoPE base and
 * score scale; the name from the folder's name. Returns 0, or -1 after "mkc: error:
 * DIR/config.json: ..." (missing or mistyped field, an unsupported
 * model_type, rope_scaling, activation or bias). */
int mkc_hf_config_read(const char *dir, mkc_model_desc *d);
/* The same on len bytes of JSON text; where names it in messages and
 * dir_name (a folder path, may be NULL) gives d->name. */
int mkc_hf_config_parse(const char *text, size_t len, const char *where, const char *dir_name,
                        mkc_model_desc *d);

/* Names (hf_names.c). The HF name of a GGUF weight name in a model of mkc's
 * architecture arch (blk.3.attn_q.weight -> model.layers.3.self_attn.q_proj.weight;
 * gemma3 names its norms otherwise) and back. Return 0, or -1 for a name
 * with no counterpart or one that does not fit. */
int mkc_hf_name(const char *arch, const char *gguf_name, char *hf, size_t cap);
int mkc_gguf_name_from_hf(const char *arch, const char *hf_name, char *gguf, size_t cap);
/* An experts' matrix (blk.N.ffn_{gate,up,down}_exps.weight, [experts * rows][cols]): expert
 * e's own HF tensor's name, [rows][cols] (model.layers.N.mlp.experts.E.gate_proj.weight;
 * Mixtral's block_sparse_moe.experts.E.w1.weight). 0; 1 for a name that is not an experts'
 * matrix; -1 for one that does not fit. */
int mkc_hf_expert_name(const char *arch, const char *gguf_name, int expert, char *hf, size_t cap);
/* The same where the checkpoint holds every expert in one 3-d tensor [experts][parts * rows][cols]
 * (Granite MoE: block_sparse_moe.input_linear, gate's rows then up's an expert; output_linear,
 * down's): its name, and which part of each expert's rows the matrix is. 0; 1 where the
 * architecture keeps experts otherwise or the name is not an experts' matrix; -1: no fit. */
int mkc_hf_experts_fused(const char *arch, const char *gguf_name, char *hf, size_t cap, int *part,
                         int *parts);
/* The i-th spelling of an HF name mkc_hf_name gave (0: as is; then where
 * multimodal checkpoints keep the text model: language_model.model.* and
 * language_model.lm_head.*, as transformers 4 saved them, and
 * model.language_model.*, as 5 does). 0, or -1 past the last. */
int mkc_hf_name_spelling(const char *hf, int i, char *out, size_t cap);
/* 1 where HF stores the weight gguf_name as its scale less 1 (Gemma's
 * norms: x * (1 + w)), which GGUF files and mkc hold as the scale; else 0. */
int mkc_hf_norm_offset(const char *gguf_name, const mkc_model_desc *d);

/* The heads whose rows the weight gguf_name holds, if loading it from HF
 * must permute them into the interleaved RoPE layout (attn_q: n_heads,
 * attn_k: n_kv_heads, the q/k norms: 1 head); 0 when it is loaded as is. */
int mkc_hf_rope_heads(const char *gguf_name, const mkc_model_desc *d);
/* convert_hf_to_gguf.py's LlamaModel.permute on n_rows rows of row_len
 * elements, n_rows = heads * head_dim: within each head, GGUF row 2i + j is
 * HF row j * head_dim/2 + i, which turns HF's rotate-half (NEOX) pairs (i,
 * i + head_dim/2) into interleaved pairs (2i, 2i + 1). inverse = 1 undoes it.
 * dst and src must not overlap. Returns 0, or -1 if n_rows is not a multiple
 * of 2 * heads. */
int mkc_hf_permute_rows(uint16_t *dst, const uint16_t *src, int n_rows, int row_len, int heads,
                        int inverse);

/* DIR/config.json and DIR/model.safetensors (tensors in dtype: F32, F16 or
 * BF16) for d and w: an HF folder mkc_hf_config_read and
 * mkc_st_load_weights read back as they were (hf_write.c). Refuses a layout
 * transformers cannot express for d->arch. 0, or -1 after a message. */
int mkc_hf_write(const char *dir, const mkc_model_desc *d, const mkc_weights *w, int dtype);

#endif
