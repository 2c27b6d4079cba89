/* Quantized matrices inside the kernel (templates/weights.cuh): every block
 * type on tiny, odd and blocks-tiny, and a mix as llama.cpp's Q4_K_M picks
 * it, run on the kernel and on the reference executor, which reads the blocks
 * with formats/dequant.c (itself checked against gguf-py's values by
 * test_quant_fixtures); and SmolLM2's Q4_1 file run from its blocks: its
 * bytes per step are the file's, its greedy continuations today's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "scratch.h"

#include "exec/decode.h"
#include "exec/reference.h"
#include "formats/dequant.h"
#include "inspect/inspect.h"
#include "model/model_file.h"
#include "tokenizer/tokenizer.h"

#define TOL 1e-4
#define STEPS 24
#define MIX (-2) /* Q4_K_M's choice: Q6_K for attn_v and ffn_down, Q4_K elsewhere */

static const int PROMPT[] = {1, 17, 42, 99, 5, 200, 33, 7, 250, 3, 64};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof *PROMPT))

/* The storage type each weight of a graph gets: what mkc init would write. */
typedef struct type_table {
  int n;
  char names[64][96];
  int types[64];
} type_table;

static int lookup(void *ctx, const char *name) {
  const type_table *tt = ctx;
  for (int i = 0; i < tt->n; i++)
    if (strcmp(tt->names[i], name) == 0) return tt->types[i];
  return -1;
}

/* want for a matrix of cols columns, or what llama.cpp's quantize leaves (as
 * mkc init): a K type on columns that are not whole 256s is Q5_0 (for Q4_K),
 * Q5_1 (Q5_K), Q8_0 (Q6_K) or IQ4_NL (Q2_K, Q3_K, IQ4_XS) on whole 32s, TQ1_0,
 * TQ2_0 and Q2_0 Q4_0; else bf16 (-1). */
static int fitting(int want, int cols) {
  int block = mkc_ggml_type((uint32_t)want)->block;
  if (cols % block == 0) return want;
  if ((want == MKC_GGML_TQ1_0 || want == MKC_GGML_TQ2_0 || want == MKC_GGML_Q2_0) && cols % 32 == 0)
    return MKC_GGML_Q4_0;
  if (block == 256 && cols % 32 == 0)
    return want == MKC_GGML_Q4_K   ? MKC_GGML_Q5_0
           : want == MKC_GGML_Q5_K ? MKC_GGML_Q5_1
           : want == MKC_GGML_Q6_K ? MKC_GGML_Q8_0
                                   : MKC_GGML_IQ4_NL; /* Q2_K, Q3_K, IQ4_XS */
  return -1;
}

static int chosen(int want, const mkc_weight_info *w) {
  if (w->rows == 1) return -1; /* norms stay as they are */
  if (want == MIX)
    want = strstr(w->name, "attn_v") || strstr(w->name, "ffn_down") ? MKC_GGML_Q6_K : MKC_GGML_Q4_K;
  return fitting(want, w->cols);
}

static const char *type_name(int t) {
  return t == MIX ? "Q4_K_M mix" : mkc_ggml_type((uint32_t)t)->name;
}

/* The kernel for preset with each matrix stored as want picks, and random
 * weights quantized to those types. *n_typed: matrices kept in blocks. */
static int open_typed(fixture *f, const char *preset, int want, type_table *tt, int *n_typed) {
  memset(f, 0, sizeof *f);
  if (fixture_open(f, preset, 4, 0, 7) != 0) return -1; /* the plain plan names the weights */
  tt->n = 0;
  for (int i = 0; i < f->g.n_weights && tt->n < 64; i++) {
    snprintf(tt->names[tt->n], sizeof tt->names[0], "%s", f->g.weights[i].name);
    tt->types[tt->n++] = chosen(want, &f->g.weights[i]);
  }
  fixture_close(f);
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph,
                    .preset = preset,
                    .draft_max = 4,
                    .weight_type = lookup,
                    .weight_type_ctx = tt};
  if (mkc_codegen(&o, &f->g, &f->src) != 0) return -1;
  *n_typed = 0;
  for (int i = 0; i < f->g.n_weights; i++) *n_typed += f->g.weights[i].type != MKC_GGML_BF16;
  return mkc_weights_random(&f->w, &f->g, 7);
}

/* The prompt in chunks of up to 5, then STEPS greedy steps: logits within
 * TOL of the reference's, the same tokens. */
