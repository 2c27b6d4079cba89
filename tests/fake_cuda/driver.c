/* A CUDA driver double, so make test runs the cuda backend's host code
 * (runtime/backend_cuda.c, session.c, the decode loop, bench, --kernel) on a
 * machine without a GPU. It exports the driver entry points runtime/cuda.c
 * loads, with the documented signatures, and:
 *   - keeps device memory apart from host memory: a CUdeviceptr is not a
 *     host address, and fresh device memory holds garbage (0xA5), not zeros;
 *   - queues stream work until the stream is synchronized, so a read that
 *     skips the synchronization sees stale bytes;
 *   - records a captured stream into a graph that replays the recorded work,
 *     with the launch arguments as they were at capture;
 *   - runs a launched mkc_step with the host program's own CPU backend
 *     (mkc_cpu_kernel_open/launch, found with dlsym: mkc and the tests are
 *     linked -rdynamic) on an image from the fake NVRTC (fake.h).
 * Where mkc does something the real driver would refuse, or that would race
 * on a GPU, it prints "fake cuda: misuse: CALL: why" and fails the call.
 * It says nothing about the device code itself: NVRTC, PTX, registers,
 * timing and the memory model are what only a GPU run shows.
 *
 * Environment: MKC_FAKE_CUDA_ARCH (sm_90), MKC_FAKE_CUDA_SMS (2),
 * MKC_FAKE_CUDA_DEVICES (1), MKC_FAKE_CUDA_NO_COOP=1 (the device cannot launch
 * cooperative kernels), MKC_FAKE_CUDA_NO_COOP_CAPTURE=1 (capturing one is
 * refused), and fake.h's trace and injected failure. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

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

/* The device: an sm_90-like part whose SMs hold 1024 threads (a small grid
 * keeps the emulator quick) and 228 KiB of shared memory. */
enum {
  THREADS_PER_SM = 1024,
  BLOCKS_PER_SM = 32,
  SMEM_PER_SM = 233472,
  SMEM_OPTIN = 232448,
  SMEM_DEFAULT = 49152,
  N_ARGS = 4 /* mkc_step(weights, scratch, kv, state) */
};

