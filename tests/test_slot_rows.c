/* A slot's KV rows out of and into a slot pool (exec/slots.h's read_rows,
 * write_rows and forget; exec/slot_file.h, llama-server's slot files on
 * mkc serve --parallel). On the cpu backend, or the GPU with
 * MKC_TEST_BACKEND=cuda. The oracle is a plain session of the same preset
 * and weights (its kernel checked against the reference executor in
 * test_kernel.c), fed the slot's inputs: its snapshot's rows are the ones a
 * slot must give, byte for byte (a slot stepping alone is the plain kernel
 * bit for bit, test_slots.c), and the plain greedy continuation is what a
 * restored slot must go on to decode.
 *   - a paged slot whose pages lie between another slot's, and a slot of
 *     whole caches: its rows are the plain session's;
 *   - the rows written into another pool's slot read back the same, the
 *     slot holds the pages they need, its full pages are shared by a later
 *     prompt, and it decodes what the first pool's slot decodes, logits bit
 *     for bit, the plain greedy tokens;
 *   - a file round trip (mkc_slot_file_save, _restore) and its refusals;
 *   - forget: no later prompt shares the slot's pages;
 *   - log-probabilities (mkc_slots_logprobs): a slot stepping alone gives
 *     the plain session's bit for bit; two slots in one step, one with
 *     drafts, each its session's top ids, and values within twice the step's
 *     largest logit difference (log-softmax moves at most that much);
 *   - refusals: rows of another size, a token outside the vocabulary, more
 *     positions than the context, a pool out of pages; each leaves the slot
 *     empty. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/kv_rows.h"
#include "check.h"
#include "exec/kv_file.h"
#include "exec/slot_file.h"
#include "exec/slots.h"
#include "exec/snapshot.h"
#include "slot_kernels.h"

#define N_PROMPT 40
#define CHUNK 8
#define N_DECODE 10
#define N_MORE 8

/* Feeds n tokens to slot s alone in chunks of CHUNK; the last step's token in *next. 0 or -1. */
static int feed(mkc_slots *p, int s, const int *tokens, int n, int *next) {
  mkc_step_result r = {0};
  for (int at = 0; at < n; at += CHUNK) {
    int len = n - at < CHUNK ? n - at : CHUNK;
    if (mkc_slots_set_inputs(p, s, tokens + at, len, len - 1) != 0 || mkc_slots_step(p) != 0 ||
        !mkc_slots_result(p, s, &r) || r.status != MKC_STATUS_OK)
      return -1;
  }
  *next = r.out[0];
  return 0;
}

/* n greedy steps of slot s alone from token *last: the tokens fed to out, the last chosen in
 * *last, and the logits after each step into logits (n * vocab, NULL: not kept). 0 or -1. */
static int decode(mkc_slots *p, int s, int *last, int n, int *out, float *logits) {
  int vocab = mkc_slots_graph(p)->vocab;
  for (int i = 0; i < n; i++) {
    mkc_step_result r;
    out[i] = *last;
    if (mkc_slots_set_inputs(p, s, last, 1, 0) != 0 || mkc_slots_step(p) != 0 ||
        !mkc_slots_result(p, s, &r) || r.status != MKC_STATUS_OK)
      return -1;
    const float *l = mkc_slots_logits(p, s, 0);
    if (!l) return -1;
    if (logits) memcpy(logits + (size_t)i * vocab, l, (size_t)vocab * sizeof *l);
    *last = r.out[0];
  }
  return 0;
}

/* The plain session's rows of tokens[0..n), the first N_PROMPT fed in chunks as feed() does
 * and the rest one a step: malloc'd, *bytes of them; NULL on failure. */
static void *plain_rows(kernel *plain, const int *tokens, int n, size_t *bytes) {
  mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  void *rows = NULL;
  int ok = s != NULL;
  mkc_step_result r;
  for (int at = 0; ok && at < n;) {
    int len = at < N_PROMPT ? (N_PROMPT - at < CHUNK ? N_PROMPT - at : CHUNK) : 1;
    ok = mkc_session_step(s, tokens + at, len, len - 1, &r) == 0 && r.status == MKC_STATUS_OK;
    at += len;
  }
  mkc_kv_snap *snap = ok ? mkc_kv_snapshot(s, 0) : NULL;
  if (snap) rows = mkc_kv_snapshot_read(snap, bytes);
  mkc_kv_snapshot_free(snap);
  mkc_session_close(s);
  return rows;
}

