/* Prompt chunks on tensor cores (templates/gemm.cuh): a 300-token prompt fed
 * in chunks of up to 128 tokens, which the kernel runs as tiled mma.sync
 * products (on the cpu backend worked out by one thread for the block, the
 * lanes' fragments through the emulated mma.sync bit for bit: test_gemm_tile;
 * the planted errors run the lanes, on the checking schedule), against the same prompt fed one
 * token at a time (the CUDA-core path) and against the reference executor: the logits after every
 * chunk within 1e-4 of the largest, the KV cache the reference's value for value, the same greedy
 * tokens afterwards; on tiny, odd (sizes that are no multiple of 8/16/32) and SmolLM2-135M from its
 * Q4_1 blocks. With the KV cache in f32 the chunked and the token-by-token kernels are compared
 * directly (bf16 caches may round a value either side of a midpoint: exec/reference.h), the sampler
 * and log-probabilities of a chunk's last input too. The other presets (biases, head norms, RoPE
 * scalings, Q2_K..Q6_K/Q4_0/Q5_0/Q5_1/ IQ4_XS blocks) in chunks against the reference. The chunk
 * attention in tiles (templates/gemm_attn.cuh) is in every chunked run (chunks after the first
 * start at pos > 0); besides, sliding windows whose rings the chunks cross
 * (swa-tiny, gemma-tiny; gemma3-tiny, whose post-norm stage runs on a
 * chunk's rows) and K/V caches in f16 and f32 on groups of 2 and 5 query
 * heads, against the reference. Planted errors in the fragment layout,
 * the causal mask and the window must fail, and the emulated mma is checked
 * on its own against products worked out here. */
#include <string.h>
#include <unistd.h>

#include "backend/cpu/backend.h"
#include "check.h"
#include "fixture.h"
#include "scratch.h"

#include "exec/decode.h"
#include "exec/reference.h"
#include "formats/dequant.h"
#include "model/model_file.h"

#define TOL 1e-4
#define N_PROMPT 300
#define N_GEN 16

/* Chunk sizes: all tiled (more than draft_max + 1 = 5), the largest the
 * kernel takes (128), and none a multiple of the tile's 64 rows or 16. */
static const int CHUNKS[] = {37, 128, 99, 36};
#define N_CHUNKS ((int)(sizeof CHUNKS / sizeof *CHUNKS))

/* A kernel: a preset on random weights, or a model file's (from its blocks). */
typedef struct kernel {
  mkc_graph g;
  mkc_kernel_src src;
  mkc_weights w;
  int ok;
} kernel;

/* llama.cpp's Q4_K_M choice for random weights: Q6_K for attn_v and ffn_down,
 * Q4_K for the other matrices (blocks-tiny's columns are whole 256s), but Q5_K
 * for ffn_gate, Q5_0 for attn_q, Q5_1 for attn_k, Q3_K for attn_output, Q2_K
 * for ffn_up, IQ4_XS for the LM head, IQ3_S (a grid type) for ffn_down and Q4_0
 * for the embedding, so that the tiled path decodes nine block types (Q4_K in
 * none then: test_wtypes). */
static int q4_k_m(void *ctx, const char *name) {
  (void)ctx;
  if (strstr(name, "token_embd")) return MKC_GGML_Q4_0;
  if (strstr(name, "ffn_gate")) return MKC_GGML_Q5_K;
  if (strstr(name, "attn_q")) return MKC_GGML_Q5_0;
  if (strstr(name, "attn_k")) return MKC_GGML_Q5_1;
  if (strstr(name, "attn_output")) return MKC_GGML_Q3_K;
  if (strstr(name, "ffn_up")) return MKC_GGML_Q2_K;
  if (strstr(name, "output.weight")) return MKC_GGML_IQ4_XS;
  if (strstr(name, "ffn_down")) return MKC_GGML_IQ3_S;
  return strstr(name, "attn_v") ? MKC_GGML_Q6_K : MKC_GGML_Q4_K;
}