/* The host program's CPU backend (runtime/backend_cpu.h). */
typedef struct mkc_cpu_kernel mkc_cpu_kernel;
static struct {
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

enum op_kind { OP_HTOD, OP_DTOH, OP_LAUNCH };
typedef struct op {
  enum op_kind kind;
  CUdeviceptr dev;
  size_t bytes;
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
static const char *const kind_names[] = {"stream", "module", "graph", "graph exec"};

static struct {
  int initialized;
  struct CUctx_st ctx;
  struct CUctx_st *current;
  alloc *allocs;
  int n_allocs, cap_allocs;
  CUdeviceptr next_dev;
  struct {
    void *p;
    enum kind kind;
  } live[256];
  int n_live;
} drv;

static void misuse(const char *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fake cuda: misuse: %s: ", call);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* sm_XY from $MKC_FAKE_CUDA_ARCH as major/minor. */
static void device_cc(int *major, int *minor) {
  const char *a = getenv("MKC_FAKE_CUDA_ARCH");
  int n = a && strncmp(a, "sm_", 3) == 0 ? atoi(a + 3) : 90;
  *major = n / 10;
  *minor = n % 10;
}

/* Every traced entry point starts here: counts the call, traces it, and says
 * whether it must fail. */
#define ENTER(name, ...)                                                                           \
  do {                                                                                             \
    fake_trace(name __VA_ARGS__);                                                                  \
    if (fake_should_fail("MKC_FAKE_CUDA_FAIL_AT", name)) return injected(name);                    \
  } while (0)

static CUresult injected(const char *name) {
  return strcmp(name, "cuMemAlloc_v2") == 0 ? E_OUT_OF_MEMORY : E_UNKNOWN;
}

static CUresult need_ctx(const char *call) {
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

static int live_find(void *p, enum kind kind) {
  for (int i = 0; p && i < drv.n_live; i++)
    if (drv.live[i].p == p && drv.live[i].kind == kind) return i;
  return -1;
}

static int live_add(void *p, enum kind kind) {
  if (drv.n_live == (int)(sizeof drv.live / sizeof *drv.live)) return -1;
  drv.live[drv.n_live].p = p;
  drv.live[drv.n_live].kind = kind;
  drv.n_live++;
  return 0;
}

static void live_remove(int i) { drv.live[i] = drv.live[--drv.n_live]; }

static CUresult need_live(const char *call, void *p, enum kind kind) {
  if (live_find(p, kind) >= 0) return OK;
  misuse(call, "%p is not a live %s", p, kind_names[kind]);
  return E_INVALID_HANDLE;
}

/* The allocation holding [dev, dev + bytes), or NULL. */
static alloc *find_alloc(CUdeviceptr dev, size_t bytes) {
  for (int i = 0; i < drv.n_allocs; i++) {
    alloc *a = &drv.allocs[i];
    if (dev >= a->dev && dev - a->dev <= a->size && bytes <= a->size - (dev - a->dev)) return a;
  }
  return NULL;
}

static unsigned char *device_bytes(const char *call, CUdeviceptr dev, size_t bytes) {
  alloc *a = find_alloc(dev, bytes);
  if (a) return a->host + (dev - a->dev);
  misuse(call, "[0x%llx, +%zu) is not inside one allocation", dev, bytes);
  return NULL;
}

/* ---- operations: queued on streams, recorded in graphs, run in order ---- */

static int list_push(op_list *l, const op *o) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    op *ops = realloc(l->ops, (size_t)cap * sizeof *ops);
    if (!ops) return -1;
    l->ops = ops;
    l->cap = cap;
  }
  l->ops[l->n] = *o;
  if (o->data) {
    if (!(l->ops[l->n].data = malloc(o->bytes))) return -1;
    memcpy(l->ops[l->n].data, o->data, o->bytes);
  }
  l->n++;
  return 0;
}

static void list_clear(op_list *l) {
  for (int i = 0; i < l->n; i++) free(l->ops[i].data);
  free(l->ops);
  memset(l, 0, sizeof *l);
}

static int list_copy(op_list *to, const op_list *from) {
  for (int i = 0; i < from->n; i++)
    if (list_push(to, &from->ops[i]) != 0) return -1;
  return 0;
}

static CUresult run_op(const op *o) {
  switch (o->kind) {
  case OP_HTOD: {
    unsigned char *d = device_bytes("cuMemcpyHtoDAsync_v2 (run)", o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(d, o->data, o->bytes);
    return OK;
  }
  case OP_DTOH: {
    unsigned char *d = device_bytes("cuMemcpyDtoHAsync_v2 (run)", o->dev, o->bytes);
    if (!d) return E_ILLEGAL_ADDRESS;
    memcpy(o->host, d, o->bytes);
    return OK;
  }
  case OP_LAUNCH: {
    void *p[N_ARGS];
    for (int i = 0; i < N_ARGS; i++) {
      alloc *a = find_alloc(o->args[i], 0);
      if (!a) {
        misuse("mkc_step (run)", "argument %d (0x%llx) is not device memory", i, o->args[i]);
        return E_ILLEGAL_ADDRESS;
      }
      p[i] = a->host + (o->args[i] - a->dev);
    }
    if (!o->func->mod->kernel) return E_INVALID_HANDLE;
    int r = host.launch(o->func->mod->kernel, (int)o->grid, (int)o->block, o->smem, p[0], p[1],
                        p[2], p[3]);
    return r == 0 ? OK : E_LAUNCH_FAILED;
  }
  }
  return E_UNKNOWN;
}

static CUresult drain(struct CUstream_st *s) {
  CUresult r = OK;
  for (int i = 0; i < s->pending.n && r == OK; i++) r = run_op(&s->pending.ops[i]);
  list_clear(&s->pending);
  return r;
}

/* Queues o on s, or records it when s is capturing. */
static CUresult enqueue(const char *call, struct CUstream_st *s, const op *o) {
  if (!s) {
    misuse(call, "the legacy default stream: mkc works on its own stream");
    return E_INVALID_HANDLE;
  }
  CUresult r = need_live(call, s, K_STREAM);
  if (r) return r;
  if (s->capturing) {
    if (o->kind != OP_LAUNCH) {
      /* Captured copies of pageable host memory are refused by the driver. */
      misuse(call, "a copy from or to pageable host memory while the stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
    return list_push(&s->graph->ops, o) == 0 ? OK : E_OUT_OF_MEMORY;
  }
  return list_push(&s->pending, o) == 0 ? OK : E_OUT_OF_MEMORY;
}

/* Synchronous calls: refused while a stream captures (mkc captures in
 * thread-local mode), and a race with queued work on the same memory. */
static CUresult sync_call(const char *call, CUdeviceptr dev) {
  for (int i = 0; i < drv.n_live; i++) {
    if (drv.live[i].kind != K_STREAM) continue;
    struct CUstream_st *s = drv.live[i].p;
    if (s->capturing) {
      misuse(call, "a synchronous call while a stream is capturing");
      s->invalidated = 1;
      return E_CAPTURE_UNSUPPORTED;
    }
    alloc *a = find_alloc(dev, 0);
    for (int j = 0; a && j < s->pending.n; j++) {
      const op *o = &s->pending.ops[j];
      int touches = o->kind != OP_LAUNCH && find_alloc(o->dev, 0) == a;
      for (int k = 0; o->kind == OP_LAUNCH && k < N_ARGS; k++)
        touches |= find_alloc(o->args[k], 0) == a;
      if (touches) {
        misuse(call,
               "touches memory that unsynchronized work on stream %p uses: on a GPU the two "
               "race (the legacy stream does not wait for a non-blocking stream)",
               (void *)s);
        return E_ILLEGAL_STATE;
      }
    }
  }
  return OK;
}

/* ---- initialization, device, context ---- */

CUresult cuInit(unsigned flags) {
  ENTER("cuInit", );
  if (flags != 0) return E_INVALID_VALUE;
  drv.initialized = 1;
  if (!drv.next_dev) drv.next_dev = 0x200000000000ULL; /* far from the host's heap */
  return OK;
}

CUresult cuDriverGetVersion(int *v) {
  ENTER("cuDriverGetVersion", );
  if (!v) return E_INVALID_VALUE;
  *v = 13000;
  return OK;
}

CUresult cuGetErrorName(CUresult r, const char **name) {
  for (size_t i = 0; i < sizeof error_names / sizeof *error_names; i++)
    if (error_names[i].r == r) {
      *name = error_names[i].name;
      return OK;
    }
  *name = NULL;
  return E_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *n) {
  ENTER("cuDeviceGetCount", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  *n = env_int("MKC_FAKE_CUDA_DEVICES", 1);
  return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  ENTER("cuDeviceGet", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= env_int("MKC_FAKE_CUDA_DEVICES", 1)) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  ENTER("cuDeviceGetName", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (d != 0 || !name || len < 1) return d != 0 ? E_INVALID_DEVICE : E_INVALID_VALUE;
  snprintf(name, (size_t)len, "mkc fake CUDA device (the CPU backend behind a driver double)");
  return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
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

CUresult cuDevicePrimaryCtxRetain(struct CUctx_st **ctx, CUdevice d) {
  ENTER("cuDevicePrimaryCtxRetain", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (d != 0) return E_INVALID_DEVICE;
  drv.ctx.refs++;
  *ctx = &drv.ctx;
  return OK;
}

/* Releasing the last reference destroys the context: whatever mkc still
 * holds in it then is a leak. */
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  ENTER("cuDevicePrimaryCtxRelease_v2", );
  if (d != 0) return E_INVALID_DEVICE;
  if (drv.ctx.refs < 1) {
    misuse("cuDevicePrimaryCtxRelease_v2", "released more often than retained");
    return E_INVALID_CONTEXT;
  }
  if (--drv.ctx.refs > 0 || fake_injected) return OK;
  for (int i = 0; i < drv.n_allocs; i++)
    misuse("cuDevicePrimaryCtxRelease_v2", "leak: %zu bytes of device memory at 0x%llx",
           drv.allocs[i].size, drv.allocs[i].dev);
  for (int i = 0; i < drv.n_live; i++)
    misuse("cuDevicePrimaryCtxRelease_v2", "leak: a %s", kind_names[drv.live[i].kind]);
  return OK;
}

CUresult cuCtxSetCurrent(struct CUctx_st *ctx) {
  ENTER("cuCtxSetCurrent", );
  if (!drv.initialized) return E_NOT_INITIALIZED;
  if (ctx && (ctx != &drv.ctx || ctx->refs < 1)) {
    misuse("cuCtxSetCurrent", "not a live context");
    return E_INVALID_CONTEXT;
  }
  drv.current = ctx;
  return OK;
}

CUresult cuCtxSynchronize(void) {
  ENTER("cuCtxSynchronize", );
  CUresult r = need_ctx("cuCtxSynchronize");
  if (r || (r = sync_call("cuCtxSynchronize", 0))) return r;
  for (int i = 0; i < drv.n_live; i++)
    if (drv.live[i].kind == K_STREAM) {
      CUresult ri = drain(drv.live[i].p);
      if (!r) r = ri;
    }
  return r;
}

/* ---- modules ---- */

static int find_host(void) {
  if (host.open) return 0;
  *(void **)&host.open = dlsym(RTLD_DEFAULT, "mkc_cpu_kernel_open");
  *(void **)&host.launch = dlsym(RTLD_DEFAULT, "mkc_cpu_kernel_launch");
  *(void **)&host.close = dlsym(RTLD_DEFAULT, "mkc_cpu_kernel_close");
  *(void **)&host.home = dlsym(RTLD_DEFAULT, "mkc_home");
  if (host.open && host.launch && host.close && host.home) return 0;
  host.open = NULL;
  return -1;
}

/* "sm_90" or "compute_90" as 90. */
static int arch_number(const char *arch) {
  const char *u = strchr(arch, '_');
  return u ? atoi(u + 1) : 0;
}

/* The image's arch line, for the trace. */
static void image_arch(const char *image, char *arch, size_t cap) {
  const char *p = strchr(image, '\n');
  size_t n = p ? strcspn(p + 1, "\n") : 0;
  snprintf(arch, cap, "%.*s", (int)(n < cap ? n : cap - 1), p ? p + 1 : "");
}

CUresult cuModuleLoadData(struct CUmod_st **mod, const void *image) {
  char traced[32];
  image_arch(image, traced, sizeof traced);
  ENTER("cuModuleLoadData", " %s", traced);
  CUresult r = need_ctx("cuModuleLoadData");
  if (r) return r;
  const char *text = image;
  int cubin = strncmp(text, FAKE_CUBIN_MAGIC, strlen(FAKE_CUBIN_MAGIC)) == 0;
  int ptx = strncmp(text, FAKE_PTX_MAGIC, strlen(FAKE_PTX_MAGIC)) == 0;
  if (!cubin && !ptx) {
    misuse("cuModuleLoadData", "%s: the fake runs only images from the fake NVRTC",
           memcmp(text, "\177ELF", 4) == 0 ? "a real cubin" : "not an image it knows");
    return E_INVALID_IMAGE;
  }
  /* MAGIC, arch line, name line, source. */
  char arch[32] = "", name[512] = "";
  const char *p = strchr(text, '\n') + 1, *nl = strchr(p, '\n');
  if (!nl || nl - p >= (long)sizeof arch) return E_INVALID_IMAGE;
  memcpy(arch, p, (size_t)(nl - p));
  p = nl + 1;
  if (!(nl = strchr(p, '\n')) || nl - p >= (long)sizeof name) return E_INVALID_IMAGE;
  memcpy(name, p, (size_t)(nl - p));
  const char *source = nl + 1;
  int major, minor, n = arch_number(arch);
  device_cc(&major, &minor);
  /* A cubin runs on its own major version at the same or a later minor; PTX
   * is compiled for any device at least as new as its target. */
  if (cubin && (n / 10 != major || n % 10 > minor)) return E_NO_BINARY_FOR_GPU;
  if (ptx && n > major * 10 + minor) return E_NO_BINARY_FOR_GPU;
  if (find_host() != 0) {
    misuse("cuModuleLoadData", "the host program does not export mkc_cpu_kernel_open (it must "
                               "be linked with -rdynamic and the mkc runtime)");
    return E_NOT_SUPPORTED;
  }
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m) return E_OUT_OF_MEMORY;
  char templates[4200];
  snprintf(templates, sizeof templates, "%s/templates", host.home());
  if (!(m->kernel = host.open(source, name, templates))) {
    free(m);
    return ptx ? E_INVALID_PTX : E_INVALID_IMAGE;
  }
  m->step.mod = m;
  if (live_add(m, K_MODULE) != 0) {
    host.close(m->kernel);
    free(m);
    return E_OUT_OF_MEMORY;
  }
  *mod = m;
  return OK;
}

static int module_in_use(struct CUmod_st *m) {
  for (int i = 0; i < drv.n_live; i++) {
    const op_list *l = drv.live[i].kind == K_STREAM
                           ? &((struct CUstream_st *)drv.live[i].p)->pending
                       : drv.live[i].kind == K_GRAPH ? &((struct CUgraph_st *)drv.live[i].p)->ops
                       : drv.live[i].kind == K_EXEC ? &((struct CUgraphExec_st *)drv.live[i].p)->ops
                                                    : NULL;
    for (int j = 0; l && j < l->n; j++)
      if (l->ops[j].kind == OP_LAUNCH && l->ops[j].func->mod == m) return 1;
  }
  return 0;
}

CUresult cuModuleUnload(struct CUmod_st *m) {
  ENTER("cuModuleUnload", );
  CUresult r = need_ctx("cuModuleUnload");
  if (r || (r = need_live("cuModuleUnload", m, K_MODULE))) return r;
  if (!fake_injected && module_in_use(m)) {
    misuse("cuModuleUnload", "a queued launch or a graph still uses the module");
    return E_ILLEGAL_STATE;
  }
  live_remove(live_find(m, K_MODULE));
  host.close(m->kernel);
  free(m);
  return OK;
}

CUresult cuModuleGetFunction(struct CUfunc_st **f, struct CUmod_st *m, const char *name) {
  ENTER("cuModuleGetFunction", " %s", name);
  CUresult r = need_ctx("cuModuleGetFunction");
  if (r || (r = need_live("cuModuleGetFunction", m, K_MODULE))) return r;
  if (strcmp(name, "mkc_step") != 0) return E_NOT_FOUND;
  *f = &m->step;
  return OK;
}

static CUresult need_func(const char *call, struct CUfunc_st *f) {
  if (f && live_find(f->mod, K_MODULE) >= 0 && f == &f->mod->step) return OK;
  misuse(call, "not a function of a loaded module");
  return E_INVALID_HANDLE;
}

CUresult cuFuncSetAttribute(struct CUfunc_st *f, int attr, int value) {
  ENTER("cuFuncSetAttribute", " %d %d", attr, value);
  CUresult r = need_ctx("cuFuncSetAttribute");
  if (r || (r = need_func("cuFuncSetAttribute", f))) return r;
  if (attr != 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */) {
    misuse("cuFuncSetAttribute", "attribute %d is not one the fake knows", attr);
    return E_INVALID_VALUE;
  }
  if (value < 0 || value > SMEM_OPTIN) return E_INVALID_VALUE;
  f->max_dynamic_smem = value;
  return OK;
}

static int dynamic_smem_limit(const struct CUfunc_st *f) {
  return f->max_dynamic_smem > SMEM_DEFAULT ? f->max_dynamic_smem : SMEM_DEFAULT;
}

static int blocks_per_sm(const struct CUfunc_st *f, int threads, size_t smem) {
  if (threads < 1 || threads > 1024 || smem > (size_t)dynamic_smem_limit(f)) return 0;
  int n = THREADS_PER_SM / threads;
  if (smem && SMEM_PER_SM / (int)(smem + 1024) < n) n = SMEM_PER_SM / (int)(smem + 1024);
  return n < BLOCKS_PER_SM ? n : BLOCKS_PER_SM;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, struct CUfunc_st *f, int threads,
                                                     size_t smem) {
  ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor", " %d %zu", threads, smem);
  CUresult r = need_ctx("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (r || (r = need_func("cuOccupancyMaxActiveBlocksPerMultiprocessor", f))) return r;
  *n = blocks_per_sm(f, threads, smem);
  return OK;
}

/* ---- memory ---- */

CUresult cuMemAlloc_v2(CUdeviceptr *dev, size_t bytes) {
  ENTER("cuMemAlloc_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemAlloc_v2");
  if (r || (r = sync_call("cuMemAlloc_v2", 0))) return r;
  if (bytes == 0) return E_INVALID_VALUE;
  if (drv.n_allocs == drv.cap_allocs) {
    int cap = drv.cap_allocs ? 2 * drv.cap_allocs : 16;
    alloc *a = realloc(drv.allocs, (size_t)cap * sizeof *a);
    if (!a) return E_OUT_OF_MEMORY;
    drv.allocs = a;
    drv.cap_allocs = cap;
  }
  unsigned char *host_mem = malloc(bytes);
  if (!host_mem) return E_OUT_OF_MEMORY;
  memset(host_mem, 0xA5, bytes); /* device memory starts as garbage */
  alloc *a = &drv.allocs[drv.n_allocs++];
  a->dev = drv.next_dev;
  a->size = bytes;
  a->host = host_mem;
  /* 2 MiB apart, with a gap, so one allocation never runs into the next. */
  drv.next_dev += ((bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1)) + (2u << 20);
  *dev = a->dev;
  return OK;
}

CUresult cuMemFree_v2(CUdeviceptr dev) {
  ENTER("cuMemFree_v2", );
  CUresult r = need_ctx("cuMemFree_v2");
  if (r) return r;
  for (int i = 0; i < drv.n_allocs; i++)
    if (drv.allocs[i].dev == dev) {
      free(drv.allocs[i].host);
      drv.allocs[i] = drv.allocs[--drv.n_allocs];
      return OK;
    }
  misuse("cuMemFree_v2", "0x%llx is not the start of a live allocation", dev);
  return E_INVALID_VALUE;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  ENTER("cuMemcpyHtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoD_v2");
  if (r || (r = sync_call("cuMemcpyHtoD_v2", dst))) return r;
  unsigned char *d = device_bytes("cuMemcpyHtoD_v2", dst, bytes);
  if (!d) return E_INVALID_VALUE;
  memcpy(d, src, bytes);
  return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoH_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoH_v2");
  if (r || (r = sync_call("cuMemcpyDtoH_v2", src))) return r;
  unsigned char *s = device_bytes("cuMemcpyDtoH_v2", src, bytes);
  if (!s) return E_INVALID_VALUE;
  memcpy(dst, s, bytes);
  return OK;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoD_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoD_v2");
  if (r || (r = sync_call("cuMemcpyDtoD_v2", dst)) || (r = sync_call("cuMemcpyDtoD_v2", src)))
    return r;
  unsigned char *d = device_bytes("cuMemcpyDtoD_v2", dst, bytes),
                *s = device_bytes("cuMemcpyDtoD_v2", src, bytes);
  if (!d || !s) return E_INVALID_VALUE;
  memmove(d, s, bytes);
  return OK;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  ENTER("cuMemsetD8_v2", " %zu", n);
  CUresult r = need_ctx("cuMemsetD8_v2");
  if (r || (r = sync_call("cuMemsetD8_v2", dst))) return r;
  unsigned char *d = device_bytes("cuMemsetD8_v2", dst, n);
  if (!d) return E_INVALID_VALUE;
  memset(d, value, n);
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              struct CUstream_st *s) {
  ENTER("cuMemcpyHtoDAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyHtoDAsync_v2");
  if (r) return r;
  if (!find_alloc(dst, bytes)) {
    misuse("cuMemcpyHtoDAsync_v2", "[0x%llx, +%zu) is not inside one allocation", dst, bytes);
    return E_INVALID_VALUE;
  }
  /* From pageable memory the driver stages the bytes before returning, so
   * the caller may reuse src at once: the op keeps a copy. */
  op o = {.kind = OP_HTOD, .dev = dst, .bytes = bytes, .data = (unsigned char *)src};
  return enqueue("cuMemcpyHtoDAsync_v2", s, &o);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, struct CUstream_st *s) {
  ENTER("cuMemcpyDtoHAsync_v2", " %zu", bytes);
  CUresult r = need_ctx("cuMemcpyDtoHAsync_v2");
  if (r) return r;
  if (!find_alloc(src, bytes)) {
    misuse("cuMemcpyDtoHAsync_v2", "[0x%llx, +%zu) is not inside one allocation", src, bytes);
    return E_INVALID_VALUE;
  }
  /* Stricter than the driver, which finishes a copy to pageable memory
   * before returning: dst is written only at the synchronization. */
  op o = {.kind = OP_DTOH, .dev = src, .bytes = bytes, .host = dst};
  return enqueue("cuMemcpyDtoHAsync_v2", s, &o);
}

/* ---- streams, launches, graphs ---- */

CUresult cuStreamCreate(struct CUstream_st **s, unsigned flags) {
  ENTER("cuStreamCreate", " %u", flags);
  CUresult r = need_ctx("cuStreamCreate");
  if (r) return r;
  if (flags > 1) return E_INVALID_VALUE;
  struct CUstream_st *st = calloc(1, sizeof *st);
  if (!st || live_add(st, K_STREAM) != 0) {
    free(st);
    return E_OUT_OF_MEMORY;
  }
  *s = st;
  return OK;
}

CUresult cuStreamDestroy_v2(struct CUstream_st *s) {
  ENTER("cuStreamDestroy_v2", );
  CUresult r = need_ctx("cuStreamDestroy_v2");
  if (r || (r = need_live("cuStreamDestroy_v2", s, K_STREAM))) return r;
  if (s->capturing) {
    misuse("cuStreamDestroy_v2", "the stream is capturing");
    return E_ILLEGAL_STATE;
  }
  drain(s); /* queued work still completes */
  live_remove(live_find(s, K_STREAM));
  free(s);
  return OK;
}

CUresult cuStreamSynchronize(struct CUstream_st *s) {
  ENTER("cuStreamSynchronize", );
  CUresult r = need_ctx("cuStreamSynchronize");
  if (r || (r = need_live("cuStreamSynchronize", s, K_STREAM))) return r;
  if (s->capturing) {
    misuse("cuStreamSynchronize", "the stream is capturing");
    s->invalidated = 1;
    return E_CAPTURE_UNSUPPORTED;
  }
  return drain(s);
}

CUresult cuLaunchCooperativeKernel(struct CUfunc_st *f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                   struct CUstream_st *s, void **params) {
  ENTER("cuLaunchCooperativeKernel", " %u %u %u", gx, bx, smem);
  CUresult r = need_ctx("cuLaunchCooperativeKernel");
  if (r || (r = need_func("cuLaunchCooperativeKernel", f))) return r;
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || gx < 1 || bx < 1 || bx > 1024 || !params) {
    misuse("cuLaunchCooperativeKernel", "mkc_step takes a 1-D grid of 1-D blocks and 4 params");
    return E_INVALID_VALUE;
  }
  if ((int)smem > dynamic_smem_limit(f)) {
    misuse("cuLaunchCooperativeKernel", "%u bytes of dynamic shared memory; the function allows %d",
           smem, dynamic_smem_limit(f));
    return E_INVALID_VALUE;
  }
  if (env_int("MKC_FAKE_CUDA_NO_COOP", 0)) return E_NOT_SUPPORTED;
  if (gx > (unsigned)(blocks_per_sm(f, (int)bx, smem) * env_int("MKC_FAKE_CUDA_SMS", 2)))
    return E_COOPERATIVE_LAUNCH_TOO_LARGE;
  if (s && live_find(s, K_STREAM) >= 0 && s->capturing &&
      env_int("MKC_FAKE_CUDA_NO_COOP_CAPTURE", 0)) {
    s->invalidated = 1;
    return E_CAPTURE_UNSUPPORTED;
  }
  /* The driver copies the arguments at the call; so does the fake. */
  op o = {.kind = OP_LAUNCH, .func = f, .grid = gx, .block = bx, .smem = smem};
  for (int i = 0; i < N_ARGS; i++) {
    if (!params[i]) return E_INVALID_VALUE;
    memcpy(&o.args[i], params[i], sizeof o.args[i]);
  }
  return enqueue("cuLaunchCooperativeKernel", s, &o);
}

CUresult cuStreamBeginCapture_v2(struct CUstream_st *s, int mode) {
  ENTER("cuStreamBeginCapture_v2", " %d", mode);
  CUresult r = need_ctx("cuStreamBeginCapture_v2");
  if (r || (r = need_live("cuStreamBeginCapture_v2", s, K_STREAM))) return r;
  if (mode < 0 || mode > 2) return E_INVALID_VALUE;
  if (s->capturing) return E_ILLEGAL_STATE;
  if (s->pending.n) {
    /* Allowed by the driver, but nothing mkc means to do. */
    misuse("cuStreamBeginCapture_v2", "the stream has unsynchronized work");
  }
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (!g) return E_OUT_OF_MEMORY;
  s->capturing = 1;
  s->invalidated = 0;
  s->graph = g;
  return OK;
}

/* Ends the capture whatever it returns, as the driver does; an injected
 * failure too. */
CUresult cuStreamEndCapture(struct CUstream_st *s, struct CUgraph_st **graph) {
  fake_trace("cuStreamEndCapture");
  int fail = fake_should_fail("MKC_FAKE_CUDA_FAIL_AT", "cuStreamEndCapture");
  CUresult r = need_ctx("cuStreamEndCapture");
  if (r || (r = need_live("cuStreamEndCapture", s, K_STREAM))) return r;
  if (!s->capturing) return E_CAPTURE_UNMATCHED;
  struct CUgraph_st *g = s->graph;
  s->capturing = 0;
  s->graph = NULL;
  *graph = NULL;
  if (fail || s->invalidated) {
    list_clear(&g->ops);
    free(g);
    return fail ? E_UNKNOWN : E_CAPTURE_INVALIDATED;
  }
  if (live_add(g, K_GRAPH) != 0) {
    list_clear(&g->ops);
    free(g);
    return E_OUT_OF_MEMORY;
  }
  *graph = g;
  return OK;
}

CUresult cuGraphInstantiateWithFlags(struct CUgraphExec_st **exec, struct CUgraph_st *g,
                                     unsigned long long flags) {
  ENTER("cuGraphInstantiateWithFlags", " %llu", flags);
  CUresult r = need_ctx("cuGraphInstantiateWithFlags");
  if (r || (r = need_live("cuGraphInstantiateWithFlags", g, K_GRAPH))) return r;
  if (flags != 0) return E_INVALID_VALUE;
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  if (!e || list_copy(&e->ops, &g->ops) != 0 || live_add(e, K_EXEC) != 0) {
    if (e) list_clear(&e->ops);
    free(e);
    return E_OUT_OF_MEMORY;
  }
  *exec = e;
  return OK;
}

CUresult cuGraphLaunch(struct CUgraphExec_st *e, struct CUstream_st *s) {
  ENTER("cuGraphLaunch", );
  CUresult r = need_ctx("cuGraphLaunch");
  if (r || (r = need_live("cuGraphLaunch", e, K_EXEC))) return r;
  if (s && live_find(s, K_STREAM) >= 0 && s->capturing) {
    misuse("cuGraphLaunch", "launching a graph into a capturing stream");
    return E_CAPTURE_UNSUPPORTED;
  }
  for (int i = 0; i < e->ops.n; i++)
    if ((r = enqueue("cuGraphLaunch", s, &e->ops.ops[i])) != OK) return r;
  return OK;
}

CUresult cuGraphExecDestroy(struct CUgraphExec_st *e) {
  ENTER("cuGraphExecDestroy", );
  CUresult r = need_ctx("cuGraphExecDestroy");
  if (r || (r = need_live("cuGraphExecDestroy", e, K_EXEC))) return r;
  live_remove(live_find(e, K_EXEC));
  list_clear(&e->ops);
  free(e);
  return OK;
}

CUresult cuGraphDestroy(struct CUgraph_st *g) {
  ENTER("cuGraphDestroy", );
  CUresult r = need_ctx("cuGraphDestroy");
  if (r || (r = need_live("cuGraphDestroy", g, K_GRAPH))) return r;
  live_remove(live_find(g, K_GRAPH));
  list_clear(&g->ops);
  free(g);
  return OK;
}
