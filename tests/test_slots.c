/* Slots (templates/slots.cuh, exec/slots.h): one step of a slot kernel serves
 * several sequences, each with its own pos, cache, history and sampler.
 * The slots run on the cpu backend, or on the GPU with MKC_TEST_BACKEND=cuda
 * (make test-gpu). The oracle for each slot is a cpu session of its own on
 * the plain kernel of the same preset and weights (itself checked against
 * the reference executor in test_kernel.c), fed exactly the slot's inputs step by step: every
 * step's status, emitted tokens, accepted drafts and pos must be equal, and
 * the logits the same within TOL (several slots' rows change how attention
 * splits its positions, so the sums' order). Greedy slots are also checked
 * against plain T = 1 greedy decoding (lossless speculation).
 *   - one slot alone (any slot, a prompt chunk past t_max included) is the
 *     plain kernel bit for bit;
 *   - B = 2 and 7 slots in one step, with different prompts, lengths, draft
 *     counts (right and wrong drafts) and samplers, prompt chunks beside
 *     decode steps;
 *   - a slot cleared and given a new prompt mid-run changes no other slot;
 *   - refusals: too many rows together, bad slots and tokens;
 *   - paged (--kv-pages): the same on a shared pool of pages, the pages held
 *     being what the slots' positions need, a pool too small refused with
 *     the reason, a cleared slot's pages returned;
 *   - wide steps (--step-rows 112, t_max 16): several slots' rows past t_max
 *     on the tiled path, whole caches and paged, up to 112 rows;
 *   - sliding windows, paged (swa-tiny, gemma-tiny; wide steps too);
 *   - shared prefixes: a prompt after another with the same first 200
 *     tokens shares 192 positions and stores them once; a finished
 *     sequence's full pages are kept for sharing until the pool needs them;
 *   - planted bugs (every slot on the first slot's cache; every row of a slot
 *     at its first position; every position on its slot's first page) break
 *     the equality. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "codegen/host.h"
#include "exec/slots.h"
#include "slot_kernels.h"

#define TOL 1e-5
#define N_GEN 64

/* One sequence's script: its prompt, fed in chunks of `chunk` (the first
 * `solo` tokens as one chunk with the slot alone), then decode steps with
 * `drafts` drafts taken from its plain greedy continuation, every
 * `wrong_every`-th step with one of them wrong. */
typedef struct script {
  int prompt[MAX_CTX], n_prompt;
  int chunk, solo, drafts, wrong_every;
  float temp; /* 0: greedy; else top-k 40 (the candidates stage) or top-p 0.9 (odd seeds) */
  unsigned seed;
  int share; /* paged: starts with mkc_slots_share */
} script;

/* A slot's run next to its solo session. */
typedef struct run {
  script sc;
  mkc_session *solo;
  int greedy[N_GEN + 64]; /* plain T = 1 greedy continuation of the prompt */
  int n_greedy;           /* its length: N_GEN + 32, or what the context leaves */
  int fed, steps, out[N_GEN + 64], n_out, last;
  int t_chunk; /* the slot kernel's */
  int shared;  /* prompt positions mkc_slots_share found */
} run;

typedef struct tally {
  int ok, same, lossless, steps, accepted;
  double worst; /* largest rel_err of a slot's logits against its solo run */
  int bitwise;  /* every compared row equal bit for bit */
  int shared;   /* prompt positions the runs shared */
} tally;

static mkc_sampling sampling_of(const script *sc) {
  mkc_sampling o = {0};
  o.top_p = 1.0f;
  o.repeat_penalty = 1.0f;
  if (sc->temp > 0) {
    o.temp = sc->temp;
    o.top_k = sc->seed % 2 ? 0 : 40;
    o.top_p = sc->seed % 2 ? 0.9f : 1.0f;
    o.repeat_penalty = 1.0f;
    o.seed_lo = sc->seed;
    o.seed_hi = 77;
  }
  return o;
}

static int run_start(run *rn, kernel *plain, const script *sc, mkc_slots *p, int slot) {
  memset(rn, 0, sizeof *rn);
  rn->sc = *sc;
  rn->t_chunk = mkc_slots_graph(p)->t_chunk;
  rn->solo = mkc_session_open(test_backend(), &plain->g, &plain->src, &plain->w, BLOCKS);
  mkc_sampling o = sampling_of(sc);
  rn->n_greedy = MAX_CTX - sc->n_prompt < N_GEN + 32 ? MAX_CTX - sc->n_prompt : N_GEN + 32;
  if (!rn->solo || greedy_of(plain, sc->prompt, sc->n_prompt, rn->greedy, rn->n_greedy) != 0 ||
      mkc_session_set_sampling(rn->solo, &o) != 0 || mkc_slots_clear(p, slot) != 0 ||
      mkc_slots_set_sampling(p, slot, &o) != 0)
    return -1;
  if (sc->share) {
    /* the shared positions: in the slot already; the solo session feeds them */
    rn->shared = mkc_slots_share(p, slot, sc->prompt, sc->n_prompt);
    if (rn->shared < 0) return -1;
    int t_max = mkc_session_graph(rn->solo)->t_max;
    for (int at = 0; at < rn->shared; at += t_max) {
      int n = rn->shared - at < t_max ? rn->shared - at : t_max;
      mkc_step_result r;
      if (mkc_session_step(rn->solo, sc->prompt + at, n, n - 1, &r) != 0 ||
          r.status != MKC_STATUS_OK)
        return -1;
    }
    rn->fed = rn->shared;
  }
  return 0;
}

