/* libFuzzer target for what `mkc run --kernel` and `mkc compile` read from
 * disk: an ahead-of-time folder's manifest.json and a kernel's header. Any
 * bytes either parse or fail with a message, never crash or read outside the
 * buffer. A manifest that parses holds only what its checks promise (archs
 * like sm_90 and compute_80, plain file names, strings ended inside their
 * fields), and the image picked for each device fits it. The same bytes are
 * then read as a kernel source's header.
 * Seeds in fuzz/corpus/aot: a manifest from mkc compile, older and near-valid
 * ones, and kernel headers from mkc gen. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/aot.h"

#define ENDED(field) (memchr((field), 0, sizeof(field)) != NULL)

static int digits_after(const char *a, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(a, prefix, n) == 0 && a[n] >= '0' && a[n] <= '9' ? atoi(a + n) : -1;
}

static void check_manifest(const mkc_manifest *m) {
  if (m->n_cubins < 0 || m->n_cubins > MKC_AOT_MAX_ARCHS) abort();
  if (!ENDED(m->name) || !ENDED(m->ptx_arch) || !ENDED(m->ptx_file)) abort();
  if (digits_after(m->ptx_arch, "compute_") < 10 || !m->ptx_file[0] || strchr(m->ptx_file, '/'))
    abort();
  for (int i = 0; i < m->n_cubins; i++) {
    const mkc_aot_cubin *c = &m->cubins[i];
    if (!ENDED(c->arch) || !ENDED(c->file) || digits_after(c->arch, "sm_") < 10) abort();
    if (!c->file[0] || strchr(c->file, '/') || c->size < 1) abort();
    for (int j = 0; j < i; j++)
      if (strcmp(m->cubins[j].arch, c->arch) == 0) abort(); /* each arch once */
  }
  /* the pick: a cubin of the device's major and a minor it runs, else PTX no newer than it */
  static const int devices[][2] = {{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}};
  for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
    int major = devices[d][0], minor = devices[d][1];
    int pick = mkc_aot_pick(m, major, minor);
    if (pick >= 0) {
      if (pick >= m->n_cubins) abort();
      int n = digits_after(m->cubins[pick].arch, "sm_");
      if (n / 10 != major || n % 10 > minor) abort();
    } else if (pick == MKC_AOT_PTX) {
      if (digits_after(m->ptx_arch, "compute_") > major * 10 + minor) abort();
    } else if (pick != MKC_AOT_NONE)
      abort();
  }
}

static void check_header(const mkc_kernel_header *h) {
  if (!ENDED(h->version) || !ENDED(h->graph) || !ENDED(h->preset) || !ENDED(h->graph_hash) ||
      !ENDED(h->templates_hash) || !ENDED(h->options_hash) || !ENDED(h->kv_dtype))
    abort();
  if (strncmp(h->version, "mkc ", 4) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mkc_manifest m;
  if (mkc_manifest_parse("fuzz/manifest.json", (const char *)data, size, &m) == 0)
    check_manifest(&m);
  char *source = malloc(size + 1); /* a kernel source is read whole and ended with a NUL */
  if (!source) return 0;
  memcpy(source, data, size);
  source[size] = 0;
  mkc_kernel_header h;
  if (mkc_kernel_header_parse(source, &h) == 0) check_header(&h);
  free(source);
  return 0;
}
