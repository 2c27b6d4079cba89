/* See rope_flags.h. */
#include "rope_flags.h"

#include <math.h>
#include <stdio.h>

#include "codegen/graph.h"

int mkc_rope_scaling_ok(const mkc_rope_scaling *s) {
  if (!(s->factor > 0 && isfinite(s->factor))) return 0;
  return s->type != MKC_ROPE_SCALING_YARN ||
         (s->factor >= 1 && s->beta_fast > 0 && s->beta_slow > 0 && s->ext_factor >= 0 &&
          s->attn_factor > 0 &&
          isfinite(s->beta_fast + s->beta_slow + s->ext_factor + s->attn_factor));
}

/* The flags that scale (all but the base). */
static int scales(const mkc_rope_flags *f) {
  return f->freq_scale > 0 || f->scaling || f->yarn_orig_ctx > 0 || f->yarn_given;
}

int mkc_rope_flags_any(const mkc_rope_flags *f) { return f->freq_base > 0 || scales(f); }

int mkc_rope_flags_apply(const mkc_rope_flags *f, mkc_model_desc *d, const char *path) {
  if (!mkc_rope_flags_any(f)) return 0;
  mkc_rope_scaling *s = &d->rope_scaling;
  if (scales(f) && (s->type == MKC_ROPE_SCALING_LLAMA3 || s->type == MKC_ROPE_SCALING_LONGROPE)) {
    fprintf(stderr,
            "mkc: error: %s: its RoPE scaling is %s, with per-frequency factors of its own: "
            "--rope-scale, --rope-freq-scale, --rope-scaling and --yarn-* do not apply to it\n",
            path, mkc_rope_scaling_name(s->type));
    return -1;
  }
  /* A sliding-window layer keeps its trained base, unscaled, where it shared the others' (its
   * trained scale must then be 1, as a scaled model's would not be kept so) */
  if (d->sliding_window > 0 && d->rope_theta_swa == 0) {
    if (s->type != MKC_ROPE_SCALING_NONE) {
      fprintf(stderr,
              "mkc: error: %s: its sliding-window layers share the others' scaled RoPE: mkc does "
              "not run llama.cpp's RoPE flags on it\n",
              path);
      return -1;
    }
    d->rope_theta_swa = d->rope_theta;
  }
  if (f->freq_base > 0) d->rope_theta = f->freq_base;
  if (f->scaling)
    s->type = f->scaling - 1;
  else if (f->freq_scale > 0 && s->type == MKC_ROPE_SCALING_NONE)
    s->type = MKC_ROPE_SCALING_LINEAR; /* llama.cpp reads a file without a type as linear */
  if (f->freq_scale > 0) s->factor = 1 / f->freq_scale;
  if (s->type == MKC_ROPE_SCALING_NONE) s->factor = 1; /* llama.cpp: none never scales */
  if (s->type == MKC_ROPE_SCALING_LINEAR && s->factor == 1) s->type = MKC_ROPE_SCALING_NONE;
  if ((f->yarn_orig_ctx > 0 || f->yarn_given) && s->type != MKC_ROPE_SCALING_YARN) {
    fprintf(stderr,
            "mkc: error: %s: --yarn-orig-ctx, --yarn-ext-factor and --yarn-beta-*: with YaRN "
            "scaling (--rope-scaling yarn, or a model trained so), not %s\n",
            path, mkc_rope_scaling_name(s->type));
    return -1;
  }
  if (f->yarn_orig_ctx > 0) s->orig_ctx = f->yarn_orig_ctx;
  if (f->yarn_given & 1) s->ext_factor = f->yarn_ext_factor;
  if (f->yarn_given & 2) s->beta_fast = f->yarn_beta_fast;
  if (f->yarn_given & 4) s->beta_slow = f->yarn_beta_slow;
  if (!mkc_rope_scaling_ok(s)) {
    int yarn = s->type == MKC_ROPE_SCALING_YARN;
    fprintf(stderr,
            "mkc: error: %s: %s RoPE scaling: factor %g (--rope-scale), beta fast/slow %g/%g "
            "(Expected: %s)\n",
            path, mkc_rope_scaling_name(s->type), s->factor, s->beta_fast, s->beta_slow,
            yarn ? "factor >= 1, the betas > 0" : "a finite factor > 0");
    return -1;
  }
  return 0;
}
