/* Deleting any one synchronization from a generated kernel makes a test fail.
 *
 * Every synchronization an emitted source contains is found in its text: each
 * flow arrival and flow wait between stages (mkc_flow_arrive, mkc_flow_wait;
 * mkc_grid_sync where MKC_SYNC=grid asks for barriers), each mkc_sync_block and
 * mkc_sync_warp of the inlined templates, each mkc_fence, and each spin-wait
 * (`while (...) mkc_pause();`); the CUDA half of the prelude is skipped, and a
 * wait of another shape fails the test. For each one a mutant source is made
 * with that statement replaced by `;` (checked: the mutant's own sync points
 * are the original's less that one, at the same places). The mutants run as
 * one build: the kernel with each point's statement guarded by the number of
 * the point to skip, compiled once for the cpu backend at -O1; each mutant is
 * that build with its own point skipped (one build per mutant was two thirds
 * of the time). Each runs on the SIMT emulator's checking schedule
 * (MKC_SIMT_SEED, default 1: random warp and lane orders, one block at a time
 * in a random order; runtime/backend/cpu/simt.c) through a fixed script of 74
 * steps: prompt chunks and draft-verify steps against the reference executor
 * (logits within 1e-4 of the largest, the same tokens and pos, then the same
 * KV cache as the unmutated kernel), then the sampler's paths against the
 * unmutated kernel (PHASES). A mutant is caught when a value differs, the
 * emulator reports misuse, or it crashes or hangs; the mutants one seed lets
 * through run again under the next seed (a race may show under one schedule
 * and not another), and those of points in the emulator's own code (`#ifdef
 * MKC_CPU`: a prompt tile worked out by one thread, which the checking
 * schedule leaves to the lanes) once more on the default schedule. Each runs in a child
 * process, with a deadline, as many at a time as there are cores (2 to 8).
 *
 * Kernels: tiny (T <= 5, 4 blocks), every point; qwen3-tiny (3 blocks, its
 * per-head norm counters), every point but the sampler's (sample.cuh runs the
 * same for every model); "wide" (64 blocks, a 1024-token vocabulary), the
 * points of lm_head.cuh, accept.cuh and attention.cuh, where the size of the
 * grid matters (only there does attention split a unit's positions and merge);
 * qwen2-tiny generated with MKC_SPLIT=1 (4 blocks), the points of matvec.cuh
 * and qkv_rope.cuh, where the split matmuls' block barriers are; and with
 * MKC_MMA_DECODE=1 too, the points of matvec.cuh (the tensor-core split's);
 * and qwen2-tiny with MKC_MMA_DECODE=1 MKC_SPLITK=1 on 16 blocks, the points
 * of matvec.cuh and qkv_rope.cuh (split-K's release and acquire); qwen3-tiny
 * with MKC_MMA_DECODE=1, the points of qkv_rope.cuh (the tensor-core Q/K/V's
 * head-norm counters); moe-tiny, the points of moe.cuh (the experts' choice
 * every block makes before its tasks).
 * The greedy phase feeds its prompt as one chunk past t_max (the tiled path,
 * templates/gemm.cuh and gemm_attn.cuh), and ends with a launch of 4 rounds
 * (templates/rounds.cuh), one of 3 rounds drafted by the kernel's first layer
 * and a chunk of up to 70 tokens (more cached positions
 * than one K/V tile, more attention items than blocks).
 * Each kernel's own arrivals and waits are all deleted (a deleted arrival
 * leaves a wait that never ends: the emulator's checking schedule reports the
 * deadlock). A template's point counts
 * as caught when its deletion is caught in any kernel. Points no run here can show are listed in
 * NOT_SHOWN with the reason: they print as skipped, and a listed point that is
 * caught, or that no longer exists, fails, so the list stays true.
 * docs/DECISIONS.md ("Deleted syncs are caught") has the table.
 * MKC_TEST_ONLY=NAME runs one kernel's mutants, and gives the verdicts over it alone. */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "fixture.h"
#include "scratch.h"
#include "exec/reference.h"

#define TOL 1e-4
#define MAX_POINTS 128
#define MAX_STEPS 80
#define PROMPT_LEN 9
#define DECODE_STEPS 10 /* draft-verify steps per phase */
#define DEADLINE_S 60   /* per mutant: past it the mutant counts as hung */

/* ---- sync points in the emitted text ---- */

typedef struct sync_point {
  size_t at, len; /* the statement: source[at, at + len) */
  char what[24];  /* mkc_sync_block, mkc_sync_warp, mkc_grid_sync, mkc_fence, spin-wait */
  char file[64];  /* the template (or the kernel file) its #line names */
  char func[48];  /* the function it is in */
  int index;      /* its number among the same `what` in func of file, from 1 */
  int line;       /* in file */
  char stage[64]; /* in mkc_step: the stage it ends */
} sync_point;

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The code of line [s, e) with comments and string literals blanked; *in_comment carries a
 * block comment across lines. */
static void code_only(const char *s, const char *e, char *out, int *in_comment) {
  int in_str = 0;
  for (const char *p = s; p < e; p++, out++) {
    *out = ' ';
    if (*in_comment) {
      if (p[0] == '*' && p + 1 < e && p[1] == '/') {
        *in_comment = 0;
        *++out = ' ';
        p++;
      }
    } else if (in_str) {
      if (*p == '\\' && p + 1 < e) {
        *++out = ' ';
        p++;
      } else if (*p == '"')
        in_str = 0;
    } else if (p[0] == '/' && p + 1 < e && p[1] == '*') {
      *in_comment = 1;
      *++out = ' ';
      p++;
    } else if (p[0] == '/' && p + 1 < e && p[1] == '/') {
      for (; p + 1 < e; p++) *++out = ' ';
    } else if (*p == '"') {
      in_str = 1;
    } else if (*p == '\'') { /* a char literal: 'x' or '\x' */
      while (p + 1 < e && *++p != '\'') *++out = ' ';
      if (p < e && *p == '\'') *++out = ' ';
    } else {
      *out = *p;
    }
  }
  *out = '\0';
}

static const char *const CALLS[] = {"mkc_sync_block",  "mkc_sync_warp", "mkc_grid_sync",
                                    "mkc_flow_arrive", "mkc_flow_wait", "mkc_fence",
                                    "mkc_pause"};
#define N_CALLS (int)(sizeof CALLS / sizeof *CALLS)

/* The sync points of src, in the order of the text; -1 (with a FAIL) on one the test does
 * not know how to delete, so that a new kind of wait cannot slip past. */