static void make_prompt(int *t, int n, int first) {
  for (int i = 0; i < n; i++) t[i] = (first + 37 * i + i * i) % 256;
}

/* Slot s's and session q's log-probabilities of their last step's n emitted tokens: 1 when the
 * ids are the same and the values within tol (0: bit for bit); the largest difference in *worst. */
static int same_logprobs(mkc_slots *p, int s, mkc_session *q, int n, double tol, double *worst) {
  for (int i = 0; i < n; i++) {
    float lp_a, lp_b, a[MKC_LOGPROBS_MAX], b[MKC_LOGPROBS_MAX];
    int ia[MKC_LOGPROBS_MAX], ib[MKC_LOGPROBS_MAX];
    if (mkc_slots_logprobs(p, s, i, &lp_a, ia, a) != 0 ||
        mkc_session_logprobs(q, i, &lp_b, ib, b) != 0 || memcmp(ia, ib, 5 * sizeof *ia) != 0)
      return 0;
    double d = fabs(lp_a - lp_b);
    for (int k = 0; k < 5; k++) d = fmax(d, fabs(a[k] - b[k]));
    *worst = fmax(*worst, d);
    if (tol == 0 ? (memcmp(a, b, 5 * sizeof *a) != 0 || lp_a != lp_b) : d > tol) return 0;
  }
  return 1;
}

/* The largest difference between slot s's logits after its input t and session q's. */
static double logits_apart(mkc_slots *p, int s, mkc_session *q, int t, int vocab) {
  const float *a = mkc_slots_logits(p, s, t), *b = mkc_session_logits(q, t);
  double d = a && b ? 0 : INFINITY;
  for (int i = 0; a && b && i < vocab; i++) d = fmax(d, fabs(a[i] - b[i]));
  return d;
}

/* Log-probabilities on slots 2 and 5 of a paged pool, each beside a plain session fed its
 * inputs: alone, then together in one step (slot 2 with two right drafts). */
