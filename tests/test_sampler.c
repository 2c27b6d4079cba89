/* The kernel's sampler (templates/sample.cuh) on the SIMT emulator against
 * the float64 oracle (runtime/exec/sampler_ref.h): for each option alone and
 * combined, 20,000 draws on fixed logits pass a chi-square test against the
 * oracle's exact distribution (p >= 0.001), and the same test fails on planted
 * bugs (top-k off by one, the repeat penalty applied twice, top-p after the
 * temperature), each applied to a copy of the template's text. The residual
 * draw, p(draft), greedy on penalized logits, and the kernel's Philox
 * against the host reference (Random123's vectors, tests/test_sampler_ref.c)
 * are checked too. The candidates stage (top-k over the union of every
 * block's slice top-k) draws the full path's tokens bit for bit, ties across
 * the slices included, and four planted bugs in it break that. */
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
#define OFF_HDR 0                              /* int: mode, n, T, seed base */
#define OFF_LOGITS 64                          /* [T][VOCAB] */
#define OFF_HISTORY (OFF_LOGITS + 2 * VOCAB)   /* int [POS] */
#define OFF_WORK (OFF_HISTORY + 64)            /* [T][VOCAB] */
#define OFF_DRAWN (OFF_WORK + 2 * VOCAB)       /* int [T][2] */
#define OFF_PDRAFT (OFF_DRAWN + 8)             /* [T] */
#define OFF_LISTS (OFF_PDRAFT + 8)             /* int [T][VOCAB] */
#define OFF_LP (OFF_LISTS + 2 * VOCAB)         /* [T][MKC_LP_STRIDE] */
#define OFF_CMAX (OFF_LP + 2 * 64)             /* candidates: [T][MKC_MAX_BLOCKS] slice maxima */
#define OFF_CN (OFF_CMAX + 2 * MKC_MAX_BLOCKS) /* int [T][MKC_MAX_BLOCKS]: slice list sizes */
#define OFF_CK (OFF_CN + 2 * MKC_MAX_BLOCKS)   /* [T][MKC_MAX_BLOCKS]: slice k-th values */
#define OFF_UNI (OFF_CK + 2 * MKC_MAX_BLOCKS)  /* int [T][VOCAB]: their union */
#define OFF_OUT (OFF_UNI + 2 * VOCAB)          /* int [n][2] tokens, then [n] p(draft) */
#define SCRATCH (OFF_OUT + 3 * DRAWS + 64)

/* The entry: n draws of position t = 0 with seeds base, base + 1, ... on the
 * full path (mode 0, one block), or (mode 3, any grid) with the candidates
 * stage first when mkc_cands_on, as the emitted step runs them: then the
 * last word of out says whether it ran; or (mode 1) Philox of n counters from
 * out. */
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
    "  int cands = hdr[0] == 3 && mkc_cands_on(&st->sampling, VOCAB);\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    if (mkc_bid() == 0 && mkc_tid() == 0) st->sampling.seed_lo = (unsigned)(hdr[3] + i);\n"
    "    if (cands)\n"
    "      mkc_sample_cands(st, (const int *)(scratch + OFF_HISTORY), scratch + OFF_LOGITS, "
    "VOCAB,\n"
    "                       VOCAB, POS, 0, T, scratch + OFF_WORK, (int *)(scratch + OFF_LISTS),\n"
    "                       scratch + OFF_CMAX, (int *)(scratch + OFF_CN), scratch + OFF_CK,\n"
    "                       red, part, hist,\n"
    "                       winner + 1);\n"
    "    mkc_grid_sync(st);\n"
    "    mkc_sample(st, (const int *)(scratch + OFF_HISTORY), scratch + OFF_LOGITS, VOCAB, VOCAB,\n"
    "               POS, 0, T, 0, scratch + OFF_WORK, (int *)(scratch + OFF_LISTS), cands,\n"
    "               scratch + OFF_CMAX, (const int *)(scratch + OFF_CN), scratch + OFF_CK,\n"
    "               (int *)(scratch + OFF_UNI), (int *)(scratch + OFF_DRAWN),\n"
    "               scratch + OFF_PDRAFT, scratch + OFF_LP, red, part, winner, hist);\n"
    "    mkc_grid_sync(st);\n"
    "    if (mkc_bid() == 0 && mkc_tid() == 0) {\n"
    "      int *d = (int *)(scratch + OFF_DRAWN);\n"
    "      out[2 * i] = d[0];\n"
    "      out[2 * i + 1] = d[1];\n"
    "      scratch[OFF_OUT + 2 * n + i] = scratch[OFF_PDRAFT];\n"
    "    }\n"
    "  }\n"
    "  if (mkc_bid() == 0 && mkc_tid() == 0) out[3 * n] = cands;\n"
    "}\n";

