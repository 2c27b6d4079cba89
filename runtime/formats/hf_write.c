/* A model as a Hugging Face folder: config.json and model.safetensors, the
 * inverse of mkc_hf_config_read + mkc_st_load_weights (for `mkc init` and
 * the tests that compare formats). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "util/files.h"
#include "hf.h"
#include "safetensors.h"

/* LongRoPE's lists and original context, in rope_scaling r and, as Phi-3's configs carry it
 * (and transformers reads it first), in config c; attention_factor only where it is not what
 * transformers derives from max_position_embeddings max_pos. */
static void add_longrope(cJSON *c, cJSON *r, const mkc_rope_scaling *s, int max_pos) {
  const struct {
    const char *key;
    const double *v;
  } lists[] = {{"short_factor", s->short_factor}, {"long_factor", s->long_factor}};
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
    cJSON_AddItemToObject(r, lists[i].key, cJSON_CreateDoubleArray(lists[i].v, s->n_factors));
  cJSON_AddNumberToObject(r, "original_max_position_embeddings", s->orig_ctx);
  cJSON_AddNumberToObject(c, "original_max_position_embeddings", s->orig_ctx);
  double factor = (double)max_pos / s->orig_ctx;
  double derived = factor <= 1 ? 1 : sqrt(1 + log(factor) / log(s->orig_ctx));
  if (fabs(s->attn_factor - derived) > 1e-6 * derived)
    cJSON_AddNumberToObject(r, "attention_factor", s->attn_factor);
}

/* rope_scaling as transformers reads it back into s (hf_config.c), or null;
 * YaRN's attention_factor is written only where attn_factor is not 1. */
static void add_rope_scaling(cJSON *c, const mkc_rope_scaling *s, int max_pos) {
  if (s->type == MKC_ROPE_SCALING_NONE) {
    cJSON_AddNullToObject(c, "rope_scaling");
    return;
  }
  cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
  if (!r) return;
  cJSON_AddStringToObject(r, "rope_type", mkc_rope_scaling_name(s->type));
  if (s->type == MKC_ROPE_SCALING_LONGROPE) {
    add_longrope(c, r, s, max_pos);
    return;
  }
  cJSON_AddNumberToObject(r, "factor", s->factor);
  if (s->type == MKC_ROPE_SCALING_LINEAR) return;
  cJSON_AddNumberToObject(r, "original_max_position_embeddings", s->orig_ctx);
  if (s->type == MKC_ROPE_SCALING_LLAMA3) {
    cJSON_AddNumberToObject(r, "low_freq_factor", s->low_freq_factor);
    cJSON_AddNumberToObject(r, "high_freq_factor", s->high_freq_factor);
    return;
  }
  cJSON_AddNumberToObject(r, "beta_fast", s->beta_fast);
  cJSON_AddNumberToObject(r, "beta_slow", s->beta_slow);
  if (s->attn_factor != 1)
    cJSON_AddNumberToObject(r, "attention_factor",
                            s->attn_factor * (s->factor > 1 ? 1 + 0.1 * log(s->factor) : 1));
}

/* layer_types: "sliding_attention" where a layer's attention has d's window, else
 * "full_attention" (every layer without a window). */
static void add_layer_types(cJSON *c, const mkc_model_desc *d) {
  cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
  int period = d->swa_local + d->swa_global;
  for (int l = 0; types && l < d->n_layers; l++) {
    int local = d->sliding_window && (d->swa_global == 0 || l % period < d->swa_local);
    cJSON_AddItemToArray(types, cJSON_CreateString(local ? "sliding_attention" : "full_attention"));
  }
}

/* Gemma's keys (GemmaConfig: its activation; Gemma2Config, Gemma3TextConfig; hf_config.c:
 * read_gemma): the window on the layers layer_types calls
 * sliding_attention, and, for transformers before 4.53, which read no
 * layer_types, Gemma 3's sliding_window_pattern where it can say it (one
 * global layer a period). Without a window, every layer is full_attention.
 * The soft caps, null for none. */
