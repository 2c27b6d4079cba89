/* Model files: the same weights as a GGUF written by `mkc init` and as a
 * Hugging Face folder (config.json + safetensors, Q/K rows in HF's order)
 * describe the same model, fill the same weight arena byte for byte, and
 * give identical logits step by step; model-file errors have their
 * messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "util/files.h"
#include "hf_tokenizer_json.h"
#include "codegen/host.h"
#include "cli/commands.h"
#include "model/model_file.h"
#include "formats/hf.h"
#include "formats/safetensors.h"
#include "exec/decode.h"
#include "exec/session.h"
#include "tokenizer/tokenizer.h"

static int gen(const mkc_model_desc *d, mkc_graph *g, mkc_kernel_src *src) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .draft_max = 3, .max_ctx = 64, .model = d};
  return mkc_codegen(&o, g, src);
}

/* longrope's lists and factor, as files store them: in float (GGUF's F32 tensors; transformers'
 * float32 tensors). */
static int same_longrope(const mkc_rope_scaling *a, const mkc_rope_scaling *b) {
  int same = a->n_factors == b->n_factors && (float)a->attn_factor == (float)b->attn_factor;
  for (int j = 0; same && j < a->n_factors; j++)
    same = (float)a->short_factor[j] == (float)b->short_factor[j] &&
           (float)a->long_factor[j] == (float)b->long_factor[j];
  return same;
}

static int same_scaling(const mkc_rope_scaling *a, const mkc_rope_scaling *b) {
  if (a->type == MKC_ROPE_SCALING_LONGROPE)
    return b->type == a->type && a->orig_ctx == b->orig_ctx && same_longrope(a, b);
  return a->type == b->type && a->factor == b->factor &&
         (a->type != MKC_ROPE_SCALING_LLAMA3 || (a->low_freq_factor == b->low_freq_factor &&
                                                 a->high_freq_factor == b->high_freq_factor)) &&
         (a->type < MKC_ROPE_SCALING_LLAMA3 || a->orig_ctx == b->orig_ctx) &&
         (a->type != MKC_ROPE_SCALING_YARN ||
          (a->beta_fast == b->beta_fast && a->beta_slow == b->beta_slow &&
           a->ext_factor == b->ext_factor && a->attn_factor == b->attn_factor));
}

/* The first rope node's scaling, as a description holds it. */
static mkc_rope_scaling graph_scaling(const mkc_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    const mkc_node *r = &g->nodes[i];
    if (r->op != MKC_OP_ROPE) continue;
    mkc_rope_scaling s = {.type = r->rope_scaling,
                          .factor = r->rope_factor,
                          .low_freq_factor = r->rope_low_freq_factor,
                          .high_freq_factor = r->rope_high_freq_factor,
                          .orig_ctx = r->rope_orig_ctx,
                          .beta_fast = r->rope_beta_fast,
                          .beta_slow = r->rope_beta_slow,
                          .ext_factor = r->rope_ext_factor,
                          .attn_factor = r->rope_attn_factor,
                          .n_factors = r->rope_short_factor.n};
    for (int j = 0; j < s.n_factors && j < MKC_ROPE_MAX_PAIRS; j++) {
      s.short_factor[j] = r->rope_short_factor.v[j];
      s.long_factor[j] = j < r->rope_long_factor.n ? r->rope_long_factor.v[j] : 0;
    }
    return s;
  }
  return (mkc_rope_scaling){.type = -1};
}

static int same_desc(const mkc_model_desc *a, const mkc_model_desc *b) {
  return !strcmp(a->arch, b->arch) && a->vocab == b->vocab && a->dim == b->dim &&
         a->n_layers == b->n_layers && a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads &&
         a->head_dim == b->head_dim && a->ffn == b->ffn && a->rope_theta == b->rope_theta &&
         a->norm_eps == b->norm_eps && a->rope_layout == b->rope_layout && a->tied == b->tied &&
         a->qkv_bias == b->qkv_bias && a->qk_norm == b->qk_norm &&
         a->sliding_window == b->sliding_window && a->swa_local == b->swa_local &&
         a->swa_global == b->swa_global && a->rope_theta_swa == b->rope_theta_swa &&
         a->embed_scale == b->embed_scale && a->attn_scale == b->attn_scale &&
         a->ffn_gelu == b->ffn_gelu && a->post_norms == b->post_norms &&
         a->rope_dim == b->rope_dim && same_scaling(&a->rope_scaling, &b->rope_scaling);
}

/* Steps both sessions through the same inputs (a prompt chunk, then drafts
 * that are partly wrong) and compares every logit bit for bit. */