static void logprobs(kernel *plain, kernel *pk) {
  mkc_slots *p = mkc_slots_open(test_backend(), &pk->g, &pk->src, &pk->w, BLOCKS);
  mkc_session *q[2] = {mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS),
                       mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS)};
  int slot[2] = {2, 5}, len[2] = {30, 21}, prompt[2][30], last[2], greedy[8];
  mkc_sampling o = {.top_p = 1.0f, .repeat_penalty = 1.0f, .logprobs = 5};
  int ok = p && q[0] && q[1];
  mkc_step_result r;
  for (int k = 0; ok && k < 2; k++) {
    make_prompt(prompt[k], len[k], 40 + k);
    ok = mkc_slots_set_sampling(p, slot[k], &o) == 0 && mkc_session_set_sampling(q[k], &o) == 0 &&
         feed(p, slot[k], prompt[k], len[k], &last[k]) == 0;
    for (int at = 0; ok && at < len[k]; at += CHUNK) {
      int n = len[k] - at < CHUNK ? len[k] - at : CHUNK;
      ok = mkc_session_step(q[k], prompt[k] + at, n, n - 1, &r) == 0;
    }
  }
  /* alone: slot 2, three steps */
  double worst = 0;
  int alone = ok;
  for (int i = 0; alone && i < 3; i++) {
    int in = last[0], out;
    alone = decode(p, slot[0], &last[0], 1, &out, NULL) == 0 &&
            mkc_session_step(q[0], &in, 1, 0, &r) == 0 && r.out[0] == last[0] &&
            same_logprobs(p, slot[0], q[0], 1, 0, &worst);
  }
  CHECK(alone, "log-probabilities: a slot stepping alone gives its session's top 5 bit for bit");
  /* together: slot 2 its last token and the next two greedy ones as drafts, slot 5 one token */
  ok = alone && greedy_of(plain, prompt[0], len[0], greedy, 6) == 0 && greedy[3] == last[0];
  int in2[3] = {greedy[3], greedy[4], greedy[5]}, in5 = last[1];
  ok = ok && mkc_slots_set_sampling(p, 0, &o) == 0; /* slot 0 asks too, and sits the step out */
  ok = ok && mkc_slots_set_inputs(p, slot[0], in2, 3, 0) == 0 &&
       mkc_slots_set_inputs(p, slot[1], &in5, 1, 0) == 0 && mkc_slots_step(p) == 0;
  mkc_step_result r2, r5, s2, s5;
  ok = ok && mkc_slots_result(p, slot[0], &r2) && mkc_slots_result(p, slot[1], &r5) &&
       mkc_session_step(q[0], in2, 3, 0, &s2) == 0 &&
       mkc_session_step(q[1], &in5, 1, 0, &s5) == 0 && r2.n_out == 3 && s2.n_out == 3 &&
       r5.n_out == 1 && memcmp(r2.out, s2.out, 3 * sizeof *r2.out) == 0 && r5.out[0] == s5.out[0];
  double apart = 0;
  for (int t = 0; ok && t < 3; t++)
    apart = fmax(apart, logits_apart(p, slot[0], q[0], t, pk->g.vocab));
  apart = fmax(apart, ok ? logits_apart(p, slot[1], q[1], 0, pk->g.vocab) : INFINITY);
  double tol = 2 * apart + 1e-6; /* float rounding of the log-softmax itself */
  worst = 0;
  CHECK(ok && same_logprobs(p, slot[0], q[0], 3, tol, &worst) &&
            same_logprobs(p, slot[1], q[1], 1, tol, &worst),
        "two slots in one step (3 emitted on slot 2, 1 on slot 5): each its session's top 5 ids, "
        "values %.2g apart (logits %.2g apart)",
        worst, apart);
  check_stderr_begin();
  float lp, lps[MKC_LOGPROBS_MAX];
  int ids[MKC_LOGPROBS_MAX];
  int none = mkc_slots_logprobs(p, slot[1], 1, &lp, ids, lps); /* it emitted one */
  int other = mkc_slots_logprobs(p, 0, 0, &lp, ids, lps);      /* it sat out */
  char *err = check_stderr_end();
  CHECK(none == -1 && other == -1 && err &&
            strstr(err, "slot 5: no log-probabilities for emitted token 1 (logprobs 5)") &&
            strstr(err, "slot 0: no log-probabilities for emitted token 0 (logprobs 5)"),
        "no log-probabilities past a slot's emitted tokens, nor for a slot that sat out");
  free(err);
  mkc_session_close(q[0]);
  mkc_session_close(q[1]);
  mkc_slots_close(p);
}

/* A slot of whole caches (no page table): its rows are the plain session's. */
static void whole_caches(kernel *plain) {
  kernel wk;
  if (!CHECK(kernel_open(&wk, SLOTS) == 0, "generate tiny, %d slots of whole caches", SLOTS))
    return;
  mkc_slots *p = mkc_slots_open(test_backend(), &wk.g, &wk.src, &wk.w, BLOCKS);
  int prompt[N_PROMPT], fed[N_DECODE], last, held[N_PROMPT + N_DECODE];
  make_prompt(prompt, N_PROMPT, 11);
  size_t bytes = 0, want_bytes = 0;
  int ok = p && feed(p, 4, prompt, N_PROMPT, &last) == 0 &&
           decode(p, 4, &last, N_DECODE, fed, NULL) == 0;
  void *rows = ok ? mkc_slots_read_rows(p, 4, &bytes) : NULL;
  memcpy(held, prompt, sizeof prompt);
  memcpy(held + N_PROMPT, fed, sizeof fed);
  void *want = plain_rows(plain, held, N_PROMPT + N_DECODE, &want_bytes);
  CHECK(ok && rows && want && bytes == want_bytes && memcmp(rows, want, bytes) == 0 &&
            mkc_slots_pos(p, 4) == N_PROMPT + N_DECODE,
        "whole caches: slot 4's rows of %d positions are the plain session's (%zu bytes)",
        N_PROMPT + N_DECODE, bytes);
  free(rows);
  free(want);
  mkc_slots_close(p);
  kernel_close(&wk);
}

