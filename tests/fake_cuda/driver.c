/* A CUDA driver double, so make test runs the cuda backend's host code
 * (runtime/backend/cuda/backend.c, session.c, the decode loop, bench, --kernel) on a
 * machine without a GPU. It exports the driver entry points runtime/backend/cuda/driver.c
 * loads, with the documented signatures, and:
 *   - keeps device memory apart from host memory: a CUdeviceptr is not a
 *     host address, and fresh device memory holds garbage (0xA5), not zeros;
 *   - queues stream work until the stream is synchronized, so a read that
 *     skips the synchronization sees stale bytes;
 *   - queues the legacy NULL stream's work too (cuMemsetD8, cuMemcpyHtoD and
 *     cuMemcpyDtoD return before the device is done), and reports a race
 *     between it and a non-blocking stream's work either way round
 *     (driver_stream.c);
 *   - computes residency from threads, shared memory and registers per
 *     thread (driver_module.c);
 *   - records a captured stream into a graph that replays the recorded work,
 *     with the launch arguments as they were at capture;
 *   - runs a launched mkc_step with the host program's own CPU backend
 *     (mkc_cpu_kernel_open/launch, found with dlsym: mkc and the tests are
 *     linked -rdynamic) on an image from the fake NVRTC (fake.h).
 * Where mkc does something the real driver would refuse, or that would race
 * on a GPU, it prints "fake cuda: misuse: CALL: why" and fails the call.
 * It says nothing about the device code itself: NVRTC, PTX, the registers
 * the code really needs, timing and the memory model are what only a GPU run shows.
 *
 * Environment: MKC_FAKE_CUDA_ARCH (sm_90), MKC_FAKE_CUDA_SMS (2),
 * MKC_FAKE_CUDA_DEVICES (1), MKC_FAKE_CUDA_REGISTERS (32: mkc_step's registers
 * per thread, as the fake NVRTC reports them), MKC_FAKE_CUDA_NO_COOP=1 (the device cannot launch
 * cooperative kernels), MKC_FAKE_CUDA_NO_COOP_CAPTURE=1 (capturing one is
 * refused), MKC_FAKE_CUDA_DRIVER_VERSION (13000: the CUDA version
 * cuDriverGetVersion says, 1000 * major + 10 * minor), and fake.h's trace and
 * injected failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static const struct {
  CUresult r;
  const char *name;
} error_names[] = {
    {OK, "CUDA_SUCCESS"},
    {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {E_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
    {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {E_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {E_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
    {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
    {E_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE"},
    {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {E_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {E_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
    {E_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {E_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
    {E_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {E_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {E_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {E_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

struct fake_driver drv;
const char *const kind_names[] = {"stream", "module", "graph", "graph exec"};

void misuse(const char *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fake cuda: misuse: %s: ", call);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* sm_XY from $MKC_FAKE_CUDA_ARCH as major/minor. */
void device_cc(int *major, int *minor) {
  const char *a = getenv("MKC_FAKE_CUDA_ARCH");
  int n = a && strncmp(a, "sm_", 3) == 0 ? atoi(a + 3) : 90;
  *major = n / 10;
  *minor = n % 10;
}

CUresult injected(const char *name) {
  return strcmp(name, "cuMemAlloc_v2") == 0 ? E_OUT_OF_MEMORY : E_UNKNOWN;
}

CUresult need_ctx(const char *call) {
  if (!drv.initialized) {
    misuse(call, "called before cuInit");
    return E_NOT_INITIALIZED;
  }
  if (!drv.current || drv.current->refs < 1) {
    misuse(call, "no current context");
    return E_INVALID_CONTEXT;
  }
  return OK;
}

int live_find(void *p, enum kind kind) {
  for (int i = 0; p && i < drv.n_live; i++)
    if (drv.live[i].p == p && drv.live[i].kind == kind) return i;
  return -1;
}

int live_add(void *p, enum kind kind) {
  if (drv.n_live == (int)(sizeof drv.live / sizeof *drv.live)) return -1;
  drv.live[drv.n_live].p = p;
  drv.live[drv.n_live].kind = kind;
  drv.n_live++;
  return 0;
}

void live_remove(int i) { drv.live[i] = drv.live[--drv.n_live]; }

CUresult need_live(const char *call, void *p, enum kind kind) {
  if (live_find(p, kind) >= 0) return OK;
  misuse(call, "%p is not a live %s", p, kind_names[kind]);
  return E_INVALID_HANDLE;
}

/* The allocation holding [dev, dev + bytes), or NULL. */
alloc *find_alloc(CUdeviceptr dev, size_t bytes) {
  for (int i = 0; i < drv.n_allocs; i++) {
    alloc *a = &drv.allocs[i];
    if (dev >= a->dev && dev - a->dev <= a->size && bytes <= a->size - (dev - a->dev)) return a;
  }
  return NULL;
}

