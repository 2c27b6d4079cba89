/* A prompt's KV rows on disk (exec/kv_file.h, run --prompt-cache): a fresh
 * session that reads a saved prompt's rows and decodes a longer prompt
 * gives exactly what a fresh session decoding it whole gives, and feeds only
 * the tokens past what it read; a file of another model, a file cut short,
 * or another backend's rows is not used (a warning, 0 loaded), never a
 * crash. Sliding windows (swa-tiny, gemma-tiny) too, with their rings'
 * first positions, where the prompt needs no rows older than those. A whole session written and
 * read back (a server's slot file: mkc_kv_write, mkc_kv_read) continues as the session it was saved
 * from, its token history its own; a file it cannot use is refused with why. On the backend under
 * test (cpu, or cuda with MKC_TEST_BACKEND=cuda) and the ref backend, on tiny. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/decode.h"
#include "exec/kv_file.h"
#include "fixture.h"
#include "scratch.h"
#include "util/files.h"

#define N_GEN 24
#define MODEL 0x5eedull

static const int PROMPT[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
#define N_SAVED 9 /* the first prompt: PROMPT[0..9) */
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

static const char *kind_name(enum mkc_backend_kind kind) {
  return kind == MKC_BACKEND_REF ? "ref" : kind == MKC_BACKEND_CUDA ? "cuda" : "cpu";
}

/* Decodes PROMPT[0..n) from a fresh session, reading path first when given; the tokens in
 * out, the loaded count in *loaded, the stats in *st. 0 or -1. */
static const mkc_sampling *sampling; /* NULL: greedy */

static int decode(const fixture *fx, enum mkc_backend_kind kind, int n, const char *path,
                  int *loaded, int *out, mkc_decode_stats *st) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  mkc_decode_opts o = {.draft_max = 2};
  if (s && sampling && mkc_session_set_sampling(s, sampling) != 0) {
    mkc_session_close(s);
    return -1;
  }
  *loaded = s && path ? mkc_kv_load(s, MODEL, path, PROMPT, n) : 0;
  int rc =
      s && *loaded >= 0 ? mkc_decode_more(s, &fx->g, PROMPT, n, *loaded, N_GEN, &o, out, st) : -1;
  mkc_session_close(s);
  return rc;
}

/* Saves PROMPT[0..N_SAVED)'s rows, decoded on kind, to path (a whole run: the prompt, then
 * answer tokens, of which only the prompt's rows are kept). 0 or -1. */
static int save(const fixture *fx, enum mkc_backend_kind kind, const char *path) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  mkc_decode_opts o = {.draft_max = 2};
  mkc_decode_stats st;
  int out[N_GEN];
  int rc = s && mkc_decode_with(s, &fx->g, PROMPT, N_SAVED, 8, &o, out, &st) == 0
               ? mkc_kv_save(s, N_SAVED, MODEL, path)
               : -1;
  mkc_session_close(s);
  return rc;
}

