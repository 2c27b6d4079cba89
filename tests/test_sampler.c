/* The kernel's sampler (templates/sample.cuh) on the SIMT emulator against
 * the float64 oracle (runtime/exec/sampler_ref.h): for each option alone and
 * combined, 20,000 draws on fixed logits pass a chi-square test against the
 * oracle's exact distribution (p >= 0.001), and the same test fails on planted
 * bugs (top-k off by one, the repeat penalty applied twice, top-p after the
 * temperature), each applied to a copy of the template's text. The residual
 * draw, p(draft), greedy on penalized logits, and the kernel's Philox
 * against the host reference (Random123's vectors, tests/test_sampler_ref.c)
 * are checked too. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/backend.h"
#include "check.h"
#include "codegen/host.h"
#include "exec/sampler_ref.h"
#include "mkc_state.h"
#include "philox_ref.h"
#include "stats.h"
#include "util/files.h"
#include "util/rng.h"

#define DRAWS 20000
#define VOCAB 48
#define POS 12 /* tokens before the sampled one: the penalty window's history */
#define P_MIN 0.001

/* Scratch layout of the test kernel, in floats (ints where marked). */
#define OFF_HDR 0                            /* int: mode, n, T, seed base */
#define OFF_LOGITS 64                        /* [T][VOCAB] */
#define OFF_HISTORY (OFF_LOGITS + 2 * VOCAB) /* int [POS] */
#define OFF_WORK (OFF_HISTORY + 64)          /* [T][VOCAB] */
#define OFF_DRAWN (OFF_WORK + 2 * VOCAB)     /* int [T][2] */
#define OFF_PDRAFT (OFF_DRAWN + 8)           /* [T] */
#define OFF_LISTS (OFF_PDRAFT + 8)           /* int [T][VOCAB] */
#define OFF_LP (OFF_LISTS + 2 * VOCAB)       /* [T][MKC_LP_STRIDE] */
#define OFF_OUT (OFF_LP + 2 * 64)            /* int [n][2] tokens, then [n] p(draft) */
#define SCRATCH (OFF_OUT + 3 * DRAWS + 64)

/* The entry: n draws of position t = 0 with seeds base, base + 1, ...; or
 * (mode 1) Philox of n counters from out. */
static const char ENTRY[] =
    "MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, float *kv, mkc_state *st) {\n"
    "  int *hdr = (int *)scratch;\n"
    "  char *smem = mkc_smem();\n"
    "  float *red = (float *)smem, *part = (float *)(smem + 64);\n"
    "  int *winner = (int *)(smem + 64 + 4 * MKC_THREADS);\n"
    "  unsigned *hist = (unsigned *)(smem + 64 + 4 * MKC_THREADS + 16);\n"
    "  int n = hdr[1], T = hdr[2];\n"
    "  int *out = (int *)(scratch + OFF_OUT);\n"
    "  if (hdr[0] == 2) {\n"
    "    if (mkc_tid() == 0) out[0] = mkc_sampling_on(&st->sampling);\n"
    "    return;\n"
    "  }\n"
    "  if (hdr[0] == 1) {\n"
    "    if (mkc_tid() == 0)\n"
    "      for (int i = 0; i < n; i++) {\n"
    "        unsigned *io = (unsigned *)out + 6 * i;\n"
    "        mkc_u4 c = {io[0], io[1], io[2], io[3]};\n"
    "        c = mkc_philox4x32(c, io[4], io[5]);\n"
    "        io[0] = c.x, io[1] = c.y, io[2] = c.z, io[3] = c.w;\n"
    "      }\n"
    "    return;\n"
    "  }\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    if (mkc_tid() == 0) st->sampling.seed_lo = (unsigned)(hdr[3] + i);\n"
    "    mkc_sync_block();\n"
    "    mkc_sample(st, (const int *)(scratch + OFF_HISTORY), scratch + OFF_LOGITS, VOCAB, VOCAB,\n"
    "               POS, 0, T, scratch + OFF_WORK, (int *)(scratch + OFF_LISTS),\n"
    "               (int *)(scratch + OFF_DRAWN), scratch + OFF_PDRAFT, scratch + OFF_LP, red,\n"
    "               part, winner, hist);\n"
    "    if (mkc_tid() == 0) {\n"
    "      int *d = (int *)(scratch + OFF_DRAWN);\n"
    "      out[2 * i] = d[0];\n"
    "      out[2 * i + 1] = d[1];\n"
    "      scratch[OFF_OUT + 2 * n + i] = scratch[OFF_PDRAFT];\n"
    "    }\n"
    "    mkc_sync_block();\n"
    "  }\n"
    "}\n";

static char templates_dir[PATH_MAX];
static float scratch[SCRATCH];

