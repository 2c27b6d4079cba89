/* mkc compile: cubins per arch, one PTX, a JSON manifest (cJSON). */
#include "aot.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "util/files.h"
#include "util/hash.h"
#include "kcache.h"
#include "nvrtc.h"
#include "util/version.h"

void mkc_source_hash(const char *source, char *out) {
  uint64_t h = mkc_fnv1a(MKC_FNV_OFFSET, source, strlen(source));
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int mkc_kernel_header_parse(const char *source, mkc_kernel_header *h) {
  memset(h, 0, sizeof *h);
  const char *g = strstr(source, "\n * graph:   "), *hs = strstr(source, "\n * hashes:  graph ");
  const char *o = strstr(source, "\n * options: draft_max ");
  if (strncmp(source, "/* mkc ", 7) != 0 || !strstr(source, "generated: do not edit") || !g ||
      !hs || !o)
    return -1;
  /* "mkc " and the version token, refused (not cut) when it does not fit version[] */
  size_t vlen = strcspn(source + 7, " \t\r\n");
  if (vlen == 0 || vlen >= sizeof h->version - 4) return -1;
  memcpy(h->version, "mkc ", 4);
  memcpy(h->version + 4, source + 7, vlen);
  /* "graphs/llama.lua, preset tiny" */
  const char *comma = strstr(g, ", preset ");
  if (!comma || comma - g - 13 >= (long)sizeof h->graph) return -1;
  memcpy(h->graph, g + 13, (size_t)(comma - g - 13));
  if (sscanf(comma + 9, "%127s", h->preset) != 1) return -1;
  if (sscanf(hs, "\n * hashes:  graph %16[0-9a-f], templates %16[0-9a-f], options %16[0-9a-f]",
             h->graph_hash, h->templates_hash, h->options_hash) != 3)
    return -1;
  if (sscanf(o,
             "\n * options: draft_max %d (T <= %*d tokens per step), max_ctx %d, %d threads per "
             "block, <= %d blocks",
             &h->draft_max, &h->max_ctx, &h->threads, &h->max_blocks) != 4)
    return -1;
  /* "..., <= 1024 blocks, KV bf16"; kernels from before the option kept KV in f32 */
  const char *kv = strstr(o, " blocks, KV ");
  const char *eol = strchr(o + 1, '\n');
  if (!kv || (eol && kv > eol) || sscanf(kv, " blocks, KV %7[a-z0-9]", h->kv_dtype) != 1)
    snprintf(h->kv_dtype, sizeof h->kv_dtype, "f32");
  /* "..., prompt chunks <= 128 (tiled, tensor cores)"; kernels from before took t_max */
  const char *chunks = strstr(o, ", prompt chunks <= ");
  if (!chunks || (eol && chunks > eol) || sscanf(chunks, ", prompt chunks <= %d", &h->ubatch) != 1)
    h->ubatch = h->draft_max + 1;
  return 0;
}

/* Whether a is PREFIX, a number of two to four digits, and maybe an "a" (sm_90, sm_90a,
 * compute_80). */
static int arch_ok(const char *a, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(a, prefix, n) != 0 || a[n] < '1' || a[n] > '9') return 0;
  size_t digits = strspn(a + n, "0123456789");
  return digits >= 2 && digits <= 4 && (a[n + digits] == 0 || strcmp(a + n + digits, "a") == 0);
}

/* 90 for sm_90, sm_90a or compute_90 (an arch that arch_ok passed). */
static int arch_number(const char *arch) { return atoi(arch + (arch[0] == 's' ? 3 : 8)); }

int mkc_aot_parse_archs(const char *csv, char archs[][16], int *n) {
  *n = 0;
  const char *p = csv;
  while (*p) {
    size_t len = strcspn(p, ",");
    char a[32];
    int ok = len > 3 && len < sizeof a;
    if (ok) {
      memcpy(a, p, len);
      a[len] = 0;
      ok = arch_ok(a, "sm_");
    }
    if (!ok) {
      fprintf(stderr, "mkc: error: --arch: expected a list like sm_80,sm_90, got '%s'\n", csv);
      return -1;
    }
    if (*n == MKC_AOT_MAX_ARCHS) {
      fprintf(stderr, "mkc: error: --arch: at most %d archs\n", MKC_AOT_MAX_ARCHS);
      return -1;
    }
    for (int i = 0; i < *n; i++)
      if (strcmp(archs[i], a) == 0) {
        fprintf(stderr, "mkc: error: --arch: %s given twice\n", a);
        return -1;
      }
    strcpy(archs[(*n)++], a);
    p += len;
    if (*p == ',') p++;
  }
  if (*n == 0) {
    fprintf(stderr, "mkc: error: --arch: no arch given\n");
    return -1;
  }
  return 0;
}