static int kernel_open(kernel *k, const char *preset, mkc_model_file *mf, int max_ctx,
                       const char *kv_dtype) {
  memset(k, 0, sizeof *k);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = preset,
                    .draft_max = 4,
                    .max_ctx = max_ctx,
                    .kv_dtype = kv_dtype};
  if (mf) {
    o.model = &mf->desc;
    o.weight_type = mkc_model_file_weight_type;
    o.weight_type_ctx = mf;
  } else if (strcmp(preset, "blocks-tiny") == 0) {
    o.weight_type = q4_k_m;
  }
  if (mkc_codegen(&o, &k->g, &k->src) != 0) return -1;
  int rc = mf ? mkc_model_file_weights(mf, &k->g, &k->w) : mkc_weights_random(&k->w, &k->g, 7);
  k->ok = rc == 0;
  return rc;
}

static void kernel_close(kernel *k) {
  mkc_weights_free(&k->w);
  mkc_kernel_src_free(&k->src);
  mkc_graph_free(&k->g);
}

/* What a run of the prompt left: the logits after each chunk's last input
 * (or after the same inputs fed one at a time), the greedy tokens after it. */
typedef struct run {
  float *logits; /* [N_CHUNKS][vocab] */
  int tokens[N_GEN];
  int ok;
  double worst_ref; /* the largest error against a following reference, over what it compared */
  long kv_checked, kv_followed, kv_mismatched;
  char kv_first[160];
} run;

/* Feeds prompt to s in CHUNKS (chunked) or one token at a time, then N_GEN
 * greedy steps of one input. With ref: the reference takes every step after
 * the kernel, following its K and V (mkc_ref_follow_kv), and every logit row
 * both have is compared. */
static void feed(mkc_session *s, mkc_session *ref, const mkc_graph *g, const int *prompt,
                 int chunked, run *out) {
  memset(out, 0, sizeof *out);
  out->logits = calloc((size_t)N_CHUNKS * g->vocab, sizeof *out->logits);
  out->ok = out->logits != NULL;
  int pos = 0, c = 0, end = CHUNKS[0], n_tokens = 0, last = 0;
  while (out->ok && n_tokens < N_GEN) {
    int in[MKC_CHUNK_CAP], T = 1;
    if (pos < N_PROMPT) {
      T = chunked ? CHUNKS[c] : 1;
      memcpy(in, prompt + pos, (size_t)T * sizeof *in);
    } else {
      in[0] = last;
    }
    mkc_step_result r, rr;
    out->ok = mkc_session_step(s, in, T, T - 1, &r) == 0 && r.status == MKC_STATUS_OK;
    if (out->ok && ref) {
      mkc_ref_follow_kv(mkc_session_ref(ref), mkc_session_kv(s));
      out->ok = mkc_session_step(ref, in, T, T - 1, &rr) == 0 && rr.status == MKC_STATUS_OK;
      double e =
          out->ok ? rel_err(mkc_session_logits(s, T - 1), mkc_session_logits(ref, T - 1), g->vocab)
                  : 1;
      if (!(e <= out->worst_ref)) out->worst_ref = e;
      out->ok = out->ok && rr.out[0] == r.out[0]; /* a token apart: the runs part here */
    }
    if (!out->ok) break;
    pos += T;
    if (c < N_CHUNKS && pos == end) { /* after a chunk's last input, whichever way it was fed */
      memcpy(out->logits + (size_t)c * g->vocab, mkc_session_logits(s, T - 1),
             (size_t)g->vocab * sizeof(float));
      if (++c < N_CHUNKS) end += CHUNKS[c];
    }
    last = r.out[0];
    if (pos >= N_PROMPT) out->tokens[n_tokens++] = last;
  }
  if (ref) {
    const mkc_ref_kv_stats *kv = mkc_ref_kv_check(mkc_session_ref(ref));
    out->kv_checked = kv->checked;
    out->kv_followed = kv->followed;
    out->kv_mismatched = kv->mismatched;
    snprintf(out->kv_first, sizeof out->kv_first, "%s", kv->first);
  }
}

