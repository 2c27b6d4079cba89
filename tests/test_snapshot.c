/* KV snapshots (exec/snapshot.h): a session that went down another branch
 * and restored a snapshot to an earlier position decodes exactly what a
 * fresh session decodes from that prefix (drafts on); merge(split(s, at))
 * gives s back byte for byte; every restore, merge and split that cannot be
 * honoured is refused with its reason and leaves the session as it was.
 * On the backend under test (cpu, or cuda with MKC_TEST_BACKEND=cuda) and
 * the ref backend, on tiny; SmolLM2-135M with MKC_TEST_DATA. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/snapshot.h"
#include "fixture.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"

#define N_MAX 512

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

/* The bytes of snap's rows, or NULL. */
static unsigned char *rows_of(const mkc_kv_snap *snap, size_t *bytes) {
  return snap ? mkc_kv_snapshot_read(snap, bytes) : NULL;
}

/* Whether two snapshots hold the same positions, tokens and bytes. */
static int same_snapshot(const mkc_kv_snap *a, const mkc_kv_snap *b) {
  size_t na = 0, nb = 0;
  unsigned char *ra = rows_of(a, &na), *rb = rows_of(b, &nb);
  int same = ra && rb && na == nb && memcmp(ra, rb, na) == 0 &&
             mkc_kv_snapshot_from(a) == mkc_kv_snapshot_from(b) &&
             mkc_kv_snapshot_to(a) == mkc_kv_snapshot_to(b) &&
             first_difference(mkc_kv_snapshot_tokens(a), mkc_kv_snapshot_tokens(b),
                              mkc_kv_snapshot_to(a)) < 0;
  free(ra);
  free(rb);
  return same;
}

/* The first `n` rows of snap (from its first position) as a new snapshot. */
static mkc_kv_snap *head_of(const mkc_kv_snap *snap, int n) {
  mkc_kv_snap *first = NULL, *second = NULL;
  mkc_kv_split(snap, mkc_kv_snapshot_from(snap) + n, &first, &second);
  mkc_kv_snapshot_free(second);
  return first;
}

/* Decode prompt + n_gen (history H), snapshot [from, pos), take another
 * branch from `branch` (other tokens overwrite the rows), restore the
 * snapshot to `target` and continue: the continuation must equal a fresh
 * session's decode of H[0..target] (the token at target included). */
