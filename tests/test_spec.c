/* Speculative decoding is lossless: prompt-lookup drafts for K = 1, 2, 4, 8
 * give exactly the plain greedy output, and pos counts exactly the tokens
 * processed. Scripted drafts cover all accepted, first rejected, rejected in
 * the middle, all rejected, and a step that would run past the cache. */
#include <stdlib.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/depth.h"
#include "fixture.h"
#include "mkc_state.h"

#define N_GEN 128

static const int PROMPT[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

/* Plain greedy decoding (zero drafts) into out; returns generated or -1. */
static int decode(const char *preset, int draft_max, int kernel_draft_max, int max_ctx,
                  enum mkc_backend_kind kind, int n_gen, int *out, mkc_decode_stats *st, int *pos) {
  fixture fx;
  int rc = -1;
  if (fixture_open(&fx, preset, kernel_draft_max, max_ctx, 42) != 0) return -1;
  mkc_session *s = mkc_session_open(kind, &fx.g, &fx.src, &fx.w, 3);
  if (s && mkc_decode(s, &fx.g, PROMPT, N_PROMPT, n_gen, draft_max, out, st) == 0) {
    rc = st->generated;
    *pos = mkc_session_pos(s);
  }
  mkc_session_close(s);
  fixture_close(&fx);
  return rc;
}

static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

static void lossless(const char *preset, int *plain) {
  mkc_decode_stats st;
  int pos, ref[N_GEN], out[N_GEN];
  int n = decode(preset, 0, 0, 0, test_backend(), N_GEN, plain, &st, &pos);
  CHECK_INT(n, N_GEN, "%s: plain greedy decoding generates %d tokens", preset, N_GEN);
  CHECK_INT(pos, N_PROMPT + N_GEN - 1, "%s: plain: pos = tokens processed", preset);
  n = decode(preset, 0, 0, 0, MKC_BACKEND_REF, N_GEN, ref, &st, &pos);
  CHECK(n == N_GEN && first_difference(plain, ref, N_GEN) < 0,
        "%s: plain greedy matches the reference executor", preset);
  long drafted = 0, accepted = 0;
  static const int ks[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; i++) {
    int k = ks[i];
    n = decode(preset, k, k, 0, test_backend(), N_GEN, out, &st, &pos);
    int diff = n == N_GEN ? first_difference(plain, out, N_GEN) : 0;
    CHECK(diff < 0,
          "%s: K=%d: %d tokens identical to plain greedy (first difference at %d; %ld drafted, %ld "
          "accepted)",
          preset, k, N_GEN, diff, st.drafted, st.accepted);
    CHECK_INT(pos, N_PROMPT + N_GEN - 1, "%s: K=%d: pos = tokens processed", preset, k);
    CHECK(st.gen_steps < N_GEN || st.accepted == 0, "%s: K=%d: %d steps for %d tokens", preset, k,
          st.gen_steps, N_GEN);
    drafted += st.drafted;
    accepted += st.accepted;
  }
  /* The adaptive depth (exec/depth.h) changes how many drafts each step
   * offers, never the tokens. */
  {
    fixture fx;
    if (fixture_open(&fx, preset, 8, 0, 42) == 0) {
      mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 3);
      mkc_decode_opts o = {.draft_max = 8, .adaptive = 1, .draft_min = 0};
      int n =
          s ? (mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, N_GEN, &o, out, &st) == 0 ? st.generated
                                                                                     : -1)
            : -1;
      int diff = n == N_GEN ? first_difference(plain, out, N_GEN) : 0;
      CHECK(diff < 0,
            "%s: adaptive depth 0..8: %d tokens identical to plain greedy (depths %d..%d, %ld "
            "drafted, %ld accepted)",
            preset, N_GEN, st.depth_lo, st.depth_hi, st.drafted, st.accepted);
      mkc_session_close(s);
      fixture_close(&fx);
    }
  }
  /* Otherwise the runs above never took the accept or the reject path. */
  CHECK(accepted > 0 && accepted < drafted,
        "%s: drafts were both accepted and rejected (%ld of %ld)", preset, accepted, drafted);
}

/* One scripted step on the cpu and ref sessions; the cpu result must match the
 * ref's and the expectation. */
typedef struct scripted {
  mkc_session *cpu, *ref;
  const mkc_graph *g;
} scripted;