static int find_syncs(const char *src, sync_point *pts, int cap, const char *label) {
  char file[64] = "?", func[48] = "?", stage[64] = "", code[4096];
  int line = 1, n = 0, in_comment = 0, depth = 0, cuda_depth = 0, in_cuda = 0, name_next = 0;
  for (const char *s = src; *s;) {
    const char *e = strchr(s, '\n');
    if (!e) e = s + strlen(s);
    int this_line = line++;
    if ((size_t)(e - s) >= sizeof code) {
      CHECK(0, "%s: %s:%d: a line longer than %zu bytes", label, file, this_line, sizeof code);
      return -1;
    }
    code_only(s, e, code, &in_comment);
    const char *c = code;
    while (*c == ' ' || *c == '\t') c++;
    if (*c == '#') { /* #line, and the CUDA half of #if defined(__CUDACC__) ... #else */
      int n_line;
      char name[64];
      if (sscanf(s + (c - code), "#line %d \"%63[^\"]\"", &n_line, name) == 2) {
        line = n_line;
        snprintf(file, sizeof file, "%s", name);
      } else if (starts_with(c, "#if")) {
        depth++;
        if (!cuda_depth && strstr(c, "__CUDACC__")) cuda_depth = depth, in_cuda = 1;
      } else if (starts_with(c, "#el")) {
        if (depth == cuda_depth) in_cuda = 0;
      } else if (starts_with(c, "#endif")) {
        if (depth == cuda_depth) cuda_depth = 0, in_cuda = 0;
        depth--;
      }
      goto next;
    }
    if (in_cuda) goto next;
    /* a definition's name: before its '(', on this line or, where the formatter broke the
     * line after the return type, on the next */
    int defines = starts_with(c, "MKC_DEVICE") || starts_with(c, "MKC_KERNEL");
    if (defines || name_next) {
      const char *paren = strchr(c, '('), *b = paren;
      while (b && b > c && ident_char(b[-1])) b--;
      if (paren) snprintf(func, sizeof func, "%.*s", (int)(paren - b), b);
      name_next = defines && !paren;
      stage[0] = '\0';
    }
    const char *st = strstr(s, "/* stage "); /* a comment: read in the raw line */
    int k_stage, m_stage;
    char kind[32];
    if (st && st < e && sscanf(st, "/* stage %d/%d: %31s", &k_stage, &m_stage, kind) == 3)
      snprintf(stage, sizeof stage, "end of stage %d/%d %s", k_stage, m_stage, kind);
    const char *ps = strstr(s, "/* pass stage "); /* a stage of the layer loop's body */
    if (ps && ps < e && sscanf(ps, "/* pass stage %d/%d: %31s", &k_stage, &m_stage, kind) == 3)
      snprintf(stage, sizeof stage, "layer loop stage %d/%d %s", k_stage, m_stage, kind);
    int first = n; /* the points of this line, sorted by position below */
    for (int k = 0; k < N_CALLS; k++) {
      for (const char *m = strstr(code, CALLS[k]); m; m = strstr(m + 1, CALLS[k])) {
        const char *after = m + strlen(CALLS[k]);
        if ((m > code && ident_char(m[-1])) || ident_char(*after)) continue;
        const char *close = strchr(after, ')'), *semi = strchr(after, ';');
        const char *q = close ? close + 1 : after;
        while (*q == ' ') q++;
        if (*q == '{') continue; /* a definition, not a call */
        const char *from = m, *what = CALLS[k];
        if (strcmp(what, "mkc_pause") == 0) { /* a spin-wait: the whole loop goes */
          if (!(starts_with(c, "while (") && c < m && semi && semi == after + 2)) {
            CHECK(0, "%s: %s:%d: a wait the test cannot delete: %.*s", label, file, this_line,
                  (int)(e - s), s);
            return -1;
          }
          from = c, what = "spin-wait";
        }
        if (!semi || n >= cap) {
          CHECK(0, "%s: %s:%d: a sync point that is not a statement, or more than %d", label, file,
                this_line, cap);
          return -1;
        }
        sync_point *p = &pts[n++];
        p->at = (size_t)(s - src) + (size_t)(from - code);
        p->len = (size_t)(semi - from) + 1;
        snprintf(p->what, sizeof p->what, "%s", what);
        snprintf(p->file, sizeof p->file, "%s", file);
        snprintf(p->func, sizeof p->func, "%s", func);
        int kernel_sync = strcmp(what, "mkc_grid_sync") == 0 ||
                          strcmp(what, "mkc_flow_arrive") == 0 ||
                          strcmp(what, "mkc_flow_wait") == 0;
        snprintf(p->stage, sizeof p->stage, "%s", kernel_sync ? stage : "");
        p->line = this_line;
      }
    }
    for (int i = first + 1; i < n; i++) /* insertion sort: a line holds one or two */
      for (int j = i; j > first && pts[j].at < pts[j - 1].at; j--) {
        sync_point t = pts[j];
        pts[j] = pts[j - 1];
        pts[j - 1] = t;
      }
    for (int i = first; i < n; i++) {
      pts[i].index = 1;
      for (int j = 0; j < i; j++)
        pts[i].index += strcmp(pts[j].what, pts[i].what) == 0 &&
                        strcmp(pts[j].func, pts[i].func) == 0 &&
                        strcmp(pts[j].file, pts[i].file) == 0;
    }
  next:
    s = *e ? e + 1 : e;
  }
  return n;
}

/* The point a child skips: the instrumented source (guarded, below) reads it from the test's
 * own executable (linked with -rdynamic, as the emulator is); 0 skips none. */
int mkc_test_deleted;

/* src with each of the n points at pts[chosen[k]] guarded by "if (mkc_test_deleted != k + 1)":
 * one build runs every mutant, each in a child that sets mkc_test_deleted, where a build per
 * mutant took most of the time (docs/DECISIONS.md, "Deleted syncs are caught"). The guard and
 * its braces stay on the statement's line, so no line moves. */
static char *guarded(const char *src, const sync_point *pts, const int *chosen, int n) {
  size_t len = strlen(src), cap = len + 64 + (size_t)n * 64;
  char *out = malloc(cap), *o = out;
  if (!out) return NULL;
  /* on the first line, before the header's comment: the lines keep their numbers */
  o += sprintf(o, "extern int mkc_test_deleted;%s", src[0] == '#' ? "\n" : " ");
  size_t from = 0;
  for (int k = 0; k < n; k++) {
    const sync_point *p = &pts[chosen[k]];
    memcpy(o, src + from, p->at - from);
    o += p->at - from;
    o += sprintf(o, "{ if (mkc_test_deleted != %d) { %.*s } }", k + 1, (int)p->len, src + p->at);
    from = p->at + p->len;
  }
  memcpy(o, src + from, len - from + 1);
  return out;
}

/* src with point p's statement replaced by ";". */
static char *mutant(const char *src, const sync_point *p) {
  size_t n = strlen(src);
  char *m = malloc(n + 2);
  if (!m) return NULL;
  memcpy(m, src, p->at);
  m[p->at] = ';';
  memcpy(m + p->at + 1, src + p->at + p->len, n - p->at - p->len + 1);
  return m;
}

/* ---- the script a kernel must follow ---- */

/* A kernel to mutate: a preset of graphs/llama.lua, or a model description. */
typedef struct config {
  const char *name;
  int draft_max, threads, blocks;
  const mkc_model_desc *model;
  const char *sample; /* NULL: every sync point; else the templates (a space-separated list)
                       * whose points are deleted, with the kernel's own grid barriers */
  const char *preset; /* NULL: name */
  int split;          /* generated with MKC_SPLIT=1 (the split matmuls' block barriers) */
  int mma;            /* generated with MKC_MMA_DECODE=1 (the tensor-core decode matmuls); 2: and
                       * MKC_SPLITK=1 (their split-K's release and acquire) */
} config;

/* The phases: greedy against the reference, then the sampler's paths against the unmutated
 * kernel: every cut with log-probabilities; greedy with a presence boost (the window's tokens
 * +2: the argmax is a logit the penalty pass rewrote, so a maximum read before that write
 * matches no token); a hot min-p alone (a token it cuts weighs about as much as one it
 * keeps); a cold temperature, whose draws follow the greedy drafts, so that the accept reads
 * what other blocks drew for later positions; a warm top-k of 40 with top-p and a repeat
 * penalty, which takes the candidates stage (every block's slice top-k, templates/sample.cuh). */