/* Slot `slot`'s inputs for the next step (its script), also kept in in/n/fixed. */
static void next_inputs(run *rn, int solo_phase, int *in, int *n, int *fixed) {
  const script *sc = &rn->sc;
  if (rn->fed < sc->n_prompt) {
    int want = solo_phase && rn->fed == 0 && sc->solo ? sc->solo : sc->chunk;
    if (want > rn->t_chunk) want = rn->t_chunk; /* a paged kernel's chunks are steps */
    *n = sc->n_prompt - rn->fed < want ? sc->n_prompt - rn->fed : want;
    memcpy(in, sc->prompt + rn->fed, (size_t)*n * sizeof *in);
    *fixed = *n - 1;
    return;
  }
  int k = sc->drafts;
  in[0] = rn->last;
  for (int j = 1; j <= k; j++) in[j] = rn->greedy[(rn->n_out + j - 1) % rn->n_greedy];
  if (k > 0 && sc->wrong_every && rn->steps % sc->wrong_every == 0) {
    int j = 1 + rn->steps % k;
    in[j] = (in[j] + 1) % 256;
  }
  *n = 1 + k;
  *fixed = 0;
}

/* Mirrors slot's last step on its solo session and compares. */
static void mirror(run *rn, mkc_slots *p, int slot, const int *in, int n, int fixed, tally *t) {
  mkc_step_result r, rs;
  if (!mkc_slots_result(p, slot, &r)) {
    t->ok = 0;
    return;
  }
  int rc = mkc_session_step(rn->solo, in, n, fixed, &rs);
  t->ok = t->ok && rc == 0 && r.status == MKC_STATUS_OK && rs.status == MKC_STATUS_OK;
  t->same = t->same && r.n_out == rs.n_out && r.n_accepted == rs.n_accepted &&
            memcmp(r.out, rs.out, (size_t)r.n_out * sizeof *r.out) == 0 &&
            mkc_slots_pos(p, slot) == mkc_session_pos(rn->solo);
  int vocab = mkc_session_graph(rn->solo)->vocab;
  for (int i = 0; i < n; i++) {
    const float *a = mkc_slots_logits(p, slot, i), *b = mkc_session_logits(rn->solo, i);
    if (!a != !b) t->ok = 0;
    if (!a || !b) continue;
    double e = rel_err(a, b, vocab);
    if (!(e <= t->worst)) t->worst = e;
    t->bitwise = t->bitwise && memcmp(a, b, (size_t)vocab * sizeof *a) == 0;
  }
  if (r.status != MKC_STATUS_OK) return;
  if (rn->fed < rn->sc.n_prompt) {
    rn->fed += n;
    if (rn->fed < rn->sc.n_prompt) return;
    rn->n_out = 0;
  } else {
    rn->steps++;
    t->accepted += r.n_accepted;
  }
  for (int i = 0; i < r.n_out && rn->n_out < N_GEN + 32; i++) {
    if (rn->sc.temp == 0 && rn->n_out < rn->n_greedy && r.out[i] != rn->greedy[rn->n_out])
      t->lossless = 0;
    rn->out[rn->n_out++] = r.out[i];
  }
  rn->last = r.out[r.n_out - 1];
}

/* Runs the scripts on slots used[] (b of them) together for `steps` steps;
 * a slot with a solo first chunk takes it alone first. At step `swap`
 * (>= 0) slot used[swap_slot] restarts with script `next`. */
static tally run_slots(kernel *plain, mkc_slots *p, const int *used, const script *scripts, int b,
                       int steps, int swap, int swap_slot, const script *next) {
  tally t = {1, 1, 1, 0, 0, 0, 1, 0};
  run *runs = calloc((size_t)b, sizeof *runs);
  for (int i = 0; i < b; i++)
    if (run_start(&runs[i], plain, &scripts[i], p, used[i]) != 0) {
      fprintf(stderr, "test: slot %d's run did not start\n", used[i]);
      t.ok = 0;
    } else {
      t.shared += runs[i].shared;
    }
  for (int i = 0; i < b && t.ok; i++) /* the solo chunks, each slot alone */
    if (scripts[i].solo) {
      int in[MKC_CHUNK_CAP], n, fixed;
      next_inputs(&runs[i], 1, in, &n, &fixed);
      t.ok = mkc_slots_set_inputs(p, used[i], in, n, fixed) == 0 && mkc_slots_step(p) == 0;
      if (t.ok) mirror(&runs[i], p, used[i], in, n, fixed, &t);
    }
  for (int step = 0; step < steps && t.ok; step++, t.steps++) {
    if (step == swap) {
      mkc_session_close(runs[swap_slot].solo);
      if (run_start(&runs[swap_slot], plain, next, p, used[swap_slot]) != 0) t.ok = 0;
      t.shared += runs[swap_slot].shared;
    }
    int in[SLOTS][MKC_CHUNK_CAP], n[SLOTS], fixed[SLOTS];
    for (int i = 0; i < b && t.ok; i++) {
      next_inputs(&runs[i], 0, in[i], &n[i], &fixed[i]);
      t.ok = mkc_slots_set_inputs(p, used[i], in[i], n[i], fixed[i]) == 0;
    }
    t.ok = t.ok && mkc_slots_step(p) == 0;
    for (int i = 0; i < b && t.ok; i++) mirror(&runs[i], p, used[i], in[i], n[i], fixed[i], &t);
  }
  for (int i = 0; i < b; i++) mkc_session_close(runs[i].solo);
  free(runs);
  return t;
}