static void round_trip(const fixture *fx, enum mkc_backend_kind kind) {
  const char *name = kind_name(kind), *path = tmp_path("prompt.kv");
  remove(path);
  int want[N_GEN], out[N_GEN], loaded;
  mkc_decode_stats st;
  CHECK(decode(fx, kind, N_PROMPT, path, &loaded, want, &st) == 0 && loaded == 0 &&
            st.fed == N_PROMPT,
        "%s: no file yet: nothing loaded, the whole prompt fed", name);
  if (!CHECK(save(fx, kind, path) == 0, "%s: the first %d tokens' rows saved", name, N_SAVED))
    return;
  size_t n;
  unsigned char *bytes = mkc_read_file(path, &n);
  mkc_kv_file f;
  char why[200];
  CHECK(bytes && mkc_kv_file_parse(bytes, n, &f, why, sizeof why) == 0 && f.n_tokens == N_SAVED &&
            f.model_id == MODEL,
        "%s: the file holds %d tokens and the model's id", name, N_SAVED);
  int rc = decode(fx, kind, N_PROMPT, path, &loaded, out, &st);
  CHECK(rc == 0 && loaded == N_SAVED && st.fed == N_PROMPT - N_SAVED &&
            memcmp(out, want, sizeof want) == 0,
        "%s: a longer prompt reads %d rows (got %d), feeds %d, and decodes what a fresh session "
        "does",
        name, N_SAVED, loaded, rc == 0 ? st.fed : -1);
  /* the same prompt: all but its last token (which chooses the first answer token) */
  int same[N_GEN];
  decode(fx, kind, N_SAVED, NULL, &loaded, same, &st);
  rc = decode(fx, kind, N_SAVED, path, &loaded, out, &st);
  CHECK(rc == 0 && loaded == N_SAVED - 1 && st.fed == 1 && memcmp(out, same, sizeof same) == 0,
        "%s: the saved prompt itself: %d rows read, its last token fed (loaded %d)", name,
        N_SAVED - 1, loaded);
  /* another model's id, a file cut short: a warning, nothing loaded, the same tokens */
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  CHECK(s && mkc_kv_load(s, MODEL + 1, path, PROMPT, N_PROMPT) == 0 && mkc_session_pos(s) == 0,
        "%s: a file of another model is not used", name);
  mkc_session_close(s);
  const char *cut = tmp_path("cut.kv");
  FILE *w = fopen(cut, "wb");
  if (w && bytes) fwrite(bytes, 1, n - 3, w);
  if (w) fclose(w);
  s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  CHECK(s && mkc_kv_load(s, MODEL, cut, PROMPT, N_PROMPT) == 0 && mkc_session_pos(s) == 0,
        "%s: a file cut short is not used", name);
  mkc_session_close(s);
  /* The kernels' token history in the file's rows (the penalties count by it), made
   * nonsense: it is not read back (the prompt's tokens are), so a sampled run with a repeat
   * penalty over it decodes what a fresh one does. */
  if (kind != MKC_BACKEND_REF && bytes && n > 32 + 4 * N_SAVED) {
    for (int i = 0; i < N_SAVED; i++) memset(bytes + n - 4 * (size_t)(i + 1), 0x7f, 4);
    const char *odd = tmp_path("odd.kv");
    w = fopen(odd, "wb");
    if (w) fwrite(bytes, 1, n, w);
    if (w) fclose(w);
    mkc_sampling so = {.temp = 0.8f,
                       .top_k = 40,
                       .top_p = 1,
                       .repeat_penalty = 1.5f,
                       .repeat_last_n = 32,
                       .seed_lo = 9};
    sampling = &so;
    int fresh[N_GEN];
    int a = decode(fx, kind, N_PROMPT, NULL, &loaded, fresh, &st);
    int b = decode(fx, kind, N_PROMPT, odd, &loaded, out, &st);
    sampling = NULL;
    CHECK(a == 0 && b == 0 && loaded == N_SAVED && memcmp(out, fresh, sizeof fresh) == 0,
          "%s: a file whose token history is out of the vocabulary: the prompt's tokens are read "
          "back instead (sampled with a repeat penalty, a fresh run's tokens; %d %d, loaded %d)",
          name, a, b, loaded);
  }
  free(bytes);
}

/* A whole session's round trip, as a server's slot file makes it: a session of kind (sampling
 * with opt, if given) decodes prompt[0..n) and 8 tokens and writes all it holds to path; the
 * next prompt (what it held, then prompt[1..5)) is decoded by a fresh session (want) and by one
 * that first reads the file (got: only when it read back exactly the tokens held, at their
 * positions). */
typedef struct trip {
  int n_held, saved, restored, fed, rc_want, rc_got;
  size_t written, read;
  int want[N_GEN], got[N_GEN];
  char why[200];
} trip;

static mkc_session *session_of(const fixture *fx, enum mkc_backend_kind kind,
                               const mkc_sampling *opt) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  if (s && opt && mkc_session_set_sampling(s, opt) != 0) {
    mkc_session_close(s);
    return NULL;
  }
  return s;
}

