/* The fake CUDA driver's insides, shared by its files (driver.c: state,
 * device and context; driver_module.c; driver_memory.c; driver_stream.c:
 * streams, launches and graphs). See driver.c for what the double does. */
#ifndef MKC_FAKE_DRIVER_H
#define MKC_FAKE_DRIVER_H

#include <stddef.h>

#include "fake.h"

/* The entry points mkc resolves; everything else stays inside the library
 * (built with -fvisibility=hidden, so the host's symbols never interpose). */
#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum { /* the driver's own numbers (cuda.h) */
       OK = 0,
       E_INVALID_VALUE = 1,
       E_OUT_OF_MEMORY = 2,
       E_NOT_INITIALIZED = 3,
       E_NO_DEVICE = 100,
       E_INVALID_DEVICE = 101,
       E_INVALID_IMAGE = 200,
       E_INVALID_CONTEXT = 201,
       E_NO_BINARY_FOR_GPU = 209,
       E_INVALID_PTX = 218,
       E_INVALID_HANDLE = 400,
       E_ILLEGAL_STATE = 401,
       E_NOT_FOUND = 500,
       E_ILLEGAL_ADDRESS = 700,
       E_LAUNCH_FAILED = 719,
       E_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
       E_NOT_SUPPORTED = 801,
       E_CAPTURE_UNSUPPORTED = 900,
       E_CAPTURE_INVALIDATED = 901,
       E_CAPTURE_UNMATCHED = 903,
       E_UNKNOWN = 999
};

/* The device: an sm_90-like part whose SMs hold 1024 threads (a small grid
 * keeps the emulator quick), 228 KiB of shared memory and, as on every part
 * since sm_50 (the CUDA C Programming Guide's table of compute capabilities),
 * a register file of 64 K 32-bit registers, handed out per warp in units of
 * 256. mkc_step's registers per thread are the fake NVRTC's ptxas report's
 * (nvrtc.c: 32), or $MKC_FAKE_CUDA_REGISTERS. */
enum {
  THREADS_PER_SM = 1024,
  REGS_PER_SM = 65536,
  REG_ALLOC_UNIT = 256, /* registers, per warp */
  FAKE_NVRTC_REGISTERS = 32,
  BLOCKS_PER_SM = 32,
  SMEM_PER_SM = 233472,
  SMEM_OPTIN = 232448,
  SMEM_DEFAULT = 49152,
  N_ARGS = 4 /* mkc_step(weights, scratch, kv, state) */
};

/* The host program's CPU backend (runtime/backend/cpu/backend.h). */
typedef struct mkc_cpu_kernel mkc_cpu_kernel;
extern struct fake_host {
  mkc_cpu_kernel *(*open)(const char *, const char *, const char *);
  int (*launch)(mkc_cpu_kernel *, int, int, size_t, const void *, float *, void *, void *);
  void (*close)(mkc_cpu_kernel *);
  const char *(*home)(void);
} host;

struct CUctx_st {
  int refs;
};
struct CUfunc_st {
  struct CUmod_st *mod;
  int max_dynamic_smem;
};
struct CUmod_st {
  mkc_cpu_kernel *kernel;
  struct CUfunc_st step;
};

enum op_kind { OP_HTOD, OP_DTOH, OP_DTOD, OP_MEMSET, OP_LAUNCH };
typedef struct op {
  enum op_kind kind;
  const char *call; /* the entry point that issued it, for messages */
  CUdeviceptr dev;  /* copies: the destination on the device, or DtoH's source */
  CUdeviceptr src;  /* DtoD: the source */
  size_t bytes;
  unsigned char value; /* memset */
  unsigned char *data; /* HtoD: the host bytes as they were at the call */
  void *host;          /* DtoH: where they go */
  struct CUfunc_st *func;
  unsigned grid, block, smem;
  CUdeviceptr args[N_ARGS];
} op;

typedef struct op_list {
  op *ops;
  int n, cap;
} op_list;

struct CUstream_st {
  unsigned flags;  /* CU_STREAM_NON_BLOCKING (1) or blocking (0) */
  op_list pending; /* queued, not yet run */
  int capturing, invalidated;
  struct CUgraph_st *graph;
};
struct CUgraph_st {
  op_list ops;
};
struct CUgraphExec_st {
  op_list ops;
};

typedef struct alloc {
  CUdeviceptr dev;
  size_t size;
  unsigned char *host;
} alloc;

enum kind { K_STREAM, K_MODULE, K_GRAPH, K_EXEC };

extern struct fake_driver {
  int initialized;
  struct CUctx_st ctx;
  struct CUctx_st *current;
  op_list legacy; /* the legacy NULL stream's queued work: see driver_stream.c */
  alloc *allocs;
  int n_allocs, cap_allocs;
  CUdeviceptr next_dev;
  struct {
    void *p;
    enum kind kind;
  } live[256];
  int n_live;
} drv;

extern const char *const kind_names[];

/* driver.c */
void misuse(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int env_int(const char *name, int fallback);
void device_cc(int *major, int *minor);
CUresult injected(const char *name);
CUresult need_ctx(const char *call);
int live_find(void *p, enum kind kind);
int live_add(void *p, enum kind kind);
void live_remove(int i);
CUresult need_live(const char *call, void *p, enum kind kind);
alloc *find_alloc(CUdeviceptr dev, size_t bytes);
unsigned char *device_bytes(const char *call, CUdeviceptr dev, size_t bytes);

/* driver_module.c */
CUresult need_func(const char *call, struct CUfunc_st *f);
int dynamic_smem_limit(const struct CUfunc_st *f);
int blocks_per_sm(const struct CUfunc_st *f, int threads, size_t smem);

/* driver_stream.c */
int list_push(op_list *l, const op *o);
void list_clear(op_list *l);
int list_copy(op_list *to, const op_list *from);
CUresult drain(struct CUstream_st *s);
CUresult drain_legacy(void);
CUresult enqueue(const char *call, struct CUstream_st *s, const op *o);
CUresult sync_call(const char *call, const op *o);
CUresult legacy_call(const char *call, const op *o);

/* Every traced entry point starts here: counts the call, traces it, and says
 * whether it must fail. */
#define ENTER(name, ...)                                                                           \
  do {                                                                                             \
    fake_trace(name __VA_ARGS__);                                                                  \
    if (fake_should_fail("MKC_FAKE_CUDA_FAIL_AT", name)) return injected(name);                    \
  } while (0)

#endif
