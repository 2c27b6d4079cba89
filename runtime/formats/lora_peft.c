/* LoRA adapters as Hugging Face's PEFT saves them (lora.h): a folder of
 * adapter_config.json and adapter_model.safetensors, read whole at open. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "lora.h"
#include "safetensors.h"
#include "util/files.h"
#include "util/mapped.h"
#include "util/text.h"

static const char PREFIX[] = "base_model.model.", SUFFIX_A[] = ".lora_A.weight",
                  SUFFIX_B[] = ".lora_B.weight";

int mkc_lora_peft_config(const char *text, size_t n, const char *path, int *r, double *alpha,
                         int *rslora) {
  cJSON *o = cJSON_ParseWithLength(text, n);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "peft_type"),
              *rv = cJSON_GetObjectItemCaseSensitive(o, "r"),
              *av = cJSON_GetObjectItemCaseSensitive(o, "lora_alpha");
  const char *fault = NULL, *named = NULL;
  static const char *const NOT[] = {"use_dora", "rank_pattern", "alpha_pattern", "modules_to_save"};
  for (size_t k = 0; o && k < sizeof NOT / sizeof *NOT && !named; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, NOT[k]);
    /* given: true, a list or map with something in it, a name */
    if (cJSON_IsTrue(v) || ((cJSON_IsArray(v) || cJSON_IsObject(v)) && v->child) ||
        (cJSON_IsString(v) && *v->valuestring))
      named = NOT[k];
  }
  if (!cJSON_IsObject(o))
    fault = "not a JSON object";
  else if (cJSON_IsString(type) && strcmp(type->valuestring, "LORA") != 0)
    fault = "peft_type is not LORA";
  else if (!cJSON_IsNumber(rv) || rv->valuedouble < 1 || rv->valuedouble != rv->valueint)
    fault = "r: expected the rank, a whole number >= 1";
  else if (!cJSON_IsNumber(av))
    fault = "lora_alpha: expected a number";
  if (!fault && !named) {
    *r = rv->valueint, *alpha = av->valuedouble;
    *rslora = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "use_rslora"));
  }
  cJSON_Delete(o);
  if (named)
    return mkc_error_in(path,
                        "%s: more than a LoRA's low-rank delta, which mkc merges; not "
                        "followed",
                        named);
  return fault ? mkc_error_in(path, "%s", fault) : 0;
}

/* DIR/adapter_config.json through mkc_lora_peft_config. */
static int read_config(const char *dir, int *r, double *alpha, int *rslora) {
  char path[4200];
  snprintf(path, sizeof path, "%s/adapter_config.json", dir);
  size_t n;
  char *text = mkc_read_file(path, &n);
  if (!text) return mkc_error_in(path, "cannot be read: a PEFT adapter's folder holds it");
  int rc = mkc_lora_peft_config(text, n, path, r, alpha, rslora);
  free(text);
  return rc;
}

/* Tensor t ([rows][cols] of F32, F16 or BF16) as floats (malloc'd), or NULL after a message. */
static float *floats_of(const mkc_safetensors *st, const char *path, const mkc_st_tensor *t) {
  int64_t n = t->n_dims == 2 ? t->shape[0] * t->shape[1] : -1;
  int type = t->dtype == MKC_ST_F32    ? MKC_GGML_F32
             : t->dtype == MKC_ST_F16  ? MKC_GGML_F16
             : t->dtype == MKC_ST_BF16 ? MKC_GGML_BF16
                                       : -1;
  if (n < 1 || type < 0)
    return mkc_error_in(path, "tensor '%s': expected a matrix of F32, F16 or BF16",
                        mkc_shown(t->name)),
           NULL;
  float *out = malloc((size_t)n * sizeof *out);
  if (!out) return mkc_error_in(path, "tensor '%s': out of memory", mkc_shown(t->name)), NULL;
  if (mkc_st_read_f32(st, t, out) != 0) free(out), out = NULL;
  return out;
}

