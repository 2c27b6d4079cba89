/* Fills a kernel cache ahead of a GPU session, here, with the real NVRTC.
 *
 *   prime_kcache FAKE_CACHE_DIR ARCH DRIVER_VERSION
 *
 * FAKE_CACHE_DIR is a kernel cache the fake driver and NVRTC of tests/fake_cuda
 * filled while the GPU suite ran on them: each of its entries is a fake image,
 * which holds the kernel's name and source. Each is compiled for ARCH (sm_90)
 * by the real NVRTC into $MKC_CACHE_DIR/cuda under the key a driver reporting
 * DRIVER_VERSION (13000 for CUDA 13.0) would ask for, so a lent GPU's minutes
 * are not spent in NVRTC (a cold llama-3.2-1b compile takes minutes). A key
 * that does not match on the GPU costs only the compile it would have done. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kcache.h"
#include "fake_cuda/fake.h"
#include "util/files.h"

static const char FAKE_MAGIC[] = FAKE_CUBIN_MAGIC;
enum { HEADER = 32 }; /* kcache.c's entry: magic, checksum, cubin size, log size */

/* One fake entry: header | "MAGIC" arch '\n' name '\n' source | log. */
static int prime(const char *path, const char *arch, int driver_version) {
  size_t size;
  unsigned char *buf = mkc_read_file(path, &size);
  if (!buf) return fprintf(stderr, "prime_kcache: cannot read %s\n", path), -1;
  size_t n_cubin = 0;
  for (int i = 7; size >= HEADER && i >= 0; i--) n_cubin = n_cubin << 8 | buf[16 + i];
  char *img = (char *)buf + HEADER;
  int rc = -1;
  if (size < HEADER || n_cubin > size - HEADER || n_cubin <= strlen(FAKE_MAGIC) ||
      strncmp(img, FAKE_MAGIC, strlen(FAKE_MAGIC)) != 0) {
    fprintf(stderr, "prime_kcache: %s: not an entry of the fake NVRTC\n", path);
    goto done;
  }
  /* The image may not end in a NUL: copy it into a string. */
  char *text = malloc(n_cubin + 1);
  if (!text) goto done;
  memcpy(text, img, n_cubin);
  text[n_cubin] = '\0';
  char *name = strchr(text + strlen(FAKE_MAGIC), '\n');
  char *source = name ? strchr(name + 1, '\n') : NULL;
  if (!source) {
    fprintf(stderr, "prime_kcache: %s: no name line\n", path);
    free(text);
    goto done;
  }
  *source++ = '\0';
  name++;
  mkc_compiled c;
  rc = mkc_kcache_compile(source, name, arch, driver_version, &c);
  if (rc == 0) printf("%s %s %s%s\n", c.key, name, arch, c.from_cache ? " (already cached)" : "");
  mkc_compiled_free(&c);
  free(text);
done:
  free(buf);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: prime_kcache FAKE_CACHE_DIR ARCH DRIVER_VERSION\n");
    return 2;
  }
  DIR *d = opendir(argv[1]);
  if (!d) return fprintf(stderr, "prime_kcache: cannot open %s\n", argv[1]), 1;
  int failed = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 6, ".cubin") != 0) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    failed |= prime(path, argv[2], atoi(argv[3])) != 0;
  }
  closedir(d);
  return failed;
}
