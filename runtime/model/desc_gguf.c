/* A GGUF file's metadata -> mkc_model_desc: the architecture's keys
 * ("ARCH.block_count", ...), with the defaults llama.cpp's loader uses where a
 * key may be absent, and refusals for what the graph cannot express. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/swa_pattern.h"
#include "model_file.h"
#include "rope_flags.h"
#include "util/files.h"
#include "util/text.h"

static const char *const ARCHS[] = {"llama",      "mistral", "qwen2",   "qwen3",  "qwen3moe",
                                    "gemma",      "gemma2",  "gemma3",  "phi3",   "granite",
                                    "granitemoe", "gpt-oss", "smollm3", "exaone", "exaone4"};

/* ARCH.suffix, an integer in [min, 2^30] (absent: *v unchanged); 1 if present, 0 if absent, -1
 * on error. */
static int get_int_from(const mkc_gguf *f, const char *arch, const char *suffix, int min, int *v) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  int64_t x;
  int rc = mkc_gguf_get_int(f, key, &x);
  if (rc <= 0) return rc;
  if (x < min || x > (1 << 30)) {
    fprintf(stderr, "mkc: error: %s: %s = %lld: expected %d..%d\n", f->path, key, (long long)x, min,
            1 << 30);
    return -1;
  }
  *v = (int)x;
  return 1;
}

/* A size (at least 1). */
static int get_size(const mkc_gguf *f, const char *arch, const char *suffix, int *v) {
  return get_int_from(f, arch, suffix, 1, v);
}

/* A count that may be 0. */
static int get_count(const mkc_gguf *f, const char *arch, const char *suffix, int *v) {
  return get_int_from(f, arch, suffix, 0, v);
}

static int need_size(const mkc_gguf *f, const char *arch, const char *suffix, int *v) {
  int rc = get_size(f, arch, suffix, v);
  if (rc == 0)
    fprintf(stderr, "mkc: error: %s: missing metadata %s.%s (needed for the graph)\n", f->path,
            arch, suffix);
  return rc == 1 ? 0 : -1;
}

/* The shortest decimal that rounds to the float v (1e-05, not
 * 9.99999975e-06): what a converter meant, and what config.json says for the
 * same model. */
static double shortest(float v) {
  char text[32];
  for (int digits = 1; digits <= 9; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, (double)v);
    if (strtof(text, NULL) == v) return strtod(text, NULL);
  }
  return v;
}

/* A float entry (key: "ARCH.suffix", or the whole key when arch is NULL); an
 * f32 is read back as shortest() says. */
static int get_real(const mkc_gguf *f, const char *arch, const char *suffix, double *v) {
  char key[128];
  snprintf(key, sizeof key, "%s%s%s", arch ? arch : "", arch ? "." : "", suffix);
  int rc = mkc_gguf_get_float(f, key, v);
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  if (rc == 1 && kv->type == MKC_GGUF_FLOAT32) *v = shortest((float)*v);
  return rc;
}

/* A preset name from general.name (else the file's name): lower case, and
 * nothing but [a-z0-9.-]. */
static void preset_name(const mkc_gguf *f, char *out, size_t cap) {
  const char *name = NULL;
  if (mkc_gguf_get_str(f, "general.name", &name) != 1 || !*name) {
    const char *slash = strrchr(f->path, '/');
    name = slash ? slash + 1 : f->path;
  }
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < cap; p++) {
    char c = (char)tolower((unsigned char)*p);
    if (!isalnum((unsigned char)c) && c != '.' && c != '-') c = '-';
    if (c == '-' && (n == 0 || out[n - 1] == '-')) continue;
    out[n++] = c;
  }
  if (n >= 5 && strcmp(out + n - 5, ".gguf") == 0) n -= 5;
  while (n > 0 && out[n - 1] == '-') n--;
  out[n] = 0;
  if (!n) snprintf(out, cap, "model");
}

static int rope_layout(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  /* llama.cpp runs llama and mistral with interleaved pairs (their GGUF Q/K
   * rows were permuted at conversion), qwen2/qwen3, Gemma, phi3 and EXAONE with NEOX halves. */
  d->rope_layout = strcmp(arch, "qwen2") == 0 || strncmp(arch, "qwen3", 5) == 0 ||
                           mkc_gemma_version(arch) || strcmp(arch, "phi3") == 0 ||
                           mkc_gptoss(arch) || strncmp(arch, "exaone", 6) == 0
                       ? MKC_ROPE_NEOX
                       : MKC_ROPE_INTERLEAVED;
  const char *layout;
  int rc = mkc_gguf_get_str(f, "mkc.rope.layout", &layout);
  if (rc < 0) return -1;
  if (rc == 1) {
    if (strcmp(layout, "neox") == 0)
      d->rope_layout = MKC_ROPE_NEOX;
    else if (strcmp(layout, "interleaved") == 0)
      d->rope_layout = MKC_ROPE_INTERLEAVED;
    else {
      fprintf(stderr, "mkc: error: %s: mkc.rope.layout = \"%s\": expected neox or interleaved\n",
              f->path, mkc_shown(layout));
      return -1;
    }
  }
  int rot = 0;
  rc = get_size(f, arch, "rope.dimension_count", &rot);
  if (rc < 0) return -1;
  if (rc == 1 && (rot > d->head_dim || rot % 2)) {
    fprintf(stderr,
            "mkc: error: %s: %s.rope.dimension_count = %d but heads have %d dims (Expected: an "
            "even count, at most the heads' dims)\n",
            f->path, arch, rot, d->head_dim);
    return -1;
  }
  /* partial RoPE (Phi-4-mini): the first rot dims of each head rotated */
  d->rope_dim = rc == 1 && rot < d->head_dim ? rot : 0;
  return 0;
}