static void same_logits(const char *name, enum mkc_backend_kind kind, const mkc_graph *ga,
                        const mkc_kernel_src *sa, const mkc_weights *wa, const mkc_graph *gb,
                        const mkc_kernel_src *sb, const mkc_weights *wb) {
  mkc_session *a = mkc_session_open(kind, ga, sa, wa, 2),
              *b = mkc_session_open(kind, gb, sb, wb, 2);
  const char *backend = kind == MKC_BACKEND_REF ? "ref" : "cpu";
  if (!CHECK(a && b, "%s: %s sessions open", name, backend)) goto done;
  const int steps[3][4] = {{1, 7, 42, 3}, {5, 9, 11, 13}, {2, 2, 2, 2}};
  int differ = 0, compared = 0;
  for (int s = 0; s < 3; s++) {
    mkc_step_result ra, rb;
    int n_fixed = s == 0 ? 3 : 0;
    if (mkc_session_step(a, steps[s], 4, n_fixed, &ra) ||
        mkc_session_step(b, steps[s], 4, n_fixed, &rb))
      break;
    differ |= ra.n_out != rb.n_out || memcmp(ra.out, rb.out, sizeof ra.out[0] * ra.n_out);
    for (int t = 0; t < 4; t++) {
      differ |= memcmp(mkc_session_logits(a, t), mkc_session_logits(b, t),
                       sizeof(float) * (size_t)ga->vocab) != 0;
      compared++;
    }
  }
  CHECK(compared == 12 && !differ,
        "%s: %s backend: GGUF and safetensors give identical logits "
        "and tokens (%d logit vectors)",
        name, backend, compared);
done:
  mkc_session_close(a);
  mkc_session_close(b);
}

/* mkc init PRESET (--arch ARCH; NULL: the preset's) -> GGUF; the same weights -> an HF folder;
 * both opened as model files. */
static void gguf_vs_safetensors(const char *preset, const char *arch, int dtype) {
  char gguf[512], dir[512], seed[] = "7";
  snprintf(gguf, sizeof gguf, "%s/%s.gguf", tmp_dir, preset);
  snprintf(dir, sizeof dir, "%s/hf-%s-%s", tmp_dir, preset, mkc_st_dtype_name(dtype));
  mkdir(dir, 0755);
  char *argv[] = {"mkc", "init", "--preset", (char *)preset, "--seed", seed,
                  "-o",  gguf,   "--arch",   (char *)arch,   NULL};
  if (!CHECK(mkc_cmd_init(arch ? 10 : 8, argv) == 0, "%s: mkc init", preset)) return;

  mkc_model_file fa, fb;
  mkc_graph ga = {0}, gb = {0};
  mkc_kernel_src sa = {0}, sb = {0};
  mkc_weights wa = {0}, wb = {0};
  uint16_t *arena_a = NULL, *arena_b = NULL;
  int open_b = 0;
  if (!CHECK(mkc_model_file_open(gguf, &fa) == 0, "%s: open the GGUF", preset)) return;
  if (!CHECK(gen(&fa.desc, &ga, &sa) == 0 && mkc_model_file_weights(&fa, &ga, &wa) == 0,
             "%s: graph and weights from the GGUF", preset))
    goto done;
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts po = {.graph_path = graph, .preset = preset};
  mkc_graph gp;
  mkc_kernel_src sp;
  if (CHECK(mkc_codegen(&po, &gp, &sp) == 0, "%s: the preset's own graph", preset)) {
    mkc_rope_scaling want = graph_scaling(&gp), got = graph_scaling(&ga);
    CHECK(same_scaling(&want, &got) && want.type == fa.desc.rope_scaling.type,
          "%s: the GGUF gives the preset's RoPE scaling (%s)", preset,
          mkc_rope_scaling_name(got.type));
    mkc_graph_free(&gp);
    mkc_kernel_src_free(&sp);
  }
  if (!CHECK(mkc_hf_write(dir, &fa.desc, &wa, dtype) == 0, "%s: write the HF folder (%s)", preset,
             mkc_st_dtype_name(dtype)))
    goto done;
  open_b = mkc_model_file_open(dir, &fb) == 0;
  if (!CHECK(open_b, "%s: open the HF folder", preset)) goto done;
  CHECK(same_desc(&fa.desc, &fb.desc), "%s: config.json describes what the GGUF metadata does",
        preset);
  CHECK(!strcmp(fb.format, "safetensors") && !strcmp(fa.format, "GGUF"), "%s: formats named",
        preset);
  if (!CHECK(gen(&fb.desc, &gb, &sb) == 0 && mkc_model_file_weights(&fb, &gb, &wb) == 0,
             "%s: graph and weights from safetensors", preset))
    goto done;
  arena_a = mkc_weights_arena(&wa, &ga);
  arena_b = mkc_weights_arena(&wb, &gb);
  CHECK(arena_a && arena_b && ga.weight_elems == gb.weight_elems &&
            memcmp(arena_a, arena_b, ga.weight_elems * sizeof *arena_a) == 0,
        "%s: the weight arenas are byte-identical (%zu bf16 values)", preset, ga.weight_elems);
  same_logits(preset, MKC_BACKEND_REF, &ga, &sa, &wa, &gb, &sb, &wb);
  same_logits(preset, MKC_BACKEND_CPU, &ga, &sa, &wa, &gb, &sb, &wb);
done:
  free(arena_a);
  free(arena_b);
  mkc_weights_free(&wa);
  mkc_weights_free(&wb);
  mkc_kernel_src_free(&sa);
  mkc_kernel_src_free(&sb);
  mkc_graph_free(&ga);
  mkc_graph_free(&gb);
  mkc_model_file_close(&fa);
  if (open_b) mkc_model_file_close(&fb);
}