/* The test kernel around sample.cuh's text with `from` replaced by `to`
 * (a planted bug; NULL: as written), or NULL after a failed check. */
static mkc_cpu_kernel *build(int threads, const char *from, const char *to) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/common.cuh", templates_dir);
  char *common = mkc_read_file(path, NULL);
  snprintf(path, sizeof path, "%s/sample.cuh", templates_dir);
  char *sample = mkc_read_file(path, NULL);
  mkc_cpu_kernel *k = NULL;
  if (!common || !sample) goto done;
  char *text = sample;
  if (from) {
    char *at = strstr(sample, from);
    if (!CHECK(at != NULL, "planted bug: the template still has '%s'", from)) goto done;
    size_t n = strlen(sample) + strlen(to) + 1;
    text = malloc(n);
    snprintf(text, n, "%.*s%s%s", (int)(at - sample), sample, to, at + strlen(from));
  }
  size_t cap = strlen(common) + strlen(text) + sizeof ENTRY + 1024;
  char *src = malloc(cap);
  snprintf(
      src, cap,
      "#define MKC_THREADS %d\n#define MKC_T_MAX 4\n#define MKC_KV_F32 1\n"
      "#define VOCAB %d\n#define POS %d\n#define OFF_OUT %d\n#define OFF_HISTORY %d\n"
      "#define OFF_LOGITS %d\n#define OFF_WORK %d\n#define OFF_DRAWN %d\n#define OFF_PDRAFT %d\n"
      "#define OFF_LISTS %d\n#define OFF_LP %d\n"
      "#ifndef __CUDACC__\n#include \"prelude_cpu.h\"\n#endif\n#include \"mkc_state.h\"\n"
      "%s\n%s\n%s",
      threads, VOCAB, POS, OFF_OUT, OFF_HISTORY, OFF_LOGITS, OFF_WORK, OFF_DRAWN, OFF_PDRAFT,
      OFF_LISTS, OFF_LP, common, text, ENTRY);
  k = mkc_cpu_kernel_open(src, from ? "sample_planted.cu" : "sample_test.cu", templates_dir);
  free(src);
  if (text != sample) free(text);
done:
  free(common);
  free(sample);
  return k;
}

/* Fixed logits: spread over a range where every cut matters. */
static void fixed_logits(float *l) {
  for (int i = 0; i < VOCAB; i++) l[i] = (float)((i * 37) % VOCAB) / 8.0f - 2.0f;
  l[5] = l[9] = 3.5f; /* a tie at the top */
}

static const int HISTORY[POS] = {5, 7, 5, 40, 9, 5, 12, 7, 30, 2, 9, 41};

/* n draws at T = 1 (or 2, with draft as input 1) into toks[2n] and p[n]. */
static int draw(mkc_cpu_kernel *k, int threads, const mkc_sampling *o, int draft, int n,
                unsigned seed_base, int *toks, float *p) {
  memset(scratch, 0, sizeof scratch);
  int *hdr = (int *)scratch;
  hdr[0] = 0, hdr[1] = n, hdr[2] = draft >= 0 ? 2 : 1, hdr[3] = (int)seed_base;
  fixed_logits(scratch + OFF_LOGITS);
  memcpy(scratch + OFF_HISTORY, HISTORY, sizeof HISTORY);
  mkc_state st;
  memset(&st, 0, sizeof st);
  st.sampling = *o;
  st.inputs[0] = 3; /* the token at POS: in the window too */
  st.inputs[1] = draft;
  if (mkc_cpu_kernel_launch(k, 1, threads, 64 + 4 * threads + 16 + 1024, NULL, scratch, NULL,
                            &st) != 0)
    return -1;
  memcpy(toks, scratch + OFF_OUT, (size_t)2 * n * sizeof *toks);
  memcpy(p, scratch + OFF_OUT + 2 * n, (size_t)n * sizeof *p);
  return 0;
}

/* The oracle's distribution for the same logits and window. */
static void exact(const mkc_sampling *o, double *probs) {
  float l[VOCAB];
  int window[POS + 1];
  fixed_logits(l);
  memcpy(window, HISTORY, sizeof HISTORY);
  window[POS] = 3;
  if (mkc_sampler_ref_probs(l, VOCAB, window, POS + 1, o, probs) != 0)
    for (int i = 0; i < VOCAB; i++) probs[i] = 0;
}

static int toks[2 * DRAWS];
static float pd[DRAWS];

/* The chi-square p-value of the kernel's draws (column 0, or 1: the
 * residual) against want. */
static double fit(const int *t, int column, const double *want, int *dof) {
  long counts[VOCAB] = {0};
  for (int i = 0; i < DRAWS; i++) {
    int id = t[2 * i + column];
    if (id < 0 || id >= VOCAB) return -1;
    counts[id]++;
  }
  return chi2_p_value(counts, want, VOCAB, DRAWS, dof);
}