/* Llama 3's factor for pair j, the divisor of its frequency, as llama.cpp's
 * converter writes it into rope_freqs.weight (convert_hf_to_gguf.py, after
 * transformers' _compute_llama3_parameters): 1 where the wavelength is below
 * orig_ctx / high_freq_factor, factor above orig_ctx / low_freq_factor, and
 * 1 / ((1 - smooth) / factor + smooth) between. */
double mkc_llama3_rope_divisor(const mkc_model_desc *d, int j) {
  const mkc_rope_scaling *s = &d->rope_scaling;
  double wavelen = 2 * M_PI / pow(d->rope_theta, -2.0 * j / d->head_dim);
  if (wavelen < s->orig_ctx / s->high_freq_factor) return 1;
  if (wavelen > s->orig_ctx / s->low_freq_factor) return s->factor;
  double smooth =
      (s->orig_ctx / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
  return 1 / ((1 - smooth) / s->factor + smooth);
}

/* rope_freqs.weight, Llama 3.1+'s per-frequency divisors: the scaling mkc
 * computes from its parameters. The converter writes no parameter but the
 * tensor: factor is its largest divisor, the wavelength band is the
 * converter's (low 1, high 4, 8192 positions; Meta's Llama 3.x) unless
 * ARCH.rope.scaling.original_context_length and mkc.rope.scaling.* (what
 * `mkc init` writes) say otherwise. Every divisor must be what they give. */
static int read_rope_freqs(const mkc_gguf *f, const char *arch, const mkc_gguf_tensor *t,
                           mkc_model_desc *d) {
  mkc_rope_scaling *s = &d->rope_scaling;
  int half = d->head_dim / 2;
  if (s->type != MKC_ROPE_SCALING_NONE) {
    fprintf(stderr,
            "mkc: error: %s: rope_freqs.weight together with %s RoPE scaling: not supported\n",
            f->path, mkc_rope_scaling_name(s->type));
    return -1;
  }
  if (t->type != MKC_GGML_F32 || t->n_dims != 1 || t->ne[0] != half) {
    fprintf(stderr,
            "mkc: error: %s: rope_freqs.weight: Expected F32 ne {%d} (head dim / 2); Actual %s ne "
            "{%lld%s}\n",
            f->path, half, mkc_ggml_type(t->type) ? mkc_ggml_type(t->type)->name : "?",
            (long long)t->ne[0], t->n_dims > 1 ? ", ..." : "");
    return -1;
  }
  float *divisor = malloc((size_t)half * sizeof *divisor);
  if (!divisor) return mkc_error_in(f->path, "out of memory for rope_freqs.weight");
  if (mkc_gguf_copy_tensor(f, t, divisor) != 0) { /* said: its file changed under it */
    free(divisor);
    return -1;
  }
  float largest = 0;
  for (int j = 0; j < half; j++) largest = divisor[j] > largest ? divisor[j] : largest;
  s->type = MKC_ROPE_SCALING_LLAMA3;
  s->factor = shortest(largest);
  s->low_freq_factor = 1;
  s->high_freq_factor = 4;
  s->orig_ctx = 8192;
  int rc = 0;
  if (get_size(f, arch, "rope.scaling.original_context_length", &s->orig_ctx) < 0 ||
      get_real(f, NULL, "mkc.rope.scaling.low_freq_factor", &s->low_freq_factor) < 0 ||
      get_real(f, NULL, "mkc.rope.scaling.high_freq_factor", &s->high_freq_factor) < 0)
    rc = -1;
  else if (!(s->factor >= 1 && s->low_freq_factor > 0 && s->high_freq_factor > s->low_freq_factor &&
             isfinite(s->factor + s->high_freq_factor))) {
    fprintf(stderr,
            "mkc: error: %s: Llama 3 RoPE scaling with factor %g (rope_freqs.weight's largest), "
            "low_freq_factor %g, high_freq_factor %g (Expected: factor >= 1, 0 < low < high)\n",
            f->path, s->factor, s->low_freq_factor, s->high_freq_factor);
    rc = -1;
  }
  for (int j = 0; rc == 0 && j < half; j++) {
    double want = mkc_llama3_rope_divisor(d, j);
    if (!(fabs(divisor[j] - want) <= 1e-6 * want)) {
      fprintf(stderr,
              "mkc: error: %s: rope_freqs.weight[%d] = %.9g, but Llama 3 scaling with factor %g, "
              "low_freq_factor %g, high_freq_factor %g, original context %d gives %.9g (Expected: "
              "within 1e-6 relative; %s.rope.scaling.original_context_length and "
              "mkc.rope.scaling.{low,high}_freq_factor name other parameters)\n",
              f->path, j, divisor[j], s->factor, s->low_freq_factor, s->high_freq_factor,
              s->orig_ctx, want, arch);
      rc = -1;
    }
  }
  free(divisor);
  return rc;
}

/* One of longrope's lists: F32 [head_dim / 2] of positive divisors, into v. */
static int read_factor_list(const mkc_gguf *f, const char *name, const mkc_gguf_tensor *t, int half,
                            double *v) {
  if (!t || t->type != MKC_GGML_F32 || t->n_dims != 1 || t->ne[0] != half) {
    fprintf(stderr,
            "mkc: error: %s: %s: Expected F32 ne {%d} (rotated dims / 2, beside the other list); "
            "Actual %s\n",
            f->path, name, half,
            !t                       ? "missing"
            : mkc_ggml_type(t->type) ? mkc_ggml_type(t->type)->name
                                     : "another type or shape");
    return -1;
  }
  float *list = malloc((size_t)half * sizeof *list);
  if (!list) return mkc_error_in(f->path, "out of memory for %s", name);
  if (mkc_gguf_copy_tensor(f, t, list) != 0) { /* said: its file changed */
    free(list);
    return -1;
  }
  for (int j = 0; j < half; j++) {
    float x = list[j];
    if (!(x > 0) || !isfinite(x)) {
      fprintf(stderr, "mkc: error: %s: %s[%d] = %g: Expected a positive divisor\n", f->path, name,
              j, x);
      free(list);
      return -1;
    }
    v[j] = x;
  }
  free(list);
  return 0;
}

/* LongRoPE (Phi-3's 128k files, as llama.cpp's converter writes them): the
 * divisors rope_factors_short.weight and rope_factors_long.weight, the context
 * before the extension in .rope.scaling.original_context_length, and
 * .rope.scaling.attn_factor on cos and sin. No other scaling beside them. */
static int read_longrope(const mkc_gguf *f, const char *arch, const mkc_gguf_tensor *freqs,
                         const mkc_gguf_tensor *lng, const mkc_gguf_tensor *shrt,
                         mkc_model_desc *d) {
  mkc_rope_scaling *s = &d->rope_scaling;
  if (freqs || s->type != MKC_ROPE_SCALING_NONE) {
    fprintf(stderr,
            "mkc: error: %s: rope_factors_long/short.weight (longrope) together with %s: not "
            "supported\n",
            f->path, freqs ? "rope_freqs.weight" : mkc_rope_scaling_name(s->type));
    return -1;
  }
  int half = (d->rope_dim ? d->rope_dim : d->head_dim) / 2;
  if (half > MKC_ROPE_MAX_PAIRS) {
    fprintf(stderr, "mkc: error: %s: longrope over %d dims of each head: at most %d supported\n",
            f->path, 2 * half, 2 * MKC_ROPE_MAX_PAIRS);
    return -1;
  }
  if (read_factor_list(f, "rope_factors_short.weight", shrt, half, s->short_factor) ||
      read_factor_list(f, "rope_factors_long.weight", lng, half, s->long_factor))
    return -1;
  if (!(s->attn_factor > 0 && isfinite(s->attn_factor)) || s->orig_ctx <= 0) {
    fprintf(stderr,
            "mkc: error: %s: longrope: %s.rope.scaling.attn_factor = %g, original context %d "
            "(Expected: both > 0)\n",
            f->path, arch, s->attn_factor, s->orig_ctx);
    return -1;
  }
  s->type = MKC_ROPE_SCALING_LONGROPE;
  s->n_factors = half;
  return 0;
}

/* Refuses a metadata key whose meaning mkc does not compute. */
static int refuse_key(const mkc_gguf *f, const char *arch, const char *suffix, const char *why) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  if (!mkc_gguf_find(f, key)) return 0;
  fprintf(stderr, "mkc: error: %s: %s: %s: not supported\n", f->path, key, why);
  return -1;
}

