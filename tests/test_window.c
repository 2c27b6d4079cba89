/* Sliding-window attention (graphs/llama.lua: swa-tiny, every layer over a
 * window of 16, Mistral's shape; gemma-tiny, 2 local : 1 global layers).
 * A windowed layer keeps a ring of window + t_chunk rows (the most a step
 * writes: a prompt chunk's, here UBATCH); checked here:
 *   - the plan: ring sizes, the KV bytes, the window in the emitted stage;
 *   - the reference masks: the same weights with and without the window give
 *     the same logits for the first 16 positions and others after;
 *   - speculation is lossless across the wrap: K = 1, 2, 4, 8 give the plain
 *     greedy output (128 tokens, the rings wrap 6 times), which the
 *     reference gives too; steps whose drafts are all rejected, each writing
 *     t_max rows past pos, match the reference input for input;
 *   - rollback: a rewind reaches t_chunk + 1 positions back after plain steps
 *     and no further (refused, with the reason); mkc_decode_more feeds the
 *     whole history where the rewind cannot be done;
 *   - snapshots taken every few steps and merged hold every row: restored to
 *     an earlier position over another branch, decoding goes on exactly as a
 *     fresh session's; a single late snapshot cannot be, and says why.
 * The match with the reference over 73 positions is tests/test_kernel.c's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/reference.h"
#include "exec/snapshot.h"
#include "fixture.h"

#define WINDOW 16
#define N_GEN 128
#define TOL 1e-4
/* Prompt chunks of up to 12: the prompt goes tiled (past t_max) and a ring
 * (window + 12 rows) wraps within the runs below. */
#define UBATCH 12

static const int PROMPT[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

static const char *kind_name(enum mkc_backend_kind kind) {
  return kind == MKC_BACKEND_REF ? "ref" : kind == MKC_BACKEND_CUDA ? "cuda" : "cpu";
}

static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* layer's attention node in g, or NULL. */
static const mkc_node *attention_of(const mkc_graph *g, int layer) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == MKC_OP_ATTENTION && g->nodes[i].layer == layer) return &g->nodes[i];
  return NULL;
}

static void plan(void) {
  static const struct {
    const char *preset;
    int draft_max, windows[3];
  } cases[] = {{"swa-tiny", 4, {WINDOW, WINDOW}},
               {"swa-tiny", 8, {WINDOW, WINDOW}},
               {"gemma-tiny", 4, {WINDOW, WINDOW, 0}}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    fixture fx;
    if (!CHECK(fixture_open_ub(&fx, cases[c].preset, cases[c].draft_max, 0, UBATCH, 42) == 0,
               "%s: generate", cases[c].preset))
      continue;
    const mkc_graph *g = &fx.g;
    size_t elems = 0;
    int ok = 1;
    for (int l = 0; l < g->n_layers; l++) {
      const mkc_node *nd = attention_of(g, l);
      int w = cases[c].windows[l], rows = w ? w + g->t_chunk : g->max_ctx;
      ok = ok && nd && nd->window == w && nd->kv_rows == rows;
      elems += nd ? 2 * (size_t)nd->kv_heads * rows * nd->head_dim : 0;
    }
    CHECK(ok && g->kv_bytes == 2 * elems,
          "%s, T <= %d, chunks <= %d: windows and rings as the pattern says (window + %d rows), "
          "%zu KV bytes",
          cases[c].preset, g->t_max, g->t_chunk, g->t_chunk, g->kv_bytes);
    CHECK(strstr(fx.src.source, "attention layer 0, window 16 (line") != NULL,
          "%s: the emitted stage names the window", cases[c].preset);
    fixture_close(&fx);
  }
}

