/* A Hugging Face config.json as an mkc_model_desc: the fields transformers'
 * LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Gemma2Config,
 * Gemma3TextConfig and Gemma3Config's text_config define, with their
 * defaults, and a refusal for anything the llama graph does not compute
 * (RoPE scalings other than linear, llama3 and yarn, other activations,
 * biases it has no weight for). */
#include "hf.h"
#include "st_pooling.h"
#include "util/text.h"
#include "safetensors.h"
#include "swa_pattern.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"

/* Gemma3TextConfig's, Gemma2Config's and GemmaConfig's sizes, which a config may leave out
 * (Gemma 3 4B-27B's text_config do): hidden, layers, heads, intermediate,
 * vocab. */
static const int GEMMA3_SIZES[] = {2304, 26, 8, 9216, 262208};
static const int GEMMA2_SIZES[] = {2304, 26, 8, 9216, 256000};
static const int GEMMA_SIZES[] = {3072, 28, 16, 24576, 256000};
static const int SMOLLM3_SIZES[] = {2048, 36, 16, 11008, 128256}; /* SmolLM3Config's */
static const int EXAONE4_SIZES[] = {4096, 32, 32, 16384, 102400}; /* Exaone4Config's */

/* What each model_type fixes. HF stores Q/K rows for rotate-half RoPE;
 * llama.cpp's llama and mistral GGUFs permute them for interleaved RoPE,
 * which is the layout mkc loads them into; qwen2, qwen3 and gemma3 keep HF's. */
typedef struct arch_info {
  const char *model_type;
  const char *arch; /* mkc's name for it (mkc_model_desc.arch) */
  int rope_layout;  /* enum mkc_rope_layout mkc uses for it */
  int qkv_bias;     /* q/k/v projections always have a bias */
  int qk_norm;      /* per-head RMSNorm of q and k before RoPE */
  int ctx_default;  /* max_position_embeddings when absent */
  const int *sizes; /* defaults for the sizes (GEMMA3_SIZES' order), or NULL: required */
} arch_info;

static const arch_info ARCHS[] = {
    {"llama", "llama", MKC_ROPE_INTERLEAVED, 0, 0, 2048, NULL},
    {"mistral", "mistral", MKC_ROPE_INTERLEAVED, 0, 0, 4096 * 32, NULL},
    {"qwen2", "qwen2", MKC_ROPE_NEOX, 1, 0, 32768, NULL},
    {"qwen3", "qwen3", MKC_ROPE_NEOX, 0, 1, 32768, NULL},
    {"qwen3_moe", "qwen3moe", MKC_ROPE_NEOX, 0, 1, 32768, NULL}, /* experts: read_experts */
    {"mixtral", "mixtral", MKC_ROPE_INTERLEAVED, 0, 0, 4096 * 32, NULL},
    {"phi3", "phi3", MKC_ROPE_NEOX, 0, 0, 4096, NULL}, /* Q/K/V and gate/up fused (st_unfuse) */
    {"granite", "granite", MKC_ROPE_INTERLEAVED, 0, 0, 2048, NULL}, /* llama with multipliers */
    {"granitemoe", "granitemoe", MKC_ROPE_INTERLEAVED, 0, 0, 2048, NULL}, /* and experts */
    {"gemma", "gemma", MKC_ROPE_NEOX, 0, 0, 8192, GEMMA_SIZES},
    {"smollm3", "smollm3", MKC_ROPE_INTERLEAVED, 0, 0, 32768, SMOLLM3_SIZES}, /* read_nope */
    {"exaone4", "exaone4", MKC_ROPE_NEOX, 0, 1, 2048, EXAONE4_SIZES},         /* read_exaone4 */
    {"gemma2", "gemma2", MKC_ROPE_NEOX, 0, 0, 8192, GEMMA2_SIZES},
    {"gemma3_text", "gemma3", MKC_ROPE_NEOX, 0, 1, 131072, GEMMA3_SIZES},
    {"gemma3", "gemma3", MKC_ROPE_NEOX, 0, 1, 131072, GEMMA3_SIZES}, /* its text_config */
};

typedef struct config {
  const cJSON *root;
  const char *where;
} config;

/* A field that is absent or null. */
static const cJSON *field(const config *c, const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer in [min, INT_MAX]; def < 0 means required. */
static int get_int(const config *c, const char *key, int def, int min, int *out) {
  const cJSON *v = field(c, c->root, key);
  char buf[96];
  if (!v) {
    if (def < 0) return mkc_error_in(c->where, "missing \"%s\"", key);
    *out = def;
    return 0;
  }
  double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
  if (!cJSON_IsNumber(v) || !(x >= min && x <= INT_MAX) || (double)(int)x != x)
    return mkc_error_in(c->where, "\"%s\": Expected an integer >= %d, Actual %s", key, min,
                        mkc_json_describe(v, buf, sizeof buf));
  *out = (int)x;
  return 0;
}

static int get_positive(const config *c, const cJSON *obj, const char *key, double def,
                        double *out) {
  const cJSON *v = field(c, obj, key);
  char buf[96];
  if (!v) {
    *out = def;
    return 0;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble < 1e300))
    return mkc_error_in(c->where, "\"%s\": Expected a positive number, Actual %s", key,
                        mkc_json_describe(v, buf, sizeof buf));
  *out = v->valuedouble;
  return 0;
}