static void restore_then_decode(const char *name, const fixture *fx, enum mkc_backend_kind kind,
                                const int *prompt, int n_prompt, int n_gen) {
  const mkc_graph *g = &fx->g;
  const char *bk = kind_name(kind);
  mkc_session *s = mkc_session_open(kind, g, &fx->src, &fx->w, 2);
  mkc_session *fresh = mkc_session_open(kind, g, &fx->src, &fx->w, 2);
  mkc_kv_snap *snap = NULL, *before = NULL, *after = NULL, *kept = NULL;
  int hist[N_MAX], other[N_MAX], more[N_MAX], once[N_MAX], out[N_MAX];
  mkc_decode_stats st, st_once;
  mkc_decode_opts o = {.draft_max = 4};
  if (!CHECK(s && fresh && mkc_decode_with(s, g, prompt, n_prompt, n_gen, &o, out, &st) == 0 &&
                 st.generated == n_gen,
             "%s: %s: decode %d + %d tokens with drafts", name, bk, n_prompt, n_gen))
    goto done;
  int n_hist = n_prompt + n_gen, from = n_prompt / 2, branch = from + 2;
  int target = n_prompt + n_gen / 2, n_more = n_gen / 2;
  memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
  memcpy(hist + n_prompt, out, (size_t)n_gen * sizeof *hist);
  CHECK(mkc_session_pos(s) == n_hist - 1 &&
            first_difference(mkc_session_tokens(s), hist, n_hist - 1) < 0,
        "%s: %s: the session's tokens are the %d processed", name, bk, n_hist - 1);
  snap = mkc_kv_snapshot(s, from);
  if (!CHECK(snap && mkc_kv_snapshot_to(snap) == n_hist - 1, "%s: %s: snapshot [%d, %d)", name, bk,
             from, n_hist - 1))
    goto done;
  kept = head_of(snap, target - from);

  /* Another branch: H up to `branch`, then other tokens, then what the model says. */
  memcpy(other, hist, (size_t)branch * sizeof *other);
  for (int i = 0; i < 3; i++) other[branch + i] = (hist[branch + i] + 7 + i) % g->vocab;
  int n_other = branch + 3;
  if (!CHECK(mkc_decode_more(s, g, other, n_other, branch, n_gen, &o, out, &st) == 0 &&
                 mkc_session_pos(s) >= target,
             "%s: %s: another branch from position %d, to position %d", name, bk, branch,
             mkc_session_pos(s)))
    goto done;
  before = mkc_kv_snapshot(s, from);
  mkc_kv_snap *before_head = before ? head_of(before, target - from) : NULL;
  CHECK(kept && before_head && !same_snapshot(kept, before_head),
        "%s: %s: the branch rewrote rows of [%d, %d)", name, bk, from, target);
  mkc_kv_snapshot_free(before_head);

  int rc = mkc_kv_restore(s, snap, target);
  CHECK(rc == 0 && mkc_session_pos(s) == target &&
            first_difference(mkc_session_tokens(s), hist, target) < 0,
        "%s: %s: restored to position %d (rc %d): pos and tokens are the first branch's", name, bk,
        target, rc);
  after = mkc_kv_snapshot(s, from);
  CHECK(kept && after && same_snapshot(kept, after),
        "%s: %s: the cache's rows [%d, %d) are the snapshot's, byte for byte", name, bk, from,
        target);

  mkc_decode_stats st_more;
  rc = mkc_decode_more(s, g, hist, target + 1, target, n_more, &o, more, &st_more);
  int rc2 = mkc_decode_with(fresh, g, hist, target + 1, n_more, &o, once, &st_once);
  int diff = first_difference(more, once, n_more);
  CHECK(rc == 0 && rc2 == 0 && st_more.generated == n_more && st_once.generated == n_more &&
            diff < 0,
        "%s: %s: restore to %d then decode %d = a fresh decode of that prefix (first difference "
        "%d; %ld + %ld drafts accepted)",
        name, bk, target, n_more, diff, st_more.accepted, st_once.accepted);
  CHECK_INT(st_more.fed, 1, "%s: %s: after the restore only the token at %d is fed", name, bk,
            target);
  CHECK(first_difference(more, hist + target + 1, n_hist - target - 1) < 0,
        "%s: %s: and it is the first branch's own continuation", name, bk);
done:
  mkc_kv_snapshot_free(snap);
  mkc_kv_snapshot_free(before);
  mkc_kv_snapshot_free(after);
  mkc_kv_snapshot_free(kept);
  mkc_session_close(s);
  mkc_session_close(fresh);
}

/* merge(split(s, at)) = s for every cut, ends included; the parts hold
 * their positions' rows. */
static void merge_split(const char *name, const fixture *fx, enum mkc_backend_kind kind) {
  const mkc_graph *g = &fx->g;
  const char *bk = kind_name(kind);
  mkc_session *s = mkc_session_open(kind, g, &fx->src, &fx->w, 2);
  int out[32];
  mkc_decode_stats st;
  if (!CHECK(s && mkc_decode(s, g, PROMPT, N_PROMPT, 20, 4, out, &st) == 0, "%s: %s: decode", name,
             bk)) {
    mkc_session_close(s);
    return;
  }
  int from = 3, to = mkc_session_pos(s);
  mkc_kv_snap *snap = mkc_kv_snapshot(s, from);
  int cuts[] = {from, from + 1, 11, to - 1, to}, all = 1;
  for (int i = 0; i < 5 && snap; i++) {
    mkc_kv_snap *a = NULL, *b = NULL, *m = NULL, *direct = NULL;
    int rc = mkc_kv_split(snap, cuts[i], &a, &b);
    if (rc == 0) m = mkc_kv_merge(a, b);
    int ok = rc == 0 && mkc_kv_snapshot_from(a) == from && mkc_kv_snapshot_to(a) == cuts[i] &&
             mkc_kv_snapshot_from(b) == cuts[i] && mkc_kv_snapshot_to(b) == to && m &&
             same_snapshot(m, snap);
    /* the second part is what a snapshot from the cut holds */
    direct = mkc_kv_snapshot(s, cuts[i]);
    ok = ok && direct && same_snapshot(b, direct);
    if (!ok) all = 0;
    CHECK(ok,
          "%s: %s: merge(split(s, %d)) = s [%d, %d), byte for byte; the second part = a "
          "snapshot from %d",
          name, bk, cuts[i], from, to, cuts[i]);
    mkc_kv_snapshot_free(a);
    mkc_kv_snapshot_free(b);
    mkc_kv_snapshot_free(m);
    mkc_kv_snapshot_free(direct);
  }
  CHECK(snap && all, "%s: %s: every cut merges back", name, bk);
  mkc_kv_snapshot_free(snap);
  mkc_session_close(s);
}

