/* What the fake CUDA driver and the fake NVRTC share: the image format the
 * fake NVRTC writes and the fake driver loads, the call trace, and the
 * injected failure. Header-only: each of the two libraries has its own copy
 * of these statics, and they meet only through the trace file and the
 * environment.
 *
 *   MKC_FAKE_CUDA_TRACE=FILE  one line per call appended to FILE
 *   MKC_FAKE_CUDA_FAIL_AT=N   the N-th traced call fails (1-based; the
 *                             driver and NVRTC count separately, so set
 *                             MKC_FAKE_NVRTC_FAIL_AT for NVRTC's) */
#ifndef MKC_FAKE_CUDA_H
#define MKC_FAKE_CUDA_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A "cubin": the magic line, the arch ("sm_90"), the program name, then the
 * CUDA source, NUL-terminated. A "PTX": the same with compute_XY. */
#define FAKE_CUBIN_MAGIC "MKC-FAKE-CUBIN\n"
#define FAKE_PTX_MAGIC "// MKC-FAKE-PTX\n"

/* Appends one formatted line to $MKC_FAKE_CUDA_TRACE. */
static void fake_trace(const char *fmt, ...) {
  const char *path = getenv("MKC_FAKE_CUDA_TRACE");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* Set once a call was made to fail: what the caller then leaves behind is
 * the failure's doing, not a leak. */
static int fake_injected;

/* Counts one call; 1 when it is the one $env says must fail. */
static int fake_should_fail(const char *env, const char *call) {
  static int calls;
  calls++;
  const char *at = getenv(env);
  if (!at || atoi(at) != calls) return 0;
  fake_injected = 1;
  fprintf(stderr, "fake cuda: injected: %s fails (call %d, %s)\n", call, calls, env);
  return 1;
}

#endif