static int get_bool(const config *c, const char *key, int def, int *out) {
  const cJSON *v = field(c, c->root, key);
  char buf[96];
  if (!v) {
    *out = def;
    return 0;
  }
  if (!cJSON_IsBool(v))
    return mkc_error_in(c->where, "\"%s\": Expected true or false, Actual %s", key,
                        mkc_json_describe(v, buf, sizeof buf));
  *out = cJSON_IsTrue(v);
  return 0;
}

/* An integer >= 1 in obj; def < 0 means required. */
static int get_count_in(const config *c, const cJSON *obj, const char *where, const char *key,
                        int def, int *out) {
  const cJSON *v = field(c, obj, key);
  char buf[96];
  if (!v) {
    if (def < 0) return mkc_error_in(c->where, "%s needs \"%s\"", where, key);
    *out = def;
    return 0;
  }
  double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
  if (!(x >= 1 && x <= INT_MAX) || (double)(int)x != x)
    return mkc_error_in(c->where, "%s \"%s\": Expected an integer >= 1, Actual %s", where, key,
                        mkc_json_describe(v, buf, sizeof buf));
  *out = (int)x;
  return 0;
}

/* A number > 0 in obj that must be there. */
static int need_positive(const config *c, const cJSON *obj, const char *where, const char *key,
                         double *out) {
  if (!field(c, obj, key)) return mkc_error_in(c->where, "%s needs \"%s\"", where, key);
  return get_positive(c, obj, key, 0, out);
}

/* A positive number in obj, or, where absent, null or 0 (Python's `x or
 * default`), *out left as it is. */
static int get_unless_zero(const config *c, const cJSON *obj, const char *key, double *out) {
  const cJSON *v = field(c, obj, key);
  if (v && cJSON_IsNumber(v) && v->valuedouble == 0) return 0;
  return get_positive(c, obj, key, *out, out);
}

/* YaRN's attention scale on cos and sin as transformers' get_mscale gives it
 * (1 for a factor <= 1). */
static double yarn_mscale(double factor, double mscale) {
  return factor <= 1 ? 1 : 0.1 * mscale * log(factor) + 1;
}

/* YaRN as transformers 5 reads it (_compute_yarn_parameters): factor (absent:
 * max_position_embeddings / original_max_position_embeddings), the original
 * context (default max_position_embeddings), beta_fast/beta_slow (0 or
 * absent: 32, 1), attention_factor (absent: from mscale / mscale_all_dim,
 * else 1 + 0.1 ln factor), which mkc keeps as llama.cpp's attn_factor: the
 * part beyond 1 + 0.1 ln factor. */
static int read_yarn(const config *c, const cJSON *obj, const char *where, int max_pos,
                     mkc_rope_scaling *s) {
  char buf[96];
  int has_orig = field(c, obj, "original_max_position_embeddings") != NULL;
  if (get_count_in(c, obj, where, "original_max_position_embeddings", max_pos, &s->orig_ctx))
    return -1;
  if (!field(c, obj, "factor") && !has_orig)
    return mkc_error_in(c->where, "%s needs \"factor\"", where);
  s->factor = (double)max_pos / s->orig_ctx;
  double attention = 0, mscale = 0, mscale_all_dim = 0;
  if (get_positive(c, obj, "factor", s->factor, &s->factor) ||
      get_positive(c, obj, "attention_factor", 0, &attention) ||
      get_unless_zero(c, obj, "mscale", &mscale) ||
      get_unless_zero(c, obj, "mscale_all_dim", &mscale_all_dim) ||
      get_unless_zero(c, obj, "beta_fast", &s->beta_fast) ||
      get_unless_zero(c, obj, "beta_slow", &s->beta_slow))
    return -1;
  const cJSON *truncate = field(c, obj, "truncate");
  if (truncate && !cJSON_IsTrue(truncate))
    return mkc_error_in(c->where, "%s \"truncate\": %s: not supported (mkc's ramp truncates)",
                        where, mkc_json_describe(truncate, buf, sizeof buf));
  if (s->factor < 1) return mkc_error_in(c->where, "%s factor %g: Expected >= 1", where, s->factor);
  if (attention == 0 && mscale && mscale_all_dim)
    attention = yarn_mscale(s->factor, mscale) / yarn_mscale(s->factor, mscale_all_dim);
  if (attention != 0) s->attn_factor = attention / yarn_mscale(s->factor, 1);
  return 0;
}