/* blocks: the cpu backend's grid (0: its default). */
static void kernel_vs_reference_on(const char *preset, int want, int blocks) {
  fixture fx;
  type_table tt;
  int n_typed = 0;
  const char *tn = type_name(want);
  if (!CHECK(open_typed(&fx, preset, want, &tt, &n_typed) == 0, "%s %s: generate and quantize",
             preset, tn))
    return;
  int expect_typed = 0;
  for (int i = 0; i < tt.n; i++) expect_typed += tt.types[i] >= 0;
  CHECK(n_typed == expect_typed, "%s %s: %d matrices kept in blocks (%d fit the type)", preset, tn,
        n_typed, expect_typed);
  const mkc_graph *g = &fx.g;
  mkc_session *k = mkc_session_open(test_backend(), g, &fx.src, &fx.w, blocks);
  mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, g, &fx.src, &fx.w, 0);
  fixture_cmp cmp = fixture_vs_reference(k, ref, g, PROMPT, N_PROMPT, STEPS);
  CHECK(cmp.ok, "%s %s: the prompt and %d steps run", preset, tn, STEPS);
  CHECK(cmp.worst <= TOL, "%s %s: kernel logits within %g of the reference's (worst %.3g)", preset,
        tn, TOL, cmp.worst);
  CHECK(cmp.same, "%s %s: the same greedy tokens as the reference over %d steps", preset, tn,
        cmp.steps);
  const mkc_ref_kv_stats *kv = ref ? mkc_ref_kv_check(mkc_session_ref(ref)) : NULL;
  CHECK(kv && kv->checked > 0 && kv->mismatched == 0,
        "%s %s: the kernel's %ld K/V values are the reference's (%ld taken at a midpoint)%s%s",
        preset, tn, kv ? kv->checked : 0, kv ? kv->followed : 0, kv && kv->mismatched ? ": " : "",
        kv ? kv->first : "");
  mkc_session_close(k);
  mkc_session_close(ref);
  fixture_close(&fx);
}

static void kernel_vs_reference(const char *preset, int want) {
  kernel_vs_reference_on(preset, want, 0);
}

/* A decoder broken in place (pattern, first met after where in the kernel's
 * source, becomes repl, of the same length) must move the logits off the
 * reference's. where NULL: the case of type's decoder. */
static void planted_bug_at(const char *preset, int type, const char *where, const char *pattern,
                           const char *repl, const char *what) {
  fixture fx;
  type_table tt;
  int n_typed = 0;
  const char *name = mkc_ggml_type((uint32_t)type)->name;
  if (!CHECK(open_typed(&fx, preset, type, &tt, &n_typed) == 0, "planted: generate")) return;
  char case_name[32];
  snprintf(case_name, sizeof case_name, "case MKC_W_%s:", name);
  char *dec = strstr(fx.src.source, where ? where : case_name);
  char *at = dec ? strstr(dec, pattern) : NULL;
  if (CHECK(at != NULL && strlen(pattern) == strlen(repl), "planted: %s's %s found", name, what)) {
    memcpy(at, repl, strlen(repl));
    mkc_session *k = mkc_session_open(MKC_BACKEND_CPU, &fx.g, &fx.src, &fx.w, 0);
    mkc_session *ref = mkc_session_open(MKC_BACKEND_REF, &fx.g, &fx.src, &fx.w, 0);
    mkc_step_result r, rr;
    int ok = k && ref && mkc_session_step(k, PROMPT, 1, 0, &r) == 0 &&
             mkc_session_step(ref, PROMPT, 1, 0, &rr) == 0;
    double e = ok ? rel_err(mkc_session_logits(k, 0), mkc_session_logits(ref, 0), fx.g.vocab) : 0;
    CHECK(ok && e > TOL, "planted: a broken %s decoder (%s) is caught (logits %.3g off)", name,
          what, e);
    mkc_session_close(k);
    mkc_session_close(ref);
  }
  fixture_close(&fx);
}

static void planted_bug(const char *preset, int type, const char *pattern, const char *repl,
                        const char *what) {
  planted_bug_at(preset, type, NULL, pattern, repl, what);
}

/* Weight bytes a step reads, as mkc inspect counts them from the emitted
 * source (its per-step constant, T = 1). */
static long long inspected_weight_bytes(const char *source) {
  const char *path = tmp_path("kernel.cu");
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(source, f);
  fclose(f);
  mkc_inspect_opts o = {.tokens = 1, .pos = 0, .blocks = 1};
  mkc_inspect_report r;
  if (mkc_inspect_open(path, &o, &r) != 0) return -1;
  long long bytes = 0;
  for (int s = 0; s < r.n_stages; s++)
    for (int i = 0; i < r.stages[s].meta.n_regions; i++) {
      const mkc_region *g = &r.stages[s].meta.regions[i];
      if (!g->write && g->arena == MKC_ARENA_WEIGHTS) bytes += g->bytes.c;
    }
  mkc_inspect_close(&r);
  return bytes;
}

