/* NVRTC through dlopen: only the handful of entry points mkc uses, declared
 * here with NVRTC's documented C signatures. */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dl.h"

typedef struct _nvrtcProgram *nvrtc_program;
typedef int nvrtc_result; /* NVRTC_SUCCESS = 0 */

static struct {
  void *dl;
  const char *(*get_error_string)(nvrtc_result);
  nvrtc_result (*version)(int *, int *);
  nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *,
                         const char *const *);
  nvrtc_result (*destroy)(nvrtc_program *);
  nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
  nvrtc_result (*log_size)(nvrtc_program, size_t *);
  nvrtc_result (*log)(nvrtc_program, char *);
  nvrtc_result (*ptx_size)(nvrtc_program, size_t *);
  nvrtc_result (*ptx)(nvrtc_program, char *);
  nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
  nvrtc_result (*cubin)(nvrtc_program, char *);
  nvrtc_result (*num_archs)(int *);
  nvrtc_result (*archs)(int *);
} api;
static char api_path[4200]; /* the library opened */

static void *open_first(char *why, size_t why_size) {
  char paths[3][4200];
  int n = 0;
  const char *env = getenv("MKC_NVRTC");
  if (env && *env) {
    /* Named: that library or none, as MKC_LIBCUDA (driver.c). */
    void *dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (dl) {
      snprintf(api_path, sizeof api_path, "%s", env);
      return dl;
    }
    snprintf(why, why_size, "libnvrtc not loaded from MKC_NVRTC=%s (%s)", env, dlerror());
    return NULL;
  }
  const char *home = getenv("CUDA_HOME");
  if (home && *home) snprintf(paths[n++], sizeof paths[0], "%s/lib64/libnvrtc.so", home);
  snprintf(paths[n++], sizeof paths[0], "/usr/local/cuda/lib64/libnvrtc.so");
  snprintf(paths[n++], sizeof paths[0], "libnvrtc.so");
  for (int i = 0; i < n; i++) {
    void *dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (dl) {
      snprintf(api_path, sizeof api_path, "%.4199s", paths[i]);
      return dl;
    }
  }
  /* The versioned sonames, for installs without the dev symlink. */
  static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
  for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++) {
    void *dl = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (dl) {
      snprintf(api_path, sizeof api_path, "%s", sonames[i]);
      return dl;
    }
  }
  snprintf(why, why_size,
           "libnvrtc.so not found (tried %s%s/usr/local/cuda/lib64 and the loader path; "
           "MKC_NVRTC names it)",
           home && *home ? paths[0] : "", home && *home ? ", " : "");
  return NULL;
}

int mkc_nvrtc_load(char *why, size_t why_size) {
  if (api.dl) return 0;
  void *dl = open_first(why, why_size);
  if (!dl) return -1;
  /* One row per entry point: deliberately alike (driver.c and libclang.c list theirs alike). */
  const mkc_dl_sym syms[] = {
      {(void **)&api.get_error_string, "nvrtcGetErrorString"},
      {(void **)&api.version, "nvrtcVersion"},
      {(void **)&api.create, "nvrtcCreateProgram"},
      {(void **)&api.destroy, "nvrtcDestroyProgram"},
      {(void **)&api.compile, "nvrtcCompileProgram"},
      {(void **)&api.log_size, "nvrtcGetProgramLogSize"},
      {(void **)&api.log, "nvrtcGetProgramLog"},
      {(void **)&api.ptx_size, "nvrtcGetPTXSize"},
      {(void **)&api.ptx, "nvrtcGetPTX"},
      {(void **)&api.cubin_size, "nvrtcGetCUBINSize"},
      {(void **)&api.cubin, "nvrtcGetCUBIN"},
      {(void **)&api.num_archs, "nvrtcGetNumSupportedArchs"},
      {(void **)&api.archs, "nvrtcGetSupportedArchs"},
  };
  const char *missing = mkc_dl_resolve(dl, syms, sizeof syms / sizeof *syms);
  if (missing) {
    snprintf(why, why_size, "libnvrtc has no %s (too old?)", missing);
    dlclose(dl);
    memset(&api, 0, sizeof api);
    return -1;
  }
  api.dl = dl;
  return 0;
}

