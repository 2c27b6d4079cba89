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
#include "exec/reference.h"
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

/* ubatch: prompt chunks of up to that many inputs (mkc_gen_opts.ubatch; 0: the default). */
static inline int fixture_open_ub(fixture *f, const char *preset, int draft_max, int max_ctx,
                                  int ubatch, unsigned long long seed) {
  memset(f, 0, sizeof *f);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = preset,
                    .draft_max = draft_max,
                    .max_ctx = max_ctx,
                    .ubatch = ubatch};
  if (mkc_codegen(&o, &f->g, &f->src) != 0) return -1;
  return mkc_weights_random(&f->w, &f->g, seed);
}

static inline int fixture_open(fixture *f, const char *preset, int draft_max, int max_ctx,
                               unsigned long long seed) {
  return fixture_open_ub(f, preset, draft_max, max_ctx, 0, seed);
}

static inline void fixture_close(fixture *f) {
  mkc_weights_free(&f->w);
  mkc_kernel_src_free(&f->src);
  mkc_graph_free(&f->g);
}

/* Replaces the first `from` in the kernel's text (a planted bug): 0, or -1
 * when the text has none. */
static inline int fixture_plant(mkc_kernel_src *src, const char *from, const char *to) {
  char *at = strstr(src->source, from);
  if (!at) return -1;
  size_t n = strlen(src->source) - strlen(from) + strlen(to) + 1;
  char *s = malloc(n);
  if (!s) return -1;
  snprintf(s, n, "%.*s%s%s", (int)(at - src->source), src->source, to, at + strlen(from));
  free(src->source);
  src->source = s;
  return 0;
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

/* The prompt in chunks of up to t_max, then `steps` greedy steps, on kernel
 * session k and reference session ref side by side (the reference taking the
 * kernel's K/V at rounding midpoints: exec/reference.h): the worst logits
 * error (rel_err) over every position, and whether every step emitted the
 * same tokens and left the same pos. */
typedef struct fixture_cmp {
  int ok;       /* every step ran and said ok */
  int same;     /* the same tokens and pos at every step */
  int steps;    /* steps taken */
  double worst; /* the largest rel_err of any position's logits */
} fixture_cmp;

static inline fixture_cmp fixture_vs_reference(mkc_session *k, mkc_session *ref, const mkc_graph *g,
                                               const int *prompt, int n_prompt, int steps) {
  fixture_cmp c = {k && ref, 1, 0, 0};
  int last = 0, T = 1;
  for (int pos = 0; c.ok && pos < n_prompt + steps; pos += T, c.steps++) {
    int in[MKC_T_CAP];
    mkc_step_result r, rr;
    T = 1;
    if (pos < n_prompt) {
      T = n_prompt - pos < g->t_max ? n_prompt - pos : g->t_max;
      memcpy(in, prompt + pos, (size_t)T * sizeof *in);
    } else {
      in[0] = last;
    }
    c.ok = mkc_session_step(k, in, T, T - 1, &r) == 0;
    mkc_ref_follow_kv(mkc_session_ref(ref), mkc_session_kv(k));
    c.ok = c.ok && mkc_session_step(ref, in, T, T - 1, &rr) == 0 && r.status == MKC_STATUS_OK &&
           rr.status == MKC_STATUS_OK;
    if (!c.ok) break;
    for (int t = 0; t < T; t++) {
      double e = rel_err(mkc_session_logits(k, t), mkc_session_logits(ref, t), g->vocab);
      if (!(e <= c.worst)) c.worst = e;
    }
    c.same &= r.n_out == rr.n_out && r.out[r.n_out - 1] == rr.out[rr.n_out - 1] &&
              mkc_session_pos(k) == mkc_session_pos(ref);
    last = r.out[r.n_out - 1];
  }
  return c;
}

#endif