/* Opening path fails with a message containing want. */
static void open_fails(const char *what, const char *path, const char *want) {
  mkc_model_file mf;
  check_stderr_begin();
  int rc = mkc_model_file_open(path, &mf);
  char *text = check_stderr_end();
  if (rc == 0) mkc_model_file_close(&mf);
  CHECK(rc != 0 && text && strstr(text, want), "%s: refused with '%s'", what, want);
  free(text);
}

/* A GGUF whose metadata says arch with the given extra entry. */
static void write_gguf(const char *path, const char *arch, const char *key, uint32_t v) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  char k[128];
  mkc_gguf_set_str(w, "general.architecture", arch);
  const char *sizes[] = {"block_count", "embedding_length", "feed_forward_length",
                         "attention.head_count"};
  uint32_t vals[] = {1, 8, 16, 2};
  for (int i = 0; i < 4; i++) {
    snprintf(k, sizeof k, "%s.%s", arch, sizes[i]);
    if (!key || strcmp(key, sizes[i])) mkc_gguf_set_u32(w, k, vals[i]);
  }
  if (key && v) {
    snprintf(k, sizeof k, "%s.%s", arch, key);
    mkc_gguf_set_u32(w, k, v);
  }
  float embd[8 * 4] = {0};
  int64_t ne[2] = {8, 4};
  mkc_gguf_add_tensor(w, "token_embd.weight", MKC_GGML_F32, 2, ne, embd);
  mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
}

/* A llama GGUF like write_gguf's, heads of head_dim, with metadata key =
 * value (a string; NULL: none) and n F32 vectors t. */
typedef struct {
  const char *name;
  const float *v;
  int n;
} rope_tensor;
static void write_rope_tensors(const char *path, int head_dim, double theta, const char *key,
                               const char *value, const rope_tensor *t, int n) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  mkc_gguf_set_str(w, "general.architecture", "llama");
  const char *sizes[] = {"block_count",          "embedding_length",     "feed_forward_length",
                         "attention.head_count", "attention.key_length", "attention.value_length"};
  uint32_t vals[] = {1, 8, 16, 2, (uint32_t)head_dim, (uint32_t)head_dim};
  char k[128];
  for (int i = 0; i < 6; i++) {
    snprintf(k, sizeof k, "llama.%s", sizes[i]);
    mkc_gguf_set_u32(w, k, vals[i]);
  }
  mkc_gguf_set_f32(w, "llama.rope.freq_base", (float)theta);
  if (key) mkc_gguf_set_str(w, key, value);
  float embd[8 * 4] = {0};
  int64_t ne[2] = {8, 4};
  mkc_gguf_add_tensor(w, "token_embd.weight", MKC_GGML_F32, 2, ne, embd);
  for (int i = 0; i < n; i++) {
    int64_t ne_t[1] = {t[i].n};
    mkc_gguf_add_tensor(w, t[i].name, MKC_GGML_F32, 1, ne_t, t[i].v);
  }
  mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
}
/* A llama GGUF like write_gguf's, heads of head_dim, with metadata key =
 * value (a string; NULL: none) and rope_freqs.weight (NULL: none). */
static void write_rope_gguf(const char *path, int head_dim, double theta, const char *key,
                            const char *value, const float *freqs, int n_freqs) {
  const rope_tensor t = {"rope_freqs.weight", freqs, n_freqs};
  write_rope_tensors(path, head_dim, theta, key, value, &t, freqs ? 1 : 0);
}

/* Llama 3's rope_freqs.weight as llama.cpp's converter writes it for
 * Llama-3.2-1B (float32 arithmetic: theta 500000, head_dim 64, factor 32,
 * low 1, high 4, 8192): read back as those parameters, the divisors
 * mkc_llama3_rope_divisor gives; and files that disagree refused. */
