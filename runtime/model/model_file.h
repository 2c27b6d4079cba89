/* A model file as the user names it with -m: a GGUF file, or a Hugging Face
 * folder (config.json + safetensors + tokenizer.json). Gives the model's
 * description (for the graph preset), its weights, its tokenizer and its
 * chat template. */
#ifndef MKC_MODEL_H
#define MKC_MODEL_H

#include "formats/gguf.h"
#include "codegen/graph.h"
#include "codegen/model_desc.h"
#include "formats/weights.h"

typedef struct mkc_safetensors mkc_safetensors;
typedef struct mkc_tokenizer mkc_tokenizer;

typedef struct mkc_model_file {
  const char *path;
  const char *format; /* "GGUF" or "safetensors" */
  mkc_model_desc desc;
  mkc_gguf *gguf;      /* GGUF: the mapped file */
  mkc_safetensors *st; /* safetensors: the mapped files */
  mkc_tokenizer *tok;  /* NULL when the file has none (then text prompts are refused) */
  char *chat_template; /* the template text (chat_template.h), NULL when the model has none */
} mkc_model_file;

/* Opens path and reads its description, tokenizer and chat template (weights stay in the
 * mapped file until mkc_model_file_weights). 0, or -1 after a message. */
int mkc_model_file_open(const char *path, mkc_model_file *mf);
/* The same with llama.cpp's --override-kv values (formats/gguf_override.h) applied to a GGUF's
 * metadata before anything is read from it; a folder's refused. */
int mkc_model_file_open_with(const char *path, const char *const *kv_overrides, int n_overrides,
                             mkc_model_file *mf);

/* Every weight of g, converted to bf16 (Q/K rows in mkc's layout). 0 or -1. */
int mkc_model_file_weights(const mkc_model_file *mf, const mkc_graph *g, mkc_weights *w);

/* mkc_gen_opts.weight_type for a model file (ctx: the mkc_model_file): how
 * its GGUF stores the tensor called name, or -1 (absent; safetensors). */
int mkc_model_file_weight_type(void *ctx, const char *name);

void mkc_model_file_close(mkc_model_file *mf);

/* GGUF metadata -> description (desc_gguf.c). 0, or -1 after a message. */
int mkc_gguf_model_desc(const mkc_gguf *f, mkc_model_desc *d);

/* Llama 3's divisor of pair j's frequency, from d's rope_theta, head_dim and
 * its llama3 rope_scaling, as llama.cpp's converter writes rope_freqs.weight
 * (desc_gguf.c checks a file's tensor against it; `mkc init` writes it). */
double mkc_llama3_rope_divisor(const mkc_model_desc *d, int j);

/* The description as one line: "llama: 30 layers, dim 576, ...". */
void mkc_model_desc_format(const mkc_model_desc *d, char *buf, size_t cap);

#endif