/* RoPE scaling as llama.cpp's loader reads it: ARCH.rope.scaling.type (absent:
 * linear, which a factor of 1 makes none), .factor (or the older
 * .rope.scale_linear), .original_context_length (default: the trained
 * context), .attn_factor and YaRN's .yarn_* (defaults 32, 1, ext 1); or Llama
 * 3's rope_freqs.weight. */
static int read_rope_scaling(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  mkc_rope_scaling *s = &d->rope_scaling;
  *s = (mkc_rope_scaling){.type = MKC_ROPE_SCALING_NONE,
                          .factor = 1,
                          .orig_ctx = d->ctx_train,
                          .beta_fast = 32,
                          .beta_slow = 1,
                          .ext_factor = 1,
                          .attn_factor = 1};
  char key[128];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  const char *type = NULL;
  double factor = 0;
  int rc = mkc_gguf_get_str(f, key, &type), has_factor;
  if (rc < 0 || (has_factor = get_real(f, arch, "rope.scaling.factor", &factor)) < 0 ||
      (!has_factor && get_real(f, arch, "rope.scale_linear", &factor) < 0) ||
      get_size(f, arch, "rope.scaling.original_context_length", &s->orig_ctx) < 0 ||
      get_real(f, arch, "rope.scaling.attn_factor", &s->attn_factor) < 0 ||
      get_real(f, arch, "rope.scaling.yarn_beta_fast", &s->beta_fast) < 0 ||
      get_real(f, arch, "rope.scaling.yarn_beta_slow", &s->beta_slow) < 0 ||
      get_real(f, arch, "rope.scaling.yarn_ext_factor", &s->ext_factor) < 0 ||
      refuse_key(f, arch, "rope.scaling.yarn_log_multiplier", "DeepSeek's YaRN attention scale") ||
      refuse_key(f, arch, "rope.scaling.yarn_attn_factor", "a YaRN attention factor of its own"))
    return -1;
  s->factor = factor == 0 ? 1 : factor; /* llama.cpp: 0 means none */
  if (!type || strcmp(type, "linear") == 0)
    s->type = s->factor == 1 ? MKC_ROPE_SCALING_NONE : MKC_ROPE_SCALING_LINEAR;
  else if (strcmp(type, "yarn") == 0)
    s->type = MKC_ROPE_SCALING_YARN;
  else if (strcmp(type, "none") == 0)
    s->factor = 1; /* llama.cpp: none never scales */
  else {
    fprintf(stderr,
            "mkc: error: %s: %s = \"%s\": RoPE scaling not supported (mkc runs none, linear, "
            "yarn, Llama 3's rope_freqs.weight and longrope's rope_factors_{short,long}.weight)\n",
            f->path, key, mkc_shown(type));
    return -1;
  }
  if (!mkc_rope_scaling_ok(s)) {
    fprintf(stderr,
            "mkc: error: %s: %s RoPE scaling: factor %g, yarn beta fast/slow %g/%g, ext factor "
            "%g, attn factor %g (Expected: factor > 0, >= 1 for yarn; the others > 0, ext >= 0)\n",
            f->path, type ? type : "linear", s->factor, s->beta_fast, s->beta_slow, s->ext_factor,
            s->attn_factor);
    return -1;
  }
  const mkc_gguf_tensor *freqs = mkc_gguf_find_tensor(f, "rope_freqs.weight");
  const mkc_gguf_tensor *lng = mkc_gguf_find_tensor(f, "rope_factors_long.weight");
  const mkc_gguf_tensor *shrt = mkc_gguf_find_tensor(f, "rope_factors_short.weight");
  if (lng || shrt) return read_longrope(f, arch, freqs, lng, shrt, d);
  if (s->type != MKC_ROPE_SCALING_YARN && s->attn_factor != 1) {
    fprintf(stderr,
            "mkc: error: %s: %s.rope.scaling.attn_factor = %g without yarn scaling: not "
            "supported\n",
            f->path, arch, s->attn_factor);
    return -1;
  }
  return freqs ? read_rope_freqs(f, arch, freqs, d) : 0;
}

