/* The safetensors writer, for tests and fixtures: tensors from floats or raw
 * bytes, and an mkc_weights store written back as an HF checkpoint. */
#include "hf.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "fused.h"
#include "util/files.h"

static int out_error(const char *path, const char *what, const char *name) {
  fprintf(stderr, "mkc: error: %s: tensor '%s': %s\n", path, name ? name : "(null)", what);
  return -1;
}

/* t's bytes in its dtype: t->raw, or *owned (malloc'd) encoded from floats. */
static const void *encode(const char *path, const mkc_st_out *t, uint64_t n_elems, void **owned) {
  *owned = NULL;
  if (!t->values) return t->raw;
  size_t n = (size_t)n_elems;
  if (t->dtype == MKC_ST_F32) return t->values;
  if (t->dtype != MKC_ST_F16 && t->dtype != MKC_ST_BF16) {
    out_error(path, "floats can be written as F32, F16 or BF16 only", t->name);
    return NULL;
  }
  uint8_t *p = malloc(n ? 2 * n : 1);
  if (!p) {
    out_error(path, "out of memory", t->name);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    uint16_t h =
        t->dtype == MKC_ST_F16 ? mkc_float_to_f16(t->values[i]) : mkc_float_to_bf16(t->values[i]);
    p[2 * i] = (uint8_t)h;
    p[2 * i + 1] = (uint8_t)(h >> 8);
  }
  *owned = p;
  return p;
}

int mkc_st_write(const char *path, const mkc_st_out *tensors, int n) {
  int rc = -1;
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  const void **parts = calloc((size_t)n + 2, sizeof *parts);
  size_t *sizes = calloc((size_t)n + 2, sizeof *sizes);
  void **owned = calloc((size_t)n + 1, sizeof *owned);
  char *text = NULL;
  if (!root || !meta || !parts || !sizes || !owned) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    goto done;
  }
  cJSON_AddItemToObject(root, "__metadata__", meta);
  cJSON_AddStringToObject(meta, "format", "pt");
  meta = NULL;
  uint64_t offset = 0;
  for (int i = 0; i < n; i++) {
    const mkc_st_out *t = &tensors[i];
    int size = mkc_st_dtype_size(t->dtype);
    if (!t->name || !size || t->n_dims < 0 || t->n_dims > MKC_ST_MAX_DIMS ||
        (!t->values && !t->raw)) {
      out_error(path, "needs a name, a known dtype, 0..8 dims and values or raw bytes", t->name);
      goto done;
    }
    uint64_t n_elems = 1;
    for (int d = 0; d < t->n_dims; d++) n_elems *= (uint64_t)t->shape[d];
    if (!(parts[i + 2] = encode(path, t, n_elems, &owned[i]))) goto done;
    sizes[i + 2] = (size_t)(n_elems * (uint64_t)size);
    cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *range = cJSON_CreateArray();
    cJSON_AddItemToObject(root, t->name, e); /* a repeated name is written twice */
    cJSON_AddStringToObject(e, "dtype", mkc_st_dtype_name(t->dtype));
    cJSON_AddItemToObject(e, "shape", shape);
    cJSON_AddItemToObject(e, "data_offsets", range);
    for (int d = 0; d < t->n_dims; d++)
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
    cJSON_AddItemToArray(range, cJSON_CreateNumber((double)offset));
    offset += sizes[i + 2];
    cJSON_AddItemToArray(range, cJSON_CreateNumber((double)offset));
  }
  char *json = cJSON_PrintUnformatted(root);
  size_t len = json ? strlen(json) : 0, padded = (len + 7) / 8 * 8;
  if (!json || !(text = malloc(padded + 1))) {
    free(json);
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    goto done;
  }
  memcpy(text, json, len);
  memset(text + len, ' ', padded - len);
  free(json);
  uint8_t header_len[8];
  for (int b = 0; b < 8; b++) header_len[b] = (uint8_t)((uint64_t)padded >> (8 * b));
  parts[0] = header_len;
  sizes[0] = 8;
  parts[1] = text;
  sizes[1] = padded;
  rc = mkc_write_atomic(path, parts, sizes, n + 2);
done:
  for (int i = 0; owned && i < n; i++) free(owned[i]);
  free(owned);
  free(parts);
  free(sizes);
  free(text);
  cJSON_Delete(meta);
  cJSON_Delete(root);
  return rc;
}