/* Refusals of write_rows on p's slot 2, each leaving it empty; a pool out of pages. */
static void refusals(mkc_slots *p, const int *tokens, const void *rows, size_t bytes, int n) {
  const mkc_graph *g = mkc_slots_graph(p);
  int bad[N_PROMPT + N_DECODE];
  memcpy(bad, tokens, (size_t)n * sizeof *bad);
  bad[7] = g->vocab;
  struct {
    const char *what, *msg;
    const int *tokens;
    int n;
    size_t bytes;
  } cases[] = {
      {"rows of another size", "bytes are not the rows of", tokens, n, bytes - 1},
      {"a token outside the vocabulary", "token 256 (position 7) is outside", bad, n, bytes},
      {"more positions than the context", "do not fit a context of 256", tokens, MAX_CTX + 1,
       bytes},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int before = mkc_slots_pages_held(p);
    check_stderr_begin();
    int rc = mkc_slots_write_rows(p, 2, cases[i].tokens, cases[i].n, rows, cases[i].bytes);
    char *err = check_stderr_end();
    CHECK(rc == -1 && err && strstr(err, cases[i].msg) && mkc_slots_pos(p, 2) == 0 &&
              mkc_slots_pages_held(p) == before,
          "write_rows refuses %s (\"%s\"), the slot left empty", cases[i].what, cases[i].msg);
    free(err);
  }
  /* 48 pages: three slots of 256 positions hold them all; a fourth finds none */
  size_t full = mkc_kv_store_bytes(g, MAX_CTX);
  unsigned char *zeros = calloc(1, full);
  int *ids = calloc(MAX_CTX, sizeof *ids);
  int ok = zeros && ids;
  for (int s = 3; ok && s < 6; s++) {
    ids[0] = s; /* each slot its own first page */
    ok = mkc_slots_write_rows(p, s, ids, MAX_CTX, zeros, full) == 0;
  }
  check_stderr_begin();
  int rc = ok ? mkc_slots_write_rows(p, 6, ids, 20, zeros, mkc_kv_store_bytes(g, 20)) : 0;
  char *err = check_stderr_end();
  CHECK(ok && mkc_slots_pages_held(p) == 48 && rc == -1 && err &&
            strstr(err, "all 48 pages of the pool are held") && mkc_slots_pos(p, 6) == 0,
        "three slots of %d positions hold all 48 pages; a fourth is refused, left empty", MAX_CTX);
  free(err);
  for (int s = 3; s < 6; s++) mkc_slots_clear(p, s);
  free(zeros);
  free(ids);
}