/* general.architecture, one mkc runs, into d->arch. */
static int read_arch(const mkc_gguf *f, mkc_model_desc *d) {
  const char *arch;
  int rc = mkc_gguf_get_str(f, "general.architecture", &arch);
  if (rc == 0) fprintf(stderr, "mkc: error: %s: missing metadata general.architecture\n", f->path);
  if (rc != 1) return -1;
  int known = 0;
  for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++) known |= strcmp(arch, ARCHS[i]) == 0;
  if (!known) {
    fprintf(stderr,
            "mkc: error: %s: architecture \"%s\" is not supported (mkc runs llama, mistral, qwen2, "
            "qwen3, qwen3moe, gemma, gemma2, gemma3, phi3, granite, granitemoe, gpt-oss, smollm3, "
            "exaone, exaone4)\n",
            f->path, mkc_shown(arch));
    return -1;
  }
  snprintf(d->arch, sizeof d->arch, "%s", arch);
  return 0;
}

/* Layers, widths, heads and the trained context, with llama.cpp's defaults. */
static int read_sizes(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  if (need_size(f, arch, "block_count", &d->n_layers) ||
      need_size(f, arch, "embedding_length", &d->dim) ||
      need_size(f, arch, "feed_forward_length", &d->ffn) ||
      need_size(f, arch, "attention.head_count", &d->n_heads))
    return -1;
  /* Each layer holds tensors of its own. A count past the file's tensors is broken metadata, and
   * would send the loaders through millions of layers looking for them (a fuzzed 2.7 KB file
   * took 17 s in mkc_gguf_unfuse). */
  if ((uint64_t)d->n_layers > f->n_tensors) {
    fprintf(stderr,
            "mkc: error: %s: %s.block_count = %d layers, but the file holds %llu tensor%s "
            "(Expected: each layer's tensors in the file)\n",
            f->path, arch, d->n_layers, (unsigned long long)f->n_tensors,
            f->n_tensors == 1 ? "" : "s");
    return -1;
  }
  d->n_kv_heads = d->n_heads;
  d->head_dim = d->dim / d->n_heads;
  d->ctx_train = 4096;
  if (get_size(f, arch, "attention.head_count_kv", &d->n_kv_heads) < 0 ||
      get_size(f, arch, "attention.key_length", &d->head_dim) < 0 ||
      get_size(f, arch, "context_length", &d->ctx_train) < 0)
    return -1;
  if (d->head_dim < 1) { /* no key_length, and more heads than the width has dims */
    fprintf(stderr,
            "mkc: error: %s: %d attention heads in a width of %d leave a head no dims (Expected: "
            "head_count <= embedding_length, or %s.attention.key_length)\n",
            f->path, d->n_heads, d->dim, arch);
    return -1;
  }
  int v_dim = d->head_dim;
  if (get_size(f, arch, "attention.value_length", &v_dim) < 0) return -1;
  if (v_dim != d->head_dim) {
    fprintf(stderr,
            "mkc: error: %s: %s.attention.value_length = %d differs from key_length %d: not "
            "supported\n",
            f->path, arch, v_dim, d->head_dim);
    return -1;
  }
  if (d->n_heads % d->n_kv_heads != 0) {
    fprintf(stderr,
            "mkc: error: %s: %d attention heads are not a multiple of %d KV heads (Expected: "
            "head_count %% head_count_kv == 0)\n",
            f->path, d->n_heads, d->n_kv_heads);
    return -1;
  }
  if (d->head_dim % 2) {
    fprintf(stderr, "mkc: error: %s: head dim %d is odd: RoPE needs pairs\n", f->path, d->head_dim);
    return -1;
  }
  return 0;
}

