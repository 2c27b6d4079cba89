/* What the fake CUDA driver and the fake NVRTC share: the image format the
 * fake NVRTC writes and the fake driver loads, the call trace, and the
 * injected failure (fake.c, linked into each library: each keeps its own
 * count of calls).
 *
 *   MKC_FAKE_CUDA_TRACE=FILE  one line per call appended to FILE
 *   MKC_FAKE_CUDA_FAIL_AT=N   the driver's N-th call fails (1-based)
 *   MKC_FAKE_NVRTC_FAIL_AT=N  NVRTC's N-th call fails */
#ifndef MKC_FAKE_CUDA_H
#define MKC_FAKE_CUDA_H

/* A "cubin": the magic line, the arch ("sm_90"), the program name, then the
 * CUDA source, NUL-terminated. A "PTX": the same with compute_XY. */
#define FAKE_CUBIN_MAGIC "MKC-FAKE-CUBIN\n"
#define FAKE_PTX_MAGIC "// MKC-FAKE-PTX\n"

/* Appends one formatted line to $MKC_FAKE_CUDA_TRACE. */
void fake_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Counts one call; 1 when it is the one $env says must fail. */
int fake_should_fail(const char *env, const char *call);

/* Set once a call was made to fail: what the caller then leaves behind is
 * the failure's doing, not a leak. */
extern int fake_injected;

#endif
