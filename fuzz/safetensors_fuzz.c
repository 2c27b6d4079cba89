/* libFuzzer target for the safetensors reader and the config.json parser:
 * any bytes either open or fail with a message, never crash or read outside
 * the buffer. What opens is walked (every tensor found by its name, its
 * first and last byte read), and its small tensors with HF names are loaded
 * as the weights of a graph made from them, in both RoPE layouts and as
 * Gemma's names, so the conversions, the Q/K permutation and Gemma's norm
 * offset run too, and layer 0's experts as each experts' layout joins them.
 * The file is read as a PEFT LoRA adapter too and merged into matrices of its shapes.
 * The same bytes are then parsed as a config.json and an adapter_config.json.
 * Seeds in fuzz/corpus/safetensors: small files from mkc's writer and from
 * the safetensors Python package, near-valid ones, and config.json samples. */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/hf.h"
#include "formats/lora.h"
#include "formats/safetensors.h"

static void walk(const mkc_safetensors *st) {
  volatile unsigned sink = 0;
  for (int i = 0; i < mkc_st_count(st); i++) {
    const mkc_st_tensor *t = mkc_st_tensor_at(st, i);
    if (mkc_st_find(st, t->name) != t) abort(); /* names are unique */
    if (t->n_bytes) sink += t->data[0] + t->data[t->n_bytes - 1];
    sink += (unsigned)mkc_st_dtype_size(t->dtype) + (unsigned)strlen(mkc_st_dtype_name(t->dtype));
  }
  if (mkc_st_tensor_at(st, -1) || mkc_st_tensor_at(st, mkc_st_count(st))) abort();
}

/* The file's small 1-D and 2-D tensors under their GGUF names, plus a name
 * the file lacks when the count is odd. */
static void load_as_weights(const mkc_safetensors *st, const char *arch, int layout) {
  int n_tensors = mkc_st_count(st), n = 0;
  mkc_weight_info *infos = calloc((size_t)n_tensors + 1, sizeof *infos);
  char(*names)[256] = calloc((size_t)n_tensors + 1, sizeof *names);
  if (!infos || !names) goto done;
  for (int i = 0; i < n_tensors; i++) {
    const mkc_st_tensor *t = mkc_st_tensor_at(st, i);
    if (mkc_gguf_name_from_hf(arch, t->name, names[n], sizeof names[n]) != 0) continue;
    int64_t rows = t->n_dims == 2 ? t->shape[0] : 1, cols = t->shape[t->n_dims - 1];
    if (t->n_dims < 1 || t->n_dims > 2 || rows < 1 || cols < 1 || rows > (1 << 12) ||
        cols > (1 << 12) || rows * cols > (1 << 16))
      continue;
    infos[n] = (mkc_weight_info){
        .name = names[n], .rows = (int)rows, .cols = (int)cols, .row_stride = (int)cols};
    n++;
  }
  if (n == 0 || n_tensors % 2)
    infos[n++] =
        (mkc_weight_info){.name = "blk.0.ffn_up.weight", .rows = 2, .cols = 2, .row_stride = 8};
  mkc_graph g = {.n_weights = n, .weights = infos};
  mkc_model_desc d = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
  snprintf(d.arch, sizeof d.arch, "%s", arch);
  d.rope_layout = layout;
  mkc_weights w = {0};
  if (mkc_st_load_weights(st, &d, &g, &w) == 0) mkc_weights_free(&w);
  if (w.n || w.t) abort(); /* freed, or emptied on failure */
done:
  free(infos);
  free(names);
}

/* Layer 0's experts' matrices as arch's loader joins them (one tensor an expert, or Granite
 * MoE's one of all), their sizes read off expert 0's (or the joined tensor's) shape, 4 experts. */