/* RoPE's base and the norms' epsilon, with llama.cpp's defaults. */
static int read_reals(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  d->rope_theta = 10000.0;
  d->norm_eps = 1e-5;
  if (get_real(f, arch, "rope.freq_base", &d->rope_theta) < 0 ||
      get_real(f, arch, "attention.layer_norm_rms_epsilon", &d->norm_eps) < 0)
    return -1;
  if (!(d->rope_theta > 0) || !(d->norm_eps > 0) || d->norm_eps >= 1) {
    fprintf(stderr, "mkc: error: %s: rope.freq_base %g or rms epsilon %g out of range\n", f->path,
            d->rope_theta, d->norm_eps);
    return -1;
  }
  return 0;
}

/* The vocabulary (the embedding table's rows are what the graph indexes) and
 * which optional tensors the file has. */
static int read_tensors(const mkc_gguf *f, mkc_model_desc *d) {
  const mkc_gguf_tensor *embd = mkc_gguf_find_tensor(f, "token_embd.weight");
  if (!embd) {
    fprintf(stderr, "mkc: error: %s: missing tensor token_embd.weight\n", f->path);
    return -1;
  }
  if (embd->n_dims != 2 || embd->ne[0] != d->dim || embd->ne[1] < 1 || embd->ne[1] > (1 << 30)) {
    fprintf(stderr,
            "mkc: error: %s: token_embd.weight: Expected [vocab][%d] (ne {%d, vocab}); Actual ne "
            "{%lld, %lld}\n",
            f->path, d->dim, d->dim, (long long)embd->ne[0], (long long)embd->ne[1]);
    return -1;
  }
  d->vocab = (int)embd->ne[1];
  d->tied = mkc_gguf_find_tensor(f, "output.weight") == NULL;
  d->qkv_bias = mkc_gguf_find_tensor(f, "blk.0.attn_q.bias") != NULL;
  d->qk_norm = mkc_gguf_find_tensor(f, "blk.0.attn_q_norm.weight") != NULL;
  return 0;
}

/* ARCH.attention.sliding_window into d (absent: def), or -1 with a message. */
static int read_window(const mkc_gguf *f, const char *arch, int64_t def, mkc_model_desc *d) {
  char key[128];
  int64_t window = def;
  snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
  if (mkc_gguf_get_int(f, key, &window) < 0) return -1;
  if (window < 0 || window > (1 << 30)) {
    fprintf(stderr, "mkc: error: %s: %s = %lld: expected 0..%d\n", f->path, key, (long long)window,
            1 << 30);
    return -1;
  }
  d->sliding_window = (int)window;
  return 0;
}

/* ARCH.attention.sliding_window_pattern as llama.cpp reads it (its
 * load_swa_pattern): absent, the period n; an integer n, local layers where
 * layer % n < n - 1 (0: every layer); or an array of one flag a layer (true:
 * local). Into d's swa_local : swa_global from layer 0, or -1 with a message
 * for an array no such pattern gives. */