static double chunk_err(const run *a, const run *b, int vocab) {
  double worst = 0;
  for (int c = 0; c < N_CHUNKS; c++) {
    double e = rel_err(a->logits + (size_t)c * vocab, b->logits + (size_t)c * vocab, vocab);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

static void check_ref(const char *what, const char *how, const run *r) {
  CHECK(r->ok && r->worst_ref <= TOL,
        "%s, %s: logits within %g of the reference's at every row compared (worst %.3g)", what, how,
        TOL, r->worst_ref);
  CHECK(r->ok && r->kv_checked > 0 && r->kv_mismatched == 0,
        "%s, %s: the kernel's %ld K/V values are the reference's (%ld taken at a midpoint)%s%s",
        what, how, r->kv_checked, r->kv_followed, r->kv_mismatched ? ": " : "", r->kv_first);
}

/* The prompt: ids spread over the vocabulary, the same for every run. */
static void make_prompt(int *prompt, int vocab) {
  unsigned x = 12345;
  for (int i = 0; i < N_PROMPT; i++) {
    x = x * 1103515245u + 12345u;
    prompt[i] = (int)((x >> 8) % (unsigned)vocab);
  }
}

/* The chunked run on a bf16 cache followed by a reference; both runs on an f32
 * cache, compared with each other. full (the presets, where runs are cheap):
 * also the token-by-token run on the bf16 cache with its own reference, the
 * host's chunking (mkc_decode), a chunk's sampled token and
 * log-probabilities; on SmolLM2 each of those runs takes a minute or more
 * of the emulator. */
static void compare(const char *what, kernel *k16, kernel *k32, const int *prompt, int full) {
  const mkc_graph *g = &k16->g;
  if (!CHECK(g->t_chunk == 128 && g->t_max == 5,
             "%s: the kernel takes prompt chunks of 128 tiled, steps of 5 (t_chunk %d, t_max %d)",
             what, g->t_chunk, g->t_max))
    return;
  mkc_session *a = mkc_session_open(MKC_BACKEND_CPU, g, &k16->src, &k16->w, 0);
  mkc_session *b = full ? mkc_session_open(MKC_BACKEND_CPU, g, &k16->src, &k16->w, 0) : 0;
  mkc_session *ra = mkc_session_open(MKC_BACKEND_REF, g, &k16->src, &k16->w, 0);
  mkc_session *rb = full ? mkc_session_open(MKC_BACKEND_REF, g, &k16->src, &k16->w, 0) : 0;
  mkc_session *a32 = mkc_session_open(MKC_BACKEND_CPU, &k32->g, &k32->src, &k32->w, 0);
  mkc_session *b32 = mkc_session_open(MKC_BACKEND_CPU, &k32->g, &k32->src, &k32->w, 0);
  run ca = {0}, cb = {0}, c32 = {0}, t32 = {0};
  if (!CHECK(a && ra && ((b && rb) || !full) && a32 && b32, "%s: sessions", what)) goto done;

  /* the chunks' tokens are checked against the reference's step by step (feed) */
  feed(a, ra, g, prompt, 1, &ca);
  CHECK(ca.ok,
        "%s: the prompt in chunks %d, %d, %d, %d, then %d greedy steps, token for token "
        "the reference's",
        what, CHUNKS[0], CHUNKS[1], CHUNKS[2], CHUNKS[3], N_GEN);
  check_ref(what, "in chunks (tiled)", &ca);
  if (full) {
    feed(b, rb, g, prompt, 0, &cb);
    check_ref(what, "one token at a time", &cb);
    CHECK(ca.ok && cb.ok && memcmp(ca.tokens, cb.tokens, sizeof ca.tokens) == 0,
          "%s: the same %d greedy tokens after the prompt in chunks as one token at a time", what,
          N_GEN);
    printf("     %s, bf16 cache: chunked vs one at a time, logits after each chunk %.3g apart (the "
           "caches may round values near a midpoint apart)\n",
           what, ca.ok && cb.ok ? chunk_err(&ca, &cb, g->vocab) : -1.0);
  }

  feed(a32, NULL, &k32->g, prompt, 1, &c32);
  feed(b32, NULL, &k32->g, prompt, 0, &t32);
  double e32 = c32.ok && t32.ok ? chunk_err(&c32, &t32, g->vocab) : 1;
  CHECK(e32 <= TOL,
        "%s, f32 cache: the logits after each chunk within %g of those one token at a time "
        "(worst %.3g)",
        what, TOL, e32);
  CHECK(c32.ok && t32.ok && memcmp(c32.tokens, t32.tokens, sizeof c32.tokens) == 0 &&
            memcmp(c32.tokens, ca.tokens, sizeof ca.tokens) == 0,
        "%s, f32 cache: the same %d greedy tokens both ways, and as the bf16 cache's", what, N_GEN);

  if (!full) goto done;
  /* the host's chunks: mkc_decode feeds 128, 128, then the 44 left as one chunk */
  mkc_decode_stats st;
  int out[N_GEN];
  mkc_session_reset(a);
  int ok = mkc_decode(a, g, prompt, N_PROMPT, N_GEN, 0, out, &st) == 0;
  CHECK(ok && st.generated == N_GEN && memcmp(out, cb.tokens, sizeof out) == 0 &&
            st.steps == 3 + N_GEN - 1,
        "%s: mkc_decode feeds the prompt in 3 chunks (%d steps in all) and generates the same %d "
        "tokens",
        what, st.steps, N_GEN);

  /* sampled, with log-probabilities: a chunk's last input draws what one input at a time draws
   * at the same position (Philox keyed by position) */
  mkc_sampling so = {.temp = 0.8f,
                     .top_k = 40,
                     .top_p = 0.95f,
                     .min_p = 0.05f,
                     .repeat_penalty = 1.1f,
                     .repeat_last_n = 64,
                     .seed_lo = 5,
                     .logprobs = 3};
  mkc_session_reset(a32);
  mkc_session_reset(b32);
  ok = mkc_session_set_sampling(a32, &so) == 0 && mkc_session_set_sampling(b32, &so) == 0;
  mkc_step_result r1, r2;
  ok = ok && mkc_session_step(a32, prompt, 100, 99, &r1) == 0 && r1.status == MKC_STATUS_OK;
  for (int t = 0; ok && t < 100; t++)
    ok = mkc_session_step(b32, prompt + t, 1, 0, &r2) == 0 && r2.status == MKC_STATUS_OK;
  float lp1 = 0, lp2 = 0, lps1[MKC_LOGPROBS_MAX], lps2[MKC_LOGPROBS_MAX];
  int ids1[MKC_LOGPROBS_MAX], ids2[MKC_LOGPROBS_MAX];
  ok = ok && mkc_session_logprobs(a32, 0, &lp1, ids1, lps1) == 0 &&
       mkc_session_logprobs(b32, 0, &lp2, ids2, lps2) == 0;
  CHECK(ok && r1.out[0] == r2.out[0] && memcmp(ids1, ids2, 3 * sizeof *ids1) == 0 &&
            fabsf(lp1 - lp2) < 1e-4f && fabsf(lps1[0] - lps2[0]) < 1e-4f,
        "%s, sampled: a 100-token chunk draws token %d (log-probability %.5f), one token at a "
        "time %d (%.5f), the same top 3",
        what, r1.out[0], lp1, r2.out[0], lp2);
done:
  free(ca.logits);
  free(cb.logits);
  free(c32.logits);
  free(t32.logits);
  mkc_session_close(a);
  mkc_session_close(b);
  mkc_session_close(ra);
  mkc_session_close(rb);
  mkc_session_close(a32);
  mkc_session_close(b32);
}

static void preset_case(const char *preset) {
  kernel k16, k32;
  int ok = kernel_open(&k16, preset, NULL, 0, "bf16") == 0 &&
           kernel_open(&k32, preset, NULL, 0, "f32") == 0;
  if (CHECK(ok, "%s: kernels with a bf16 and an f32 cache", preset)) {
    int prompt[N_PROMPT];
    make_prompt(prompt, k16.g.vocab);
    compare(preset, &k16, &k32, prompt, 1);
  }
  kernel_close(&k16);
  kernel_close(&k32);
}

/* The other presets, each the chunked run against a following reference:
 * Q/K/V biases (qwen2-tiny), per-head norms on heads of 80, which a tile
 * covers in two slices of 64 columns (qwen3-tiny), RoPE scalings (llama3-,
 * yarn-, linear-tiny), matrices in Q2_K .. Q6_K, Q4_0, Q5_0, Q5_1 and IQ4_XS blocks
 * (blocks-tiny). */
static void preset_vs_reference(const char *preset, const char *kv_dtype) {
  kernel k;
  if (!CHECK(kernel_open(&k, preset, NULL, N_PROMPT + N_GEN, kv_dtype) == 0, "%s, KV %s: generate",
             preset, kv_dtype))
    return;
  int prompt[N_PROMPT];
  make_prompt(prompt, k.g.vocab);
  mkc_session *s = mkc_session_open(MKC_BACKEND_CPU, &k.g, &k.src, &k.w, 0);
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &k.g, &k.src, &k.w, 0);
  run r = {0};
  if (s && ref) feed(s, ref, &k.g, prompt, 1, &r);
  int blocks = 0;
  for (int i = 0; i < k.g.n_weights; i++) blocks += k.g.weights[i].type != MKC_GGML_BF16;
  CHECK(s && ref && r.ok,
        "%s, KV %s: the prompt in chunks, then %d greedy steps, token for token the "
        "reference's (%d matrices in blocks)",
        preset, kv_dtype, N_GEN, blocks);
  char what[80];
  snprintf(what, sizeof what, "%s, KV %s", preset, kv_dtype);
  check_ref(what, "in chunks (tiled)", &r);
  free(r.logits);
  mkc_session_close(s);
  mkc_session_close(ref);
  kernel_close(&k);
}

static void smollm2(void) {
  char path[1024];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0, "SmolLM2: open")) return;
  kernel k16, k32;
  int ok = kernel_open(&k16, NULL, &mf, N_PROMPT + N_GEN, "bf16") == 0 &&
           kernel_open(&k32, NULL, &mf, N_PROMPT + N_GEN, "f32") == 0;
  int blocks = 0;
  for (int i = 0; ok && i < k16.g.n_weights; i++) blocks += k16.g.weights[i].type == MKC_GGML_Q4_1;
  if (CHECK(ok && blocks > 0, "SmolLM2: kernels from the file's Q4_1 blocks (%d matrices)",
            blocks)) {
    int prompt[N_PROMPT];
    make_prompt(prompt, k16.g.vocab);
    compare("SmolLM2", &k16, &k32, prompt, 0);
  }
  kernel_close(&k16);
  kernel_close(&k32);
  mkc_model_file_close(&mf);
}

