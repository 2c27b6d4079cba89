/* libFuzzer target for the GGUF reader: any bytes either open or fail with a
 * message, never crash or read outside the buffer. What opens is read through
 * every accessor and as a model description (model/desc_gguf.c: the
 * architectures' keys, Gemma 3's window pattern as a period or per-layer
 * flags), and its 1-D and 2-D tensors are loaded as the weights of a
 * graph made from them, which dequantizes every readable type; and it is read as a LoRA
 * adapter, merged into matrices of the shapes it names.
 * Seeds in fuzz/corpus/gguf: small files from mkc's writer and from gguf-py
 * (valid, v2, every value type, quantized tensors) and a few broken ones. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/lora.h"
#include "model/model_file.h"

static void read_metadata(const mkc_gguf *f) {
  char text[256];
  volatile double sink = 0;
  for (uint64_t i = 0; i < f->n_kv; i++) {
    const mkc_gguf_kv *kv = &f->kv[i];
    if (mkc_gguf_find(f, kv->key) != kv) abort(); /* keys are unique */
    mkc_gguf_format_value(kv, text, sizeof text);
    for (uint64_t k = 0; k < kv->n && k < 4096; k++) {
      mkc_gguf_str s = mkc_gguf_arr_str(kv, k);
      sink += (double)mkc_gguf_arr_int(kv, k) + mkc_gguf_arr_float(kv, k) +
              (s.len ? (unsigned char)s.s[s.len - 1] : 0);
    }
  }
  for (uint64_t k = 0; k < f->n_kv; k++) { /* every getter on every key, whatever its type */
    const char *key = f->kv[k].key, *s;
    int64_t i;
    uint32_t u;
    double d;
    int b;
    const mkc_gguf_kv *a;
    mkc_gguf_get_int(f, key, &i);
    mkc_gguf_get_u32(f, key, &u);
    mkc_gguf_get_float(f, key, &d);
    mkc_gguf_get_bool(f, key, &b);
    mkc_gguf_get_str(f, key, &s);
    mkc_gguf_get_arr(f, key, -1, &a);
    mkc_gguf_get_arr(f, key, MKC_GGUF_STRING, &a);
  }
  (void)sink;
}

/* The file's small matrices and vectors as graph weights, plus one name the
 * file lacks when there is room, so load_weights runs its error paths too. */
static void load_as_weights(const mkc_gguf *f) {
  mkc_weight_info *infos = calloc(f->n_tensors + 1, sizeof *infos);
  if (!infos) return;
  int n = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const mkc_gguf_tensor *t = &f->tensors[i];
    if (mkc_gguf_find_tensor(f, t->name) != t) abort(); /* names are unique */
    if (t->ne[0] < 1 || t->ne[0] > INT_MAX || t->ne[1] < 1 || t->ne[1] > INT_MAX || t->ne[2] != 1 ||
        t->ne[3] != 1 || t->n_elems > (1u << 20))
      continue;
    infos[n++] = (mkc_weight_info){.name = t->name, .rows = (int)t->ne[1], .cols = (int)t->ne[0]};
  }
  if (n == 0 || f->n_tensors % 2)
    infos[n++] = (mkc_weight_info){.name = "no.such.weight", .rows = 1, .cols = 1, .row_stride = 1};
  mkc_graph g = {.n_weights = n, .weights = infos};
  mkc_weights w = {0};
  if (mkc_gguf_load_weights(f, &g, &w) == 0) mkc_weights_free(&w);
  if (w.n || w.t) abort(); /* freed, or emptied on failure */
  free(infos);
}

/* The file as a LoRA adapter (of its own architecture): checked, then merged into zeroed bf16
 * matrices of the shapes its small pairs ask for (and a mismatched one when there is room). */
static void as_lora(mkc_gguf *f) {
  const char *arch = "llama";
  mkc_gguf_get_str(f, "general.architecture", &arch);
  mkc_lora l = {.f = f, .scale = 1, .path = f->path};
  if (mkc_lora_check(f, arch, &l.alpha) != 0) return;
  mkc_tensor *t = calloc(f->n_tensors + 1, sizeof *t);
  int n = 0;
  for (uint64_t i = 0; t && i < f->n_tensors; i++) {
    const mkc_gguf_tensor *a = &f->tensors[i];
    size_t len = strlen(a->name);
    if (len < 7 || strcmp(a->name + len - 7, ".lora_a") != 0) continue;
    char name[512];
    snprintf(name, sizeof name, "%.*s.lora_b", (int)(len - 7), a->name);
    const mkc_gguf_tensor *b = mkc_gguf_find_tensor(f, name);
    if (!b || a->ne[0] * b->ne[1] > (1 << 16) || a->ne[1] > 64) continue;
    int rows = (int)b->ne[1] + (int)(i % 2), cols = (int)a->ne[0]; /* odd i: a misfit */
    t[n] = (mkc_tensor){.name = strndup(a->name, len - 7),
                        .rows = rows,
                        .cols = cols,
                        .type = MKC_GGML_BF16,
                        .data = calloc((size_t)rows * cols + 1, 2)};
    if (t[n].name && t[n].data) n++;
  }
  mkc_weights w = {.n = n, .t = t};
  if (t) mkc_lora_apply(&l, &w);
  for (int k = 0; k < n; k++) free(t[k].name), free(t[k].data);
  free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mkc_gguf *f = mkc_gguf_open_memory(data, size, "fuzz.gguf");
  if (!f) return 0;
  read_metadata(f);
  mkc_model_desc d;
  if (mkc_gguf_model_desc(f, &d) == 0) mkc_gguf_unfuse(f, &d); /* phi3: its fused matrices */
  load_as_weights(f);
  as_lora(f);
  mkc_gguf_close(f);
  return 0;
}
