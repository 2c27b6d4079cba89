/* The fake driver's modules: an image from the fake NVRTC becomes the host's
 * CPU-backend kernel; functions, their attributes and occupancy. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

struct fake_host host;

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

API CUresult cuModuleLoadData(struct CUmod_st **mod, const void *image) {
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

API CUresult cuModuleUnload(struct CUmod_st *m) {
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

API CUresult cuModuleGetFunction(struct CUfunc_st **f, struct CUmod_st *m, const char *name) {
  ENTER("cuModuleGetFunction", " %s", name);
  CUresult r = need_ctx("cuModuleGetFunction");
  if (r || (r = need_live("cuModuleGetFunction", m, K_MODULE))) return r;
  if (strcmp(name, "mkc_step") != 0) return E_NOT_FOUND;
  *f = &m->step;
  return OK;
}

CUresult need_func(const char *call, struct CUfunc_st *f) {
  if (f && live_find(f->mod, K_MODULE) >= 0 && f == &f->mod->step) return OK;
  misuse(call, "not a function of a loaded module");
  return E_INVALID_HANDLE;
}

API CUresult cuFuncSetAttribute(struct CUfunc_st *f, int attr, int value) {
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

int dynamic_smem_limit(const struct CUfunc_st *f) {
  return f->max_dynamic_smem > SMEM_DEFAULT ? f->max_dynamic_smem : SMEM_DEFAULT;
}

/* Blocks of f resident on one SM, as the occupancy calculator counts them:
 * the least of what threads, shared memory (each block also reserves 1 KiB
 * for the system), registers and the block slots allow. Registers go to each
 * warp rounded up to REG_ALLOC_UNIT (driver.h). */
int blocks_per_sm(const struct CUfunc_st *f, int threads, size_t smem) {
  if (threads < 1 || threads > 1024 || smem > (size_t)dynamic_smem_limit(f)) return 0;
  int n = THREADS_PER_SM / threads;
  if (smem && SMEM_PER_SM / (int)(smem + 1024) < n) n = SMEM_PER_SM / (int)(smem + 1024);
  int regs = env_int("MKC_FAKE_CUDA_REGISTERS", FAKE_NVRTC_REGISTERS);
  if (regs < 1 || regs > 255) return 0;
  int warps = (threads + 31) / 32,
      per_warp = (regs * 32 + REG_ALLOC_UNIT - 1) / REG_ALLOC_UNIT * REG_ALLOC_UNIT;
  if (REGS_PER_SM / (per_warp * warps) < n) n = REGS_PER_SM / (per_warp * warps);
  return n < BLOCKS_PER_SM ? n : BLOCKS_PER_SM;
}

API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, struct CUfunc_st *f, int threads,
                                                         size_t smem) {
  ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor", " %d %zu", threads, smem);
  CUresult r = need_ctx("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (r || (r = need_func("cuOccupancyMaxActiveBlocksPerMultiprocessor", f))) return r;
  *n = blocks_per_sm(f, threads, smem);
  return OK;
}