/* A planted error (good replaced by bad, of the same length, in the
 * generated kernel of preset) fails the chunked run against the reference,
 * on the emulator's checking schedule: there every lane runs the GPU's code
 * (elsewhere a tile's products are worked out by one thread for the block,
 * test_gemm_tile). */
static void planted(const char *preset, const char *good, const char *bad, const char *what) {
  kernel k;
  if (!CHECK(kernel_open(&k, preset, NULL, N_PROMPT + N_GEN, "bf16") == 0, "planted: generate %s",
             preset))
    return;
  char *at = strstr(k.src.source, good);
  if (CHECK(at != NULL && strlen(good) == strlen(bad), "planted: %s: the code found", what)) {
    memcpy(at, bad, strlen(bad));
    int prompt[N_PROMPT];
    make_prompt(prompt, k.g.vocab);
    mkc_session *s = mkc_session_open(MKC_BACKEND_CPU, &k.g, &k.src, &k.w, 0);
    mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &k.g, &k.src, &k.w, 0);
    run r = {0};
    setenv("MKC_SIMT_SEED", "1", 1);
    if (s && ref) feed(s, ref, &k.g, prompt, 1, &r);
    unsetenv("MKC_SIMT_SEED");
    CHECK(s && ref && !(r.ok && r.worst_ref <= TOL && r.kv_mismatched == 0),
          "planted: %s is caught (logits %.3g off, %ld K/V values not the reference's)", what,
          r.worst_ref, r.kv_mismatched);
    free(r.logits);
    mkc_session_close(s);
    mkc_session_close(ref);
  }
  kernel_close(&k);
}

