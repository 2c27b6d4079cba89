/* The batch scheduler a step at a time (exec/batch.h's mkc_sched), as mkc
 * serve --parallel drives it: sequences arrive while others decode, more of
 * them than there are slots (the rest wait in line), one is cancelled while
 * it decodes and one while it waits, one ends at a stop token. The oracle
 * for every greedy sequence is plain T = 1 greedy decoding of its prompt on
 * a session of the plain kernel (itself checked against the reference in
 * test_kernel.c); drafts in the slots are lossless, so each sequence's
 * tokens must be exactly those, up to its budget or stop. And a prompt run
 * alone gives the plain kernel's logits bit for bit. Embeddings on the slots
 * (mkc serve --parallel's), beside sequences decoding, whole caches and
 * paged, are the plain session's (exec/embed.h, itself checked against the
 * reference in test_embed.c): every input's hidden state read, none shared.
 * Drafts from a draft pool (-md on the slots) are lossless too, and a pool on
 * the target's own weights has every draft accepted. With --draft-adaptive
 * each slot's depth follows its own acceptance alone: a sequence drafts and
 * has accepted in a full pool exactly what it does alone in it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/batch.h"
#include "exec/decode.h"
#include "exec/embed.h"
#include "slot_kernels.h"

#define N_SEQS 9
#define N_GEN 30

/* Steps until nothing is pending (at most `most` steps): the steps taken, or -1. */
static int drain(mkc_sched *sc, int most) {
  int steps = 0, rc;
  while (steps < most && (rc = mkc_sched_step(sc)) == 1) steps++;
  return rc < 0 ? -1 : steps;
}

/* A prompt past t_max run alone is fed as a session feeds it (mkc_session_prompt_inputs): the
 * logits after it are the plain kernel's, bit for bit. */
static void prompt_fed_alike(kernel *plain, mkc_slots *p) {
  enum { N = 40 };
  int prompt[N], vocab = plain->g.vocab, fed = 0, T = 0;
  for (int t = 0; t < N; t++) prompt[t] = (13 * t + 7) % vocab;
  mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  mkc_step_result r;
  int ok = s != NULL;
  while (ok && fed < N) {
    T = mkc_session_prompt_inputs(s, N - fed);
    ok = mkc_session_step(s, prompt + fed, T, T - 1, &r) == 0 && r.status == MKC_STATUS_OK;
    fed += T;
  }
  float *want = malloc((size_t)vocab * sizeof *want);
  const float *l = ok ? mkc_session_logits(s, T - 1) : NULL;
  if (want && l) memcpy(want, l, (size_t)vocab * sizeof *want);
  mkc_batch_seq q = {.prompt = prompt, .n_prompt = N, .n_predict = 1};
  q.opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1};
  mkc_batch_opts o = {0};
  mkc_sched *sc = mkc_sched_open(p, &o);
  int rc = sc && l && want ? mkc_sched_add(sc, &q) : -1, steps = 0;
  while (rc == 0 && q.n_out == 0 && q.stopped == MKC_BATCH_RUNNING)
    rc = mkc_sched_step(sc) == 1 ? (steps++, 0) : -1;
  const float *got = NULL; /* the step's last row of the slot (the first free: 0) */
  for (int t = MKC_CHUNK_CAP - 1; rc == 0 && t >= 0 && !got; t--) got = mkc_slots_logits(p, 0, t);
  CHECK(got && memcmp(got, want, (size_t)vocab * sizeof *want) == 0,
        "a %d-token prompt alone in %d steps: the logits after it are the plain kernel's, bit for "
        "bit",
        N, steps);
  mkc_sched_close(sc);
  mkc_batch_free(&q, 1);
  mkc_slots_clear(p, 0);
  free(want);
  mkc_session_close(s);
}

/* Context shift (mkc_batch_seq.shift): sequences that fill the 256-position context go on as
 * mkc_decode_more's shift goes on alone on a session of the plain kernel (test_context_shift
 * checks that against fresh decodes of each shortened history): each sequence's tokens and
 * shifts are its solo run's. Greedy with drafts (n_keep 4, 0 and 10, one shift or several),
 * beside a sequence that never fills; one with n_discard 200 (not half the rest); then
 * sampled with a repeat penalty, no drafts (a drawn
 * token depends on its seed and position: no drafts on either side keeps them one draw). */