#define N_PHASES 6
static const mkc_sampling PHASES[N_PHASES] = {
    {0},
    {.temp = 1.5f,
     .top_k = 3,
     .top_p = 0.9f,
     .min_p = 0.02f,
     .repeat_penalty = 1.1f,
     .presence_penalty = 0.1f,
     .frequency_penalty = 0.05f,
     .repeat_last_n = 16,
     .seed_lo = 1234,
     .seed_hi = 5678,
     .logprobs = 3},
    {.top_p = 1.0f,
     .repeat_penalty = 1.0f,
     .presence_penalty = -2.0f,
     .repeat_last_n = 64,
     .logprobs = 5},
    {.temp = 8.0f, .top_p = 1.0f, .min_p = 0.3f, .repeat_penalty = 1.0f, .seed_lo = 99},
    {.temp = 0.05f, .top_p = 1.0f, .repeat_penalty = 1.0f, .seed_lo = 7},
    {.temp = 2.0f,
     .top_k = 40,
     .top_p = 0.95f,
     .repeat_penalty = 1.3f,
     .repeat_last_n = 16,
     .seed_lo = 31},
};

typedef struct step {
  int phase; /* PHASES[phase] */
  int in[MKC_CHUNK_CAP], T, f;
  int rounds;                   /* > 1: a launch of that many rounds on in[0..T) */
  int draft_layers;             /* > 0: drafted by the kernel's first layers, not by lookup */
  int n_rr;                     /* the rounds it ran, as the unmutated kernel ran them */
  mkc_round rr[MKC_ROUNDS_MAX]; /* (their tokens checked against the reference's) */
  float *logits;     /* [T][vocab]: the reference's (phase 0) or the unmutated kernel's */
  mkc_step_result r; /* the expected result */
  int pos;
  float lp[MKC_T_CAP][1 + 2 * MKC_LOGPROBS_MAX]; /* each emitted token's: lp, ids, lps */
} step;

typedef struct script {
  const char *preset;
  int blocks;
  fixture fx;
  int n;
  step steps[MAX_STEPS];
  unsigned char *kv; /* the unmutated kernel's KV cache after the greedy phase */
} script;

/* The log-probabilities of emitted token k: lp, then the ids and lps of the top ones (ids
 * stored as floats: exact below 2^24). */
static int logprobs_of(mkc_session *s, int k, int n, float *out) {
  int ids[MKC_LOGPROBS_MAX];
  if (mkc_session_logprobs(s, k, &out[0], ids, out + 1 + n) != 0) return -1;
  for (int i = 0; i < n; i++) out[1 + i] = (float)ids[i];
  return 0;
}

/* The launch a rounds step makes: its rounds, t_max - 1 drafts each (with draft_layers,
 * the first round's too, drafted in the kernel), no budget to speak of. */
static mkc_rounds_req rounds_req(const mkc_graph *g, const step *st) {
  return (mkc_rounds_req){.rounds = st->rounds,
                          .drafts = g->t_max - 1,
                          .budget = 1000,
                          .draft_layers = st->draft_layers,
                          .first_drafts = st->draft_layers ? g->t_max - 1 : 0};
}

/* Runs src's kernel through the script; 0, 1 with why filled (the first difference), or -1
 * when it does not compile or load (not a catch: the mutant is broken). */
static int follow(const script *sc, const char *src, char *why, size_t cap) {
  const mkc_graph *g = &sc->fx.g;
  mkc_kernel_src ks = {(char *)src, sc->fx.src.file_name};
  mkc_session *s = mkc_session_open(MKC_BACKEND_CPU, g, &ks, &sc->fx.w, sc->blocks);
  if (!s) {
    snprintf(why, cap, "did not compile or load");
    return -1;
  }
  int bad = 1;
  for (int i = 0; i < sc->n; i++) {
    const step *st = &sc->steps[i];
    const mkc_sampling *o = &PHASES[st->phase];
    char at[48];
    snprintf(at, sizeof at, "step %d, phase %d", i, st->phase);
    if (i > 0 && st->phase != sc->steps[i - 1].phase) {
      const void *kv = mkc_session_kv(s);
      if (sc->steps[i - 1].phase == 0 && sc->kv && kv && memcmp(kv, sc->kv, g->kv_bytes) != 0) {
        snprintf(why, cap, "KV cache after the greedy phase");
        goto out;
      }
      mkc_session_reset(s);
      if (mkc_session_set_sampling(s, o) != 0) goto out;
    }
    mkc_step_result r;
    if (st->rounds > 1) {
      mkc_rounds_req q = rounds_req(g, st);
      mkc_round rr[MKC_ROUNDS_MAX];
      int n = 0;
      if (mkc_session_rounds(s, st->in, st->T, &q, rr, &n) != 0) {
        snprintf(why, cap, "%s: rounds failed", at);
        goto out;
      }
      int same = n == st->n_rr && mkc_session_pos(s) == st->pos;
      for (int k = 0; same && k < n; k++)
        same =
            rr[k].status == st->rr[k].status && rr[k].n_in == st->rr[k].n_in &&
            rr[k].n_out == st->rr[k].n_out &&
            memcmp(rr[k].out_tokens, st->rr[k].out_tokens, (size_t)rr[k].n_out * sizeof(int)) == 0;
      if (!same) {
        snprintf(why, cap, "rounds (%s)", at);
        goto out;
      }
      for (int t = 0; t < st->rr[n - 1].n_in; t++) {
        double e = rel_err(mkc_session_logits(s, t), st->logits + (size_t)t * g->vocab, g->vocab);
        if (!(e <= TOL)) {
          snprintf(why, cap, "logits (%s, the last round's input %d: %.2g off)", at, t, e);
          goto out;
        }
      }
      continue;
    }
    if (mkc_session_step(s, st->in, st->T, st->f, &r) != 0) {
      snprintf(why, cap, "%s failed", at);
      goto out;
    }
    /* a prompt chunk past t_max has its last input's logits only */
    for (int t = st->T > g->t_max ? st->T - 1 : 0; t < st->T; t++) {
      double e = rel_err(mkc_session_logits(s, t), st->logits + (size_t)t * g->vocab, g->vocab);
      if (!(e <= TOL)) {
        snprintf(why, cap, "logits (%s, input %d: %.2g off)", at, t, e);
        goto out;
      }
    }
    int same = r.status == st->r.status && r.n_out == st->r.n_out && mkc_session_pos(s) == st->pos;
    for (int k = 0; same && k < r.n_out; k++) same = r.out[k] == st->r.out[k];
    if (!same) {
      snprintf(why, cap, "tokens (%s%s%s)", at, r.status ? ": " : "",
               r.status ? mkc_status_name(r.status) : "");
      goto out;
    }
    for (int k = 0; o->logprobs > 0 && k < r.n_out; k++) {
      float lp[1 + 2 * MKC_LOGPROBS_MAX];
      int ok = logprobs_of(s, k, o->logprobs, lp) == 0;
      for (int j = 0; ok && j < 1 + 2 * o->logprobs; j++)
        ok = fabsf(lp[j] - st->lp[k][j]) <= TOL * (1 + fabsf(st->lp[k][j]));
      if (!ok) {
        snprintf(why, cap, "log-probabilities (%s, token %d)", at, k);
        goto out;
      }
    }
  }
  bad = 0;
out:
  mkc_session_close(s);
  return bad;
}

