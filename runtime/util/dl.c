/* See dl.h. */
#include "dl.h"

#include <dlfcn.h>

const char *mkc_dl_resolve(void *dl, const mkc_dl_sym *syms, size_t n) {
  for (size_t i = 0; i < n; i++) {
    *syms[i].slot = dlsym(dl, syms[i].name);
    if (!*syms[i].slot) return syms[i].name;
  }
  return NULL;
}