/* One of longrope's lists in obj: `pairs` positive numbers. */
static int read_factors(const config *c, const cJSON *obj, const char *where, const char *key,
                        int pairs, double *v) {
  const cJSON *a = field(c, obj, key);
  char buf[96];
  if (!a) return mkc_error_in(c->where, "%s needs \"%s\"", where, key);
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != pairs || pairs > MKC_ROPE_MAX_PAIRS) {
    if (cJSON_IsArray(a)) snprintf(buf, sizeof buf, "a list of %d", cJSON_GetArraySize(a));
    return mkc_error_in(
        c->where, "%s \"%s\": Expected a list of %d numbers (rotated dims / 2), Actual %s", where,
        key, pairs, cJSON_IsArray(a) ? buf : mkc_json_describe(a, buf, sizeof buf));
  }
  int j = 0;
  for (const cJSON *x = a->child; x; x = x->next, j++) {
    if (!cJSON_IsNumber(x) || !(x->valuedouble > 0) || !isfinite(x->valuedouble))
      return mkc_error_in(c->where, "%s \"%s\"[%d]: Expected a number > 0, Actual %s", where, key,
                          j, mkc_json_describe(x, buf, sizeof buf));
    v[j] = x->valuedouble;
  }
  return 0;
}

/* LongRoPE as transformers 5 reads it (_compute_longrope_parameters): short_factor and
 * long_factor, the original context (the config's original_max_position_embeddings first, as
 * Phi-3's carry it; then rope_scaling's; else max_position_embeddings), and attention_factor
 * (absent: sqrt(1 + ln f / ln original), f the factor or max_position_embeddings / original;
 * 1 where f <= 1). */
static int read_longrope(const config *c, const cJSON *obj, const char *where, int max_pos,
                         int pairs, mkc_rope_scaling *s) {
  const cJSON *top = field(c, c->root, "original_max_position_embeddings");
  if (get_count_in(c, top ? c->root : obj, where, "original_max_position_embeddings", max_pos,
                   &s->orig_ctx) ||
      read_factors(c, obj, where, "short_factor", pairs, s->short_factor) ||
      read_factors(c, obj, where, "long_factor", pairs, s->long_factor))
    return -1;
  double factor = (double)max_pos / s->orig_ctx, attention = 0;
  if (get_positive(c, obj, "factor", factor, &factor) ||
      get_positive(c, obj, "attention_factor", 0, &attention))
    return -1;
  s->attn_factor = attention != 0 ? attention
                   : factor <= 1  ? 1
                                  : sqrt(1 + log(factor) / log(s->orig_ctx));
  s->n_factors = pairs;
  return 0;
}

/* rope_scaling (or transformers 5's rope_parameters) as mkc's scaling:
 * default (plain), linear, llama3, yarn or longrope, each with the parameters
 * transformers' _compute_*_parameters read; max_pos is
 * max_position_embeddings. */
static int read_rope(const config *c, const cJSON *obj, const char *key, int max_pos, int pairs,
                     mkc_rope_scaling *s) {
  char buf[96];
  *s = (mkc_rope_scaling){.type = MKC_ROPE_SCALING_NONE,
                          .factor = 1,
                          .orig_ctx = max_pos,
                          .beta_fast = 32,
                          .beta_slow = 1,
                          .ext_factor = 1,
                          .attn_factor = 1};
  if (!obj) return 0;
  if (!cJSON_IsObject(obj))
    return mkc_error_in(c->where, "\"%s\": Expected an object or null, Actual %s", key,
                        mkc_json_describe(obj, buf, sizeof buf));
  const cJSON *type = field(c, obj, "rope_type");
  if (!type) type = field(c, obj, "type");
  if (!cJSON_IsString(type))
    return mkc_error_in(c->where, "unsupported %s without a rope_type", key);
  const char *name = type->valuestring;
  if (strcmp(name, "default") == 0 || strcmp(name, "none") == 0) return 0;
  /* "su": LongRoPE's first name, in Phi-3's first configs */
  s->type = mkc_rope_scaling_from_name(strcmp(name, "su") == 0 ? "longrope" : name);
  char where[64];
  snprintf(where, sizeof where, "%s %s", key, mkc_shown(name));
  switch (s->type) {
  case MKC_ROPE_SCALING_LINEAR:
    return need_positive(c, obj, where, "factor", &s->factor);
  case MKC_ROPE_SCALING_LLAMA3:
    if (need_positive(c, obj, where, "factor", &s->factor) ||
        need_positive(c, obj, where, "low_freq_factor", &s->low_freq_factor) ||
        need_positive(c, obj, where, "high_freq_factor", &s->high_freq_factor) ||
        get_count_in(c, obj, where, "original_max_position_embeddings", -1, &s->orig_ctx))
      return -1;
    if (s->factor < 1 || s->high_freq_factor <= s->low_freq_factor)
      return mkc_error_in(c->where,
                          "%s: factor %g, low_freq_factor %g, high_freq_factor %g (Expected: "
                          "factor >= 1, low < high)",
                          where, s->factor, s->low_freq_factor, s->high_freq_factor);
    return 0;
  case MKC_ROPE_SCALING_YARN:
    return read_yarn(c, obj, where, max_pos, s);
  case MKC_ROPE_SCALING_LONGROPE:
    return read_longrope(c, obj, where, max_pos, pairs, s);
  default:
    return mkc_error_in(c->where,
                        "unsupported %s \"%.40s\" (mkc runs default, linear, llama3, yarn and "
                        "longrope)",
                        key, mkc_shown(name));
  }
}

