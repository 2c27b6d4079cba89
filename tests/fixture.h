/* A generated kernel with its graph and seeded random weights, for tests
 * that run sessions on the cpu and ref backends side by side. */
#ifndef MKC_FIXTURE_H
#define MKC_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/driver.h"

#include "codegen/host.h"
#include "exec/session.h"
#include "formats/weights.h"

/* The backend under test: cpu, or cuda with MKC_TEST_BACKEND=cuda (make test-gpu). */
static inline enum mkc_backend_kind test_backend(void) {
  const char *b = getenv("MKC_TEST_BACKEND");
  return b && strcmp(b, "cuda") == 0 ? MKC_BACKEND_CUDA : MKC_BACKEND_CPU;
}

/* With the cuda backend and no GPU: prints the skip and returns 1. */
static inline int test_skip_without_gpu(void) {
  mkc_cuda_device dev;
  char why[512];
  if (test_backend() != MKC_BACKEND_CUDA || mkc_cuda_device_get(&dev, why, sizeof why) == 0)
    return 0;
  printf("skipped: no GPU (%s)\n0 passed, 0 failed, 1 skipped\n", why);
  return 1;
}

typedef struct fixture {
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
} fixture;

static inline int fixture_open(fixture *f, const char *preset, int draft_max, int max_ctx,
                               unsigned long long seed) {
  memset(f, 0, sizeof *f);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {
      .graph_path = graph, .preset = preset, .draft_max = draft_max, .max_ctx = max_ctx};
  if (mkc_codegen(&o, &f->g, &f->src) != 0) return -1;
  return mkc_weights_random(&f->w, &f->g, seed);
}

static inline void fixture_close(fixture *f) {
  mkc_weights_free(&f->w);
  mkc_kernel_src_free(&f->src);
  mkc_graph_free(&f->g);
}

/* max |x - ref| / max |ref| over n values. */
static inline double rel_err(const float *x, const float *ref, int n) {
  double diff = 0, mag = 0;
  for (int i = 0; i < n; i++) {
    double d = fabs((double)x[i] - ref[i]);
    if (!(d <= diff)) diff = d; /* NaN sticks */
    if (fabs(ref[i]) > mag) mag = fabs(ref[i]);
  }
  return mag > 0 ? diff / mag : diff;
}

#endif
