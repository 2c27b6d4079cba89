/* For tests of a kernel knob that changes the code but not the sums
 * (test_cp_ring, test_t1_path): one fixed run of inputs, in steps of given
 * sizes, with the logits of every input that gets them; two runs compared
 * bit for bit, or held to the reference; planted bugs that must show. */
#ifndef MKC_LOGIT_RUNS_H
#define MKC_LOGIT_RUNS_H

#include "check.h"
#include "fixture.h"

typedef struct gen_kernel {
  mkc_graph g;
  mkc_kernel_src src;
} gen_kernel;

static inline void gen_kernel_free(gen_kernel *k) {
  mkc_kernel_src_free(&k->src);
  mkc_graph_free(&k->g);
}

/* n inputs, token i = (i * mul + add) % vocab; step c takes step_size(c) of them (the last step
 * what is left). A step of more than t_max inputs (a prompt chunk) gives its last one logits. */
typedef struct logit_plan {
  int n, mul, add;
  int (*step_size)(int c);
} logit_plan;

typedef struct logit_run {
  float *logits;      /* n x vocab */
  unsigned char *has; /* input i got logits */
  int ok;
} logit_run;

static inline void logit_run_free(logit_run *r) {
  free(r->logits);
  free(r->has);
}

static inline logit_run logit_run_of(const logit_plan *p, enum mkc_backend_kind kind,
                                     const gen_kernel *k, const mkc_weights *w) {
  size_t vocab = (size_t)k->g.vocab;
  logit_run r = {calloc((size_t)p->n * vocab, sizeof(float)), calloc((size_t)p->n, 1), 0};
  int *in = malloc((size_t)p->n * sizeof *in);
  mkc_session *s = mkc_session_open(kind, &k->g, &k->src, w, 3);
  if (!s || !r.logits || !r.has || !in) goto out;
  for (int i = 0; i < p->n; i++) in[i] = (i * p->mul + p->add) % k->g.vocab;
  for (int pos = 0, c = 0; pos < p->n; c++) {
    int T = p->step_size(c);
    if (T > p->n - pos) T = p->n - pos;
    mkc_step_result res;
    if (mkc_session_step(s, in + pos, T, T - 1, &res) != 0 || res.status != MKC_STATUS_OK) goto out;
    for (int t = T > k->g.t_max ? T - 1 : 0; t < T; t++) {
      memcpy(r.logits + (size_t)(pos + t) * vocab, mkc_session_logits(s, t), vocab * sizeof(float));
      r.has[pos + t] = 1;
    }
    pos += T;
  }
  r.ok = 1;
out:
  mkc_session_close(s);
  free(in);
  return r;
}

/* Inputs whose logits differ in any bit (or that one run has and the other lacks). */
static inline int logit_runs_differing(const logit_plan *p, const logit_run *a, const logit_run *b,
                                       int vocab) {
  int n = 0;
  for (int i = 0; i < p->n; i++)
    n += a->has[i] != b->has[i] ||
         memcmp(a->logits + (size_t)i * vocab, b->logits + (size_t)i * vocab,
                (size_t)vocab * sizeof(float)) != 0;
  return n;
}

/* The worst relative error of a's logits against ref's, over the inputs ref has. */
static inline double logit_runs_worst(const logit_plan *p, const logit_run *a, const logit_run *ref,
                                      int vocab) {
  double worst = 0;
  for (int i = 0; i < p->n; i++) {
    if (!ref->has[i]) continue;
    double e = a->has[i]
                   ? rel_err(a->logits + (size_t)i * vocab, ref->logits + (size_t)i * vocab, vocab)
                   : INFINITY;
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/* k with `from` replaced by `to` (its first place: a planted bug) must change the logits of
 * base's run: checked, as "LABEL: planted bug (WHAT) ...". */
static inline void logit_runs_planted(const logit_plan *p, const char *label, const gen_kernel *k,
                                      const mkc_weights *w, const logit_run *base, const char *what,
                                      const char *from, const char *to) {
  gen_kernel planted = *k; /* the graph shared, the text a copy */
  planted.src.source = strdup(k->src.source);
  if (!planted.src.source || fixture_plant(&planted.src, from, to) != 0) {
    CHECK(0, "%s: plant %s in the kernel", label, what);
    free(planted.src.source);
    return;
  }
  logit_run r = logit_run_of(p, test_backend(), &planted, w);
  int d = r.ok ? logit_runs_differing(p, &r, base, k->g.vocab) : p->n;
  CHECK(d > 0, "%s: planted bug (%s) changes the logits of %d of %d inputs", label, what, d, p->n);
  logit_run_free(&r);
  free(planted.src.source);
}

#endif
