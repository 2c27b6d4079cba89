/* The CUDA kernel cache: NVRTC output kept on disk, keyed by everything that
 * changes it, so a warm start never runs NVRTC. */
#ifndef MKC_KCACHE_H
#define MKC_KCACHE_H

#include <stddef.h>

#include "ptxas.h"

typedef struct mkc_compiled {
  void *cubin;
  size_t cubin_size;
  char *log; /* NVRTC's log with the ptxas report */
  mkc_ptxas_info ptxas;
  int from_cache; /* 1: loaded, NVRTC not called */
  char key[17];   /* 16 hex digits */
} mkc_compiled;

/* The cubin of source (called name) for arch ("sm_90"), from
 * $MKC_CACHE_DIR/cuda (see files.h) or compiled and stored there. Key = hash
 * of source, NVRTC options, NVRTC version, the driver's CUDA version
 * (driver_version, cuDriverGetVersion's; 0 where no driver is asked, as for
 * mkc compile), arch and mkc version. A compile says on stderr what it
 * compiles, for which arch, where it is cached, and how long it took; a hit
 * says nothing. An entry whose checksum or sizes do not hold is reported
 * once, never loaded, and rebuilt. MKC_KEEP_SOURCE=1 keeps KEY.cu beside the
 * entry. 0 or -1. */
int mkc_kcache_compile(const char *source, const char *name, const char *arch, int driver_version,
                       mkc_compiled *out);

/* The entry's path for a key (for tests and messages). */
int mkc_kcache_path(const char *key, char *out, size_t cap);

void mkc_compiled_free(mkc_compiled *c);

#endif