/* phi3: each layer's q/k/v_proj as one qkv_proj and its gate/up_proj as one
 * gate_up_proj (rows one after another, in that order), as Phi3ForCausalLM
 * stores them. *n shrinks; each fused matrix's values go to *owned (freed by
 * the caller with the rest). 0, or -1 when out of memory. */
static int fuse_phi3(mkc_st_out *out, int *n, char (*names)[512], float **owned, int n_layers) {
  int n_owned = 0;
  for (int l = 0; l < n_layers; l++)
    for (int g = 0; g < MKC_FUSED_GROUPS; g++) {
      const mkc_fused_group *group = &MKC_PHI3_FUSED[g];
      int at[MKC_FUSED_MAX_PARTS], rows = 0;
      for (int p = 0; p < group->n_parts; p++) {
        char name[512];
        snprintf(name, sizeof name, "model.layers.%d.%s", l, group->hf_parts[p]);
        at[p] = -1;
        for (int k = 0; k < *n; k++)
          if (out[k].name && strcmp(out[k].name, name) == 0) at[p] = k;
        if (at[p] < 0) return 0; /* not a phi3-shaped layer: left as it is */
        rows += (int)out[at[p]].shape[0];
      }
      int64_t cols = out[at[0]].shape[1];
      float *v = malloc((size_t)rows * (size_t)cols * sizeof *v), *to = v;
      if (!v) return -1;
      owned[n_owned++] = v;
      for (int p = 0; p < group->n_parts; p++) {
        size_t count = (size_t)out[at[p]].shape[0] * (size_t)cols;
        memcpy(to, out[at[p]].values, count * sizeof *to);
        to += count;
        if (p) out[at[p]].name = NULL; /* dropped below */
      }
      snprintf(names[at[0]], sizeof names[at[0]], "model.layers.%d.%s", l, group->hf);
      out[at[0]].shape[0] = rows;
      out[at[0]].values = v;
    }
  int kept = 0;
  for (int k = 0; k < *n; k++)
    if (out[k].name) out[kept++] = out[k];
  *n = kept;
  return 0;
}

/* An experts' matrix t ([experts * rows][cols]) as d->n_experts tensors, expert e's rows
 * under its HF name, appended at out[*n_out] (names alike); its floats in *values. */
static int split_experts(const char *path, const mkc_tensor *t, const mkc_model_desc *d, int dtype,
                         mkc_st_out *out, char (*names)[512], int *n_out, float **values) {
  int E = d->n_experts, rows = E > 0 ? t->rows / E : 0;
  size_t count = (size_t)t->rows * (size_t)t->cols, each = (size_t)rows * (size_t)t->cols;
  if (E <= 0 || rows * E != t->rows) return out_error(path, "not the rows of its experts", t->name);
  float *v = *values = malloc((count ? count : 1) * sizeof *v);
  if (!v) return out_error(path, "out of memory", t->name);
  for (size_t i = 0; i < count; i++) v[i] = mkc_bf16_to_float(t->data[i]);
  for (int e = 0; e < E; e++) {
    int at = (*n_out)++;
    if (mkc_hf_expert_name(d->arch, t->name, e, names[at], sizeof names[at]))
      return out_error(path, "has no Hugging Face name", t->name);
    out[at] = (mkc_st_out){names[at], dtype, 2, {rows, t->cols}, v + (size_t)e * each, NULL};
  }
  return 0;
}

/* An experts' matrix t as the checkpoint's one tensor of every expert (mkc_hf_experts_fused):
 * [experts][parts * rows][cols], expert e's gate rows then its up rows (parts 2: the up matrix
 * found in w by name) or its down rows (parts 1), into *o (named name), floats in *values. */
static int join_experts(const char *path, const mkc_weights *w, const mkc_tensor *t,
                        const mkc_model_desc *d, int parts, int dtype, mkc_st_out *o,
                        const char *name, float **values) {
  int E = d->n_experts, rows = E > 0 ? t->rows / E : 0;
  const mkc_tensor *part[2] = {t, NULL};
  if (parts == 2) {
    char up[256];
    const char *at = strstr(t->name, "ffn_gate_exps");
    if (at) snprintf(up, sizeof up, "%.*sffn_up_exps%s", (int)(at - t->name), t->name, at + 13);
    for (int k = 0; at && k < w->n && !part[1]; k++)
      if (strcmp(w->t[k].name, up) == 0) part[1] = &w->t[k];
    if (!part[1] || part[1]->rows != t->rows || part[1]->cols != t->cols)
      return out_error(path, "has no up matrix of its shape to be stored with", t->name);
  }
  if (E <= 0 || rows * E != t->rows) return out_error(path, "not the rows of its experts", t->name);
  size_t each = (size_t)rows * (size_t)t->cols;
  float *v = *values = malloc((size_t)parts * E * each * sizeof *v + 1);
  if (!v) return out_error(path, "out of memory", t->name);
  for (int e = 0; e < E; e++)
    for (int p = 0; p < parts; p++)
      for (size_t i = 0; i < each; i++)
        v[((size_t)e * parts + (size_t)p) * each + i] =
            mkc_bf16_to_float(part[p]->data[(size_t)e * each + i]);
  *o = (mkc_st_out){name, dtype, 3, {E, (int64_t)parts * rows, t->cols}, v, NULL};
  return 0;
}