static script make_script(int len, int first, int chunk, int solo, int drafts, int wrong,
                          float temp, unsigned seed) {
  script sc = {.n_prompt = len,
               .chunk = chunk,
               .solo = solo,
               .drafts = drafts,
               .wrong_every = wrong,
               .temp = temp,
               .seed = seed};
  for (int i = 0; i < len; i++) sc.prompt[i] = (first + 37 * i + i * i) % 256;
  return sc;
}

/* Seven scripts (prompts of 5..40, chunks alone and beside decodes, 0..3
 * drafts, 3 samplers) and the prompt a restarted slot takes. */
static void seven(script *sc, script *next) {
  sc[0] = make_script(11, 1, 1, 0, 0, 0, 0, 0);
  sc[1] = make_script(17, 2, 2, 0, 1, 2, 0, 0);
  sc[2] = make_script(5, 3, 3, 0, 2, 3, 0.9f, 5);
  sc[3] = make_script(40, 4, 4, 20, 3, 2, 0, 0);
  sc[4] = make_script(23, 5, 2, 0, 1, 0, 0.6f, 8);
  sc[5] = make_script(8, 6, 1, 0, 0, 0, 0, 0);
  sc[6] = make_script(30, 7, 3, 18, 2, 4, 0, 0);
  *next = make_script(14, 200, 2, 0, 1, 3, 0, 0);
}

/* The seven scripts with 9..15 drafts each, in chunks of 16, two sampled. */
static void many_drafts(script *sc) {
  script next;
  seven(sc, &next);
  for (int i = 0; i < SLOTS; i++) {
    sc[i].drafts = 9 + i;
    sc[i].chunk = 16;
    sc[i].solo = 0;
  }
  sc[0].temp = 0.8f; /* sampled rows among them: the candidates stage and top-p */
  sc[0].seed = 12;
  sc[5].temp = 0.7f;
  sc[5].seed = 31;
}

/* A wide kernel (f32 KV) with a planted bug against the f32 plain kernel:
 * the tally of the many-drafts scripts. */
static tally planted_wide(kernel *plain32, const char *from, const char *to, int *planted_ok) {
  kernel k;
  tally t = {0};
  *planted_ok = 0;
  if (kernel_open_rows(&k, NULL, SLOTS, 0, SLOTS * (DRAFT_MAX + 1), "f32") != 0) return t;
  if (fixture_plant(&k.src, from, to) == 0) {
    *planted_ok = 1;
    mkc_slots *p = mkc_slots_open(test_backend(), &k.g, &k.src, &k.w, BLOCKS);
    if (p) {
      int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
      script sc[SLOTS];
      many_drafts(sc);
      t = run_slots(plain32, p, used, sc, SLOTS, 6, -1, 0, NULL);
      mkc_slots_close(p);
    }
  }
  kernel_close(&k);
  return t;
}

/* Wide steps (mkc gen --step-rows): 7 slots of up to t_max 16 rows, 112 in
 * all, so a step of several slots past 16 rows runs the tiled path and its
 * LM head gives every row its logits: each slot its solo run, with the seven
 * scripts (steps of up to 16 rows: the decode path) and with 9..15 drafts each (up to 112
 * rows: two tiles of 64). The tiled path's sums are not the decode path's in
 * order, and a bf16 cache turns the last bit of a K/V value into a bf16 ulp
 * now and then, which later steps carry: the logits are held to TOL on an f32
 * cache against an f32 plain kernel; on bf16, whole caches and paged, the
 * tokens must be the solo runs' (and the greedy ones plain decoding's). */
