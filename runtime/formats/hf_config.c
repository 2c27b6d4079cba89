/* A Hugging Face config.json as an mkc_model_desc: the fields transformers'
 * LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config define, with their
 * defaults, and a refusal for anything the llama graph does not compute
 * (RoPE scalings other than linear, llama3 and yarn, other activations,
 * biases it has no weight for). */
#include "hf.h"
#include "util/text.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/files.h"

/* What each model_type fixes. HF stores Q/K rows for rotate-half RoPE;
 * llama.cpp's llama and mistral GGUFs permute them for interleaved RoPE,
 * which is the layout mkc loads them into; qwen2 and qwen3 keep HF's. */
typedef struct arch_info {
  const char *model_type;
  int rope_layout; /* enum mkc_rope_layout mkc uses for it */
  int qkv_bias;    /* q/k/v projections always have a bias */
  int qk_norm;     /* per-head RMSNorm of q and k before RoPE */
  int ctx_default; /* max_position_embeddings when absent */
} arch_info;

static const arch_info ARCHS[] = {
    {"llama", MKC_ROPE_INTERLEAVED, 0, 0, 2048},
    {"mistral", MKC_ROPE_INTERLEAVED, 0, 0, 4096 * 32},
    {"qwen2", MKC_ROPE_NEOX, 1, 0, 32768},
    {"qwen3", MKC_ROPE_NEOX, 0, 1, 32768},
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

/* rope_scaling (or transformers 5's rope_parameters) as mkc's scaling:
 * default (plain), linear, llama3 or yarn, each with the parameters
 * transformers' _compute_*_parameters read; max_pos is
 * max_position_embeddings. */
static int read_rope(const config *c, const cJSON *obj, const char *key, int max_pos,
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
  s->type = mkc_rope_scaling_from_name(name);
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
  default:
    return mkc_error_in(c->where,
                        "unsupported %s \"%.40s\" (mkc runs default, linear, llama3 and yarn)", key,
                        mkc_shown(name));
  }
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
                        "unsupported model_type %s (mkc reads llama, mistral, qwen2, qwen3)",
                        mkc_json_describe(type, buf, sizeof buf));
  snprintf(d->arch, sizeof d->arch, "%s", arch->model_type);
  name_from_dir(dir_name, arch->model_type, d->name, sizeof d->name);
  d->rope_layout = arch->rope_layout;
  d->qkv_bias = arch->qkv_bias;
  d->qk_norm = arch->qk_norm;

  if (get_int(c, "hidden_size", -1, 1, &d->dim) ||
      get_int(c, "num_hidden_layers", -1, 1, &d->n_layers) ||
      get_int(c, "num_attention_heads", -1, 1, &d->n_heads) ||
      get_int(c, "intermediate_size", -1, 1, &d->ffn) ||
      get_int(c, "vocab_size", -1, 1, &d->vocab) ||
      get_int(c, "num_key_value_heads", d->n_heads, 1, &d->n_kv_heads) ||
      get_int(c, "max_position_embeddings", arch->ctx_default, 1, &d->ctx_train))
    return -1;
  if (!field(c, c->root, "head_dim") && d->dim % d->n_heads)
    return mkc_error_in(
        c->where, "hidden_size %d is not a multiple of num_attention_heads %d (and no head_dim)",
        d->dim, d->n_heads);
  if (get_int(c, "head_dim", d->dim / d->n_heads, 1, &d->head_dim)) return -1;
  if (d->head_dim % 2)
    return mkc_error_in(c->where, "head_dim %d is odd (RoPE rotates pairs)", d->head_dim);
  if (d->n_heads % d->n_kv_heads)
    return mkc_error_in(c->where,
                        "num_attention_heads %d is not a multiple of num_key_value_heads %d",
                        d->n_heads, d->n_kv_heads);

  /* transformers 5 moves rope_theta and the scaling into rope_parameters. */
  const cJSON *params = field(c, c->root, "rope_parameters");
  mkc_rope_scaling scaling;
  if (read_rope(c, field(c, c->root, "rope_scaling"), "rope_scaling", d->ctx_train,
                &d->rope_scaling) ||
      read_rope(c, params, "rope_parameters", d->ctx_train, &scaling) ||
      get_positive(c, c->root, "rope_theta", 10000, &d->rope_theta) ||
      (!field(c, c->root, "rope_theta") && params &&
       get_positive(c, params, "rope_theta", 10000, &d->rope_theta)) ||
      get_positive(c, c->root, "rms_norm_eps", 1e-6, &d->norm_eps) ||
      get_bool(c, "tie_word_embeddings", 0, &d->tied))
    return -1;
  if (scaling.type != MKC_ROPE_SCALING_NONE) d->rope_scaling = scaling; /* the newer key wins */

  const cJSON *act = field(c, c->root, "hidden_act");
  if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
    return mkc_error_in(c->where, "unsupported hidden_act %s (mkc's MLP is SwiGLU with silu)",
                        mkc_json_describe(act, buf, sizeof buf));
  int attention_bias = 0, mlp_bias = 0;
  if (get_bool(c, "attention_bias", 0, &attention_bias) || get_bool(c, "mlp_bias", 0, &mlp_bias))
    return -1;
  if (attention_bias && !arch->qkv_bias)
    return mkc_error_in(c->where, "unsupported attention_bias true (the graph has no o_proj bias)");
  if (mlp_bias)
    return mkc_error_in(c->where, "unsupported mlp_bias true (the graph has no MLP biases)");

  /* Sliding-window attention equals full attention while the context fits
   * the window, so mkc claims no more context than the window. */
  int window = 0, use_window = strcmp(arch->model_type, "mistral") == 0;
  if ((!use_window && get_bool(c, "use_sliding_window", 0, &use_window)) ||
      (use_window && get_int(c, "sliding_window", 0, 0, &window)))
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
  }
  free(text);
  free(path);
  return rc;
}