static int write_file(const char *dir, const char *name, const void *data, size_t size) {
  char path[4600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const void *parts[] = {data};
  return mkc_write_atomic(path, parts, &size, 1);
}

int mkc_aot_compile(const char *kernel_path, const char *archs_csv, const char *out_dir,
                    mkc_manifest *m) {
  memset(m, 0, sizeof *m);
  char archs[MKC_AOT_MAX_ARCHS][16];
  int n_archs, rc = -1;
  if (mkc_aot_parse_archs(archs_csv, archs, &n_archs) != 0) return -1;
  char *source = mkc_read_file(kernel_path, NULL);
  if (!source) {
    fprintf(stderr, "mkc: error: cannot read %s: %s\n", kernel_path, strerror(errno));
    return -1;
  }
  if (mkc_kernel_header_parse(source, &m->header) != 0) {
    fprintf(
        stderr,
        "mkc: error: %s: not an mkc kernel (no \"generated: do not edit\" header from mkc gen)\n",
        kernel_path);
    goto done;
  }
  const char *base = strrchr(m->header.graph, '/');
  base = base ? base + 1 : m->header.graph;
  snprintf(m->name, sizeof m->name, "%.*s.%s.cu", (int)strcspn(base, "."), base, m->header.preset);
  snprintf(m->mkc_version, sizeof m->mkc_version, "mkc %s", MKC_VERSION);
  m->nvrtc_version = mkc_nvrtc_version(NULL, 0);
  mkc_source_hash(source, m->source_hash);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", out_dir);
  if (mkc_mkdir_p(dir) != 0) {
    fprintf(stderr, "mkc: error: cannot create %s: %s\n", out_dir, strerror(errno));
    goto done;
  }
  int lowest = 0;
  for (int i = 0; i < n_archs; i++) {
    mkc_compiled c;
    /* No driver asked: mkc compile runs where there is none (driver version 0 in the key). */
    if (mkc_kcache_compile(source, m->name, archs[i], 0, &c) != 0) goto done;
    mkc_aot_cubin *cb = &m->cubins[m->n_cubins++];
    char stem[200];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(m->name) - 3), m->name); /* without .cu */
    strcpy(cb->arch, archs[i]);
    snprintf(cb->file, sizeof cb->file, "%.200s.%.15s.cubin", stem, archs[i]);
    cb->size = (long)c.cubin_size;
    cb->ptxas = c.ptxas;
    int bad = write_file(out_dir, cb->file, c.cubin, c.cubin_size);
    mkc_compiled_free(&c);
    if (bad) goto done;
    if (i == 0 || arch_number(archs[i]) < arch_number(archs[lowest])) lowest = i;
  }
  /* PTX for the oldest arch: the driver can JIT it for anything newer. */
  snprintf(m->ptx_arch, sizeof m->ptx_arch, "compute_%d", arch_number(archs[lowest]));
  char stem[200];
  snprintf(stem, sizeof stem, "%.*s", (int)(strlen(m->name) - 3), m->name);
  snprintf(m->ptx_file, sizeof m->ptx_file, "%.200s.%.15s.ptx", stem, m->ptx_arch);
  mkc_nvrtc_output nv;
  int bad = mkc_nvrtc_compile(source, m->name, m->ptx_arch, 1, &nv) != 0 ||
            write_file(out_dir, m->ptx_file, nv.ptx, strlen(nv.ptx));
  mkc_nvrtc_output_free(&nv);
  if (bad) goto done;
  rc = mkc_manifest_write(out_dir, m);
done:
  free(source);
  return rc;
}