/* Planted errors: the matmul tile's A fragment (a1 and a2, rows g + 8 and
 * columns q + 4, swapped); the chunk attention's causal mask one position
 * late (a token sees the next one's K and V), and its window one position
 * wide (swa-tiny: a token sees window + 1 positions). */
static void planted_bugs(void) {
  planted("tiny", "{ar[0], ar[8 * MKC_GEMM_LD], ar[4], ar[8 * MKC_GEMM_LD + 4]}",
          "{ar[0], ar[4], ar[8 * MKC_GEMM_LD], ar[8 * MKC_GEMM_LD + 4]}",
          "a1 and a2 swapped in the A fragment");
  planted("tiny", "t < T ? pos + t : -1;", "t < T ? pos+t+1 : -1;",
          "the chunk attention's causal mask one position late");
  planted("swa-tiny", "see_hi[h] + 1 - window :", "see_hi[h] + 0 - window :",
          "the chunk attention's window one position wide");
}

/* The emulated mma.sync on its own: every lane fills its fragments from
 * matrices it computes from (row, column) as the PTX ISA lays them out, the
 * warp multiplies, each lane writes its accumulators back by the same rule.
 * The values are small integers and halves, so every sum is exact and the
 * result must be the product worked out here, bit for bit. Two m-tiles by
 * three n-tiles with only 2 x 2 asked for: the third n-tile is left alone. */
