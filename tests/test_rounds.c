/* Several draft-and-verify rounds in one launch (--rounds, issue 15):
 *   - the kernel's rounds are the reference's round for round: the same
 *     inputs count (its in-kernel prompt lookup drafts what the host's
 *     does), accepted drafts and tokens, on tiny, odd and swa-tiny (a ring
 *     that wraps inside a launch);
 *   - decoding with K = 1..8 drafts and R = 1, 4, 16 rounds per launch gives
 *     plain decoding's tokens on tiny, odd and qwen3-tiny (and SmolLM2 at two
 *     settings), greedy and sampled (the draws are keyed by position, so a
 *     launch boundary changes nothing), with one launch per R steps;
 *   - a launch stops at the budget, at a stop token (end of generation), at a
 *     full context, and the session's tokens and pos are those of the rounds
 *     run;
 *   - bad arguments are refused; options rounds cannot serve are named;
 *   - self-speculation inside the kernel (--draft-layers L with R > 1): plain
 *     decoding's tokens for K = 1..8 and R = 4, 16 on tiny, odd and
 *     qwen3-tiny, with the drafts the host's own self-speculation (a kernel
 *     of the first L layers, R = 1) makes: as many drafted and accepted; a
 *     planted kernel whose draft pass takes another token is caught by that
 *     count, and its text stays plain decoding's;
 *   - planted: kernels whose lookup takes an earlier match, tries the
 *     shortest suffix first or drafts one token too few draft other tokens
 *     than the reference (caught), yet emit the same text (speculation stays
 *     lossless). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "exec/decode.h"
#include "fixture.h"
#include "model/model_file.h"

/* Repetitive, so prompt lookup finds matches. */
static const int PROMPT[] = {5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))
#define N_GEN 60

static int first_difference(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* Feeds PROMPT; the first generated token into *first. 0 or -1. */
static int feed(mkc_session *s, const mkc_graph *g, int *first) {
  mkc_step_result r;
  for (int pos = 0; pos < N_PROMPT;) {
    int T = N_PROMPT - pos < g->t_chunk ? N_PROMPT - pos : g->t_chunk;
    if (mkc_session_step(s, PROMPT + pos, T, T - 1, &r) != 0 || r.status) return -1;
    pos += T;
  }
  *first = r.out[r.n_out - 1];
  return 0;
}

/* Launches of up to R rounds until n_gen tokens: each round's record in log
 * (up to cap), tokens in out. Returns the rounds run, or -1. */
static int run_launches(mkc_session *s, const mkc_graph *g, int R, int k, int n_gen, int *out,
                        mkc_round *log, int cap, int *launches) {
  int first, n = 0, n_log = 0;
  if (feed(s, g, &first) != 0) return -1;
  out[n++] = first;
  *launches = 0;
  while (n < n_gen) {
    int in[MKC_T_CAP], pos = mkc_session_pos(s), kk = k;
    int hist[512];
    memcpy(hist, mkc_session_tokens(s), (size_t)pos * sizeof *hist);
    hist[pos] = out[n - 1];
    in[0] = out[n - 1];
    if (kk > n_gen - n - 1) kk = n_gen - n - 1;
    int T = 1 + mkc_draft_lookup(hist, pos + 1, kk, in + 1);
    mkc_round rr[MKC_ROUNDS_MAX];
    int nr = 0;
    mkc_rounds_req q = {.rounds = R, .drafts = k, .budget = n_gen - n};
    if (mkc_session_rounds(s, in, T, &q, rr, &nr) != 0) return -1;
    (*launches)++;
    for (int i = 0; i < nr; i++) {
      if (rr[i].status != MKC_STATUS_OK) return -1;
      if (n_log < cap) log[n_log] = rr[i];
      n_log++;
      for (int j = 0; j < rr[i].n_out && n < n_gen; j++) out[n++] = rr[i].out_tokens[j];
    }
  }
  return n_log;
}

static int same_rounds(const mkc_round *a, const mkc_round *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].n_in != b[i].n_in || a[i].n_out != b[i].n_out || a[i].n_accepted != b[i].n_accepted ||
        a[i].status != b[i].status ||
        memcmp(a[i].out_tokens, b[i].out_tokens, (size_t)a[i].n_out * sizeof(int)) != 0)
      return 0;
  return 1;
}

