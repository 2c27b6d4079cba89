/* llama.cpp's LoRA adapters (--lora FILE, --lora-scaled FILE:SCALE): a GGUF of
 * general.type "adapter", adapter.type "lora", the base model's
 * general.architecture and adapter.lora.alpha, holding for base matrices
 * NAME [rows][cols] the pairs NAME.lora_a [r][cols] and NAME.lora_b [rows][r]
 * (llama.cpp's convert_lora_to_gguf.py writes them so). llama.cpp adds
 * scale * B (A x) to each product at run time, scale = the user's scale *
 * alpha / r (alpha 0: the user's scale); mkc's kernel reads its weights as
 * they are, so the delta is merged into the base's rows once, at load:
 * W += scale * B A, worked out in f32 from W's bf16 and rounded to bf16 (an
 * adapted matrix a model file stores in blocks is planned in bf16). */
#ifndef MKC_LORA_H
#define MKC_LORA_H

#include "codegen/model_desc.h"
#include "gguf.h"
#include "weights.h"

#define MKC_LORA_MAX 8 /* adapters at once */

/* One adapted matrix of a PEFT folder, read at open: A [rank][cols], B [rows][rank] (its rows in
 * the GGUF layout), the delta's scale. */
typedef struct mkc_lora_pair {
  char *name; /* the base weight's GGUF name */
  int rank, rows, cols;
  float *a, *b;
  float s;
} mkc_lora_pair;

typedef struct mkc_lora {
  mkc_gguf *f;  /* a GGUF adapter; NULL for a PEFT folder (pairs) */
  float scale;  /* the user's (--lora: 1) */
  double alpha; /* adapter.lora.alpha, lora_alpha (0: none) */
  const char *path;
  mkc_lora_pair *pairs; /* a PEFT folder's */
  int n_pairs;
  int rslora; /* PEFT's use_rslora: alpha / sqrt(r) */
} mkc_lora;

/* Opens path as an adapter for the model d describes: a GGUF file (mkc_lora_check), or a folder
 * as Hugging Face's PEFT saves a LoRA (adapter_config.json: r, lora_alpha, use_rslora;
 * adapter_model.safetensors: base_model.model.MODULE.lora_A.weight [r][in] and .lora_B.weight
 * [out][r], read under their GGUF names with B's Q/K rows permuted as the model's are;
 * scale * lora_alpha / r, or / sqrt(r) with use_rslora, as PEFT scales them; DoRA, rank and
 * alpha patterns and modules saved whole refused). 0, or -1 after a message. */
int mkc_lora_open(const char *path, float scale, const struct mkc_model_desc *d, mkc_lora *l);
/* The PEFT folder's part of mkc_lora_open (lora_peft.c), and its two halves: the config's text
 * (path names it in messages) into r, lora_alpha and use_rslora; and an open safetensors'
 * pairs into l (its alpha and rslora set; r 0: each pair's own rank), l's pairs the close's to
 * free. 0, or -1 after a message. */
int mkc_lora_open_peft(const char *dir, float scale, const struct mkc_model_desc *d, mkc_lora *l);
struct mkc_safetensors;
int mkc_lora_peft_config(const char *text, size_t n, const char *path, int *r, double *alpha,
                         int *rslora);
int mkc_lora_peft_pairs(const struct mkc_safetensors *st, const char *path, int r, float scale,
                        const struct mkc_model_desc *d, mkc_lora *l);
/* An opened GGUF as an adapter for arch: its type and architecture, every tensor a .lora_a or
 * .lora_b of a pair (a norm vector, which llama.cpp passes over too, is left out with a
 * warning), each pair's ranks agreeing; adapter.lora.alpha (0 when absent) in *alpha. 0, or -1
 * after a message. */
int mkc_lora_check(const mkc_gguf *f, const char *arch, double *alpha);

/* Whether the adapter changes the weight called name. */
int mkc_lora_adapts(const mkc_lora *l, const char *name);

/* Merges the adapter into w (every weight it adapts there, in bf16, of its shape): 0 after a
 * note of what it changed, or -1 after a message (a tensor the model lacks, "maybe the wrong
 * base model", as llama.cpp says; a shape that does not fit). */
int mkc_lora_apply(const mkc_lora *l, mkc_weights *w);

void mkc_lora_close(mkc_lora *l);

#endif