static void shifted(kernel *plain, mkc_slots *p) {
  enum { N = 4, GEN = 150 };
  static int prompts[N][256], want[N][GEN];
  int lens[N] = {240, 250, 230, 10}, keeps[N] = {4, 0, 10, 0}, gens[N] = {40, GEN, 40, 20};
  int discards[N] = {0, 0, 200, 0}; /* llama-server's n_discard: most of the rest */
  for (int sampled = 0; sampled < 2; sampled++) {
    mkc_batch_seq seqs[N];
    memset(seqs, 0, sizeof seqs);
    int n_want[N], shifts[N], drafts = sampled ? 0 : 3;
    for (int i = 0; i < N; i++) {
      for (int t = 0; t < lens[i]; t++)
        prompts[i][t] = (53 * i + 7 * t + 3 * sampled + 1) % plain->g.vocab;
      mkc_sampling opt = {.top_p = 1, .repeat_penalty = 1};
      if (sampled)
        opt = (mkc_sampling){.temp = 0.9f,
                             .top_k = 40,
                             .top_p = 1,
                             .repeat_penalty = 1.2f,
                             .repeat_last_n = 64,
                             .seed_lo = 5 + (unsigned)i};
      mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
      mkc_decode_opts d = {
          .draft_max = drafts, .shift = 1, .n_keep = keeps[i], .n_discard = discards[i]};
      mkc_decode_stats st;
      n_want[i] = shifts[i] = -1;
      if (s && mkc_session_set_sampling(s, &opt) == 0 &&
          mkc_decode_more(s, &plain->g, prompts[i], lens[i], 0, gens[i], &d, want[i], &st) == 0)
        n_want[i] = st.generated, shifts[i] = st.shifts;
      mkc_session_close(s);
      seqs[i] = (mkc_batch_seq){.prompt = prompts[i],
                                .n_prompt = lens[i],
                                .n_predict = gens[i],
                                .opt = opt,
                                .shift = 1,
                                .n_keep = keeps[i],
                                .n_discard = discards[i]};
    }
    mkc_batch_opts o = {.drafts = drafts};
    mkc_batch_stats bst;
    int rc = mkc_batch_run(p, seqs, N, &o, &bst);
    for (int i = 0; i < N; i++) {
      const mkc_batch_seq *q = &seqs[i];
      CHECK(rc == 0 && n_want[i] == gens[i] && q->n_out == n_want[i] &&
                memcmp(q->out, want[i], (size_t)gens[i] * sizeof(int)) == 0 &&
                q->shifts == shifts[i] && (i == 3 ? q->shifts == 0 : q->shifts > 0) &&
                q->stopped == MKC_BATCH_BUDGET,
            "%s, shifted: sequence %d (prompt %d, keep %d): %d tokens, %d shifts (%d tokens fed "
            "again), the session's %d and %d",
            sampled ? "sampled" : "greedy", i, lens[i], keeps[i], q->n_out, q->shifts, q->shift_fed,
            n_want[i], shifts[i]);
    }
    mkc_batch_free(seqs, N);
  }
  /* a shift needs a budget */
  mkc_batch_seq q = {.prompt = prompts[3], .n_prompt = 10, .n_predict = -1, .shift = 1};
  q.opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1};
  mkc_batch_opts o = {0};
  mkc_batch_stats bst;
  CHECK(mkc_batch_run(p, &q, 1, &o, &bst) == -1, "a shifting sequence with no budget is refused");
  mkc_batch_free(&q, 1);
}

/* ---- embeddings on the slots (mkc_batch_seq.on_hidden) ---- */

#define N_EMB 5
#define EMB_TOL 1e-6

typedef struct emb_sum {
  mkc_embedder *e;
  double acc[256];
  int fed, n, pooling, fail_at; /* fail_at: a planted failure at that input (-1: none) */
} emb_sum;

static int sum_rows(void *ctx, mkc_slots *p, int slot, int n) {
  emb_sum *a = ctx;
  for (int t = 0; t < n; t++, a->fed++) {
    if (a->fed == a->fail_at) return -1;
    if (mkc_embed_pools(a->pooling, a->fed, a->n)) {
      if (mkc_slots_hidden(p, slot, t, a->e->row) != 0) return -1;
      mkc_embed_add(a->e, a->e->row, a->acc);
    }
  }
  return 0;
}