/* The kernel's rounds against the reference's, round for round. */
static void against_reference(const char *preset, int ubatch) {
  fixture fx;
  if (!CHECK(fixture_open_ub(&fx, preset, 4, 0, ubatch, 42) == 0, "%s: generate", preset)) return;
  const mkc_graph *g = &fx.g;
  static const int RS[] = {2, 5, 16};
  for (int i = 0; i < 3; i++) {
    int R = RS[i];
    mkc_session *k = mkc_session_open(test_backend(), g, &fx.src, &fx.w, 3);
    mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, g, &fx.src, &fx.w, 0);
    int out_k[N_GEN], out_r[N_GEN], lk = 0, lr = 0;
    mkc_round log_k[N_GEN], log_r[N_GEN];
    int nk = k && ref ? run_launches(k, g, R, 4, N_GEN, out_k, log_k, N_GEN, &lk) : -1;
    int nr = k && ref ? run_launches(ref, g, R, 4, N_GEN, out_r, log_r, N_GEN, &lr) : -1;
    long drafted = 0, accepted = 0;
    for (int j = 0; j < nk && j < N_GEN; j++) {
      drafted += log_k[j].n_in - 1;
      accepted += log_k[j].n_accepted;
    }
    CHECK(nk > 0 && nk == nr && nk <= N_GEN && same_rounds(log_k, log_r, nk) &&
              first_difference(out_k, out_r, N_GEN) < 0,
          "%s, R = %d: the kernel's %d rounds are the reference's, round for round (%ld drafted, "
          "%ld accepted)",
          preset, R, nk, drafted, accepted);
    CHECK(nk > 0 && lk == (nk + R - 1) / R, "%s, R = %d: %d launches for %d rounds", preset, R, lk,
          nk);
    CHECK(k && mkc_session_pos(k) == mkc_session_pos(ref) &&
              first_difference(mkc_session_tokens(k), mkc_session_tokens(ref), mkc_session_pos(k)) <
                  0,
          "%s, R = %d: the session's tokens and pos (%d) are the reference's", preset, R,
          k ? mkc_session_pos(k) : -1);
    mkc_session_close(k);
    mkc_session_close(ref);
  }
  fixture_close(&fx);
}

/* mkc_decode_with K drafts and R rounds per launch (R = 1: a launch per step). */
static int decode(const fixture *fx, const mkc_sampling *o, int K, int R, int *out,
                  mkc_decode_stats *st) {
  mkc_session *s = mkc_session_open(test_backend(), &fx->g, &fx->src, &fx->w, 3);
  mkc_decode_opts d = {.draft_max = K, .rounds = R};
  int rc = s && (!o || mkc_session_set_sampling(s, o) == 0) &&
                   mkc_decode_with(s, &fx->g, PROMPT, N_PROMPT, N_GEN, &d, out, st) == 0
               ? st->generated
               : -1;
  mkc_session_close(s);
  return rc;
}

/* Greedy: K = 1..8 drafts and R = 1, 4, 16 rounds per launch give plain
 * decoding's tokens; sampled (K = 4): R = 4, 16 give R = 1's, with the same
 * drafts accepted. Launches: one per R generation steps. */
static void lossless(const char *preset) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, preset, 8, 0, 7) == 0, "%s: generate (K <= 8)", preset)) return;
  int plain[N_GEN], out[N_GEN];
  mkc_decode_stats st0, st;
  int n0 = decode(&fx, NULL, 0, 1, plain, &st0), bad = 0, runs = 0, launches_ok = 1;
  char first_bad[96] = "";
  static const int RS[] = {1, 4, 16};
  for (int K = 1; K <= 8; K++)
    for (int i = 0; i < 3; i++) {
      int n = decode(&fx, NULL, K, RS[i], out, &st);
      runs++;
      if (n != N_GEN || first_difference(plain, out, N_GEN) >= 0) {
        if (!bad++) snprintf(first_bad, sizeof first_bad, " (first: K %d, R %d)", K, RS[i]);
      }
      launches_ok = launches_ok && st.launches == (st.gen_steps + RS[i] - 1) / RS[i];
    }
  CHECK(n0 == N_GEN && bad == 0,
        "%s, greedy: K = 1..8 x R = 1, 4, 16: all %d runs give plain decoding's %d tokens%s",
        preset, runs, N_GEN, first_bad);
  CHECK(launches_ok, "%s, greedy: every run took one launch per R generation steps", preset);
  mkc_sampling sampled;
  memset(&sampled, 0, sizeof sampled);
  sampled.temp = 1.5f;
  sampled.top_k = 20;
  sampled.top_p = 0.95f;
  sampled.repeat_penalty = 1.1f;
  sampled.repeat_last_n = 16;
  sampled.seed_lo = 1234;
  mkc_decode_stats st1;
  int n1 = decode(&fx, &sampled, 4, 1, plain, &st1);
  for (int i = 1; i < 3; i++) {
    int R = RS[i], n = decode(&fx, &sampled, 4, R, out, &st);
    CHECK(n1 == N_GEN && n == N_GEN && first_difference(plain, out, N_GEN) < 0 &&
              st.accepted == st1.accepted && st.drafted == st1.drafted &&
              st.launches == (st.gen_steps + R - 1) / R,
          "%s, sampled, K = 4, R = %d: R = 1's tokens (%ld of %ld drafts accepted both ways), %d "
          "launches for %d steps",
          preset, R, st.accepted, st.drafted, st.launches, st.gen_steps);
  }
  fixture_close(&fx);
}