static void script_step(scripted *sc, const char *what, const int *in, int T, int want_accepted,
                        const int *want_out) {
  mkc_step_result r, rr;
  int pos0 = mkc_session_pos(sc->cpu);
  int ok =
      mkc_session_step(sc->cpu, in, T, 0, &r) == 0 && mkc_session_step(sc->ref, in, T, 0, &rr) == 0;
  CHECK(ok && r.status == MKC_STATUS_OK, "%s: step runs", what);
  if (!ok) return;
  CHECK_INT(r.n_accepted, want_accepted, "%s: drafts accepted", what);
  CHECK_INT(r.n_out, want_accepted + 1, "%s: tokens emitted", what);
  int same = 1;
  for (int i = 0; i < r.n_out && i <= want_accepted; i++)
    same &= r.out[i] == want_out[i] && rr.out[i] == r.out[i];
  CHECK(same && rr.n_out == r.n_out,
        "%s: emitted tokens are the greedy ones, as the reference says", what);
  CHECK_INT(mkc_session_pos(sc->cpu), pos0 + want_accepted + 1,
            "%s: pos moved past the accepted tokens", what);
  double worst = 0;
  for (int t = 0; t < T; t++) {
    double e =
        rel_err(mkc_session_logits(sc->cpu, t), mkc_session_logits(sc->ref, t), sc->g->vocab);
    if (!(e <= worst)) worst = e;
  }
  CHECK(worst <= 1e-4, "%s: logits of all %d inputs match the reference (%.3g)", what, T, worst);
}

/* A token that is not `avoid`. */
static int other(int avoid, int vocab) { return (avoid + 1 + vocab / 2) % vocab; }

static void scripted_drafts(const char *preset, const int *plain) {
  fixture fx;
  if (fixture_open(&fx, preset, 4, 0, 42) != 0) {
    CHECK(0, "%s: generate the kernel", preset);
    return;
  }
  const mkc_graph *g = &fx.g;
  scripted sc = {mkc_session_open(test_backend(), g, &fx.src, &fx.w, 4),
                 mkc_session_open(MKC_BACKEND_REF, g, &fx.src, &fx.w, 0), g};
  mkc_step_result r;
  int ok = sc.cpu && sc.ref;
  for (int pos = 0; ok && pos < N_PROMPT;) {
    int T = N_PROMPT - pos < g->t_max ? N_PROMPT - pos : g->t_max;
    ok = mkc_session_step(sc.cpu, PROMPT + pos, T, T - 1, &r) == 0 && r.status == MKC_STATUS_OK &&
         mkc_session_step(sc.ref, PROMPT + pos, T, T - 1, &r) == 0;
    pos += T;
  }
  if (!CHECK(ok, "%s: scripted: prompt", preset)) goto done;
  /* plain[i] is the token at position N_PROMPT + i; `at` is the index of the last one known. */
  int at = 0, in[5];
  char what[128];
  snprintf(what, sizeof what, "%s: all 4 drafts accepted", preset);
  for (int i = 0; i < 5; i++) in[i] = plain[at + i];
  script_step(&sc, what, in, 5, 4, plain + at + 1);
  at += 5;

  snprintf(what, sizeof what, "%s: first draft rejected", preset);
  in[0] = plain[at];
  for (int i = 1; i < 5; i++) in[i] = plain[at + i];
  in[1] = other(plain[at + 1], g->vocab);
  script_step(&sc, what, in, 5, 0, plain + at + 1);
  at += 1;

  snprintf(what, sizeof what, "%s: third draft rejected", preset);
  for (int i = 0; i < 5; i++) in[i] = plain[at + i];
  in[3] = other(plain[at + 3], g->vocab);
  script_step(&sc, what, in, 5, 2, plain + at + 1);
  at += 3;

  snprintf(what, sizeof what, "%s: all drafts rejected", preset);
  in[0] = plain[at];
  for (int i = 1; i < 5; i++) in[i] = other(plain[at + i], g->vocab);
  script_step(&sc, what, in, 5, 0, plain + at + 1);
  at += 1;

  snprintf(what, sizeof what, "%s: last draft rejected, fewer drafts", preset);
  for (int i = 0; i < 3; i++) in[i] = plain[at + i];
  in[2] = other(plain[at + 2], g->vocab);
  script_step(&sc, what, in, 3, 1, plain + at + 1);
  at += 2;

  /* The rejected rows were overwritten: plain decoding goes on exactly. */
  int same = 1;
  for (int i = 0; i < 16 && same; i++, at++) {
    in[0] = plain[at];
    same = mkc_session_step(sc.cpu, in, 1, 0, &r) == 0 && r.status == MKC_STATUS_OK &&
           r.out[0] == plain[at + 1];
  }
  CHECK(same, "%s: after rejections, plain decoding continues the greedy sequence", preset);
  CHECK_INT(mkc_session_pos(sc.cpu), N_PROMPT + at, "%s: pos after the scripted steps", preset);
done:
  mkc_session_close(sc.cpu);
  mkc_session_close(sc.ref);
  fixture_close(&fx);
}