static char templates_dir[PATH_MAX];
static float scratch[SCRATCH];

/* The test kernel around sample.cuh's text with `from` replaced by `to`
 * (a planted bug; NULL: as written), or NULL after a failed check. */
static mkc_cpu_kernel *build(int threads, const char *from, const char *to) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/common.cuh", templates_dir);
  char *common = mkc_read_file(path, NULL);
  snprintf(path, sizeof path, "%s/slots.cuh", templates_dir); /* sample.cuh's slot conditions */
  char *slots = mkc_read_file(path, NULL);
  snprintf(path, sizeof path, "%s/sample.cuh", templates_dir);
  char *sample = mkc_read_file(path, NULL);
  mkc_cpu_kernel *k = NULL;
  if (!common || !slots || !sample) goto done;
  char *text = sample;
  if (from) {
    char *at = strstr(sample, from);
    if (!CHECK(at != NULL, "planted bug: the template still has '%s'", from)) goto done;
    size_t n = strlen(sample) + strlen(to) + 1;
    text = malloc(n);
    snprintf(text, n, "%.*s%s%s", (int)(at - sample), sample, to, at + strlen(from));
  }
  size_t cap = strlen(common) + strlen(slots) + strlen(text) + sizeof ENTRY + 1024;
  char *src = malloc(cap);
  snprintf(
      src, cap,
      "#define MKC_THREADS %d\n#define MKC_T_MAX 4\n#define MKC_KV_F32 1\n"
      "#define VOCAB %d\n#define POS %d\n#define OFF_OUT %d\n#define OFF_HISTORY %d\n"
      "#define OFF_LOGITS %d\n#define OFF_WORK %d\n#define OFF_DRAWN %d\n#define OFF_PDRAFT %d\n"
      "#define OFF_LISTS %d\n#define OFF_LP %d\n#define OFF_CMAX %d\n#define OFF_CN %d\n"
      "#define OFF_CK %d\n#define OFF_UNI %d\n"
      "#ifndef __CUDACC__\n#include \"prelude_cpu.h\"\n#endif\n#include \"mkc_state.h\"\n"
      "%s\n%s\n%s\n%s",
      threads, VOCAB, POS, OFF_OUT, OFF_HISTORY, OFF_LOGITS, OFF_WORK, OFF_DRAWN, OFF_PDRAFT,
      OFF_LISTS, OFF_LP, OFF_CMAX, OFF_CN, OFF_CK, OFF_UNI, common, slots, text, ENTRY);
  k = mkc_cpu_kernel_open(src, from ? "sample_planted.cu" : "sample_test.cu", templates_dir);
  free(src);
  if (text != sample) free(text);
done:
  free(common);
  free(slots);
  free(sample);
  return k;
}

/* Fixed logits: spread over a range where every cut matters; or (tied) three
 * values, each at every third id, so that top-k cuts inside a tie that spans
 * every block's slice and the lowest ids must win it. */
static int tied;
static int spread; /* the same values without the tie: the top ids in slices of their own */
static void fixed_logits(float *l) {
  for (int i = 0; i < VOCAB; i++) l[i] = (float)((i * 37) % VOCAB) / 8.0f - 2.0f;
  if (!spread) l[5] = l[9] = 3.5f; /* a tie at the top */
  if (tied)
    for (int i = 0; i < VOCAB; i++) l[i] = (float)(i % 3);
}

static const int HISTORY[POS] = {5, 7, 5, 40, 9, 5, 12, 7, 30, 2, 9, 41};

/* n draws at T = 1 (or 2, with draft as input 1) into toks[2n] and p[n], on
 * one block's full path (blocks 0) or with the candidates stage on a grid of
 * `blocks` (then *cands says whether it ran). */