/* mkc_decode_with K drafts per round from the first L layers: in the kernel
 * with R rounds per launch (src: the kernel to run, NULL: fx's), or with R =
 * 1 from the host's drafter of those layers (draft: its kernel). */
static int decode_self(const fixture *fx, const mkc_kernel_src *src, const fixture *draft, int L,
                       int K, int R, int *out, mkc_decode_stats *st) {
  mkc_session *s = mkc_session_open(test_backend(), &fx->g, src ? src : &fx->src, &fx->w, 3);
  mkc_session *ds =
      draft ? mkc_session_open(test_backend(), &draft->g, &draft->src, &fx->w, 3) : NULL;
  mkc_drafter *d = ds ? mkc_drafter_model(ds, &draft->g, "self-speculation") : NULL;
  mkc_decode_opts o = {.draft_max = K, .rounds = R, .draft_layers = draft ? 0 : L, .drafter = d};
  int rc =
      s && (!draft || d) && mkc_decode_with(s, &fx->g, PROMPT, N_PROMPT, N_GEN, &o, out, st) == 0
          ? st->generated
          : -1;
  if (d)
    mkc_drafter_close(d); /* and its session */
  else
    mkc_session_close(ds);
  mkc_session_close(s);
  return rc;
}

/* Self-speculation in the kernel: lossless, and the host's drafts exactly. */
static void self_spec(const char *preset, const char *plant) {
  fixture fx, dr;
  if (!CHECK(fixture_open(&fx, preset, 8, 0, 7) == 0, "%s: generate (K <= 8)", preset)) return;
  memset(&dr, 0, sizeof dr);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .preset = preset, .draft_max = 8, .n_layers = 1};
  mkc_kernel_src mutant = {NULL, fx.src.file_name};
  if (!CHECK(fx.g.draft_in_kernel && mkc_codegen(&o, &dr.g, &dr.src) == 0,
             "%s: the kernel can draft with its first layers; the host's kernel of 1 layer",
             preset))
    goto done;
  if (plant) { /* the draft pass keeps the second best: the argmax of another token */
    const char *from = "st->inputs[n] = c;", *at = strstr(fx.src.source, from);
    if (!CHECK(at != NULL, "planted: the draft pass's store is in the kernel")) goto done;
    size_t size = strlen(fx.src.source) + 64;
    mutant.source = malloc(size);
    snprintf(mutant.source, size, "%.*sst->inputs[n] = (c + 1) %% vocab;%s",
             (int)(at - fx.src.source), fx.src.source, at + strlen(from));
  }
  int plain[N_GEN], out[N_GEN], host[N_GEN];
  mkc_decode_stats st0, st, sh;
  int n0 = decode(&fx, NULL, 0, 1, plain, &st0), bad = 0, runs = 0, same_drafts = 1, launches = 1;
  char first_bad[96] = "";
  static const int RS[] = {4, 16};
  for (int K = plant ? 4 : 1; K <= (plant ? 4 : 8); K++) {
    int nh = decode_self(&fx, NULL, &dr, 1, K, 1, host, &sh);
    for (int i = 0; i < 2; i++) {
      int n = decode_self(&fx, plant ? &mutant : NULL, NULL, 1, K, RS[i], out, &st);
      runs++;
      if (n != N_GEN || first_difference(plain, out, N_GEN) >= 0 || nh != N_GEN ||
          first_difference(plain, host, N_GEN) >= 0)
        if (!bad++) snprintf(first_bad, sizeof first_bad, " (first: K %d, R %d)", K, RS[i]);
      same_drafts = same_drafts && st.drafted == sh.drafted && st.accepted == sh.accepted;
      launches = launches && st.launches == (st.gen_steps + RS[i] - 1) / RS[i];
    }
  }
  if (plant) {
    CHECK(n0 == N_GEN && bad == 0 && !same_drafts,
          "%s planted, a draft pass that keeps another token: caught by the drafts accepted, and "
          "the text is plain decoding's",
          preset);
  } else {
    CHECK(n0 == N_GEN && bad == 0,
          "%s, self-speculation in the kernel (L = 1): K = 1..8 x R = 4, 16: all %d runs give "
          "plain decoding's %d tokens%s",
          preset, runs, N_GEN, first_bad);
    CHECK(same_drafts, "%s: as many drafted and accepted as the host's self-speculation (R = 1)",
          preset);
    CHECK(launches, "%s: one launch per R rounds", preset);
  }