int main(void) {
  kernel plain, pk;
  slot_kernels_one_grid();
  if (!CHECK(kernel_open(&plain, 0) == 0 && kernel_open_paged(&pk, SLOTS, 48) == 0,
             "generate tiny: plain, and %d slots on 48 pages", SLOTS))
    return check_done();
  if (test_skip_without_gpu()) return 0;
  int vocab = pk.g.vocab;
  mkc_slots *a = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  mkc_slots *b = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  if (!CHECK(a && b, "open two pools of paged slots")) return check_done();

  /* slot 3's pages between slot 0's: 20 of 0's, 40 of 3's, 13 of 0's, 10 of 3's */
  int other[20], prompt[N_PROMPT], last0 = 0, last3 = 0, fed0[13] = {0}, fed3[N_DECODE] = {0};
  make_prompt(other, 20, 5);
  make_prompt(prompt, N_PROMPT, 9);
  int ok = feed(a, 0, other, 20, &last0) == 0 && feed(a, 3, prompt, N_PROMPT, &last3) == 0 &&
           decode(a, 0, &last0, 13, fed0, NULL) == 0 &&
           decode(a, 3, &last3, N_DECODE, fed3, NULL) == 0;
  int n = N_PROMPT + N_DECODE, held[N_PROMPT + N_DECODE];
  memcpy(held, prompt, sizeof prompt);
  memcpy(held + N_PROMPT, fed3, sizeof fed3);
  size_t bytes = 0, want_bytes = 0;
  void *rows = ok ? mkc_slots_read_rows(a, 3, &bytes) : NULL;
  void *want = plain_rows(&plain, held, n, &want_bytes);
  CHECK(ok && rows && want && bytes == want_bytes && bytes == mkc_kv_store_bytes(&pk.g, n) &&
            memcmp(rows, want, bytes) == 0 && mkc_slots_pos(a, 3) == n &&
            memcmp(mkc_slots_tokens(a, 3), held, sizeof held) == 0,
        "paged, its pages between another slot's: slot 3's rows of %d positions are the plain "
        "session's (%zu bytes, the history too)",
        n, bytes);

  /* into another pool's slot 5: the same rows back, the pages they need, shared by a prompt */
  int wrote = rows ? mkc_slots_write_rows(b, 5, held, n, rows, bytes) : -1;
  size_t back_bytes = 0;
  void *back = wrote == 0 ? mkc_slots_read_rows(b, 5, &back_bytes) : NULL;
  int pages = (n + MKC_KV_PAGE - 1) / MKC_KV_PAGE;
  CHECK(wrote == 0 && back && back_bytes == bytes && memcmp(back, rows, bytes) == 0 &&
            mkc_slots_pos(b, 5) == n && mkc_slots_pages_held(b) == pages &&
            mkc_slots_kv_used(b, 5) == (size_t)pages * (pk.g.kv_bytes / pk.g.kv_pages),
        "written into another pool's slot 5: read back the same, pos %d, %d pages held", n, pages);
  free(back);
  /* slot 1 shares them, then computes 20 positions more (one full page past them) and lets go:
   * that page is kept, indexed under the restored ones */
  int longer[N_PROMPT + N_DECODE + 18], next1;
  memcpy(longer, held, sizeof held);
  for (int i = n; i < n + 18; i++) longer[i] = (5 * i + 1) % 256;
  int shared = mkc_slots_share(b, 1, longer, n + 18);
  int held_then = mkc_slots_pages_held(b);
  ok = shared > 0 && feed(b, 1, longer + shared, n + 18 - shared, &next1) == 0 &&
       mkc_slots_pos(b, 1) == n + 18 && mkc_slots_clear(b, 1) == 0;
  CHECK(ok && shared == n / MKC_KV_PAGE * MKC_KV_PAGE && held_then == pages &&
            mkc_slots_pages_held(b) == pages && mkc_slots_pages_kept(b) == 1,
        "a later prompt beginning with them shares the %d positions of their full pages (%d), "
        "holding no page more; its own next full page is kept when it lets go",
        n / MKC_KV_PAGE * MKC_KV_PAGE, shared);

  /* both slots decode on alike: logits bit for bit, the plain greedy tokens */
  int greedy[1 + N_DECODE + N_MORE], more_a[N_MORE], more_b[N_MORE], last_b = last3;
  float *la = malloc((size_t)N_MORE * vocab * sizeof *la);
  float *lb = malloc((size_t)N_MORE * vocab * sizeof *lb);
  ok = la && lb && greedy_of(&plain, prompt, N_PROMPT, greedy, 1 + N_DECODE + N_MORE) == 0 &&
       decode(a, 3, &last3, N_MORE, more_a, la) == 0 &&
       decode(b, 5, &last_b, N_MORE, more_b, lb) == 0;
  CHECK(ok && memcmp(fed3, greedy, sizeof fed3) == 0 &&
            memcmp(more_a, more_b, sizeof more_a) == 0 &&
            memcmp(more_b, greedy + N_DECODE, sizeof more_b) == 0 && last_b == last3 &&
            last_b == greedy[N_DECODE + N_MORE] &&
            memcmp(la, lb, (size_t)N_MORE * vocab * sizeof *la) == 0,
        "the restored slot decodes %d more steps as the first pool's: logits bit for bit, the "
        "plain greedy tokens",
        N_MORE);
  free(la);
  free(lb);

  /* forget: slot 5's pages leave the index */
  ok = mkc_slots_forget(b, 5) == 0;
  CHECK(ok && mkc_slots_pos(b, 5) == 0 && mkc_slots_share(b, 1, longer, n + 18) == 0 &&
            mkc_slots_pages_held(b) == 0 && mkc_slots_pages_kept(b) == 0,
        "forgotten: no page held, the kept page under them gone too, and the prompt shares "
        "nothing");

  /* a file round trip, and its refusals */
  char dir[] = "/tmp/mkc_slot_rows_XXXXXX", path[64], other_path[80];
  size_t written = 0, got = 0;
  char why[256];
  int saved = -1, restored = -1;
  if (mkdtemp(dir)) {
    snprintf(path, sizeof path, "%s/slot.bin", dir);
    saved = mkc_slot_file_save(a, 3, 77, path, &written, why, sizeof why);
    restored = mkc_slot_file_restore(b, 6, 77, path, &got, why, sizeof why);
  }
  back = restored > 0 ? mkc_slots_read_rows(b, 6, &back_bytes) : NULL;
  int m = n + N_MORE;
  void *now_a = saved > 0 ? mkc_slots_read_rows(a, 3, &bytes) : NULL;
  CHECK(saved == m && restored == m && written == got &&
            written == mkc_kv_file_bytes(0, m, mkc_kv_store_bytes(&pk.g, m)) && back && now_a &&
            back_bytes == bytes && memcmp(back, now_a, bytes) == 0 &&
            memcmp(mkc_slots_tokens(b, 6), mkc_slots_tokens(a, 3), (size_t)m * sizeof(int)) == 0,
        "a slot file: %d positions saved (%zu bytes) and restored into another slot, rows and "
        "tokens the same",
        m, written);
  free(back);
  free(now_a);
  if (saved > 0) {
    int rc = mkc_slot_file_restore(b, 6, 78, path, &got, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "another model or kernel") && mkc_slots_pos(b, 6) == 0,
          "restore: another model's id refused (%s), the slot empty", why);
    int ring = 3, ids[2] = {1, 2};
    size_t two = mkc_kv_store_bytes(&pk.g, 2);
    void *z = calloc(1, two);
    snprintf(other_path, sizeof other_path, "%s/rings.bin", dir);
    rc = z && mkc_kv_file_write(other_path, 77, &ring, 1, ids, 2, z, two) == 0
             ? mkc_slot_file_restore(b, 6, 77, other_path, &got, why, sizeof why)
             : 0;
    CHECK(rc == -1 && strstr(why, "last rows of 1 sliding window(s)"),
          "restore: a file of rings refused (%s)", why);
    ids[1] = vocab + 5;
    rc = z && mkc_kv_file_write(other_path, 77, NULL, 0, ids, 2, z, two) == 0
             ? mkc_slot_file_restore(b, 6, 77, other_path, &got, why, sizeof why)
             : 0;
    CHECK(rc == -1 && strstr(why, "token 261 (position 1) is not in the vocabulary"),
          "restore: a token outside the vocabulary refused (%s)", why);
    rc = z && mkc_kv_file_write(other_path, 77, NULL, 0, ids, 1, z, two) == 0
             ? mkc_slot_file_restore(b, 6, 77, other_path, &got, why, sizeof why)
             : 0;
    CHECK(rc == -1 && strstr(why, "bytes of rows are not this kernel's"),
          "restore: rows of another size refused (%s)", why);
    snprintf(other_path, sizeof other_path, "%s/none.bin", dir);
    rc = mkc_slot_file_restore(b, 6, 77, other_path, &got, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "No such file"), "restore: no file (%s)", why);
    free(z);
    unlink(path);
    snprintf(other_path, sizeof other_path, "%s/rings.bin", dir);
    unlink(other_path);
    rmdir(dir);
  }

  refusals(b, held, rows, mkc_kv_store_bytes(&pk.g, n), n);
  free(rows);
  free(want);
  mkc_slots_close(a);
  mkc_slots_close(b);
  logprobs(&plain, &pk);
  whole_caches(&plain);
  kernel_close(&pk);
  kernel_close(&plain);
  return check_done();
}