/* The mma kernels' common text: the matrices' values by (row, column), and
 * each lane's accumulators c written back to out by the fragments' rule. */
#define MMA_KERNEL_HEAD                                                                            \
  "#define MKC_THREADS 32\n"                                                                       \
  "#include \"prelude_cpu.h\"\n"                                                                   \
  "#include \"mkc_state.h\"\n"                                                                     \
  "static float a_at(int p, int i, int r, int k) { return p ? 0.5f * ((r + k) % 3) : "             \
  "(float)((r * 3 + k * 5 + i) % 7 - 3); }\n"                                                      \
  "static float b_at(int p, int j, int k, int n) { return p ? 0.25f * ((k * n + j) % 2) : "        \
  "(float)((k * 2 + n * 3 + j) % 5 - 2); }\n"
#define MMA_KERNEL_STORE                                                                           \
  "  for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) {\n"                                  \
  "    const float *d = c + (i * 3 + j) * 4;\n"                                                    \
  "    float *o = out + (i * 3 + j) * 128;\n"                                                      \
  "    o[g * 8 + 2 * q] = d[0]; o[g * 8 + 2 * q + 1] = d[1];\n"                                    \
  "    o[(g + 8) * 8 + 2 * q] = d[2]; o[(g + 8) * 8 + 2 * q + 1] = d[3];\n"                        \
  "  }\n"

static const char MMA_KERNEL[] = MMA_KERNEL_HEAD
    "MKC_KERNEL mkc_step(const mkc_bf16 *w, float *out, void *kv, mkc_state *st) {\n"
    "  int lane = mkc_tid(), g = lane >> 2, q = lane & 3, nb = st->n_inputs;\n"
    "  unsigned a[2 * 2 * 4], b[2 * 3 * 2];\n"
    "  float c[2 * 3 * 4];\n"
    "  for (int p = 0; p < 2; p++) for (int i = 0; i < 2; i++) {\n"
    "    const int row[4] = {g, g + 8, g, g + 8}, col[4] = {q, q, q + 4, q + 4};\n"
    "    for (int r = 0; r < 4; r++) a[(p * 2 + i) * 4 + r] = mkc_tf32(a_at(p, i, row[r], "
    "col[r]));\n"
    "  }\n"
    "  for (int p = 0; p < 2; p++) for (int j = 0; j < 3; j++) {\n"
    "    b[(p * 3 + j) * 2] = mkc_tf32(b_at(p, j, q, g));\n"
    "    b[(p * 3 + j) * 2 + 1] = mkc_tf32(b_at(p, j, q + 4, g));\n"
    "  }\n"
    "  for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) for (int r = 0; r < 4; r++)\n"
    "    c[(i * 3 + j) * 4 + r] = (float)(i * 100 + j * 10 + r);\n"
    "  mkc_mma_tf32(a, b, nb, c, 2, 2, 2, 3);\n" MMA_KERNEL_STORE "}\n";