/* One step of the script on the unmutated kernel, and in phase 0 on the reference too (its
 * K/V following the kernel's roundings, as in test_kernel), whose logits and tokens are then
 * the expected ones; in the other phases the kernel's own are. */
static int record(script *sc, int phase, mkc_session *cpu, mkc_session *ref, const int *in, int T,
                  int f) {
  const mkc_graph *g = &sc->fx.g;
  if (sc->n >= MAX_STEPS) return -1;
  step *st = &sc->steps[sc->n];
  memcpy(st->in, in, (size_t)T * sizeof *in);
  st->T = T, st->f = f, st->phase = phase;
  mkc_step_result r;
  if (mkc_session_step(cpu, in, T, f, &r) != 0 || r.status != MKC_STATUS_OK) return -1;
  mkc_session *s = cpu;
  if (phase == 0) {
    mkc_ref_follow_kv(mkc_session_ref(ref), mkc_session_kv(cpu));
    if (mkc_session_step(ref, in, T, f, &st->r) != 0) return -1;
    s = ref;
  } else {
    st->r = r;
  }
  st->pos = mkc_session_pos(s);
  if (!(st->logits = calloc((size_t)T * g->vocab, sizeof *st->logits))) return -1;
  for (int t = T > g->t_max ? T - 1 : 0; t < T; t++)
    memcpy(st->logits + (size_t)t * g->vocab, mkc_session_logits(s, t),
           (size_t)g->vocab * sizeof *st->logits);
  for (int k = 0; PHASES[phase].logprobs > 0 && k < st->r.n_out; k++)
    if (logprobs_of(s, k, PHASES[phase].logprobs, st->lp[k]) != 0) return -1;
  sc->n++;
  return 0;
}

/* A launch of `rounds` rounds on the last emitted token (templates/rounds.cuh: the kernel
 * drafts each next round by prompt lookup, or with draft_layers by passes through its first
 * layers): the unmutated kernel's rounds, logits and pos are the expected ones, its tokens
 * checked against the reference stepping the same rounds (with draft_layers: the same
 * accepted tokens; self-speculation's drafts themselves are checked against the host's in
 * test_rounds). */
static int record_rounds(script *sc, mkc_session *cpu, mkc_session *ref, int rounds,
                         int draft_layers) {
  const mkc_graph *g = &sc->fx.g;
  if (sc->n >= MAX_STEPS) return -1;
  const step *prev = &sc->steps[sc->n - 1];
  step *st = &sc->steps[sc->n];
  st->in[0] = prev->r.out[prev->r.n_out - 1];
  st->T = 1, st->f = 0, st->phase = 0, st->rounds = rounds, st->draft_layers = draft_layers;
  mkc_rounds_req q = rounds_req(g, st);
  mkc_round want[MKC_ROUNDS_MAX];
  int n_want = 0;
  if (mkc_session_rounds(cpu, st->in, 1, &q, st->rr, &st->n_rr) != 0) return -1;
  if (draft_layers) {
    /* the reference has no kernel to draft in: it takes each round's accepted drafts as known
     * inputs, which leaves its cache where the kernel's is, and must choose the same token
     * after them */
    int last = st->in[0];
    for (int k = 0; k < st->n_rr; k++) {
      const mkc_round *rk = &st->rr[k];
      int in[MKC_T_CAP] = {last};
      mkc_step_result r;
      memcpy(in + 1, rk->out_tokens, (size_t)rk->n_accepted * sizeof *in);
      if (rk->status != MKC_STATUS_OK ||
          mkc_session_step(ref, in, 1 + rk->n_accepted, rk->n_accepted, &r) != 0 ||
          r.status != MKC_STATUS_OK || r.out[0] != rk->out_tokens[rk->n_accepted])
        return -1;
      last = rk->out_tokens[rk->n_out - 1];
      want[k] = *rk;
    }
    n_want = st->n_rr;
  } else if (mkc_session_rounds(ref, st->in, 1, &q, want, &n_want) != 0 || n_want != st->n_rr) {
    return -1;
  }
  for (int k = 0; k < n_want; k++)
    if (want[k].status != MKC_STATUS_OK || want[k].n_in != st->rr[k].n_in ||
        want[k].n_out != st->rr[k].n_out ||
        memcmp(want[k].out_tokens, st->rr[k].out_tokens, (size_t)want[k].n_out * sizeof(int)))
      return -1;
  st->pos = mkc_session_pos(cpu);
  int T = st->rr[st->n_rr - 1].n_in;
  if (!(st->logits = malloc((size_t)T * g->vocab * sizeof *st->logits))) return -1;
  for (int t = 0; t < T; t++)
    memcpy(st->logits + (size_t)t * g->vocab, mkc_session_logits(cpu, t),
           (size_t)g->vocab * sizeof *st->logits);
  sc->n++;
  return 0;
}

/* The greedy tokens after the prompt, from the reference alone: drafts that the
 * verify steps accept up to a chosen point. */
static int greedy_tokens(script *sc, const int *prompt, int *out, int n) {
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &sc->fx.g, &sc->fx.src, &sc->fx.w, 0);
  mkc_step_result r;
  int ok = ref && mkc_session_step(ref, prompt, PROMPT_LEN, PROMPT_LEN - 1, &r) == 0;
  for (int i = 0; ok && i < n; i++) {
    out[i] = r.out[0];
    ok = mkc_session_step(ref, &out[i], 1, 0, &r) == 0 && r.status == MKC_STATUS_OK;
  }
  mkc_session_close(ref);
  return ok ? 0 : -1;
}

/* Prompt chunks, then draft-verify steps whose drafts are the greedy tokens up to the
 * k-th (k = 0..draft_max, in turn) and a wrong token after it. */
static int phase(script *sc, int ph, mkc_session *cpu, mkc_session *ref, const int *prompt,
                 const int *greedy, int n_greedy) {
  const mkc_graph *g = &sc->fx.g;
  /* the greedy phase takes the prompt whole, a chunk past t_max (templates/gemm.cuh's tiles);
   * the others in steps of t_max, the decode stages' prompt path */
  int chunk = ph == 0 && g->t_chunk >= PROMPT_LEN ? PROMPT_LEN : g->t_max;
  for (int at = 0; at < PROMPT_LEN;) {
    int T = PROMPT_LEN - at < chunk ? PROMPT_LEN - at : chunk;
    if (record(sc, ph, cpu, ref, prompt + at, T, T - 1) != 0) return -1;
    at += T;
  }
  int done = 0; /* tokens emitted since the prompt */
  for (int i = 0; i < DECODE_STEPS; i++) {
    const step *prev = &sc->steps[sc->n - 1];
    int in[MKC_T_CAP] = {prev->r.out[prev->r.n_out - 1]}, good = i % g->t_max;
    for (int j = 1; j < g->t_max; j++) {
      int at = done + j < n_greedy ? done + j : n_greedy - 1;
      in[j] = j <= good ? greedy[at] : (greedy[at] + 1 + j) % g->vocab;
    }
    if (record(sc, ph, cpu, ref, in, g->t_max, 0) != 0) return -1;
    done += sc->steps[sc->n - 1].r.n_out;
  }
  if (ph != 0) return 0;
  if (record_rounds(sc, cpu, ref, 4, 0) != 0) return -1;
  /* and 3 rounds drafted by the kernel's first layer (self-speculation in the kernel) */
  if (g->draft_in_kernel && g->n_layers > 1 && g->t_max > 1 &&
      record_rounds(sc, cpu, ref, 3, 1) != 0)
    return -1;
  /* a chunk past t_max again, of up to 70 tokens over more cached positions than one K/V tile
   * holds: the tiled attention's tile loop turns, and its items (a kv head x 64 query rows)
   * outnumber tiny's blocks, so a block takes two (templates/gemm_attn.cuh) */
  const step *prev = &sc->steps[sc->n - 1];
  int room = g->max_ctx - prev->pos, in[MKC_CHUNK_CAP];
  int T = room < 70 ? room : 70;
  if (T > g->t_chunk) T = g->t_chunk;
  if (T <= g->t_max) return 0; /* no room for a tiled chunk */
  in[0] = prev->rr[prev->n_rr - 1].out_tokens[prev->rr[prev->n_rr - 1].n_out - 1];
  for (int t = 1; t < T; t++) in[t] = prompt[t % PROMPT_LEN];
  return record(sc, ph, cpu, ref, in, T, T - 1);
}