/* Tensor a (a .lora_A) and its pair into p under the GGUF name of their module. 0, or -1. */
static int read_pair(const char *path, const mkc_safetensors *st, const mkc_st_tensor *a,
                     const mkc_model_desc *d, mkc_lora_pair *p) {
  size_t len = strlen(a->name), pre = sizeof PREFIX - 1, suf = sizeof SUFFIX_A - 1;
  char hf[512], b_name[560], gguf[256];
  if (strncmp(a->name, PREFIX, pre) != 0 || len - pre - suf + 8 >= sizeof hf)
    return mkc_error_in(path, "tensor '%s': expected %sMODULE%s", mkc_shown(a->name), PREFIX,
                        SUFFIX_A);
  snprintf(hf, sizeof hf, "%.*s.weight", (int)(len - pre - suf), a->name + pre);
  snprintf(b_name, sizeof b_name, "%.*s%s", (int)(len - suf), a->name, SUFFIX_B);
  const mkc_st_tensor *b = mkc_st_find(st, b_name);
  if (!b) return mkc_error_in(path, "tensor '%s': its lora_B is missing", mkc_shown(a->name));
  if (mkc_gguf_name_from_hf(d->arch, hf, gguf, sizeof gguf) != 0)
    return mkc_error_in(path, "tensor '%s': %s names no matrix of a %s model", mkc_shown(a->name),
                        hf, d->arch);
  if (a->n_dims != 2 || b->n_dims != 2 || a->shape[0] != b->shape[1])
    return mkc_error_in(path, "tensor '%s': lora_A [r][in] and lora_B [out][r] do not agree",
                        mkc_shown(a->name));
  *p = (mkc_lora_pair){.name = strdup(gguf),
                       .rank = (int)a->shape[0],
                       .rows = (int)b->shape[0],
                       .cols = (int)a->shape[1]};
  p->a = floats_of(st, path, a);
  float *hf_b = p->a ? floats_of(st, path, b) : NULL;
  int heads = mkc_hf_rope_heads(gguf, d);
  if (hf_b && heads) { /* B's output rows in the GGUF layout, as the model's Q/K rows are */
    p->b = malloc((size_t)p->rows * p->rank * sizeof *p->b);
    /* a row of rank floats moves as 2 * rank halves: the permutation copies rows whole */
    if (p->b && mkc_hf_permute_rows((uint16_t *)p->b, (const uint16_t *)hf_b, p->rows, 2 * p->rank,
                                    heads, 0) != 0) {
      free(hf_b);
      return mkc_error_in(path, "tensor '%s': %d rows are not %d heads' (Q/K rows)",
                          mkc_shown(b->name), p->rows, heads);
    }
    free(hf_b);
    if (!p->b) return mkc_error_in(path, "out of memory");
  } else {
    p->b = hf_b;
  }
  if (!p->a || !p->b) return -1; /* floats_of said why */
  return p->name ? 0 : mkc_error_in(path, "out of memory");
}

int mkc_lora_peft_pairs(const mkc_safetensors *st, const char *path, int r, float scale,
                        const mkc_model_desc *d, mkc_lora *l) {
  int n = mkc_st_count(st), rc = 0;
  l->pairs = calloc((size_t)n + 1, sizeof *l->pairs);
  if (!l->pairs) rc = mkc_error_in(path, "out of memory");
  for (int i = 0; rc == 0 && i < n; i++) {
    const mkc_st_tensor *t = mkc_st_tensor_at(st, i);
    size_t len = strlen(t->name);
    int a = len > sizeof SUFFIX_A && !strcmp(t->name + len - (sizeof SUFFIX_A - 1), SUFFIX_A);
    int b = len > sizeof SUFFIX_B && !strcmp(t->name + len - (sizeof SUFFIX_B - 1), SUFFIX_B);
    if (!a && !b)
      rc = mkc_error_in(path, "tensor '%s': not a .lora_A or .lora_B weight", mkc_shown(t->name));
    else if (a && (rc = read_pair(path, st, t, d, &l->pairs[l->n_pairs])) == 0) {
      mkc_lora_pair *p = &l->pairs[l->n_pairs++];
      int rank = r > 0 ? r : p->rank;
      p->s = (float)(scale * l->alpha / (l->rslora ? sqrt(rank) : rank)); /* PEFT's scaling */
      if (p->rank != rank)
        rc = mkc_error_in(path, "tensor '%s': rank %d, where adapter_config.json's r is %d",
                          mkc_shown(t->name), p->rank, r);
    } else if (a) { /* a half-read pair is the close's to free */
      l->n_pairs++;
    }
  }
  return rc;
}

int mkc_lora_open_peft(const char *dir, float scale, const mkc_model_desc *d, mkc_lora *l) {
  memset(l, 0, sizeof *l);
  int r = 0;
  double alpha = 0;
  if (read_config(dir, &r, &alpha, &l->rslora) != 0) return -1;
  char path[4200];
  snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
  mkc_safetensors *st = mkc_st_open(path);
  if (!st) return -1;
  l->path = dir, l->scale = scale, l->alpha = alpha;
  mkc_mapped_test_pause("MKC_TEST_PAUSE_BEFORE_ADAPTER");
  int rc = mkc_lora_peft_pairs(st, path, r, scale, d, l);
  mkc_st_close(st);
  if (rc) mkc_lora_close(l);
  return rc;
}
