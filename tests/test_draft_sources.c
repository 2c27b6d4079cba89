/* Every draft source is lossless (issue 15): prompt lookup, self-speculation
 * (the target's first layers as a kernel of their own, on the target's
 * weights) and draft models (the same preset with other weights, and the
 * target's own weights: every draft right) give exactly the plain greedy
 * tokens for K = 1..8, also when a stop token comes in the middle of a round
 * and when the context ends in one. After every round the draft's cache
 * holds as many tokens as the target's. SmolLM2-135M (test data) drafts for
 * itself with its first 8 layers. The cost gate (exec/depth.h) on scripted
 * timings. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/depth.h"
#include "exec/draft.h"
#include "fixture.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"
#include "util/clock.h"

#define K_MAX 8
#define GEN_CAP 256

/* A model to decode with: a preset on seeded random weights, or a model
 * file (its weights dequantized to bf16: the emulator's faster path). */
typedef struct model {
  const char *preset;
  const mkc_model_file *file;
  int max_ctx;
} model;

/* A kernel with its graph and (own, or borrowed) weights. */
typedef struct kernel {
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;         /* own weights (empty when borrowed) */
  const mkc_weights *wp; /* the weights its sessions read */
} kernel;

/* The model's kernel for steps of up to draft_max + 1 inputs; n_layers > 0:
 * its first n_layers only, on `borrow`'s weights; else weights of `seed`
 * (a model file: its own). 0 or -1. */
static int kernel_open(kernel *k, const model *md, int draft_max, int n_layers,
                       unsigned long long seed, const kernel *borrow) {
  memset(k, 0, sizeof *k);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = md->preset,
                    .model = md->file ? &md->file->desc : NULL,
                    .draft_max = draft_max,
                    .max_ctx = md->max_ctx,
                    .n_layers = n_layers};
  if (mkc_codegen(&o, &k->g, &k->src) != 0) return -1;
  k->wp = &k->w;
  if (borrow) {
    k->wp = borrow->wp;
    return 0;
  }
  return md->file ? mkc_model_file_weights(md->file, &k->g, &k->w)
                  : mkc_weights_random(&k->w, &k->g, seed);
}

static void kernel_close(kernel *k) {
  mkc_weights_free(&k->w);
  mkc_kernel_src_free(&k->src);
  mkc_graph_free(&k->g);
}

static mkc_session *session(const kernel *k) {
  return mkc_session_open(test_backend(), &k->g, &k->src, k->wp, 2);
}

/* A drafter around another that checks, after every verdict, that the
 * draft's cache holds as many tokens as the target's. */
typedef struct spy {
  mkc_drafter base;
  mkc_drafter *inner;
  mkc_session *target;
  int rounds, off; /* verdicts seen; ... after which the positions differed */
  int off_target, off_draft;
} spy;

static int spy_propose(mkc_drafter *d, const int *hist, int n, int k, int *out) {
  spy *s = (spy *)d;
  int got = mkc_drafter_propose(s->inner, hist, n, k, out);
  s->base.steps = s->inner->steps;
  return got;
}

static int spy_accepted(mkc_drafter *d, int n_accepted) {
  spy *s = (spy *)d;
  int rc = mkc_drafter_accepted(s->inner, n_accepted);
  int t = mkc_session_pos(s->target), p = mkc_session_pos(mkc_drafter_session(s->inner));
  s->rounds++;
  if (t != p && s->off++ == 0) s->off_target = t, s->off_draft = p;
  s->base.steps = s->inner->steps;
  return rc;
}

static void spy_close(mkc_drafter *d) { (void)d; }

static const mkc_drafter_ops SPY = {
    .propose = spy_propose, .accepted = spy_accepted, .close = spy_close};

/* A draft source under test: prompt lookup (no kernel), or a model drafter
 * on `k` (kept open across runs, so it re-syncs with each new history). */
typedef struct source {
  const char *name;
  const kernel *k;
  mkc_drafter *d;
} source;

/* Stops generation at the first `stop` token. */
typedef struct stopper {
  int stop, seen;
} stopper;

static int on_token(void *ctx, int id) {
  stopper *st = ctx;
  st->seen++;
  return id == st->stop;
}