static float a_at(int p, int i, int r, int k) {
  return p ? 0.5f * ((r + k) % 3) : (float)((r * 3 + k * 5 + i) % 7 - 3);
}
static float b_at(int p, int j, int k, int n) {
  return p ? 0.25f * ((k * n + j) % 2) : (float)((k * 2 + n * 3 + j) % 5 - 2);
}

/* The values of out (the kernels' layout) that are not C plus `steps`
 * products of the 2 x 2 asked-for tiles, the s-th with A scaled by s + 1 and
 * nb parts of B; the third n-tile must be C alone. */
static int mma_off(const float *out, int nb, int steps) {
  int bad = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
          int hi = r >= 8, e = n % 2; /* register 2 hi + e of lane (r % 8, n / 2) holds (r, n) */
          float want = (float)(i * 100 + j * 10 + 2 * hi + e);
          for (int s = 0; j < 2 && s < steps; s++)
            for (int p = 0; p < 3; p++) { /* (a0, b0), (a1, b0), (a0, b1) */
              int pa = p == 1, pb = p == 2;
              if (pb >= nb) break;
              for (int kk = 0; kk < 8; kk++)
                want += (float)(s + 1) * a_at(pa, i, r, kk) * b_at(pb, j, kk, n);
            }
          bad += out[(i * 3 + j) * 128 + r * 8 + n] != want;
        }
  return bad;
}

static void mma_unit(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(MMA_KERNEL, "mma_unit.c", dir);
  if (!CHECK(k != NULL, "mma: the test kernel builds")) return;
  for (int nb = 1; nb <= 2; nb++) {
    float out[6 * 128];
    mkc_state st;
    memset(&st, 0, sizeof st);
    st.n_inputs = nb;
    int ok = mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, out, NULL, &st) == 0;
    int bad = ok ? mma_off(out, nb, 1) : 0;
    CHECK(ok && bad == 0,
          "mma: 2 x 2 tiles of m16n8k8 tf32 with %s, the unasked n-tile untouched (%d of 768 "
          "values off)",
          nb == 1 ? "A's two parts" : "A's and B's parts", bad);
  }
  mkc_cpu_kernel_close(k);
}

/* The queue (mkc_mma_tf32_queue ... mkc_mma_flush): st->n_fixed products, the
 * s-th with A scaled by s + 1, then one flush. All values stay exact, so the
 * result must be C plus every product, worked out here. A flush with nothing
 * queued, or a queue past the emulator's 16, must fail the launch saying so. */