/* GraniteConfig's multipliers (transformers' defaults 1): embedding_multiplier,
 * residual_multiplier and logits_scaling as llama.cpp's converter names them, and
 * attention_multiplier, which is the scores' scale itself (1 unless given, not 1 / sqrt(d)). */
static int read_granite(const config *t, mkc_model_desc *d) {
  double attn = 1;
  if (get_positive(t, t->root, "embedding_multiplier", 1, &d->embed_scale) ||
      get_positive(t, t->root, "residual_multiplier", 1, &d->residual_scale) ||
      get_positive(t, t->root, "attention_multiplier", 1, &attn) ||
      get_positive(t, t->root, "logits_scaling", 1, &d->logit_scale))
    return -1;
  d->attn_scale = attn;
  return 0;
}

/* partial_rotary_factor (Phi-4-mini's 0.75; transformers 5 keeps it in rope_parameters) as
 * d->rope_dim, int(head_dim * factor) as transformers rounds it: an even count of dims from 2.
 * Only where the Q/K rows keep the rotate-half order: a layout mkc permutes (llama's) would
 * need the permutation within the rotated dims. */
static int read_partial(const config *t, int neox, mkc_model_desc *d) {
  const cJSON *partial = field(t, t->root, "partial_rotary_factor");
  if (!partial) partial = field(t, field(t, t->root, "rope_parameters"), "partial_rotary_factor");
  char buf[96];
  if (!partial || cJSON_IsNull(partial)) return 0;
  double f = cJSON_IsNumber(partial) ? partial->valuedouble : -1;
  int dims = f > 0 && f <= 1 ? (int)(d->head_dim * f) : 0;
  if (dims < 2 || dims % 2)
    return mkc_error_in(t->where,
                        "partial_rotary_factor %s: Expected a factor in (0, 1] that leaves an even "
                        "count of the %d dims",
                        mkc_json_describe(partial, buf, sizeof buf), d->head_dim);
  if (dims < d->head_dim && !neox)
    return mkc_error_in(t->where,
                        "partial_rotary_factor %s: partial RoPE on a model whose Q/K rows mkc "
                        "permutes to interleaved pairs: not supported",
                        mkc_json_describe(partial, buf, sizeof buf));
  d->rope_dim = dims < d->head_dim ? dims : 0;
  return 0;
}

/* The folder's last component, lowercased, other than [a-z0-9.-] as '-'. */
static void name_from_dir(const char *dir, const char *fallback, char *name, size_t cap) {
  size_t end = dir ? strlen(dir) : 0;
  while (end > 0 && dir[end - 1] == '/') end--;
  size_t start = end;
  while (start > 0 && dir[start - 1] != '/') start--;
  if (start == end || (end - start == 1 && dir[start] == '.')) {
    snprintf(name, cap, "%s", fallback);
    return;
  }
  size_t k = 0;
  for (size_t i = start; i < end && k + 1 < cap; i++) {
    char ch = dir[i];
    if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
    int keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
    name[k++] = keep ? ch : '-';
  }
  name[k] = '\0';
}

/* A soft cap: absent, def; null, none (0); else a positive number. */
static int get_cap(const config *t, const char *key, double def, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->root, key);
  *out = v && cJSON_IsNull(v) ? 0 : def;
  return get_positive(t, t->root, key, *out, out);
}

/* layer_types, one "sliding_attention" or "full_attention" a layer, as the
 * period of an L local : 1 global pattern from layer 0 (swa_pattern.h), or
 * -1 with a message for anything else. */
static int read_layer_types(const config *t, const cJSON *types, int n_layers, int *period) {
  char buf[96];
  if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != n_layers) {
    if (cJSON_IsArray(types))
      snprintf(buf, sizeof buf, "%d", cJSON_GetArraySize(types));
    else
      mkc_json_describe(types, buf, sizeof buf);
    return mkc_error_in(t->where,
                        "\"layer_types\": Expected %d of \"sliding_attention\" or "
                        "\"full_attention\", one a layer; Actual %s",
                        n_layers, buf);
  }
  unsigned char *local = malloc((size_t)n_layers);
  if (!local) return mkc_error_in(t->where, "out of memory");
  int bad = -1, rc = 0;
  for (int l = 0; l < n_layers && !rc; l++) {
    const cJSON *e = cJSON_GetArrayItem(types, l);
    const char *name = cJSON_IsString(e) ? e->valuestring : "";
    if (strcmp(name, "sliding_attention") != 0 && strcmp(name, "full_attention") != 0)
      rc = mkc_error_in(t->where,
                        "\"layer_types\"[%d]: Expected \"sliding_attention\" or "
                        "\"full_attention\", Actual %s",
                        l, mkc_json_describe(e, buf, sizeof buf));
    local[l] = name[0] == 's';
  }
  if (!rc) *period = mkc_swa_period(local, n_layers, &bad);
  if (!rc && bad >= 0) {
    char set[64];
    mkc_swa_describe(*period, set, sizeof set);
    rc = mkc_error_in(t->where,
                      "\"layer_types\": layer %d is %s, unlike the pattern the layers before it "
                      "set (%s; mkc runs L local : 1 global from layer 0)",
                      bad, local[bad] ? "sliding_attention" : "full_attention", set);
  }
  free(local);
  return rc;
}