static void wide(kernel *plain_bf16) {
  kernel plain32;
  if (!CHECK(kernel_open_rows(&plain32, NULL, 0, 0, 0, "f32") == 0,
             "generate tiny, f32 KV (the oracle)"))
    return;
  const char *types[3] = {"f32", NULL, NULL};
  for (int run = 0; run < 3; run++) {
    int pages = run == 2 ? 48 : 0, f32 = types[run] != NULL;
    const char *what = run == 0 ? "f32 KV" : run == 1 ? "bf16 KV" : "bf16 KV, 48 pages";
    kernel wk, *plain = f32 ? &plain32 : plain_bf16;
    if (!CHECK(kernel_open_rows(&wk, NULL, SLOTS, pages, SLOTS * (DRAFT_MAX + 1), types[run]) == 0,
               "generate tiny, %d slots, steps of %d rows (t_max %d), %s", SLOTS,
               SLOTS * (DRAFT_MAX + 1), DRAFT_MAX + 1, what))
      break;
    CHECK(wk.g.step_rows == SLOTS * (DRAFT_MAX + 1) && wk.g.t_max == DRAFT_MAX + 1 &&
              strstr(wk.src.source, "mkc_gemm_lm_head(") != NULL,
          "plan: %d rows per step, %d per slot; the LM head has its tiled variant", wk.g.step_rows,
          wk.g.t_max);
    mkc_slots *p = mkc_slots_open(test_backend(), &wk.g, &wk.src, &wk.w, BLOCKS);
    if (CHECK(p != NULL, "open the wide slots, %s", what)) {
      int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
      script sc[SLOTS], next;
      seven(sc, &next);
      tally t = run_slots(plain, p, used, sc, SLOTS, 20, 8, 2, &next);
      CHECK(t.ok && t.steps == 20 && t.same && (!f32 || t.worst <= TOL) && t.lossless,
            "wide, %s: the seven scripts (up to 16 rows: the decode path), slot 2 restarted: "
            "every slot its solo run's tokens%s (logits %.2g, %d accepted)",
            what, f32 ? " and logits" : "", t.worst, t.accepted);
      many_drafts(sc);
      t = run_slots(plain, p, used, sc, SLOTS, 14, -1, 0, NULL);
      CHECK(t.ok && t.steps == 14 && t.same && (!f32 || t.worst <= TOL) && t.lossless,
            "wide, %s: 7 slots of 1 + 9..15 drafts (up to 112 rows, 2 tiles), 2 sampled: every "
            "slot its solo run's tokens%s (logits %.2g, %d accepted)",
            what, f32 ? " and logits" : "", t.worst, t.accepted);
      mkc_slots_close(p);
    }
    kernel_close(&wk);
  }
  /* planted: a wide step's K/V rows at the step's first position + t (not their slots'); its
   * LM head's greedy choice the first id of each tile */
  int planted_ok;
  tally t = planted_wide(&plain32, "int at = mkc_row_pos(rows, pos, t);\n      if (hh < heads) {",
                         "int at = pos + t;\n      if (hh < heads) {", &planted_ok);
  CHECK(planted_ok && t.steps > 0 && !(t.ok && t.same && t.worst <= TOL),
        "planted, wide: the tiled K/V append ignores the row map: caught (%d steps)", t.steps);
  t = planted_wide(&plain32, "best_i[m0 + r] = n0 + j;", "best_i[m0 + r] = n0;", &planted_ok);
  CHECK(planted_ok && t.steps > 0 && !(t.ok && t.same && t.lossless),
        "planted, wide: the tiled LM head's greedy id is its tile's first: caught (%d steps)",
        t.steps);
  kernel_close(&plain32);
}

/* Sliding windows, paged: swa-tiny (every layer a window of 16) and
 * gemma-tiny (2 local : 1 global) keep a window layer's positions on the
 * slot's pages as a global layer's, and read their window of them. Seven
 * slots past 3 windows each (and gemma-tiny in wide steps too, and
 * gemma3-tiny's whole layer, the post-norm stage over every slot's rows; on
 * cuda on 4 blocks, since its shared memory for heads of 256 leaves the fake
 * driver's 2-SM device room for no more): each slot its solo run on the
 * plain kernel, whose window layers are rings. */
static void windows(void) {
  const char *presets[4] = {"swa-tiny", "gemma-tiny", "gemma-tiny", "gemma3-tiny"};
  for (int i = 0; i < 4; i++) {
    int rows = i >= 2 ? SLOTS * (DRAFT_MAX + 1) : 0;
    kernel plain, pk;
    if (!CHECK(kernel_open_rows(&plain, presets[i], 0, 0, 0, NULL) == 0 &&
                   kernel_open_rows(&pk, presets[i], SLOTS, SLOTS * (MAX_CTX / MKC_KV_PAGE), rows,
                                    NULL) == 0,
               "generate %s, plain and %d slots paged%s", presets[i], SLOTS, rows ? ", wide" : ""))
      return;
    /* on cuda, every session of this preset on the one grid of 4 blocks (the cpu keeps BLOCKS) */
    if (i == 3) setenv("MKC_CUDA_BLOCKS", "4", 1);
    mkc_slots *p = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
    if (CHECK(p != NULL, "open %s's paged slots", presets[i])) {
      int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
      script sc[SLOTS], next;
      /* far enough past 3 windows: chunks of 2, 48 steps; wide, greedy 9..15 drafts, 14 steps */
      int steps = rows ? 14 : 48;
      if (rows)
        many_drafts(sc);
      else
        seven(sc, &next);
      for (int s = 0; s < SLOTS; s++) {
        if (rows) sc[s].temp = 0;
        if (!rows) sc[s].chunk = 2;
      }
      tally t = run_slots(&plain, p, used, sc, SLOTS, steps, -1, 0, NULL);
      int least = MAX_CTX;
      for (int s = 0; s < SLOTS; s++)
        least = mkc_slots_pos(p, s) < least ? mkc_slots_pos(p, s) : least;
      CHECK(t.ok && t.steps == steps && t.same && (rows || t.worst <= TOL) && t.lossless &&
                least > 3 * 16,
            "%s, paged%s: 7 slots to position %d at least (3 windows of 16): every slot its solo "
            "run on the rings (logits %.2g, %d accepted)",
            presets[i], rows ? ", wide steps" : "", least, t.worst, t.accepted);
      mkc_slots_close(p);
    }
    kernel_close(&pk);
    kernel_close(&plain);
    slot_kernels_one_grid();
  }
}

/* Experts (moe-tiny), paged, in wide steps: every slot's rows choose their own experts, 7 slots
 * with 9..15 drafts a step (greedy) beside chunks of 2, each slot its solo run on the plain
 * kernel. */