/* Texts of 3, 20 and 9 tokens (past a slot's share of a step: fed alone), 40 (past t_max: in
 * tiled chunks) and 2 (within the share: its rows after another slot's in a step), pooled by
 * mean, cls, mean, last and mean, on p beside two decoding sequences, the first of
 * which starts as the 40-token text does (paged, its pages could be shared: they must not be);
 * each vector against the plain session's, each decoded sequence against plain greedy. */
static void embeddings_on(kernel *plain, mkc_slots *p, const char *pool) {
  static const int lens[N_EMB] = {3, 20, 40, 9, 2};
  static const int pools[N_EMB] = {MKC_POOL_MEAN, MKC_POOL_CLS, MKC_POOL_MEAN, MKC_POOL_LAST,
                                   MKC_POOL_MEAN};
  int texts[N_EMB][40], dim = plain->g.dim, vocab = plain->g.vocab;
  for (int i = 0; i < N_EMB; i++)
    for (int t = 0; t < lens[i]; t++) texts[i][t] = (29 * i + 17 * t + 3) % vocab;
  if (!CHECK(dim <= 256, "%s: the model's width fits the test's sums", pool)) return;
  mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  mkc_embedder plain_e, e;
  float want[N_EMB][256], got[256];
  int ok = s && mkc_embedder_open(&plain_e, s, &plain->w) == 0 &&
           mkc_embedder_init(&e, &plain->g, &plain->w) == 0;
  for (int i = 0; ok && i < N_EMB; i++)
    ok = mkc_embed(&plain_e, texts[i], lens[i], pools[i], 2, want[i]) == 0;
  if (!CHECK(ok, "%s: the plain session's embeddings", pool)) return;
  /* two decoding: 0 the 40-token text's first 34 tokens (two pages), 1 a 6-token prompt */
  int gen_prompt[6] = {5, 9, 2, 11, 4, 8}, want_gen[2][N_GEN];
  mkc_batch_seq gen[2] = {{.prompt = texts[2], .n_prompt = 34, .n_predict = N_GEN},
                          {.prompt = gen_prompt, .n_prompt = 6, .n_predict = N_GEN}};
  for (int i = 0; i < 2; i++) {
    gen[i].opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1};
    ok &= greedy_of(plain, gen[i].prompt, gen[i].n_prompt, want_gen[i], N_GEN) == 0;
  }
  emb_sum sums[N_EMB + 1];
  mkc_batch_seq q[N_EMB + 1];
  memset(q, 0, sizeof q);
  for (int i = 0; i <= N_EMB; i++) {
    int k = i < N_EMB ? i : 2; /* the last: the 40-token text again, failing at its input 25 */
    sums[i] = (emb_sum){.e = &e, .n = lens[k], .pooling = pools[k], .fail_at = i < N_EMB ? -1 : 25};
    q[i] = (mkc_batch_seq){
        .prompt = texts[k], .n_prompt = lens[k], .on_hidden = sum_rows, .ctx = &sums[i]};
    q[i].opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1};
  }
  mkc_batch_opts o = {.drafts = 3};
  mkc_sched *sc = mkc_sched_open(p, &o);
  ok &= sc != NULL;
  /* the first decodes for a few steps (its prompt fed), then the rest arrive */
  if (ok) ok = mkc_sched_add(sc, &gen[0]) == 0;
  for (int k = 0; ok && k < 4; k++) ok = mkc_sched_step(sc) == 1;
  for (int i = 0; ok && i <= N_EMB; i++) ok = mkc_sched_add(sc, &q[i]) == 0;
  if (ok) ok = mkc_sched_add(sc, &gen[1]) == 0;
  int steps = ok ? drain(sc, 1000) : -1;
  CHECK(ok && steps > 0 && mkc_sched_pending(sc) == 0, "%s: embeddings beside decoding: %d steps",
        pool, steps);
  for (int i = 0; ok && steps > 0 && i < N_EMB; i++) {
    mkc_embed_end(&e, sums[i].acc, lens[i], pools[i], 2, got);
    double worst = 0, top = 0;
    for (int d = 0; d < dim; d++) {
      double diff = fabs((double)got[d] - want[i][d]);
      worst = diff > worst ? diff : worst;
      top = fabs(want[i][d]) > top ? fabs(want[i][d]) : top;
    }
    CHECK(q[i].stopped == MKC_BATCH_BUDGET && q[i].n_out == 0 && sums[i].fed == lens[i] &&
              worst <= EMB_TOL * top,
          "%s: a %d-token text pooled by %s: every input read (%d), nothing emitted, the plain "
          "session's vector (largest difference %.3g of %.3g)",
          pool, lens[i], mkc_pooling_name(pools[i]), sums[i].fed, worst, top);
  }
  CHECK(q[N_EMB].stopped == MKC_BATCH_FAILED && sums[N_EMB].fed == 25,
        "%s: an embedding whose rows cannot be read fails alone (at input %d)", pool,
        sums[N_EMB].fed);
  for (int i = 0; i < 2; i++)
    CHECK(gen[i].stopped == MKC_BATCH_BUDGET && gen[i].n_out == N_GEN &&
              memcmp(gen[i].out, want_gen[i], sizeof want_gen[i]) == 0,
          "%s: decoding sequence %d beside the embeddings: plain greedy's %d tokens", pool, i,
          N_GEN);
  mkc_sched_close(sc);
  mkc_batch_free(q, N_EMB + 1);
  mkc_batch_free(gen, 2);
  for (int sl = 0; sl < mkc_slots_count(p); sl++) mkc_slots_clear(p, sl);
  mkc_embedder_close(&e);
  mkc_embedder_close(&plain_e);
  mkc_session_close(s);
}