int mkc_nvrtc_supported_archs(int *archs, int max) {
  char why[256];
  int n = 0;
  if (mkc_nvrtc_load(why, sizeof why) != 0 || api.num_archs(&n) != 0 || n > max) return -1;
  return api.archs(archs) == 0 ? n : -1;
}

static int compile_count;

int mkc_nvrtc_compile_count(void) { return compile_count; }

int mkc_nvrtc_options(const char *arch, const char **opts, char *arch_opt, size_t arch_opt_size) {
  int n = 0;
  snprintf(arch_opt, arch_opt_size, "--gpu-architecture=%s", arch);
  opts[n++] = arch_opt;
  opts[n++] = "--std=c++17";
  opts[n++] = "-lineinfo";
  if (strncmp(arch, "sm_", 3) == 0)
    opts[n++] = "--ptxas-options=-v"; /* ptxas runs only for a real arch */
  return n;
}

int mkc_nvrtc_version(char *why, size_t why_size) {
  static int known; /* the library stays loaded: asked once */
  if (known > 0) return known;
  int major, minor;
  char ignored[256];
  if (!why) why = ignored, why_size = sizeof ignored;
  if (mkc_nvrtc_load(why, why_size) != 0) return -1;
  int line = __LINE__ + 1;
  nvrtc_result r = api.version(&major, &minor);
  if (r != 0) {
    snprintf(why, why_size, "nvrtcVersion failed at %s:%d: %s", __FILE__, line,
             api.get_error_string(r));
    return -1;
  }
  known = major * 1000 + minor * 10;
  return known;
}

const char *mkc_nvrtc_path(void) { return api.dl ? api_path : NULL; }

int mkc_nvrtc_check_driver(int nvrtc_version, int driver_version, int ptx, const char *aot_dir) {
  int n_major = nvrtc_version / 1000, n_minor = nvrtc_version % 1000 / 10;
  int d_major = driver_version / 1000, d_minor = driver_version % 1000 / 10;
  if (ptx ? nvrtc_version <= driver_version : n_major <= d_major) return 0;
  if (aot_dir)
    fprintf(stderr,
            "mkc: error: %s was compiled by NVRTC %d.%d, newer than the CUDA %d.%d this CUDA "
            "driver supports: it cannot load the kernel. Install an NVIDIA driver that supports "
            "CUDA %d.%d, or run mkc compile again with an NVRTC no newer than CUDA %d.%d "
            "(MKC_NVRTC or CUDA_HOME pointing at an older CUDA toolkit)\n",
            aot_dir, n_major, n_minor, d_major, d_minor, n_major, n_minor, d_major, d_minor);
  else
    fprintf(stderr,
            "mkc: error: NVRTC %d.%d (%s) builds kernels for CUDA %d.%d, newer than the CUDA "
            "%d.%d this CUDA driver supports: it cannot load them. Install an NVIDIA driver that "
            "supports CUDA %d.%d, or point MKC_NVRTC (or CUDA_HOME) at the NVRTC of a CUDA "
            "toolkit no newer than %d.%d\n",
            n_major, n_minor, mkc_nvrtc_path() ? mkc_nvrtc_path() : "libnvrtc", n_major, n_minor,
            d_major, d_minor, n_major, n_minor, d_major, d_minor);
  return -1;
}