/* One decode on a fresh target session; out: the tokens; *pos: the target's
 * pos after; spy counts. Returns generated, or -1. */
static int run(const kernel *target, source *src, const int *prompt, int n_prompt, int n_gen, int k,
               int adaptive, int stop, int *out, mkc_decode_stats *st, int *pos, spy *sp) {
  mkc_session *s = session(target);
  if (!s) return -1;
  memset(sp, 0, sizeof *sp);
  sp->base.ops = &SPY;
  sp->inner = src->d;
  sp->target = s;
  stopper stp = {.stop = stop};
  mkc_decode_opts o = {.draft_max = k,
                       .adaptive = adaptive,
                       .drafter = src->d ? &sp->base : NULL,
                       .on_token = stop >= 0 ? on_token : NULL,
                       .ctx = &stp};
  int rc = mkc_decode_with(s, &target->g, prompt, n_prompt, n_gen, &o, out, st);
  *pos = mkc_session_pos(s);
  mkc_session_close(s);
  return rc == 0 ? st->generated : -1;
}

static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* K = 1..8 and the adaptive depth: the plain tokens, pos = the tokens
 * processed, and the draft's pos = the target's after every round. */
static void lossless(const char *what, const kernel *target, source *src, const int *prompt,
                     int n_prompt, int n_gen, const int *plain, long *drafted, long *accepted) {
  for (int k = 1; k <= K_MAX + 1; k++) {
    int adaptive = k > K_MAX, out[GEN_CAP], pos;
    mkc_decode_stats st;
    spy sp;
    int n = run(target, src, prompt, n_prompt, n_gen, adaptive ? K_MAX : k, adaptive, -1, out, &st,
                &pos, &sp);
    int diff = n == n_gen ? first_difference(plain, out, n_gen) : 0;
    char kk[32];
    snprintf(kk, sizeof kk, adaptive ? "adaptive 0..%d" : "K=%d", adaptive ? K_MAX : k);
    CHECK(diff < 0,
          "%s, %s, %s: %d tokens identical to plain greedy (first difference at %d; %d rounds, "
          "%ld drafted, %ld accepted, %d all accepted)",
          what, src->name, kk, n_gen, diff, st.rounds, st.drafted, st.accepted, st.all_accepted);
    CHECK_INT(pos, n_prompt + n_gen - 1, "%s, %s, %s: pos = tokens processed", what, src->name, kk);
    if (src->d)
      CHECK(sp.rounds == st.rounds && sp.off == 0,
            "%s, %s, %s: after each of %d rounds the draft's pos is the target's (first differed: "
            "target %d, draft %d)",
            what, src->name, kk, sp.rounds, sp.off_target, sp.off_draft);
    CHECK(st.mismatches + st.all_accepted == st.rounds && st.accepted <= st.drafted,
          "%s, %s, %s: every round is a mismatch or all accepted (%d + %d of %d)", what, src->name,
          kk, st.mismatches, st.all_accepted, st.rounds);
    *drafted += st.drafted;
    *accepted += st.accepted;
  }
}

/* A stop token in the middle of a round: the first occurrence of plain[i]
 * for a few i; generation ends right after it, with the plain tokens. The
 * stop came mid-round when the target's cache holds tokens past it. Returns
 * how many stops came mid-round. */
static int stop_mid_round(const char *what, const kernel *target, source *src, const int *prompt,
                          int n_prompt, const int *plain, int n_plain, int n_stops) {
  int tried = 0, mid = 0;
  for (int i = 1; i < n_plain && tried < n_stops; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= plain[j] == plain[i];
    if (seen) continue;
    tried++;
    int out[GEN_CAP], pos;
    mkc_decode_stats st;
    spy sp;
    int n = run(target, src, prompt, n_prompt, n_plain, 4, 0, plain[i], out, &st, &pos, &sp);
    CHECK(n == i + 1 && st.stopped && first_difference(plain, out, i + 1) < 0,
          "%s, %s, K=4: stop token %d (plain's %dth): the plain tokens up to it, then stop (%d "
          "generated)",
          what, src->name, plain[i], i, n);
    if (src->d)
      CHECK(sp.off == 0, "%s, %s, K=4, stop at %d: the draft's pos followed the target's", what,
            src->name, i);
    mid += pos > n_prompt + i;
  }
  return mid;
}