/* ---- drafts from a draft pool (mkc_batch_opts.drafter, exec/draft_slots.h) ---- */

/* The drafter alone: each proposal against the plain greedy continuation of its history, for
 * histories that extend the last (drafts accepted), diverge from it after a draft (a rewind),
 * start anew (a clear), and run past a prompt chunk, in three slots at once. */
static void drafter_alone(kernel *plain, kernel *slotted) {
  enum { ROUNDS = 4, SL = 3, LEN = 48, K = 3 };
  int hist[SL][LEN], n[ROUNDS][SL], vocab = plain->g.vocab, ok = 1;
  mkc_slots *dp = mkc_slots_open(test_backend(), &slotted->g, &slotted->src, &slotted->w, BLOCKS);
  mkc_slot_drafter *d = dp ? mkc_slot_drafter_open(dp, "the target's weights") : NULL;
  if (!CHECK(d != NULL, "a drafter over a pool of whole caches")) return;
  for (int sl = 0; sl < SL; sl++)
    for (int t = 0; t < LEN; t++) hist[sl][t] = (19 * sl + 23 * t + 1) % vocab;
  /* round r's history of slot sl: its first n[r][sl] tokens, where round 1 takes the first
   * draft of round 0 and one other token; round 2 diverges right after round 1's history;
   * round 3 is a new text of 40 */
  int lens0[SL] = {6, 2, 11};
  for (int r = 0; r < ROUNDS && ok; r++) {
    mkc_slot_draft req[SL];
    for (int sl = 0; sl < SL; sl++) {
      n[r][sl] = r == 0 ? lens0[sl] : r == 3 ? 40 : n[r - 1][sl] + (r == 1 ? 2 : 1);
      req[sl] = (mkc_slot_draft){.hist = hist[sl], .n = n[r][sl], .want = K};
    }
    ok = mkc_slot_drafter_propose(d, req, SL) == 0;
    for (int sl = 0; ok && sl < SL; sl++) {
      int greedy[K];
      ok = greedy_of(plain, hist[sl], n[r][sl], greedy, K) == 0 && req[sl].got == K &&
           memcmp(req[sl].drafts, greedy, sizeof greedy) == 0;
      CHECK(ok, "drafter, round %d, slot %d: %d drafts after %d tokens, the plain greedy ones", r,
            sl, req[sl].got, n[r][sl]);
      if (r == 0) hist[sl][n[r][sl]] = greedy[0]; /* round 1: the first draft taken, then */
      if (r == 0) hist[sl][n[r][sl] + 1] = (greedy[1] + 1) % vocab; /* not the second */
      if (r == 1) hist[sl][n[r][sl]] = (greedy[0] + 1) % vocab;     /* round 2: no draft taken */
      if (r == 2)                                                   /* round 3: a new text */
        for (int t = 0; t < LEN; t++) hist[sl][t] = (31 * sl + 13 * t + 5) % vocab;
    }
  }
  mkc_slot_drafter_close(d);
}