/* The reference with the window against the same graph without it. */
static void oracle_masks(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "swa-tiny", 4, 0, 42) == 0, "swa-tiny: generate")) return;
  mkc_graph open = fx.g;
  open.nodes = malloc((size_t)fx.g.n_nodes * sizeof *open.nodes);
  memcpy(open.nodes, fx.g.nodes, (size_t)fx.g.n_nodes * sizeof *open.nodes);
  for (int i = 0; i < open.n_nodes; i++) open.nodes[i].window = 0;
  mkc_ref *windowed = mkc_ref_open(&fx.g, &fx.w), *full = mkc_ref_open(&open, &fx.w);
  double *a = malloc((size_t)fx.g.vocab * sizeof *a), *b = malloc((size_t)fx.g.vocab * sizeof *b);
  int same_before = 1, differ_after = 1, token = 1;
  for (int pos = 0; windowed && full && pos < 3 * WINDOW; pos++) {
    mkc_ref_step(windowed, token, a);
    mkc_ref_step(full, token, b);
    int same = memcmp(a, b, (size_t)fx.g.vocab * sizeof *a) == 0;
    if (pos < WINDOW)
      same_before &= same;
    else
      differ_after &= !same;
    token = mkc_argmax(a, fx.g.vocab);
  }
  CHECK(windowed && full && same_before,
        "reference: with and without the window, the logits of positions 0..%d are identical",
        WINDOW - 1);
  CHECK(windowed && full && differ_after,
        "reference: from position %d on, the window changes every position's logits", WINDOW);
  mkc_ref_close(windowed);
  mkc_ref_close(full);
  free(a);
  free(b);
  free(open.nodes);
  fixture_close(&fx);
}

/* Greedy decode of PROMPT + n_gen on a fresh session; generated count or -1. */
static int decode(const fixture *fx, enum mkc_backend_kind kind, int draft_max, int *out,
                  mkc_decode_stats *st) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  int n = s && mkc_decode(s, &fx->g, PROMPT, N_PROMPT, N_GEN, draft_max, out, st) == 0
              ? st->generated
              : -1;
  mkc_session_close(s);
  return n;
}

static void lossless(const char *preset) {
  int plain[N_GEN], out[N_GEN];
  mkc_decode_stats st;
  fixture fx;
  if (!CHECK(fixture_open_ub(&fx, preset, 8, 0, UBATCH, 42) == 0, "%s: generate for K <= 8",
             preset))
    return;
  int n = decode(&fx, test_backend(), 0, plain, &st);
  CHECK_INT(n, N_GEN, "%s: plain greedy decoding, %d tokens", preset, N_GEN);
  n = decode(&fx, MKC_BACKEND_REF, 0, out, &st);
  CHECK(n == N_GEN && first_difference(plain, out, N_GEN) < 0,
        "%s: plain greedy = the reference's (first difference %d)", preset,
        first_difference(plain, out, N_GEN));
  static const int ks[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; i++) {
    n = decode(&fx, test_backend(), ks[i], out, &st);
    int diff = n == N_GEN ? first_difference(plain, out, N_GEN) : 0;
    CHECK(diff < 0 && st.accepted > 0,
          "%s: K=%d: identical to plain greedy across the wrap (first difference %d; %ld "
          "drafted, %ld accepted)",
          preset, ks[i], diff, st.drafted, st.accepted);
  }
  fixture_close(&fx);
}

/* Every step offers t_max - 1 drafts the model will not take: each writes
 * rows past pos that alias the ring's oldest. Input for input, the kernel's
 * logits and choices are the reference's. */
static void rejected_drafts(const char *preset) {
  fixture fx;
  if (!CHECK(fixture_open_ub(&fx, preset, 4, 0, UBATCH, 42) == 0, "%s: generate", preset)) return;
  const mkc_graph *g = &fx.g;
  mkc_session *k = mkc_session_open(test_backend(), g, &fx.src, &fx.w, 3);
  mkc_session *r = mkc_session_open(MKC_BACKEND_REF, g, &fx.src, &fx.w, 0);
  double worst = 0;
  int same = 1, steps = 0, last = 1, rejected = 0;
  unsigned rng = 12345;
  while (k && r && mkc_session_pos(k) < 4 * WINDOW && steps < 200) {
    int in[MKC_T_CAP], T = g->t_max;
    in[0] = last;
    for (int t = 1; t < T; t++) in[t] = (int)((rng = rng * 1103515245u + 12345u) >> 16) % g->vocab;
    mkc_step_result a, b;
    if (mkc_session_step(k, in, T, 0, &a) != 0) break;
    mkc_ref_follow_kv(mkc_session_ref(r), mkc_session_kv(k));
    if (mkc_session_step(r, in, T, 0, &b) != 0) break;
    for (int t = 0; t < T; t++) {
      double e = rel_err(mkc_session_logits(k, t), mkc_session_logits(r, t), g->vocab);
      if (!(e <= worst)) worst = e;
    }
    same &= a.status == MKC_STATUS_OK && a.n_out == b.n_out &&
            first_difference(a.out, b.out, a.n_out) < 0 && mkc_session_pos(k) == mkc_session_pos(r);
    rejected += T - 1 - a.n_accepted;
    last = a.out[a.n_out - 1];
    steps++;
  }
  CHECK(k && r && mkc_session_pos(k) >= 4 * WINDOW && same,
        "%s: %d steps of %d inputs to position %d, %d drafts rejected: tokens and pos are the "
        "reference's",
        preset, steps, g->t_max, k ? mkc_session_pos(k) : -1, rejected);
  CHECK(worst <= TOL, "%s: and every input's logits within %g (worst %.3g)", preset, TOL, worst);
  const mkc_ref_kv_stats *kv = r ? mkc_ref_kv_check(mkc_session_ref(r)) : NULL;
  CHECK(kv && kv->checked > 0 && kv->mismatched == 0,
        "%s: the kernel's ring rows hold the reference's K/V (%ld values)%s%s", preset,
        kv ? kv->checked : 0, kv && kv->mismatched ? "; first mismatch: " : "",
        kv ? kv->first : "");
  mkc_session_close(k);
  mkc_session_close(r);
  fixture_close(&fx);
}