/* The context ends in a round: generation stops cleanly at the cache's
 * end with the plain tokens, and neither cache was written past it. */
static void context_end(const char *what, const kernel *target, source *src, const int *prompt,
                        int n_prompt, const int *plain, int n_plain, int n_ks) {
  static const int ks[] = {K_MAX, 3};
  for (int i = 0; i < n_ks; i++) {
    int out[GEN_CAP], pos;
    mkc_decode_stats st;
    spy sp;
    int n = run(target, src, prompt, n_prompt, GEN_CAP, ks[i], 0, -1, out, &st, &pos, &sp);
    CHECK(n == n_plain && st.ctx_full && first_difference(plain, out, n_plain) < 0,
          "%s, %s, K=%d: the context's end stops generation, the plain tokens up to it (%d of "
          "%d, ctx_full %d)",
          what, src->name, ks[i], n, n_plain, st.ctx_full);
    CHECK_INT(pos, target->g.max_ctx, "%s, %s, K=%d: ... the target's pos = max_ctx", what,
              src->name, ks[i]);
    if (src->d) {
      int dpos = mkc_session_pos(mkc_drafter_session(src->d));
      CHECK(sp.off == 0 && dpos <= src->k->g.max_ctx,
            "%s, %s, K=%d: ... the draft's pos followed the target's and stayed in its cache "
            "(%d of %d)",
            what, src->name, ks[i], dpos, src->k->g.max_ctx);
    }
  }
}

/* What to run on one model. */
typedef struct plan {
  int n_gen;       /* tokens per run of the K sweep */
  int n_layers;    /* self-speculation's layers */
  int other_model; /* also a draft model of the same preset on other weights (seed 5) */
  int twin_sweep;  /* the K sweep for the draft model that is the target, too */
  int n_stops;     /* stop tokens tried per source */
  int n_ctx_ends;  /* runs into the context's end per source: K = 8, then 3 */
} plan;

/* One model: plain greedy tokens to the end of the context from a kernel
 * without drafts, then each source against them: prompt lookup,
 * self-speculation, maybe a draft model on other weights, and a draft model
 * that is the target itself (every draft right: the all-accepted path, and
 * stops in the middle of rounds). */