static void whole_session(const fixture *fx, enum mkc_backend_kind kind, const mkc_sampling *opt,
                          const int *prompt, int n, const char *path, trip *t) {
  memset(t, 0, sizeof *t);
  t->saved = t->restored = t->fed = t->rc_want = t->rc_got = -1;
  mkc_decode_opts o = {.draft_max = 2};
  mkc_decode_stats st;
  int first[N_GEN], *next = malloc((size_t)(n + N_GEN + 4) * sizeof *next), *tokens = NULL;
  mkc_session *s = next ? session_of(fx, kind, opt) : NULL;
  if (s && mkc_decode_with(s, &fx->g, prompt, n, 8, &o, first, &st) == 0) {
    memcpy(next, prompt, (size_t)n * sizeof *next);
    memcpy(next + n, first, (size_t)st.generated * sizeof *next);
    t->n_held = n + st.generated - 1; /* the answer's last token is not fed */
    t->saved = mkc_kv_write(s, 1 << 20, MODEL, path, &t->written, t->why, sizeof t->why);
  }
  mkc_session_close(s);
  if (!next) return;
  for (int i = 0; i < 4; i++) next[t->n_held + i] = prompt[i + 1];
  int n_next = t->n_held + 4;
  if ((s = session_of(fx, kind, opt)))
    t->rc_want = mkc_decode_more(s, &fx->g, next, n_next, 0, N_GEN, &o, t->want, &st);
  mkc_session_close(s);
  if ((s = session_of(fx, kind, opt))) {
    t->restored = mkc_kv_read(s, MODEL, path, &tokens, &t->read, t->why, sizeof t->why);
    if (t->restored == t->n_held &&
        memcmp(tokens, next, (size_t)t->restored * sizeof *tokens) == 0 &&
        mkc_session_pos(s) == t->restored) {
      t->rc_got = mkc_decode_more(s, &fx->g, next, n_next, t->restored, N_GEN, &o, t->got, &st);
      t->fed = st.fed;
    }
  }
  mkc_session_close(s);
  free(tokens);
  free(next);
}

/* A session's tokens and rows, all of them (a slot's save), read into a fresh session (a slot's
 * restore): the next request, a longer prompt, decodes what a fresh session decoding it whole
 * does, greedy and sampled with a repeat penalty (whose counts follow the history read back),
 * and feeds only the tokens past the file's. */