/* Reports a failed call by name, place and NVRTC's name for the error. */
#define NVRTC_CHECK(name, call)                                                                    \
  do {                                                                                             \
    nvrtc_result r_ = (call);                                                                      \
    if (r_ != 0) {                                                                                 \
      fprintf(stderr, "mkc: error: nvrtc: %s failed at %s:%d: %s\n", name, __FILE__, __LINE__,     \
              api.get_error_string(r_));                                                           \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

static void print_numbered_failure(const char *source, const char *name, const char *log) {
  /* Lines the log blames, as "name(LINE):", are marked in the listing. */
  size_t name_len = strlen(name);
  int n_lines = 1;
  for (const char *p = source; *p; p++) n_lines += *p == '\n';
  char *marked = calloc((size_t)n_lines + 2, 1);
  for (const char *p = log; marked && (p = strstr(p, name)); p += name_len) {
    int line = 0;
    if (p[name_len] == '(' && sscanf(p + name_len + 1, "%d", &line) == 1 && line >= 1 &&
        line <= n_lines)
      marked[line] = 1;
  }
  int line = 1;
  const char *start = source;
  while (*start) {
    const char *end = strchr(start, '\n');
    int len = end ? (int)(end - start) : (int)strlen(start);
    int near = 0;
    for (int d = -3; marked && d <= 3; d++)
      if (line + d >= 1 && line + d <= n_lines && marked[line + d]) near = 1;
    if (near) fprintf(stderr, "%s%5d | %.*s\n", marked[line] ? ">>" : "  ", line, len, start);
    if (!end) break;
    start = end + 1;
    line++;
  }
  free(marked);
}

int mkc_nvrtc_compile(const char *source, const char *name, const char *arch, int want_ptx,
                      mkc_nvrtc_output *out) {
  memset(out, 0, sizeof *out);
  char why[512];
  if (mkc_nvrtc_load(why, sizeof why) != 0) {
    fprintf(stderr, "mkc: error: nvrtc: %s\n", why);
    return -1;
  }
  char arch_opt[64];
  const char *opts[MKC_NVRTC_MAX_OPTIONS];
  int n_opts = mkc_nvrtc_options(arch, opts, arch_opt, sizeof arch_opt);
  int is_real = strncmp(arch, "sm_", 3) == 0;
  compile_count++;
  nvrtc_program prog = NULL;
  NVRTC_CHECK("nvrtcCreateProgram", api.create(&prog, source, name, 0, NULL, NULL));
  nvrtc_result rc = api.compile(prog, n_opts, opts);
  size_t size = 0;
  NVRTC_CHECK("nvrtcGetProgramLogSize", api.log_size(prog, &size));
  out->log = calloc(size + 1, 1);
  if (!out->log) goto oom;
  NVRTC_CHECK("nvrtcGetProgramLog", api.log(prog, out->log));
  if (rc != 0) {
    fprintf(stderr, "mkc: error: nvrtc: compiling %s for %s failed: %s\noptions:", name, arch,
            api.get_error_string(rc));
    for (int i = 0; i < n_opts; i++) fprintf(stderr, " %s", opts[i]);
    fprintf(stderr, "\n%s", out->log);
    print_numbered_failure(source, name, out->log);
    goto fail;
  }
  if (want_ptx || !is_real) {
    NVRTC_CHECK("nvrtcGetPTXSize", api.ptx_size(prog, &size));
    out->ptx = calloc(size + 1, 1);
    if (!out->ptx) goto oom;
    NVRTC_CHECK("nvrtcGetPTX", api.ptx(prog, out->ptx));
  }
  if (is_real) {
    NVRTC_CHECK("nvrtcGetCUBINSize", api.cubin_size(prog, &out->cubin_size));
    out->cubin = malloc(out->cubin_size ? out->cubin_size : 1);
    if (!out->cubin) goto oom;
    NVRTC_CHECK("nvrtcGetCUBIN", api.cubin(prog, out->cubin));
  }
  int line = __LINE__ + 1;
  nvrtc_result dr = api.destroy(&prog);
  if (dr != 0)
    fprintf(stderr, "mkc: warning: nvrtc: nvrtcDestroyProgram failed at %s:%d: %s\n", __FILE__,
            line, api.get_error_string(dr));
  return 0;
oom:
  fprintf(stderr, "mkc: error: nvrtc: out of memory\n");
fail:
  if (prog) api.destroy(&prog);
  return -1;
}

void mkc_nvrtc_output_free(mkc_nvrtc_output *out) {
  free(out->log);
  free(out->ptx);
  free(out->cubin);
  memset(out, 0, sizeof *out);
}
