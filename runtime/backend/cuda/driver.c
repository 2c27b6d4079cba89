/* libcuda through dlopen. The versioned names (cuMemAlloc_v2, ...) are the
 * ones cuda.h maps the plain names to; we ask for them directly. */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dl.h"

mkc_cu_api mkc_cu;
static void *cuda_dl;

int mkc_cuda_load(char *why, size_t why_size) {
  if (cuda_dl) return 0;
  const char *path = getenv("MKC_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    snprintf(why, why_size, "no CUDA driver (%s not found)", path);
    return -1;
  }
  const mkc_dl_sym syms[] = {
#define SYM(field, name) {(void **)&mkc_cu.field, name}
      SYM(Init, "cuInit"),
      SYM(DriverGetVersion, "cuDriverGetVersion"),
      SYM(GetErrorName, "cuGetErrorName"),
      SYM(DeviceGetCount, "cuDeviceGetCount"),
      SYM(DeviceGet, "cuDeviceGet"),
      SYM(DeviceGetName, "cuDeviceGetName"),
      SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
      SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      SYM(CtxSetCurrent, "cuCtxSetCurrent"),
      SYM(ModuleLoadData, "cuModuleLoadData"),
      SYM(ModuleUnload, "cuModuleUnload"),
      SYM(ModuleGetFunction, "cuModuleGetFunction"),
      SYM(FuncSetAttribute, "cuFuncSetAttribute"),
      SYM(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
      SYM(MemAlloc, "cuMemAlloc_v2"),
      SYM(MemFree, "cuMemFree_v2"),
      SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
      SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
      SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"),
      SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
      SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
      SYM(MemsetD8, "cuMemsetD8_v2"),
      SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
      SYM(MemsetD8Async, "cuMemsetD8Async"),
      SYM(StreamCreate, "cuStreamCreate"),
      SYM(StreamDestroy, "cuStreamDestroy_v2"),
      SYM(StreamSynchronize, "cuStreamSynchronize"),
      SYM(CtxSynchronize, "cuCtxSynchronize"),
      SYM(LaunchCooperativeKernel, "cuLaunchCooperativeKernel"),
      SYM(StreamBeginCapture, "cuStreamBeginCapture_v2"),
      SYM(StreamEndCapture, "cuStreamEndCapture"),
      SYM(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
      SYM(GraphLaunch, "cuGraphLaunch"),
      SYM(GraphExecDestroy, "cuGraphExecDestroy"),
      SYM(GraphDestroy, "cuGraphDestroy"),
#undef SYM
  };
  const char *missing = mkc_dl_resolve(dl, syms, sizeof syms / sizeof *syms);
  if (missing) {
    snprintf(why, why_size, "the CUDA driver %s has no %s (driver too old)", path, missing);
    memset(&mkc_cu, 0, sizeof mkc_cu);
    dlclose(dl);
    return -1;
  }
  int line = __LINE__ + 1;
  CUresult r = mkc_cu.Init(0);
  if (r != 0) {
    snprintf(why, why_size, "cuInit failed at %s:%d: %s", __FILE__, line, mkc_cu_error_name(r));
    memset(&mkc_cu, 0, sizeof mkc_cu);
    dlclose(dl);
    return -1;
  }
  cuda_dl = dl;
  return 0;
}

const char *mkc_cu_error_name(CUresult r) {
  static _Thread_local char buf[32];
  const char *name = NULL;
  if (mkc_cu.GetErrorName && mkc_cu.GetErrorName(r, &name) == 0 && name) return name;
  snprintf(buf, sizeof buf, "CUresult %d", r);
  return buf;
}

int mkc_cu_fail(const char *call, const char *file, int line, CUresult r) {
  fprintf(stderr, "mkc: error: cuda: %s failed at %s:%d: %s\n", call, file, line,
          mkc_cu_error_name(r));
  return -1;
}

void mkc_cu_warn(const char *call, const char *file, int line, CUresult r) {
  fprintf(stderr, "mkc: warning: cuda: %s failed at %s:%d: %s\n", call, file, line,
          mkc_cu_error_name(r));
}

/* One device query; a failure names the call and its place, as CU_CHECK does. */
#define QUERY(name, args)                                                                          \
  do {                                                                                             \
    CUresult r_ = mkc_cu.name args;                                                                \
    if (r_ != 0) {                                                                                 \
      snprintf(why, why_size, "querying CUDA device 0: cu%s failed at %s:%d: %s", #name, __FILE__, \
               __LINE__, mkc_cu_error_name(r_));                                                   \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

int mkc_cuda_device_get(mkc_cuda_device *d, char *why, size_t why_size) {
  /* Asked once a session (by exec/session.c, or cli/loaded.c picking an AOT image) and by
   * bench for the arch it prints: the driver is queried once. */
  static mkc_cuda_device known;
  static int have;
  if (have) {
    *d = known;
    return 0;
  }
  memset(d, 0, sizeof *d);
  if (mkc_cuda_load(why, why_size) != 0) return -1;
  int count = 0, line = __LINE__ + 1;
  CUresult r = mkc_cu.DeviceGetCount(&count);
  if (r != 0) {
    snprintf(why, why_size, "no CUDA device (cuDeviceGetCount failed at %s:%d: %s)", __FILE__, line,
             mkc_cu_error_name(r));
    return -1;
  }
  if (count == 0) {
    snprintf(why, why_size, "no CUDA device (the driver sees none)");
    return -1;
  }
  QUERY(DeviceGet, (&d->dev, 0));
  QUERY(DeviceGetName, (d->name, sizeof d->name, d->dev));
  QUERY(DeviceGetAttribute, (&d->cc_major, MKC_CU_ATTR_CC_MAJOR, d->dev));
  QUERY(DeviceGetAttribute, (&d->cc_minor, MKC_CU_ATTR_CC_MINOR, d->dev));
  QUERY(DeviceGetAttribute, (&d->sm_count, MKC_CU_ATTR_SM_COUNT, d->dev));
  QUERY(DeviceGetAttribute, (&d->smem_optin, MKC_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN, d->dev));
  QUERY(DeviceGetAttribute, (&d->cooperative, MKC_CU_ATTR_COOPERATIVE_LAUNCH, d->dev));
  QUERY(DriverGetVersion, (&d->driver_version));
  snprintf(d->arch, sizeof d->arch, "sm_%d%d", d->cc_major, d->cc_minor);
  known = *d;
  have = 1;
  return 0;
}
