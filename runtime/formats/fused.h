/* phi3's fused matrices as llama.cpp's files and transformers' folders store them: each layer's
 * Q, K and V rows in one matrix, its MLP's gate rows then up rows in another. One table for the
 * readers that split them (gguf_split.c, safetensors.c) and the writers that join them
 * (cli/cmd_init.c, safetensors_write.c). */
#ifndef MKC_FUSED_H
#define MKC_FUSED_H

#include <stdint.h>

struct mkc_model_desc;

enum { MKC_FUSED_GROUPS = 2, MKC_FUSED_MAX_PARTS = 3 };

typedef struct mkc_fused_group {
  const char *gguf, *hf; /* the fused matrix's name after "blk.N." / "model.layers.N." */
  int n_parts;
  const char *gguf_parts[MKC_FUSED_MAX_PARTS], *hf_parts[MKC_FUSED_MAX_PARTS];
} mkc_fused_group;

extern const mkc_fused_group MKC_PHI3_FUSED[MKC_FUSED_GROUPS];

/* Splits a fused matrix (name) into n parts (names[k] of rows[k] rows): 0, 1 where there is
 * nothing to split, -1 after a message. */
typedef int (*mkc_split_fn)(void *ctx, const char *name, int n, const char *const *names,
                            const int64_t *rows);

/* Every layer's fused matrices of d's architecture (phi3; others: none), named as GGUF files
 * (hf = 0) or transformers (hf = 1) name them, through split. 0, or -1 after a message. */
int mkc_unfuse(const struct mkc_model_desc *d, int hf, mkc_split_fn split, void *ctx);

#endif