static void experts(void) {
  int rows = SLOTS * (DRAFT_MAX + 1);
  kernel plain, pk;
  if (!CHECK(kernel_open_rows(&plain, "moe-tiny", 0, 0, 0, NULL) == 0 &&
                 kernel_open_rows(&pk, "moe-tiny", SLOTS, SLOTS * (MAX_CTX / MKC_KV_PAGE), rows,
                                  NULL) == 0,
             "generate moe-tiny, plain and %d slots paged, wide", SLOTS))
    return;
  mkc_slots *p = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  if (CHECK(p != NULL, "open moe-tiny's paged slots")) {
    int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
    script sc[SLOTS];
    many_drafts(sc);
    for (int s = 0; s < SLOTS; s++) sc[s].temp = 0;
    tally t = run_slots(&plain, p, used, sc, SLOTS, 14, -1, 0, NULL);
    CHECK(t.ok && t.steps == 14 && t.same && t.lossless,
          "moe-tiny, paged, wide steps: 7 slots, each slot its solo run (logits %.2g, %d "
          "accepted)",
          t.worst, t.accepted);
    mkc_slots_close(p);
  }
  kernel_close(&pk);
  kernel_close(&plain);
  slot_kernels_one_grid();
}

/* Steps of a planted kernel against the solo runs: the tally of 2 slots. */
static tally planted(kernel *plain, int kv_pages, const char *from, const char *to,
                     int *planted_ok) {
  kernel k;
  tally t = {0};
  *planted_ok = 0;
  if (kernel_open_paged(&k, SLOTS, kv_pages) != 0) return t;
  if (fixture_plant(&k.src, from, to) == 0) {
    *planted_ok = 1;
    mkc_slots *p = mkc_slots_open(test_backend(), &k.g, &k.src, &k.w, BLOCKS);
    if (p) {
      int used[2] = {1, 4};
      script sc[2] = {make_script(9, 11, 3, 0, 2, 3, 0, 0), make_script(5, 90, 2, 0, 1, 0, 0, 0)};
      t = run_slots(plain, p, used, sc, 2, 10, -1, 0, NULL);
      mkc_slots_close(p);
    }
  }
  kernel_close(&k);
  return t;
}

/* The pages slot s's cache needs for its pos, against what the pool holds. */
static int pages_for(mkc_slots *p, int s) {
  return (mkc_slots_pos(p, s) + MKC_KV_PAGE - 1) / MKC_KV_PAGE;
}

/* A paged kernel: 7 slots on a pool of 48 pages (a whole cache each would be
 * 7 x 16): every slot still its solo run; the pages held are what the
 * tokens need; a pool too small says so; a cleared slot's pages return. */
static void paged(kernel *plain) {
  kernel pk;
  if (!CHECK(kernel_open_paged(&pk, SLOTS, 48) == 0, "generate tiny, %d slots on 48 KV pages",
             SLOTS))
    return;
  size_t page_bytes = pk.g.kv_bytes / 48;
  CHECK(pk.g.kv_pages == 48 && pk.g.t_chunk == UBATCH &&
            page_bytes * 48 * SLOTS * (MAX_CTX / MKC_KV_PAGE) ==
                (size_t)48 * SLOTS * plain->g.kv_bytes,
        "plan: a pool of 48 pages of %d positions (%zu bytes each; a slot's whole cache is "
        "%d pages), prompt chunks tiled past t_max",
        MKC_KV_PAGE, page_bytes, MAX_CTX / MKC_KV_PAGE);
  mkc_slots *p = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  if (CHECK(p != NULL, "open the paged slots")) {
    int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
    script sc[SLOTS], next;
    seven(sc, &next);
    tally t = run_slots(plain, p, used, sc, SLOTS, 24, 8, 2, &next);
    CHECK(t.ok && t.steps == 24 && t.same && t.worst <= TOL && t.lossless,
          "paged, B = 7 (a restart at step 8, %d accepted): each slot its solo run (logits %.2g), "
          "greedy lossless",
          t.accepted, t.worst);
    int need = 0, bytes_ok = 1;
    for (int s = 0; s < SLOTS; s++) {
      need += pages_for(p, s);
      bytes_ok = bytes_ok && mkc_slots_kv_used(p, s) == (size_t)pages_for(p, s) * page_bytes;
    }
    CHECK(mkc_slots_pages_held(p) == need && bytes_ok,
          "pages held: %d, what the slots' %d.. positions need (each slot's bytes: its pages)",
          mkc_slots_pages_held(p), mkc_slots_pos(p, 0));
    int of3 = pages_for(p, 3);
    CHECK(of3 > 0 && mkc_slots_clear(p, 3) == 0 && mkc_slots_pages_held(p) == need - of3 &&
              mkc_slots_kv_used(p, 3) == 0,
          "clear slot 3: its %d pages go back to the pool", of3);
    mkc_slots_close(p);
  }
  /* a pool too small: 4 pages, a prompt of 70 positions */
  kernel small;
  if (kernel_open_paged(&small, SLOTS, 4) == 0) {
    mkc_slots *q = mkc_slots_open(test_backend(), &small.g, &small.src, &small.w, BLOCKS);
    int in[16] = {0}, rc = 0, steps = 0;
    check_stderr_begin();
    while (q && rc == 0 && steps < 10) {
      rc = mkc_slots_set_inputs(q, 1, in, 16, 15) || mkc_slots_step(q);
      steps++;
    }
    char *err = check_stderr_end();
    CHECK(q && rc != 0 && steps == 5 && mkc_slots_pos(q, 1) == 64 && err &&
              strstr(err, "slot 1 needs a KV page for position 64, and all 4 pages of the pool are "
                          "held (--kv-pages)"),
          "4 pages: 64 positions fit, the fifth page is refused with the reason");
    free(err);
    mkc_slots_close(q);
    kernel_close(&small);
  }
  kernel_close(&pk);
}