done:
  free(mutant.source);
  fixture_close(&dr);
  fixture_close(&fx);
}

/* SmolLM2-135M from its Q4_1 blocks: K = 4, R = 4 and K = 8, R = 16 give
 * plain decoding's tokens on a repetitive prompt (ids of a list). */
static void smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0, "SmolLM2: open")) return;
  fixture fx;
  memset(&fx, 0, sizeof fx);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .draft_max = 8,
                    .max_ctx = 128,
                    .model = &mf.desc,
                    .weight_type = mkc_model_file_weight_type,
                    .weight_type_ctx = &mf};
  if (CHECK(mkc_codegen(&o, &fx.g, &fx.src) == 0 && mkc_model_file_weights(&mf, &fx.g, &fx.w) == 0,
            "SmolLM2: the kernel from the file's blocks")) {
    int plain[N_GEN], out[N_GEN];
    mkc_decode_stats st0, st;
    int n0 = decode(&fx, NULL, 0, 1, plain, &st0);
    static const int KR[][2] = {{4, 4}, {8, 16}};
    for (int i = 0; i < 2; i++) {
      int n = decode(&fx, NULL, KR[i][0], KR[i][1], out, &st);
      CHECK(n0 == N_GEN && n == N_GEN && first_difference(plain, out, N_GEN) < 0,
            "SmolLM2, K = %d, R = %d: plain decoding's %d tokens (%ld of %ld drafts accepted, %d "
            "launches for %d steps)",
            KR[i][0], KR[i][1], N_GEN, st.accepted, st.drafted, st.launches, st.gen_steps);
    }
  }
  fixture_close(&fx);
  mkc_model_file_close(&mf);
}

/* One launch on a fresh session after PROMPT: its rounds into rr, how many into *n. 0 or -1. */
static int one_launch(const fixture *fx, enum mkc_backend_kind kind, const mkc_rounds_req *q,
                      mkc_round *rr, int *n) {
  mkc_session *s = mkc_session_open(kind, &fx->g, &fx->src, &fx->w, 2);
  int first,
      rc = s && feed(s, &fx->g, &first) == 0 && mkc_session_rounds(s, &first, 1, q, rr, n) == 0
               ? 0
               : -1;
  mkc_session_close(s);
  return rc;
}

/* Plain greedy decoding on the reference after PROMPT, one token a step, until
 * n tokens or a full context: the tokens (the first included) into out. How many, or -1. */
static int plain_ref(const fixture *fx, int n, int *out) {
  mkc_session *s = mkc_session_open(MKC_BACKEND_REF, &fx->g, &fx->src, &fx->w, 0);
  int got = -1, tok;
  if (s && feed(s, &fx->g, &tok) == 0) {
    out[0] = tok;
    got = 1;
    mkc_step_result r;
    while (got < n && mkc_session_pos(s) < fx->g.max_ctx) {
      if (mkc_session_step(s, &tok, 1, 0, &r) != 0 || r.status) {
        got = -1;
        break;
      }
      out[got++] = tok = r.out[r.n_out - 1];
    }
  }
  mkc_session_close(s);
  return got;
}