/* A fresh session's greedy continuation of hist[0..n) with drafts: n_gen tokens into out. */
static int fresh_decode(const fixture *fx, enum mkc_backend_kind kind, const int *hist, int n,
                        int n_gen, int *out) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  mkc_decode_stats st;
  mkc_decode_opts o = {.draft_max = 4};
  int rc = s ? mkc_decode_with(s, &fx->g, hist, n, n_gen, &o, out, &st) : -1;
  mkc_session_close(s);
  return rc == 0 && st.generated == n_gen ? 0 : -1;
}

/* Rewinds after plain steps: t_chunk + 1 positions back and no further. */
static void rewinds(const char *preset, enum mkc_backend_kind kind) {
  fixture fx;
  if (!CHECK(fixture_open_ub(&fx, preset, 4, 0, UBATCH, 42) == 0, "%s: generate", preset)) return;
  const mkc_graph *g = &fx.g;
  const char *bk = kind_name(kind);
  mkc_session *s = mkc_session_open(kind, g, &fx.src, &fx.w, 2);
  int hist[N_PROMPT + 64], out[64], want[64];
  mkc_decode_stats st;
  if (!CHECK(s && mkc_decode(s, g, PROMPT, N_PROMPT, 50, 0, out, &st) == 0, "%s: %s: decode",
             preset, bk))
    goto done;
  memcpy(hist, PROMPT, sizeof PROMPT);
  memcpy(hist + N_PROMPT, out, 50 * sizeof *out);
  int pos = mkc_session_pos(s), slack = g->t_chunk + 1;
  CHECK(mkc_session_can_rewind(s, pos - slack) && !mkc_session_can_rewind(s, pos - slack - 1) &&
            mkc_session_can_rewind(s, 0),
        "%s: %s: after plain steps a rewind reaches %d positions back (t_chunk + 1), not %d; to 0 "
        "always",
        preset, bk, slack, slack + 1);
  check_stderr_begin();
  int rc = mkc_session_rewind(s, pos - slack - 1);
  char *msg = check_stderr_end();
  CHECK(rc == -1 && strstr(msg, "sliding window needs the rows of positions") &&
            mkc_session_pos(s) == pos,
        "%s: %s: the rewind past that is refused with its reason; pos stays", preset, bk);
  free(msg);
  /* The furthest rewind, then decode on: as a fresh session on that prefix. */
  int target = pos - slack;
  mkc_decode_stats st_more;
  mkc_decode_opts o = {.draft_max = 4};
  rc = mkc_decode_more(s, g, hist, target + 1, target, 24, &o, out, &st_more);
  CHECK(rc == 0 && st_more.fed == 1 && fresh_decode(&fx, kind, hist, target + 1, 24, want) == 0 &&
            first_difference(out, want, 24) < 0,
        "%s: %s: rewound %d back, the continuation equals a fresh decode (fed %d)", preset, bk,
        slack, st_more.fed);
  /* Further back than the ring allows: mkc_decode_more feeds the history again. */
  target = mkc_session_pos(s) - 20;
  rc = mkc_decode_more(s, g, hist, target + 1, target, 24, &o, out, &st_more);
  CHECK(rc == 0 && st_more.fed == target + 1 &&
            fresh_decode(&fx, kind, hist, target + 1, 24, want) == 0 &&
            first_difference(out, want, 24) < 0,
        "%s: %s: 20 back: the whole history is fed again (%d tokens) and the continuation "
        "equals a fresh decode",
        preset, bk, st_more.fed);
done:
  mkc_session_close(s);
  fixture_close(&fx);
}