static void slot_file(const fixture *fx, enum mkc_backend_kind kind) {
  const char *name = kind_name(kind), *path = tmp_path("slot.kv");
  mkc_sampling so = {.temp = 0.8f,
                     .top_k = 40,
                     .top_p = 1,
                     .repeat_penalty = 1.5f,
                     .repeat_last_n = 64,
                     .seed_lo = 11};
  /* (the reference executor decodes greedily only) */
  for (int sampled = 0; sampled < (kind == MKC_BACKEND_REF ? 1 : 2); sampled++) {
    trip t;
    whole_session(fx, kind, sampled ? &so : NULL, PROMPT, N_SAVED, path, &t);
    size_t size = 0;
    free(mkc_read_file(path, &size));
    CHECK(t.saved == t.n_held && t.saved > N_SAVED && t.written == size,
          "%s%s: a session's %d positions written (%d), %zu bytes, the file's size (%zu) %s", name,
          sampled ? " sampled" : "", t.n_held, t.saved, t.written, size, t.why);
    CHECK(t.rc_want == 0 && t.rc_got == 0 && t.read == size && t.fed == 4 &&
              memcmp(t.got, t.want, sizeof t.want) == 0,
          "%s%s: read back (%d tokens, %zu bytes), the next prompt feeds its 4 new tokens (%d) "
          "and decodes what a fresh session does %s",
          name, sampled ? " sampled" : "", t.restored, t.read, t.fed, t.why);
  }
  /* files it cannot use: refused with why, nothing half-read reported as read */
  size_t n;
  unsigned char *bytes = mkc_read_file(path, &n);
  struct {
    const char *what, *want;
    uint64_t model;
    size_t cut; /* bytes left off its end */
    int token;  /* 1: a token made one past the vocabulary */
  } bad[] = {{"another model's", "another model", MODEL + 1, 0, 0},
             {"cut short", "bytes, not the", MODEL, 3, 0},
             {"a token outside the vocabulary", "not in the vocabulary", MODEL, 0, 1},
             {"not there", "No such file", MODEL, 0, 0}};
  for (size_t i = 0; bytes && i < sizeof bad / sizeof *bad; i++) {
    const char *odd = tmp_path("odd-slot.kv");
    remove(odd);
    if (i < 3) {
      unsigned char *copy = malloc(n);
      memcpy(copy, bytes, n);
      if (bad[i].token)
        copy[32 + 4 * 2] = (unsigned char)fx->g.vocab,
                      copy[33 + 4 * 2] = (unsigned char)(fx->g.vocab >> 8);
      FILE *w = fopen(odd, "wb");
      if (w) fwrite(copy, 1, n - bad[i].cut, w);
      if (w) fclose(w);
      free(copy);
    }
    mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
    int *tokens = (int *)1;
    size_t read = 1;
    char why[200] = "";
    int rc = s ? mkc_kv_read(s, bad[i].model, odd, &tokens, &read, why, sizeof why) : 0;
    CHECK(rc == -1 && !tokens && read == 0 && strstr(why, bad[i].want),
          "%s: a slot file %s is refused (%s)", name, bad[i].what, why);
    mkc_session_close(s);
  }
  free(bytes);
  /* nothing held: an empty file, read back as nothing */
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  size_t written = 0, read = 0;
  char why[200] = "";
  int w = s ? mkc_kv_write(s, 0, MODEL, path, &written, why, sizeof why) : -1;
  mkc_session_close(s);
  s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  int *tokens = NULL, r = s ? mkc_kv_read(s, MODEL, path, &tokens, &read, why, sizeof why) : -1;
  CHECK(w == 0 && r == 0 && written == 32 && read == 32 && s && mkc_session_pos(s) == 0,
        "%s: an empty session: a 32-byte file, read back as no tokens (%d, %d) %s", name, w, r,
        why);
  free(tokens);
  mkc_session_close(s);
}

/* Decodes prompt[0..n) for N_GEN tokens on a fresh session of fx, reading path first when
 * given (mkc_kv_load); the tokens in out, the loaded count in *loaded, the fed in *fed. */
static int decode_window(const fixture *fx, const int *prompt, int n, const char *path, int *loaded,
                         int *fed, int *out) {
  mkc_session *s = mkc_session_open(test_backend(), &fx->g, &fx->src, &fx->w, 2);
  mkc_decode_opts o = {.draft_max = 2};
  mkc_decode_stats st;
  *loaded = s && path ? mkc_kv_load(s, MODEL, path, prompt, n) : 0;
  int rc =
      s && *loaded >= 0 ? mkc_decode_more(s, &fx->g, prompt, n, *loaded, N_GEN, &o, out, &st) : -1;
  *fed = rc == 0 ? st.fed : -1;
  mkc_session_close(s);
  return rc;
}

/* A model with sliding windows: a saved prompt of 150 tokens (past its rings of window and
 * chunk rows, so they wrapped) is read back by a longer prompt and by itself, each then decoding
 * what a fresh session does; a prompt sharing only its first 20 tokens would need window rows older
 * than the file's: not used (a warning), a fresh decode; a whole session written and read back (a
 * slot file) goes on as a fresh one. */