/* The oracle of --draft-p-min: the plain kernel's greedy choices after prompt, up to n, cut at
 * the first whose probability among its step's 10 likeliest tokens is below p_min (llama.cpp's
 * draft sampler, top-k 10). The drafts kept, or -1. */
static int confident_greedy(kernel *plain, const int *prompt, int n_prompt, float p_min, int *out,
                            int n) {
  mkc_session *s = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  mkc_sampling opt = {.top_p = 1, .repeat_penalty = 1, .logprobs = 10};
  if (!s || mkc_session_set_sampling(s, &opt) != 0) {
    mkc_session_close(s);
    return -1;
  }
  mkc_step_result r;
  int rc = 0, kept = 0;
  for (int at = 0; at < n_prompt && rc == 0; at++)
    rc = mkc_session_step(s, prompt + at, 1, 0, &r) || r.status != MKC_STATUS_OK;
  while (rc == 0 && kept < n) {
    float lp, lps[10];
    int ids[10];
    double top = 0;
    if (mkc_session_logprobs(s, 0, &lp, ids, lps) != 0) rc = -1;
    for (int i = 0; rc == 0 && i < 10; i++) top += ids[i] >= 0 ? exp((double)lps[i]) : 0;
    if (rc || exp((double)lp) / top < p_min) break;
    out[kept++] = r.out[0];
    if (kept < n) rc = mkc_session_step(s, &out[kept - 1], 1, 0, &r) || r.status != MKC_STATUS_OK;
  }
  mkc_session_close(s);
  return rc ? -1 : kept;
}

/* --draft-p-min on the pool: each slot's drafts are the plain greedy ones up to the first below
 * the floor, rounds after rounds (the pool's caches kept between them); some slots cut short,
 * some not. */
static void drafter_p_min(kernel *plain, kernel *slotted) {
  enum { ROUNDS = 3, SL = 3, LEN = 40, K = 4 };
  const float p_min = 0.12f; /* random weights' choices are flat: 0 to 4 of 4 drafts kept */
  int hist[SL][LEN], cut = 0, whole = 0, ok = 1;
  mkc_slots *dp = mkc_slots_open(test_backend(), &slotted->g, &slotted->src, &slotted->w, BLOCKS);
  mkc_slot_drafter *d = dp ? mkc_slot_drafter_open(dp, "the target's weights") : NULL;
  if (!CHECK(d && mkc_slot_drafter_p_min(d, p_min) == 0, "a drafter with --draft-p-min")) {
    mkc_slot_drafter_close(d);
    return;
  }
  for (int sl = 0; sl < SL; sl++)
    for (int t = 0; t < LEN; t++) hist[sl][t] = (29 * sl + 17 * t + 3) % plain->g.vocab;
  for (int r = 0; r < ROUNDS && ok; r++) {
    mkc_slot_draft req[SL];
    for (int sl = 0; sl < SL; sl++)
      req[sl] = (mkc_slot_draft){.hist = hist[sl], .n = 3 + 5 * r + 2 * sl, .want = K};
    ok = mkc_slot_drafter_propose(d, req, SL) == 0;
    for (int sl = 0; ok && sl < SL; sl++) {
      int want[K], kept = confident_greedy(plain, hist[sl], req[sl].n, p_min, want, K);
      ok = kept >= 0 && req[sl].got == kept &&
           memcmp(req[sl].drafts, want, kept * sizeof *want) == 0;
      CHECK(ok,
            "--draft-p-min %.2f, round %d, slot %d: %d drafts after %d tokens, the plain kernel's "
            "%d likely enough",
            p_min, r, sl, req[sl].got, req[sl].n, kept);
      cut += kept < K, whole += kept == K;
    }
  }
  CHECK(!ok || (cut > 0 && whole > 0), "--draft-p-min: %d drafts cut short, %d whole", cut, whole);
  mkc_slot_drafter_close(d);
}

/* Sequences of 1 to 40 tokens (past a slot's share of a step and past a prompt chunk: the draft
 * pool catches up in chunks alone) drafted by a second pool: on the target's own weights every
 * greedy draft is the target's choice, so all are accepted; on other weights some are not. Either
 * way each sequence is plain greedy's. A paged pool cannot draft (its pages are indexed by the
 * tokens they hold: no rewind). */