static int read_swa_pattern(const mkc_gguf *f, const char *arch, int n, mkc_model_desc *d) {
  char key[128];
  snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
  const mkc_gguf_kv *kv = mkc_gguf_find(f, key);
  int64_t period = n;
  if (kv && kv->type == MKC_GGUF_ARRAY) {
    if (kv->n != (uint64_t)d->n_layers || (kv->elem_type != MKC_GGUF_BOOL && kv->elem_type > 5)) {
      fprintf(
          stderr, "mkc: error: %s: %s: Expected %d flags (bool), one a layer; Actual %llu x %s\n",
          f->path, key, d->n_layers, (unsigned long long)kv->n, mkc_gguf_vtype_name(kv->elem_type));
      return -1;
    }
    unsigned char *local = malloc((size_t)d->n_layers);
    if (!local) {
      fprintf(stderr, "mkc: error: %s: out of memory\n", f->path);
      return -1;
    }
    for (int l = 0; l < d->n_layers; l++) local[l] = mkc_gguf_arr_int(kv, (uint64_t)l) != 0;
    int bad, got = mkc_swa_period(local, d->n_layers, &bad);
    free(local);
    if (bad >= 0) {
      char set[64];
      mkc_swa_describe(got, set, sizeof set);
      fprintf(stderr,
              "mkc: error: %s: %s: layer %d is %s, unlike the pattern the layers before it set "
              "(%s; mkc runs L local : 1 global from layer 0)\n",
              f->path, key, bad, mkc_gguf_arr_int(kv, (uint64_t)bad) ? "local" : "global", set);
      return -1;
    }
    period = got;
  } else if (mkc_gguf_get_int(f, key, &period) < 0) {
    return -1;
  } else if (period < 0 || period > (1 << 30)) {
    fprintf(stderr, "mkc: error: %s: %s = %lld: expected 0..%d\n", f->path, key, (long long)period,
            1 << 30);
    return -1;
  }
  if (period == 0)
    d->swa_local = 1, d->swa_global = 0;
  else
    d->swa_local = (int)period - 1, d->swa_global = 1;
  return 0;
}

/* Gemma as llama.cpp's loaders read it: embeddings times sqrt(dim), a GELU-gated MLP, and
 * nothing more for Gemma 1 (gemma); Gemma 2 and 3's local layers attend
 * over ARCH.attention.sliding_window positions, from layer 0 by
 * ARCH.attention.sliding_window_pattern (default: Gemma 2's 1 local : 1
 * global; Gemma 3's 5 : 1, and no window unless one is given), with their own
 * RoPE base where ARCH.rope.freq_base_swa gives one (Gemma 3's default 10000,
 * unscaled); scores times 1 / sqrt(head_dim),
 * but 1 / sqrt(dim / heads) in the 27Bs (46 and 62 layers: gemma_pytorch's
 * query_pre_attn_scalar); norms after attention and the
 * MLP, which the converter stored with Gemma's + 1 added. Soft caps:
 * ARCH.attn_logit_softcapping (Gemma 2's, default 50) and
 * ARCH.final_logit_softcapping (default 30 in Gemma 2, none in Gemma 3).
 * ollama's gemma3 files (which also hold the vision tower's tensors, unread
 * here) name the bases otherwise. */
static int read_gemma(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  int gemma2 = mkc_gemma_version(arch) == 2;
  char key[128];
  snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
  if (!mkc_gguf_find(f, key)) d->norm_eps = 1e-6;
  d->embed_scale = sqrt((double)d->dim);
  d->ffn_gelu = 1;
  if (mkc_gemma_version(arch) == 1) return 0; /* Gemma 1: no window, caps or norms after */
  d->rope_theta_swa = gemma2 ? 0 : 10000.0;
  d->attn_softcap = gemma2 ? 50 : 0;
  d->final_softcap = gemma2 ? 30 : 0;
  /* ollama's own gemma3 files name the bases rope.global/local.freq_base and may leave out the
   * epsilon; its defaults are Gemma 3's (1e6, 1e-6) */
  snprintf(key, sizeof key, "%s.rope.freq_base", arch);
  if (!gemma2 && !mkc_gguf_find(f, key)) {
    d->rope_theta = 1e6;
    if (get_real(f, arch, "rope.global.freq_base", &d->rope_theta) < 0) return -1;
  }
  snprintf(key, sizeof key, "%s.rope.freq_base_swa", arch);
  if (!gemma2 && !mkc_gguf_find(f, key) &&
      get_real(f, arch, "rope.local.freq_base", &d->rope_theta_swa) < 0)
    return -1;
  /* 0, as absent in Gemma 3: every layer global */
  if (read_window(f, arch, gemma2 ? 4096 : 0, d)) return -1;
  if (read_swa_pattern(f, arch, gemma2 ? 2 : 6, d) < 0 ||
      get_real(f, arch, "rope.freq_base_swa", &d->rope_theta_swa) < 0 ||
      get_real(f, arch, "final_logit_softcapping", &d->final_softcap) < 0 ||
      (gemma2 && get_real(f, arch, "attn_logit_softcapping", &d->attn_softcap) < 0))
    return -1;
  /* llama.cpp caps Gemma 2's scores by the key and Gemma 3's never */
  double caps[2] = {d->attn_softcap, d->final_softcap};
  for (int i = 0; i < 2; i++)
    if (!(caps[i] >= 0 && caps[i] < 1e30)) {
      fprintf(stderr, "mkc: error: %s: %s.%s_logit_softcapping = %g: expected a cap >= 0\n",
              f->path, arch, i ? "final" : "attn", caps[i]);
      return -1;
    }
  if (!(d->rope_theta_swa >= 0) || !(d->rope_theta > 0) || (!gemma2 && !(d->rope_theta_swa > 0))) {
    fprintf(stderr, "mkc: error: %s: %s's RoPE bases %g (global) and %g (local): expected > 0\n",
            f->path, arch, d->rope_theta, d->rope_theta_swa);
    return -1;
  }
  if (d->sliding_window == 0 || d->swa_local == 0)
    d->sliding_window = d->swa_local = d->swa_global = 0, d->rope_theta_swa = 0;
  static const char *const post[] = {"blk.0.post_attention_norm.weight",
                                     "blk.0.post_ffw_norm.weight"};
  for (int i = 0; i < 2; i++)
    if (!mkc_gguf_find_tensor(f, post[i])) {
      fprintf(stderr, "mkc: error: %s: %s model without %s\n", f->path, arch, post[i]);
      return -1;
    }
  int big = d->n_layers == (gemma2 ? 46 : 62);
  d->attn_scale = big ? 1.0 / sqrt((double)(d->dim / d->n_heads)) : 0;
  d->post_norms = 1;
  return 0;
}

