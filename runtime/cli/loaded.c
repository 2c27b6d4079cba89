/* See loaded.h. */
#include "loaded.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "util/files.h"
#include "util/hash.h"

/* The manifest's graph path as written at gen time, else under the mkc tree. */
static void resolve_graph(const char *graph, char *out, size_t cap) {
  if (access(graph, R_OK) == 0)
    snprintf(out, cap, "%s", graph);
  else
    snprintf(out, cap, "%s/%s", mkc_home(), graph);
}

static int open_aot(const mkc_cli *c, mkc_loaded_model *m) {
  mkc_manifest *man = &m->manifest;
  char why[512], path[4600];
  mkc_cuda_device dev;
  if (mkc_cuda_device_get(&dev, why, sizeof why) != 0) {
    fprintf(stderr, "mkc: error: %s; --kernel needs a GPU (use --backend cpu without --kernel)\n",
            why);
    return -1;
  }
  int pick = mkc_aot_pick(man, dev.cc_major, dev.cc_minor);
  if (pick == MKC_AOT_NONE) {
    char have[512] = "";
    for (int i = 0; i < man->n_cubins; i++)
      snprintf(have + strlen(have), sizeof have - strlen(have), "%s, ", man->cubins[i].arch);
    fprintf(stderr,
            "mkc: error: %s has cubins for %sPTX for %s: none runs on %s (%s); recompile with "
            "--arch %s\n",
            c->kernel_dir, have, man->ptx_arch, dev.name, dev.arch, dev.arch);
    return -1;
  }
  /* A cubin loads on a driver of NVRTC's CUDA major version; PTX needs its CUDA version. */
  if (mkc_nvrtc_check_driver(man->nvrtc_version, dev.driver_version, pick == MKC_AOT_PTX,
                             c->kernel_dir) != 0)
    return -1;
  snprintf(path, sizeof path, "%s/%s", c->kernel_dir,
           pick >= 0 ? man->cubins[pick].file : man->ptx_file);
  size_t size;
  void *image = mkc_read_file(path, &size);
  if (!image) {
    fprintf(stderr, "mkc: error: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (pick >= 0 && (long)size != man->cubins[pick].size) {
    fprintf(stderr, "mkc: error: %s has %zu bytes, the manifest says %ld\n", path, size,
            man->cubins[pick].size);
    free(image);
    return -1;
  }
  if (pick < 0)
    fprintf(stderr, "mkc: no cubin for %s in %s: the driver compiles its PTX (%s)\n", dev.arch,
            c->kernel_dir, man->ptx_arch);
  m->s = mkc_session_open_image(&m->g, &m->w, &dev, image);
  free(image);
  return m->s ? 0 : -1;
}

int mkc_default_ctx(int ctx_train) {
  return ctx_train < MKC_DEFAULT_CTX ? ctx_train : MKC_DEFAULT_CTX;
}

int mkc_loaded_weight_type(void *ctx, const char *name) {
  mkc_loaded_model *m = ctx;
  for (int k = 0; k < m->n_lora; k++)
    if (mkc_lora_adapts(&m->lora[k], name)) return MKC_GGML_BF16;
  return mkc_model_file_weight_type(&m->file, name);
}

int mkc_loaded_plan(const mkc_cli *c, mkc_loaded_model *m) {
  memset(m, 0, sizeof *m);
  char graph_path[4200];
  mkc_gen_opts o = {.graph_path = graph_path,
                    .stage_timers = c->stages,
                    .imatrix = c->imatrix_kernel,
                    .preset = c->preset,
                    .draft_max = c->draft_max,
                    .ubatch = c->ubatch,
                    .max_ctx = c->max_ctx,
                    .kv_dtype = c->kv_dtype,
                    .keep_layers = c->keep_layers,
                    .n_keep_layers = c->n_keep_layers,
                    .slots = c->slots,
                    .kv_pages = c->kv_pages,
                    .step_rows = c->step_rows,
                    .reference_only = c->backend && strcmp(c->backend, "ref") == 0};
  if (c->model_path) {
    if (mkc_model_file_open_with(c->model_path, c->kv_overrides, c->n_kv_overrides, &m->file) !=
            0 ||
        mkc_rope_flags_apply(&c->rope, &m->file.desc, c->model_path) != 0)
      return -1;
    const mkc_model_desc *d = &m->file.desc;
    o.model = d;
    o.preset = NULL;
    for (; m->n_lora < c->n_lora; m->n_lora++)
      if (mkc_lora_open(c->lora[m->n_lora], c->lora_scale[m->n_lora], d, &m->lora[m->n_lora]) != 0)
        return -1;
    if (!c->dequant) {
      o.weight_type = m->n_lora ? mkc_loaded_weight_type : mkc_model_file_weight_type;
      o.weight_type_ctx = m->n_lora ? (void *)m : (void *)&m->file;
    }
    if (!o.max_ctx) o.max_ctx = mkc_default_ctx(d->ctx_train);
    if (c->max_ctx > d->ctx_train)
      fprintf(stderr, "mkc: warning: --ctx %d is longer than the %d tokens %s was trained on\n",
              c->max_ctx, d->ctx_train, c->model_path);
  }
  if (c->kernel_dir) {
    if (mkc_manifest_read(c->kernel_dir, &m->manifest) != 0) return -1;
    const mkc_kernel_header *h = &m->manifest.header;
    resolve_graph(h->graph, graph_path, sizeof graph_path);
    if (!c->model_path) o.preset = h->preset;
    o.draft_max = h->draft_max;
    o.ubatch = h->ubatch;
    o.max_ctx = h->max_ctx;
    o.threads = h->threads;
    o.kv_dtype = h->kv_dtype;
  } else if (c->graph) {
    snprintf(graph_path, sizeof graph_path, "%s", c->graph);
  } else {
    snprintf(graph_path, sizeof graph_path, "%s/graphs/llama.lua", mkc_home());
  }
  if (mkc_codegen(&o, &m->g, &m->src) != 0) return -1;
  if (c->kernel_dir) {
    char hash[17];
    mkc_source_hash(m->src.source, hash);
    if (strcmp(hash, m->manifest.source_hash) != 0) {
      fprintf(stderr,
              "mkc: error: %s was compiled from another kernel than mkc generates now for %s, "
              "preset %s "
              "(source hash %s, now %s): the graph or templates changed; run mkc gen and mkc "
              "compile again\n",
              c->kernel_dir, graph_path, o.preset, m->manifest.source_hash, hash);
      return -1;
    }
  }
  const char *b = c->backend ? c->backend : "auto";
  if (c->kernel_dir && strcmp(b, "auto") != 0 && strcmp(b, "cuda") != 0) {
    fprintf(stderr, "mkc: error: --kernel runs on the cuda backend, not %s\n", b);
    return -1;
  }
  return 0;
}

int mkc_loaded_weights(const mkc_cli *c, mkc_loaded_model *m) {
  int rc = c->model_path ? mkc_model_file_weights(&m->file, &m->g, &m->w)
                         : mkc_weights_random(&m->w, &m->g, c->seed);
  for (int k = 0; rc == 0 && k < m->n_lora; k++) rc = mkc_lora_apply(&m->lora[k], &m->w);
  if (rc == 0 && c->check_tensors)
    rc = mkc_weights_check(&m->w, c->model_path ? c->model_path : "random weights");
  return rc;
}

enum mkc_backend_kind mkc_loaded_backend(const mkc_cli *c) {
  /* the parser checked the name */
  return (enum mkc_backend_kind)mkc_backend_kind_from_name(c->backend ? c->backend : "auto");
}

int mkc_loaded_start(const mkc_cli *c, mkc_loaded_model *m) {
  if (mkc_loaded_weights(c, m) != 0) return -1;
  if (c->kernel_dir) return open_aot(c, m);
  m->s = mkc_session_open(mkc_loaded_backend(c), &m->g, &m->src, &m->w, c->blocks);
  return m->s ? 0 : -1;
}

/* The cpu backend's pace, multiply-adds per second per core: SmolLM2-135M
 * decodes at about 20 tokens/s on 2 cores (docs/PERF.md). An estimate only. */
#define CPU_MACS_PER_CORE 1.3e9
#define CPU_GUARD_SECONDS 300.0

int mkc_loaded_cpu_guard(const mkc_cli *c, const mkc_loaded_model *m, double tokens,
                         const char *cmd) {
  if (c->backend && strcmp(c->backend, "auto") != 0) return 0;
  if (c->kernel_dir) return 0;
  mkc_cuda_device dev;
  char why[256];
  if (mkc_cuda_device_get(&dev, why, sizeof why) == 0) return 0;
  double params = mkc_graph_active_params(&m->g);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double secs = params * tokens / (CPU_MACS_PER_CORE * (double)(cores > 0 ? cores : 1));
  if (secs <= CPU_GUARD_SECONDS) return 0;
  fprintf(
      stderr,
      "mkc: error: %s: no GPU here (%s), and %.0f tokens through %.2f G parameters would take "
      "the cpu backend roughly %.0f minutes on %ld cores; pass --backend cpu to run it anyway\n",
      cmd, why, tokens, params / 1e9, secs / 60, cores);
  return -1;
}

void mkc_loaded_close(mkc_loaded_model *m) {
  mkc_session_close(m->s);
  for (int k = 0; k < m->n_lora; k++) mkc_lora_close(&m->lora[k]);
  mkc_model_file_close(&m->file);
  mkc_weights_free(&m->w);
  mkc_kernel_src_free(&m->src);
  mkc_graph_free(&m->g);
  memset(m, 0, sizeof *m);
}

/* See loaded.h. */
/* h over a file's size and first MiB; a folder (or what cannot be read) by its path. */
static uint64_t hash_file(uint64_t h, const char *path) {
  struct stat st;
  FILE *f = stat(path, &st) == 0 && !S_ISDIR(st.st_mode) ? fopen(path, "rb") : NULL;
  if (!f) return mkc_fnv1a_str(h, path); /* a Hugging Face folder: its path */
  static unsigned char head[1 << 20];
  size_t n = fread(head, 1, sizeof head, f);
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  fclose(f);
  h = mkc_fnv1a(h, &size, sizeof size);
  return mkc_fnv1a(h, head, n);
}

uint64_t mkc_loaded_cache_id(const mkc_cli *c, const mkc_loaded_model *m) {
  uint64_t h = mkc_fnv1a_str(MKC_FNV_OFFSET, m->src.source ? m->src.source : "");
  if (!c->model_path) return mkc_fnv1a(h, &c->seed, sizeof c->seed);
  h = hash_file(h, c->model_path);
  for (int k = 0; k < c->n_lora; k++) /* adapted weights: other rows */
    h = mkc_fnv1a(hash_file(h, c->lora[k]), &c->lora_scale[k], sizeof c->lora_scale[k]);
  return h;
}