/* Two prompts with the same first 200 tokens: the second, started once the
 * first is in, shares its 12 full pages (192 positions; the 13th page is
 * partly the first's own) and stores them once; both decode as alone. */
static void shared_prefix(kernel *plain) {
  kernel pk;
  if (!CHECK(kernel_open_paged(&pk, SLOTS, 48) == 0, "generate tiny, %d slots on 48 pages", SLOTS))
    return;
  mkc_slots *p = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  if (CHECK(p != NULL, "open the paged slots for sharing")) {
    script a = make_script(210, 33, 12, 0, 0, 0, 0, 0), b = a;
    script dummy = make_script(3, 9, 1, 0, 3, 0, 0, 0);
    b.n_prompt = 215;
    for (int i = 200; i < 215; i++) b.prompt[i] = (7 * i + 5) % 256;
    b.chunk = 3;
    b.drafts = 1;
    b.temp = 0.8f; /* sampled: the history of the shared positions feeds its penalties too */
    b.seed = 4;
    b.share = 1;
    int used[2] = {1, 4};
    script sc[2] = {a, dummy};
    tally t = run_slots(plain, p, used, sc, 2, 36, 19, 1, &b);
    int pa = pages_for(p, 1), pb = pages_for(p, 4);
    CHECK(t.ok && t.steps == 36 && t.same && t.worst <= TOL && t.shared == 192,
          "a 215-token prompt after a 210-token one with the same first 200: 192 positions shared "
          "(%d), each its solo run (logits %.2g)",
          t.shared, t.worst);
    CHECK(mkc_slots_pages_held(p) == pa + pb - 12,
          "the shared pages stored once: %d held = %d + %d - 12", mkc_slots_pages_held(p), pa, pb);
    /* the index compares tokens: one changed at position 100 shares 6 pages; the first's own
     * prompt, all 13 of its full prompt pages */
    script c = a;
    c.prompt[100] = (c.prompt[100] + 1) % 256;
    int six = mkc_slots_share(p, 6, c.prompt, c.n_prompt);
    int held = mkc_slots_pages_held(p), clear6 = mkc_slots_clear(p, 6);
    int all = mkc_slots_share(p, 6, a.prompt, a.n_prompt);
    CHECK(six == 96 && held == pa + pb - 12 && clear6 == 0 && all == 208 &&
              mkc_slots_clear(p, 6) == 0 && mkc_slots_pages_held(p) == pa + pb - 12,
          "a prompt differing at position 100 shares 96 positions (%d), the first's own 208 (%d); "
          "sharing holds no new page",
          six, all);
    int full_a = mkc_slots_pos(p, 1) / MKC_KV_PAGE, kept = mkc_slots_pages_kept(p);
    CHECK(mkc_slots_clear(p, 1) == 0 && mkc_slots_pages_held(p) == pb &&
              mkc_slots_pages_kept(p) == kept + full_a - 12,
          "the first cleared: the second still holds its %d pages, the shared ones among them; "
          "the first's other %d full pages are kept",
          pb, full_a - 12);
    /* the first's prompt again, on another slot: 13 pages, the 13th one kept, and its run is
     * its solo run's */
    script again = a;
    again.share = 1;
    int six_slot[1] = {6};
    t = run_slots(plain, p, six_slot, &again, 1, 10, -1, 0, NULL);
    CHECK(t.ok && t.steps == 10 && t.same && t.worst <= TOL && t.lossless && t.shared == 208 &&
              mkc_slots_pages_kept(p) == kept + full_a - 13,
          "the first's prompt again: 208 positions shared (%d), one of them a kept page, and "
          "decoded as alone (logits %.2g)",
          t.shared, t.worst);
    mkc_slots_close(p);
  }
  kernel_close(&pk);
}

/* Kept pages leave when the pool needs them: on 24 pages, a 200-token
 * prompt's 12 full pages are kept after its slot is cleared; another
 * prompt of 200 takes the 12 free pages, then the kept ones go, all of
 * them, and sharing the first prompt finds nothing. */
static void kept_evicted(kernel *plain) {
  kernel pk;
  if (!CHECK(kernel_open_paged(&pk, SLOTS, 24) == 0, "generate tiny, %d slots on 24 pages", SLOTS))
    return;
  mkc_slots *p = mkc_slots_open(test_backend(), &pk.g, &pk.src, &pk.w, BLOCKS);
  if (CHECK(p != NULL, "open the paged slots for eviction")) {
    script a = make_script(200, 21, 16, 0, 0, 0, 0, 0), b = make_script(200, 99, 16, 0, 0, 0, 0, 0);
    int used[1] = {2};
    tally t = run_slots(plain, p, used, &a, 1, 14, -1, 0, NULL);
    int pos_a = mkc_slots_pos(p, 2);
    int ok = t.ok && mkc_slots_clear(p, 2) == 0 && mkc_slots_pages_kept(p) == pos_a / MKC_KV_PAGE;
    t = run_slots(plain, p, used, &b, 1, 14, -1, 0, NULL);
    CHECK(ok && t.ok && t.same && t.worst <= TOL && mkc_slots_pages_kept(p) == 0 &&
              mkc_slots_share(p, 5, a.prompt, a.n_prompt) == 0,
          "24 pages: the first prompt's 12 kept pages leave for the second's 13th; it decodes as "
          "alone, and the first's prefix is no longer found");
    mkc_slots_close(p);
  }
  kernel_close(&pk);
}