/* Granite's multipliers as llama.cpp's granite reads them: granite.logit_scale (required), and
 * .embedding_scale, .residual_scale, .attention.scale (absent or 0: none; the scores' default). */
static int read_granite(const mkc_gguf *f, mkc_model_desc *d) {
  const char *arch = d->arch;
  if (get_real(f, arch, "embedding_scale", &d->embed_scale) < 0 ||
      get_real(f, arch, "residual_scale", &d->residual_scale) < 0 ||
      get_real(f, arch, "attention.scale", &d->attn_scale) < 0)
    return -1;
  int rc = get_real(f, arch, "logit_scale", &d->logit_scale);
  if (rc <= 0) {
    if (rc == 0)
      fprintf(stderr, "mkc: error: %s: missing metadata %s.logit_scale\n", f->path, arch);
    return -1;
  }
  double v[] = {d->embed_scale, d->residual_scale, d->attn_scale, d->logit_scale};
  for (int i = 0; i < 4; i++)
    if (!(v[i] >= 0) || !isfinite(v[i]) || (i == 3 && v[i] == 0)) {
      fprintf(stderr,
              "mkc: error: %s: granite's embedding_scale %g, residual_scale %g, attention.scale "
              "%g, logit_scale %g (Expected: >= 0; logit_scale > 0)\n",
              f->path, v[0], v[1], v[2], v[3]);
      return -1;
    }
  return 0;
}

/* ARCH.pooling_type (llama.cpp's: 0 none, 1 mean, 2 cls, 3 last, 4 rank), which
 * embedding models' files carry; absent: MKC_POOL_UNSET. */
static int read_pooling(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  char key[128];
  snprintf(key, sizeof key, "%s.pooling_type", arch);
  int64_t x;
  int rc = mkc_gguf_get_int(f, key, &x);
  if (rc < 0) return -1;
  if (rc == 0) return 0;
  if (x < 0 || x > 4) {
    fprintf(stderr,
            "mkc: error: %s: %s = %lld: expected one of llama.cpp's pooling types, 0 (none), 1 "
            "(mean), 2 (cls), 3 (last) or 4 (rank)\n",
            f->path, key, (long long)x);
    return -1;
  }
  d->pooling = (int)x + 1;
  return 0;
}

/* Experts (llama.cpp's ARCH.expert_count, expert_used_count, and qwen3moe's
 * expert_feed_forward_length; llama's and granitemoe's experts are
 * feed_forward_length wide: Mixtral, Granite MoE). llama.cpp's loaders
 * renormalize the chosen experts' weights; a scale on them
 * (expert_weights_scale) or shared experts are refused. */
static int read_experts(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  int moe_arch =
      strcmp(arch, "qwen3moe") == 0 || strcmp(arch, "granitemoe") == 0 || mkc_gptoss(arch);
  if (get_count(f, arch, "expert_count", &d->n_experts) < 0) return -1;
  if (!d->n_experts && !moe_arch) return 0;
  if (!d->n_experts) {
    fprintf(stderr, "mkc: error: %s: missing metadata %s.expert_count\n", f->path, arch);
    return -1;
  }
  d->expert_ffn = d->ffn;
  if (need_size(f, arch, "expert_used_count", &d->n_experts_used) ||
      (mkc_experts_own_width(arch) &&
       need_size(f, arch, "expert_feed_forward_length", &d->expert_ffn)))
    return -1;
  double scale = 0;
  int shared = 0, shared_ffn = 0;
  if (get_real(f, arch, "expert_weights_scale", &scale) < 0 ||
      get_count(f, arch, "expert_shared_count", &shared) < 0 ||
      get_count(f, arch, "expert_shared_feed_forward_length", &shared_ffn) < 0)
    return -1;
  shared = shared || shared_ffn; /* Granite MoE Shared's */
  if ((scale != 0 && scale != 1) || shared) {
    fprintf(stderr, "mkc: error: %s: %s: not supported (mkc's experts have neither)\n", f->path,
            shared ? "shared experts (expert_shared_count)" : "expert_weights_scale");
    return -1;
  }
  if (!mkc_experts_fit(d)) {
    fprintf(stderr,
            "mkc: error: %s: %s.expert_used_count %d of expert_count %d of %d rows (Expected: "
            "at most min(expert_count, 64) of at most 1024, their rows in all below 2^31)\n",
            f->path, arch, d->n_experts_used, d->n_experts, mkc_experts_rows(d));
    return -1;
  }
  d->norm_topk = 1;
  return 0;
}