/* Gemma (GemmaConfig, Gemma2Config, Gemma3TextConfig, with their defaults):
 * embeddings times sqrt(hidden_size) and GELU (tanh) gating, and for Gemma 2 and 3
 * windows on the layers layer_types calls sliding_attention (absent: Gemma
 * 2's even layers; Gemma 3's all but every sliding_window_pattern-th, from
 * layer sliding_window_pattern - 1); Gemma 3's local RoPE base
 * rope_local_base_freq, unscaled (Gemma 2's layers share one); scores times
 * query_pre_attn_scalar^-1/2; soft caps on the scores and the logits (Gemma
 * 2's default 50 and 30); norms after attention and the MLP. transformers 5 keeps Gemma 3's
 * RoPEs in rope_parameters under full_attention and sliding_attention.
 * EmbeddingGemma's bidirectional attention is refused. */
static int read_gemma(const config *t, int gemma, mkc_model_desc *d) {
  char buf[96];
  int gemma2 = gemma == 2;
  const cJSON *act = field(t, t->root, "hidden_activation");
  if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu_pytorch_tanh") != 0))
    return mkc_error_in(t->where,
                        "unsupported hidden_activation %s (mkc's Gemma MLP is GELU with the tanh "
                        "approximation, gelu_pytorch_tanh)",
                        mkc_json_describe(act, buf, sizeof buf));
  /* GemmaConfig reads the official releases' "gelu" as the tanh form */
  act = field(t, t->root, "hidden_act");
  if (gemma == 1 && act &&
      (!cJSON_IsString(act) || (strcmp(act->valuestring, "gelu") != 0 &&
                                strcmp(act->valuestring, "gelu_pytorch_tanh") != 0)))
    return mkc_error_in(t->where,
                        "unsupported hidden_act %s (mkc's Gemma MLP is GELU with the tanh "
                        "approximation, gelu_pytorch_tanh)",
                        mkc_json_describe(act, buf, sizeof buf));
  int bidirectional = 0;
  if (get_bool(t, "use_bidirectional_attention", 0, &bidirectional)) return -1;
  if (bidirectional)
    return mkc_error_in(t->where, "\"use_bidirectional_attention\": true: mkc decodes causally");
  d->embed_scale = sqrt((double)d->dim);
  d->ffn_gelu = 1;
  if (gemma == 1) return 0; /* GemmaConfig: no window, caps or norms after */
  if (get_cap(t, "attn_logit_softcapping", gemma2 ? 50 : 0, &d->attn_softcap) ||
      get_cap(t, "final_logit_softcapping", gemma2 ? 30 : 0, &d->final_softcap))
    return -1;
  double scalar = 256;
  if (get_positive(t, t->root, "query_pre_attn_scalar", 256, &scalar)) return -1;
  if (fabs(scalar - d->head_dim) > 1e-9 * scalar) d->attn_scale = 1 / sqrt(scalar);

  const cJSON *window = cJSON_GetObjectItemCaseSensitive(t->root, "sliding_window");
  if (window && cJSON_IsNull(window))
    return mkc_error_in(t->where, "\"sliding_window\": null: its local layers need a window");
  if (get_int(t, "sliding_window", 4096, 1, &d->sliding_window)) return -1;
  const cJSON *types = field(t, t->root, "layer_types");
  int period = gemma2 ? 2 : 6;
  if (types ? read_layer_types(t, types, d->n_layers, &period)
            : !gemma2 && get_int(t, "sliding_window_pattern", 6, 1, &period))
    return -1;
  d->swa_local = period ? period - 1 : 1, d->swa_global = period ? 1 : 0;

  /* Gemma 3's local layers' RoPE: rope_local_base_freq, or rope_parameters' sliding_attention */
  d->rope_theta_swa = gemma2 ? 0 : 10000;
  if (!gemma2 && get_positive(t, t->root, "rope_local_base_freq", 10000, &d->rope_theta_swa))
    return -1;
  const cJSON *params = field(t, t->root, "rope_parameters");
  const cJSON *sliding = params && !gemma2 ? field(t, params, "sliding_attention") : NULL;
  if (sliding) {
    mkc_rope_scaling s;
    if (read_rope(t, sliding, "rope_parameters.sliding_attention", d->ctx_train, d->head_dim / 2,
                  &s) ||
        get_positive(t, sliding, "rope_theta", d->rope_theta_swa, &d->rope_theta_swa))
      return -1;
    if (s.type != MKC_ROPE_SCALING_NONE)
      return mkc_error_in(t->where, "rope_parameters.sliding_attention: scaled: not supported "
                                    "(mkc scales only the global layers' RoPE)");
  }
  if (d->sliding_window == 0 || d->swa_local == 0) /* period 1: every layer global */
    d->sliding_window = d->swa_local = d->swa_global = 0, d->rope_theta_swa = 0;
  d->post_norms = 1;
  return 0;
}