static void model_sources(const char *what, const model *md, const int *prompt, int n_prompt,
                          const plan *pl) {
  int n_gen = pl->n_gen, n_layers = pl->n_layers, other_model = pl->other_model;
  double t0 = mkc_seconds();
  kernel plain_k, target, self, other, twin;
  memset(&self, 0, sizeof self);
  memset(&other, 0, sizeof other);
  memset(&twin, 0, sizeof twin);
  int ok = kernel_open(&plain_k, md, 0, 0, 42, NULL) == 0 &&
           kernel_open(&target, md, K_MAX, 0, 42, NULL) == 0 &&
           kernel_open(&self, md, K_MAX, n_layers, 0, &target) == 0;
  if (ok) ok = kernel_open(&twin, md, K_MAX, 0, 0, &target) == 0;
  if (ok && other_model) ok = kernel_open(&other, md, K_MAX, 0, 5, NULL) == 0;
  if (!CHECK(ok, "%s: kernels (plain, K <= %d, first %d layers)", what, K_MAX, n_layers)) goto done;
  printf("     (%s: kernels in %.1f s)\n", what, mkc_seconds() - t0);
  CHECK(self.g.n_layers == n_layers && strstr(self.g.preset, "-L") &&
            self.g.weight_elems < target.g.weight_elems,
        "%s: the self-speculation kernel runs %d of %d layers (preset %s)", what, self.g.n_layers,
        target.g.n_layers, self.g.preset);

  int plain[GEN_CAP], pos;
  mkc_decode_stats st;
  spy sp;
  source none = {"plain", NULL, NULL};
  int n_plain = run(&plain_k, &none, prompt, n_prompt, GEN_CAP, 0, 0, -1, plain, &st, &pos, &sp);
  if (!CHECK(n_plain == md->max_ctx - n_prompt + 1 && st.ctx_full,
             "%s: plain greedy to the context's end (%d tokens)", what, n_plain))
    goto done;

  char self_name[64];
  snprintf(self_name, sizeof self_name, "self-speculation L=%d", n_layers);
  source sources[4] = {{"prompt lookup", NULL, NULL}, {self_name, &self, NULL}};
  int n_sources = 2;
  if (other_model) sources[n_sources++] = (source){"draft model (seed 5)", &other, NULL};
  sources[n_sources++] = (source){"draft model = target", &twin, NULL};
  int mid = 0;
  for (int i = 0; i < n_sources; i++) {
    source *src = &sources[i];
    if (src->k) {
      mkc_session *ds = session(src->k);
      src->d = ds ? mkc_drafter_model(ds, &src->k->g, src->name) : NULL;
      if (!CHECK(src->d, "%s, %s: drafter", what, src->name)) continue;
    }
    long drafted = 0, accepted = 0;
    int sweep = src->k != &twin || pl->twin_sweep;
    if (sweep) lossless(what, &target, src, prompt, n_prompt, n_gen, plain, &drafted, &accepted);
    if (sweep && src->k == &twin)
      CHECK(drafted > 0 && accepted == drafted,
            "%s, %s: every draft accepted (%ld of %ld): the all-accepted path ran", what, src->name,
            accepted, drafted);
    else if (sweep && src->k)
      CHECK(accepted < drafted, "%s, %s: drafts were rejected too (%ld of %ld accepted)", what,
            src->name, accepted, drafted);
    mid += stop_mid_round(what, &target, src, prompt, n_prompt, plain, n_gen, pl->n_stops);
    context_end(what, &target, src, prompt, n_prompt, plain, n_plain, pl->n_ctx_ends);
    mkc_drafter_close(src->d);
  }
  CHECK(mid > 0, "%s: a stop token came in the middle of a round (%d times)", what, mid);
  printf("     (%s: %.1f s)\n", what, mkc_seconds() - t0);
done:
  kernel_close(&twin);
  kernel_close(&other);
  kernel_close(&self);
  kernel_close(&target);
  kernel_close(&plain_k);
}

/* A conversation's history rewritten under the drafter: it keeps the
 * prefix it shares with the new history and drafts as a fresh one does. */
static void resync(void) {
  model md = {"tiny", NULL, 96};
  kernel k;
  if (!CHECK(kernel_open(&k, &md, 4, 0, 42, NULL) == 0, "resync: kernel")) return;
  mkc_session *a = session(&k), *b = session(&k);
  mkc_drafter *da = a ? mkc_drafter_model(a, &k.g, "a") : NULL;
  mkc_drafter *db = b ? mkc_drafter_model(b, &k.g, "b") : NULL;
  if (CHECK(da && db, "resync: drafters")) {
    int hist[40], x[4], y[4];
    for (int i = 0; i < 40; i++) hist[i] = (i * 7 + 3) % k.g.vocab;
    int n1 = mkc_drafter_propose(da, hist, 30, 4, x);
    mkc_drafter_accepted(da, 1);
    hist[20] = (hist[20] + 1) % k.g.vocab; /* the history from 20 on is another */
    long before = da->steps;
    n1 = mkc_drafter_propose(da, hist, 25, 4, x);
    int n2 = mkc_drafter_propose(db, hist, 25, 4, y);
    CHECK(n1 == 4 && n2 == 4 && memcmp(x, y, sizeof x) == 0,
          "resync: after a rewritten history the drafts are a fresh drafter's");
    CHECK_INT(mkc_session_pos(mkc_drafter_session(da)), 25 + 3,
              "resync: the draft holds the history and 3 of its 4 drafts");
    CHECK(da->steps - before < db->steps,
          "resync: the shared prefix was kept (%ld steps, a fresh drafter's %ld)",
          da->steps - before, db->steps);
  }
  mkc_drafter_close(da);
  mkc_drafter_close(db);
  kernel_close(&k);
}

/* llama.cpp's --draft-p-min: a model drafter's proposal is its greedy continuation up to the
 * first choice whose probability among the step's 10 likeliest is below p_min. The oracle: the
 * same kernel's greedy steps on a session of its own, each choice's probability worked out here
 * from its logits (a softmax over the 10 largest), where the drafter reads the kernel's
 * log-probabilities. Several histories, several floors: some proposals must stay whole, some be
 * cut short, some left empty, or the check would not tell the floors apart. */