/* The script for preset: every phase on the unmutated kernel (and phase 0 on the reference). */
static int script_open(script *sc, const config *c) {
  memset(sc, 0, sizeof *sc);
  sc->preset = c->preset ? c->preset : c->name;
  sc->blocks = c->blocks;
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = sc->preset,
                    .draft_max = c->draft_max,
                    .max_ctx = c->model ? 128 : 0,
                    .threads = c->threads,
                    .model = c->model};
  if (c->split) setenv("MKC_SPLIT", "1", 1);
  if (c->mma) setenv("MKC_MMA_DECODE", "1", 1);
  if (c->mma == 2) setenv("MKC_SPLITK", "1", 1);
  int gen = mkc_codegen(&o, &sc->fx.g, &sc->fx.src);
  unsetenv("MKC_SPLIT");
  unsetenv("MKC_MMA_DECODE");
  unsetenv("MKC_SPLITK");
  if (gen != 0 || mkc_weights_random(&sc->fx.w, &sc->fx.g, 7)) return -1;
  const mkc_graph *g = &sc->fx.g;
  static const int PROMPT[PROMPT_LEN] = {1, 17, 42, 99, 5, 200, 33, 7, 250};
  int greedy[DECODE_STEPS * MKC_T_CAP + 1];
  int n_greedy = DECODE_STEPS * g->t_max + 1;
  if (greedy_tokens(sc, PROMPT, greedy, n_greedy) != 0) return -1;
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, g, &sc->fx.src, &sc->fx.w, 0);
  mkc_session *cpu = mkc_session_open(MKC_BACKEND_CPU, g, &sc->fx.src, &sc->fx.w, sc->blocks);
  int rc = -1;
  if (!ref || !cpu || phase(sc, 0, cpu, ref, PROMPT, greedy, n_greedy) != 0) goto out;
  if (!(sc->kv = malloc(g->kv_bytes))) goto out;
  memcpy(sc->kv, mkc_session_kv(cpu), g->kv_bytes);
  for (int ph = 1; ph < N_PHASES; ph++) {
    mkc_session_reset(cpu);
    if (mkc_session_set_sampling(cpu, &PHASES[ph]) != 0 ||
        phase(sc, ph, cpu, NULL, PROMPT, greedy, n_greedy) != 0)
      goto out;
  }
  rc = 0;
out:
  mkc_session_close(ref);
  mkc_session_close(cpu);
  return rc;
}

static void script_close(script *sc) {
  for (int i = 0; i < sc->n; i++) free(sc->steps[i].logits);
  free(sc->kv);
  fixture_close(&sc->fx);
}

/* ---- mutants, each in a child process ---- */

typedef struct verdict {
  int caught;    /* 1: a test failed; -1: the mutant did not build */
  char why[200]; /* by what */
} verdict;

typedef struct child {
  pid_t pid;
  int fd; /* the verdict's pipe */
  int point;
  struct timespec start;
} child;

/* The first line of the file at path that says "error", else "". */
static void first_error(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  char line[400];
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "error")) {
      line[strcspn(line, "\n")] = '\0';
      snprintf(out, cap, "%.*s", (int)cap - 1, line);
      break;
    }
  if (f) fclose(f);
}

/* In the child: follow the script with source, point `deleted` skipped, write the verdict to fd. */
static void run_child(const script *sc, const char *source, int deleted, int fd,
                      const char *err_path) {
  verdict v = {0, ""};
  if (!freopen(err_path, "w", stderr)) _exit(3);
  mkc_test_deleted = deleted;
  char why[160];
  int rc = follow(sc, source, why, sizeof why);
  if (rc < 0) {
    v.caught = -1;
    snprintf(v.why, sizeof v.why, "%s", why);
  } else if (rc > 0) {
    char err[200];
    fflush(stderr);
    first_error(err_path, err, sizeof err);
    v.caught = 1;
    if (err[0] && strstr(err, "simt"))
      snprintf(v.why, sizeof v.why, "emulator: %s",
               strstr(err, "simt: ") ? strstr(err, "simt: ") + 6 : err);
    else
      snprintf(v.why, sizeof v.why, "%s", why);
  }
  if (write(fd, &v, sizeof v) != (ssize_t)sizeof v) _exit(3);
  _exit(0);
}

static double since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Waits for one child; fills its verdict (a crash or a hang is caught too). */
static int reap(child *kids, int n_kids, verdict *out) {
  for (;;) {
    for (int i = 0; i < n_kids; i++) {
      int status;
      pid_t r = waitpid(kids[i].pid, &status, WNOHANG);
      int late = r == 0 && since(&kids[i].start) > DEADLINE_S;
      if (r == 0 && !late) continue;
      verdict *v = &out[kids[i].point];
      if (late) {
        kill(kids[i].pid, SIGKILL);
        waitpid(kids[i].pid, &status, 0);
        *v = (verdict){1, ""};
        snprintf(v->why, sizeof v->why, "hung (killed after %d s)", DEADLINE_S);
      } else if (read(kids[i].fd, v, sizeof *v) != (ssize_t)sizeof *v) {
        *v = (verdict){1, ""};
        if (WIFSIGNALED(status))
          snprintf(v->why, sizeof v->why, "crashed (%s)", strsignal(WTERMSIG(status)));
        else
          snprintf(v->why, sizeof v->why, "exited with status %d", WEXITSTATUS(status));
      }
      close(kids[i].fd);
      int k = kids[i].point;
      kids[i] = kids[n_kids - 1];
      return k;
    }
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
}

/* Runs source in a child for each of runs[0..n) (the point it skips: 0 none, -1 no run),
 * `jobs` at a time; out[i] is run i's verdict. */
static void run_all(const script *sc, const char *source, const int *runs, int n, verdict *out,
                    int jobs) {
  child kids[8];
  if (jobs > 8) jobs = 8;
  int n_kids = 0;
  for (int i = 0; i < n || n_kids > 0;) {
    if (i < n && n_kids < jobs) {
      if (runs[i] < 0) {
        i++;
        continue;
      }
      int fds[2];
      if (pipe(fds) != 0) {
        out[i] = (verdict){0, "pipe failed"};
        i++;
        continue;
      }
      fflush(stdout);
      fflush(stderr);
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        char name[32];
        snprintf(name, sizeof name, "stderr.%d", i);
        run_child(sc, source, runs[i], fds[1], tmp_path(name));
      }
      close(fds[1]);
      kids[n_kids] = (child){pid, fds[0], i, {0, 0}};
      clock_gettime(CLOCK_MONOTONIC, &kids[n_kids].start);
      n_kids++;
      i++;
      continue;
    }
    reap(kids, n_kids--, out);
  }
}

