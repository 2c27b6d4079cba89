/* Embedding requests (embed_api.h): ollama's two and OpenAI's. */
#include "embed_api.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* Room for n inputs. -1 when out of memory. */
static int inputs(mkc_embed_req *r, int n, char *why, size_t cap) {
  r->texts = calloc((size_t)n + 1, sizeof *r->texts);
  r->ids = calloc((size_t)n + 1, sizeof *r->ids);
  r->n_ids = calloc((size_t)n + 1, sizeof *r->n_ids);
  if (r->texts && r->ids && r->n_ids) return 0;
  snprintf(why, cap, "out of memory");
  return -1;
}

/* "input": a text or a list of texts; OpenAI's also token ids, or lists of them. */
static int read_input(const cJSON *in, mkc_embed_req *r, char *why, size_t cap) {
  int openai = r->kind == MKC_EMBED_OPENAI;
  const char *want = openai ? "a string, a list of strings, a list of token ids or a list of "
                              "such lists"
                            : "a string or a list of strings";
  if (!in || cJSON_IsNull(in)) {
    if (openai) {
      snprintf(why, cap, "input: required (%s)", want);
      return -1;
    }
    return inputs(r, 0, why, cap); /* ollama: no input, no vectors (the model stays loaded) */
  }
  if (cJSON_IsString(in)) {
    if (inputs(r, 1, why, cap)) return -1;
    r->texts[0] = in->valuestring;
    r->n = 1;
    return 0;
  }
  if (!cJSON_IsArray(in)) {
    snprintf(why, cap, "input: expected %s", want);
    return -1;
  }
  int count = cJSON_GetArraySize(in);
  if (openai && count == 0) {
    snprintf(why, cap, "input: an empty list (expected %s)", want);
    return -1;
  }
  /* OpenAI: a list of numbers is one input of token ids */
  if (openai && cJSON_IsNumber(in->child)) {
    if (inputs(r, 1, why, cap) || mkc_api_read_ids(in, "input", &r->ids[0], &r->n_ids[0], why, cap))
      return -1;
    r->n = 1;
    return 0;
  }
  if (inputs(r, count, why, cap)) return -1;
  const cJSON *item;
  cJSON_ArrayForEach(item, in) {
    char name[32];
    snprintf(name, sizeof name, "input[%d]", r->n);
    if (cJSON_IsString(item)) {
      r->texts[r->n] = item->valuestring;
    } else if (openai && cJSON_IsArray(item)) {
      if (mkc_api_read_ids(item, name, &r->ids[r->n], &r->n_ids[r->n], why, cap)) return -1;
      if (r->n_ids[r->n] == 0) {
        snprintf(why, cap, "%s: an empty list of token ids", name);
        return -1;
      }
    } else {
      snprintf(why, cap, "%s: expected %s", name,
               openai ? "a string or a list of token ids" : "a string");
      return -1;
    }
    r->n++;
  }
  return 0;
}

static int read_fields(const cJSON *root, mkc_embed_req *r, char *why, size_t cap) {
  if (r->kind == MKC_EMBED_LEGACY) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    if (p && !cJSON_IsNull(p) && !cJSON_IsString(p)) {
      snprintf(why, cap, "prompt: expected a string");
      return -1;
    }
    const char *text = cJSON_IsString(p) ? p->valuestring : "";
    if (inputs(r, 1, why, cap)) return -1;
    r->texts[0] = text;
    r->n = *text ? 1 : 0; /* ollama: an empty prompt gets an empty embedding */
    return 0;
  }
  if (read_input(cJSON_GetObjectItemCaseSensitive(root, "input"), r, why, cap)) return -1;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "truncate");
  r->truncate = r->kind == MKC_EMBED_OLLAMA;
  if (r->kind == MKC_EMBED_OLLAMA && t && !cJSON_IsNull(t)) {
    if (!cJSON_IsBool(t)) {
      snprintf(why, cap, "truncate: expected true or false");
      return -1;
    }
    r->truncate = cJSON_IsTrue(t);
  }
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "dimensions");
  if (d && !cJSON_IsNull(d)) {
    double v = cJSON_IsNumber(d) ? d->valuedouble : -1;
    if (!(v >= 1 && v <= 1 << 20 && v == (int)v)) {
      snprintf(why, cap, "dimensions: expected a whole number >= 1");
      return -1;
    }
    r->dimensions = (int)v;
  }
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
  if (r->kind == MKC_EMBED_OPENAI && f && !cJSON_IsNull(f)) {
    if (!cJSON_IsString(f) ||
        (strcmp(f->valuestring, "float") != 0 && strcmp(f->valuestring, "base64") != 0)) {
      snprintf(why, cap, "encoding_format: expected \"float\" or \"base64\"");
      return -1;
    }
    r->base64 = strcmp(f->valuestring, "base64") == 0;
  }
  return 0;
}

int mkc_embed_parse(const char *body, size_t n, int kind, mkc_embed_req *r, char *why, size_t cap) {
  memset(r, 0, sizeof *r);
  r->kind = kind;
  cJSON *root = cJSON_ParseWithLength(body, n);
  r->root = root;
  int rc = -1;
  if (!root)
    snprintf(why, cap, "the body is not JSON");
  else if (!cJSON_IsObject(root))
    snprintf(why, cap, "the body is not a JSON object");
  else
    rc = read_fields(root, r, why, cap);
  if (rc) mkc_embed_req_free(r);
  return rc;
}

void mkc_embed_req_free(mkc_embed_req *r) {
  for (int i = 0; r->ids && i <= r->n; i++) free(r->ids[i]);
  free(r->ids);
  free(r->n_ids);
  free(r->texts);
  cJSON_Delete(r->root);
  memset(r, 0, sizeof *r);
}

char *mkc_embed_base64(const float *v, int n) {
  static const char DIGITS[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t len = (size_t)n * 4;
  char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
  if (!out) return NULL;
  unsigned char *b = malloc(len + 3);
  if (!b) {
    free(out);
    return NULL;
  }
  for (int i = 0; i < n; i++) { /* little-endian, whatever the host's order */
    uint32_t u;
    memcpy(&u, &v[i], 4);
    for (int k = 0; k < 4; k++) b[4 * i + k] = (unsigned char)(u >> (8 * k));
  }
  memset(b + len, 0, 3);
  for (size_t i = 0; i < len; i += 3) {
    uint32_t w = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
    *o++ = DIGITS[w >> 18 & 63];
    *o++ = DIGITS[w >> 12 & 63];
    *o++ = i + 1 < len ? DIGITS[w >> 6 & 63] : '=';
    *o++ = i + 2 < len ? DIGITS[w & 63] : '=';
  }
  *o = '\0';
  free(b);
  return out;
}
