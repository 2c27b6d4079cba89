/* CPU backend: compiles an emitted megakernel with the host C compiler, loads
 * it, and runs a step on the SIMT emulator (simt.h). */
#ifndef MKC_BACKEND_CPU_H
#define MKC_BACKEND_CPU_H

#include <stddef.h>

#include "backend/backend.h"
#include "codegen/host.h"
#include "formats/weights.h"

/* The backend the session calls (backend/backend.h): src's kernel on blocks x
 * g->threads emulated threads over host buffers made here (w's arena,
 * scratch, KV cache). g must outlive it. NULL + message on failure. */
mkc_backend *mkc_cpu_backend_open(const mkc_graph *g, const mkc_kernel_src *src,
                                  const mkc_weights *w, int blocks);

struct mkc_state;
typedef struct mkc_cpu_kernel mkc_cpu_kernel;

/* Compiles an emitted kernel source with the host C compiler ($MKC_CC, else
 * $CC, else "cc") and dlopens it. The .so is cached under $MKC_CACHE_DIR/cpu,
 * else $XDG_CACHE_HOME/mkc/cpu, else ~/.cache/mkc/cpu, named by a 64-bit
 * FNV-1a hash of (name, source, prelude_cpu.h and mkc_state.h contents,
 * compiler command line), with the source it was built from beside it as
 * HASH.c. templates_dir is passed as -I. Diagnostics name the source `name`.
 * On compiler failure prints the compiler's output and "mkc: error: cpu
 * backend: compiling NAME failed (command: ...)" and returns NULL. */
mkc_cpu_kernel *mkc_cpu_kernel_open(const char *source, const char *name,
                                    const char *templates_dir);

/* Runs one step: mkc_step(weights, scratch, kv, state) on blocks x threads;
 * kv holds elements of the kernel's KV type. Returns 0 or -1 (after printing
 * why). */
int mkc_cpu_kernel_launch(mkc_cpu_kernel *k, int blocks, int threads, size_t smem_bytes,
                          const void *weights, float *scratch, void *kv, struct mkc_state *state);

void mkc_cpu_kernel_close(mkc_cpu_kernel *k);

#endif