/* The tokens of rounds rr[0..n), after first, into out (up to cap). How many. */
static int round_tokens(int first, const mkc_round *rr, int n, int *out, int cap) {
  int got = 0;
  out[got++] = first;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < rr[i].n_out && got < cap; j++) out[got++] = rr[i].out_tokens[j];
  return got;
}

/* A stop token ends the launch at the round that emits it, in the kernel and in the
 * reference. With draft_layers L (self-speculation in the kernel: the reference
 * cannot draft so), the kernel's rounds also give plain decoding's tokens. */
static void stops(int L) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "odd", 4, 0, 42) == 0, "odd: generate")) return;
  mkc_rounds_req q = {
      .rounds = 16, .drafts = 4, .budget = 1000, .draft_layers = L, .first_drafts = L ? 4 : 0};
  mkc_round all[MKC_ROUNDS_MAX], rr[MKC_ROUNDS_MAX];
  int n_all = 0, n = 0, at = -1;
  const char *how = L ? ", drafted by the first layer" : "";
  if (!CHECK(one_launch(&fx, test_backend(), &q, all, &n_all) == 0 && n_all == 16,
             "odd: 16 rounds with no stop token%s", how))
    goto done;
  if (L) {
    int got[MKC_ROUNDS_MAX * MKC_T_CAP + 1], want[MKC_ROUNDS_MAX * MKC_T_CAP + 1], drafted = 0;
    int first = 0;
    mkc_session *s = mkc_session_open(test_backend(), &fx.g, &fx.src, &fx.w, 2);
    int ok = s && feed(s, &fx.g, &first) == 0;
    mkc_session_close(s);
    int n_got = round_tokens(first, all, n_all, got, (int)(sizeof got / sizeof *got));
    for (int i = 0; i < n_all; i++) drafted += all[i].n_in - 1;
    CHECK(ok && drafted > 0 && plain_ref(&fx, n_got, want) == n_got &&
              first_difference(got, want, n_got) < 0,
          "odd, 16 rounds drafted by the first layer (%d drafts): the reference's plain "
          "greedy tokens (%d)",
          drafted, n_got);
  }
  /* the first round from the third on whose first token no earlier round emitted */
  for (int i = 2; i < n_all && at < 0; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++)
      for (int t = 0; t < all[j].n_out; t++) seen |= all[j].out_tokens[t] == all[i].out_tokens[0];
    if (!seen) at = i;
  }
  if (!CHECK(at >= 0, "odd: a round emits a token no earlier round did (round %d)", at + 1))
    goto done;
  q.n_stops = 2;
  q.stops[0] = fx.g.vocab + 5; /* never emitted */
  q.stops[1] = all[at].out_tokens[0];
  enum mkc_backend_kind kinds[] = {test_backend(), MKC_BACKEND_REF};
  for (int k = 0; k < (L ? 1 : 2); k++) {
    int ok = one_launch(&fx, kinds[k], &q, rr, &n) == 0;
    CHECK(ok && n == at + 1 && same_rounds(rr, all, n),
          "%s%s: stop token %d ends the launch at round %d, the rounds before as without it (%d "
          "rounds)",
          k ? "ref" : "kernel", how, q.stops[1], at + 1, n);
  }
  q.n_stops = MKC_ROUND_STOPS + 1;
  CHECK(one_launch(&fx, test_backend(), &q, rr, &n) == 0 && n == 1 &&
            rr[0].status == MKC_STATUS_BAD_INPUT,
        "%d stop tokens%s: refused as bad input", MKC_ROUND_STOPS + 1, how);
done:
  fixture_close(&fx);
}

/* Self-speculation in the kernel up to a full context (tiny, ctx 32): every
 * launch's first drafts are bounded by the room left (the session refuses
 * more) and its later rounds' by the kernel, the launches stop with the
 * context full, every round ok, and the tokens are the reference's plain
 * greedy ones. */
