/* An NVRTC double for the fake driver (driver.c): "compiling" checks the
 * options mkc passes and wraps the source into an image only the fake
 * driver loads (fake.h), with a ptxas report in the log. It reports version
 * 0.1 so the kernel cache never mixes its images with real NVRTC's (the
 * version is part of the key); MKC_FAKE_NVRTC_VERSION=MAJOR.MINOR says
 * another, for the driver-version check. The real NVRTC is tested by
 * test_nvrtc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

/* Built with -fvisibility=hidden: only NVRTC's entry points are exported. */
#define API __attribute__((visibility("default")))

typedef int nvrtcResult;
enum {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_OUT_OF_MEMORY = 1,
  NVRTC_ERROR_INVALID_INPUT = 3,
  NVRTC_ERROR_INVALID_PROGRAM = 4,
  NVRTC_ERROR_INVALID_OPTION = 5,
  NVRTC_ERROR_COMPILATION = 6,
  NVRTC_ERROR_INTERNAL_ERROR = 11,
};

typedef struct _nvrtcProgram {
  char *source, *name, *log;
  char *ptx, *cubin; /* cubin: only for a real arch (sm_XY) */
} * nvrtcProgram;

static const int archs[] = {75, 80, 86, 87, 89, 90, 100, 120};

#define ENTER(name, ...)                                                                           \
  do {                                                                                             \
    fake_trace(name __VA_ARGS__);                                                                  \
    if (fake_should_fail("MKC_FAKE_NVRTC_FAIL_AT", name)) return NVRTC_ERROR_INTERNAL_ERROR;       \
  } while (0)

API const char *nvrtcGetErrorString(nvrtcResult r) {
  switch (r) {
  case NVRTC_SUCCESS:
    return "NVRTC_SUCCESS";
  case NVRTC_ERROR_OUT_OF_MEMORY:
    return "NVRTC_ERROR_OUT_OF_MEMORY";
  case NVRTC_ERROR_INVALID_INPUT:
    return "NVRTC_ERROR_INVALID_INPUT";
  case NVRTC_ERROR_INVALID_PROGRAM:
    return "NVRTC_ERROR_INVALID_PROGRAM";
  case NVRTC_ERROR_INVALID_OPTION:
    return "NVRTC_ERROR_INVALID_OPTION";
  case NVRTC_ERROR_COMPILATION:
    return "NVRTC_ERROR_COMPILATION";
  case NVRTC_ERROR_INTERNAL_ERROR:
    return "NVRTC_ERROR_INTERNAL_ERROR";
  }
  return "NVRTC_ERROR unknown";
}

API nvrtcResult nvrtcVersion(int *major, int *minor) {
  ENTER("nvrtcVersion", );
  *major = 0;
  *minor = 1;
  const char *v = getenv("MKC_FAKE_NVRTC_VERSION");
  if (v && *v && sscanf(v, "%d.%d", major, minor) != 2) return NVRTC_ERROR_INVALID_INPUT;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
  ENTER("nvrtcGetNumSupportedArchs", );
  *n = (int)(sizeof archs / sizeof *archs);
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetSupportedArchs(int *out) {
  ENTER("nvrtcGetSupportedArchs", );
  memcpy(out, archs, sizeof archs);
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
                                   int n_headers, const char *const *headers,
                                   const char *const *include_names) {
  ENTER("nvrtcCreateProgram", );
  if (!prog || !src) return NVRTC_ERROR_INVALID_INPUT;
  if (n_headers != 0) return NVRTC_ERROR_INVALID_INPUT; /* mkc's kernels stand alone */
  nvrtcProgram p = calloc(1, sizeof *p);
  if (!p || !(p->source = strdup(src)) || !(p->name = strdup(name ? name : "default_program"))) {
    if (p) free(p->source);
    free(p);
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  *prog = p;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
  ENTER("nvrtcDestroyProgram", );
  if (!prog || !*prog) return NVRTC_ERROR_INVALID_PROGRAM;
  nvrtcProgram p = *prog;
  free(p->source);
  free(p->name);
  free(p->log);
  free(p->ptx);
  free(p->cubin);
  free(p);
  *prog = NULL;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n_opts, const char *const *opts) {
  const char *arch = NULL;
  int ptxas_v = 0, unknown_option = 0;
  for (int i = 0; i < n_opts; i++) {
    if (strncmp(opts[i], "--gpu-architecture=", 19) == 0)
      arch = opts[i] + 19;
    else if (strcmp(opts[i], "--ptxas-options=-v") == 0)
      ptxas_v = 1;
    else if (strcmp(opts[i], "--std=c++17") != 0 && strcmp(opts[i], "-lineinfo") != 0)
      unknown_option = 1; /* one mkc does not pass today */
  }
  ENTER("nvrtcCompileProgram", " %s", arch ? arch : "(no arch)");
  if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
  if (unknown_option || !arch ||
      (strncmp(arch, "sm_", 3) != 0 && strncmp(arch, "compute_", 8) != 0))
    return NVRTC_ERROR_INVALID_OPTION;
  free(p->log);
  free(p->ptx);
  free(p->cubin);
  p->log = p->ptx = p->cubin = NULL;
  int n = atoi(strchr(arch, '_') + 1);
  if (asprintf(&p->ptx, "%scompute_%d\n%s\n%s", FAKE_PTX_MAGIC, n, p->name, p->source) < 0) {
    p->ptx = NULL;
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  if (arch[0] == 's' &&
      asprintf(&p->cubin, "%s%s\n%s\n%s", FAKE_CUBIN_MAGIC, arch, p->name, p->source) < 0) {
    p->cubin = NULL;
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  /* The report mkc parses (runtime/backend/cuda/ptxas.c); the figures are the fake's own. */
  int rc = ptxas_v ? asprintf(&p->log,
                              "ptxas info    : 0 bytes gmem\n"
                              "ptxas info    : Compiling entry function 'mkc_step' for '%s'\n"
                              "ptxas info    : Function properties for mkc_step\n"
                              "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                              "ptxas info    : Used 32 registers, used 1 barriers, 0 bytes smem, "
                              "384 bytes cmem[0]\n",
                              arch)
                   : asprintf(&p->log, "%s", "");
  if (rc < 0) {
    p->log = NULL;
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) {
  ENTER("nvrtcGetProgramLogSize", );
  *n = p && p->log ? strlen(p->log) + 1 : 1;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *out) {
  ENTER("nvrtcGetProgramLog", );
  strcpy(out, p && p->log ? p->log : "");
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) {
  ENTER("nvrtcGetPTXSize", );
  if (!p || !p->ptx) return NVRTC_ERROR_INVALID_PROGRAM;
  *n = strlen(p->ptx) + 1;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *out) {
  ENTER("nvrtcGetPTX", );
  if (!p || !p->ptx) return NVRTC_ERROR_INVALID_PROGRAM;
  strcpy(out, p->ptx);
  return NVRTC_SUCCESS;
}

/* Like NVRTC's: 0 after compiling for a virtual arch. */
API nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) {
  ENTER("nvrtcGetCUBINSize", );
  if (!p || !p->ptx) return NVRTC_ERROR_INVALID_PROGRAM;
  *n = p->cubin ? strlen(p->cubin) + 1 : 0;
  return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *out) {
  ENTER("nvrtcGetCUBIN", );
  if (!p || !p->cubin) return NVRTC_ERROR_INVALID_PROGRAM;
  strcpy(out, p->cubin);
  return NVRTC_SUCCESS;
}
