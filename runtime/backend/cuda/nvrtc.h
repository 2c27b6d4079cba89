/* NVRTC, loaded at run time: mkc builds and runs without the CUDA toolkit,
 * and compiles kernels wherever libnvrtc exists (no GPU or driver needed). */
#ifndef MKC_NVRTC_H
#define MKC_NVRTC_H

#include <stddef.h>

typedef struct mkc_nvrtc_output {
  char *log;   /* NVRTC's log (ptxas -v report included); always fetched */
  char *ptx;   /* NUL-terminated; NULL when not asked for */
  void *cubin; /* NULL when compiling for a virtual arch (compute_XY) */
  size_t cubin_size;
} mkc_nvrtc_output;

/* Loads libnvrtc ($MKC_NVRTC, $CUDA_HOME/lib64, /usr/local/cuda/lib64, the
 * loader path). Returns 0, or -1 with the reason in why. */
int mkc_nvrtc_load(char *why, size_t why_size);

/* NVRTC's version as major * 1000 + minor * 10, or -1 with the reason in
 * why (which may be NULL). */
int mkc_nvrtc_version(char *why, size_t why_size);

/* The library mkc_nvrtc_load opened (as it was named to dlopen), or NULL. */
const char *mkc_nvrtc_path(void);

/* Whether the driver can load what NVRTC nvrtc_version made; driver_version
 * is cuDriverGetVersion's (both 1000 * major + 10 * minor). A cubin needs a
 * driver of the same CUDA major version or newer (minor-version
 * compatibility); PTX, which the driver JIT-compiles, needs a driver of
 * NVRTC's CUDA version or newer. 0 when it can; else prints "mkc: error: ..."
 * naming both versions and what to install, and returns -1. aot_dir: the
 * folder of images NVRTC made ahead of time, or NULL for a kernel compiled
 * now. */
int mkc_nvrtc_check_driver(int nvrtc_version, int driver_version, int ptx, const char *aot_dir);

/* Compiles source (named `name` in diagnostics) for arch ("sm_90" gives a
 * cubin, "compute_90" only PTX), with --ptxas-options=-v. On failure prints
 * "mkc: error: nvrtc: ..." with the options and the log, and returns -1;
 * out is filled either way (free with mkc_nvrtc_output_free). */
int mkc_nvrtc_compile(const char *source, const char *name, const char *arch, int want_ptx,
                      mkc_nvrtc_output *out);

/* The options mkc compiles with for arch (arch_opt is storage for one of
 * them); returns how many, at most MKC_NVRTC_MAX_OPTIONS. */
#define MKC_NVRTC_MAX_OPTIONS 8
int mkc_nvrtc_options(const char *arch, const char **opts, char *arch_opt, size_t arch_opt_size);

/* The real archs this NVRTC compiles for, as 80, 90, 100...; their count or -1. */
int mkc_nvrtc_supported_archs(int *archs, int max);

/* How many times this process called NVRTC to compile (the cache tests' witness). */
int mkc_nvrtc_compile_count(void);

void mkc_nvrtc_output_free(mkc_nvrtc_output *out);

#endif