static void self_spec_ctx_full(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, 32, 42) == 0, "tiny, ctx 32: generate")) return;
  const mkc_graph *g = &fx.g;
  mkc_session *s = mkc_session_open(test_backend(), g, &fx.src, &fx.w, 2);
  int got[64], want[64], n = 0, first = 0, launches = 0, all_ok = 1, drafted = 0;
  if (!CHECK(s && feed(s, g, &first) == 0, "tiny, ctx 32: the prompt")) goto done;
  got[n++] = first;
  while (all_ok && mkc_session_pos(s) < g->max_ctx && launches < 32) {
    int room = g->max_ctx - mkc_session_pos(s), in[1] = {got[n - 1]}, nr = 0;
    mkc_rounds_req q = {.rounds = 16,
                        .drafts = 4,
                        .budget = 1000,
                        .draft_layers = 1,
                        .first_drafts = room - 1 < 4 ? room - 1 : 4};
    mkc_round rr[MKC_ROUNDS_MAX];
    all_ok = mkc_session_rounds(s, in, 1, &q, rr, &nr) == 0;
    launches++;
    for (int i = 0; all_ok && i < nr; i++) {
      all_ok = rr[i].status == MKC_STATUS_OK;
      drafted += rr[i].n_in - 1;
      for (int j = 0; j < rr[i].n_out && n < 64; j++) got[n++] = rr[i].out_tokens[j];
    }
  }
  int n_want = plain_ref(&fx, 64, want);
  CHECK(all_ok && mkc_session_pos(s) == g->max_ctx && drafted > 0 && n == n_want &&
            first_difference(got, want, n) < 0,
        "drafted by the first layer, from pos %d to a full context (pos %d) in %d launches, "
        "%d drafts: the reference's %d plain greedy tokens (%d)",
        N_PROMPT, mkc_session_pos(s), launches, drafted, n_want, n);
  mkc_rounds_req over = {
      .rounds = 4, .drafts = 4, .budget = 10, .draft_layers = 1, .first_drafts = 1};
  mkc_round rr[MKC_ROUNDS_MAX];
  int nr = 0, in[1] = {got[n - 1]};
  int ok = mkc_session_rounds(s, in, 1, &over, rr, &nr) == 0 && nr == 1;
  CHECK(ok && rr[0].status == MKC_STATUS_BAD_INPUT && mkc_session_pos(s) == g->max_ctx,
        "a first draft with no room left for it: refused as bad input (%s)",
        ok ? mkc_status_name(rr[0].status) : "no round");
done:
  mkc_session_close(s);
  fixture_close(&fx);
}

/* Budget, a full context, bad arguments and refused options. */
static void limits(void) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", 4, 32, 42) == 0, "tiny, ctx 32: generate")) return;
  const mkc_graph *g = &fx.g;
  mkc_session *s = mkc_session_open(test_backend(), g, &fx.src, &fx.w, 2);
  int first = 0, in[1];
  mkc_round rr[MKC_ROUNDS_MAX];
  int n = 0;
  if (!CHECK(s && feed(s, g, &first) == 0, "tiny, ctx 32: the prompt")) goto done;
  in[0] = first;
  mkc_rounds_req q = {.rounds = 16, .drafts = 4, .budget = 7};
  int ok = mkc_session_rounds(s, in, 1, &q, rr, &n) == 0, emitted = 0;
  for (int i = 0; i < n; i++) emitted += rr[i].n_out;
  CHECK(ok && n >= 1 && emitted >= 7 && emitted - rr[n - 1].n_out < 7,
        "a budget of 7 tokens: the launch stops in the round that reaches it (%d rounds, %d "
        "emitted)",
        n, emitted);
  int pos = mkc_session_pos(s);
  in[0] = rr[n - 1].out_tokens[rr[n - 1].n_out - 1];
  q.budget = 1000;
  ok = mkc_session_rounds(s, in, 1, &q, rr, &n) == 0;
  int all_ok = ok;
  for (int i = 0; i < n; i++) all_ok = all_ok && rr[i].status == MKC_STATUS_OK;
  CHECK(all_ok && mkc_session_pos(s) == g->max_ctx,
        "from pos %d, 16 rounds and room for %d: they stop with the context full (pos %d, %d "
        "rounds)",
        pos, g->max_ctx - pos, mkc_session_pos(s), n);
  q = (mkc_rounds_req){.rounds = 2, .drafts = 4, .budget = 10};
  ok = mkc_session_rounds(s, in, 1, &q, rr, &n) == 0;
  CHECK(ok && n == 1 && rr[0].status == MKC_STATUS_CTX_FULL && mkc_session_pos(s) == g->max_ctx,
        "a launch on a full context: refused, %s", mkc_status_name(rr[0].status));
  static const struct {
    int T, R, k, budget;
  } bad[] = {{1, 0, 4, 5}, {1, MKC_ROUNDS_MAX + 1, 4, 5}, {1, 2, 5, 5}, {1, 2, 4, 0}, {6, 2, 4, 5}};
  for (int i = 0; i < 5; i++) {
    q = (mkc_rounds_req){.rounds = bad[i].R, .drafts = bad[i].k, .budget = bad[i].budget};
    ok = mkc_session_rounds(s, in, bad[i].T, &q, rr, &n) == 0;
    CHECK(ok && n == 1 && rr[0].status == MKC_STATUS_BAD_INPUT,
          "T %d, R %d, drafts %d, budget %d: refused as bad input", bad[i].T, bad[i].R, bad[i].k,
          bad[i].budget);
  }
  mkc_decode_opts o = {.draft_max = 4, .rounds = 4, .adaptive = 1};
  check_stderr_begin();
  int rc = mkc_decode_rounds_check(s, &o);
  char *msg = check_stderr_end();
  CHECK(rc == -1 && strstr(msg, "--rounds 4 (1..16) keeps the draft depth fixed"),
        "rounds with --draft-adaptive: refused, named");
  free(msg);