/* ---- what the CPU cannot show, and the verdicts ---- */

/* Sync points whose deletion no run here shows, with the reason (docs/DECISIONS.md, "Deleted
 * syncs are caught"). Memory ordering: the emulator runs a block's threads on one OS thread
 * and prelude_cpu.h's atomics are seq_cst, so every write is seen in program order and a
 * missing fence, or a barrier kept only for memory ordering, changes nothing here (on the GPU
 * it may). Redundant: another barrier already orders every access the point orders. */
static const struct {
  const char *file, *func, *what;
  int index;
  const char *why;
} NOT_SHOWN[] = {
    {"templates/common.cuh", "mkc_grid_sync", "mkc_sync_block", 1,
     "redundant: mkc_round_next is its only caller (stages end in flow waits), and there thread "
     "0 of block 0 makes every write before it, after the block's own barrier"},
    {"templates/common.cuh", "mkc_grid_sync", "mkc_fence", 1,
     "memory ordering: the block's writes released before it arrives"},
    {"templates/common.cuh", "mkc_grid_sync", "mkc_fence", 2,
     "memory ordering: the count reset before the release"},
    {"templates/common.cuh", "mkc_grid_sync", "mkc_fence", 3,
     "memory ordering: acquire after the wait"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope", "mkc_fence", 1,
     "memory ordering: the pair released before it is counted"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope", "mkc_fence", 2,
     "memory ordering: the head's other pairs acquired by the warp that completes it"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope", "mkc_sync_warp", 2,
     "memory ordering: the shuffle after it (mkc_warp_or) already holds the lanes until lane 0 "
     "has counted; on the GPU a shuffle orders no memory"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope", "mkc_sync_warp", 1,
     "redundant: only lane 0 writes the pair, and lane 0 itself releases and counts it"},
    {"templates/matvec.cuh", "mkc_mma_slice", "mkc_sync_warp", 1,
     "memory ordering: the emulator passes a block's turn only at a spin or the block's end, so "
     "no other block runs between a lane's partials and lane 0's release; on the GPU lanes "
     "diverge"},
    {"templates/matvec.cuh", "mkc_mma_slice", "mkc_fence", 1,
     "memory ordering: the slice's partials released before it is counted"},
    {"templates/matvec.cuh", "mkc_mma_slice", "mkc_fence", 2,
     "memory ordering: the group's other slices acquired by the warp that completes it"},
    {"templates/matvec.cuh", "mkc_mma_slice", "mkc_sync_warp", 2,
     "memory ordering: the shuffle after it (mkc_warp_or) already holds the lanes until lane 0 "
     "has counted; on the GPU a shuffle orders no memory"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope_mma", "mkc_sync_warp", 1,
     "memory ordering: the emulator runs a warp's lanes up to their next meeting before another "
     "warp or block runs, so every input's part of a pair is written before anyone reads it; on "
     "the GPU lanes diverge"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope_mma", "mkc_fence", 1,
     "memory ordering: the pair released before it is counted"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope_mma", "mkc_fence", 2,
     "memory ordering: the head's other pairs acquired by the warp that completes it"},
    {"templates/qkv_rope.cuh", "mkc_qkv_rope_mma", "mkc_sync_warp", 2,
     "memory ordering: the shuffle after it (mkc_warp_or) already holds the lanes until the "
     "counting lanes are done; on the GPU a shuffle orders no memory"},
    {"templates/attention.cuh", "mkc_attention", "mkc_sync_block", 5,
     "memory ordering: the block's partial written before thread 0 releases it; here the "
     "block's own merge reads it after the next barrier, and other blocks after this one ran"},
    {"templates/attention.cuh", "mkc_attention", "mkc_sync_warp", 1,
     "memory ordering: the emulator's shuffles are meetings, so no lane reads m_run after lane 0 "
     "rewrites it; on the GPU a shuffle orders no memory (racecheck's warp-level WAR hazard)"},
    {"templates/attention.cuh", "mkc_attention", "mkc_fence", 1,
     "memory ordering: the split's partial released before it is counted"},
    {"templates/attention.cuh", "mkc_attention", "mkc_fence", 2,
     "memory ordering: the unit's other partials acquired by the block that merges them"},
    {"templates/sample.cuh", "mkc_key_radix", "mkc_sync_block", 4,
     "redundant: hist was last read before the barrier above, sel is rewritten next pass after "
     "two more barriers"},
    {"templates/sample.cuh", "mkc_draw", "mkc_sync_block", 3,
     "not reached: the fallback for a target that float rounding put past every share"},
    {"templates/sample.cuh", "mkc_draw", "mkc_sync_block", 4,
     "redundant where it is called: winner and part are next written after another barrier "
     "(mkc_block_sum before the residual draw, the next position's first barrier)"},
    {"templates/gemm.cuh", "mkc_gemm_tile", "mkc_sync_block", 1,
     "redundant: the emulator's block path (one thread works out the tile) waits as the lanes' "
     "staging barrier does, and every caller's epilogue already ends in a barrier before its "
     "next tile (mkc_gemm_matvec's, mkc_gemm_swiglu's, mkc_gemm_qkv's #1)"},
    {"templates/gemm.cuh", "mkc_gemm_matvec", "mkc_sync_block", 1,
     "redundant: the epilogue reads c_tile, which the next tile's mkc_gemm_tile writes only "
     "after the barrier that follows its staging"},
    {"templates/gemm.cuh", "mkc_gemm_swiglu", "mkc_sync_block", 1,
     "redundant: the epilogue reads c_tile, which the next tile's mkc_gemm_tile writes only "
     "after the barrier that follows its staging"},
    {"templates/gemm.cuh", "mkc_gemm_qkv", "mkc_sync_block", 1,
     "redundant: the epilogue reads c_tile and inv_rms, which the next tile's mkc_gemm_tile "
     "writes only after the barrier that follows its staging"},
    {"templates/slots.cuh", "mkc_slots_begin", "mkc_sync_block", 1,
     "not reached: these kernels are plain, and a slot kernel's row map is checked in "
     "test_slots, which deletes this barrier and is caught"},
    {"templates/gemm_attn.cuh", "mkc_gemm_attention", "mkc_sync_block", 4,
     "redundant: the tile loop's last barrier comes after every read of q_tile and the K, V "
     "and P tiles; the output is written from registers"},
    {"templates/attention.cuh", "mkc_attention_merge", "mkc_sync_block", 2,
     "not reached: a chunk of weights past the first needs more than 512 splits of a unit (a "
     "grid of more than 512 blocks on one kv head's positions); test_att_merge drives chunks of "
     "1 to 128 splits, and deleting this barrier fails 15 of its checks"},
    {"templates/sample.cuh", "mkc_sample", "mkc_sync_block", 2,
     "redundant: after a greedy position nothing in shared memory is touched before the next "
     "position's first barrier"},
};
#define N_NOT_SHOWN (int)(sizeof NOT_SHOWN / sizeof *NOT_SHOWN)

/* One sync point over every kernel it is in: a template's points are in each, a kernel's
 * grid barriers in its own. */
typedef struct result {
  sync_point p; /* as found in the first kernel */
  int runs;     /* kernels it was deleted from */
  char caught[400];
} result;