/* SmolLM3's layers without RoPE: no_rope_layers, 1 where a layer has RoPE (absent: 0 every
 * no_rope_layer_interval-th layer, default 4). mkc runs them every N layers from layer N - 1, as
 * the default list has them; another list is refused. */
static int read_nope(const config *t, mkc_model_desc *d) {
  char buf[96];
  int every = 4;
  if (get_int(t, "no_rope_layer_interval", 4, 1, &every)) return -1;
  const cJSON *list = field(t, t->root, "no_rope_layers");
  if (!list) {
    d->nope_interval = every;
    return 0;
  }
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != d->n_layers) {
    if (cJSON_IsArray(list))
      snprintf(buf, sizeof buf, "%d", cJSON_GetArraySize(list));
    else
      mkc_json_describe(list, buf, sizeof buf);
    return mkc_error_in(t->where,
                        "\"no_rope_layers\": Expected %d of 0 or 1, one a layer; Actual %s",
                        d->n_layers, buf);
  }
  every = 0; /* the first layer without RoPE sets the interval */
  for (int l = 0; l < d->n_layers; l++) {
    const cJSON *e = cJSON_GetArrayItem(list, l);
    if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1))
      return mkc_error_in(t->where, "\"no_rope_layers\"[%d]: Expected 0 or 1, Actual %s", l,
                          mkc_json_describe(e, buf, sizeof buf));
    int rope = e->valuedouble == 1;
    if (!rope && !every) every = l + 1;
    if (every && rope == ((l + 1) % every == 0))
      return mkc_error_in(t->where,
                          "\"no_rope_layers\": layer %d %s RoPE, unlike every %d layers from "
                          "layer %d (mkc runs NoPE layers so)",
                          l, rope ? "has" : "has no", every, every - 1);
  }
  d->nope_interval = every;
  return 0;
}

/* EXAONE 4 (Exaone4Config): no norm before attention and the MLP, one after each; windows of
 * sliding_window (default 4096; null: none) on the layers layer_types calls sliding_attention
 * (absent: all but every sliding_window_pattern-th, an integer, default 4, or a string of L and G a
 * period, as "LLLG"), and then the global layers have no RoPE (transformers rotates only where
 * sliding_window is null or the layer slides). */
static int read_exaone4(const config *t, mkc_model_desc *d) {
  char buf[96];
  d->post_norms = d->no_pre_norms = 1;
  const cJSON *window = cJSON_GetObjectItemCaseSensitive(t->root, "sliding_window");
  if (window && cJSON_IsNull(window)) return 0;
  if (get_int(t, "sliding_window", 4096, 1, &d->sliding_window)) return -1;
  const cJSON *types = field(t, t->root, "layer_types");
  const cJSON *pattern = field(t, t->root, "sliding_window_pattern");
  int period = 4;
  if (types) {
    if (read_layer_types(t, types, d->n_layers, &period)) return -1;
  } else if (pattern && cJSON_IsString(pattern)) {
    const char *s = pattern->valuestring;
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] != 'G' || strspn(s, "L") != n - 1)
      return mkc_error_in(t->where,
                          "\"sliding_window_pattern\": %s: expected local layers then one "
                          "global, as \"LLLG\"",
                          mkc_json_describe(pattern, buf, sizeof buf));
    period = (int)n;
  } else if (get_int(t, "sliding_window_pattern", 4, 1, &period)) {
    return -1;
  }
  d->swa_local = period ? period - 1 : 1, d->swa_global = period ? 1 : 0;
  if (d->swa_local == 0) { /* every layer global: none has RoPE, with a window (transformers) */
    d->sliding_window = d->swa_global = 0;
    d->nope_interval = 1;
    return 0;
  }
  d->nope_interval = d->swa_global ? period : 0;
  return 0;
}

/* The experts of a qwen3_moe config (num_experts, num_experts_per_tok and
 * moe_intermediate_size required; norm_topk_prob as Qwen3MoeConfig defaults it,
 * false; every layer sparse: decoder_sparse_step 1, no mlp_only_layers) or a
 * mixtral or granitemoe one (num_local_experts of intermediate_size, 8 and 2
 * by default, always renormalized: GraniteMoe's softmax is over the chosen);
 * nothing for the others. */