static void window_round_trip(const char *preset) {
  enum { LONG = 170, SAVED = 150, SHARED = 20 };
  fixture fx;
  if (!CHECK(fixture_open(&fx, preset, 2, 0, 7) == 0, "%s: generate", preset)) return;
  int prompt[LONG], other[LONG], want[N_GEN], got[N_GEN], first[N_GEN], loaded, fed;
  for (int i = 0; i < LONG; i++) {
    prompt[i] = (7 * i + 3) % fx.g.vocab;
    other[i] = i < SHARED ? prompt[i] : (11 * i + 5) % fx.g.vocab;
  }
  const char *path = tmp_path("window.kv");
  remove(path);
  mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
  mkc_decode_opts o = {.draft_max = 2};
  mkc_decode_stats st;
  int saved = s && mkc_decode_with(s, &fx.g, prompt, SAVED, 8, &o, first, &st) == 0
                  ? mkc_kv_save(s, SAVED, MODEL, path)
                  : -1;
  mkc_session_close(s);
  size_t n;
  unsigned char *bytes = mkc_read_file(path, &n);
  mkc_kv_file f = {0};
  char why[200] = "";
  int parsed = bytes ? mkc_kv_file_parse(bytes, n, &f, why, sizeof why) : -1;
  CHECK(saved == 0 && parsed == 0 && f.n_tokens == SAVED && f.n_rings > 0,
        "%s: %d tokens' rows saved, with %d windows' first positions %s", preset, SAVED, f.n_rings,
        why);
  free(bytes);
  int a = decode_window(&fx, prompt, LONG, NULL, &loaded, &fed, want);
  int b = decode_window(&fx, prompt, LONG, path, &loaded, &fed, got);
  CHECK(a == 0 && b == 0 && loaded == SAVED && fed == LONG - SAVED &&
            memcmp(got, want, sizeof want) == 0,
        "%s: a longer prompt reads %d rows (%d), feeds %d, and decodes what a fresh session does",
        preset, SAVED, loaded, fed);
  a = decode_window(&fx, prompt, SAVED, NULL, &loaded, &fed, want);
  b = decode_window(&fx, prompt, SAVED, path, &loaded, &fed, got);
  CHECK(a == 0 && b == 0 && loaded == SAVED - 1 && fed == 1 && memcmp(got, want, sizeof want) == 0,
        "%s: the saved prompt itself: %d rows read (%d), its last token fed, a fresh decode's",
        preset, SAVED - 1, loaded);
  a = decode_window(&fx, other, LONG, NULL, &loaded, &fed, want);
  b = decode_window(&fx, other, LONG, path, &loaded, &fed, got);
  CHECK(a == 0 && b == 0 && loaded == 0 && fed == LONG && memcmp(got, want, sizeof want) == 0,
        "%s: a prompt sharing only its first %d tokens: the windows' rows for them are gone, "
        "nothing read (%d), a fresh decode's",
        preset, SHARED, loaded);
  /* a slot file: all of a session past its windows, read back, then 4 more tokens */
  trip t;
  whole_session(&fx, test_backend(), NULL, prompt, SAVED, path, &t);
  CHECK(t.saved == t.n_held && t.restored == t.n_held && t.rc_want == 0 && t.rc_got == 0 &&
            t.fed == 4 && memcmp(t.got, t.want, sizeof t.want) == 0,
        "%s: a whole session (%d tokens) written and read back goes on as a fresh one %s", preset,
        t.n_held, t.why);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu() || scratch_open("kv-file") != 0) return 0;
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 2, 64, 7) == 0, "tiny: generate")) return check_done();
  round_trip(&fx, test_backend());
  round_trip(&fx, MKC_BACKEND_REF);
  slot_file(&fx, test_backend());
  slot_file(&fx, MKC_BACKEND_REF);
  /* the reference executor stores doubles: a cpu (or cuda) file is not its rows */
  const char *path = tmp_path("prompt.kv");
  save(&fx, test_backend(), path);
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &fx.g, &fx.src, &fx.w, 2);
  CHECK(s && mkc_kv_load(s, MODEL, path, PROMPT, N_PROMPT) == 0 && mkc_session_pos(s) == 0,
        "another backend's rows are not used");
  mkc_session_close(s);
  fixture_close(&fx);
  /* sliding windows keep only their last rows (a ring of window + chunk rows, fewer than the
   * context of 256): saved with their first positions, read back where the prompt needs no
   * older rows */
  window_round_trip("swa-tiny");
  window_round_trip("gemma-tiny");
  scratch_close();
  return check_done();
}