static void rope_freqs_files(void) {
  float freqs[32];
  for (int j = 0; j < 32; j++) freqs[j] = j < 15 ? 1.0f : 32.0f;
  freqs[15] = 1.65132928f;
  freqs[16] = 3.29226279f;
  freqs[17] = 9.66673088f;
  const char *path = tmp_path("llama32-rope.gguf");
  write_rope_gguf(path, 64, 500000, NULL, NULL, freqs, 32);
  mkc_model_file mf;
  if (CHECK(mkc_model_file_open(path, &mf) == 0, "Llama-3.2-1B's rope_freqs.weight loads")) {
    const mkc_rope_scaling *s = &mf.desc.rope_scaling;
    CHECK(s->type == MKC_ROPE_SCALING_LLAMA3 && s->factor == 32 && s->low_freq_factor == 1 &&
              s->high_freq_factor == 4 && s->orig_ctx == 8192,
          "... as llama3 scaling: factor 32, low 1, high 4, original 8192");
    /* by hand, j = 16: wavelength 2 pi sqrt(500000) = 4442.883, smooth (8192 / 4442.883 - 1) / 3
     * = 0.2812826, divisor 1 / ((1 - 0.2812826) / 32 + 0.2812826) = 3.292262 */
    CHECK_NEAR(mkc_llama3_rope_divisor(&mf.desc, 16), 3.292262, 1e-6,
               "the divisor of pair 16 by hand");
    CHECK_NEAR(mkc_llama3_rope_divisor(&mf.desc, 15), 1.6513292457638984, 1e-12,
               "the divisor of pair 15 (transformers' formula in double)");
    CHECK(mkc_llama3_rope_divisor(&mf.desc, 14) == 1 && mkc_llama3_rope_divisor(&mf.desc, 18) == 32,
          "pairs 14 and 18: kept, and divided by 32");
    mkc_model_file_close(&mf);
  }
  freqs[16] = 3.2923f; /* 2.2e-5 off */
  path = tmp_path("llama32-off.gguf");
  write_rope_gguf(path, 64, 500000, NULL, NULL, freqs, 32);
  open_fails("rope_freqs.weight off its parameters", path,
             "rope_freqs.weight[16] = 3.29229999, but Llama 3 scaling with factor 32, "
             "low_freq_factor 1, high_freq_factor 4, original context 8192 gives 3.2922621");
  path = tmp_path("llama32-short.gguf");
  write_rope_gguf(path, 64, 500000, NULL, NULL, freqs, 16);
  open_fails("rope_freqs.weight of the wrong length", path,
             "rope_freqs.weight: Expected F32 ne {32} (head dim / 2); Actual F32 ne {16}");
  path = tmp_path("llama32-linear.gguf");
  freqs[16] = 3.29226279f;
  write_rope_gguf(path, 64, 500000, "llama.rope.scaling.type", "yarn", freqs, 32);
  open_fails("rope_freqs.weight with yarn", path,
             "rope_freqs.weight together with yarn RoPE scaling: not supported");
  path = tmp_path("dynamic.gguf");
  write_rope_gguf(path, 64, 500000, "llama.rope.scaling.type", "dynamic", NULL, 0);
  open_fails("an unknown scaling type", path,
             "llama.rope.scaling.type = \"dynamic\": RoPE scaling not supported (mkc runs none, "
             "linear, yarn, Llama 3's rope_freqs.weight and longrope's "
             "rope_factors_{short,long}.weight)");
}

/* LongRoPE as llama.cpp's converter writes Phi-3's 128k files: rope_factors_short.weight and
 * rope_factors_long.weight, F32 [head_dim / 2], the original context and attn_factor as keys
 * (write_rope_tensors' heads of 8: 4 factors each); and files that break it refused. */