static int read_experts(const config *t, const arch_info *arch, mkc_model_desc *d) {
  int qwen = strcmp(arch->arch, "qwen3moe") == 0;
  int mixtral = strcmp(arch->arch, "mixtral") == 0 || strcmp(arch->arch, "granitemoe") == 0;
  if (!qwen && !mixtral) return 0;
  d->expert_ffn = d->ffn;
  d->norm_topk = 1;
  int step = 1;
  if (mixtral ? get_int(t, "num_local_experts", 8, 1, &d->n_experts) ||
                    get_int(t, "num_experts_per_tok", 2, 1, &d->n_experts_used)
              : get_int(t, "num_experts", -1, 1, &d->n_experts) ||
                    get_int(t, "num_experts_per_tok", -1, 1, &d->n_experts_used) ||
                    get_int(t, "moe_intermediate_size", -1, 1, &d->expert_ffn) ||
                    get_bool(t, "norm_topk_prob", 0, &d->norm_topk) ||
                    get_int(t, "decoder_sparse_step", 1, 1, &step))
    return -1;
  const cJSON *dense = qwen ? field(t, t->root, "mlp_only_layers") : NULL;
  if (step != 1 || (dense && (!cJSON_IsArray(dense) || cJSON_GetArraySize(dense) > 0)))
    return mkc_error_in(t->where,
                        "unsupported dense layers among the sparse ones (decoder_sparse_step %d, "
                        "mlp_only_layers): mkc's experts are in every layer",
                        step);
  if (!mkc_experts_fit(d))
    return mkc_error_in(t->where,
                        "num_experts_per_tok %d of %d experts of %d rows (Expected: at most "
                        "min(experts, 64) of at most 1024, their rows in all below 2^31)",
                        d->n_experts_used, d->n_experts, mkc_experts_rows(d));
  return 0;
}