static void draft_pool(kernel *plain, kernel *slotted, mkc_slots *p) {
  enum { N = 6 };
  static const int lens[N] = {5, 40, 3, 12, 1, 20};
  int prompts[N][40], want[N][N_GEN], ok = 1;
  for (int i = 0; i < N; i++) {
    for (int t = 0; t < lens[i]; t++) prompts[i][t] = (41 * i + 7 * t + 2) % plain->g.vocab;
    ok &= greedy_of(plain, prompts[i], lens[i], want[i], N_GEN) == 0;
  }
  if (!CHECK(ok, "draft pool: the plain greedy runs")) return;
  for (int run = 0; run < 2; run++) {
    mkc_weights other = {0};
    const mkc_weights *w = &slotted->w;
    if (run == 1 && mkc_weights_random(&other, &slotted->g, 11) == 0) w = &other;
    const char *name = run == 0 ? "a pool on the target's weights" : "a pool on other weights";
    mkc_slots *dp = mkc_slots_open(test_backend(), &slotted->g, &slotted->src, w, BLOCKS);
    mkc_slot_drafter *d = dp ? mkc_slot_drafter_open(dp, name) : NULL;
    mkc_batch_seq seqs[N];
    memset(seqs, 0, sizeof seqs);
    for (int i = 0; i < N; i++) {
      seqs[i] = (mkc_batch_seq){.prompt = prompts[i], .n_prompt = lens[i], .n_predict = N_GEN};
      seqs[i].opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1};
    }
    mkc_batch_opts o = {.drafts = 4, .drafter = d};
    mkc_batch_stats st;
    int rc = d ? mkc_batch_run(p, seqs, N, &o, &st) : -1;
    int same = rc == 0;
    for (int i = 0; same && i < N; i++)
      same = seqs[i].n_out == N_GEN && memcmp(seqs[i].out, want[i], sizeof want[i]) == 0;
    CHECK(same && st.drafted > 0 && (run == 1 || st.accepted == st.drafted) &&
              mkc_slot_drafter_steps(d) > 0,
          "draft pool, %s: %d sequences plain greedy's; %ld of %ld drafts accepted, the pool's "
          "%ld steps beside the target's %d",
          name, N, rc == 0 ? st.accepted : -1L, rc == 0 ? st.drafted : -1L,
          d ? mkc_slot_drafter_steps(d) : -1L, rc == 0 ? st.steps : -1);
    mkc_batch_free(seqs, N);
    mkc_slot_drafter_close(d);
    mkc_weights_free(&other);
    for (int sl = 0; sl < mkc_slots_count(p); sl++) mkc_slots_clear(p, sl);
  }
}

/* --draft-adaptive on the slots (mkc_batch_opts.adaptive): each slot's depth follows its own
 * acceptance, and prompt lookup's drafts depend only on a sequence's own history and depth, so
 * each sequence drafts, and has accepted, in a pool of every slot busy what it does alone in the
 * same pool (whose share of rows a slot gets is the same). Repeating prompts, whose lookups are
 * mostly kept, beside others; more sequences than slots, so later ones take slots another left,
 * where the depth starts anew. */