static void refusals(kernel *k) {
  mkc_slots *p = mkc_slots_open(test_backend(), &k->g, &k->src, &k->w, 5);
  if (!CHECK(p != NULL, "open for the refusals")) return;
  int in[MKC_CHUNK_CAP] = {0};
  /* 9 + 9 rows: more than t_max together */
  mkc_step_result r0, r1;
  int ok = mkc_slots_set_inputs(p, 0, in, 9, 8) == 0 && mkc_slots_set_inputs(p, 2, in, 9, 8) == 0 &&
           mkc_slots_step(p) == 0 && mkc_slots_result(p, 0, &r0) && mkc_slots_result(p, 2, &r1);
  CHECK(ok && r0.status == MKC_STATUS_BAD_INPUT && r1.status == MKC_STATUS_BAD_INPUT &&
            mkc_slots_pos(p, 0) == 0 && mkc_slots_pos(p, 2) == 0,
        "two slots of 9 inputs (18 > t_max %d): both refused, nothing moved", k->g.t_max);
  ok = mkc_slots_set_inputs(p, 0, in, 20, 19) == 0 && mkc_slots_set_inputs(p, 2, in, 1, 0) == 0 &&
       mkc_slots_step(p) == 0 && mkc_slots_result(p, 0, &r0) && mkc_slots_result(p, 2, &r1);
  CHECK(ok && r0.status == MKC_STATUS_BAD_INPUT && r1.status == MKC_STATUS_BAD_INPUT,
        "a prompt chunk past t_max beside another slot: refused");
  ok = mkc_slots_set_inputs(p, 0, in, 20, 19) == 0 && mkc_slots_step(p) == 0 &&
       mkc_slots_result(p, 0, &r0);
  CHECK(ok && r0.status == MKC_STATUS_OK && mkc_slots_pos(p, 0) == 20 && mkc_slots_pos(p, 2) == 0,
        "the same chunk alone: runs (pos 20; slot 2 still 0)");
  CHECK(!mkc_slots_result(p, 2, &r1), "a slot that sat out has no result");
  int bad = 256;
  CHECK(mkc_slots_set_inputs(p, 1, &bad, 1, 0) == -1, "a token outside the vocabulary: refused");
  CHECK(mkc_slots_set_inputs(p, SLOTS, in, 1, 0) == -1, "slot %d of %d: refused", SLOTS, SLOTS);
  CHECK(mkc_slots_set_inputs(p, 1, in, 3, 3) == -1, "n_fixed = n: refused");
  CHECK(mkc_slots_clear(p, 0) == 0 && mkc_slots_pos(p, 0) == 0, "clear: pos 0 again");
  mkc_slots_close(p);
}

/* planted() with kv_pages 0 in a child process, for a bug that may crash the
 * emulator: "caught", "caught: the run crashed", "not caught" or "not
 * planted". */
static const char *planted_apart(kernel *plain, const char *from, const char *to) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int planted_ok;
    tally t = planted(plain, 0, from, to, &planted_ok);
    _exit(!planted_ok ? 2 : t.steps > 0 && !(t.ok && t.same && t.worst <= TOL) ? 1 : 0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return "not planted";
  if (WIFSIGNALED(status)) return "caught: the run crashed";
  return WEXITSTATUS(status) == 1   ? "caught"
         : WEXITSTATUS(status) == 2 ? "not planted"
                                    : "not caught";
}