static const char MMA_QUEUE_KERNEL[] = MMA_KERNEL_HEAD
    "MKC_KERNEL mkc_step(const mkc_bf16 *w, float *out, void *kv, mkc_state *st) {\n"
    "  int lane = mkc_tid(), g = lane >> 2, q = lane & 3;\n"
    "  float c[2 * 3 * 4];\n"
    "  for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) for (int r = 0; r < 4; r++)\n"
    "    c[(i * 3 + j) * 4 + r] = (float)(i * 100 + j * 10 + r);\n"
    "  for (int s = 0; s < st->n_fixed; s++) {\n"
    "    unsigned a[2 * 2 * 4], b[2 * 3 * 2];\n"
    "    for (int p = 0; p < 2; p++) for (int i = 0; i < 2; i++) {\n"
    "      const int row[4] = {g, g + 8, g, g + 8}, col[4] = {q, q, q + 4, q + 4};\n"
    "      for (int r = 0; r < 4; r++)\n"
    "        a[(p * 2 + i) * 4 + r] = mkc_tf32((float)(s + 1) * a_at(p, i, row[r], col[r]));\n"
    "    }\n"
    "    for (int p = 0; p < 2; p++) for (int j = 0; j < 3; j++) {\n"
    "      b[(p * 3 + j) * 2] = mkc_tf32(b_at(p, j, q, g));\n"
    "      b[(p * 3 + j) * 2 + 1] = mkc_tf32(b_at(p, j, q + 4, g));\n"
    "    }\n"
    "    mkc_mma_tf32_queue(a, b, 2, c, 2, 2, 2, 3);\n"
    "  }\n"
    "  mkc_mma_flush(c);\n" MMA_KERNEL_STORE "}\n";

static void mma_queue_unit(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/templates", mkc_home());
  mkc_cpu_kernel *k = mkc_cpu_kernel_open(MMA_QUEUE_KERNEL, "mma_queue.c", dir);
  if (!CHECK(k != NULL, "mma queue: the test kernel builds")) return;
  const int queued[] = {1, 4, 16};
  for (size_t c = 0; c < sizeof queued / sizeof *queued; c++) {
    float out[6 * 128];
    mkc_state st;
    memset(&st, 0, sizeof st);
    st.n_fixed = queued[c];
    int ok = mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, out, NULL, &st) == 0;
    int bad = ok ? mma_off(out, 2, queued[c]) : 0;
    CHECK(ok && bad == 0, "mma queue: %d queued, one flush: C plus each product (%d of 768 off)",
          queued[c], bad);
  }
  const struct {
    int queued;
    const char *says;
  } misuse[] = {{0, "a flush with nothing queued"}, {17, "more than 16 products queued"}};
  for (size_t c = 0; c < sizeof misuse / sizeof *misuse; c++) {
    float out[6 * 128];
    mkc_state st;
    memset(&st, 0, sizeof st);
    st.n_fixed = misuse[c].queued;
    check_stderr_begin();
    int rc = mkc_cpu_kernel_launch(k, 1, 32, 0, NULL, out, NULL, &st);
    char *err = check_stderr_end();
    CHECK(rc != 0 && err && strstr(err, misuse[c].says),
          "mma queue: %d queued fails the launch with \"%s\"", misuse[c].queued, misuse[c].says);
    free(err);
  }
  mkc_cpu_kernel_close(k);
}

int main(void) {
  if (scratch_open("prompt") != 0) return 1;
  mma_unit();
  mma_queue_unit();
  preset_case("tiny");
  preset_case("odd");
  static const char *const others[] = {
      "qwen2-tiny",   "qwen3-tiny",   "llama3-tiny", "yarn-tiny", "linear-tiny",  "longrope-tiny",
      "partial-tiny", "granite-tiny", "blocks-tiny", "moe-tiny",  "mixtral-tiny", "gptoss-tiny"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    preset_vs_reference(others[i], "bf16");
  /* the chunk attention (templates/gemm_attn.cuh): sliding windows whose rings the chunks'
   * queries cross (window 16, every layer or 2 of 3), a K/V cache in f16 (exact in tf32, as
   * bf16) and in f32 (split in two), on 2 query heads per kv head (tiny) and 5 (qwen2-tiny: 12
   * tokens a tile) */
  static const char *const attn[][2] = {
      {"swa-tiny", "bf16"}, {"gemma-tiny", "bf16"}, {"gemma3-tiny", "bf16"}, {"swa-tiny", "f32"},
      {"tiny", "f16"},      {"qwen2-tiny", "f16"},  {"qwen2-tiny", "f32"}};
  for (size_t i = 0; i < sizeof attn / sizeof *attn; i++)
    preset_vs_reference(attn[i][0], attn[i][1]);
  planted_bugs();
  smollm2();
  scratch_close();
  return check_done();
}