static void longrope_files(void) {
  const float short_f[4] = {1, 1.5f, 2, 3}, long_f[4] = {1.25f, 4, 9, 30}, zero[4] = {1, 0, 1, 1};
  const rope_tensor both[] = {{"rope_factors_short.weight", short_f, 4},
                              {"rope_factors_long.weight", long_f, 4},
                              {"rope_freqs.weight", short_f, 4}};
  const char *path = tmp_path("longrope.gguf");
  write_rope_tensors(path, 8, 10000, NULL, NULL, both, 2);
  mkc_model_file mf;
  if (CHECK(mkc_model_file_open(path, &mf) == 0, "a longrope file loads")) {
    const mkc_rope_scaling *s = &mf.desc.rope_scaling;
    CHECK(s->type == MKC_ROPE_SCALING_LONGROPE && s->n_factors == 4 && s->short_factor[1] == 1.5 &&
              s->long_factor[3] == 30 && s->attn_factor == 1 && s->orig_ctx == mf.desc.ctx_train,
          "... as longrope: its factors, attn_factor 1 and the trained context where the keys "
          "are absent (llama.cpp's defaults)");
    mkc_model_file_close(&mf);
  }
  path = tmp_path("longrope-one.gguf");
  write_rope_tensors(path, 8, 10000, NULL, NULL, both + 1, 1);
  open_fails(
      "longrope without its short factors", path,
      "rope_factors_short.weight: Expected F32 ne {4} (rotated dims / 2, beside the other list); "
      "Actual missing");
  const rope_tensor wide[] = {{"rope_factors_short.weight", short_f, 4},
                              {"rope_factors_long.weight", long_f, 3}};
  path = tmp_path("longrope-3.gguf");
  write_rope_tensors(path, 8, 10000, NULL, NULL, wide, 2);
  open_fails(
      "longrope with 3 long factors for 4 pairs", path,
      "rope_factors_long.weight: Expected F32 ne {4} (rotated dims / 2, beside the other list); "
      "Actual F32");
  const rope_tensor zeros[] = {{"rope_factors_short.weight", zero, 4},
                               {"rope_factors_long.weight", long_f, 4}};
  path = tmp_path("longrope-0.gguf");
  write_rope_tensors(path, 8, 10000, NULL, NULL, zeros, 2);
  open_fails("longrope with a factor of 0", path,
             "rope_factors_short.weight[1] = 0: Expected a positive divisor");
  path = tmp_path("longrope-freqs.gguf");
  write_rope_tensors(path, 8, 10000, NULL, NULL, both, 3);
  open_fails("longrope beside rope_freqs.weight", path,
             "rope_factors_long/short.weight (longrope) together with rope_freqs.weight: not "
             "supported");
  path = tmp_path("longrope-yarn.gguf");
  write_rope_tensors(path, 8, 10000, "llama.rope.scaling.type", "yarn", both, 2);
  open_fails("longrope beside yarn", path,
             "rope_factors_long/short.weight (longrope) together with yarn: not supported");
}

/* A phi3 file like write_gguf's (1 layer, dim 8, 2 heads of 4) with one more matrix. */
static void write_phi3(const char *path, const char *name, int64_t rows, int64_t cols) {
  mkc_gguf_writer *w = mkc_gguf_writer_new();
  mkc_gguf_set_str(w, "general.architecture", "phi3");
  const char *sizes[] = {"phi3.block_count", "phi3.embedding_length", "phi3.feed_forward_length",
                         "phi3.attention.head_count"};
  uint32_t vals[] = {1, 8, 16, 2};
  for (int i = 0; i < 4; i++) mkc_gguf_set_u32(w, sizes[i], vals[i]);
  static float embd[8 * 4], extra[64 * 8];
  int64_t ne[2] = {8, 4}, ne_x[2] = {cols, rows};
  mkc_gguf_add_tensor(w, "token_embd.weight", MKC_GGML_F32, 2, ne, embd);
  mkc_gguf_add_tensor(w, name, MKC_GGML_F32, rows == 1 ? 1 : 2, ne_x, extra);
  mkc_gguf_write(w, path);
  mkc_gguf_writer_free(w);
}

/* phi3's fused matrices that do not split as its sizes say, and its 128k files' longrope. */
static void phi3_files(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/phi3-qkv.gguf", tmp_dir);
  write_phi3(path, "blk.0.attn_qkv.weight", 20, 8);
  open_fails("a phi3 attn_qkv of 20 rows (8 + 8 + 8 wanted)", path,
             "tensor 'blk.0.attn_qkv.weight' [20, 8]: expected 3 fused matrices of 24 rows in all");
  snprintf(path, sizeof path, "%s/phi3-longrope.gguf", tmp_dir);
  write_phi3(path, "rope_factors_long.weight", 1, 2);
  open_fails("a phi3 file with the long factors only", path,
             "rope_factors_short.weight: Expected F32 ne {2} (rotated dims / 2, beside the other "
             "list); Actual missing");
  snprintf(path, sizeof path, "%s/phi3-ok.gguf", tmp_dir);
  write_phi3(path, "blk.0.attn_qkv.weight", 24, 8);
  mkc_model_file mf;
  if (CHECK(mkc_model_file_open(path, &mf) == 0, "a phi3 file with a fused attn_qkv opens")) {
    const mkc_gguf_tensor *q = mkc_gguf_find_tensor(mf.gguf, "blk.0.attn_q.weight"),
                          *k = mkc_gguf_find_tensor(mf.gguf, "blk.0.attn_k.weight"),
                          *v = mkc_gguf_find_tensor(mf.gguf, "blk.0.attn_v.weight");
    CHECK(
        q && k && v && !mkc_gguf_find_tensor(mf.gguf, "blk.0.attn_qkv.weight") && q->ne[1] == 8 &&
            k->data == q->data + 8 * 8 * 4 && v->data == k->data + 8 * 8 * 4 &&
            mf.desc.rope_layout == MKC_ROPE_NEOX,
        "... read as attn_q, attn_k and attn_v, rows 0-7, 8-15 and 16-23 of its bytes; NEOX RoPE");
    mkc_model_file_close(&mf);
  }
}