int main(void) {
  kernel plain, sk;
  slot_kernels_one_grid();
  if (!CHECK(kernel_open(&plain, 0) == 0 && kernel_open(&sk, SLOTS) == 0,
             "generate tiny, T <= %d: plain and %d slots", DRAFT_MAX + 1, SLOTS))
    return check_done();
  CHECK(sk.g.slots == SLOTS && sk.g.kv_bytes == SLOTS * plain.g.kv_bytes &&
            sk.g.history_floats >= (size_t)MAX_CTX,
        "plan: %d slots, each a whole cache (%zu KV bytes = %d x %zu)", sk.g.slots, sk.g.kv_bytes,
        SLOTS, plain.g.kv_bytes);
  CHECK(strstr(sk.src.source, "#define MKC_SLOTS 7 /*") &&
            !strstr(plain.src.source, "#define MKC_KV_SLOT"),
        "the slot kernel names its slots; the plain kernel's text has none");
  {
    char graph[4200];
    snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
    mkc_graph g;
    mkc_kernel_src src;
    mkc_gen_opts o = {.graph_path = graph, .preset = "tiny", .slots = 1};
    check_stderr_begin();
    int rc = mkc_codegen(&o, &g, &src);
    char *err = check_stderr_end();
    CHECK(rc != 0 && err && strstr(err, "--slots must be 2..64"), "--slots 1: refused");
    free(err);
  }

  if (test_skip_without_gpu()) return 0;
  mkc_slots *p = mkc_slots_open(test_backend(), &sk.g, &sk.src, &sk.w, BLOCKS);
  if (!CHECK(p != NULL, "open %d slots on the %s backend", SLOTS,
             test_backend() == MKC_BACKEND_CUDA ? "cuda" : "cpu"))
    return check_done();

  /* one slot alone, a solo chunk past t_max first: the plain kernel, bit for bit */
  for (int slot = 0; slot < SLOTS; slot += 5) {
    int used[1] = {slot};
    script sc[1] = {make_script(40, 3 + slot, 4, 24, 3, 2, 0, 0)};
    tally t = run_slots(&plain, p, used, sc, 1, 16, -1, 0, NULL);
    CHECK(t.ok && t.steps == 16 && t.same && t.bitwise && t.lossless,
          "B = 1 on slot %d (a 24-token chunk alone, then chunks of 4 and 3 drafts, %d accepted): "
          "the plain kernel's tokens and logits bit for bit, greedy lossless",
          slot, t.accepted);
  }
  /* two slots */
  {
    int used[2] = {6, 2};
    script sc[2] = {make_script(13, 50, 5, 0, 4, 3, 0, 0), make_script(7, 120, 2, 0, 1, 0, 0, 0)};
    tally t = run_slots(&plain, p, used, sc, 2, 20, -1, 0, NULL);
    CHECK(t.ok && t.steps == 20 && t.same && t.worst <= TOL && t.lossless,
          "B = 2 (prompts of 13 and 7, 4 and 1 drafts, %d accepted, %d steps): each slot its solo "
          "run (logits %.2g), greedy lossless",
          t.accepted, t.steps, t.worst);
    used[0] = 3;
    sc[0] = make_script(10, 9, 3, 0, 2, 0, 0.8f, 1234);
    sc[1] = make_script(6, 77, 6, 0, 3, 2, 0.7f, 99);
    t = run_slots(&plain, p, used, sc, 2, 16, -1, 0, NULL);
    CHECK(t.ok && t.steps == 16 && t.same && t.worst <= TOL,
          "B = 2 sampled (top-k 40: the candidates stage; top-p 0.9), drafts: each slot its solo "
          "run's draws (logits %.2g, %d accepted)",
          t.worst, t.accepted);
  }
  /* seven slots: ragged rows 1 + drafts (16 in all), samplers mixed, a restart mid-run */
  {
    int used[SLOTS] = {0, 1, 2, 3, 4, 5, 6};
    script sc[SLOTS], next;
    seven(sc, &next);
    tally t = run_slots(&plain, p, used, sc, SLOTS, 24, -1, 0, NULL);
    CHECK(t.ok && t.steps == 24 && t.same && t.worst <= TOL && t.lossless,
          "B = 7 (prompts 5..40, chunks alone and beside decodes, 0..3 drafts, 3 samplers, %d "
          "steps, %d accepted): each slot its solo run (logits %.2g), greedy lossless",
          t.steps, t.accepted, t.worst);
    t = run_slots(&plain, p, used, sc, SLOTS, 20, 8, 2, &next);
    CHECK(t.ok && t.steps == 20 && t.same && t.worst <= TOL && t.lossless,
          "B = 7, slot 2 cleared at step 8 and given a new prompt: every slot its solo run "
          "(logits %.2g)",
          t.worst);
  }
  mkc_slots_close(p);

  paged(&plain);
  wide(&plain);
  windows();
  experts();
  shared_prefix(&plain);
  kept_evicted(&plain);
  refusals(&sk);

  int planted_ok;
  tally t = planted(&plain, 0, "(long)mkc_row_slot(rows, t) * MKC_KV_SLOT", "(long)0 * MKC_KV_SLOT",
                    &planted_ok);
  CHECK(planted_ok && t.steps > 0 && !(t.ok && t.same && t.worst <= TOL),
        "planted: every row on slot 0's cache: caught (%d steps)", t.steps);
  t = planted(&plain, 0, "rm->pos[r] = rm->spos[s] + t;", "rm->pos[r] = rm->spos[s];", &planted_ok);
  CHECK(planted_ok && t.steps > 0 && !(t.ok && t.same && t.worst <= TOL),
        "planted: a slot's rows all at its first position: caught (%d steps)", t.steps);
  /* the map's barrier deleted: threads read last step's map, which may send a read anywhere,
   * so the run is a child of its own and a crash counts as caught */
  if (test_backend() == MKC_BACKEND_CUDA) { /* CUDA does not survive a fork */
    CHECK_SKIP("planted: the row map's barrier deleted: a child process on the cpu backend only "
               "(on a GPU, compute-sanitizer's racecheck of tests/gpu/run.sh covers the map)");
  } else {
    const char *how = planted_apart(&plain, "mkc_sync_block(); /* the map is the block's */", ";");
    CHECK(strcmp(how, "not caught") != 0 && strcmp(how, "not planted") != 0,
          "planted: the row map read before thread 0 wrote it (its barrier deleted): %s", how);
  }
  t = planted(&plain, 48, "rows->table[mkc_row_slot(rows, t) * MKC_SLOT_PAGES + p / MKC_KV_PAGE]",
              "rows->table[mkc_row_slot(rows, t) * MKC_SLOT_PAGES]", &planted_ok);
  CHECK(planted_ok && t.steps > 0 && !(t.ok && t.same && t.worst <= TOL),
        "planted, paged: every position on its slot's first page: caught (%d steps)", t.steps);

  kernel_close(&sk);
  kernel_close(&plain);
  return check_done();
}
