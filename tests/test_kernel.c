/* The emitted megakernel on the cpu backend against the reference executor:
 * prompt chunks and 64 plain decode steps for tiny, odd, qwen2-tiny,
 * qwen3-tiny and the RoPE scalings (llama3-tiny, yarn-tiny, linear-tiny, longrope-tiny,
 * whose trained contexts the 73 positions pass; partial-tiny, 12 of 16 dims rotated), the sliding
 * windows (swa-tiny, gemma-tiny, whose rings of rows the 73 positions wrap), Gemma 3's layers
 * (gemma3-tiny), Gemma 2's soft caps (gemma2-tiny), Gemma 1's (gemma1-tiny), SmolLM3's layers
 * without RoPE (smollm3-tiny), EXAONE 4's norms after only (exaone4-tiny, exaone4-swa-tiny),
 * experts (moe-tiny, mixtral-tiny) and gpt-oss (gptoss-tiny: sinks, biases, its glu), logits within
 * 1e-4 (relative to the largest reference logit) at every step and every input, the same greedy
 * tokens, the same pos, and every K and V value in the kernel's cache (bf16 by default) rounded as
 * the reference rounds it: where the kernel's float and the reference's double straddle a rounding
 * midpoint, the reference takes the kernel's neighbour (mkc_ref_follow_kv), since one such value
 * moves a logit by up to ~1e-3. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "mkc_state.h"
#include "exec/reference.h"

#define TOL 1e-4
#define STEPS 64

typedef struct pair {
  mkc_session *cpu, *ref;
  double worst; /* max relative logit error so far */
  int worst_step;
  int mismatch_step; /* first step whose outputs differ; -1 */
} pair;

/* One step on both backends; compares the logits of every input and the outputs. */
static int step_both(pair *p, const mkc_graph *g, const int *in, int T, int f, int step,
                     mkc_step_result *r) {
  mkc_step_result rr;
  if (mkc_session_step(p->cpu, in, T, f, r)) return -1;
  mkc_ref_follow_kv(mkc_session_ref(p->ref), mkc_session_kv(p->cpu));
  if (mkc_session_step(p->ref, in, T, f, &rr)) return -1;
  for (int t = 0; t < T; t++) {
    double e = rel_err(mkc_session_logits(p->cpu, t), mkc_session_logits(p->ref, t), g->vocab);
    if (!(e <= p->worst)) {
      p->worst = e;
      p->worst_step = step;
    }
  }
  int same = r->status == rr.status && r->n_out == rr.n_out &&
             mkc_session_pos(p->cpu) == mkc_session_pos(p->ref);
  for (int i = 0; same && i < r->n_out; i++) same = r->out[i] == rr.out[i];
  if (!same && p->mismatch_step < 0) p->mismatch_step = step;
  return 0;
}

/* The kernel's shape on this run, for messages (see main). */
static const char *shape_note = "";

