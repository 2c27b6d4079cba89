/* llama-quantize's file types (Q4_K_M, Q8_0, ...) and the tensor type each
 * tensor of a GGUF file gets under one: llama.cpp's mix rules (its
 * llama_tensor_get_type), restated. Which tensors are quantized at all, the
 * type a mix gives each kind of matrix by its layer, the fallback when a row
 * is not whole blocks of that type, and the tensors only an importance
 * matrix may take. */
#ifndef MKC_QUANT_MIX_H
#define MKC_QUANT_MIX_H

#include <stddef.h>
#include <stdint.h>

#define MKC_QUANT_NO_TYPE UINT32_MAX

/* A file type: its name as llama-quantize takes it ("Q4_K_M"), its number
 * (general.file_type, llama.cpp's llama_ftype) and the tensor type most
 * matrices get. */
typedef struct mkc_quant_ftype {
  const char *name;
  int ftype;
  uint32_t base;
  int imatrix; /* 1: llama-quantize needs an importance matrix for it */
} mkc_quant_ftype;

/* The file type called name (any case), or NULL. COPY (base MKC_QUANT_NO_TYPE): every tensor
 * kept as it is. */
const mkc_quant_ftype *mkc_quant_ftype_named(const char *name);
/* The same, or by llama.cpp's number of it (15: Q4_K_M), as llama-quantize reads its TYPE. */
const mkc_quant_ftype *mkc_quant_ftype_parse(const char *arg);
/* Every name, comma-separated, for messages and --help. */
const char *mkc_quant_ftype_names(void);

/* What the rules read of the model, and where they are: the counters run over the tensors in
 * llama.cpp's order (mkc_quant_order), as they do there. */
typedef struct mkc_quant_mix {
  const mkc_quant_ftype *ft;
  int n_layer, n_expert;
  int n_gqa;            /* heads per KV head */
  int is_70b;           /* llama with 80 layers and grouped KV heads: llama.cpp's LLM_TYPE_70B */
  int tied;             /* no output.weight: token_embd is also the output's, and typed as it */
  int pure;             /* llama-quantize --pure: every quantized matrix in the base type */
  int quantize_output;  /* 0: --leave-output-tensor */
  uint32_t output_type; /* --output-tensor-type, or MKC_QUANT_NO_TYPE */
  uint32_t embd_type;   /* --token-embedding-type, or MKC_QUANT_NO_TYPE */
  int has_imatrix;      /* an importance matrix was given (some rules read it) */
  int n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;
  int n_fallback;
} mkc_quant_mix;

/* Whether the tensor called name is V-like (attn_v, attn_qkv, attn_kv_b): the matrices whose
 * count (mkc_quant_mix.n_attn_v) the V rules spread their extra bits over. */
int mkc_quant_v_like(const char *name);

/* Whether a tensor is quantized at all: a matrix (n_dims counted without trailing ones) whose
 * name ends in "weight" and is none of the kinds llama.cpp keeps (norms, expert routers,
 * position embeddings, ...; output.weight with quantize_output 0). */
int mkc_quant_allowed(const char *name, int n_dims, int quantize_output);

/* The type the tensor called name, of cols columns, is written in (not allowed: keep, its own
 * type). override: a --tensor-type match's type, or MKC_QUANT_NO_TYPE. *fell_back is set to the
 * type the rules chose when the row is not whole blocks of it, else MKC_QUANT_NO_TYPE. */
uint32_t mkc_quant_type(mkc_quant_mix *m, const char *name, int n_dims, int64_t cols, uint32_t keep,
                        uint32_t override, uint32_t *fell_back);

/* Whether a tensor written in type needs an importance matrix under m's file type (the IQ1, IQ2
 * and IQ3_XXS types, and Q2_K in a Q2_K_S file; never token_embd or output.weight). */
int mkc_quant_needs_imatrix(const mkc_quant_mix *m, const char *name, uint32_t type);

/* The file type llama.cpp's loader guesses for a file without general.file_type, types[n] its
 * tensors' in llama.cpp's order: the most common type's (the first to reach that count), + 1024
 * (LLAMA_FTYPE_GUESSED). llama-quantize's COPY writes it. */
int mkc_quant_guess_ftype(const uint32_t *types, size_t n);

/* llama.cpp's order of a model's tensors: by layer (blk.N.; the rest first), then by name. For
 * qsort over an array of names. */
int mkc_quant_order(const char *a, const char *b);

#endif