/* Runs call under a stderr capture: the message must contain `want`. */
#define REFUSED(expr, want, ...)                                                                   \
  do {                                                                                             \
    check_stderr_begin();                                                                          \
    int refused_ = (expr);                                                                         \
    char *msg_ = check_stderr_end();                                                               \
    CHECK(refused_ &&strstr(msg_, want) != NULL, __VA_ARGS__);                                     \
    free(msg_);                                                                                    \
  } while (0)

/* What cannot be honoured is refused with its reason, and changes nothing. */
static void refusals(const char *name, const fixture *fx, enum mkc_backend_kind kind) {
  const mkc_graph *g = &fx->g;
  const char *bk = kind_name(kind);
  mkc_session *s = mkc_session_open(kind, g, &fx->src, &fx->w, 2);
  mkc_session *other = mkc_session_open(kind, g, &fx->src, &fx->w, 2);
  int out[32], hist[64];
  mkc_decode_stats st;
  if (!CHECK(s && other && mkc_decode(s, g, PROMPT, N_PROMPT, 12, 4, out, &st) == 0 &&
                 mkc_decode(other, g, PROMPT, N_PROMPT, 4, 0, out + 16, &st) == 0,
             "%s: %s: decode", name, bk)) {
    mkc_session_close(s);
    mkc_session_close(other);
    return;
  }
  int pos = mkc_session_pos(s), n_hist = N_PROMPT + 12;
  memcpy(hist, PROMPT, sizeof PROMPT);
  memcpy(hist + N_PROMPT, out, 12 * sizeof *hist);
  mkc_kv_snap *snap = mkc_kv_snapshot(s, 4), *tail = mkc_kv_snapshot(s, 8);
  mkc_kv_snap *head = snap ? head_of(snap, 2) : NULL; /* [4, 6) */
  REFUSED(mkc_kv_snapshot(s, pos + 1) == NULL, "holds positions [0, ",
          "%s: %s: a snapshot from past the counter is refused", name, bk);
  REFUSED(mkc_kv_snapshot(s, -1) == NULL, "cannot snapshot",
          "%s: %s: a snapshot from a negative position is refused", name, bk);
  REFUSED(mkc_kv_restore(s, snap, pos + 1) == MKC_KV_REFUSED, "ends at position",
          "%s: %s: a restore past the snapshot's end is refused", name, bk);
  REFUSED(mkc_kv_restore(s, tail, 6) == MKC_KV_REFUSED, "first position is 8",
          "%s: %s: a restore before the snapshot's first position is refused", name, bk);
  REFUSED(mkc_kv_restore(other, snap, 6) == MKC_KV_REFUSED, "another session's",
          "%s: %s: another session's snapshot is refused", name, bk);
  REFUSED(mkc_kv_merge(snap, tail) == NULL, "does not start where the first ends",
          "%s: %s: merging overlapping snapshots is refused", name, bk);
  REFUSED(mkc_kv_merge(tail, head) == NULL, "does not start where the first ends",
          "%s: %s: merging out of order is refused", name, bk);
  mkc_kv_snap *a = NULL, *b = NULL;
  REFUSED(mkc_kv_split(snap, 3, &a, &b) == -1 && !a && !b, "cannot split",
          "%s: %s: a split outside the snapshot is refused", name, bk);
  CHECK_INT(mkc_session_pos(s), pos, "%s: %s: the refusals left pos as it was", name, bk);

  /* Back to 5, then forward again on other tokens: the snapshot's rows past 5 are not this
   * session's any more, but its prefix [0, 4) is: restoring is allowed. */
  mkc_session_rewind(s, 5);
  REFUSED(mkc_kv_restore(s, snap, 9) == MKC_KV_REFUSED, "a restore goes back",
          "%s: %s: a restore past the session's position is refused", name, bk);
  int turn[] = {hist[0], hist[1], hist[2], hist[3], hist[4], 9, 9, 9, 9, 9, 9};
  CHECK(mkc_decode_more(s, g, turn, 11, 5, 4, &(mkc_decode_opts){.draft_max = 4}, out, &st) == 0,
        "%s: %s: another branch from 5", name, bk);
  CHECK_INT(mkc_kv_restore(s, snap, 9), 0, "%s: %s: a restore over another branch is allowed", name,
            bk);
  /* Back to 2 and on other tokens: positions [2, 4), which the snapshot continues, changed. */
  mkc_session_rewind(s, 2);
  int early[] = {hist[0], hist[1], 5, 5, 5, 5, 5, 5, 5, 5, 5, 5};
  CHECK(mkc_decode_more(s, g, early, 12, 2, 4, &(mkc_decode_opts){.draft_max = 4}, out, &st) == 0,
        "%s: %s: a branch from 2", name, bk);
  int at = mkc_session_pos(s);
  REFUSED(mkc_kv_restore(s, snap, 9) == MKC_KV_REFUSED, "token at position 2",
          "%s: %s: a snapshot whose prefix the session no longer holds is refused", name, bk);
  CHECK_INT(mkc_session_pos(s), at, "%s: %s: and pos stays", name, bk);
  /* a merge of snapshots that continue other tokens */
  mkc_kv_snap *other_tail = mkc_kv_snapshot(s, 6);
  REFUSED(mkc_kv_merge(head, other_tail) == NULL, "continues other tokens",
          "%s: %s: merging snapshots of two branches is refused", name, bk);
  (void)n_hist;
  mkc_kv_snapshot_free(other_tail);
  mkc_kv_snapshot_free(snap);
  mkc_kv_snapshot_free(tail);
  mkc_kv_snapshot_free(head);
  mkc_session_close(s);
  mkc_session_close(other);
}

