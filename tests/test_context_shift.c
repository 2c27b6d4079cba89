/* Context shift (mkc_decode_opts.shift, exec/context_shift.c): generation
 * goes on past a full context, and what follows each shift is exactly what a
 * fresh decode of the shortened history gives. The oracle decodes span by
 * span on the reference executor, each span a fresh session over the history
 * that llama.cpp's rule leaves (the first n_keep tokens, then the later half
 * of the cached rest), with no shift of its own; the session under test keeps
 * its first rows and re-feeds the rest, drafts (prompt lookup, rounds in the
 * kernel) on or off, and a sliding window's ring, which cannot rewind, starts
 * over. */
#include <stdlib.h>

#include "check.h"
#include "exec/decode.h"
#include "fixture.h"

#define CTX 40
#define N_GEN (3 * CTX + 7)

static const int PROMPT[] = {1, 7, 3, 9, 4, 1, 7, 3, 9, 2, 5, 8};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

/* The oracle's tokens for n_gen tokens with n_keep kept: each span a fresh
 * reference session (plain greedy, no shift) on the history so far, up to a
 * full cache. Returns the tokens written, and the shifts in *shifts. */
static int oracle(const fixture *fx, int n_keep, int n_discard, int n_gen, int *out, int *shifts) {
  int hist[CTX + 2], n_hist = N_PROMPT, done = 0;
  memcpy(hist, PROMPT, sizeof PROMPT);
  *shifts = 0;
  while (done < n_gen) {
    mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &fx->g, &fx->src, &fx->w, 1);
    mkc_decode_stats st;
    int room = CTX + 1 - n_hist, n = n_gen - done < room ? n_gen - done : room;
    int rc = s ? mkc_decode(s, &fx->g, hist, n_hist, n, 0, hist + n_hist, &st) : -1;
    mkc_session_close(s);
    if (rc != 0 || st.generated != n) return -1;
    memcpy(out + done, hist + n_hist, (size_t)n * sizeof *out);
    done += n;
    n_hist += n;
    if (done == n_gen) break;
    /* llama.cpp's shift: of the n_hist - 1 cached tokens, keep the first
     * n_keep and drop half of the rest, the older half (llama-server's
     * n_discard: that many, but never the whole rest) */
    int keep = n_keep, left = n_hist - 1 - keep, discard = left / 2;
    if (n_discard > 0) discard = n_discard < left - 1 ? n_discard : left - 1;
    for (int i = keep; i + discard < n_hist; i++) hist[i] = hist[i + discard];
    n_hist -= discard;
    ++*shifts;
  }
  return done;
}

typedef struct seen {
  int ids[N_GEN];
  int n, stop_at; /* stop_at > 0: on_token stops there */
} seen;

static int on_token(void *ctx, int id) {
  seen *t = ctx;
  if (t->n < N_GEN) t->ids[t->n] = id;
  t->n++;
  return t->stop_at > 0 && t->n >= t->stop_at;
}

static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* Decoding with the shift on the backend under test equals the oracle for
 * n_keep 0 and 5, and 5 with llama-server's n_discard 7, with K drafts and R
 * rounds per launch. */