static cJSON *ptxas_json(const mkc_ptxas_info *p) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "registers", p->registers);
  cJSON_AddNumberToObject(o, "spill_stores", p->spill_stores);
  cJSON_AddNumberToObject(o, "spill_loads", p->spill_loads);
  cJSON_AddNumberToObject(o, "stack_bytes", p->stack_bytes);
  cJSON_AddNumberToObject(o, "static_smem_bytes", p->smem_bytes);
  cJSON_AddNumberToObject(o, "barriers", p->barriers);
  cJSON_AddNumberToObject(o, "param_cmem_bytes", p->cmem0_bytes);
  /* the functions the kernel calls, reported apart by ptxas (backend/cuda/ptxas.h) */
  cJSON *c = cJSON_AddObjectToObject(o, "called");
  cJSON_AddNumberToObject(c, "functions", p->called_functions);
  cJSON_AddNumberToObject(c, "spill_stores", p->called_spill_stores);
  cJSON_AddNumberToObject(c, "spill_loads", p->called_spill_loads);
  cJSON_AddNumberToObject(c, "stack_bytes", p->called_stack_bytes);
  return o;
}

int mkc_manifest_write(const char *dir, const mkc_manifest *m) {
  const mkc_kernel_header *h = &m->header;
  cJSON *root = cJSON_CreateObject(), *hashes = cJSON_CreateObject(), *cubins = cJSON_CreateArray();
  cJSON_AddStringToObject(root, "format", "mkc-aot-1");
  cJSON_AddStringToObject(root, "name", m->name);
  cJSON_AddStringToObject(root, "mkc_version", m->mkc_version);
  cJSON_AddStringToObject(root, "kernel_version", h->version);
  cJSON_AddNumberToObject(root, "nvrtc_version", m->nvrtc_version);
  cJSON_AddStringToObject(root, "graph", h->graph);
  cJSON_AddStringToObject(root, "preset", h->preset);
  cJSON_AddNumberToObject(root, "draft_max", h->draft_max);
  cJSON_AddNumberToObject(root, "max_ctx", h->max_ctx);
  cJSON_AddNumberToObject(root, "threads", h->threads);
  cJSON_AddNumberToObject(root, "max_blocks", h->max_blocks);
  cJSON_AddStringToObject(root, "kv_dtype", h->kv_dtype);
  cJSON_AddNumberToObject(root, "ubatch", h->ubatch);
  cJSON_AddStringToObject(hashes, "source", m->source_hash);
  cJSON_AddStringToObject(hashes, "graph", h->graph_hash);
  cJSON_AddStringToObject(hashes, "templates", h->templates_hash);
  cJSON_AddStringToObject(hashes, "options", h->options_hash);
  cJSON_AddItemToObject(root, "hashes", hashes);
  for (int i = 0; i < m->n_cubins; i++) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "arch", m->cubins[i].arch);
    cJSON_AddStringToObject(c, "file", m->cubins[i].file);
    cJSON_AddNumberToObject(c, "size", (double)m->cubins[i].size);
    cJSON_AddItemToObject(c, "ptxas", ptxas_json(&m->cubins[i].ptxas));
    cJSON_AddItemToArray(cubins, c);
  }
  cJSON_AddItemToObject(root, "cubins", cubins);
  cJSON *ptx = cJSON_CreateObject();
  cJSON_AddStringToObject(ptx, "arch", m->ptx_arch);
  cJSON_AddStringToObject(ptx, "file", m->ptx_file);
  cJSON_AddItemToObject(root, "ptx", ptx);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return -1;
  size_t len = strlen(text);
  const void *parts[] = {text, "\n"};
  size_t sizes[] = {len, 1};
  char path[4600];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  int rc = mkc_write_atomic(path, parts, sizes, 2);
  free(text);
  return rc;
}

/* Field readers that remember the first problem. */
typedef struct reader {
  const char *path;
  int bad;
} reader;

static void complain(reader *r, const char *field, const char *what) {
  if (!r->bad) fprintf(stderr, "mkc: error: %s: %s %s\n", r->path, field, what);
  r->bad = 1;
}

static void get_str(reader *r, const cJSON *o, const char *field, char *out, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
  if (!cJSON_IsString(v)) return complain(r, field, "is missing or not a string");
  if (strlen(v->valuestring) >= cap) return complain(r, field, "is too long");
  strcpy(out, v->valuestring);
}

static long get_int(reader *r, const cJSON *o, const char *field, long lo, long hi) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
  if (!cJSON_IsNumber(v)) return complain(r, field, "is missing or not a number"), 0;
  if (v->valuedouble < lo || v->valuedouble > hi || v->valuedouble != (double)(long)v->valuedouble)
    return complain(r, field, "is out of range"), 0;
  return (long)v->valuedouble;
}