static void presets(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, 0, 42) == 0, "tiny: fixture")) return;
  enum mkc_backend_kind kinds[] = {test_backend(), MKC_BACKEND_REF};
  for (int k = 0; k < 2; k++) {
    restore_then_decode("tiny", &fx, kinds[k], PROMPT, N_PROMPT, 48);
    merge_split("tiny", &fx, kinds[k]);
    refusals("tiny", &fx, kinds[k]);
  }
  fixture_close(&fx);
}

/* SmolLM2-135M on a text prompt, with the test data (tests/data/fetch.sh). */
static void smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0 && mf.tok, "SmolLM2: open with its tokenizer"))
    return;
  static const char text[] = "The capital of France is";
  int *ids = NULL;
  int n = mkc_tokenizer_encode(mf.tok, text, strlen(text), mkc_tokenizer_add_bos(mf.tok), 1, &ids);
  fixture fx;
  memset(&fx, 0, sizeof fx);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .model = &mf.desc, .draft_max = 4, .max_ctx = 96};
  if (CHECK(n > 0 && mkc_codegen(&o, &fx.g, &fx.src) == 0 &&
                mkc_model_file_weights(&mf, &fx.g, &fx.w) == 0,
            "SmolLM2: generate its kernel, load its weights"))
    restore_then_decode("SmolLM2", &fx, test_backend(), ids, n, 16);
  fixture_close(&fx);
  free(ids);
  mkc_model_file_close(&mf);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  presets();
  smollm2();
  return check_done();
}