static void load_experts(const mkc_safetensors *st, const char *arch) {
  static const char *const kinds[] = {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight",
                                      "blk.0.ffn_down_exps.weight"};
  mkc_model_desc d = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .n_experts = 4};
  snprintf(d.arch, sizeof d.arch, "%s", arch);
  mkc_weight_info infos[3];
  int n = 0;
  for (int k = 0; k < 3; k++) {
    char hf[512];
    int part, parts;
    const mkc_st_tensor *t = NULL;
    int fused = mkc_hf_experts_fused(arch, kinds[k], hf, sizeof hf, &part, &parts) == 0;
    if (fused || mkc_hf_expert_name(arch, kinds[k], 0, hf, sizeof hf) == 0) t = mkc_st_find(st, hf);
    if (!t || t->n_dims < 2) continue;
    int64_t rows = t->shape[t->n_dims - 2] / (fused ? parts : 1), cols = t->shape[t->n_dims - 1];
    if (rows < 1 || cols < 1 || rows > (1 << 10) || cols > (1 << 10) || rows * cols > (1 << 14))
      continue;
    infos[n++] = (mkc_weight_info){.name = (char *)kinds[k],
                                   .rows = 4 * (int)rows,
                                   .cols = (int)cols,
                                   .row_stride = (int)cols};
  }
  if (n == 0) return;
  mkc_graph g = {.n_weights = n, .weights = infos};
  mkc_weights w = {0};
  if (mkc_st_load_weights(st, &d, &g, &w) == 0) mkc_weights_free(&w);
  if (w.n || w.t) abort(); /* freed, or emptied on failure */
}

/* The file as a PEFT adapter of a llama model (2 heads, 1 KV head of 4): its pairs read (any
 * rank), then merged into zeroed bf16 matrices of the shapes they name. */
static void as_lora(const mkc_safetensors *st) {
  mkc_model_desc d = {.arch = "llama", .n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
  d.rope_layout = MKC_ROPE_INTERLEAVED;
  mkc_lora l = {.scale = 1, .alpha = 8, .path = "fuzz"};
  if (mkc_lora_peft_pairs(st, "fuzz", 0, 1, &d, &l) == 0) {
    mkc_tensor *t = calloc((size_t)l.n_pairs + 1, sizeof *t);
    int n = 0;
    for (int k = 0; t && k < l.n_pairs; k++) {
      const mkc_lora_pair *p = &l.pairs[k];
      if ((int64_t)p->rows * p->cols > (1 << 16)) continue;
      t[n] = (mkc_tensor){.name = p->name,
                          .rows = p->rows,
                          .cols = p->cols,
                          .type = MKC_GGML_BF16,
                          .data = calloc((size_t)p->rows * p->cols + 1, 2)};
      if (t[n].data) n++;
    }
    mkc_weights w = {.n = n, .t = t};
    if (t && n == l.n_pairs) mkc_lora_apply(&l, &w);
    for (int k = 0; k < n; k++) free(t[k].data);
    free(t);
  }
  mkc_lora_close(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mkc_safetensors *st = mkc_st_open_memory(data, size, "fuzz.safetensors");
  if (st) {
    walk(st);
    load_as_weights(st, "llama", MKC_ROPE_INTERLEAVED);
    load_as_weights(st, "qwen2", MKC_ROPE_NEOX);
    load_as_weights(st, "gemma3", MKC_ROPE_NEOX); /* norms read plus 1 */
    /* phi3: layer 0's qkv_proj and gate_up_proj split by rows (2 heads and 1 KV head of 4) */
    mkc_model_desc phi3 = {
        .arch = "phi3", .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .ffn = 4};
    if (mkc_st_unfuse(st, &phi3) == 0) load_as_weights(st, "phi3", MKC_ROPE_NEOX);
    load_experts(st, "qwen3moe");
    load_experts(st, "mixtral");
    load_experts(st, "granitemoe");
    as_lora(st);
    mkc_st_close(st);
  }
  int r, rslora; /* the bytes as a PEFT adapter_config.json */
  double alpha;
  if (mkc_lora_peft_config((const char *)data, size, "fuzz/adapter_config.json", &r, &alpha,
                           &rslora) == 0 &&
      r < 1)
    abort();
  mkc_model_desc d;
  if (mkc_hf_config_parse((const char *)data, size, "fuzz/config.json", "fuzz/Some_Model", &d) ==
      0) {
    if (d.dim < 1 || d.n_heads < 1 || d.n_kv_heads < 1 || d.n_heads % d.n_kv_heads ||
        d.head_dim % 2 || !(d.rope_theta > 0) || !(d.norm_eps > 0) || d.ctx_train < 1)
      abort(); /* a description that parses is one the graph can use */
  }
  return 0;
}