int mkc_st_write_weights(const char *path, const mkc_weights *w, const mkc_model_desc *d,
                         int dtype) {
  /* room for each experts' matrix as one tensor an expert (d->n_experts, after the others) */
  int experts = 0;
  char probe[512];
  for (int k = 0; k < w->n; k++)
    experts += mkc_hf_expert_name(d->arch, w->t[k].name, 0, probe, sizeof probe) == 0;
  int n = w->n + experts * d->n_experts + 1, n_out = w->n;
  mkc_st_out *out = calloc((size_t)n, sizeof *out);
  char(*names)[512] = calloc((size_t)n, sizeof *names);
  /* every buffer of values, freed at the end: the tensors', then the fused matrices' */
  float **owned = calloc((size_t)n + 2 * (size_t)d->n_layers, sizeof *owned);
  int rc = -1;
  if (!out || !names || !owned) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    goto done;
  }
  for (int k = 0; k < w->n; k++) {
    const mkc_tensor *t = &w->t[k];
    size_t count = (size_t)t->rows * (size_t)t->cols;
    if (mkc_hf_expert_name(d->arch, t->name, 0, probe, sizeof probe) == 0) {
      if (split_experts(path, t, d, dtype, out, names, &n_out, &owned[k])) goto done;
      continue;
    }
    int part, parts;
    if (mkc_hf_experts_fused(d->arch, t->name, names[k], sizeof names[k], &part, &parts) == 0) {
      /* up goes with its gate */
      if (part == 0 && join_experts(path, w, t, d, parts, dtype, &out[k], names[k], &owned[k]))
        goto done;
      continue;
    }
    if (mkc_hf_name(d->arch, t->name, names[k], sizeof names[k])) {
      out_error(path, "has no Hugging Face name", t->name);
      goto done;
    }
    uint16_t *hf = malloc((count ? count : 1) * sizeof *hf);
    float *values = owned[k] = malloc((count ? count : 1) * sizeof *values);
    out[k] = (mkc_st_out){names[k], dtype, t->rows == 1 ? 1 : 2, {0}, values, NULL};
    if (!hf || !values) {
      free(hf);
      out_error(path, "out of memory", t->name);
      goto done;
    }
    out[k].shape[0] = t->rows == 1 ? t->cols : t->rows;
    out[k].shape[1] = t->cols;
    int heads = mkc_hf_rope_heads(t->name, d);
    int n_rows = t->rows == 1 ? t->cols : t->rows, row_len = t->rows == 1 ? 1 : t->cols;
    if (!heads)
      memcpy(hf, t->data, count * sizeof *hf);
    else if (mkc_hf_permute_rows(hf, t->data, n_rows, row_len, heads, 1)) {
      free(hf);
      out_error(path, "rows are not a whole number of heads of an even head_dim", t->name);
      goto done;
    }
    float offset = mkc_hf_norm_offset(t->name, d) ? 1.0f : 0.0f; /* Gemma's norms: scale - 1 */
    for (size_t i = 0; i < count; i++) values[i] = mkc_bf16_to_float(hf[i]) - offset;
    free(hf);
  }
  int kept = 0; /* the experts' matrices' places, left empty */
  for (int k = 0; k < n_out; k++)
    if (out[k].name) out[kept++] = out[k];
  n_out = kept;
  if (strcmp(d->arch, "phi3") == 0 && fuse_phi3(out, &n_out, names, owned + w->n, d->n_layers)) {
    fprintf(stderr, "mkc: error: %s: out of memory\n", path);
    goto done;
  }
  rc = mkc_st_write(path, out, n_out);
done:
  for (int i = 0; owned && i < w->n + 2 * d->n_layers; i++) free(owned[i]); /* NULL if unset */
  free(owned);
  free(out);
  free(names);
  return rc;
}