/* Snapshots every round of 8 tokens, merged into one of [0, pos): every row
 * of every position, though a ring holds 28. */
static void snapshots(const char *preset, enum mkc_backend_kind kind) {
  fixture fx;
  if (!CHECK(fixture_open_ub(&fx, preset, 4, 0, UBATCH, 42) == 0, "%s: generate", preset)) return;
  const mkc_graph *g = &fx.g;
  const char *bk = kind_name(kind);
  mkc_session *s = mkc_session_open(kind, g, &fx.src, &fx.w, 2);
  mkc_kv_snap *all = NULL, *late = NULL;
  int hist[160], out[64], want[64], n_hist = N_PROMPT, rounds = 0, ok = s != NULL;
  mkc_decode_stats st;
  mkc_decode_opts o = {.draft_max = 4};
  memcpy(hist, PROMPT, sizeof PROMPT);
  while (ok && n_hist < 80) {
    int pos = mkc_session_pos(s);
    ok = mkc_decode_more(s, g, hist, n_hist, pos, 8, &o, out, &st) == 0 && st.generated == 8;
    memcpy(hist + n_hist, out, 8 * sizeof *out);
    n_hist += 8;
    mkc_kv_snap *next = ok ? mkc_kv_snapshot(s, all ? mkc_kv_snapshot_to(all) : 0) : NULL;
    mkc_kv_snap *merged = all && next ? mkc_kv_merge(all, next) : next;
    if (all && next) mkc_kv_snapshot_free(next);
    mkc_kv_snapshot_free(all);
    all = merged;
    ok = ok && all;
    rounds++;
  }
  if (!CHECK(ok && mkc_kv_snapshot_from(all) == 0 && mkc_kv_snapshot_to(all) == n_hist - 1,
             "%s: %s: %d rounds of 8 tokens, a snapshot after each, merged: [0, %d)", preset, bk,
             rounds, n_hist - 1))
    goto done;
  late = mkc_kv_snapshot(s, 0);
  /* Another branch from 20: too far back for the ring, so it is fed whole. */
  int branch[64], target = 40;
  memcpy(branch, hist, 20 * sizeof *branch);
  for (int i = 0; i < 3; i++) branch[20 + i] = (hist[20 + i] + 5) % g->vocab;
  int rc = mkc_decode_more(s, g, branch, 23, 20, 40, &o, out, &st);
  CHECK(rc == 0 && st.fed == 23 && mkc_session_pos(s) >= target,
        "%s: %s: another branch from position 20, fed whole (%d tokens), to position %d", preset,
        bk, st.fed, mkc_session_pos(s));
  check_stderr_begin();
  rc = late ? mkc_kv_restore(s, late, target) : -2;
  char *msg = check_stderr_end();
  CHECK(rc == MKC_KV_REFUSED && strstr(msg, "sliding window needs the rows of positions [25, 40)"),
        "%s: %s: one late snapshot of [0, %d) cannot bring back position %d's window: refused",
        preset, bk, mkc_kv_snapshot_to(all), target);
  free(msg);
  rc = mkc_kv_restore(s, all, target);
  CHECK(rc == 0 && mkc_session_pos(s) == target &&
            first_difference(mkc_session_tokens(s), hist, target) < 0,
        "%s: %s: the merged snapshots restore position %d over the other branch", preset, bk,
        target);
  mkc_decode_stats st_more;
  rc = mkc_decode_more(s, g, hist, target + 1, target, 32, &o, out, &st_more);
  CHECK(rc == 0 && st_more.fed == 1 && fresh_decode(&fx, kind, hist, target + 1, 32, want) == 0 &&
            first_difference(out, want, 32) < 0 && first_difference(out, hist + target + 1, 32) < 0,
        "%s: %s: and decoding on from it (32 tokens, past the ring again) equals a fresh decode "
        "of the prefix and the first branch",
        preset, bk);
done:
  mkc_kv_snapshot_free(all);
  mkc_kv_snapshot_free(late);
  mkc_session_close(s);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  plan();
  oracle_masks();
  static const char *presets[] = {"swa-tiny", "gemma-tiny"};
  enum mkc_backend_kind kinds[] = {test_backend(), MKC_BACKEND_REF};
  for (int p = 0; p < 2; p++) {
    lossless(presets[p]);
    rejected_drafts(presets[p]);
    for (int k = 0; k < 2; k++) {
      rewinds(presets[p], kinds[k]);
      snapshots(presets[p], kinds[k]);
    }
  }
  return check_done();
}