/* SmolLM2-135M (Q4_1 and Q8_0 matrices, F32 norms): the kernel streams the
 * file's blocks, and decodes what the bf16 kernel of the previous mkc did. */
static void smollm2(void) {
  char path[1024], graph[4200];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0 && mf.tok, "SmolLM2: open")) return;
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .draft_max = 4, .max_ctx = 96, .model = &mf.desc};
  mkc_gen_opts ob = o;
  o.weight_type = mkc_model_file_weight_type;
  o.weight_type_ctx = &mf;
  mkc_graph g = {0}, gb = {0};
  mkc_kernel_src src = {0}, srcb = {0};
  mkc_weights w = {0}, wb = {0};
  mkc_session *blocks = NULL, *bf16 = NULL, *ref = NULL;
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0 && mkc_model_file_weights(&mf, &g, &w) == 0 &&
                 mkc_codegen(&ob, &gb, &srcb) == 0 && mkc_model_file_weights(&mf, &gb, &wb) == 0,
             "SmolLM2: the kernel from blocks and the bf16 one"))
    goto done;

  /* every matrix as the file stores it, byte for byte the file's size */
  long long file_matrices = 0, planned = 0, vectors = 0;
  int typed = 0, matrices = 0, sizes_ok = 1;
  for (int i = 0; i < g.n_weights; i++) {
    const mkc_weight_info *wi = &g.weights[i];
    const mkc_gguf_tensor *t = mkc_gguf_find_tensor(mf.gguf, wi->name);
    long long bytes = 2LL * wi->rows * wi->row_stride;
    if (wi->rows == 1) {
      vectors += bytes;
      continue;
    }
    matrices++;
    typed += wi->type == (int)t->type;
    sizes_ok &= bytes == (long long)t->n_bytes;
    file_matrices += (long long)t->n_bytes;
    planned += bytes;
  }
  CHECK(typed == matrices, "SmolLM2: all %d matrices keep the file's type (%d do)", matrices,
        typed);
  CHECK(sizes_ok && planned == file_matrices,
        "SmolLM2: the kernel's matrices take the file's %lld bytes (%lld)", file_matrices, planned);
  long long per_step = inspected_weight_bytes(src.source);
  CHECK(per_step == file_matrices + vectors,
        "SmolLM2: a step reads %lld weight bytes: the file's matrices, %lld, and the norms as "
        "bf16, %lld (inspect)",
        per_step, file_matrices, vectors);

  blocks = mkc_session_open(MKC_BACKEND_CPU, &g, &src, &w, 0);
  bf16 = mkc_session_open(MKC_BACKEND_CPU, &gb, &srcb, &wb, 0);
  ref = mkc_session_open(MKC_BACKEND_REF, &g, &src, &w, 0);
  if (!CHECK(blocks && bf16 && ref, "SmolLM2: sessions")) goto done;
  const char *prompts[] = {
      "The capital of France is",
      "def fibonacci(n):\n",
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
  };
  for (int p = 0; p < 3; p++) {
    int *ids = NULL, a[16], b[16], c[16];
    int n = mkc_tokenizer_encode(mf.tok, prompts[p], strlen(prompts[p]),
                                 mkc_tokenizer_add_bos(mf.tok), 1, &ids);
    mkc_decode_stats s1, s2, s3;
    mkc_session_reset(blocks);
    mkc_session_reset(bf16);
    mkc_session_reset(ref);
    int ok = n > 0 && mkc_decode(blocks, &g, ids, n, 16, 4, a, &s1) == 0 &&
             mkc_decode(bf16, &gb, ids, n, 16, 4, b, &s2) == 0 &&
             mkc_decode(ref, &g, ids, n, 16, 0, c, &s3) == 0 && s1.generated == 16 &&
             s2.generated == 16 && s3.generated == 16;
    char *text = ok ? mkc_tokenizer_decode(mf.tok, a, 16, 0) : NULL;
    CHECK(ok && memcmp(a, c, sizeof a) == 0,
          "SmolLM2 from blocks, prompt %d: 16 greedy tokens equal the reference's: \"%s\"", p,
          text ? text : "");
    CHECK(ok && memcmp(a, b, sizeof a) == 0,
          "SmolLM2 from blocks, prompt %d: the same 16 tokens as the bf16 kernel", p);
    free(text);
    free(ids);
  }