static result results[4 * MAX_POINTS];
static int n_results;

static void add_result(const char *kernel, const sync_point *p, const verdict *v) {
  result *r = NULL;
  for (int i = 0; i < n_results && !r; i++)
    if (strcmp(results[i].p.file, p->file) == 0 && strcmp(results[i].p.func, p->func) == 0 &&
        strcmp(results[i].p.what, p->what) == 0 && results[i].p.index == p->index)
      r = &results[i];
  if (!r) {
    if (n_results == (int)(sizeof results / sizeof *results)) return;
    r = &results[n_results++];
    r->p = *p;
  }
  r->runs++;
  size_t used = strlen(r->caught);
  if (v->caught > 0 && used + 1 < sizeof r->caught)
    snprintf(r->caught + used, sizeof r->caught - used, "%s%s: %s", used ? "; " : "", kernel,
             v->why);
}

static int not_shown(const sync_point *p) {
  for (int i = 0; i < N_NOT_SHOWN; i++)
    if (strcmp(NOT_SHOWN[i].file, p->file) == 0 && strcmp(NOT_SHOWN[i].func, p->func) == 0 &&
        strcmp(NOT_SHOWN[i].what, p->what) == 0 && NOT_SHOWN[i].index == p->index)
      return i;
  return -1;
}

/* Every point is caught in some kernel, or listed with its reason and caught in none. */
static void report(void) {
  for (int i = 0; i < n_results; i++) {
    const result *r = &results[i];
    const sync_point *p = &r->p;
    char name[200];
    snprintf(name, sizeof name, "%s #%d in %s (%s:%d%s%s)", p->what, p->index, p->func, p->file,
             p->line, p->stage[0] ? ", " : "", p->stage);
    int listed = not_shown(p);
    if (listed < 0)
      CHECK(r->caught[0], "deleting %s is caught: %s", name, r->caught[0] ? r->caught : "in none");
    else if (r->caught[0])
      CHECK(0, "deleting %s, listed as not shown (%s), is caught: %s: update the list", name,
            NOT_SHOWN[listed].why, r->caught);
    else
      CHECK_SKIP("deleting %s is not shown in %d kernels: %s", name, r->runs,
                 NOT_SHOWN[listed].why);
  }
  for (int i = 0; i < N_NOT_SHOWN; i++) {
    int found = 0;
    for (int k = 0; k < n_results && !found; k++) found = not_shown(&results[k].p) == i;
    CHECK(found, "listed as not shown: %s #%d in %s (%s) exists", NOT_SHOWN[i].what,
          NOT_SHOWN[i].index, NOT_SHOWN[i].func, NOT_SHOWN[i].file);
  }
}

/* ---- each kernel ---- */

/* Whether config c deletes point p: every point, or its sample's and the kernel's own. */
static int in_sample(const config *c, const sync_point *p, const char *kernel_file) {
  if (!c->sample || strcmp(p->file, kernel_file) == 0) return 1;
  size_t len = strlen(p->file);
  for (const char *f = strstr(c->sample, p->file); f; f = strstr(f + 1, p->file))
    if ((f == c->sample || f[-1] == ' ') && (f[len] == ' ' || f[len] == '\0')) return 1;
  return 0;
}

/* mutant's sync points are src's (pts, n) less point i, the rest where they were. */
static int lacks_only(const char *mutant_src, const sync_point *pts, int n, int i,
                      const char *name) {
  static sync_point mpts[MAX_POINTS];
  int m = find_syncs(mutant_src, mpts, MAX_POINTS, name);
  if (m != n - 1) return 0;
  for (int k = 0, j = 0; k < n; k++) {
    if (k == i) continue;
    size_t at = pts[k].at < pts[i].at ? pts[k].at : pts[k].at - pts[i].len + 1; /* i is ";" */
    if (mpts[j].at != at || mpts[j].len != pts[k].len || strcmp(mpts[j].what, pts[k].what) ||
        mpts[j].line != pts[k].line)
      return 0;
    j++;
  }
  return 1;
}

/* A race shows under some schedules and not under others: the mutants the
 * first schedule let through run again, with the control, under the next
 * seed, and a catch there counts. */
static void second_schedule(const script *sc, const char *source, int n_chosen, verdict *verdicts,
                            int jobs, const char *name) {
  static int again[MAX_POINTS + 1];
  static verdict second[MAX_POINTS + 1];
  int n_again = 0;
  for (int i = 0; i <= n_chosen; i++) {
    again[i] = i == 0 || !verdicts[i].caught ? i : -1;
    n_again += i > 0 && again[i] > 0;
  }
  if (n_again == 0) return;
  char first[32], next[32];
  snprintf(first, sizeof first, "%s", getenv("MKC_SIMT_SEED"));
  snprintf(next, sizeof next, "%lld", atoll(first) + 1);
  setenv("MKC_SIMT_SEED", next, 1);
  memset(second, 0, sizeof second);
  run_all(sc, source, again, n_chosen + 1, second, jobs);
  setenv("MKC_SIMT_SEED", first, 1);
  CHECK(!second[0].caught, "%s: the guarded kernel, skipping nothing, passes under seed %s too%s%s",
        name, next, second[0].caught ? ": " : "", second[0].why);
  for (int i = 1; i <= n_chosen; i++)
    if (again[i] > 0 && second[i].caught) verdicts[i] = second[i];
}

/* Whether source[at] lies in a branch for the emulator alone (`#ifdef MKC_CPU`
 * up to its #else or #endif): code the GPU never runs. */
static int emulator_only(const char *source, size_t at) {
  int depth = 0, cpu_at = 0; /* cpu_at: the depth of the open MKC_CPU branch, 0: none */
  for (const char *l = source; l && (size_t)(l - source) < at;
       l = strchr(l, '\n'), l = l ? l + 1 : l) {
    const char *d = l + strspn(l, " \t");
    if (*d != '#') continue;
    d += 1 + strspn(d + 1, " \t");
    if (starts_with(d, "if")) {
      depth++;
      const char *m = starts_with(d, "ifdef") ? d + 5 + strspn(d + 5, " \t") : "";
      if (!cpu_at && starts_with(m, "MKC_CPU") &&
          (m[7] == '\n' || m[7] == ' ' || m[7] == '\t' || m[7] == '\0'))
        cpu_at = depth;
    } else if (starts_with(d, "el") && depth == cpu_at) {
      cpu_at = 0; /* the other branch */
    } else if (starts_with(d, "endif")) {
      if (depth == cpu_at) cpu_at = 0;
      depth--;
    }
  }
  return cpu_at > 0;
}

/* The emulator's own paths (the block's tile worked out by one thread) run
 * off the checking schedule only: the mutants of their points that no seed
 * caught run again, with the control, on the default schedule. */
static void default_schedule(const script *sc, const char *source, const char *src,
                             const sync_point *pts, const int *chosen, int n_chosen,
                             verdict *verdicts, int jobs, const char *name) {
  static int again[MAX_POINTS + 1];
  static verdict plain[MAX_POINTS + 1];
  int n_again = 0;
  for (int i = 0; i <= n_chosen; i++) {
    again[i] =
        i == 0 || (!verdicts[i].caught && emulator_only(src, pts[chosen[i - 1]].at)) ? i : -1;
    n_again += i > 0 && again[i] > 0;
  }
  if (n_again == 0) return;
  char seed[32];
  snprintf(seed, sizeof seed, "%s", getenv("MKC_SIMT_SEED"));
  unsetenv("MKC_SIMT_SEED");
  memset(plain, 0, sizeof plain);
  run_all(sc, source, again, n_chosen + 1, plain, jobs);
  setenv("MKC_SIMT_SEED", seed, 1);
  CHECK(!plain[0].caught,
        "%s: the guarded kernel, skipping nothing, passes on the default schedule too%s%s", name,
        plain[0].caught ? ": " : "", plain[0].why);
  for (int i = 1; i <= n_chosen; i++)
    if (again[i] > 0 && plain[i].caught) verdicts[i] = plain[i];
}

