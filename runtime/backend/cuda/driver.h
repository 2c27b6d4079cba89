/* The CUDA driver API as a table of entry points loaded at run time (dlopen;
 * not the toolkit's cuda.h), so mkc builds, generates,
 * compiles to PTX and inspects on machines without a driver. Only the entry
 * points mkc uses, declared here from the driver API's documented C
 * signatures; CU_CHECK reports the call, file:line and the error's name. */
#ifndef MKC_CUDA_DRIVER_H
#define MKC_CUDA_DRIVER_H

#include <stddef.h>

typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  MKC_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN =
      97,                               /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  MKC_CU_ATTR_SM_COUNT = 16,            /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  MKC_CU_ATTR_CC_MAJOR = 75,            /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  MKC_CU_ATTR_CC_MINOR = 76,            /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
  MKC_CU_ATTR_COOPERATIVE_LAUNCH = 95,  /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  MKC_CU_FUNC_MAX_DYNAMIC_SHARED = 8,   /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  MKC_CU_STREAM_NON_BLOCKING = 1,       /* CU_STREAM_NON_BLOCKING */
  MKC_CU_CAPTURE_MODE_THREAD_LOCAL = 1, /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */
  MKC_CU_ERROR_NO_DEVICE = 100,         /* CUDA_ERROR_NO_DEVICE */
};

typedef struct mkc_cu_api {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*CtxSynchronize)(void);
  CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void **);
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
} mkc_cu_api;

extern mkc_cu_api mkc_cu;

/* Loads libcuda ($MKC_LIBCUDA, else libcuda.so.1 from the loader path) and
 * cuInit(0). Returns 0, or -1 with the reason in why, e.g. "no CUDA driver
 * (libcuda.so.1 not found)". */
int mkc_cuda_load(char *why, size_t why_size);

/* The error's name (CUDA_ERROR_...), or its number when the driver has none. */
const char *mkc_cu_error_name(CUresult r);

/* Prints "mkc: error: cuda: CALL failed at FILE:LINE: NAME" and returns -1. */
int mkc_cu_fail(const char *call, const char *file, int line, CUresult r);

/* The same as "mkc: warning: ...", for calls whose failure mkc survives. */
void mkc_cu_warn(const char *call, const char *file, int line, CUresult r);

#define CU_CHECK(call)                                                                             \
  do {                                                                                             \
    CUresult cu_r_ = mkc_cu.call;                                                                  \
    if (cu_r_ != 0) {                                                                              \
      mkc_cu_fail("cu" #call, __FILE__, __LINE__, cu_r_);                                          \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

/* Teardown: a failed release is reported, and the teardown goes on. */
#define CU_WARN(call)                                                                              \
  do {                                                                                             \
    CUresult cu_r_ = mkc_cu.call;                                                                  \
    if (cu_r_ != 0) mkc_cu_warn("cu" #call, __FILE__, __LINE__, cu_r_);                            \
  } while (0)

/* The first device: its arch as "sm_XY", name, SM count, and the CUDA
 * version the driver supports. -1 + message when there is no driver or no
 * device. */
typedef struct mkc_cuda_device {
  CUdevice dev;
  char name[256];
  char arch[16]; /* sm_90 */
  int cc_major, cc_minor, sm_count, smem_optin, cooperative;
  int driver_version; /* cuDriverGetVersion: 1000 * major + 10 * minor (12040 = CUDA 12.4) */
} mkc_cuda_device;

/* Queried once per process; later calls return the same answer. */
int mkc_cuda_device_get(mkc_cuda_device *d, char *why, size_t why_size);

#endif