static void p_min(void) {
  model md = {"odd", NULL, 96};
  kernel k;
  if (!CHECK(kernel_open(&k, &md, 4, 0, 7, NULL) == 0, "p_min: kernel")) return;
  static const float FLOORS[] = {0.05f, 0.15f, 0.2f, 0.3f};
  int bad = 0, cut = 0, whole = 0, empty = 0, total = 0;
  for (int f = 0; f < 4; f++)
    for (int h = 0; h < 6; h++) {
      int hist[24], n = 8 + 3 * h, x[4], want = 0;
      for (int i = 0; i < n; i++) hist[i] = (i * (5 + h) + 3 * f + 1) % k.g.vocab;
      mkc_session *ds = session(&k), *os = session(&k);
      mkc_drafter *d = ds ? mkc_drafter_model(ds, &k.g, "p_min") : NULL;
      if (!d || !os || mkc_drafter_model_p_min(d, FLOORS[f]) != 0) {
        bad++;
        mkc_drafter_close(d);
        mkc_session_close(os);
        continue;
      }
      int got = mkc_drafter_propose(d, hist, n, 4, x);
      /* the oracle: feed the history, then each greedy choice, reading the logits */
      int in[32], m = n, step_ok = 1;
      memcpy(in, hist, (size_t)n * sizeof *in);
      for (int pos = 0; step_ok && want < 4;) {
        mkc_step_result r;
        int T = m - pos < k.g.t_max ? m - pos : k.g.t_max;
        step_ok = mkc_session_step(os, in + pos, T, T - 1, &r) == 0 && r.status == MKC_STATUS_OK;
        pos += T;
        if (!step_ok || pos < m) continue;
        const float *l = mkc_session_logits(os, T - 1);
        float top[10];
        int best = 0;
        for (int i = 0; i < 10; i++) top[i] = -INFINITY;
        for (int v = 0; l && v < k.g.vocab; v++) {
          if (l[v] > l[best]) best = v;
          for (int i = 0; i < 10; i++)
            if (l[v] > top[i]) {
              memmove(top + i + 1, top + i, (size_t)(9 - i) * sizeof *top);
              top[i] = l[v];
              break;
            }
        }
        double sum = 0;
        for (int i = 0; i < 10; i++) sum += exp((double)top[i] - top[0]);
        if (!l || best != r.out[0] || 1.0 / sum < FLOORS[f]) break;
        want++;
        in[m++] = best;
      }
      bad += !step_ok || got != want || (got > 0 && memcmp(x, in + n, (size_t)got * sizeof *x));
      cut += got < 4, whole += got == 4, empty += got == 0;
      total++;
      mkc_drafter_close(d);
      mkc_session_close(os);
    }
  CHECK(bad == 0 && total == 24,
        "--draft-p-min: each of %d proposals the greedy continuation up to the first choice "
        "below the floor, as the logits' top-10 softmax says (%d differ)",
        total, bad);
  CHECK(cut > empty && empty > 0 && whole > 0,
        "... the floors tell proposals apart: %d whole, %d cut short, %d of those empty", whole,
        cut, empty);
  mkc_drafter *lookup = mkc_drafter_lookup();
  check_stderr_begin();
  int refused = mkc_drafter_model_p_min(lookup, 0.5f);
  free(check_stderr_end());
  CHECK(refused == -1, "--draft-p-min on prompt lookup: refused");
  mkc_drafter_close(lookup);
  kernel_close(&k);
}

/* The first layers' kernel is a kernel like any other: on the cpu backend
 * it decodes as the reference executor does on its graph, and with an
 * override past the preset's layers codegen refuses. */