static mkc_sampling base(void) {
  mkc_sampling o;
  memset(&o, 0, sizeof o);
  o.temp = 1.0f;
  o.top_p = 1.0f;
  o.repeat_penalty = 1.0f;
  o.repeat_last_n = 8;
  o.seed_hi = 77;
  return o;
}

typedef struct option_case {
  const char *name;
  mkc_sampling o;
} option_case;

static int n_cases(option_case *c) {
  int n = 0;
  mkc_sampling o = base();
  c[n++] = (option_case){"temperature 0.7", (o.temp = 0.7f, o)};
  o = base();
  c[n++] = (option_case){"top-k 5 (a tie at the top)", (o.top_k = 5, o)};
  o = base();
  c[n++] = (option_case){"top-p 0.6", (o.top_p = 0.6f, o)};
  o = base();
  c[n++] = (option_case){"min-p 0.2", (o.min_p = 0.2f, o)};
  o = base();
  c[n++] = (option_case){"repeat penalty 1.5 over the last 8", (o.repeat_penalty = 1.5f, o)};
  o = base();
  c[n++] = (option_case){"presence 0.5, frequency 0.25",
                         (o.presence_penalty = 0.5f, o.frequency_penalty = 0.25f, o)};
  o = base();
  c[n++] = (option_case){"top-p 0.6 at temperature 0.5", (o.top_p = 0.6f, o.temp = 0.5f, o)};
  o = base();
  o.temp = 0.8f, o.top_k = 12, o.top_p = 0.9f, o.min_p = 0.05f, o.repeat_penalty = 1.25f;
  o.presence_penalty = 0.25f, o.repeat_last_n = 13;
  c[n++] = (option_case){"combined: every option", o};
  return n;
}

/* Cases first.. of n_cases (the wider block runs the last few). */
static void options(mkc_cpu_kernel *k, int threads, int first) {
  option_case cases[10];
  int n = n_cases(cases);
  double want[VOCAB];
  for (int i = first; i < n; i++) {
    exact(&cases[i].o, want);
    int dof;
    double p = draw(k, threads, &cases[i].o, -1, DRAWS, 1000u * (unsigned)i, toks, pd) == 0
                   ? fit(toks, 0, want, &dof)
                   : -1;
    CHECK(p >= P_MIN, "%d threads: %s: %d draws fit the oracle (chi-square p = %.4g, %d dof)",
          threads, cases[i].name, DRAWS, p, dof);
  }
}

/* A draft after position 0: p(draft) is the oracle's p[draft], the residual
 * draws fit p without the draft, renormalized. */
static void residual(mkc_cpu_kernel *k) {
  mkc_sampling o = base();
  o.temp = 0.9f, o.top_k = 20;
  double want[VOCAB], rest[VOCAB];
  exact(&o, want);
  int draft = 5; /* a likely token */
  double accept = mkc_sampler_ref_residual(want, VOCAB, draft, rest);
  int dof;
  if (draw(k, 32, &o, draft, DRAWS, 5u, toks, pd) != 0) {
    CHECK(0, "residual draws");
    return;
  }
  CHECK_NEAR(pd[0], accept, 1e-5, "p(draft) equals the oracle's p[draft] (%.6f)", accept);
  double p = fit(toks, 1, rest, &dof);
  CHECK(p >= P_MIN, "residual: %d draws fit p without the draft, renormalized (p = %.4g)", DRAWS,
        p);
  CHECK(fit(toks, 0, want, &dof) >= P_MIN, "with a draft: the bonus draws still fit p");
}

/* Temperature 0 with a penalty: the argmax of the penalized logits (lowest
 * id on ties), and a draft is kept exactly when it is that token. */
static void greedy_penalized(mkc_cpu_kernel *k) {
  mkc_sampling o = base();
  o.temp = 0, o.repeat_penalty = 2.0f;
  double want[VOCAB];
  exact(&o, want);
  int best = 0;
  for (int i = 1; i < VOCAB; i++)
    if (want[i] > want[best]) best = i;
  int t2[4];
  float p2[2];
  int ok =
      draw(k, 32, &o, best, 2, 1u, t2, p2) == 0 && t2[0] == best && t2[2] == best && p2[0] == 1.0f;
  ok = ok && draw(k, 32, &o, best == 1 ? 2 : 1, 1, 1u, t2, p2) == 0 && p2[0] == 0.0f;
  CHECK(ok, "temp 0 with a repeat penalty: the penalized argmax (%d), drafts kept only when it",
        best);
}