/* An HF folder whose config.json gives more layers than its weights hold tensors. */
static void many_layers_hf(void) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/hf-manylayers", tmp_dir);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/config.json", dir);
  const char *config = "{\"model_type\": \"phi3\", \"hidden_size\": 8, \"num_hidden_layers\": "
                       "14090241, \"num_attention_heads\": 2, \"intermediate_size\": 16, "
                       "\"vocab_size\": 4}";
  const void *parts[] = {config};
  size_t sizes[] = {strlen(config)};
  float embd[8 * 4] = {0};
  mkc_st_out t = {.name = "model.embed_tokens.weight",
                  .dtype = MKC_ST_F32,
                  .n_dims = 2,
                  .shape = {4, 8},
                  .values = embd};
  char st[600];
  snprintf(st, sizeof st, "%s/model.safetensors", dir);
  if (!CHECK(mkc_write_atomic(path, parts, sizes, 1) == 0 && mkc_st_write(st, &t, 1) == 0,
             "write an HF folder of 14090241 layers and 1 tensor"))
    return;
  open_fails("more layers than tensors (HF phi3)", dir,
             "config.json's num_hidden_layers = 14090241, but the weights hold 1 tensor");
}

static void bad_files(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/none.gguf", tmp_dir);
  open_fails("missing file", path, "cannot open model");
  snprintf(path, sizeof path, "%s/gptneox.gguf", tmp_dir);
  write_gguf(path, "gptneox", NULL, 0);
  open_fails("unsupported architecture", path,
             "architecture \"gptneox\" is not supported (mkc runs llama, mistral, qwen2, qwen3, "
             "qwen3moe, gemma, gemma2, gemma3, phi3, granite, granitemoe, gpt-oss, smollm3, "
             "exaone, exaone4)");
  snprintf(path, sizeof path, "%s/nolayers.gguf", tmp_dir);
  write_gguf(path, "llama", "block_count", 0);
  open_fails("missing block_count", path, "missing metadata llama.block_count");
  snprintf(path, sizeof path, "%s/gqa.gguf", tmp_dir);
  write_gguf(path, "llama", "attention.head_count_kv", 3);
  open_fails("heads not a multiple of KV heads", path,
             "2 attention heads are not a multiple of 3 KV heads");
  /* more heads than the width has dims, and no key_length: a head of 0 dims (the gguf fuzzer's
   * phi3 file then divided by 0 rows splitting its fused Q/K/V) */
  snprintf(path, sizeof path, "%s/noheaddims.gguf", tmp_dir);
  write_gguf(path, "phi3", "attention.head_count", 16);
  open_fails("heads of 0 dims", path,
             "16 attention heads in a width of 8 leave a head no dims (Expected: head_count <= "
             "embedding_length, or phi3.attention.key_length)");
  snprintf(path, sizeof path, "%s/partial.gguf", tmp_dir);
  write_gguf(path, "llama", "rope.dimension_count", 2);
  mkc_model_file mf;
  if (CHECK(mkc_model_file_open(path, &mf) == 0, "partial RoPE (2 of 4 dims) opens")) {
    CHECK(mf.desc.rope_dim == 2, "... rotating the first 2 dims");
    mkc_model_file_close(&mf);
  }
  write_gguf(path, "llama", "rope.dimension_count", 3);
  open_fails("partial RoPE over an odd count of dims", path,
             "llama.rope.dimension_count = 3 but heads have 4 dims (Expected: an even count, at "
             "most the heads' dims)");
  write_gguf(path, "llama", "rope.dimension_count", 6);
  open_fails("RoPE over more dims than a head's", path,
             "llama.rope.dimension_count = 6 but heads have 4 dims");
  snprintf(path, sizeof path, "%s/pooling.gguf", tmp_dir);
  write_gguf(path, "llama", "pooling_type", 9);
  open_fails("a pooling type llama.cpp has not", path,
             "llama.pooling_type = 9: expected one of llama.cpp's pooling types, 0 (none), 1 "
             "(mean), 2 (cls), 3 (last) or 4 (rank)");
  snprintf(path, sizeof path, "%s/empty-dir", tmp_dir);
  mkdir(path, 0755);
  open_fails("folder without config.json", path, "config.json");
  /* a layer count past the file's tensors (a fuzzed phi3 file of 2.7 KB said 14090241 layers, and
   * unfusing them took 17 s): refused before any loader walks the layers */
  snprintf(path, sizeof path, "%s/manylayers.gguf", tmp_dir);
  write_gguf(path, "phi3", "block_count", 14090241);
  open_fails("more layers than tensors (phi3)", path,
             "phi3.block_count = 14090241 layers, but the file holds 1 tensor (Expected: each "
             "layer's tensors in the file)");
  write_gguf(path, "llama", "block_count", 2);
  open_fails("two layers, one tensor", path, "llama.block_count = 2 layers, but the file holds 1");
  many_layers_hf();
}