static int draw_on(mkc_cpu_kernel *k, int threads, int blocks, const mkc_sampling *o, int draft,
                   int n, unsigned seed_base, int *toks, float *p, int *cands) {
  memset(scratch, 0, sizeof scratch);
  int *hdr = (int *)scratch;
  hdr[0] = blocks ? 3 : 0, hdr[1] = n, hdr[2] = draft >= 0 ? 2 : 1, hdr[3] = (int)seed_base;
  fixed_logits(scratch + OFF_LOGITS);
  memcpy(scratch + OFF_HISTORY, HISTORY, sizeof HISTORY);
  for (int i = 0; i < 2 * VOCAB; i++) ((int *)scratch)[OFF_UNI + i] = -1; /* none gathered yet */
  mkc_state st;
  memset(&st, 0, sizeof st);
  st.sampling = *o;
  st.inputs[0] = 3; /* the token at POS: in the window too */
  st.inputs[1] = draft;
  if (mkc_cpu_kernel_launch(k, blocks ? blocks : 1, threads, 64 + 4 * threads + 16 + 1024, NULL,
                            scratch, NULL, &st) != 0)
    return -1;
  memcpy(toks, scratch + OFF_OUT, (size_t)2 * n * sizeof *toks);
  memcpy(p, scratch + OFF_OUT + 2 * n, (size_t)n * sizeof *p);
  if (cands) *cands = ((int *)scratch)[OFF_OUT + 3 * n];
  return 0;
}