/* The kernel's Philox4x32-10 equals the host reference. */
static void philox(mkc_cpu_kernel *k) {
  memset(scratch, 0, sizeof scratch);
  int *hdr = (int *)scratch;
  hdr[0] = 1, hdr[1] = 64;
  uint32_t *io = (uint32_t *)(scratch + OFF_OUT);
  uint64_t x = 12345;
  for (int i = 0; i < 64 * 6; i++) io[i] = (uint32_t)(mkc_splitmix64(&x) >> 7);
  uint32_t want[64][4];
  for (int i = 0; i < 64; i++) philox4x32_10(io + 6 * i, io + 6 * i + 4, want[i]);
  mkc_state st;
  memset(&st, 0, sizeof st);
  int same =
      mkc_cpu_kernel_launch(k, 1, 32, 64 + 4 * 32 + 16 + 1024, NULL, scratch, NULL, &st) == 0;
  for (int i = 0; same && i < 64; i++) same = memcmp(io + 6 * i, want[i], sizeof want[i]) == 0;
  CHECK(same, "the kernel's Philox4x32-10 equals the reference on 64 random counters and keys");
}

/* Which options send a step through the sampler: not the all-zero options
 * of a fresh state, nor greedy with the neutral values the CLI sends. */
static void sampling_on(mkc_cpu_kernel *k) {
  static const struct {
    const char *name;
    mkc_sampling o;
    int on;
  } CASES[] = {
      {"all-zero options (a fresh state)", {.temp = 0}, 0},
      {"greedy with neutral values", {.top_p = 1, .repeat_penalty = 1, .repeat_last_n = 64}, 0},
      {"a temperature", {.temp = 0.5f, .top_p = 1, .repeat_penalty = 1}, 1},
      {"a repeat penalty at temperature 0", {.top_p = 1, .repeat_penalty = 1.1f}, 1},
      {"a presence penalty", {.presence_penalty = 0.5f}, 1},
      {"log-probabilities", {.logprobs = 1}, 1},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    memset(scratch, 0, sizeof scratch);
    int *hdr = (int *)scratch, *out = (int *)(scratch + OFF_OUT);
    hdr[0] = 2;
    mkc_state st;
    memset(&st, 0, sizeof st);
    st.sampling = CASES[i].o;
    int rc = mkc_cpu_kernel_launch(k, 1, 32, 64 + 4 * 32 + 16 + 1024, NULL, scratch, NULL, &st);
    CHECK(rc == 0 && out[0] == CASES[i].on, "the sampler %s for %s",
          CASES[i].on ? "runs" : "does not run", CASES[i].name);
  }
}

/* Each planted bug makes the matching case fail the same test. */
static void planted(void) {
  static const struct {
    const char *name, *from, *to;
    int option_case;
  } BUGS[] = {
      {"top-k off by one", "int k = o->top_k;", "int k = o->top_k + 1;", 1},
      {"repeat penalty applied twice", "l = l <= 0.0f ? l * rp : l / rp;",
       "l = l <= 0.0f ? l * rp : l / rp;\n    l = l <= 0.0f ? l * rp : l / rp;", 4},
      {"top-p after the temperature",
       "float scale = 1.0f; /* top-p on the untempered softmax: temperature comes last */",
       "float scale = 1.0f / o->temp;", 6},
  };
  option_case cases[10];
  n_cases(cases);
  for (size_t b = 0; b < sizeof BUGS / sizeof *BUGS; b++) {
    mkc_cpu_kernel *k = build(32, BUGS[b].from, BUGS[b].to);
    if (!CHECK(k != NULL, "planted bug '%s': builds", BUGS[b].name)) continue;
    const option_case *c = &cases[BUGS[b].option_case];
    double want[VOCAB];
    exact(&c->o, want);
    int dof;
    double p = draw(k, 32, &c->o, -1, DRAWS, 1000u * (unsigned)BUGS[b].option_case, toks, pd) == 0
                   ? fit(toks, 0, want, &dof)
                   : -1;
    CHECK(p < P_MIN, "planted bug '%s': the %s test fails (p = %.3g)", BUGS[b].name, c->name, p);
    mkc_cpu_kernel_close(k);
  }
}

int main(void) {
  snprintf(templates_dir, sizeof templates_dir, "%s/templates", mkc_home());
  mkc_cpu_kernel *k32 = build(32, NULL, NULL), *k128 = build(128, NULL, NULL);
  if (CHECK(k32 && k128, "the sampler's test kernel builds (32 and 128 threads)")) {
    philox(k32);
    sampling_on(k32);
    options(k32, 32, 0);
    options(k128, 128, 5);
    residual(k32);
    greedy_penalized(k32);
    planted();
  }
  if (k32) mkc_cpu_kernel_close(k32);
  if (k128) mkc_cpu_kernel_close(k128);
  return check_done();
}