done:
  mkc_session_close(blocks);
  mkc_session_close(bf16);
  mkc_session_close(ref);
  mkc_weights_free(&w);
  mkc_weights_free(&wb);
  mkc_kernel_src_free(&src);
  mkc_kernel_src_free(&srcb);
  mkc_graph_free(&g);
  mkc_graph_free(&gb);
  mkc_model_file_close(&mf);
}

/* Each decoder broken in one place moves the logits off the reference's. */
static void planted_bugs(void) {
  /* the low chunks read the high nibbles */
  planted_bug("tiny", MKC_GGML_Q4_1, ">> (cl & 2) * 2 & MKC_LOW_NIBBLES",
              ">> (cl & 1) * 4 & MKC_LOW_NIBBLES", "nibble shift");
  /* the odd chunks take the even chunks' fifth bits */
  planted_bug("tiny", MKC_GGML_Q5_0, ">> (cl & 1) * 8", ">> (cl & 0) * 8", "fifth bits' byte");
  /* the third bits of the second half taken from the first half's */
  planted_bug("blocks-tiny", MKC_GGML_Q3_K, ">> (4 * n + j)", ">> (0 * n + j)",
              "third bit's place");
  /* the second half's chunks read the first half's nibbles; every sub-block takes scale 0's top */
  planted_bug("tiny", MKC_GGML_IQ4_NL, ">> (cl & 2) * 2", ">> (cl & 0) * 2", "nibble shift");
  planted_bug("blocks-tiny", MKC_GGML_IQ4_XS, ">> 2 * j & 3u", ">> 0 * j & 3u", "scale's top bits");
  /* MXFP4: the second half's chunks read the first half's nibbles; every scale doubled */
  planted_bug("tiny", MKC_GGML_MXFP4, ">> (cl & 2) * 2", ">> (cl & 0) * 2", "nibble shift");
  planted_bug_at("tiny", MKC_GGML_MXFP4, "mkc_e8m0_half(unsigned e)", "(e - 1u) << 23",
                 "(e - 0u) << 23", "E8M0 scale");
  /* every sub-block takes sub-block 0's fifth bits */
  planted_bug("blocks-tiny", MKC_GGML_Q5_K, ">> j & MKC_LOW_BITS", ">> 0 & MKC_LOW_BITS",
              "fifth bit's place");
  /* the grid types: every group takes its sub-block's first sign index; the ninth index bit of
   * a chunk's second entry taken from its first; the scale of each 16 from the first 16's */
  planted_bug("blocks-tiny", MKC_GGML_IQ2_XXS, "aux >> 7 * (cl & 3)", "aux >> 7 * (cl & 0)",
              "signs' place");
  planted_bug("blocks-tiny", MKC_GGML_IQ3_XXS, "aux >> 7 * (cl & 3)", "aux >> 7 * (cl & 0)",
              "signs' place");
  planted_bug("blocks-tiny", MKC_GGML_IQ3_S, "(ninth & 2u) << 7", "(ninth & 1u) << 8", "ninth bit");
  planted_bug("blocks-tiny", MKC_GGML_IQ2_XS, ">> 4 * (cl >> 1 & 3)", ">> 4 * (cl >> 2 & 2)",
              "scale per 16");
  planted_bug("blocks-tiny", MKC_GGML_IQ2_S, "+ 2 * (cl & 3)) & 3u", "+ 0 * (cl & 3)) & 3u",
              "index top bits");
  /* IQ1: the delta's sign ignored; d's nibbles taken from the wrong words */
  planted_bug("blocks-tiny", MKC_GGML_IQ1_S, "h & 0x8000u ? 9.0f", "h & 0x0000u ? 9.0f",
              "delta's sign");
  planted_bug("blocks-tiny", MKC_GGML_IQ1_M, "(s >> 24 & 0xf0u)", "(s >> 20 & 0xf0u)",
              "d's nibbles");
  /* NVFP4: the odd chunks read the low nibbles; the scale's mantissa lost */
  planted_bug("tiny", MKC_GGML_NVFP4, ">> (cl & 1) * 4", ">> (cl & 0) * 4", "nibble shift");
  planted_bug_at("tiny", MKC_GGML_NVFP4, "mkc_ue4m3_half(unsigned e)", "| man << 20", "| man << 21",
                 "UE4M3 mantissa");
  /* TQ1_0: the 16-byte part read at the 32-byte part's trit; the last chunk's second trit taken
   * from the bytes as they are */
  planted_bug("blocks-tiny", MKC_GGML_TQ1_0, "cl < 30 ? (cl - 20) >> 1", "cl < 30 ? (cl - 20) >> 2",
              "trit of the 16-byte part");
  planted_bug("blocks-tiny", MKC_GGML_TQ1_0, "mkc_bytes_times(h, 3u) << 32",
              "mkc_bytes_times(h, 1u) << 32", "the 4-trit bytes' second trit");
  planted_bug("blocks-tiny", MKC_GGML_TQ2_0, ">> 2 * l & MKC_LOW_PAIRS", ">> 2 * n & MKC_LOW_PAIRS",
              "pair shift");
  planted_bug("blocks-tiny", MKC_GGML_Q1_0, "(cl & 14)) >> 8 * (cl & 1)",
              "(cl & 14)) >> 8 * (cl & 0)", "odd chunks' byte");
  planted_bug_at("tiny", MKC_GGML_Q2_0, "mkc_pairs_x8(unsigned w)", "x << 12", "x << 14",
                 "field spread");
}