/* gpt-oss as llama.cpp's openai-moe loader reads it: local layers over
 * ARCH.attention.sliding_window positions taking turns with global ones from
 * layer 0 (sliding_window_pattern, default 2), each head's sink, biases on
 * Q/K/V, the output projection, the router and the experts, and its clamped
 * glu; the MLP's norm is blk.N.post_attention_norm (graphs/llama.lua:
 * ffn_norm_name). The tensors the graph names must be there (the weights'
 * loader says which is missing). */
static int read_gptoss(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  if (need_size(f, arch, "attention.sliding_window", &d->sliding_window) ||
      read_swa_pattern(f, arch, 2, d))
    return -1;
  if (!d->n_experts || !d->qkv_bias) {
    fprintf(stderr, "mkc: error: %s: a gpt-oss file without %s\n", f->path,
            !d->n_experts ? "experts (expert_count)" : "Q/K/V biases (blk.0.attn_q.bias)");
    return -1;
  }
  return 0;
}

/* EXAONE 4 as llama.cpp's exaone4 reads it: no norm before attention and the MLP, one after each
 * (post_attention_norm, post_ffw_norm), per-head Q/K norms. Only the 64-layer 32B has windows:
 * ARCH.attention.sliding_window (default 4096) on the local layers of
 * ARCH.attention.sliding_window_pattern (default 4: 3 local : 1 global), with
 * ARCH.rope.freq_base_swa (default: the global base), and its global layers have no RoPE (all
 * of them, where the pattern makes every layer global). */
static int read_exaone4(const mkc_gguf *f, const char *arch, mkc_model_desc *d) {
  static const char *const need[] = {"blk.0.post_attention_norm.weight",
                                     "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight"};
  for (size_t i = 0; i < sizeof need / sizeof *need; i++)
    if (!mkc_gguf_find_tensor(f, need[i])) {
      fprintf(stderr, "mkc: error: %s: %s model without %s\n", f->path, arch, need[i]);
      return -1;
    }
  d->post_norms = d->no_pre_norms = 1;
  if (d->n_layers != 64) return 0;
  double base_swa = d->rope_theta;
  if (read_window(f, arch, 4096, d) || read_swa_pattern(f, arch, 4, d) < 0 ||
      get_real(f, arch, "rope.freq_base_swa", &base_swa) < 0)
    return -1;
  if (!(base_swa > 0)) {
    fprintf(stderr, "mkc: error: %s: %s.rope.freq_base_swa = %g: expected > 0\n", f->path, arch,
            base_swa);
    return -1;
  }
  if (d->sliding_window == 0) {
    fprintf(stderr, "mkc: error: %s: %s.attention.sliding_window = 0: expected a window\n", f->path,
            arch);
    return -1;
  }
  if (d->swa_local == 0) { /* every layer global, and so none with RoPE, as llama.cpp runs it */
    d->sliding_window = d->swa_global = 0;
    d->nope_interval = 1;
    return 0;
  }
  d->rope_theta_swa = base_swa != d->rope_theta ? base_swa : 0;
  d->nope_interval = d->swa_global ? d->swa_local + d->swa_global : 0; /* the global layers */
  return 0;
}

int mkc_gguf_model_desc(const mkc_gguf *f, mkc_model_desc *d) {
  memset(d, 0, sizeof *d);
  if (read_arch(f, d)) return -1;
  preset_name(f, d->name, sizeof d->name);
  if (read_sizes(f, d->arch, d) || read_reals(f, d->arch, d) || read_tensors(f, d) ||
      read_pooling(f, d->arch, d) || read_experts(f, d->arch, d))
    return -1;
  if (mkc_gemma_version(d->arch) && read_gemma(f, d->arch, d)) return -1;
  if (mkc_granite_family(d->arch) && read_granite(f, d)) return -1;
  if (mkc_gptoss(d->arch) && read_gptoss(f, d->arch, d)) return -1;
  /* SmolLM3: llama's layers, every 4th without RoPE (llama.cpp's fixed step; no key says it) */
  if (strcmp(d->arch, "smollm3") == 0) d->nope_interval = 4;
  if (strcmp(d->arch, "exaone4") == 0 && read_exaone4(f, d->arch, d)) return -1;
  return rope_layout(f, d->arch, d) || read_rope_scaling(f, d->arch, d) ? -1 : 0;
}
