/* Embeddings (exec/embed.h) against the reference executor: a text's
 * vector, pooled by mean, cls and last over 300 tokens fed in prompt chunks
 * (tiled, 128 at a time) and over 3 tokens fed as plain steps, equals the
 * reference's final norm output pooled the same way (within 1e-4 of the
 * largest value; the reference takes the kernel's K/V at rounding midpoints:
 * exec/reference.h), on tiny, odd (sizes no multiple of 8) and qwen3-tiny
 * (per-head norms). A kernel with a planted error (embeddings scaled by 1.01)
 * fails the same comparison. Also: each normalization as llama.cpp's
 * --embd-normalize defines it, the pooling chosen from a flag, the file or
 * neither, and a text past the context refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/embed.h"
#include "exec/reference.h"
#include "fixture.h"

#define N_LONG 300
#define N_SHORT 3
#define TOL 1e-4

static const int POOLS[] = {MKC_POOL_MEAN, MKC_POOL_CLS, MKC_POOL_LAST};

/* The oracle: tokens[0..n) through the reference, following the kernel's
 * final cache kv (*kv_bad: K/V values the kernel held otherwise); each
 * input's hidden state through the final norm (in double, the norm's bf16
 * weight widened), pooled. 0, or -1. */
static int ref_embedding(const fixture *fx, const void *kv, const int *tokens, int n, int pooling,
                         double eps, const float *norm_w, float *out, long *kv_bad) {
  const mkc_graph *g = &fx->g;
  mkc_ref *r = mkc_ref_open(g, &fx->w);
  double *logits = malloc((size_t)g->vocab * sizeof *logits);
  double *acc = calloc((size_t)g->dim, sizeof *acc);
  int ok = r && logits && acc;
  if (ok) mkc_ref_follow_kv(r, kv);
  for (int p = 0; ok && p < n; p++) {
    int dim = 0;
    const double *h;
    ok = mkc_ref_step(r, tokens[p], logits) == 0 && (h = mkc_ref_hidden(r, &dim)) && dim == g->dim;
    if (!ok || !(pooling == MKC_POOL_MEAN || (pooling == MKC_POOL_CLS && p == 0) ||
                 (pooling == MKC_POOL_LAST && p == n - 1)))
      continue;
    double ss = 0;
    for (int i = 0; i < dim; i++) ss += h[i] * h[i];
    double inv = 1 / sqrt(ss / dim + eps);
    for (int i = 0; i < dim; i++) acc[i] += h[i] * inv * norm_w[i];
  }
  if (ok) *kv_bad += mkc_ref_kv_check(r)->mismatched;
  for (int i = 0; ok && i < g->dim; i++)
    out[i] = (float)(acc[i] / (pooling == MKC_POOL_MEAN ? n : 1));
  mkc_ref_close(r);
  free(logits);
  free(acc);
  return ok ? 0 : -1;
}

/* The worst rel_err over the three poolings and the two texts on fx's kernel
 * (src: fx's own, or one with a planted error); -1 when something failed. */
static double worst_error(fixture *fx, const mkc_kernel_src *src, long *kv_bad) {
  *kv_bad = 0;
  mkc_session *s = mkc_session_open(test_backend(), &fx->g, src, &fx->w, 3);
  mkc_embedder e;
  if (!s || mkc_embedder_open(&e, s, &fx->w) != 0) {
    mkc_session_close(s);
    return -1;
  }
  int tokens[N_LONG];
  for (int i = 0; i < N_LONG; i++) tokens[i] = (i * 37 + 11) % fx->g.vocab;
  float *got = malloc((size_t)fx->g.dim * sizeof *got), *want = malloc(fx->g.dim * sizeof *want);
  double worst = got && want ? 0 : -1;
  for (int k = 0; worst >= 0 && k < 6; k++) {
    int n = k < 3 ? N_LONG : N_SHORT, pooling = POOLS[k % 3];
    if (mkc_embed(&e, tokens, n, pooling, -1, got) != 0 ||
        ref_embedding(fx, mkc_session_kv(s), tokens, n, pooling, e.eps, e.norm_w, want, kv_bad) !=
            0) {
      worst = -1;
      break;
    }
    double err = rel_err(got, want, fx->g.dim);
    if (!(err <= worst)) worst = err;
  }
  free(got);
  free(want);
  mkc_embedder_close(&e);
  mkc_session_close(s);
  return worst;
}

