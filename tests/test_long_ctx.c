/* Attention far into a long context (templates/attention.cuh, split-KV):
 * tiny planned for 8192 positions, whose shared memory no longer grows with
 * the context. A prompt of 7990 tokens goes in prompt chunks of t_chunk on
 * the cpu backend and the reference executor side by side (the reference
 * taking the kernel's K/V at rounding midpoints: exec/reference.h); then
 * plain decode steps (T = 1: a kv head's positions split across the blocks,
 * the partials merged) and draft-verify steps (T = 5, drafts that are mostly
 * wrong) near position 8000, each input's logits within 1e-4 of the
 * reference's (relative to its largest), the same tokens and pos. On 20
 * blocks: a prompt chunk's items are unsplit (up to 32 tiles of 256
 * positions each), T = 1 splits a kv head's positions in 10, T = 5 in 2.
 * And llama-3.2-1b's shared memory per block is the same at 131072
 * positions as at 4096. */
#include "check.h"
#include "fixture.h"
#include "exec/reference.h"

#define TOL 1e-4
#define MAX_CTX 8192
#define N_PROMPT 7990
#define DRAFT_MAX 4

static void long_context(const fixture *fx, int blocks) {
  const mkc_graph *g = &fx->g;
  mkc_session *k = mkc_session_open(test_backend(), g, &fx->src, &fx->w, blocks);
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, g, &fx->src, &fx->w, 0);
  if (!CHECK(k && ref, "%d blocks: open cpu and ref sessions", blocks)) goto done;
  static int prompt[N_PROMPT];
  unsigned x = 12345;
  for (int i = 0; i < N_PROMPT; i++) {
    x = x * 1103515245u + 12345u;
    prompt[i] = (int)((x >> 16) % (unsigned)g->vocab);
  }
  mkc_step_result r = {0}, rr = {0};
  int ok = 1;
  double worst = 0;
  for (int pos = 0; ok && pos < N_PROMPT;) {
    int T = N_PROMPT - pos < g->t_chunk ? N_PROMPT - pos : g->t_chunk;
    ok = mkc_session_step(k, prompt + pos, T, T - 1, &r) == 0 && r.status == MKC_STATUS_OK;
    mkc_ref_follow_kv(mkc_session_ref(ref), mkc_session_kv(k));
    ok =
        ok && mkc_session_step(ref, prompt + pos, T, T - 1, &rr) == 0 && rr.status == MKC_STATUS_OK;
    pos += T;
    if (ok && pos == N_PROMPT) /* a prompt chunk has logits after its last input only */
      worst = rel_err(mkc_session_logits(k, T - 1), mkc_session_logits(ref, T - 1), g->vocab);
  }
  CHECK(ok && mkc_session_pos(k) == N_PROMPT && mkc_session_pos(ref) == N_PROMPT,
        "%d blocks: a prompt of %d tokens in chunks of %d", blocks, N_PROMPT, g->t_chunk);
  CHECK(worst <= TOL, "%d blocks: the prompt's last logits within %g (%.3g)", blocks, TOL, worst);
  /* decode: plain steps, then draft-verify steps whose drafts are the step number's tokens */
  int last = r.out[r.n_out - 1], same = 1, steps = 0;
  worst = 0;
  for (int i = 0; ok && i < 8; i++, steps++) {
    int in[DRAFT_MAX + 1] = {last}, T = i < 4 ? 1 : DRAFT_MAX + 1;
    for (int t = 1; t < T; t++) in[t] = (i * 37 + t * 11) % g->vocab;
    ok = mkc_session_step(k, in, T, 0, &r) == 0 && r.status == MKC_STATUS_OK;
    mkc_ref_follow_kv(mkc_session_ref(ref), mkc_session_kv(k));
    ok = ok && mkc_session_step(ref, in, T, 0, &rr) == 0 && rr.status == MKC_STATUS_OK;
    if (!ok) break;
    for (int t = 0; t < T; t++) {
      double e = rel_err(mkc_session_logits(k, t), mkc_session_logits(ref, t), g->vocab);
      if (!(e <= worst)) worst = e;
    }
    same &= r.n_out == rr.n_out && mkc_session_pos(k) == mkc_session_pos(ref);
    for (int j = 0; same && j < r.n_out; j++) same = r.out[j] == rr.out[j];
    last = r.out[r.n_out - 1];
  }
  CHECK(ok && steps == 8, "%d blocks: 4 plain and 4 draft-verify steps from position %d run",
        blocks, N_PROMPT);
  CHECK(worst <= TOL, "%d blocks: every input's logits within %g of the reference (worst %.3g)",
        blocks, TOL, worst);
  CHECK(same, "%d blocks: the same tokens and pos as the reference (pos %d)", blocks,
        mkc_session_pos(k));
done:
  mkc_session_close(k);
  mkc_session_close(ref);
}

/* llama-3.2-1b's plan (no weights): shared memory per block the same at 4096 and 131072
 * positions, within the 227 KB an sm_90 block may have (before split-KV the scores of 131072
 * positions alone took 512 KB). */
static void smem_flat(void) {
  static const int ctx[2] = {4096, 131072};
  size_t smem[2] = {0, 0};
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  for (int i = 0; i < 2; i++) {
    mkc_gen_opts o = {.graph_path = graph, .preset = "llama-3.2-1b", .max_ctx = ctx[i]};
    mkc_graph g;
    mkc_kernel_src src;
    if (!CHECK(mkc_codegen(&o, &g, &src) == 0, "llama-3.2-1b, --ctx %d: generate", ctx[i])) return;
    smem[i] = g.smem_bytes;
    mkc_kernel_src_free(&src);
    mkc_graph_free(&g);
  }
  CHECK(smem[0] == smem[1] && smem[1] <= 227 * 1024,
        "llama-3.2-1b: smem per block %zu B at --ctx %d and %zu B at %d", smem[0], ctx[0], smem[1],
        ctx[1]);
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  smem_flat();
  fixture fx;
  if (!CHECK(fixture_open(&fx, "tiny", DRAFT_MAX, MAX_CTX, 7) == 0, "tiny, --ctx %d: generate",
             MAX_CTX))
    return check_done();
  CHECK(strstr(fx.src.source, "max_ctx 8192") != NULL, "the kernel is planned for %d positions",
        MAX_CTX);
  long_context(&fx, 20);
  fixture_close(&fx);
  return check_done();
}
