/* Libraries mkc loads at run time (the CUDA driver, NVRTC, libclang): the
 * entry points each one needs, looked up in one pass. */
#ifndef MKC_DL_H
#define MKC_DL_H

#include <stddef.h>

typedef struct mkc_dl_sym {
  void **slot;      /* where the address goes */
  const char *name; /* the exported name */
} mkc_dl_sym;

/* dlsym for each of syms[0..n): NULL when every one was found, else the
 * first name the library lacks (the caller says why and unloads it). */
const char *mkc_dl_resolve(void *dl, const mkc_dl_sym *syms, size_t n);

#endif