static int kv_equal(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

/* The end of the context: a step that would pass it is refused whole, one
 * that exactly fills it runs, and the decode loop stops cleanly there. */
static void context_end(const char *preset, const int *plain) {
  enum { CTX = 24 };
  fixture fx;
  if (fixture_open(&fx, preset, 4, CTX, 42) != 0) {
    CHECK(0, "%s: generate the kernel with --ctx %d", preset, CTX);
    return;
  }
  const mkc_graph *g = &fx.g;
  mkc_session *s = mkc_session_open(test_backend(), g, &fx.src, &fx.w, 2);
  void *snapshot = malloc(g->kv_bytes);
  mkc_step_result r;
  int ok = s && snapshot;
  /* Prompt + greedy tokens one step at a time up to pos = CTX - 3. */
  int hist[CTX + 8];
  memcpy(hist, PROMPT, sizeof PROMPT);
  memcpy(hist + N_PROMPT, plain, (CTX + 8 - N_PROMPT) * sizeof *hist);
  for (int pos = 0; ok && pos < CTX - 3; pos++)
    ok = mkc_session_step(s, hist + pos, 1, 0, &r) == 0 && r.status == 0;
  if (!CHECK(ok, "%s: ctx %d: run to pos %d", preset, CTX, CTX - 3)) goto done;

  memcpy(snapshot, mkc_session_kv(s), g->kv_bytes);
  ok = mkc_session_step(s, hist + CTX - 3, 5, 0, &r) == 0;
  CHECK(ok && r.status == MKC_STATUS_CTX_FULL, "%s: a step of 5 at pos %d is refused: %s", preset,
        CTX - 3, mkc_status_name(r.status));
  CHECK_INT(mkc_session_pos(s), CTX - 3, "%s: the refused step left pos alone", preset);
  CHECK(kv_equal(snapshot, mkc_session_kv(s), g->kv_bytes), "%s: the refused step wrote no K/V",
        preset);

  ok = mkc_session_step(s, hist + CTX - 3, 3, 0, &r) == 0 && r.status == MKC_STATUS_OK;
  CHECK(ok && r.n_accepted == 2 && r.out[2] == hist[CTX],
        "%s: a step of 3 fills the cache exactly (accepted %d)", preset, r.n_accepted);
  CHECK_INT(mkc_session_pos(s), CTX, "%s: pos = max_ctx", preset);
  memcpy(snapshot, mkc_session_kv(s), g->kv_bytes);
  ok = mkc_session_step(s, hist + CTX, 1, 0, &r) == 0;
  CHECK(ok && r.status == MKC_STATUS_CTX_FULL, "%s: a full cache refuses even one token", preset);
  CHECK(kv_equal(snapshot, mkc_session_kv(s), g->kv_bytes), "%s: ... and writes nothing", preset);
  mkc_session_close(s);
  s = NULL;

  /* The decode loop with drafts near the end: clamps them, stops cleanly, loses nothing. */
  mkc_decode_stats st;
  int pos, out[CTX];
  int n = decode(preset, 4, 4, CTX, test_backend(), CTX, out, &st, &pos);
  CHECK(n == CTX - N_PROMPT + 1 && st.ctx_full,
        "%s: decoding past the context stops at it (%d tokens, ctx_full %d)", preset, n,
        st.ctx_full);
  CHECK(n > 0 && first_difference(out, plain, n) < 0, "%s: ... with the greedy tokens up to there",
        preset);
  CHECK_INT(pos, CTX, "%s: ... and pos = max_ctx", preset);
done:
  free(snapshot);
  mkc_session_close(s);
  fixture_close(&fx);
}

/* A conversation: generate, then continue from a history that keeps only
 * part of the answer and adds new tokens (the session rewinds past drafts and
 * tokens it no longer holds). The continuation must equal a fresh session
 * decoding the whole history at once, on the backend under test and on the
 * reference executor, and feed only the tokens past what it kept. */
static void continuation(const char *preset) {
  fixture fx;
  if (fixture_open(&fx, preset, 4, 0, 42) != 0) {
    CHECK(0, "%s: fixture", preset);
    return;
  }
  const mkc_graph *g = &fx.g;
  enum mkc_backend_kind kinds[] = {test_backend(), MKC_BACKEND_REF};
  for (int b = 0; b < 2; b++) {
    mkc_session *s = mkc_session_open(kinds[b], g, &fx.src, &fx.w, 2),
                *fresh = mkc_session_open(kinds[b], g, &fx.src, &fx.w, 2);
    int first[N_GEN], more[N_GEN], once[N_GEN], hist[N_PROMPT + N_GEN + 3];
    mkc_decode_stats st, st_more, st_once;
    mkc_decode_opts o = {.draft_max = 4};
    if (!s || !fresh || mkc_decode_with(s, g, PROMPT, N_PROMPT, 12, &o, first, &st) != 0) {
      CHECK(0, "%s: %s: first decode", preset, b ? "ref" : "kernel");
      mkc_session_close(s);
      mkc_session_close(fresh);
      continue;
    }
    int held = mkc_session_pos(s), kept = N_PROMPT + 5, n = 0;
    memcpy(hist, PROMPT, sizeof PROMPT);
    n = N_PROMPT;
    for (int i = 0; i < 5; i++) hist[n++] = first[i];
    static const int turn[] = {7, 3, 9}; /* "the user's turn" */
    for (int i = 0; i < 3; i++) hist[n++] = turn[i];
    int rc = mkc_decode_more(s, g, hist, n, kept, 16, &o, more, &st_more);
    int rc2 = mkc_decode_with(fresh, g, hist, n, 16, &o, once, &st_once);
    CHECK(rc == 0 && rc2 == 0 && st_more.generated == 16 && st_once.generated == 16 &&
              first_difference(more, once, 16) < 0,
          "%s: %s: a continuation rewound from pos %d to %d equals one decode of the whole "
          "history",
          preset, b ? "ref" : "kernel", held, kept);
    CHECK_INT(st_more.fed, n - kept, "%s: %s: the continuation feeds only the new tokens", preset,
              b ? "ref" : "kernel");
    mkc_session_close(s);
    mkc_session_close(fresh);
  }
  fixture_close(&fx);
}

/* The depth controller on scripted outcomes: it starts at one draft, all
 * accepted raises it to max one window at a time, none accepted lowers it to
 * min, and at depth 0 a probe every MKC_DEPTH_PROBE_STEPS steps can raise it
 * again. */
static void depth_controller(void) {
  mkc_depth d;
  mkc_depth_init(&d, 0, 4);
  int k = mkc_depth_next(&d), steps = 0;
  CHECK_INT(k, 1, "depth: starts at one draft (the cheapest verify step)");
  while (mkc_depth_next(&d) > 0 && steps < 100) {
    mkc_depth_update(&d, mkc_depth_next(&d), 0);
    steps++;
  }
  /* a window is 8 drafts: 8 steps at depth 1 */
  CHECK(d.k == 0 && steps == 8, "depth: nothing accepted: down to 0 in %d steps", steps);
  int probes = 0, s;
  for (s = 0; s < 64 && d.k == 0; s++) {
    int offered = mkc_depth_next(&d);
    probes += offered;
    mkc_depth_update(&d, offered, probes >= 2 ? offered : 0); /* the second probe is accepted */
  }
  CHECK(d.k == 1 && probes == 2 && s > MKC_DEPTH_PROBE_STEPS,
        "depth: at 0, a probe every %d steps; an accepted one raises it (%d probes, %d steps)",
        MKC_DEPTH_PROBE_STEPS, probes, s);
  for (steps = 0; d.k < 4 && steps < 100; steps++) {
    int offered = mkc_depth_next(&d);
    mkc_depth_update(&d, offered, offered);
  }
  CHECK(d.k == 4 && d.lowest == 0 && mkc_depth_next(&d) == 4 && d.highest == 4,
        "depth: all accepted: up to max");
  mkc_depth_update(&d, 8, 5); /* 62.5 %: between the thresholds */
  CHECK_INT(d.k, 4, "depth: 40..80 %% accepted: unchanged");
  mkc_depth_init(&d, 2, 4);
  for (steps = 0; steps < 40; steps++) mkc_depth_update(&d, mkc_depth_next(&d), 0);
  CHECK_INT(d.k, 2, "depth: never below --draft-min");
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  depth_controller();
  static const char *presets[] = {"tiny", "odd", "qwen2-tiny", "qwen3-tiny"};
  for (int i = 0; i < 4; i++) {
    int plain[N_GEN];
    lossless(presets[i], plain);
    scripted_drafts(presets[i], plain);
    context_end(presets[i], plain);
    continuation(presets[i]);
  }
  return check_done();
}