static void add_gemma(cJSON *c, const mkc_model_desc *d) {
  int gemma = mkc_gemma_version(d->arch), gemma3 = gemma == 3;
  cJSON_AddStringToObject(c, "hidden_activation", "gelu_pytorch_tanh");
  if (gemma == 1) { /* GemmaConfig: its activation only, under transformers 5's key too */
    cJSON_AddStringToObject(c, "hidden_act", "gelu_pytorch_tanh");
    return;
  }
  cJSON_AddNumberToObject(c, "query_pre_attn_scalar",
                          d->attn_scale > 0 ? 1 / (d->attn_scale * d->attn_scale) : d->head_dim);
  cJSON_AddNumberToObject(c, "sliding_window",
                          d->sliding_window ? d->sliding_window : d->ctx_train);
  if (gemma3 && d->sliding_window && d->swa_global == 1)
    cJSON_AddNumberToObject(c, "sliding_window_pattern", d->swa_local + 1);
  if (gemma3)
    cJSON_AddNumberToObject(c, "rope_local_base_freq",
                            d->rope_theta_swa > 0 ? d->rope_theta_swa : 10000);
  add_layer_types(c, d);
  const struct {
    const char *key;
    double cap;
  } caps[] = {{"final_logit_softcapping", d->final_softcap},
              {"attn_logit_softcapping", d->attn_softcap}};
  for (int i = 0; i < 2; i++) {
    char num[64]; /* a float, 30.0 rather than 30: transformers 5 checks the type */
    snprintf(num, sizeof num, "%.17g", caps[i].cap);
    if (!strpbrk(num, ".e")) strcat(num, ".0");
    if (caps[i].cap > 0)
      cJSON_AddRawToObject(c, caps[i].key, num);
    else
      cJSON_AddNullToObject(c, caps[i].key);
  }
}