static int parse(const config *c, const char *dir_name, mkc_model_desc *d) {
  char buf[96];
  memset(d, 0, sizeof *d);
  if (!cJSON_IsObject(c->root)) return mkc_error_in(c->where, "not a JSON object");
  const cJSON *type = field(c, c->root, "model_type");
  if (!type) return mkc_error_in(c->where, "missing \"model_type\"");
  if (!cJSON_IsString(type))
    return mkc_error_in(c->where, "\"model_type\": Expected a string, Actual %s",
                        mkc_json_describe(type, buf, sizeof buf));
  const arch_info *arch = NULL;
  for (size_t i = 0; i < sizeof ARCHS / sizeof *ARCHS; i++)
    if (strcmp(type->valuestring, ARCHS[i].model_type) == 0) arch = &ARCHS[i];
  if (!arch)
    return mkc_error_in(c->where,
                        "unsupported model_type %s (mkc reads llama, mistral, mixtral, qwen2, "
                        "qwen3, qwen3_moe, phi3, granite, granitemoe, gemma, gemma2, "
                        "gemma3_text, gemma3, smollm3, exaone4)",
                        mkc_json_describe(type, buf, sizeof buf));
  snprintf(d->arch, sizeof d->arch, "%s", arch->arch);
  name_from_dir(dir_name, arch->arch, d->name, sizeof d->name);
  d->rope_layout = arch->rope_layout;
  d->qkv_bias = arch->qkv_bias;
  d->qk_norm = arch->qk_norm;
  int gemma = mkc_gemma_version(arch->arch), smollm3 = strcmp(arch->arch, "smollm3") == 0;
  int exaone4 = strcmp(arch->arch, "exaone4") == 0;

  /* A multimodal Gemma 3 describes its language model in text_config. */
  char where[4200];
  config text = *c;
  if (strcmp(arch->model_type, "gemma3") == 0) {
    const cJSON *tc = field(c, c->root, "text_config");
    if (!cJSON_IsObject(tc))
      return mkc_error_in(c->where, "\"text_config\": Expected an object, Actual %s",
                          tc ? mkc_json_describe(tc, buf, sizeof buf) : "nothing");
    snprintf(where, sizeof where, "%s: text_config", c->where);
    text = (config){tc, where};
  }
  const config *t = &text;
  const int *sz = arch->sizes;
  if (get_int(t, "hidden_size", sz ? sz[0] : -1, 1, &d->dim) ||
      get_int(t, "num_hidden_layers", sz ? sz[1] : -1, 1, &d->n_layers) ||
      get_int(t, "num_attention_heads", sz ? sz[2] : -1, 1, &d->n_heads) ||
      get_int(t, "intermediate_size", sz ? sz[3] : -1, 1, &d->ffn) ||
      get_int(t, "vocab_size", sz ? sz[4] : -1, 1, &d->vocab) ||
      get_int(t, "num_key_value_heads",
              gemma > 1 || smollm3 ? 4
              : gemma              ? 16
                                   : d->n_heads,
              1, &d->n_kv_heads) ||
      get_int(t, "max_position_embeddings", arch->ctx_default, 1, &d->ctx_train))
    return -1;
  if (!gemma && !field(t, t->root, "head_dim") && d->dim % d->n_heads)
    return mkc_error_in(
        t->where, "hidden_size %d is not a multiple of num_attention_heads %d (and no head_dim)",
        d->dim, d->n_heads);
  if (get_int(t, "head_dim", gemma ? 256 : d->dim / d->n_heads, 1, &d->head_dim)) return -1;
  if (d->head_dim % 2)
    return mkc_error_in(t->where, "head_dim %d is odd (RoPE rotates pairs)", d->head_dim);
  if (d->n_heads % d->n_kv_heads)
    return mkc_error_in(t->where,
                        "num_attention_heads %d is not a multiple of num_key_value_heads %d",
                        d->n_heads, d->n_kv_heads);

  /* transformers 5 moves rope_theta and the scaling into rope_parameters (Gemma 3: the global
   * layers' under full_attention). */
  const cJSON *params = field(t, t->root, "rope_parameters");
  if (gemma == 3 && params && cJSON_IsObject(params) &&
      (field(t, params, "full_attention") || field(t, params, "sliding_attention")))
    params = field(t, params, "full_attention");
  mkc_rope_scaling scaling;
  if (read_partial(t, d->rope_layout == MKC_ROPE_NEOX, d)) return -1;
  int pairs = (d->rope_dim ? d->rope_dim : d->head_dim) / 2;
  if (read_rope(t, field(t, t->root, "rope_scaling"), "rope_scaling", d->ctx_train, pairs,
                &d->rope_scaling) ||
      read_rope(t, params, "rope_parameters", d->ctx_train, pairs, &scaling) ||
      get_positive(t, t->root, "rope_theta",
                   gemma == 3 ? 1e6
                   : smollm3  ? 2e6
                              : 10000,
                   &d->rope_theta) ||
      (!field(t, t->root, "rope_theta") && params &&
       get_positive(t, params, "rope_theta", d->rope_theta, &d->rope_theta)) ||
      get_positive(t, t->root, "rms_norm_eps", exaone4 ? 1e-5 : 1e-6, &d->norm_eps) ||
      get_bool(c, "tie_word_embeddings", gemma || smollm3, &d->tied))
    return -1;
  if (scaling.type != MKC_ROPE_SCALING_NONE) d->rope_scaling = scaling; /* the newer key wins */

  const cJSON *act = field(t, t->root, "hidden_act");
  if (!gemma && act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
    return mkc_error_in(t->where, "unsupported hidden_act %s (mkc's MLP is SwiGLU with silu)",
                        mkc_json_describe(act, buf, sizeof buf));
  int attention_bias = 0, mlp_bias = 0;
  if (get_bool(t, "attention_bias", 0, &attention_bias) || get_bool(t, "mlp_bias", 0, &mlp_bias))
    return -1;
  if (attention_bias && !arch->qkv_bias)
    return mkc_error_in(t->where, "unsupported attention_bias true (the graph has no o_proj bias)");
  if (mlp_bias)
    return mkc_error_in(t->where, "unsupported mlp_bias true (the graph has no MLP biases)");
  if (gemma) return read_gemma(t, gemma, d);
  if (mkc_granite_family(arch->arch) && read_granite(t, d)) return -1;
  if (smollm3 && read_nope(t, d)) return -1;
  if (exaone4) return read_exaone4(t, d);
  if (read_experts(t, arch, d)) return -1;

  /* Sliding-window attention equals full attention while the context fits
   * the window, so mkc claims no more context than the window. */
  int window = 0, use_window = strcmp(arch->model_type, "mistral") == 0 ||
                               strcmp(arch->model_type, "mixtral") == 0 ||
                               strcmp(arch->model_type, "phi3") == 0;
  if ((!use_window && get_bool(t, "use_sliding_window", 0, &use_window)) ||
      (use_window && get_int(t, "sliding_window", 0, 0, &window)))
    return -1;
  if (window > 0 && window < d->ctx_train) d->ctx_train = window;
  return 0;
}

int mkc_hf_config_parse(const char *text, size_t len, const char *where, const char *dir_name,
                        mkc_model_desc *d) {
  char *copy = malloc(len + 1); /* cJSON gets a NUL-terminated copy */
  if (!copy) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", where);
    return -1;
  }
  memcpy(copy, text, len);
  copy[len] = '\0';
  const char *end = NULL;
  config c = {cJSON_ParseWithLengthOpts(copy, len, &end, 0), where};
  int rc;
  if (!c.root)
    rc = mkc_error_in(c.where, "not valid JSON (at byte %zu)",
                      end ? (size_t)(end - copy) : (size_t)0);
  else
    rc = parse(&c, dir_name, d);
  cJSON_Delete((cJSON *)c.root);
  free(copy);
  return rc;
}

int mkc_hf_config_read(const char *dir, mkc_model_desc *d) {
  size_t n = strlen(dir), len = 0;
  char *path = malloc(n + sizeof "/config.json");
  if (!path) return -1;
  snprintf(path, n + sizeof "/config.json", "%s%s", dir,
           n && dir[n - 1] == '/' ? "config.json" : "/config.json");
  char *text = mkc_read_file(path, &len);
  int rc;
  if (!text) {
    fprintf(stderr, "mkc: error: %s: cannot read: %s\n", path, strerror(errno));
    rc = -1;
  } else {
    char *full = realpath(dir, NULL); /* "." has a name too */
    rc = mkc_hf_config_parse(text, len, path, full ? full : dir, d);
    free(full);
    if (rc == 0) rc = mkc_st_pooling_read(dir, &d->pooling);
  }
  free(text);
  free(path);
  return rc;
}
