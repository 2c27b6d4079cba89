/* See cli.h. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"
#include "files.h"

int mkc_cli_usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "mkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run `mkc --help` for usage)\n");
  return 2;
}

/* A whole-string integer in [lo, hi], or -1 with a message. */
static int parse_int(const char *flag, const char *s, long lo, long hi, long *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (!*s || *end || errno || x < lo || x > hi) {
    fprintf(stderr, "mkc: error: %s: expected an integer in %ld..%ld, got '%s'\n", flag, lo, hi, s);
    return -1;
  }
  *v = x;
  return 0;
}

int mkc_parse_seed(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return !*s || *end || errno || s[0] == '-' ? -1 : 0;
}

int mkc_cli_check_model(const mkc_cli *c, const char *cmd) {
  if (!c->model_path || !(c->preset || c->have_seed || c->graph)) return 0;
  char msg[200];
  snprintf(msg, sizeof msg,
           "%s: -m brings its own graph, preset and weights; drop --preset, --graph and "
           "--random-weights",
           cmd);
  return mkc_cli_usage_error("%s", msg);
}

static int allows(const char *allowed, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = allowed; (p = strstr(p, flag)); p += n)
    if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
  return 0;
}

int mkc_cli_parse(int argc, char **argv, int first, const char *allowed, int want_positional,
                  mkc_cli *c) {
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      if (!want_positional || c->positional)
        return mkc_cli_usage_error("unexpected argument '%s'", a);
      c->positional = a;
      continue;
    }
    /* llama.cpp's long spellings of its short flags */
    if (strcmp(a, "--model") == 0 && allows(allowed, "-m")) a = "-m";
    if (strcmp(a, "--prompt") == 0 && allows(allowed, "-p")) a = "-p";
    if (strcmp(a, "--n-predict") == 0 && allows(allowed, "-n")) a = "-n";
    if ((strcmp(a, "-c") == 0 || strcmp(a, "--ctx-size") == 0) && allows(allowed, "--ctx"))
      a = "--ctx";
    if (!allows(allowed, a)) return mkc_cli_usage_error("unknown option '%s'", argv[i]);
    if (i + 1 >= argc) return mkc_cli_usage_error("%s needs a value", a);
    const char *v = argv[++i];
    long x;
    if (strcmp(a, "--preset") == 0)
      c->preset = v;
    else if (strcmp(a, "--graph") == 0)
      c->graph = v;
    else if (strcmp(a, "-o") == 0)
      c->out = v;
    else if (strcmp(a, "--prompt-ids") == 0)
      c->prompt_ids = v;
    else if (strcmp(a, "--backend") == 0)
      c->backend = v;
    else if (strcmp(a, "--kernel") == 0)
      c->kernel_dir = v;
    else if (strcmp(a, "--arch") == 0)
      c->archs = v;
    else if (strcmp(a, "-m") == 0)
      c->model_path = v;
    else if (strcmp(a, "--kv-dtype") == 0) {
      if (mkc_kv_dtype_from_name(v) < 0)
        return mkc_cli_usage_error("--kv-dtype: expected bf16, f16 or f32, got '%s'", v);
      c->kv_dtype = v;
    } else if (strcmp(a, "-p") == 0)
      c->prompt = v;
    else if (strcmp(a, "--temp") == 0) {
      char *end;
      errno = 0;
      c->temp = strtod(v, &end);
      if (!*v || *end || errno || !(c->temp >= 0) || c->temp > 100)
        return mkc_cli_usage_error("--temp: expected a number in 0..100, got '%s'", v);
    } else if (strcmp(a, "--seed") == 0) {
      if (mkc_parse_seed(v, &c->sample_seed) != 0)
        return mkc_cli_usage_error("--seed: expected a non-negative integer, got '%s'", v);
    } else if (strcmp(a, "--random-weights") == 0) {
      if (mkc_parse_seed(v, &c->seed) != 0)
        return mkc_cli_usage_error(
            "--random-weights: expected a non-negative integer seed, got '%s'", v);
      c->have_seed = 1;
    } else {
      long lo = 0, hi = INT_MAX / 2;
      if (strcmp(a, "--draft-max") == 0)
        hi = 31;
      else if (strcmp(a, "--ctx") == 0)
        lo = 1, hi = 1 << 20;
      else if (strcmp(a, "--blocks") == 0)
        lo = 1, hi = 1024;
      else if (strcmp(a, "-n") == 0)
        lo = -1; /* llama.cpp's -1: until end of generation or a full context */
      if (parse_int(a, v, lo, hi, &x)) return 2;
      if (strcmp(a, "--draft-max") == 0)
        c->draft_max = (int)x;
      else if (strcmp(a, "--ctx") == 0)
        c->max_ctx = (int)x;
      else if (strcmp(a, "--blocks") == 0)
        c->blocks = (int)x;
      else if (strcmp(a, "-n") == 0)
        c->n_gen = (int)x, c->have_n = 1;
    }
  }
  return 0;
}