static void first_layers_kernel(void) {
  model md = {"odd", NULL, 64};
  kernel full, first;
  memset(&first, 0, sizeof first);
  if (CHECK(kernel_open(&full, &md, 4, 0, 42, NULL) == 0 &&
                kernel_open(&first, &md, 4, 1, 0, &full) == 0,
            "odd-L1: kernel on odd's weights")) {
    static const int prompt[] = {5, 6, 7, 5, 6, 7};
    int a[16], b[16];
    mkc_decode_stats sa, sb;
    mkc_session *cpu = session(&first),
                *ref = mkc_session_open(MKC_BACKEND_REF, &first.g, &first.src, first.wp, 0);
    CHECK(cpu && ref && mkc_decode(cpu, &first.g, prompt, 6, 16, 4, a, &sa) == 0 &&
              mkc_decode(ref, &first.g, prompt, 6, 16, 0, b, &sb) == 0 &&
              memcmp(a, b, sizeof a) == 0,
          "odd-L1: the kernel's 16 greedy tokens (drafts on) are the reference executor's");
    mkc_session_close(cpu);
    mkc_session_close(ref);
  }
  kernel_close(&first);
  kernel_close(&full);
  kernel too_many;
  check_stderr_begin();
  int rc = kernel_open(&too_many, &md, 0, 3, 42, NULL);
  char *err = check_stderr_end();
  CHECK(rc != 0 && strstr(err, "error: preset odd has 2 layers: cannot keep the first 3"),
        "odd with 3 layers: codegen refuses, naming the preset's layers");
  free(err);
  if (rc == 0) kernel_close(&too_many);
}

/* The plain rounds the gate asks for before it opens again (1000 at most). */
static int plain_rounds(mkc_gate *g) {
  int n = 0;
  while (!mkc_gate_open(g) && n < 1000) n++;
  return n;
}

/* The cost gate on scripted rounds: speculation that yields fewer tokens
 * per second than plain steps is switched off for MKC_GATE_PLAIN rounds;
 * one that yields more stays on; a window waits for a one-input step. */
static void gate(void) {
  mkc_gate g;
  mkc_gate_init(&g);
  int open = 0;
  for (int r = 0; r < MKC_GATE_WINDOW; r++) open += mkc_gate_open(&g);
  for (int r = 0; r < MKC_GATE_WINDOW; r++) mkc_gate_update(&g, 4, 2, 0.01, 0.03);
  CHECK(open == MKC_GATE_WINDOW && !mkc_gate_open(&g),
        "gate: a full window before any plain step measures one first");
  mkc_gate_update(&g, 0, 1, 0, 0.01); /* 100 tokens/s plain; the window: 2 / 0.04 = 50 */
  int plain = plain_rounds(&g);
  CHECK(plain == MKC_GATE_PLAIN && g.fallbacks == 1,
        "gate: speculation at half plain's speed: %d plain rounds (expected %d), 1 fallback", plain,
        MKC_GATE_PLAIN);
  for (int r = 0; r < MKC_GATE_WINDOW; r++) mkc_gate_update(&g, 4, 4, 0.005, 0.02);
  CHECK(mkc_gate_open(&g) && g.fallbacks == 1,
        "gate: speculation at 160 tokens/s against plain's 100: stays on");
  for (int r = 0; r < 4; r++) mkc_gate_update(&g, 0, 1, 0, 0.1); /* plain slows to 10/s */
  CHECK(g.t1 > 0.05 && g.t1 < 0.1, "gate: t1 follows the newest plain steps (%.3f s)", g.t1);
  /* windows in a row that do not pay: 32 plain rounds, then 64, 128, 256, 256 */
  int runs[5];
  for (int w = 0; w < 5; w++) {
    for (int r = 0; r < MKC_GATE_WINDOW; r++) mkc_gate_update(&g, 4, 1, 0, 1.0);
    runs[w] = plain_rounds(&g);
  }
  CHECK(runs[0] == 32 && runs[1] == 64 && runs[2] == 128 && runs[3] == 256 && runs[4] == 256,
        "gate: each window in a row that does not pay doubles the plain rounds, up to 256 (%d %d "
        "%d %d %d)",
        runs[0], runs[1], runs[2], runs[3], runs[4]);
  for (int r = 0; r < MKC_GATE_WINDOW; r++) mkc_gate_update(&g, 4, 5, 0, 0.1);
  for (int r = 0; r < MKC_GATE_WINDOW; r++) mkc_gate_update(&g, 4, 1, 0, 1.0);
  CHECK_INT(plain_rounds(&g), 32,
            "gate: a window that pays ends the streak: 32 plain rounds after the next");
}