/* config.json as transformers writes it for d->arch. */
static char *config_text(const mkc_model_desc *d) {
  cJSON *c = cJSON_CreateObject();
  if (!c) return NULL;
  int gemma = mkc_gemma_version(d->arch);
  int qwen_moe = strcmp(d->arch, "qwen3moe") == 0;
  cJSON_AddStringToObject(c, "model_type",
                          gemma == 3 ? "gemma3_text"
                          : qwen_moe ? "qwen3_moe"
                                     : d->arch);
  const struct {
    const char *key;
    int v;
  } ints[] = {{"hidden_size", d->dim},
              {"num_hidden_layers", d->n_layers},
              {"num_attention_heads", d->n_heads},
              {"num_key_value_heads", d->n_kv_heads},
              {"head_dim", d->head_dim},
              {"intermediate_size", d->ffn},
              {"vocab_size", d->vocab},
              {"max_position_embeddings", d->ctx_train}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    cJSON_AddNumberToObject(c, ints[i].key, ints[i].v);
  cJSON_AddNumberToObject(c, "rope_theta", d->rope_theta);
  cJSON_AddNumberToObject(c, "rms_norm_eps", d->norm_eps);
  cJSON_AddBoolToObject(c, "tie_word_embeddings", d->tied);
  if (gemma)
    add_gemma(c, d);
  else
    cJSON_AddStringToObject(c, "hidden_act", "silu");
  add_rope_scaling(c, &d->rope_scaling, d->ctx_train);
  if (d->rope_dim > 0) /* transformers: int(head_dim * factor) dims (mkc_hf_write checks it) */
    cJSON_AddNumberToObject(c, "partial_rotary_factor", (double)d->rope_dim / d->head_dim);
  if (strcmp(d->arch, "qwen2") != 0) cJSON_AddBoolToObject(c, "attention_bias", 0);
  if (mkc_granite_family(d->arch)) { /* GraniteConfig's multipliers (defaults 1) */
    const struct {
      const char *key;
      double v;
    } mult[] = {{"embedding_multiplier", d->embed_scale},
                {"attention_multiplier", d->attn_scale},
                {"residual_multiplier", d->residual_scale},
                {"logits_scaling", d->logit_scale}};
    for (size_t i = 0; i < sizeof mult / sizeof *mult; i++)
      cJSON_AddNumberToObject(c, mult[i].key, mult[i].v);
  }
  if (qwen_moe) { /* Qwen3MoeConfig: experts in every layer */
    cJSON_AddNumberToObject(c, "num_experts", d->n_experts);
    cJSON_AddNumberToObject(c, "num_experts_per_tok", d->n_experts_used);
    cJSON_AddNumberToObject(c, "moe_intermediate_size", d->expert_ffn);
    cJSON_AddBoolToObject(c, "norm_topk_prob", d->norm_topk);
    cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
    cJSON_AddItemToObject(c, "mlp_only_layers", cJSON_CreateArray());
  } else if (d->n_experts) { /* mixtral, granitemoe: experts intermediate_size wide */
    cJSON_AddNumberToObject(c, "num_local_experts", d->n_experts);
    cJSON_AddNumberToObject(c, "num_experts_per_tok", d->n_experts_used);
    cJSON_ReplaceItemInObject(c, "intermediate_size", cJSON_CreateNumber(d->expert_ffn));
  }
  if (strcmp(d->arch, "exaone4") == 0) { /* Exaone4Config: the window (null for none) and its
                                          * layers, which it cannot derive without one */
    if (d->sliding_window) {
      cJSON_AddNumberToObject(c, "sliding_window", d->sliding_window);
      cJSON_AddNumberToObject(c, "sliding_window_pattern", d->swa_local + d->swa_global);
    } else {
      cJSON_AddNullToObject(c, "sliding_window");
    }
    add_layer_types(c, d);
  } else if (d->nope_interval > 0) { /* SmolLM3Config: 1 where a layer has RoPE */
    cJSON_AddNumberToObject(c, "no_rope_layer_interval", d->nope_interval);
    cJSON *list = cJSON_AddArrayToObject(c, "no_rope_layers");
    for (int l = 0; list && l < d->n_layers; l++)
      cJSON_AddItemToArray(list, cJSON_CreateNumber((l + 1) % d->nope_interval != 0));
  }
  /* Phi3Config's and SmolLM3Config's default pad tokens (32000, 128004) lie past a small
   * vocabulary's table */
  if (strcmp(d->arch, "phi3") == 0 || strcmp(d->arch, "smollm3") == 0)
    cJSON_AddNullToObject(c, "pad_token_id");
  char *text = cJSON_Print(c);
  cJSON_Delete(c);
  return text;
}

int mkc_hf_write(const char *dir, const mkc_model_desc *d, const mkc_weights *w, int dtype) {
  int neox = strcmp(d->arch, "qwen2") == 0 || strncmp(d->arch, "qwen3", 5) == 0 ||
             mkc_gemma_version(d->arch) || strcmp(d->arch, "phi3") == 0 ||
             strcmp(d->arch, "exaone4") == 0;
  if ((d->rope_layout == MKC_ROPE_NEOX) != neox) {
    fprintf(stderr,
            "mkc: error: a %s model with %s RoPE cannot be written as a Hugging Face folder "
            "(config.json has no way to say it); use -o FILE.gguf\n",
            d->arch, d->rope_layout == MKC_ROPE_NEOX ? "NEOX" : "interleaved");
    return -1;
  }
  const mkc_rope_scaling *s = &d->rope_scaling;
  if (s->type == MKC_ROPE_SCALING_YARN && s->ext_factor != 1) {
    fprintf(stderr,
            "mkc: error: YaRN with ext_factor %g cannot be written as a Hugging Face folder "
            "(config.json has no way to say it); use -o FILE.gguf\n",
            s->ext_factor);
    return -1;
  }
  if (d->rope_dim > 0 &&
      (!neox || (int)(d->head_dim * ((double)d->rope_dim / d->head_dim)) != d->rope_dim)) {
    fprintf(stderr,
            "mkc: error: partial RoPE over %d of %d dims cannot be written as a Hugging Face "
            "folder (%s); use -o FILE.gguf\n",
            d->rope_dim, d->head_dim,
            neox ? "partial_rotary_factor does not give it back" : "interleaved pairs");
    return -1;
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "mkc: error: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (mkc_st_write_weights(path, w, d, dtype) != 0) return -1;
  char *text = config_text(d);
  if (!text) {
    fprintf(stderr, "mkc: error: out of memory\n");
    return -1;
  }
  snprintf(path, sizeof path, "%s/config.json", dir);
  const void *parts[] = {text, "\n"};
  size_t sizes[] = {strlen(text), 1};
  int rc = mkc_write_atomic(path, parts, sizes, 2);
  free(text);
  return rc;
}