/* Writes the tokenizer files of a Hugging Face folder for the GGUF's vocabulary. */
static int write_hf_tokenizer(const char *dir, const mkc_model_file *mf) {
  char path[600], config[512];
  char *json = json_from_gguf(mf->gguf);
  if (!json) return -1;
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  const void *parts[] = {json};
  size_t sizes[] = {strlen(json)};
  int rc = mkc_write_atomic(path, parts, sizes, 1);
  free(json);
  const mkc_gguf_kv *tokens;
  if (rc || mkc_gguf_get_arr(mf->gguf, "tokenizer.ggml.tokens", MKC_GGUF_STRING, &tokens) != 1)
    return -1;
  mkc_gguf_str bos = mkc_gguf_arr_str(tokens, (uint64_t)mkc_tokenizer_bos(mf->tok));
  mkc_gguf_str eos = mkc_gguf_arr_str(tokens, (uint64_t)mkc_tokenizer_eos(mf->tok));
  snprintf(config, sizeof config,
           "{\"bos_token\": \"%.*s\", \"eos_token\": \"%.*s\", \"add_bos_token\": %s}\n",
           (int)bos.len, bos.s, (int)eos.len, eos.s,
           mkc_tokenizer_add_bos(mf->tok) ? "true" : "false");
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  parts[0] = config;
  sizes[0] = strlen(config);
  return mkc_write_atomic(path, parts, sizes, 1);
}

/* The real model as a Hugging Face folder (its dequantized weights, its
 * vocabulary as tokenizer.json): the same description, arena, prompt ids,
 * and greedy tokens as from the GGUF. */
static void same_model_as_hf(const mkc_model_file *mf, const mkc_graph *g, const mkc_weights *w,
                             mkc_session *ref, const char *prompt) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/hf-smollm2", tmp_dir);
  mkc_model_file hf;
  if (!CHECK(mkc_hf_write(dir, &mf->desc, w, MKC_ST_BF16) == 0 && write_hf_tokenizer(dir, mf) == 0,
             "SmolLM2 as an HF folder: written"))
    return;
  if (!CHECK(mkc_model_file_open(dir, &hf) == 0 && hf.tok, "SmolLM2 as an HF folder: opens"))
    return;
  mkc_graph g2 = {0};
  mkc_kernel_src src2 = {0};
  mkc_weights w2 = {0};
  uint16_t *a = NULL, *b = NULL;
  int *ids = NULL, *ids2 = NULL, want[8], got[8];
  CHECK(same_desc(&mf->desc, &hf.desc), "SmolLM2: config.json says what the GGUF metadata does");
  if (!CHECK(gen(&hf.desc, &g2, &src2) == 0 && mkc_model_file_weights(&hf, &g2, &w2) == 0,
             "SmolLM2: graph and weights from safetensors"))
    goto done;
  a = mkc_weights_arena(w, g);
  b = mkc_weights_arena(&w2, &g2);
  CHECK(a && b && g->weight_elems == g2.weight_elems &&
            memcmp(a, b, g->weight_elems * sizeof *a) == 0,
        "SmolLM2: the weight arenas are byte-identical (%zu bf16 values)", g->weight_elems);
  int n = mkc_tokenizer_encode(mf->tok, prompt, strlen(prompt), mkc_tokenizer_add_bos(mf->tok), 1,
                               &ids);
  int n2 =
      mkc_tokenizer_encode(hf.tok, prompt, strlen(prompt), mkc_tokenizer_add_bos(hf.tok), 1, &ids2);
  CHECK(n > 0 && n == n2 && memcmp(ids, ids2, (size_t)n * sizeof *ids) == 0,
        "SmolLM2: tokenizer.json and the GGUF vocabulary give the same %d prompt ids", n);
  mkc_session *s2 = mkc_session_open(MKC_BACKEND_REF, &g2, &src2, &w2, 0);
  mkc_decode_stats st;
  mkc_session_reset(ref);
  CHECK(s2 && n > 0 && mkc_decode(ref, g, ids, n, 8, 0, want, &st) == 0 &&
            mkc_decode(s2, &g2, ids, n, 8, 0, got, &st) == 0 &&
            memcmp(want, got, sizeof want) == 0 &&
            memcmp(mkc_session_logits(ref, 0), mkc_session_logits(s2, 0),
                   sizeof(float) * (size_t)g->vocab) == 0,
        "SmolLM2: GGUF and safetensors give identical logits and greedy tokens");
  mkc_session_close(s2);