static void mutate(const config *c, int jobs) {
  script sc;
  const char *name = c->name;
  int opened = script_open(&sc, c) == 0;
  if (!CHECK(opened,
             "%s (T <= %d, %d blocks x %d threads): the unmutated kernel runs the script (%d "
             "steps)",
             name, c->draft_max + 1, c->blocks, c->threads, sc.n)) {
    script_close(&sc);
    return;
  }
  const char *src = sc.fx.src.source;
  static sync_point pts[MAX_POINTS];
  static int chosen[MAX_POINTS];
  static int runs[MAX_POINTS + 1];
  static verdict verdicts[MAX_POINTS + 1];
  int n = find_syncs(src, pts, MAX_POINTS, name), n_chosen = 0, exact = 1;
  runs[0] = 0; /* the control: nothing skipped passes the same check */
  for (int i = 0; i < n; i++) {
    if (!in_sample(c, &pts[i], sc.fx.src.file_name)) continue;
    char *m = mutant(src, &pts[i]); /* the mutant as text: where its point's statement is */
    exact &= m && lacks_only(m, pts, n, i, name);
    free(m);
    chosen[n_chosen++] = i;
    runs[n_chosen] = n_chosen;
  }
  CHECK(n > 0 && exact, "%s: each of the %d mutants (of %d sync points) lacks its own and no other",
        name, n_chosen, n);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* built once, here: the children load it from the kernel cache */
  char *source = guarded(src, pts, chosen, n_chosen);
  mkc_kernel_src ks = {source, sc.fx.src.file_name};
  mkc_session *built =
      source ? mkc_session_open(MKC_BACKEND_CPU, &sc.fx.g, &ks, &sc.fx.w, sc.blocks) : NULL;
  if (!CHECK(built, "%s: the kernel with its %d points guarded builds and loads", name, n_chosen)) {
    free(source);
    script_close(&sc);
    return;
  }
  mkc_session_close(built);
  memset(verdicts, 0, sizeof verdicts);
  run_all(&sc, source, runs, n_chosen + 1, verdicts, jobs);
  CHECK(!verdicts[0].caught,
        "%s: the guarded kernel, skipping nothing, passes in a child process%s%s", name,
        verdicts[0].caught ? ": " : "", verdicts[0].why);
  second_schedule(&sc, source, n_chosen, verdicts, jobs, name);
  default_schedule(&sc, source, src, pts, chosen, n_chosen, verdicts, jobs, name);
  int broken = 0;
  for (int i = 1; i <= n_chosen; i++) broken += verdicts[i].caught < 0;
  CHECK_INT(broken, 0, "%s: every mutant runs (none fails to load)", name);
  for (int i = 0; i < n_chosen; i++) add_result(name, &pts[chosen[i]], &verdicts[i + 1]);
  free(source);
  printf("     | %s: %d mutants in %.1f s\n", name, n_chosen, since(&t0));
  script_close(&sc);
}

int main(void) {
  if (scratch_open("sync-deletions") != 0) return 1;
  setenv("MKC_CACHE_DIR", tmp_dir, 1);
  /* a third of -O3's compile time; the GPU's matvec shape (templates/matvec.cuh), whose
   * synchronization is the one that matters */
  setenv("MKC_CPU_CFLAGS", "-O1 -DMKC_ROWS=4", 1);
  setenv("MKC_SIMT_SEED", "1", 0); /* the checking schedule; another seed from outside */
  cpu_set_t cpus;
  int jobs = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 2;
  jobs = jobs < 2 ? 2 : jobs > 8 ? 8 : jobs;
  /* More than 32 blocks, each with LM-head rows: the argmax over the blocks' partials then
   * spans warps, as on a GPU's grid, which no preset's vocabulary reaches. */
  static const mkc_model_desc wide = {.arch = "llama",
                                      .name = "wide",
                                      .vocab = 1024,
                                      .dim = 64,
                                      .n_layers = 1,
                                      .n_heads = 4,
                                      .n_kv_heads = 2,
                                      .head_dim = 16,
                                      .ffn = 128,
                                      .ctx_train = 128,
                                      .rope_theta = 10000,
                                      .norm_eps = 1e-5,
                                      .rope_layout = MKC_ROPE_INTERLEAVED,
                                      .tied = 1};
  static const config configs[] = {
      {"tiny", 4, 128, 4, NULL, NULL, NULL, 0, 0},
      /* per-head norms (the head_ready counters); the sampler's points are tiny's alone */
      {"qwen3-tiny", 4, 128, 3, NULL,
       "templates/common.cuh templates/matvec.cuh templates/qkv_rope.cuh "
       "templates/attention.cuh templates/lm_head.cuh templates/accept.cuh",
       NULL, 0, 0},
      {"wide", 4, 64, 64, &wide,
       "templates/lm_head.cuh templates/accept.cuh templates/attention.cuh", NULL, 0, 0},
      /* MKC_SPLIT=1, off by default since the H100 measured it slower: qwen2-tiny's
       * matmuls (QKV included: no per-head norms) split at 4 blocks of 4 rows */
      {"qwen2-tiny, MKC_SPLIT=1", 4, 128, 4, NULL, "templates/matvec.cuh templates/qkv_rope.cuh",
       "qwen2-tiny", 1, 0},
      /* MKC_MMA_DECODE=1 with the split: the tensor-core matmuls' block barriers */
      {"qwen2-tiny, MKC_MMA_DECODE=1 MKC_SPLIT=1", 4, 128, 4, NULL, "templates/matvec.cuh",
       "qwen2-tiny", 1, 1},
      /* MKC_SPLITK=1 on 16 blocks (64 warps): o-proj, down, Q/K/V and gate/up in slices over
       * the grid's warps */
      {"qwen2-tiny, MKC_MMA_DECODE=1 MKC_SPLITK=1", 4, 128, 16, NULL,
       "templates/matvec.cuh templates/qkv_rope.cuh", "qwen2-tiny", 0, 2},
      /* Gemma 3's layer: the post-norm stage between each matmul and its residual add */
      {"gemma3-tiny", 4, 128, 3, NULL, "templates/norm.cuh templates/embed.cuh", NULL, 0, 0},
      /* experts: the choice every block makes before its tasks, and the stages around it */
      {"moe-tiny", 4, 128, 3, NULL, "templates/moe.cuh", NULL, 0, 0},
      /* MKC_MMA_DECODE=1 with qwen3's head norms: the tensor-core Q/K/V's counters */
      {"qwen3-tiny, MKC_MMA_DECODE=1", 4, 128, 3, NULL, "templates/qkv_rope.cuh", "qwen3-tiny", 0,
       1},
  };
  const char *only = getenv("MKC_TEST_ONLY"); /* one kernel, by name: for a closer look */
  for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
    if (!only || strcmp(only, configs[i].name) == 0) mutate(&configs[i], jobs);
  report();
  scratch_close();
  return check_done();
}