static int iq_grid_type(int t) {
  return t == MKC_GGML_IQ2_XXS || t == MKC_GGML_IQ2_XS || t == MKC_GGML_IQ2_S ||
         t == MKC_GGML_IQ3_XXS || t == MKC_GGML_IQ3_S || t == MKC_GGML_IQ1_S || t == MKC_GGML_IQ1_M;
}

/* The types run on blocks-tiny alone, whose columns are whole 256s: the grid types, and those of
 * one or two bits a weight but Q2_0 (on the others each matrix would fall back to a type already
 * run, or to bf16). */
static int blocks_tiny_only(int t) {
  return iq_grid_type(t) || t == MKC_GGML_TQ1_0 || t == MKC_GGML_TQ2_0 || t == MKC_GGML_Q1_0;
}

int main(void) {
  if (test_skip_without_gpu()) return 0;
  if (scratch_open("wtypes") != 0) return 1;
  static const int types[] = {MKC_GGML_Q8_0,    MKC_GGML_Q4_0,
                              MKC_GGML_Q4_1,    MKC_GGML_Q5_0,
                              MKC_GGML_Q5_1,    MKC_GGML_Q2_K,
                              MKC_GGML_Q3_K,    MKC_GGML_Q4_K,
                              MKC_GGML_Q5_K,    MKC_GGML_Q6_K,
                              MKC_GGML_IQ4_NL,  MKC_GGML_IQ4_XS,
                              MKC_GGML_IQ2_XXS, MKC_GGML_IQ2_XS,
                              MKC_GGML_IQ2_S,   MKC_GGML_IQ3_XXS,
                              MKC_GGML_IQ3_S,   MKC_GGML_IQ1_S,
                              MKC_GGML_IQ1_M,   MKC_GGML_MXFP4,
                              MKC_GGML_NVFP4,   MKC_GGML_TQ1_0,
                              MKC_GGML_TQ2_0,   MKC_GGML_Q1_0,
                              MKC_GGML_Q2_0,    MIX};
  static const char *const presets[] = {"tiny", "odd", "blocks-tiny"};
  for (size_t p = 0; p < sizeof presets / sizeof *presets; p++)
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
      if (!blocks_tiny_only(types[t]) || strcmp(presets[p], "blocks-tiny") == 0)
        kernel_vs_reference(presets[p], types[t]);
  /* the broken decoders run on the cpu backend whichever backend the suite is on: under
   * MKC_TEST_BACKEND=cuda (make test-gpu, the fake driver's run) they would repeat the cpu run */
  if (test_backend() == MKC_BACKEND_CPU) planted_bugs();
  /* MKC_SPLIT=1 on 64 blocks, where a row block's columns split over a block's warps at whole
   * storage blocks: a type of 256 and two of 32, MXFP4's 17-byte blocks among them (until
   * 2026-12-01 the split knew the bytes of five types, and Q5_K's logits came out non-finite) */
  if (test_backend() == MKC_BACKEND_CPU) {
    setenv("MKC_SPLIT", "1", 1);
    kernel_vs_reference_on("blocks-tiny", MKC_GGML_Q5_K, 64);
    kernel_vs_reference_on("blocks-tiny", MKC_GGML_Q5_0, 64);
    kernel_vs_reference_on("blocks-tiny", MKC_GGML_MXFP4, 64);
    unsetenv("MKC_SPLIT");
  }
  smollm2();
  scratch_close();
  return check_done();
}