/* A round's target step of T inputs on an H100, llama-3.2-1b (docs/PERF.md,
 * 2026-11-27, third session), as a multiple of a one-input step: 5 inputs
 * cost 2.27 x one at 4096 cached positions, 2.20 x at 0; between them, the
 * line through both ends. */
static double step_cost(int T, double t5) { return 1.0 + (t5 - 1.0) * (T - 1) / 4.0; }

/* 128 tokens through the adaptive controller, as exec/decode.c runs it
 * (mkc_adaptive_next, the drafts, the step, mkc_adaptive_update), on that
 * cost model: each draft is accepted while the ones before it were, with
 * probability `p` (drawn from a fixed LCG). `start`: the depth the first
 * round offers (0: the controller's own). The time over plain decoding's. */
static double controller_cost(double p, double t5, int max, int start) {
  mkc_depth d;
  mkc_gate g;
  mkc_depth_init(&d, 0, max);
  mkc_gate_init(&g);
  if (start) d.k = start;
  unsigned lcg = 12345;
  double seconds = 0;
  int tokens = 0;
  while (tokens < 128) {
    int gated, k = mkc_adaptive_next(&d, &g, &gated), accepted = 0;
    while (accepted < k) {
      lcg = lcg * 1103515245u + 12345u;
      if ((lcg >> 8) % 1000 >= p * 1000) break;
      accepted++;
    }
    double t = step_cost(1 + k, t5) * 1e-3;
    seconds += t;
    tokens += 1 + accepted;
    mkc_adaptive_update(&d, &g, gated, k, accepted, 1 + accepted, 0, t);
  }
  return seconds / (tokens * 1e-3);
}

/* Issue 15: the controller never more than 3 % slower than plain decoding
 * where drafts do not pay, and well faster where they do; and the check
 * can fail: starting at the full depth, as the controller did before,
 * costs 5 x the bound. */
static void controller_on_costs(void) {
  double none = controller_cost(0, 2.27, 4, 0), some = controller_cost(0.3, 2.27, 4, 0),
         all = controller_cost(1, 2.20, 4, 0), from4 = controller_cost(0, 2.27, 4, 4);
  CHECK(none <= 1.03,
        "controller, no draft accepted, 5 inputs at 2.27 x: %.3f x plain's time "
        "(at most 1.03)",
        none);
  CHECK(some <= 1.03, "controller, 30 %% of drafts accepted: %.3f x plain's time (at most 1.03)",
        some);
  CHECK(all <= 1 / 1.5,
        "controller, every draft accepted, 5 inputs at 2.20 x: %.2f x plain's "
        "speed (at least 1.5)",
        1 / all);
  CHECK(from4 > 1.03, "controller: the bound can fail: from depth 4, %.3f x plain's time", from4);
}

/* SmolLM2-135M drafting for itself with its first 8 of 30 layers. */
static void smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0 && mf.tok, "SmolLM2: open")) return;
  static const char text[] = "1. apples\n2. pears\n3. plums\n4.";
  int *ids = NULL;
  int n = mkc_tokenizer_encode(mf.tok, text, strlen(text), mkc_tokenizer_add_bos(mf.tok), 1, &ids);
  /* 8 tokens per run and a context 14 past the prompt: the cpu backend
   * runs SmolLM2 at a few tokens per second */
  model md = {NULL, &mf, n + 14};
  plan pl = {.n_gen = 8, .n_layers = 8, .n_stops = 2, .n_ctx_ends = 1};
  if (CHECK(n > 0, "SmolLM2: the prompt is %d tokens", n))
    model_sources("SmolLM2-135M", &md, ids, n, &pl);
  free(ids);
  mkc_model_file_close(&mf);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  gate();
  controller_on_costs();
  resync();
  p_min();
  first_layers_kernel();
  static const int prompt[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
  static const char *presets[] = {"tiny", "odd", "qwen3-tiny"};
  for (int i = 0; i < 3; i++) {
    model md = {presets[i], NULL, 72};
    plan pl = {.n_gen = 40,
               .n_layers = 1,
               .other_model = 1,
               .twin_sweep = 1,
               .n_stops = 4,
               .n_ctx_ends = 2};
    model_sources(presets[i], &md, prompt, 10, &pl);
  }
  smollm2();
  return check_done();
}