static void adaptive_alone(mkc_slots *p) {
  enum { N = SLOTS + 3, GEN = 40 };
  static int prompts[N][12], want[N][GEN];
  long want_drafted[N], want_accepted[N];
  mkc_batch_opts o = {.drafts = 3, .adaptive = 1};
  mkc_batch_seq seqs[N];
  memset(seqs, 0, sizeof seqs);
  int ok = 1, differ = 0;
  for (int i = 0; i < N; i++) {
    for (int t = 0; t < 12; t++)
      prompts[i][t] = i % 2 ? (29 * i + 13 * t + 7) % 251 : (t % 3 ? 40 + i : 90 + i);
    seqs[i] = (mkc_batch_seq){.prompt = prompts[i],
                              .n_prompt = 12,
                              .n_predict = GEN,
                              .opt = {.top_p = 1, .repeat_penalty = 1}};
    mkc_batch_seq alone = seqs[i];
    mkc_batch_stats st;
    ok &= mkc_batch_run(p, &alone, 1, &o, &st) == 0 && alone.n_out == GEN;
    if (alone.out) memcpy(want[i], alone.out, sizeof want[i]);
    want_drafted[i] = alone.drafted, want_accepted[i] = alone.accepted;
    differ |= i > 0 && want_drafted[i] != want_drafted[0];
    mkc_batch_free(&alone, 1);
  }
  CHECK(ok && differ, "adaptive: each of %d sequences alone (drafted %ld, %ld, %ld, ...)", N,
        want_drafted[0], want_drafted[1], want_drafted[2]);
  mkc_batch_stats st;
  int rc = mkc_batch_run(p, seqs, N, &o, &st);
  for (int i = 0; i < N; i++)
    CHECK(rc == 0 && seqs[i].n_out == GEN && memcmp(seqs[i].out, want[i], sizeof want[i]) == 0 &&
              seqs[i].drafted == want_drafted[i] && seqs[i].accepted == want_accepted[i],
          "adaptive, %d slots busy: sequence %d drafted %ld, %ld accepted, as alone (%ld, %ld)",
          st.most_busy, i, seqs[i].drafted, seqs[i].accepted, want_drafted[i], want_accepted[i]);
  CHECK(rc == 0 && st.most_busy == SLOTS && st.depth_lo == 0 && st.depth_hi >= 1,
        "adaptive: every slot busy, the depths offered %d..%d (from 0)", st.depth_lo, st.depth_hi);
  mkc_batch_free(seqs, N);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  slot_kernels_one_grid();
  kernel plain, slotted;
  if (kernel_open(&plain, 0) != 0 || kernel_open(&slotted, SLOTS) != 0) {
    CHECK(0, "the kernels generate");
    return check_done();
  }
  mkc_slots *p = mkc_slots_open(test_backend(), &slotted.g, &slotted.src, &slotted.w, BLOCKS);
  CHECK(p != NULL, "a pool of %d slots", SLOTS);
  if (!p) return check_done();
  prompt_fed_alike(&plain, p);
  shifted(&plain, p);
  embeddings_on(&plain, p, "whole caches");
  drafter_alone(&plain, &slotted);
  drafter_p_min(&plain, &slotted);
  draft_pool(&plain, &slotted, p);
  adaptive_alone(p);
  kernel paged;
  mkc_slots *pp = NULL;
  if (CHECK(kernel_open_paged(&paged, SLOTS, 48) == 0 &&
                (pp = mkc_slots_open(test_backend(), &paged.g, &paged.src, &paged.w, BLOCKS)),
            "a pool of %d slots on 48 KV pages", SLOTS)) {
    embeddings_on(&plain, pp, "paged");
    CHECK(!mkc_slot_drafter_open(pp, "a paged pool"), "a paged pool cannot draft (no rewind)");
    kernel_close(&paged);
  }

  /* prompts of 1..20 tokens (one past a slot's share: its chunks go alone) */
  int prompts[N_SEQS][20], lens[N_SEQS] = {5, 20, 3, 7, 1, 9, 4, 12, 6};
  int want[N_SEQS][N_GEN];
  mkc_batch_seq seqs[N_SEQS];
  memset(seqs, 0, sizeof seqs);
  for (int i = 0; i < N_SEQS; i++) {
    for (int t = 0; t < lens[i]; t++) prompts[i][t] = (37 * i + 11 * t + 5) % plain.g.vocab;
    seqs[i].prompt = prompts[i];
    seqs[i].n_prompt = lens[i];
    seqs[i].n_predict = N_GEN;
    seqs[i].opt = (mkc_sampling){.top_p = 1, .repeat_penalty = 1}; /* greedy */
    CHECK(greedy_of(&plain, prompts[i], lens[i], want[i], N_GEN) == 0, "sequence %d alone", i);
  }
  /* sequence 4 ends at a stop token: the first of its greedy tokens from the 4th on that it
   * has not emitted before and sequence 2 (cancelled mid-decode below) never emits */
  int first = 3;
  for (; first < N_GEN; first++) {
    int seen = 0;
    for (int k = 0; k < first; k++) seen |= want[4][k] == want[4][first];
    for (int k = 0; k < N_GEN; k++) seen |= want[2][k] == want[4][first];
    if (!seen) break;
  }
  CHECK(first < N_GEN, "a stop token for sequence 4 (its token %d)", first);
  int stop = want[4][first < N_GEN ? first : 0];
  mkc_batch_opts o = {.drafts = 3, .stops = &stop, .n_stops = 1};
  /* the stop token ends any other sequence that meets it too: their want is cut there */
  int n_want[N_SEQS];
  for (int i = 0; i < N_SEQS; i++) {
    n_want[i] = 0;
    while (n_want[i] < N_GEN && want[i][n_want[i]] != stop) n_want[i]++;
  }

  mkc_sched *sc = mkc_sched_open(p, &o);
  CHECK(sc && mkc_sched_step(sc) == 0 && mkc_sched_pending(sc) == 0,
        "an empty scheduler takes no step");
  /* 0 alone for a while, then 1..8 arrive: 6 take the free slots, 7 and 8 wait */
  mkc_sched_add(sc, &seqs[0]);
  int rc = 0;
  for (int k = 0; k < 4 && rc == 0; k++) rc = mkc_sched_step(sc) != 1;
  CHECK(rc == 0 && seqs[0].n_out > 0 && seqs[0].stopped == MKC_BATCH_RUNNING,
        "sequence 0 decodes alone first (%d tokens in 4 steps)", seqs[0].n_out);
  for (int i = 1; i < N_SEQS; i++) mkc_sched_add(sc, &seqs[i]);
  CHECK(mkc_sched_pending(sc) == N_SEQS, "%d pending", mkc_sched_pending(sc));
  for (int k = 0; k < 3 && rc == 0; k++) rc = mkc_sched_step(sc) != 1;
  CHECK(rc == 0 && seqs[7].t_start == 0 && seqs[8].t_start == 0,
        "sequences 7 and 8 wait while every slot is busy");
  /* 8 leaves before it starts, 2 once it has a few tokens: 7 takes a slot */
  mkc_sched_cancel(sc, &seqs[8]);
  CHECK(seqs[8].stopped == MKC_BATCH_CANCELLED && mkc_sched_pending(sc) == N_SEQS - 1,
        "sequence 8 cancelled while it waits: %d pending", mkc_sched_pending(sc));
  for (int k = 0; k < 100 && rc == 0 && seqs[2].n_out < 5; k++) rc = mkc_sched_step(sc) != 1;
  int cut = seqs[2].n_out;
  mkc_sched_cancel(sc, &seqs[2]);
  CHECK(rc == 0 && seqs[2].stopped == MKC_BATCH_CANCELLED && cut >= 5 && cut < N_GEN,
        "sequence 2 cancelled mid-decode, after %d tokens", cut);
  int steps = drain(sc, 1000);
  CHECK(steps > 0 && mkc_sched_pending(sc) == 0 && mkc_sched_step(sc) == 0,
        "the rest finish in %d steps", steps);

  for (int i = 0; i < N_SEQS; i++) {
    const mkc_batch_seq *q = &seqs[i];
    if (i == 2 || i == 8) continue;
    int same =
        q->n_out == n_want[i] && memcmp(q->out, want[i], (size_t)q->n_out * sizeof(int)) == 0;
    int why = n_want[i] < N_GEN ? MKC_BATCH_STOP_TOKEN : MKC_BATCH_BUDGET;
    CHECK(same && q->stopped == why, "sequence %d (prompt %d): %d tokens, plain greedy's %d (%s)",
          i, lens[i], q->n_out, n_want[i],
          why == MKC_BATCH_STOP_TOKEN ? "to the stop" : "its budget");
  }
  CHECK(seqs[4].n_out == first && seqs[4].stopped == MKC_BATCH_STOP_TOKEN,
        "sequence 4 ends at the stop token, after %d tokens", seqs[4].n_out);
  CHECK(seqs[2].n_out == cut && memcmp(seqs[2].out, want[2], (size_t)cut * sizeof(int)) == 0,
        "cancelled mid-decode: sequence 2 keeps its first %d tokens, plain greedy's", cut);
  CHECK(seqs[8].n_out == 0 && seqs[8].out == NULL && seqs[8].t_start == 0,
        "cancelled waiting: sequence 8 never ran");
  CHECK(seqs[7].t_start > 0 && seqs[7].n_out == n_want[7], "sequence 7 ran once a slot was free");
  const mkc_batch_stats *st = mkc_sched_stats(sc);
  CHECK(st->most_busy == SLOTS, "at most %d slots busy at once", st->most_busy);
  CHECK(st->drafted > 0 && st->accepted > 0, "drafts: %ld offered, %ld accepted", st->drafted,
        st->accepted);

  mkc_sched_close(sc);
  mkc_batch_free(seqs, N_SEQS);
  mkc_slots_close(p);
  kernel_close(&slotted);
  kernel_close(&plain);
  return check_done();
}