static int draw(mkc_cpu_kernel *k, int threads, const mkc_sampling *o, int draft, int n,
                unsigned seed_base, int *toks, float *p) {
  return draw_on(k, threads, 0, o, draft, n, seed_base, toks, p, NULL);
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

/* The candidates stage's cases: top-k small enough for it, with a draft. */
typedef struct cands_case {
  const char *name;
  mkc_sampling o;
  int tied, draft;
} cands_case;

static int cands_cases(cands_case *c) {
  int n = 0;
  mkc_sampling o = base();
  c[n++] = (cands_case){"top-k 5 (a tie at the top)", (o.top_k = 5, o), 0, 9};
  o = base();
  c[n++] = (cands_case){"top-k 1", (o.top_k = 1, o), 0, 5};
  o = base();
  c[n++] = (cands_case){"top-k 3 inside a tie across the slices", (o.top_k = 3, o), 1, 8};
  o = base();
  c[n++] =
      (cands_case){"top-k 20 of a tie, temperature 1.5", (o.top_k = 20, o.temp = 1.5f, o), 1, 2};
  o = base();
  c[n++] = (cands_case){"top-k 20, min-p 0.3 (of a maximum outside the first slice)",
                        (o.top_k = 20, o.min_p = 0.3f, o), 0, 35};
  o = base();
  o.temp = 0.8f, o.top_k = 12, o.top_p = 0.9f, o.min_p = 0.05f, o.repeat_penalty = 1.25f;
  o.presence_penalty = 0.25f, o.frequency_penalty = 0.5f, o.repeat_last_n = 13;
  c[n++] = (cands_case){"combined: every option", o, 0, 40};
  return n;
}

#define SAME_DRAWS 300
static int toks_full[2 * SAME_DRAWS], toks_cands[2 * SAME_DRAWS];
static float pd_full[SAME_DRAWS], pd_cands[SAME_DRAWS];

/* Whether the candidates path on `blocks` blocks gives the full path's draws
 * bit for bit for every case (a draft after position 0: the residual draws and
 * p(draft) too); *ran: the cases in which the candidates stage ran. */
static int same_draws(mkc_cpu_kernel *k, int blocks, int *ran, const char **differs) {
  cands_case c[8];
  int n = cands_cases(c), same = 1;
  *ran = 0;
  for (int i = 0; i < n && same; i++) {
    tied = c[i].tied;
    int on = 0;
    same = draw_on(k, 32, 0, &c[i].o, c[i].draft, SAME_DRAWS, 70u * (unsigned)i, toks_full, pd_full,
                   NULL) == 0 &&
           draw_on(k, 32, blocks, &c[i].o, c[i].draft, SAME_DRAWS, 70u * (unsigned)i, toks_cands,
                   pd_cands, &on) == 0 &&
           memcmp(toks_full, toks_cands, sizeof toks_full) == 0 &&
           memcmp(pd_full, pd_cands, sizeof pd_full) == 0;
    *ran += on;
    if (!same) *differs = c[i].name;
  }
  tied = 0;
  return same;
}

/* The candidates stage (every block keeps its slice's top-k, the sampler reads
 * their union) draws exactly what the full path draws: a grid of 5 blocks
 * (slices of 10 ids), 13 (slices of 4, the last one empty) and 50 (more
 * blocks than ids: empty slices). And the stage runs exactly for the options
 * mkc_cands_on names. */
static void candidates(mkc_cpu_kernel *k) {
  static const int GRIDS[] = {5, 13, 50};
  cands_case c[8];
  int n = cands_cases(c);
  for (size_t g = 0; g < sizeof GRIDS / sizeof *GRIDS; g++) {
    int ran = 0;
    const char *differs = "";
    int same = same_draws(k, GRIDS[g], &ran, &differs);
    CHECK(same && ran == n,
          "%d blocks: the candidates stage ran in %d of %d cases, and their %d draws each (and "
          "residual draws, p(draft)) equal the full path's bit for bit%s%s",
          GRIDS[g], ran, n, SAME_DRAWS, same ? "" : "; differs: ", differs);
  }
  static const struct {
    const char *name;
    mkc_sampling o;
  } OFF[] = {
      {"top-k 0", {.temp = 1, .top_p = 1, .top_k = 0}},
      {"top-k MKC_CANDS_K + 1", {.temp = 1, .top_p = 1, .top_k = MKC_CANDS_K + 1}},
      {"top-k the whole vocabulary", {.temp = 1, .top_p = 1, .top_k = VOCAB}},
      {"log-probabilities", {.temp = 1, .top_p = 1, .top_k = 5, .logprobs = 2}},
      {"greedy with a penalty", {.top_p = 1, .top_k = 5, .repeat_penalty = 1.5f}},
  };
  for (size_t i = 0; i < sizeof OFF / sizeof *OFF; i++) {
    int on = -1;
    draw_on(k, 32, 5, &OFF[i].o, -1, 1, 1u, toks_cands, pd_cands, &on);
    CHECK(on == 0, "the candidates stage does not run for %s", OFF[i].name);
  }
}

/* The spread case: top-k 5 of the spread logits, whose five largest lie in
 * five slices of 13 (4 ids each, one a thread), where no slice keeps k and
 * the slices' k-th values bound nothing. With the given draft: *union_ok, the
 * sampler's union is the oracle's 5 survivors and no more (*n: its size);
 * *same, the draws, residual draws and p(draft) are the full path's bit for
 * bit; *zero, p(draft) is 0 in every draw. Returns whether both paths ran. */
static int bound_case(mkc_cpu_kernel *k, int draft, int *n, int *union_ok, int *same, int *zero) {
  mkc_sampling o = base();
  o.top_k = 5;
  double want[VOCAB];
  spread = 1;
  exact(&o, want);
  int top[VOCAB], n_top = 0;
  for (int i = 0; i < VOCAB; i++)
    if (want[i] > 0) top[n_top++] = i;
  int on = 0, ok = draw_on(k, 32, 0, &o, draft, SAME_DRAWS, 9u, toks_full, pd_full, NULL) == 0 &&
                   draw_on(k, 32, 13, &o, draft, SAME_DRAWS, 9u, toks_cands, pd_cands, &on) == 0;
  spread = 0;
  const int *uni = (const int *)scratch + OFF_UNI;
  for (*n = 0; *n < VOCAB && uni[*n] >= 0;) ++*n;
  *union_ok = n_top == 5 && *n == n_top && memcmp(uni, top, sizeof *top * (size_t)*n) == 0;
  *same = memcmp(toks_full, toks_cands, sizeof toks_full) == 0 &&
          memcmp(pd_full, pd_cands, sizeof pd_full) == 0;
  *zero = 1;
  for (int i = 0; i < SAME_DRAWS; i++) *zero &= pd_cands[i] == 0.0f;
  return ok && on;
}

/* The sampler's union is cut down to the candidates at or above the row's
 * k-th value where the slices' maxima say so (bound_case). A draft outside
 * the union, its logit never cut (its slice below the bound, or walked and
 * below it), has p(draft) 0, as on the full path. */
static void candidates_bound(mkc_cpu_kernel *k) {
  static const struct {
    int draft, survives;
    const char *what;
  } DRAFTS[] = {{31, 1, "the fifth largest"},
                {0, 0, "in a slice below the bound"},
                {47, 0, "below the bound in a slice above it"}};
  for (size_t d = 0; d < sizeof DRAFTS / sizeof *DRAFTS; d++) {
    int n, union_ok, same, zero, ok = bound_case(k, DRAFTS[d].draft, &n, &union_ok, &same, &zero);
    CHECK(ok && union_ok,
          "top-k 5 over 13 slices, draft %d (%s): the union is the oracle's 5 survivors "
          "(%d ids gathered)",
          DRAFTS[d].draft, DRAFTS[d].what, n);
    CHECK(ok && same,
          "top-k 5 over 13 slices, draft %d: %d draws, residual draws and p(draft) equal the "
          "full path's bit for bit",
          DRAFTS[d].draft, SAME_DRAWS);
    if (!DRAFTS[d].survives)
      CHECK(ok && zero, "draft %d, not a survivor: p(draft) 0 in every draw", DRAFTS[d].draft);
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
  /* The candidates path's own bugs break its bit-for-bit equality. */
  static const struct {
    const char *name, *from, *to;
  } CANDS_BUGS[] = {
      {"a slice keeps k - 1", "mkc_key_radix(w + lo, 0, n, k,",
       "mkc_key_radix(w + lo, 0, n, k - 1,"},
      {"a slice keeps k - 1 of a tie", "mkc_cut_below(w + lo, 0, n, key, (float)k,",
       "mkc_cut_below(w + lo, 0, n, key, (float)(k - 1),"},
      {"the maximum of the first slice only", "for (int b = mkc_tid(); b < mkc_nblocks();",
       "for (int b = mkc_tid(); b < 1;"},
      {"the union misses the last block's list", "mkc_share(mkc_nblocks(), &b_lo, &b_hi);",
       "mkc_share(mkc_nblocks() - 1, &b_lo, &b_hi);"},
      {"the union's bound from the slices' maxima, not their k-th values",
       "k > 0 && kept >= k ? least : MKC_CUT", "k > 0 && kept >= k ? max : MKC_CUT"},
  };
  for (size_t b = 0; b < sizeof CANDS_BUGS / sizeof *CANDS_BUGS; b++) {
    mkc_cpu_kernel *k = build(32, CANDS_BUGS[b].from, CANDS_BUGS[b].to);
    if (!CHECK(k != NULL, "planted bug '%s': builds", CANDS_BUGS[b].name)) continue;
    int ran = 0;
    const char *differs = "";
    int same = same_draws(k, 5, &ran, &differs);
    CHECK(!same,
          "planted bug '%s': the candidates path's draws differ from the full path's (in %s)",
          CANDS_BUGS[b].name, differs);
    mkc_cpu_kernel_close(k);
  }
  /* the union's bound (bound_case): too high loses a survivor, absent keeps every list, and
   * p(draft) read from work sees a logit the gather no longer cuts */
  static const struct {
    const char *name, *from, *to;
    int draft, want; /* want: 0 the draws differ, 1 the union is too large, 2 p(draft) != 0 */
  } BOUND_BUGS[] = {
      {"the bound from the (k - 1)-th largest maximum", "if (above == k - 1) bound",
       "if (above == k - 2) bound", 31, 0},
      {"no bound from the slices' maxima", "if (above == k - 1) bound = fmaxf(bound, top);", "", 0,
       1},
      {"p(draft) from the draft's logit in work", "if (i == draft) e = x;",
       "if (i == draft) e = x;\n      }\n      e = expf((w[draft] - max) * inv_temp);\n      {", 47,
       2},
  };
  for (size_t b = 0; b < sizeof BOUND_BUGS / sizeof *BOUND_BUGS; b++) {
    mkc_cpu_kernel *k = build(32, BOUND_BUGS[b].from, BOUND_BUGS[b].to);
    if (!CHECK(k != NULL, "planted bug '%s': builds", BOUND_BUGS[b].name)) continue;
    int n, union_ok, same, zero,
        ok = bound_case(k, BOUND_BUGS[b].draft, &n, &union_ok, &same, &zero);
    int caught = BOUND_BUGS[b].want == 0 ? !same : BOUND_BUGS[b].want == 1 ? !union_ok : !zero;
    CHECK(ok && caught, "planted bug '%s': the spread case fails (%d ids gathered)",
          BOUND_BUGS[b].name, n);
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
    candidates(k32);
    candidates_bound(k32);
    planted();
  }
  if (k32) mkc_cpu_kernel_close(k32);
  if (k128) mkc_cpu_kernel_close(k128);
  return check_done();
}