unsigned char *device_bytes(const char *call, CUdeviceptr dev, size_t bytes) {
  alloc *a = find_alloc(dev, bytes);
  if (a) return a->host + (dev - a->dev);
  misuse(call, "[0x%llx, +%zu) is not inside one allocation", dev, bytes);
  return NULL;
}

/* ---- initialization, device, context ---- */

API CUresult cuInit(unsigned flags) {
  ENTER("cuInit", );
  if (flags != 0) return E_INVALID_VALUE;
  drv.initialized = 1;
  if (!drv.next_dev) drv.next_dev = 0x200000000000ULL; /* far from the host's heap */
  return OK;
}

API CUresult cuDriverGetVersion(int *v) {
  ENTER("cuDriverGetVersion", );
  if (!v) return E_INVALID_VALUE;
  *v = env_int("MKC_FAKE_CUDA_DRIVER_VERSION", 13000);
  return OK;
}

API CUresult cuGetErrorName(CUresult r, const char **name) {
  for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++)
    if (error_names[i].r == r) {
      *name = error_names[i].name;
      return OK;
    }
  *name = NULL;
  return E_INVALID_VALUE;
}

API CUresult cuDeviceGetCount(int *n) {
  ENTER("cuDeviceGetCount", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  *n = env_int("MKC_FAKE_CUDA_DEVICES", 1);
  return OK;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  ENTER("cuDeviceGet", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= env_int("MKC_FAKE_CUDA_DEVICES", 1)) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  ENTER("cuDeviceGetName", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (d != 0 || !name || len < 1) return d != 0 ? E_INVALID_DEVICE : E_INVALID_VALUE;
  snprintf(name, (size_t)len, "mkc fake CUDA device (the CPU backend behind a driver double)");
  return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  ENTER("cuDeviceGetAttribute", " %d", attr);
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (d != 0) return E_INVALID_DEVICE;
  int major, minor;
  device_cc(&major, &minor);
  switch (attr) {
  case 16: /* MULTIPROCESSOR_COUNT */
    *v = env_int("MKC_FAKE_CUDA_SMS", 2);
    return OK;
  case 75: /* COMPUTE_CAPABILITY_MAJOR */
    *v = major;
    return OK;
  case 76: /* COMPUTE_CAPABILITY_MINOR */
    *v = minor;
    return OK;
  case 95: /* COOPERATIVE_LAUNCH */
    *v = !env_int("MKC_FAKE_CUDA_NO_COOP", 0);
    return OK;
  case 97: /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    *v = SMEM_OPTIN;
    return OK;
  }
  misuse("cuDeviceGetAttribute", "attribute %d is not one the fake knows", attr);
  return E_INVALID_VALUE;
}

API CUresult cuDevicePrimaryCtxRetain(struct CUctx_st **ctx, CUdevice d) {
  ENTER("cuDevicePrimaryCtxRetain", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (d != 0) return E_INVALID_DEVICE;
  drv.ctx.refs++;
  *ctx = &drv.ctx;
  return OK;
}

/* Releasing the last reference destroys the context: whatever mkc still
 * holds in it then is a leak. */
API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  ENTER("cuDevicePrimaryCtxRelease_v2", );
  if (d != 0) return E_INVALID_DEVICE;
  if (drv.ctx.refs < 1) {
    misuse("cuDevicePrimaryCtxRelease_v2", "released more often than retained");
    return E_INVALID_CONTEXT;
  }
  if (--drv.ctx.refs > 0) return OK;
  drain_legacy(); /* the context's end waits for its work */
  if (fake_injected) return OK;
  for (int i = 0; i < drv.n_allocs; i++)
    misuse("cuDevicePrimaryCtxRelease_v2", "leak: %zu bytes of device memory at 0x%llx",
           drv.allocs[i].size, drv.allocs[i].dev);
  for (int i = 0; i < drv.n_live; i++)
    misuse("cuDevicePrimaryCtxRelease_v2", "leak: a %s", kind_names[drv.live[i].kind]);
  return OK;
}

API CUresult cuCtxSetCurrent(struct CUctx_st *ctx) {
  ENTER("cuCtxSetCurrent", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (ctx && (ctx != &drv.ctx || ctx->refs < 1)) {
    misuse("cuCtxSetCurrent", "not a live context");
    return E_INVALID_CONTEXT;
  }
  drv.current = ctx;
  return OK;
}

API CUresult cuCtxSynchronize(void) {
  ENTER("cuCtxSynchronize", );
  CUresult r = need_ctx("cuCtxSynchronize");
  if (r || (r = sync_call("cuCtxSynchronize", NULL)) || (r = drain_legacy())) return r;
  for (int i = 0; i < drv.n_live; i++)
    if (drv.live[i].kind == K_STREAM) {
      CUresult ri = drain(drv.live[i].p);
      if (!r) r = ri;
    }
  return r;
}