/* A file named in the manifest must stay inside its folder. */
static void check_file_name(reader *r, const char *field, const char *name) {
  if (!*name || strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
    complain(r, field, "must be a plain file name");
}

/* The kernel's header fields: what it was generated from and for. */
static void read_kernel(reader *r, const cJSON *root, mkc_manifest *m) {
  mkc_kernel_header *h = &m->header;
  get_str(r, root, "name", m->name, sizeof m->name);
  get_str(r, root, "mkc_version", m->mkc_version, sizeof m->mkc_version);
  get_str(r, root, "kernel_version", h->version, sizeof h->version);
  m->nvrtc_version = (int)get_int(r, root, "nvrtc_version", -1, 1000000);
  get_str(r, root, "graph", h->graph, sizeof h->graph);
  get_str(r, root, "preset", h->preset, sizeof h->preset);
  h->draft_max = (int)get_int(r, root, "draft_max", 0, 1000);
  h->max_ctx = (int)get_int(r, root, "max_ctx", 1, 1 << 24);
  h->threads = (int)get_int(r, root, "threads", 32, 1024);
  h->max_blocks = (int)get_int(r, root, "max_blocks", 1, 1 << 20);
  /* optional: manifests from before the option were f32 kernels (their source hash tells) */
  if (cJSON_GetObjectItemCaseSensitive(root, "kv_dtype"))
    get_str(r, root, "kv_dtype", h->kv_dtype, sizeof h->kv_dtype);
  else
    snprintf(h->kv_dtype, sizeof h->kv_dtype, "f32");
  /* optional: manifests from before prompt chunks took draft_max + 1 */
  h->ubatch = cJSON_GetObjectItemCaseSensitive(root, "ubatch")
                  ? (int)get_int(r, root, "ubatch", 1, 1 << 20)
                  : h->draft_max + 1;
  if (!r->bad && strcmp(h->kv_dtype, "bf16") != 0 && strcmp(h->kv_dtype, "f16") != 0 &&
      strcmp(h->kv_dtype, "f32") != 0)
    complain(r, "kv_dtype", "is not bf16, f16 or f32");
  const cJSON *hashes = cJSON_GetObjectItemCaseSensitive(root, "hashes");
  if (!cJSON_IsObject(hashes))
    complain(r, "hashes", "is missing");
  else {
    get_str(r, hashes, "source", m->source_hash, sizeof m->source_hash);
    get_str(r, hashes, "graph", h->graph_hash, sizeof h->graph_hash);
    get_str(r, hashes, "templates", h->templates_hash, sizeof h->templates_hash);
    get_str(r, hashes, "options", h->options_hash, sizeof h->options_hash);
  }
}

/* One cubins[] entry: its arch, file and ptxas figures. */
static void read_cubin(reader *r, const cJSON *c, mkc_aot_cubin *cb) {
  get_str(r, c, "arch", cb->arch, sizeof cb->arch);
  if (!r->bad && !arch_ok(cb->arch, "sm_"))
    complain(r, "cubins[].arch", "is not an arch like sm_90");
  get_str(r, c, "file", cb->file, sizeof cb->file);
  check_file_name(r, "cubins[].file", cb->file);
  cb->size = get_int(r, c, "size", 1, 1L << 40);
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "ptxas");
  if (!cJSON_IsObject(p)) {
    complain(r, "cubins[].ptxas", "is missing");
    return;
  }
  cb->ptxas.registers = (int)get_int(r, p, "registers", 0, 1 << 16);
  cb->ptxas.spill_stores = (int)get_int(r, p, "spill_stores", 0, 1 << 30);
  cb->ptxas.spill_loads = (int)get_int(r, p, "spill_loads", 0, 1 << 30);
  cb->ptxas.stack_bytes = (int)get_int(r, p, "stack_bytes", 0, 1 << 30);
  cb->ptxas.smem_bytes = (int)get_int(r, p, "static_smem_bytes", 0, 1 << 30);
  cb->ptxas.barriers = (int)get_int(r, p, "barriers", 0, 64);
  cb->ptxas.cmem0_bytes = (int)get_int(r, p, "param_cmem_bytes", 0, 1 << 30);
  const cJSON *called = cJSON_GetObjectItemCaseSensitive(p, "called"); /* none before 2026-11-28 */
  if (called) {
    cb->ptxas.called_functions = (int)get_int(r, called, "functions", 0, 1 << 16);
    cb->ptxas.called_spill_stores = (int)get_int(r, called, "spill_stores", 0, 1 << 30);
    cb->ptxas.called_spill_loads = (int)get_int(r, called, "spill_loads", 0, 1 << 30);
    cb->ptxas.called_stack_bytes = (int)get_int(r, called, "stack_bytes", 0, 1 << 30);
  }
  memcpy(cb->ptxas.arch, cb->arch, sizeof cb->arch);
}