/* The manifest's graph path as written at gen time, else under the mkc tree. */
static void resolve_graph(const char *graph, char *out, size_t cap) {
  if (access(graph, R_OK) == 0)
    snprintf(out, cap, "%s", graph);
  else
    snprintf(out, cap, "%s/%s", mkc_home(), graph);
}

static int open_aot(const mkc_cli *c, mkc_model *m) {
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
  m->s = mkc_session_open_image(&m->g, &m->w, image);
  free(image);
  return m->s ? 0 : -1;
}

int mkc_model_plan(const mkc_cli *c, mkc_model *m) {
  memset(m, 0, sizeof *m);
  char graph_path[4200];
  mkc_gen_opts o = {.graph_path = graph_path,
                    .preset = c->preset,
                    .draft_max = c->draft_max,
                    .max_ctx = c->max_ctx,
                    .kv_dtype = c->kv_dtype};
  if (c->model_path) {
    if (mkc_model_file_open(c->model_path, &m->file) != 0) return -1;
    const mkc_model_desc *d = &m->file.desc;
    o.model = d;
    o.preset = NULL;
    if (!o.max_ctx) o.max_ctx = d->ctx_train < MKC_DEFAULT_CTX ? d->ctx_train : MKC_DEFAULT_CTX;
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

int mkc_model_start(const mkc_cli *c, mkc_model *m) {
  if (c->model_path ? mkc_model_file_weights(&m->file, &m->g, &m->w)
                    : mkc_weights_random(&m->w, &m->g, c->seed))
    return -1;
  if (c->kernel_dir) return open_aot(c, m);
  const char *b = c->backend ? c->backend : "auto";
  enum mkc_backend_kind kind;
  if (strcmp(b, "cpu") == 0)
    kind = MKC_BACKEND_CPU;
  else if (strcmp(b, "ref") == 0)
    kind = MKC_BACKEND_REF;
  else if (strcmp(b, "cuda") == 0)
    kind = MKC_BACKEND_CUDA;
  else if (strcmp(b, "auto") == 0) {
    mkc_cuda_device dev;
    char why[512];
    kind = mkc_cuda_device_get(&dev, why, sizeof why) == 0 ? MKC_BACKEND_CUDA : MKC_BACKEND_CPU;
  } else {
    mkc_cli_usage_error("--backend: expected cuda, cpu, ref or auto, got '%s'", b);
    return -1;
  }
  m->s = mkc_session_open(kind, &m->g, &m->src, &m->w, c->blocks);
  return m->s ? 0 : -1;
}

void mkc_model_close(mkc_model *m) {
  mkc_session_close(m->s);
  mkc_model_file_close(&m->file);
  mkc_weights_free(&m->w);
  mkc_kernel_src_free(&m->src);
  mkc_graph_free(&m->g);
  memset(m, 0, sizeof *m);
}