static void against_reference(const char *preset) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, preset, 4, 512, 7) == 0, "%s fixture", preset)) return;
  long kv_bad;
  double worst = worst_error(&fx, &fx.src, &kv_bad);
  CHECK(worst >= 0 && worst <= TOL && kv_bad == 0,
        "%s: embeddings pooled by mean, cls and last over %d tokens (in chunks) and %d equal the "
        "reference's final norm output pooled so (worst %.2g of the largest value; %ld K/V values "
        "apart)",
        preset, N_LONG, N_SHORT, worst, kv_bad);
  if (strcmp(preset, "tiny") == 0) { /* the same comparison fails on a planted error */
    mkc_kernel_src bad = {strdup(fx.src.source), strdup(fx.src.file_name)};
    char from[64], to[64];
    snprintf(from, sizeof from, "%d, 1.0f, scratch + ", fx.g.dim);
    snprintf(to, sizeof to, "%d, 1.01f, scratch + ", fx.g.dim);
    int planted = fixture_plant(&bad, from, to) == 0;
    double e = planted ? worst_error(&fx, &bad, &kv_bad) : -1;
    CHECK(planted && e > TOL,
          "planted error (the kernel's embeddings times 1.01): the comparison fails (%.2g)", e);
    mkc_kernel_src_free(&bad);
  }
  fixture_close(&fx);
}

/* Each --embd-normalize on a vector with a known answer. */
static void normalizations(void) {
  static const float V[4] = {3, -4, 0, 12};
  struct {
    int mode;
    float want[4];
  } cases[] = {
      {-1, {3, -4, 0, 12}},
      {0, {3 * 32760.0f / 12, -4 * 32760.0f / 12, 0, 32760}},
      {1, {3 / 19.0f, -4 / 19.0f, 0, 12 / 19.0f}},
      {2, {3 / 13.0f, -4 / 13.0f, 0, 12 / 13.0f}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    float v[4];
    memcpy(v, V, sizeof v);
    mkc_embd_normalize(v, 4, cases[k].mode);
    double err = 0;
    for (int i = 0; i < 4; i++)
      err = fmax(err, fabs(v[i] - cases[k].want[i]) / fmax(1, fabs(cases[k].want[i])));
    CHECK(err < 1e-6, "--embd-normalize %d: (3, -4, 0, 12) -> as llama.cpp scales it (error %.2g)",
          cases[k].mode, err);
  }
  float v[4];
  memcpy(v, V, sizeof v);
  mkc_embd_normalize(v, 4, 3); /* the 3-norm: (27 + 64 + 1728)^(1/3) */
  double p3 = cbrt(27.0 + 64 + 1728), err = fabs(v[3] - 12 / p3);
  CHECK(err < 1e-6, "--embd-normalize 3: the 3-norm (error %.2g)", err);
  float zero[3] = {0, 0, 0};
  mkc_embd_normalize(zero, 3, 2);
  CHECK(zero[0] == 0 && zero[1] == 0 && zero[2] == 0, "a zero vector stays zero");
}

static void pooling_choice(void) {
  CHECK_INT(mkc_pooling_choose(MKC_POOL_UNSET, MKC_POOL_UNSET), MKC_POOL_LAST,
            "no flag, no file key: last (ollama's for generation models)");
  CHECK_INT(mkc_pooling_choose(MKC_POOL_UNSET, MKC_POOL_NONE), MKC_POOL_LAST,
            "a file saying none: last");
  CHECK_INT(mkc_pooling_choose(MKC_POOL_UNSET, MKC_POOL_MEAN), MKC_POOL_MEAN, "the file's mean");
  CHECK_INT(mkc_pooling_choose(MKC_POOL_CLS, MKC_POOL_MEAN), MKC_POOL_CLS, "a flag over the file");
  check_stderr_begin();
  int rank = mkc_pooling_choose(MKC_POOL_UNSET, MKC_POOL_RANK);
  char *err = check_stderr_end();
  CHECK(rank < 0 && err && strstr(err, "mkc: error: the model's pooling is rank"),
        "a reranker's rank pooling: refused, with a message");
  free(err);
  CHECK(mkc_pooling_parse("mean") == MKC_POOL_MEAN && mkc_pooling_parse("cls") == MKC_POOL_CLS &&
            mkc_pooling_parse("last") == MKC_POOL_LAST && mkc_pooling_parse("max") < 0 &&
            mkc_pooling_parse("none") < 0,
        "--pooling takes mean, cls and last");
}

static void too_long(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 0, 16, 7) == 0, "tiny fixture, a context of 16")) return;
  mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  mkc_embedder e;
  int ok = s && mkc_embedder_open(&e, s, &fx.w) == 0;
  int tokens[17] = {0};
  float out[64];
  check_stderr_begin();
  int rc = ok ? mkc_embed(&e, tokens, 17, MKC_POOL_LAST, 2, out) : 0;
  char *err = check_stderr_end();
  CHECK(ok && rc == -1 && err && strstr(err, "an embedding of 17 tokens: the context holds 16"),
        "17 tokens in a context of 16: refused, with a message");
  free(err);
  if (ok) mkc_embedder_close(&e);
  mkc_session_close(s);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  normalizations();
  pooling_choice();
  against_reference("tiny");
  against_reference("odd");
  against_reference("qwen3-tiny");
  too_long();
  return check_done();
}