int mkc_manifest_read(const char *dir, mkc_manifest *m) {
  memset(m, 0, sizeof *m);
  char path[4600];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  size_t len = 0;
  char *text = mkc_read_file(path, &len);
  if (!text) {
    fprintf(stderr, "mkc: error: cannot read %s: %s (make one with mkc compile)\n", path,
            strerror(errno));
    return -1;
  }
  int rc = mkc_manifest_parse(path, text, len, m);
  free(text);
  return rc;
}

int mkc_manifest_parse(const char *path, const char *text, size_t len, mkc_manifest *m) {
  memset(m, 0, sizeof *m);
  reader r = {path, 0};
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!cJSON_IsObject(root)) {
    fprintf(stderr, "mkc: error: %s: not valid JSON (%s at byte %zu)\n", path,
            root ? "not an object" : "a syntax error",
            root || !end ? (size_t)0 : (size_t)(end - text));
    cJSON_Delete(root);
    return -1;
  }
  /* nothing after the object but white space: a manifest cut and pasted into is refused whole */
  size_t at = (size_t)(end - text);
  while (at < len && strchr(" \t\r\n", text[at]) && text[at]) at++;
  if (at < len) {
    fprintf(stderr, "mkc: error: %s: bytes after the JSON object (at byte %zu)\n", path, at);
    cJSON_Delete(root);
    return -1;
  }
  char format[32] = "";
  get_str(&r, root, "format", format, sizeof format);
  if (!r.bad && strcmp(format, "mkc-aot-1") != 0) complain(&r, "format", "is not mkc-aot-1");
  read_kernel(&r, root, m);
  const cJSON *cubins = cJSON_GetObjectItemCaseSensitive(root, "cubins"), *c;
  if (!cJSON_IsArray(cubins) || cJSON_GetArraySize(cubins) > MKC_AOT_MAX_ARCHS)
    complain(&r, "cubins", "is missing or too long");
  else
    cJSON_ArrayForEach(c, cubins) {
      mkc_aot_cubin *cb = &m->cubins[m->n_cubins];
      read_cubin(&r, c, cb);
      for (int i = 0; i < m->n_cubins && !r.bad; i++)
        if (strcmp(m->cubins[i].arch, cb->arch) == 0)
          complain(&r, "cubins[].arch", "is listed twice");
      m->n_cubins++;
    }
  const cJSON *ptx = cJSON_GetObjectItemCaseSensitive(root, "ptx");
  if (!cJSON_IsObject(ptx))
    complain(&r, "ptx", "is missing");
  else {
    get_str(&r, ptx, "arch", m->ptx_arch, sizeof m->ptx_arch);
    if (!r.bad && !arch_ok(m->ptx_arch, "compute_"))
      complain(&r, "ptx.arch", "is not an arch like compute_80");
    get_str(&r, ptx, "file", m->ptx_file, sizeof m->ptx_file);
    check_file_name(&r, "ptx.file", m->ptx_file);
  }
  cJSON_Delete(root);
  return r.bad ? -1 : 0;
}

int mkc_aot_pick(const mkc_manifest *m, int cc_major, int cc_minor) {
  int best = MKC_AOT_NONE, best_minor = -1, device = cc_major * 10 + cc_minor;
  for (int i = 0; i < m->n_cubins; i++) {
    const char *a = m->cubins[i].arch;
    int n = arch_number(a), major = n / 10, minor = n % 10;
    int arch_specific = a[strlen(a) - 1] == 'a'; /* sm_90a runs on sm_90 only */
    if (major != cc_major || minor > cc_minor || (arch_specific && minor != cc_minor)) continue;
    if (minor > best_minor) best = i, best_minor = minor;
  }
  if (best >= 0) return best;
  if (m->ptx_arch[0] && arch_number(m->ptx_arch) <= device) return MKC_AOT_PTX;
  return MKC_AOT_NONE;
}