done:
  mkc_session_close(s);
  fixture_close(&fx);
}

/* Kernels whose lookup drafts otherwise than the host's: caught by the
 * comparison of rounds, while their text stays the same. */
static void planted(const char *what, const char *from, const char *to) {
  fixture fx;
  if (!CHECK(fixture_open(&fx, "odd", 4, 0, 42) == 0, "planted: generate (odd)")) return;
  char *at = strstr(fx.src.source, from);
  if (!CHECK(at != NULL, "planted: the lookup's line is in the kernel")) goto done;
  size_t head = (size_t)(at - fx.src.source), size = strlen(fx.src.source) + strlen(to) + 1;
  char *mutant = malloc(size);
  snprintf(mutant, size, "%.*s%s%s", (int)head, fx.src.source, to, at + strlen(from));
  mkc_kernel_src ks = {mutant, fx.src.file_name};
  mkc_session *k = mkc_session_open(MKC_BACKEND_CPU, &fx.g, &ks, &fx.w, 3);
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &fx.g, &fx.src, &fx.w, 0);
  int out_k[N_GEN], out_r[N_GEN], lk = 0, lr = 0;
  mkc_round log_k[N_GEN], log_r[N_GEN];
  int nk = k && ref ? run_launches(k, &fx.g, 8, 4, N_GEN, out_k, log_k, N_GEN, &lk) : -1;
  int nr = k && ref ? run_launches(ref, &fx.g, 8, 4, N_GEN, out_r, log_r, N_GEN, &lr) : -1;
  int same = nk == nr && nk > 0 && same_rounds(log_k, log_r, nk < N_GEN ? nk : N_GEN);
  CHECK(nk > 0 && !same && first_difference(out_k, out_r, N_GEN) < 0,
        "planted, %s: caught (%d rounds against %d), and the text is the same", what, nk, nr);
  mkc_session_close(k);
  mkc_session_close(ref);
  free(mutant);
done:
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  against_reference("tiny", 0);
  against_reference("odd", 0);
  against_reference("swa-tiny", 12);
  lossless("tiny");
  lossless("odd");
  lossless("qwen3-tiny");
  smollm2();
  self_spec("tiny", NULL);
  self_spec("odd", NULL);
  self_spec("qwen3-tiny", NULL);
  if (test_backend() == MKC_BACKEND_CPU) self_spec("odd", "keep another token");
  limits();
  stops(0);
  stops(1);
  self_spec_ctx_full();
  if (test_backend() == MKC_BACKEND_CPU) {
    planted("the first warp's match, not the most recent",
            "for (int w = 0; w < MKC_WARPS; w++) best = red[w] > best ? red[w] : best;",
            "for (int w = 0; w < MKC_WARPS; w++) best = best < 0 ? red[w] : best;");
    planted("the shortest suffix first",
            "for (int len = MKC_LOOKUP_NGRAM_MAX; len >= 1 && k > 0; len--)",
            "for (int len = 1; len <= MKC_LOOKUP_NGRAM_MAX && k > 0; len++)");
    planted("a draft too few", "for (int i = best + len; i < n && got < k; i++) got++;",
            "for (int i = best + len; i < n && got < k - 1; i++) got++;");
  }
  return check_done();
}