static void matches_oracle(const char *preset, int K, int R) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, preset, 4, CTX, 42) == 0, "%s: generate with --ctx %d", preset, CTX))
    return;
  static const int keeps[] = {0, 5, 5}, discards[] = {0, 0, 7};
  for (int i = 0; i < 3; i++) {
    int want[N_GEN], out[N_GEN], shifts = 0;
    int n_want = oracle(&fx, keeps[i], discards[i], N_GEN, want, &shifts);
    if (!CHECK(n_want == N_GEN, "%s: the oracle decodes %d tokens in spans", preset, N_GEN))
      continue;
    mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
    seen t = {0};
    mkc_decode_opts o = {.draft_max = K,
                         .rounds = R,
                         .shift = 1,
                         .n_keep = keeps[i],
                         .n_discard = discards[i],
                         .on_token = on_token,
                         .ctx = &t};
    mkc_decode_stats st;
    int rc = s ? mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, N_GEN, &o, out, &st) : -1;
    int diff = rc == 0 ? first_difference(want, out, N_GEN) : -2;
    CHECK(rc == 0 && st.generated == N_GEN && diff < 0,
          "%s K=%d R=%d keep %d discard %d: %d tokens past a context of %d equal the oracle's "
          "(generated %d, "
          "first difference at %d)",
          preset, K, R, keeps[i], discards[i], N_GEN, CTX, rc == 0 ? st.generated : -1, diff);
    CHECK(rc == 0 && st.shifts == shifts && !st.ctx_full,
          "%s K=%d R=%d keep %d discard %d: %d shifts (the oracle's %d), ctx_full %d", preset, K, R,
          keeps[i], discards[i], rc == 0 ? st.shifts : -1, shifts, rc == 0 ? st.ctx_full : -1);
    CHECK(t.n == N_GEN && first_difference(want, t.ids, N_GEN) < 0,
          "%s K=%d R=%d keep %d discard %d: on_token heard the same %d tokens (%d)", preset, K, R,
          keeps[i], discards[i], N_GEN, t.n);
    CHECK(rc == 0 && st.shift_fed > 0 && st.fed == N_PROMPT,
          "%s K=%d R=%d keep %d discard %d: fed %d prompt tokens, then %d again after shifts",
          preset, K, R, keeps[i], discards[i], rc == 0 ? st.fed : -1, rc == 0 ? st.shift_fed : -1);
    mkc_session_close(s);
  }
  fixture_close(&fx);
}

/* No bound (n_gen < 0, out NULL): on_token's stop ends it, past two shifts. */
static void unbounded(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, CTX, 42) == 0, "tiny: generate with --ctx %d", CTX))
    return;
  int want[N_GEN], shifts;
  int n_want = oracle(&fx, 3, 0, N_GEN, want, &shifts);
  mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  seen t = {.stop_at = 2 * CTX + 3};
  mkc_decode_opts o = {.draft_max = 3, .shift = 1, .n_keep = 3, .on_token = on_token, .ctx = &t};
  mkc_decode_stats st;
  int rc = s ? mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, -1, &o, NULL, &st) : -1;
  CHECK(rc == 0 && n_want == N_GEN && st.stopped && st.generated == t.stop_at && t.n == t.stop_at &&
            first_difference(want, t.ids, t.n) < 0,
        "tiny: no bound: on_token's stop after %d tokens ends it, the oracle's tokens (generated "
        "%d, heard %d)",
        t.stop_at, rc == 0 ? st.generated : -1, t.n);
  mkc_session_close(s);
  s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  int out[4];
  rc = s ? mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, -1, &o, out, &st) : 0;
  CHECK(rc == -1, "tiny: no bound with a buffer to write to is refused");
  mkc_session_close(s);
  fixture_close(&fx);
}

/* A keep past the context is clamped so each shift drops a token; without
 * the shift the same decode stops at the full context. */
static void keep_clamped(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, CTX, 42) == 0, "tiny: generate with --ctx %d", CTX))
    return;
  mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  mkc_decode_opts o = {.draft_max = 2, .shift = 1, .n_keep = 1000};
  mkc_decode_stats st;
  int out[N_GEN];
  int rc = s ? mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, CTX + 10, &o, out, &st) : -1;
  CHECK(rc == 0 && st.generated == CTX + 10 && st.shifts > 1 && !st.ctx_full,
        "tiny: keep 1000 of %d: %d tokens in %d shifts", CTX, rc == 0 ? st.generated : -1,
        rc == 0 ? st.shifts : -1);
  mkc_session_close(s);
  s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  o.shift = 0;
  rc = s ? mkc_decode_with(s, &fx.g, PROMPT, N_PROMPT, CTX + 10, &o, out, &st) : -1;
  CHECK(rc == 0 && st.generated == CTX - N_PROMPT + 1 && st.ctx_full && st.shifts == 0,
        "tiny: no shift: %d tokens, then the context is full", CTX - N_PROMPT + 1);
  mkc_session_close(s);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  matches_oracle("tiny", 0, 1);
  matches_oracle("tiny", 4, 1);
  matches_oracle("tiny", 4, 4);
  matches_oracle("swa-tiny", 4, 1);
  unbounded();
  keep_clamped();
  return check_done();
}