/* MKC_TEST_ONLY=NAME runs that preset's comparisons alone. */
static void compare(const char *preset_name, int draft_max, int blocks) {
  const char *only = getenv("MKC_TEST_ONLY");
  if (only && *only && strcmp(only, preset_name) != 0) return;
  char preset[96]; /* the name in messages: with the matvec shape when it is not the default */
  snprintf(preset, sizeof preset, "%s%s", preset_name, shape_note);
  fixture fx;
  if (fixture_open(&fx, preset_name, draft_max, 0, 42) != 0) {
    CHECK(0, "%s: generate the kernel", preset);
    return;
  }
  const mkc_graph *g = &fx.g;
  pair p = {mkc_session_open(test_backend(), g, &fx.src, &fx.w, blocks),
            mkc_session_open(MKC_BACKEND_REF, g, &fx.src, &fx.w, 0), 0, -1, -1};
  if (!p.cpu || !p.ref) {
    CHECK(0, "%s: open cpu and ref sessions", preset);
    goto done;
  }
  const int prompt[] = {1, 17, 42, 99, 5, 200, 33, 7, 250};
  const int n_prompt = (int)(sizeof prompt / sizeof *prompt);
  mkc_step_result r = {0};
  int step = 0, ok = 1;
  /* Prompt chunks: every input fixed, as many per step as the kernel takes. */
  for (int pos = 0; ok && pos < n_prompt; step++) {
    int T = n_prompt - pos < g->t_max ? n_prompt - pos : g->t_max;
    ok = step_both(&p, g, prompt + pos, T, T - 1, step, &r) == 0 && r.status == MKC_STATUS_OK;
    pos += T;
  }
  CHECK(ok, "%s: prompt of %d tokens in chunks of <= %d runs", preset, n_prompt, g->t_max);
  CHECK_INT(mkc_session_pos(p.cpu), n_prompt, "%s: pos after the prompt", preset);
  int tokens[STEPS + 1], distinct = 0;
  tokens[0] = r.out[0];
  for (int i = 0; ok && i < STEPS; i++, step++) {
    ok = step_both(&p, g, &tokens[i], 1, 0, step, &r) == 0 && r.status == MKC_STATUS_OK &&
         r.n_out == 1;
    tokens[i + 1] = r.out[0];
  }
  for (int i = 0; i <= STEPS; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= tokens[j] == tokens[i];
    distinct += !seen;
  }
  CHECK(ok, "%s: %d decode steps run on %d blocks x %d threads", preset, STEPS, blocks, g->threads);
  CHECK(p.worst <= TOL,
        "%s: logits within %g of the reference at every step (worst %.3g at step %d)", preset, TOL,
        p.worst, p.worst_step);
  CHECK(p.mismatch_step < 0,
        "%s: greedy tokens and pos identical to the reference (first difference: step %d)", preset,
        p.mismatch_step);
  const mkc_ref_kv_stats *kv = mkc_ref_kv_check(mkc_session_ref(p.ref));
  CHECK(kv->checked == (long)(n_prompt + STEPS) * 2 * g->n_layers * g->n_kv_heads * g->head_dim &&
            kv->mismatched == 0,
        "%s: the kernel's %ld K/V values (%s) are the reference's (%ld followed at a midpoint; "
        "%.2g of the head used of %.2g)%s%s",
        preset, kv->checked, mkc_kv_dtype_name(g->kv_dtype), kv->followed, kv->max_dev,
        MKC_REF_KV_TIE, kv->mismatched ? "; first mismatch: " : "", kv->first);
  CHECK_INT(mkc_session_pos(p.cpu), n_prompt + STEPS, "%s: pos counts every processed token",
            preset);
  /* A sequence of one repeated token would make the comparison weak. */
  CHECK(distinct >= 8, "%s: the decoded sequence is varied (%d distinct tokens)", preset, distinct);
done:
  mkc_session_close(p.cpu);
  mkc_session_close(p.ref);
  fixture_close(&fx);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  compare("tiny", 4, 4);
  compare("odd", 4, 3);
  compare("tiny", 0, 1); /* T_MAX 1 and a single block: no cross-block traffic at all */
  compare("odd", 7, 5);  /* T_MAX 8 */
  /* Q/K/V biases; per-head Q/K norms, whose heads are finished by the warp that completes them */
  compare("qwen2-tiny", 4, 4);
  compare("qwen2-tiny", 7, 5);
  compare("qwen3-tiny", 4, 3);
  compare("qwen3-tiny", 0, 1); /* every head finished within the one block */
  compare("qwen3-tiny", 7, 5);
  /* RoPE scalings, each frequency computed in the kernel from the preset's parameters */
  compare("llama3-tiny", 4, 4);
  compare("yarn-tiny", 4, 3);
  compare("linear-tiny", 7, 5);   /* the heads a per-head norm finishes */
  compare("longrope-tiny", 4, 3); /* the long factors' table (its context, 1024, is past 256) */
  compare("partial-tiny", 7, 5);  /* 12 of 16 dims rotated, 4 passed through */
  compare("granite-tiny", 4, 3);  /* Granite's multipliers: residual branches, logits */
  /* sliding windows, 73 positions over a window of 16: the rings wrap */
  compare("swa-tiny", 4, 4);
  compare("gemma-tiny", 4, 3);
  compare("swa-tiny", 7, 5);
  /* Gemma 3's: embeddings scaled, norms after attention and the MLP (a stage each), GeGLU, the
   * local layers' own RoPE base */
  compare("gemma3-tiny", 4, 3);
  compare("gemma3-tiny", 0, 1);
  compare("gemma3-tiny", 7, 5);
  /* Gemma 2's soft caps on the scores (the decode and the tiled chunk attention) and the logits */
  compare("gemma2-tiny", 4, 3);
  /* Gemma 1's: embeddings scaled and GeGLU, none of the rest */
  compare("gemma1-tiny", 4, 3);
  /* SmolLM3's NoPE layers: every 4th layer's q and k written to the cache as they are */
  compare("smollm3-tiny", 4, 3);
  compare("smollm3-tiny", 0, 1);
  /* EXAONE 4's: no norm before attention and the MLP (their stages read the residual stream as
   * it is), one after; the 32B's windows, whose global layers have no RoPE */
  compare("exaone4-tiny", 4, 3);
  compare("exaone4-swa-tiny", 4, 3);
  /* experts: each input's chosen by the router, every block choosing alike; their rows read by
   * (input, expert) tasks */
  compare("moe-tiny", 4, 3);
  compare("moe-tiny", 0, 1);
  compare("mixtral-tiny", 7, 5);
  /* gpt-oss: attention sinks (the one-span output, and at T = 1 on 8 blocks the split spans'
   * merge), biases on the output projection, the router and the experts, its clamped glu */
  compare("gptoss-tiny", 4, 3);
  compare("gptoss-tiny", 0, 8);
  /* The CPU build takes 8 matvec rows per warp meeting (templates/matvec.cuh); the GPU
   * takes 4. The GPU's shape, built for the CPU, on the presets whose Q/K/V epilogues
   * differ: plain, odd sizes, biases, per-head norms. */
  setenv("MKC_CPU_CFLAGS", "-O1 -DMKC_ROWS=4", 1);
  shape_note = " (MKC_ROWS 4, the GPU's)";
  compare("tiny", 4, 4);
  compare("odd", 7, 5);
  compare("qwen2-tiny", 4, 4);
  compare("qwen3-tiny", 7, 5);
  compare("moe-tiny", 4, 4);
  compare("gptoss-tiny", 4, 4);
  /* MKC_SPLIT=1, a knob since the H100 measured it slower: the short matmuls' row
   * blocks split over a block's warps (o-proj, down, gate/up, QKV without per-head
   * norms), on both matvec shapes */
  setenv("MKC_SPLIT", "1", 1);
  shape_note = " (MKC_ROWS 4, MKC_SPLIT 1)";
  compare("tiny", 4, 4);
  compare("odd", 7, 5);
  compare("qwen2-tiny", 4, 4);
  compare("gptoss-tiny", 4, 4); /* the output projection's bias on the split's path */
  /* a last pass of fewer rows a block than the others (mkc_split_task): at 6 blocks tiny's 64
   * Q/K/V pairs take 5 passes of 2 a block and one of 1 (4 blocks), its 64 o-proj and down rows 2
   * of 4 and one of 3; odd's 72 and 172 above, 3 of 4 and 8 of 4 then one of 3 */
  compare("tiny", 4, 6);
  compare("tiny", 0, 6);
  /* MKC_MV_ROW1=8, a knob (not the default after the H200's A/B): the matvecs that leave warps idle
   * (o-proj, down; 16 blocks: every preset's) take one row a warp, 8 chunks per lane at once;
   * T = 1's copies too, and gpt-oss's output bias on that path */
  setenv("MKC_MV_ROW1", "8", 1);
  setenv("MKC_SPLIT", "0", 1); /* the T = 1 kernels' split would take those stages first */
  shape_note = " (MKC_ROWS 4, MKC_MV_ROW1 8)";
  compare("tiny", 4, 16);
  compare("tiny", 0, 16);
  compare("odd", 7, 5);
  compare("gptoss-tiny", 4, 16);
  unsetenv("MKC_CPU_CFLAGS");
  shape_note = " (MKC_MV_ROW1 8)";
  compare("odd", 4, 16);
  compare("qwen2-tiny", 0, 8);
  unsetenv("MKC_MV_ROW1");
  setenv("MKC_SPLIT", "1", 1);
  shape_note = " (MKC_SPLIT 1)";
  compare("tiny", 4, 4);
  compare("odd", 4, 3);
  unsetenv("MKC_SPLIT");
  /* MKC_MMA_DECODE=1 (by default only in slot kernels of 16 slots or more): the bf16 decode matmuls
   * (Q/K/V, with qwen3's head norms; o-proj, down, gate/up, the LM head) on tensor cores, 8
   * inputs to an m-tile (odd at T_MAX 16: two), by warp and split over a block's warps */
  setenv("MKC_MMA_DECODE", "1", 1);
  shape_note = " (MKC_MMA_DECODE 1)";
  compare("tiny", 4, 4);
  compare("tiny", 0, 1);
  compare("odd", 7, 5);
  compare("odd", 15, 3);
  compare("qwen2-tiny", 4, 4);
  compare("qwen3-tiny", 7, 5);
  compare("gemma-tiny", 4, 3);
  compare("moe-tiny", 4, 3);    /* the router's matvec on tensor cores */
  compare("gptoss-tiny", 4, 3); /* the biases of the router and the output projection there */
  setenv("MKC_SPLIT", "1", 1);
  shape_note = " (MKC_MMA_DECODE 1, MKC_SPLIT 1)";
  compare("tiny", 4, 4);
  compare("odd", 15, 5);
  unsetenv("MKC_SPLIT");
  /* MKC_SPLITK=1: stages with fewer 8-row groups than the grid's warps split their columns over
   * warps of the grid (at 16 blocks, 64 warps: tiny's o-proj and down 8 slices, Q/K/V and
   * gate/up fewer), the group's last warp adding the slices */
  setenv("MKC_SPLITK", "1", 1);
  shape_note = " (MKC_MMA_DECODE 1, MKC_SPLITK 1)";
  compare("tiny", 4, 16);
  compare("odd", 7, 12);
  compare("qwen2-tiny", 4, 16);
  compare("qwen3-tiny", 7, 16); /* the head norms' counters after split-K's */
  unsetenv("MKC_SPLITK");
  unsetenv("MKC_MMA_DECODE");
  return check_done();
}