done:
  free(ids);
  free(ids2);
  free(a);
  free(b);
  mkc_weights_free(&w2);
  mkc_kernel_src_free(&src2);
  mkc_graph_free(&g2);
  mkc_model_file_close(&hf);
}

/* A pretrained model (tests/data/fetch.sh): greedy continuations of fixed
 * prompts by the kernel (cpu backend, drafts on) equal the reference
 * executor's (no drafts), token for token. */
static void real_model(void) {
  char path[1024], graph[4200];
  if (test_data_path("SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path) != 0) return;
  mkc_model_file mf;
  if (!CHECK(mkc_model_file_open(path, &mf) == 0 && mf.tok, "SmolLM2: open with its tokenizer"))
    return;
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .draft_max = 4, .max_ctx = 64, .model = &mf.desc};
  mkc_graph g = {0};
  mkc_kernel_src src = {0};
  mkc_weights w = {0};
  mkc_session *ref = NULL, *cpu = NULL;
  if (!CHECK(mkc_codegen(&o, &g, &src) == 0 && mkc_model_file_weights(&mf, &g, &w) == 0,
             "SmolLM2: graph (%s) and dequantized weights", mf.desc.name))
    goto done;
  ref = mkc_session_open(MKC_BACKEND_REF, &g, &src, &w, 0);
  cpu = mkc_session_open(MKC_BACKEND_CPU, &g, &src, &w, 0);
  if (!CHECK(ref && cpu, "SmolLM2: ref and cpu sessions")) goto done;
  const char *prompts[] = {
      "The capital of France is",
      "def fibonacci(n):\n",
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
  };
  for (int p = 0; p < 3; p++) {
    int *ids = NULL, want[8], got[8];
    int n = mkc_tokenizer_encode(mf.tok, prompts[p], strlen(prompts[p]),
                                 mkc_tokenizer_add_bos(mf.tok), 1, &ids);
    mkc_decode_stats sr, sc;
    mkc_session_reset(ref);
    mkc_session_reset(cpu);
    int ok = n > 0 && mkc_decode(ref, &g, ids, n, 8, 0, want, &sr) == 0 &&
             mkc_decode(cpu, &g, ids, n, 8, 4, got, &sc) == 0 && sr.generated == 8 &&
             sc.generated == 8;
    char *text = ok ? mkc_tokenizer_decode(mf.tok, want, 8, 0) : NULL;
    CHECK(ok && memcmp(want, got, sizeof want) == 0,
          "SmolLM2, prompt %d (%d tokens): the kernel's 8 greedy tokens equal the reference's "
          "(drafted %ld, accepted %ld): \"%s\"",
          p, n, sc.drafted, sc.accepted, text ? text : "");
    if (p == 0) CHECK(text && strstr(text, "Paris"), "SmolLM2 knows the capital of France");
    free(text);
    free(ids);
  }
  same_model_as_hf(&mf, &g, &w, ref, prompts[0]);
done:
  mkc_session_close(ref);
  mkc_session_close(cpu);
  mkc_weights_free(&w);
  mkc_kernel_src_free(&src);
  mkc_graph_free(&g);
  mkc_model_file_close(&mf);
}

int main(void) {
  if (scratch_open("model") != 0) return 1;
  gguf_vs_safetensors("tiny", NULL, MKC_ST_BF16);
  gguf_vs_safetensors("tiny", NULL, MKC_ST_F32);
  gguf_vs_safetensors("qwen2-tiny", NULL, MKC_ST_BF16);
  gguf_vs_safetensors("qwen3-tiny", NULL, MKC_ST_F32);
  gguf_vs_safetensors("llama3-tiny", NULL, MKC_ST_BF16); /* rope_freqs.weight and rope_scaling */
  gguf_vs_safetensors("yarn-tiny", NULL, MKC_ST_F32);
  gguf_vs_safetensors("linear-tiny", NULL, MKC_ST_BF16);
  /* rope_factors_*.weight and rope_scaling longrope; partial_rotary_factor and a tied head */
  gguf_vs_safetensors("longrope-tiny", "phi3", MKC_ST_F32);
  gguf_vs_safetensors("partial-tiny", "phi3", MKC_ST_BF16);
  gguf_vs_safetensors("granite-tiny", NULL, MKC_ST_BF16); /* Granite's four multipliers */
  /* norms stored less 1, summed back in float */
  gguf_vs_safetensors("gemma3-tiny", NULL, MKC_ST_F32);
  rope_freqs_files();
  longrope_files();
  bad_files();
  phi3_files();
  real_model();
  scratch_close();
  return check_done();
}
