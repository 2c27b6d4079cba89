/* llama.cpp's RoPE flags (--rope-freq-base, --rope-scale, --rope-freq-scale, --rope-scaling,
 * --yarn-orig-ctx, --yarn-ext-factor, --yarn-beta-fast, --yarn-beta-slow) over a model file's
 * description, as llama.cpp's context takes them over the file's values: the base and scaling
 * of the layers that attend to every position (a sliding-window layer keeps the base it was
 * trained with, unscaled, as llama.cpp keeps it). */
#ifndef MKC_ROPE_FLAGS_H
#define MKC_ROPE_FLAGS_H

#include "codegen/model_desc.h"

/* All zero: every flag unset (the model's). */
typedef struct mkc_rope_flags {
  double freq_base;  /* > 0: the base */
  double freq_scale; /* > 0: positions times it (--rope-scale N: 1 / N) */
  int scaling;       /* 1 + enum mkc_rope_scaling_type NONE, LINEAR or YARN */
  int yarn_orig_ctx; /* > 0: YaRN's original context */
  double yarn_ext_factor, yarn_beta_fast, yarn_beta_slow;
  unsigned yarn_given; /* of those three: 1, 2, 4 */
} mkc_rope_flags;
/* Whether s holds values mkc runs: a finite factor > 0; for yarn a factor >= 1, betas > 0, an
 * ext factor >= 0 and an attn factor > 0, all finite. The file readers (desc_gguf.c) and the
 * flags check the same. */
int mkc_rope_scaling_ok(const mkc_rope_scaling *s);
/* Whether one is set. */
int mkc_rope_flags_any(const mkc_rope_flags *f);
/* The flags over d (path names the model in messages): 0, or -1 after a message for a
 * combination mkc does not run (a model with its own per-frequency factors rescaled; YaRN's
 * flags without YaRN; values out of range). */
int mkc_rope_flags_apply(const mkc_rope_flags *f, mkc_model_desc *d, const char *path);

#endif
