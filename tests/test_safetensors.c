/* Hugging Face checkpoints: F32/F16/BF16 tensors round-trip through the
 * writer and reader as mkc_float_to_bf16 rounds them; a tiny model's seeded
 * weights written as an HF checkpoint (one file or two shards + index) load
 * back bit for bit; the Q/K permutation matches a hand-worked example and
 * turns NEOX RoPE into interleaved RoPE (a plain-C oracle); config.json
 * samples of each architecture give the expected description; and each kind
 * of broken file or config fails with its own message. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "scratch.h"
#include "codegen/host.h"
#include "formats/dequant.h"
#include "formats/hf.h"
#include "formats/safetensors.h"
#include "formats/weights.h"

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(p, 1, n, f);
    fclose(f);
  }
}

static char *first_line(char *text) {
  text[strcspn(text, "\n")] = '\0';
  return text;
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* How many of n (GGUF, HF) name pairs of arch fail to map either way. */
static int wrong_pairs(const char *arch, const char *const (*pairs)[2], size_t n) {
  int wrong = 0;
  for (size_t i = 0; i < n; i++) {
    char hf[128] = "", gguf[128] = "";
    wrong += mkc_hf_name(arch, pairs[i][0], hf, sizeof hf) != 0 || strcmp(hf, pairs[i][1]) != 0;
    wrong += mkc_gguf_name_from_hf(arch, pairs[i][1], gguf, sizeof gguf) != 0 ||
             strcmp(gguf, pairs[i][0]) != 0;
  }
  return wrong;
}

/* Names both ways, and names with no counterpart. */
static void test_names(void) {
  static const char *const pairs[][2] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.3.attn_k.weight", "model.layers.3.self_attn.k_proj.weight"},
      {"blk.3.attn_v.weight", "model.layers.3.self_attn.v_proj.weight"},
      {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
      {"blk.3.attn_q.bias", "model.layers.3.self_attn.q_proj.bias"},
      {"blk.3.attn_k.bias", "model.layers.3.self_attn.k_proj.bias"},
      {"blk.3.attn_v.bias", "model.layers.3.self_attn.v_proj.bias"},
      {"blk.3.attn_q_norm.weight", "model.layers.3.self_attn.q_norm.weight"},
      {"blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"},
      {"blk.7.ffn_norm.weight", "model.layers.7.post_attention_layernorm.weight"},
      {"blk.7.ffn_gate.weight", "model.layers.7.mlp.gate_proj.weight"},
      {"blk.7.ffn_up.weight", "model.layers.7.mlp.up_proj.weight"},
      {"blk.7.ffn_down.weight", "model.layers.7.mlp.down_proj.weight"},
  };
  int wrong = wrong_pairs("llama", pairs, sizeof pairs / sizeof *pairs);
  CHECK_INT(wrong, 0, "%zu GGUF <-> HF name pairs both ways", sizeof pairs / sizeof *pairs);
  static const char *const unknown[] = {"model.rotary_emb.inv_freq",
                                        "model.layers.0.self_attn.rotary_emb.inv_freq",
                                        "blk.01.attn_q.weight",
                                        "blk.x.attn_q.weight",
                                        "blk.0.attn_q",
                                        "model.layers.99999999999.mlp.up_proj.weight",
                                        "blk..attn_q.weight",
                                        "lm_head.bias"};
  char out[128];
  int mapped = 0;
  for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
    mapped += mkc_hf_name("llama", unknown[i], out, sizeof out) == 0 ||
              mkc_gguf_name_from_hf("llama", unknown[i], out, sizeof out) == 0;
  CHECK_INT(mapped, 0, "inv_freq, leading zeros, bad layer numbers have no counterpart");
  char small[16];
  CHECK(mkc_hf_name("llama", "blk.3.attn_q.weight", small, sizeof small) == -1,
        "a name that does not fit the buffer is refused");

  /* Gemma 3 (transformers' Gemma3DecoderLayer, llama.cpp's gemma3 tensor names): four norms a
   * layer, post_attention_layernorm the one after attention. */
  static const char *const gemma[][2] = {
      {"blk.2.attn_norm.weight", "model.layers.2.input_layernorm.weight"},
      {"blk.2.post_attention_norm.weight", "model.layers.2.post_attention_layernorm.weight"},
      {"blk.2.ffn_norm.weight", "model.layers.2.pre_feedforward_layernorm.weight"},
      {"blk.2.post_ffw_norm.weight", "model.layers.2.post_feedforward_layernorm.weight"},
      {"blk.2.attn_q_norm.weight", "model.layers.2.self_attn.q_norm.weight"},
      {"blk.2.ffn_gate.weight", "model.layers.2.mlp.gate_proj.weight"},
      {"output_norm.weight", "model.norm.weight"},
  };
  wrong = wrong_pairs("gemma3", gemma, sizeof gemma / sizeof *gemma);
  CHECK_INT(wrong, 0, "gemma3: %zu GGUF <-> HF name pairs both ways", sizeof gemma / sizeof *gemma);
  CHECK(mkc_gguf_name_from_hf("llama", "model.layers.2.pre_feedforward_layernorm.weight", out,
                              sizeof out) == -1 &&
            mkc_hf_name("llama", "blk.2.post_ffw_norm.weight", out, sizeof out) == -1,
        "Gemma's norm names are gemma3's only");
  mkc_model_desc g3 = {.arch = "gemma3"}, llama = {.arch = "llama"};
  CHECK(mkc_hf_norm_offset("blk.0.attn_k_norm.weight", &g3) &&
            mkc_hf_norm_offset("output_norm.weight", &g3) &&
            !mkc_hf_norm_offset("blk.0.attn_k.weight", &g3) &&
            !mkc_hf_norm_offset("blk.0.attn_norm.weight", &llama),
        "gemma3's norms (and only its norms) are stored as their scale less 1");

  /* Where multimodal checkpoints keep the text model. */
  static const char *const spellings[][4] = {
      {"model.layers.0.mlp.up_proj.weight", "language_model.model.layers.0.mlp.up_proj.weight",
       "model.language_model.layers.0.mlp.up_proj.weight", NULL},
      {"lm_head.weight", "language_model.lm_head.weight", "lm_head.weight", NULL},
      {"model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
       "model.language_model.embed_tokens.weight", NULL},
  };
  wrong = 0;
  for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++)
    for (int k = 0; k < 4; k++) {
      char spelled[128] = "";
      int rc = mkc_hf_name_spelling(spellings[i][0], k, spelled, sizeof spelled);
      wrong += spellings[i][k] ? rc != 0 || strcmp(spelled, spellings[i][k]) != 0 : rc != -1;
    }
  CHECK_INT(wrong, 0, "a text model's names as multimodal checkpoints spell them");
}

/* The permutation on a hand-worked example: one head of head_dim 4 with HF
 * rows [a0 a1 b0 b1] (pairs (a0, b0), (a1, b1)) becomes [a0 b0 a1 b1]; two
 * heads of two columns each permute within each head. */
static void test_permute_example(void) {
  enum { A0 = 10, A1 = 11, B0 = 20, B1 = 21 };
  uint16_t hf[4] = {A0, A1, B0, B1}, gguf[4], back[4];
  mkc_hf_permute_rows(gguf, hf, 4, 1, 1, 0);
  CHECK(gguf[0] == A0 && gguf[1] == B0 && gguf[2] == A1 && gguf[3] == B1,
        "head_dim 4: HF rows [a0 a1 b0 b1] -> GGUF rows [a0 b0 a1 b1]");
  mkc_hf_permute_rows(back, gguf, 4, 1, 1, 1);
  CHECK(memcmp(back, hf, sizeof hf) == 0, "inverse = 1 undoes it");
  /* 2 heads x head_dim 4, 2 columns: row r holds {r*10, r*10 + 1}. */
  uint16_t rows[16], out[16];
  for (int r = 0; r < 8; r++)
    rows[2 * r] = (uint16_t)(10 * r), rows[2 * r + 1] = (uint16_t)(10 * r + 1);
  mkc_hf_permute_rows(out, rows, 8, 2, 2, 0);
  static const int want_rows[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  int ok = 1;
  for (int r = 0; r < 8; r++)
    ok &= out[2 * r] == 10 * want_rows[r] && out[2 * r + 1] == 10 * want_rows[r] + 1;
  CHECK(ok, "2 heads: rows [0 1 2 3 | 4 5 6 7] -> [0 2 1 3 | 4 6 5 7], whole rows moved");
  CHECK(mkc_hf_permute_rows(out, rows, 6, 2, 2, 0) == -1, "6 rows are not 2 heads of an even dim");
}

/* RoPE in plain C, both layouts: NEOX pairs (i, i + half) as transformers'
 * rotate_half; interleaved pairs (2i, 2i + 1); frequency theta^(-2i/hd). */
static void rope_neox(double *x, int heads, int hd, int pos, double theta) {
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) {
      double a = pos * pow(theta, -2.0 * i / hd), *p = x + h * hd;
      double x0 = p[i], x1 = p[i + hd / 2];
      p[i] = x0 * cos(a) - x1 * sin(a);
      p[i + hd / 2] = x1 * cos(a) + x0 * sin(a);
    }
}

static void rope_interleaved(double *x, int heads, int hd, int pos, double theta) {
  for (int h = 0; h < heads; h++)
    for (int i = 0; i < hd / 2; i++) {
      double a = pos * pow(theta, -2.0 * i / hd), *p = x + h * hd;
      double x0 = p[2 * i], x1 = p[2 * i + 1];
      p[2 * i] = x0 * cos(a) - x1 * sin(a);
      p[2 * i + 1] = x1 * cos(a) + x0 * sin(a);
    }
}

/* q = W h with W in HF order, NEOX RoPE, versus q' = perm(W) h with
 * interleaved RoPE: q' must be q with its rows permuted, and q . k (the
 * attention score) must be the same number. */
static void test_permute_rope(void) {
  enum { HEADS = 3, KV_HEADS = 1, HD = 8, COLS = 5, QR = HEADS * HD, KR = KV_HEADS * HD };
  uint16_t wq[QR * COLS], wk[KR * COLS], pq[QR * COLS], pk[KR * COLS];
  double h[COLS];
  uint32_t seed = 7;
  for (int i = 0; i < QR * COLS; i++)
    wq[i] = mkc_float_to_bf16((float)(lcg(&seed) >> 8) / 8388608.0f - 1);
  for (int i = 0; i < KR * COLS; i++)
    wk[i] = mkc_float_to_bf16((float)(lcg(&seed) >> 8) / 8388608.0f - 1);
  for (int i = 0; i < COLS; i++) h[i] = (double)(lcg(&seed) >> 8) / 8388608.0 - 1;
  mkc_hf_permute_rows(pq, wq, QR, COLS, HEADS, 0);
  mkc_hf_permute_rows(pk, wk, KR, COLS, KV_HEADS, 0);
  double q[QR], k[KR], q2[QR], k2[KR], err = 0, score_err = 0;
  for (int r = 0; r < QR; r++) {
    q[r] = q2[r] = 0;
    for (int c = 0; c < COLS; c++)
      q[r] += mkc_bf16_to_float(wq[r * COLS + c]) * h[c],
          q2[r] += mkc_bf16_to_float(pq[r * COLS + c]) * h[c];
  }
  for (int r = 0; r < KR; r++) {
    k[r] = k2[r] = 0;
    for (int c = 0; c < COLS; c++)
      k[r] += mkc_bf16_to_float(wk[r * COLS + c]) * h[c],
          k2[r] += mkc_bf16_to_float(pk[r * COLS + c]) * h[c];
  }
  int pos = 37;
  rope_neox(q, HEADS, HD, pos, 10000);
  rope_neox(k, KV_HEADS, HD, pos - 5, 10000);
  rope_interleaved(q2, HEADS, HD, pos, 10000);
  rope_interleaved(k2, KV_HEADS, HD, pos - 5, 10000);
  for (int hh = 0; hh < HEADS; hh++) {
    double s = 0, s2 = 0;
    for (int i = 0; i < HD / 2; i++)
      for (int j = 0; j < 2; j++) {
        int gguf = hh * HD + 2 * i + j, hf = hh * HD + j * HD / 2 + i;
        err = fmax(err, fabs(q2[gguf] - q[hf]));
      }
    for (int d = 0; d < HD; d++) s += q[hh * HD + d] * k[d], s2 += q2[hh * HD + d] * k2[d];
    score_err = fmax(score_err, fabs(s - s2));
  }
  CHECK_NEAR(err, 0, 1e-12, "interleaved RoPE of the permuted rows = NEOX RoPE of HF's, permuted");
  CHECK_NEAR(score_err, 0, 1e-12, "and every head's q . k is unchanged");
  /* The oracle can fail: without the permutation the two ropes differ. */
  double q3[QR];
  for (int r = 0; r < QR; r++) {
    q3[r] = 0;
    for (int c = 0; c < COLS; c++) q3[r] += mkc_bf16_to_float(wq[r * COLS + c]) * h[c];
  }
  rope_interleaved(q3, HEADS, HD, pos, 10000);
  double diff = 0;
  for (int r = 0; r < QR; r++) diff = fmax(diff, fabs(q3[r] - q[r]));
  CHECK(diff > 1e-3, "unpermuted rows under interleaved RoPE differ (by %.3g)", diff);
}

static mkc_model_desc llama_desc(int n_heads, int n_kv_heads, int head_dim) {
  mkc_model_desc d = {.arch = "llama",
                      .n_heads = n_heads,
                      .n_kv_heads = n_kv_heads,
                      .head_dim = head_dim,
                      .rope_layout = MKC_ROPE_INTERLEAVED};
  return d;
}

/* F32, F16 and BF16 tensors written from floats, read back: header fields,
 * bytes, and the bf16 load equal mkc_float_to_bf16 of the stored value. */
static void test_round_trip(void) {
  enum { ROWS = 3, COLS = 7, N = ROWS * COLS };
  float x[N];
  uint32_t seed = 1;
  for (int i = 0; i < N; i++) x[i] = ((float)(lcg(&seed) >> 8) / 8388608.0f - 1) * 300;
  x[0] = 0, x[1] = -0.0f, x[2] = 1e-30f, x[3] = 65504, x[4] = 1 + 0x1p-8f; /* a bf16 tie */
  x[5] = INFINITY, x[6] = 3.4e38f; /* above bf16's largest finite + half a step */
  float norm[COLS] = {1, 2, 3, 0.5f, -1, 0.25f, 7};
  mkc_st_out out[] = {
      {"model.layers.0.mlp.up_proj.weight", MKC_ST_F32, 2, {ROWS, COLS}, x, NULL},
      {"model.layers.0.mlp.gate_proj.weight", MKC_ST_F16, 2, {ROWS, COLS}, x, NULL},
      {"model.layers.0.mlp.down_proj.weight", MKC_ST_BF16, 2, {ROWS, COLS}, x, NULL},
      {"model.layers.0.input_layernorm.weight", MKC_ST_F32, 1, {COLS}, norm, NULL},
      {"model.rotary_emb.inv_freq", MKC_ST_F32, 1, {2}, norm, NULL},
      {"empty", MKC_ST_I32, 2, {0, 4}, NULL, ""},
  };
  int n_out = sizeof out / sizeof *out;
  const char *path = tmp_path("round.safetensors");
  if (!CHECK(mkc_st_write(path, out, n_out) == 0, "write 6 tensors")) return;
  mkc_safetensors *st = mkc_st_open(path);
  if (!CHECK(st != NULL, "the written file opens")) return;
  CHECK_INT(mkc_st_count(st), n_out, "tensor count");
  int fields = 1;
  for (int i = 0; i < n_out; i++) {
    const mkc_st_tensor *t = mkc_st_tensor_at(st, i);
    fields &= t && strcmp(t->name, out[i].name) == 0 && t->dtype == out[i].dtype &&
              t->n_dims == out[i].n_dims && t->shape[0] == out[i].shape[0] &&
              mkc_st_find(st, out[i].name) == t && t->file == 0;
  }
  CHECK(fields, "names, dtypes, shapes in file order; find by name");
  const mkc_st_tensor *f32 = mkc_st_tensor_at(st, 0), *f16 = mkc_st_tensor_at(st, 1),
                      *bf16 = mkc_st_tensor_at(st, 2), *empty = mkc_st_tensor_at(st, 5);
  CHECK(f32->n_bytes == 4 * N && f16->n_bytes == 2 * N && bf16->n_bytes == 2 * N &&
            empty->n_bytes == 0,
        "byte counts 84, 42, 42, 0");
  CHECK(memcmp(f32->data, x, sizeof x) == 0, "F32 bytes are the floats");
  int f16_ok = 1, bf16_ok = 1;
  for (int i = 0; i < N; i++) {
    f16_ok &= (f16->data[2 * i] | f16->data[2 * i + 1] << 8) == mkc_float_to_f16(x[i]);
    bf16_ok &= (bf16->data[2 * i] | bf16->data[2 * i + 1] << 8) == mkc_float_to_bf16(x[i]);
  }
  CHECK(f16_ok && bf16_ok, "F16 and BF16 bytes are the rounded halves, little-endian");
  CHECK(mkc_st_find(st, "model.norm.weight") == NULL, "find of an absent name is NULL");

  mkc_weight_info infos[] = {{"blk.0.ffn_up.weight", ROWS, COLS, 0, 8, 30},
                             {"blk.0.ffn_gate.weight", ROWS, COLS, 0, 8, 30},
                             {"blk.0.ffn_down.weight", ROWS, COLS, 0, 8, 30},
                             {"blk.0.attn_norm.weight", 1, COLS, 0, 8, 30}};
  mkc_graph g = {.n_weights = 4, .weights = infos};
  mkc_model_desc d = llama_desc(1, 1, 2);
  mkc_weights w = {0};
  if (CHECK(mkc_st_load_weights(st, &d, &g, &w) == 0 && w.n == 4, "load 4 weights")) {
    int exact[3] = {1, 1, 1}, norm_ok = 1;
    for (int i = 0; i < N; i++) {
      exact[0] &= w.t[0].data[i] == mkc_float_to_bf16(x[i]);
      exact[1] &= w.t[1].data[i] == mkc_float_to_bf16(mkc_f16_to_float(mkc_float_to_f16(x[i])));
      exact[2] &= w.t[2].data[i] == mkc_float_to_bf16(x[i]);
    }
    for (int i = 0; i < COLS; i++) norm_ok &= w.t[3].data[i] == mkc_float_to_bf16(norm[i]);
    CHECK(exact[0], "F32 -> bf16 as mkc_float_to_bf16");
    CHECK(exact[1], "F16 -> bf16 as mkc_float_to_bf16 of the half's value");
    CHECK(exact[2], "BF16 loads bit for bit");
    CHECK(norm_ok && w.t[3].rows == 1 && w.t[3].cols == COLS, "a 1-D norm loads as rows 1");
    CHECK(w.t[0].data[4] == 0x3f80 && w.t[0].data[5] == 0x7f80 && w.t[0].data[6] == 0x7f80,
          "1 + 2^-8 -> 1.0 (tie to even), inf -> inf, 3.4e38 -> inf");
  }
  mkc_weights_free(&w);
  mkc_st_close(st);

  size_t n = 0;
  FILE *fp = fopen(path, "rb");
  uint8_t *bytes = malloc(4096);
  if (fp) n = fread(bytes, 1, 4096, fp), fclose(fp);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | bytes[i];
  CHECK(n > 8 && hlen % 8 == 0 && hlen < n && bytes[8] == '{' &&
            (bytes[8 + hlen - 1] == ' ' || bytes[8 + hlen - 1] == '}'),
        "the header is JSON padded with spaces to 8 bytes (%llu)", (unsigned long long)hlen);
  mkc_safetensors *m = mkc_st_open_memory(bytes, n, "mem.safetensors");
  CHECK(m && mkc_st_count(m) == n_out && memcmp(mkc_st_tensor_at(m, 0)->data, x, sizeof x) == 0,
        "the same bytes open from memory");
  mkc_st_close(m);
  free(bytes);
}

/* Q/K biases and q/k norms (qwen2, qwen3 weights) under both layouts: in
 * the interleaved layout the bias elements move with their rows and a norm
 * moves within its head; NEOX loads them as stored. 2 heads, 1 KV head,
 * head_dim 4. */
static void test_bias_and_norms(void) {
  uint16_t qb[8], kb[4], qn[4], kn[4];
  for (int i = 0; i < 8; i++) qb[i] = mkc_float_to_bf16((float)(i + 1));
  for (int i = 0; i < 4; i++) {
    kb[i] = mkc_float_to_bf16((float)(10 + i));
    qn[i] = mkc_float_to_bf16((float)(20 + i));
    kn[i] = mkc_float_to_bf16((float)(30 + i));
  }
  mkc_tensor t[] = {{"blk.0.attn_q.bias", 1, 8, 30, qb, NULL},
                    {"blk.0.attn_k.bias", 1, 4, 30, kb, NULL},
                    {"blk.0.attn_q_norm.weight", 1, 4, 30, qn, NULL},
                    {"blk.0.attn_k_norm.weight", 1, 4, 30, kn, NULL}};
  mkc_weights w = {4, t};
  mkc_weight_info infos[] = {{"blk.0.attn_q.bias", 1, 8, 0, 8, 30},
                             {"blk.0.attn_k.bias", 1, 4, 0, 8, 30},
                             {"blk.0.attn_q_norm.weight", 1, 4, 0, 8, 30},
                             {"blk.0.attn_k_norm.weight", 1, 4, 0, 8, 30}};
  mkc_graph g = {.n_weights = 4, .weights = infos};
  mkc_model_desc d = llama_desc(2, 1, 4);
  const char *path = tmp_path("bias.safetensors");
  mkc_weights got = {0};
  mkc_safetensors *st = NULL;
  if (!CHECK(mkc_st_write_weights(path, &w, &d, MKC_ST_F32) == 0 && (st = mkc_st_open(path)),
             "write and open Q/K biases and norms"))
    return;
  /* GGUF order [1 2 3 4 | 5 6 7 8] is HF order [1 3 2 4 | 5 7 6 8]. */
  const mkc_st_tensor *f = mkc_st_find(st, "model.layers.0.self_attn.q_proj.bias");
  static const float hf_q[8] = {1, 3, 2, 4, 5, 7, 6, 8};
  int in_hf = f && f->n_dims == 1 && f->shape[0] == 8 && memcmp(f->data, hf_q, sizeof hf_q) == 0;
  const mkc_st_tensor *fn = mkc_st_find(st, "model.layers.0.self_attn.k_norm.weight");
  static const float hf_kn[4] = {30, 32, 31, 33};
  in_hf &= fn && memcmp(fn->data, hf_kn, sizeof hf_kn) == 0;
  CHECK(in_hf, "the file holds the q bias as [1 3 2 4 | 5 7 6 8] and the k norm as [30 32 31 33]");
  int same = mkc_st_load_weights(st, &d, &g, &got) == 0;
  for (int i = 0; same && i < 4; i++)
    same &= memcmp(got.t[i].data, t[i].data, (size_t)t[i].cols * 2) == 0;
  CHECK(same, "interleaved: biases and norms load back in GGUF order");
  mkc_weights_free(&got);
  d.rope_layout = MKC_ROPE_NEOX;
  same = mkc_st_load_weights(st, &d, &g, &got) == 0;
  for (int i = 0; same && i < 8; i++) same &= mkc_bf16_to_float(got.t[0].data[i]) == hf_q[i];
  CHECK(same, "NEOX: the q bias loads as stored");
  mkc_weights_free(&got);
  mkc_st_close(st);
}

/* The graph of graphs/llama.lua's preset. */
static int tiny_graph(const char *preset, mkc_graph *g) {
  char graph[4200];
  snprintf(graph, sizeof graph, "%s/graphs/llama.lua", mkc_home());
  mkc_gen_opts o = {.graph_path = graph, .preset = preset};
  mkc_kernel_src src;
  if (mkc_codegen(&o, g, &src) != 0) return -1;
  mkc_kernel_src_free(&src);
  return 0;
}

static int same_weights(const mkc_weights *a, const mkc_weights *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const mkc_tensor *x = &a->t[i], *y = &b->t[i];
    if (strcmp(x->name, y->name) || x->rows != y->rows || x->cols != y->cols ||
        memcmp(x->data, y->data, (size_t)x->rows * x->cols * sizeof *x->data))
      return 0;
  }
  return 1;
}

/* Loads path for g; "" on success, else the first line of the message. */
static char *load_msg(const char *path, const mkc_model_desc *d, const mkc_graph *g,
                      mkc_weights *w) {
  check_stderr_begin();
  mkc_safetensors *st = mkc_st_open(path);
  int rc = st ? mkc_st_load_weights(st, d, g, w) : -1;
  mkc_st_close(st);
  char *msg = first_line(check_stderr_end());
  if (rc == 0 && !*msg) return msg;
  if (!*msg) snprintf(msg = realloc(msg, 16), 16, "(no message)");
  return msg;
}

/* The index of a folder with two shards: the first n_first tensors of w in
 * shard 1, the rest in shard 2. */
static void write_index(const char *dir, const mkc_weights *w, int n_first, const char *extra) {
  char path[700], hf[256];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
  for (int i = 0; i < w->n; i++) {
    mkc_hf_name("llama", w->t[i].name, hf, sizeof hf);
    fprintf(f, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", hf,
            i < n_first ? 1 : 2);
  }
  fprintf(f, "%s}}\n", extra);
  fclose(f);
}

/* A tiny model's seeded weights as an HF checkpoint, one file and sharded,
 * in BF16 and F32 (bit-exact) and F16; then files that lack a weight, hold
 * it transposed or in a dtype mkc does not read. */
static void test_model(void) {
  mkc_graph g;
  if (!CHECK(tiny_graph("tiny", &g) == 0, "codegen tiny")) return;
  mkc_weights want = {0}, other = {0}, got = {0};
  mkc_weights_random(&want, &g, 7);
  mkc_weights_random(&other, &g, 8);
  mkc_model_desc d = llama_desc(g.n_heads, g.n_kv_heads, g.head_dim);
  char *msg;

  const char *one = tmp_path("tiny.bf16.safetensors");
  CHECK(mkc_st_write_weights(one, &want, &d, MKC_ST_BF16) == 0, "write tiny as BF16");
  mkc_safetensors *st = mkc_st_open(one);
  if (CHECK(st != NULL, "it opens")) {
    /* The file holds HF's row order: its q_proj row (h, j*hd/2 + i) is the
     * GGUF-order row (h, 2i + j) of the weights written. */
    const mkc_st_tensor *q = mkc_st_find(st, "model.layers.1.self_attn.q_proj.weight");
    const mkc_tensor *wq =
        mkc_weights_get(&want, "blk.1.attn_q.weight", g.n_heads * g.head_dim, g.dim);
    int hf_order = q && wq && q->dtype == MKC_ST_BF16, hd = g.head_dim, moved = 0;
    for (int h = 0; hf_order && h < g.n_heads; h++)
      for (int i = 0; i < hd / 2; i++)
        for (int j = 0; j < 2; j++) {
          const uint8_t *row = q->data + 2 * (size_t)(h * hd + j * hd / 2 + i) * g.dim;
          const uint16_t *grow = wq->data + (size_t)(h * hd + 2 * i + j) * g.dim;
          for (int c = 0; c < g.dim; c++) hf_order &= (row[2 * c] | row[2 * c + 1] << 8) == grow[c];
          moved += 2 * i + j != j * hd / 2 + i;
        }
    CHECK(hf_order && moved > 0, "the file's q_proj rows are in HF order (%d of %d rows moved)",
          moved, g.n_heads * hd);
    CHECK(mkc_st_load_weights(st, &d, &g, &got) == 0 && same_weights(&got, &want),
          "BF16 file loads to mkc_weights_random(seed 7) bit for bit");
    CHECK(!same_weights(&got, &other), "and differs from seed 8's (the comparison can fail)");
    mkc_weights_free(&got);
    /* The same file read as NEOX (qwen2-style): Q/K rows stay in HF order. */
    mkc_model_desc neox = d;
    neox.rope_layout = MKC_ROPE_NEOX;
    int kept = mkc_st_load_weights(st, &neox, &g, &got) == 0;
    const mkc_tensor *gq =
        kept ? mkc_weights_get(&got, "blk.1.attn_q.weight", wq->rows, wq->cols) : NULL;
    for (int r = 0; gq && r < wq->rows; r++)
      kept &= memcmp(gq->data + (size_t)r * g.dim, q->data + 2 * (size_t)r * g.dim,
                     2 * (size_t)g.dim) == 0;
    CHECK(kept && gq, "with rope_layout NEOX the Q rows load unpermuted");
    mkc_weights_free(&got);
  }
  mkc_st_close(st);

  const char *f32 = tmp_path("tiny.f32.safetensors"), *f16 = tmp_path("tiny.f16.safetensors");
  CHECK(mkc_st_write_weights(f32, &want, &d, MKC_ST_F32) == 0 &&
            mkc_st_write_weights(f16, &want, &d, MKC_ST_F16) == 0,
        "write tiny as F32 and F16");
  msg = load_msg(f32, &d, &g, &got);
  CHECK(!*msg && same_weights(&got, &want), "F32 file loads bit for bit");
  free(msg);
  mkc_weights_free(&got);
  msg = load_msg(f16, &d, &g, &got);
  int close = !*msg && got.n == want.n;
  for (int i = 0; close && i < got.n; i++)
    for (size_t k = 0; k < (size_t)got.t[i].rows * got.t[i].cols; k++) {
      float a = mkc_bf16_to_float(got.t[i].data[k]), b = mkc_bf16_to_float(want.t[i].data[k]);
      close &= fabsf(a - b) <= 1e-7f + fabsf(b) * 0x1p-8f;
    }
  CHECK(close, "F16 file loads within half a bf16 step");
  free(msg);
  mkc_weights_free(&got);

  /* A folder with model.safetensors; a folder with two shards and an index. */
  char dir[600], shard[700];
  snprintf(dir, sizeof dir, "%s/single", tmp_dir);
  mkdir(dir, 0755);
  snprintf(shard, sizeof shard, "%s/model.safetensors", dir);
  mkc_st_write_weights(shard, &want, &d, MKC_ST_BF16);
  msg = load_msg(dir, &d, &g, &got);
  CHECK(!*msg && same_weights(&got, &want), "a folder with model.safetensors loads");
  free(msg);
  mkc_weights_free(&got);

  snprintf(dir, sizeof dir, "%s/sharded", tmp_dir);
  mkdir(dir, 0755);
  int half = want.n / 2;
  mkc_weights first = {half, want.t}, second = {want.n - half, want.t + half};
  snprintf(shard, sizeof shard, "%s/model-00001-of-00002.safetensors", dir);
  int bad = mkc_st_write_weights(shard, &first, &d, MKC_ST_BF16);
  snprintf(shard, sizeof shard, "%s/model-00002-of-00002.safetensors", dir);
  bad |= mkc_st_write_weights(shard, &second, &d, MKC_ST_F32);
  write_index(dir, &want, half, "");
  msg = load_msg(dir, &d, &g, &got);
  CHECK(!bad && !*msg && same_weights(&got, &want),
        "two shards (BF16 + F32) + index.json load the same as one file");
  free(msg);
  mkc_weights_free(&got);
  st = mkc_st_open(dir);
  if (CHECK(st != NULL, "the sharded folder opens")) {
    const mkc_st_tensor *t0 = mkc_st_tensor_at(st, 0), *tn = mkc_st_tensor_at(st, want.n - 1);
    CHECK(mkc_st_count(st) == want.n && t0->file == 0 && tn->file == 1 &&
              strstr(mkc_st_file_path(st, 1), "model-00002-of-00002.safetensors"),
          "%d tensors, the first in shard 0, the last in shard 1", want.n);
  }
  mkc_st_close(st);
  char index[700];
  snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
  msg = load_msg(index, &d, &g, &got);
  CHECK(!*msg && same_weights(&got, &want), "the index file's own path opens the same");
  free(msg);
  mkc_weights_free(&got);

  /* Broken models for the same graph. */
  enum { MISSING, TRANSPOSED, UNREADABLE, NO_HF_NAME, N_CASES };
  const char *victim[N_CASES] = {"blk.1.ffn_down.weight", "blk.0.attn_k.weight",
                                 "blk.0.attn_q.weight", "output_norm.weight"};
  for (int c = 0; c < N_CASES; c++) {
    mkc_st_out *out = calloc((size_t)want.n, sizeof *out);
    char(*names)[128] = calloc((size_t)want.n, sizeof *names);
    float **vals = calloc((size_t)want.n, sizeof *vals);
    int k = 0;
    for (int i = 0; i < want.n; i++) {
      const mkc_tensor *t = &want.t[i];
      int hit = strcmp(t->name, victim[c]) == 0;
      if (hit && c == MISSING) continue;
      mkc_hf_name("llama", t->name, names[k], sizeof names[k]);
      if (hit && c == NO_HF_NAME) snprintf(names[k], sizeof names[k], "model.final_norm.weight");
      size_t n = (size_t)t->rows * t->cols;
      vals[k] = malloc(n * sizeof **vals);
      for (size_t e = 0; e < n; e++) vals[k][e] = mkc_bf16_to_float(t->data[e]);
      out[k] = (mkc_st_out){
          names[k], MKC_ST_BF16, t->rows == 1 ? 1 : 2, {t->rows == 1 ? t->cols : t->rows, t->cols},
          vals[k],  NULL};
      if (hit && c == TRANSPOSED) out[k].shape[0] = t->cols, out[k].shape[1] = t->rows;
      if (hit && c == UNREADABLE)
        out[k].dtype = MKC_ST_I16, out[k].values = NULL, out[k].raw = t->data;
      k++;
    }
    const char *p = tmp_path("case.safetensors");
    mkc_st_write(p, out, k);
    for (int i = 0; i < k; i++) free(vals[i]);
    free(vals);
    free(names);
    free(out);
    msg = load_msg(p, &d, &g, &got);
    char expect[512];
    if (c == MISSING)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'blk.1.ffn_down.weight' is missing (HF name "
               "'model.layers.1.mlp.down_proj.weight'; the graph needs it as [64, 192])",
               p);
    if (c == TRANSPOSED)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'model.layers.0.self_attn.k_proj.weight' "
               "(blk.0.attn_k.weight): Expected [32, 64], Actual [64, 32]",
               p);
    if (c == UNREADABLE)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'model.layers.0.self_attn.q_proj.weight' "
               "(blk.0.attn_q.weight): dtype I16 is not supported (mkc reads F32, F16, BF16)",
               p);
    if (c == NO_HF_NAME)
      snprintf(expect, sizeof expect,
               "mkc: error: %s: tensor 'output_norm.weight' is missing (HF name "
               "'model.norm.weight'; the graph needs it as [1, 64])",
               p);
    CHECK(strcmp(msg, expect) == 0 && got.n == 0 && got.t == NULL, "load fails: %s", expect);
    free(msg);
    mkc_weights_free(&got);
  }
  /* A norm stored as [1][64] loads as rows 1; [64] for a matrix does not. */
  mkc_weight_info vec = {"output_norm.weight", 1, 64, 0, 64, 30},
                  mat = {"blk.0.ffn_up.weight", 2, 32, 0, 32, 30};
  float ones[64];
  for (int i = 0; i < 64; i++) ones[i] = 1;
  mkc_st_out two_d[] = {{"model.norm.weight", MKC_ST_F32, 2, {1, 64}, ones, NULL},
                        {"model.layers.0.mlp.up_proj.weight", MKC_ST_F32, 1, {64}, ones, NULL}};
  const char *p = tmp_path("vec.safetensors");
  mkc_st_write(p, two_d, 2);
  mkc_graph gv = {.n_weights = 1, .weights = &vec};
  msg = load_msg(p, &d, &gv, &got);
  CHECK(!*msg && got.n == 1 && got.t[0].data[63] == 0x3f80, "a norm stored as [1, 64] loads");
  free(msg);
  mkc_weights_free(&got);
  gv.weights = &mat;
  msg = load_msg(p, &d, &gv, &got);
  char expect[600];
  snprintf(expect, sizeof expect,
           "mkc: error: %s: tensor 'model.layers.0.mlp.up_proj.weight' (blk.0.ffn_up.weight): "
           "Expected [2, 32], Actual [64]",
           p);
  CHECK(strcmp(msg, expect) == 0, "a 1-D tensor for a matrix: %s", expect);
  free(msg);
  mkc_weights_free(&got);
  /* A graph weight without an HF name; Q rows that are not heads of head_dim. */
  mkc_weight_info odd = {"blk.0.attn_sinks.weight", 1, 4, 0, 8, 30};
  gv.weights = &odd;
  msg = load_msg(one, &d, &gv, &got);
  snprintf(expect, sizeof expect,
           "mkc: error: %s: the graph's weight 'blk.0.attn_sinks.weight' has no Hugging Face name "
           "mkc knows",
           one);
  CHECK(strcmp(msg, expect) == 0, "%s", expect);
  free(msg);
  mkc_model_desc wrong = d;
  wrong.head_dim = 12;
  msg = load_msg(one, &wrong, &g, &got);
  snprintf(expect, sizeof expect,
           "mkc: error: %s: tensor 'model.layers.0.self_attn.q_proj.weight' (blk.0.attn_q.weight): "
           "64 rows are not 4 heads of head_dim 12 (even), as RoPE needs",
           one);
  CHECK(strcmp(msg, expect) == 0, "%s", expect);
  free(msg);
  mkc_weights_free(&got);
  mkc_weights_free(&want);
  mkc_weights_free(&other);
  mkc_graph_free(&g);
}

/* The header JSON + data_len zero bytes as a file. */
static uint8_t *st_bytes(const char *header, size_t data_len, size_t *n) {
  size_t h = strlen(header);
  *n = 8 + h + data_len;
  uint8_t *p = calloc(1, *n);
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)((uint64_t)h >> (8 * i));
  memcpy(p + 8, header, h);
  return p;
}

/* Opening the bytes as a file and from memory both fail with want. */
static void expect_bad_bytes(const char *label, const uint8_t *p, size_t n, const char *want) {
  const char *path = tmp_path("bad.safetensors");
  spit(path, p, n);
  check_stderr_begin();
  mkc_safetensors *f = mkc_st_open(path);
  mkc_safetensors *m = mkc_st_open_memory(p, n, "mem.safetensors");
  char *msg = check_stderr_end();
  char both[2048];
  snprintf(both, sizeof both, "mkc: error: %s: %s\nmkc: error: mem.safetensors: %s\n", path, want,
           want);
  CHECK(!f && !m && strcmp(msg, both) == 0, "%s: %s", label, want);
  mkc_st_close(f);
  mkc_st_close(m);
  free(msg);
}

static void expect_bad(const char *label, const char *header, size_t data_len, const char *want) {
  size_t n;
  uint8_t *p = st_bytes(header, data_len, &n);
  expect_bad_bytes(label, p, n, want);
  free(p);
}

#define ENTRY(rest) "{\"w\": {" rest "}}"
#define GOOD_ENTRY "\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]"

static void test_bad_files(void) {
  size_t n;
  uint8_t *p = st_bytes(ENTRY(GOOD_ENTRY), 24, &n);
  mkc_safetensors *st = mkc_st_open_memory(p, n, "good");
  CHECK(st && mkc_st_count(st) == 1, "bad files: the good file opens");
  mkc_st_close(st);

  expect_bad_bytes("5-byte file", p, 5,
                   "the file is 5 bytes, too short for the 8-byte header length");
  expect_bad_bytes("empty file", p, 0,
                   "the file is 0 bytes, too short for the 8-byte header length");
  char want[1400];
  snprintf(want, sizeof want,
           "header length %zu runs past the end of the file (%zu bytes follow it)", n - 8 - 24,
           n - 8 - 24 - 10);
  expect_bad_bytes("cut in the header", p, n - 24 - 10, want);
  uint8_t *q = malloc(n);
  memcpy(q, p, n);
  q[3] = 0x0b; /* 0x0b000000 + ... = 184549376 + h */
  snprintf(want, sizeof want, "header length %llu is over mkc's limit of 100000000 bytes",
           (unsigned long long)(0x0b000000 + (n - 8 - 24)));
  expect_bad_bytes("absurd header length", q, n, want);
  q[3] = 0;
  q[7] = 0x80;
  snprintf(want, sizeof want, "header length %llu is over mkc's limit of 100000000 bytes",
           (unsigned long long)(0x8000000000000000ull + (n - 8 - 24)));
  expect_bad_bytes("header length with the top bit set", q, n, want);
  free(q);

  expect_bad("not JSON", "{\"w\": nope}", 0, "the header is not valid JSON (at byte 6 of 11)");
  expect_bad("cut JSON", "{\"w\": {", 0, "the header is not valid JSON (at byte 6 of 7)");
  expect_bad("an array", "[1, 2]", 0, "the header is not a JSON object");
  expect_bad("a string", "\"w\"", 0, "the header is not a JSON object");
  expect_bad("bytes after the object", "{}  x", 0,
             "the header has bytes after its JSON object (at byte 4 of 5)");
  uint8_t nul[11] = {3, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0};
  expect_bad_bytes("NUL padding", nul, sizeof nul,
                   "the header has bytes after its JSON object (at byte 2 of 3)");
  size_t ok_n;
  uint8_t *padded = st_bytes("{}   \n ", 0, &ok_n);
  st = mkc_st_open_memory(padded, ok_n, "padded");
  CHECK(st && mkc_st_count(st) == 0, "a header padded with spaces, no tensors, opens");
  mkc_st_close(st);
  free(padded);

  expect_bad("entry not an object", "{\"w\": [1]}", 0,
             "tensor 'w': Expected an object, Actual an array");
  expect_bad("no dtype", ENTRY("\"shape\": [1], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': no \"dtype\"");
  expect_bad("no shape", ENTRY("\"dtype\": \"F32\", \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': no \"shape\"");
  expect_bad("no data_offsets", ENTRY("\"dtype\": \"F32\", \"shape\": [1]"), 4,
             "tensor 'w': no \"data_offsets\"");
  expect_bad("dtype a number", ENTRY("\"dtype\": 5, \"shape\": [1], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': \"dtype\" is 5, not a string");
  expect_bad("unknown dtype", ENTRY("\"dtype\": \"F7\", \"shape\": [1], \"data_offsets\": [0, 4]"),
             4, "tensor 'w': unknown dtype \"F7\"");
  expect_bad("dtype in lower case",
             ENTRY("\"dtype\": \"f32\", \"shape\": [1], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': unknown dtype \"f32\"");
  expect_bad("shape an object",
             ENTRY("\"dtype\": \"F32\", \"shape\": {}, \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': \"shape\" is an object, not an array");
  expect_bad("negative dim",
             ENTRY("\"dtype\": \"F32\", \"shape\": [2, -3], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': shape[1] is -3, not a non-negative integer");
  expect_bad("fractional dim",
             ENTRY("\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': shape[0] is 2.5, not a non-negative integer");
  expect_bad("string dim",
             ENTRY("\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 4]"), 4,
             "tensor 'w': shape[0] is \"2\", not a non-negative integer");
  expect_bad(
      "dim 2^64",
      ENTRY("\"dtype\": \"F32\", \"shape\": [18446744073709551616], \"data_offsets\": [0, 4]"), 4,
      "tensor 'w': shape[0] is 1.8446744073709552e+19, not a non-negative integer");
  expect_bad("9 dims",
             ENTRY("\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 1]"),
             1, "tensor 'w': 9 dimensions (mkc reads up to 8)");
  expect_bad(
      "shape overflow",
      ENTRY("\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 4]"), 4,
      "tensor 'w': shape [4294967296, 4294967296] of F32 overflows 64 bits");
  expect_bad("data_offsets a string",
             ENTRY("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": \"0-4\""), 4,
             "tensor 'w': \"data_offsets\" is \"0-4\", not [begin, end]");
  expect_bad("data_offsets of 3",
             ENTRY("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]"), 8,
             "tensor 'w': \"data_offsets\" is an array, not [begin, end]");
  expect_bad("data_offsets negative",
             ENTRY("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]"), 4,
             "tensor 'w': data_offsets[0] is -4, not a non-negative integer");
  expect_bad("data_offsets null",
             ENTRY("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, null]"), 4,
             "tensor 'w': data_offsets[1] is null, not a non-negative integer");
  expect_bad("begin after end",
             ENTRY("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]"), 8,
             "tensor 'w': data_offsets [8, 4]: begin is after end");
  expect_bad("end past the data",
             ENTRY("\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]"), 20,
             "tensor 'w': data_offsets [0, 24] run past the 20 bytes of data");
  expect_bad("byte count not the shape's",
             ENTRY("\"dtype\": \"BF16\", \"shape\": [2, 3], \"data_offsets\": [0, 24]"), 24,
             "tensor 'w': data_offsets [0, 24] hold 24 bytes, shape [2, 3] of BF16 needs 12");
  expect_bad("duplicate names",
             "{\"a\": {" GOOD_ENTRY "}, \"w\": {" GOOD_ENTRY "}, \"a\": {" GOOD_ENTRY "}}", 24,
             "duplicate tensor name 'a'");
  expect_bad("metadata not strings", "{\"__metadata__\": {\"format\": 1}}", 0,
             "\"__metadata__\" is not an object of strings");

  /* Unknown-to-mkc but valid dtypes, scalars and empty tensors parse; two
   * tensors may share bytes. */
  uint8_t *ok =
      st_bytes("{\"__metadata__\": {\"format\": \"pt\"}, \"s\": {\"dtype\": \"I64\", "
               "\"shape\": [], \"data_offsets\": [0, 8]}, \"e\": {\"dtype\": \"F8_E4M3\", "
               "\"shape\": [0, 5], \"data_offsets\": [8, 8]}, \"o\": {\"dtype\": \"U8\", "
               "\"shape\": [8], \"data_offsets\": [0, 8]}}",
               8, &ok_n);
  st = mkc_st_open_memory(ok, ok_n, "ok");
  const mkc_st_tensor *s = st ? mkc_st_find(st, "s") : NULL, *e = st ? mkc_st_find(st, "e") : NULL;
  CHECK(s && e && s->n_dims == 0 && s->n_bytes == 8 && s->dtype == MKC_ST_I64 && e->n_dims == 2 &&
            e->n_bytes == 0 && mkc_st_count(st) == 3,
        "a scalar I64, an empty F8_E4M3 and an overlapping U8 tensor parse");
  mkc_st_close(st);
  free(ok);

  check_stderr_begin();
  st = mkc_st_open(tmp_path("nope.safetensors"));
  char *msg = first_line(check_stderr_end());
  snprintf(want, sizeof want, "mkc: error: %s: cannot open: No such file or directory",
           tmp_path("nope.safetensors"));
  CHECK(!st && strcmp(msg, want) == 0, "missing file: %s", want);
  free(msg);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/emptydir", tmp_dir);
  mkdir(dir, 0755);
  check_stderr_begin();
  st = mkc_st_open(dir);
  msg = first_line(check_stderr_end());
  snprintf(want, sizeof want,
           "mkc: error: %s: no model.safetensors or model.safetensors.index.json in this folder",
           dir);
  CHECK(!st && strcmp(msg, want) == 0, "empty folder: %s", want);
  free(msg);

  /* Random damage to a good file never crashes; each rejection is one line. */
  int opened = 0, lines = 0, rejected = 0, prefixed = 1;
  uint32_t seed = 99;
  fflush(stderr);
  FILE *cap = tmpfile();
  int saved = dup(2);
  dup2(fileno(cap), 2);
  for (int i = 0; i < 3000; i++) {
    uint8_t *m = malloc(n);
    memcpy(m, p, n);
    size_t len = lcg(&seed) % 8 ? n : lcg(&seed) % n;
    for (int flips = 1 + (int)(lcg(&seed) % 3); flips > 0; flips--)
      m[lcg(&seed) % n] = "{}[]\",:0 9-.eE\\"[lcg(&seed) % 15];
    mkc_safetensors *f = mkc_st_open_memory(m, len, "mem");
    if (f) {
      opened++;
      for (int k = 0; k < mkc_st_count(f); k++) {
        const mkc_st_tensor *t = mkc_st_tensor_at(f, k);
        volatile uint8_t sink = t->n_bytes ? t->data[t->n_bytes - 1] : 0;
        (void)sink;
      }
    } else {
      rejected++;
    }
    mkc_st_close(f);
    free(m);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(cap);
  char line[4096];
  while (fgets(line, sizeof line, cap))
    lines++, prefixed &= strncmp(line, "mkc: error: mem: ", 17) == 0;
  fclose(cap);
  CHECK(prefixed && lines == rejected,
        "3000 damaged files: %d open, %d rejected with one message each", opened, rejected);
  free(p);
}

/* Sharded folders whose index is wrong. */
static void expect_index(const char *label, const char *index_json, const char *want) {
  char dir[600], path[700], expect[1400];
  snprintf(dir, sizeof dir, "%s/idx", tmp_dir);
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  spit(path, index_json, strlen(index_json));
  check_stderr_begin();
  mkc_safetensors *st = mkc_st_open(dir);
  char *msg = first_line(check_stderr_end());
  snprintf(expect, sizeof expect, "mkc: error: %s: %s", path, want);
  CHECK(!st && strcmp(msg, expect) == 0, "%s: %s", label, want);
  mkc_st_close(st);
  free(msg);
}

static void test_bad_index(void) {
  char dir[600], path[700];
  snprintf(dir, sizeof dir, "%s/idx", tmp_dir);
  mkdir(dir, 0755);
  float v[4] = {1, 2, 3, 4};
  mkc_st_out a[] = {{"a", MKC_ST_F32, 1, {4}, v, NULL}, {"b", MKC_ST_F32, 1, {2}, v, NULL}};
  mkc_st_out b[] = {{"c", MKC_ST_F32, 1, {4}, v, NULL}, {"b", MKC_ST_F32, 1, {2}, v, NULL}};
  snprintf(path, sizeof path, "%s/one.safetensors", dir);
  mkc_st_write(path, a, 2);
  snprintf(path, sizeof path, "%s/two.safetensors", dir);
  mkc_st_write(path, b, 1);
  char *good = "{\"weight_map\": {\"a\": \"one.safetensors\", \"b\": \"one.safetensors\", \"c\": "
               "\"two.safetensors\"}}";
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  spit(path, good, strlen(good));
  mkc_safetensors *st = mkc_st_open(dir);
  CHECK(st && mkc_st_count(st) == 3 && mkc_st_find(st, "c")->file == 1, "the good index opens");
  mkc_st_close(st);

  expect_index("not JSON", "{\"weight_map\": ", "not valid JSON");
  expect_index("not an object", "[]", "not a JSON object");
  expect_index("no weight_map", "{\"metadata\": {}}",
               "no \"weight_map\" object naming the tensors' shards");
  expect_index("empty weight_map", "{\"weight_map\": {}}",
               "no \"weight_map\" object naming the tensors' shards");
  expect_index("shard not a string", "{\"weight_map\": {\"a\": 1}}",
               "weight_map: tensor 'a': Expected a shard file name, Actual 1");
  expect_index("shard outside the folder", "{\"weight_map\": {\"a\": \"../one.safetensors\"}}",
               "weight_map: tensor 'a': Expected a shard file name, Actual \"../one.safetensors\"");
  expect_index("missing shard",
               "{\"weight_map\": {\"a\": \"one.safetensors\", \"z\": \"three.safetensors\"}}",
               "weight_map names shard three.safetensors, which cannot be opened: No such file or "
               "directory");
  expect_index("tensor not in its shard",
               "{\"weight_map\": {\"a\": \"one.safetensors\", \"c\": \"one.safetensors\", \"x\": "
               "\"two.safetensors\"}}",
               "weight_map: tensor 'c' is not in its shard one.safetensors");
  expect_index("tensor in no shard",
               "{\"weight_map\": {\"a\": \"one.safetensors\", \"q\": \"one.safetensors\"}}",
               "weight_map: tensor 'q' is not in its shard one.safetensors");
  expect_index("a name twice",
               "{\"weight_map\": {\"a\": \"one.safetensors\", \"b\": \"one.safetensors\", \"a\": "
               "\"one.safetensors\"}}",
               "weight_map names tensor 'a' twice");
  /* b in both shards */
  snprintf(path, sizeof path, "%s/two.safetensors", dir);
  mkc_st_write(path, b, 2);
  char want[1400];
  snprintf(want, sizeof want, "tensor 'b' is in both %s/one.safetensors and %s/two.safetensors",
           dir, dir);
  expect_index("a tensor in two shards", good, want);
  /* A broken shard is reported at the shard's own path. */
  spit(path, "\x02\0\0\0\0\0\0\0[]", 10);
  spit(tmp_path("idx/model.safetensors.index.json"), good, strlen(good));
  check_stderr_begin();
  st = mkc_st_open(dir);
  char *msg = first_line(check_stderr_end());
  snprintf(want, sizeof want, "mkc: error: %s: the header is not a JSON object", path);
  CHECK(!st && strcmp(msg, want) == 0, "a broken shard: %s", want);
  free(msg);
}

/* config.json samples (as published for TinyLlama-1.1B-Chat, Qwen2.5-0.5B,
 * Qwen3-0.6B, Mistral-7B-v0.1) and broken ones. */
static int config_from(const char *folder, const char *json, mkc_model_desc *d, char **msg) {
  char dir[600], path[700];
  snprintf(dir, sizeof dir, "%s/%s", tmp_dir, folder);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/config.json", dir);
  spit(path, json, strlen(json));
  check_stderr_begin();
  int rc = mkc_hf_config_read(dir, d);
  *msg = first_line(check_stderr_end());
  return rc;
}

/* RoPE scalings as transformers reads them (modeling_rope_utils.py). */
static void test_config_rope(void) {
  mkc_model_desc d;
  char *msg;
  const char *llama32 = /* Llama-3.2-1B's config.json, the fields mkc reads */
      "{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_hidden_layers\": 16, "
      "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 64, "
      "\"intermediate_size\": 8192, \"vocab_size\": 128256, \"max_position_embeddings\": "
      "131072, \"rope_theta\": 500000.0, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": true, "
      "\"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
      "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}";
  int rc = config_from("Llama-3.2-1B", llama32, &d, &msg);
  const mkc_rope_scaling *s = &d.rope_scaling;
  CHECK(rc == 0 && s->type == MKC_ROPE_SCALING_LLAMA3 && s->factor == 32 &&
            s->low_freq_factor == 1 && s->high_freq_factor == 4 && s->orig_ctx == 8192 &&
            d.ctx_train == 131072,
        "llama3 (Llama-3.2-1B): factor 32, low 1, high 4, original 8192");
  free(msg);
  const char *linear = /* transformers' old key "type" */
      "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
      "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}";
  rc = config_from("linear", linear, &d, &msg);
  CHECK(rc == 0 && s->type == MKC_ROPE_SCALING_LINEAR && s->factor == 2,
        "linear (\"type\"): factor 2");
  free(msg);
  /* Qwen2.5's README: YaRN past 32768 positions; factor as given (transformers 5, llama.cpp) */
  const char *qwen_yarn =
      "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
      "\"max_position_embeddings\": 32768, \"rope_scaling\": {\"factor\": 4.0, "
      "\"original_max_position_embeddings\": 32768, \"type\": \"yarn\"}}";
  rc = config_from("qwen-yarn", qwen_yarn, &d, &msg);
  CHECK(rc == 0 && s->type == MKC_ROPE_SCALING_YARN && s->factor == 4 && s->orig_ctx == 32768 &&
            s->beta_fast == 32 && s->beta_slow == 1 && s->ext_factor == 1 && s->attn_factor == 1,
        "yarn (Qwen2.5): factor 4, original 32768, betas 32/1, attention 1 + 0.1 ln 4");
  free(msg);
  /* rope_parameters: no factor, so max_position_embeddings / original; betas of 0 are the
   * defaults; attention_factor 2 is attn_factor 2 / (1 + 0.1 ln 8) */
  const char *params =
      "{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
      "\"max_position_embeddings\": 4096, \"rope_parameters\": {\"rope_type\": \"yarn\", "
      "\"rope_theta\": 1000000.0, \"original_max_position_embeddings\": 512, \"beta_fast\": 0, "
      "\"beta_slow\": 2, \"attention_factor\": 2.0}}";
  rc = config_from("params-yarn", params, &d, &msg);
  CHECK(rc == 0 && s->type == MKC_ROPE_SCALING_YARN && s->factor == 8 && s->orig_ctx == 512 &&
            s->beta_fast == 32 && s->beta_slow == 2 && d.rope_theta == 1e6 &&
            fabs(s->attn_factor - 2 / (1 + 0.1 * log(8))) < 1e-15,
        "yarn (rope_parameters): factor 4096/512, beta_fast 0 = 32, attention_factor 2");
  free(msg);
  /* DeepSeek-style mscale: attention = get_mscale(f, mscale) / get_mscale(f, mscale_all_dim) */
  const char *mscale =
      "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
      "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 40, \"mscale\": 1.0, "
      "\"mscale_all_dim\": 0.707, \"original_max_position_embeddings\": 4096}}";
  rc = config_from("mscale-yarn", mscale, &d, &msg);
  double want = (0.1 * log(40) + 1) / (0.1 * 0.707 * log(40) + 1) / (0.1 * log(40) + 1);
  CHECK(rc == 0 && s->type == MKC_ROPE_SCALING_YARN && fabs(s->attn_factor - want) < 1e-15,
        "yarn with mscale / mscale_all_dim: attn_factor %.9g (want %.9g)", s->attn_factor, want);
  free(msg);
}

/* Gemma 3's and 2's configs, each read as transformers 5.24's Gemma3TextConfig, Gemma3Config and
 * Gemma2Config read them (their layer_types, rope_parameters and defaults, printed there). */
static void test_config_gemma(void) {
  mkc_model_desc d;
  char *msg;
  const char *g1b = /* gemma-3-1b-it's config.json */
      "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, "
      "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": null, \"bos_token_id\": 2, "
      "\"cache_implementation\": \"hybrid\", \"eos_token_id\": [1, 106], "
      "\"final_logit_softcapping\": null, \"head_dim\": 256, \"hidden_activation\": "
      "\"gelu_pytorch_tanh\", \"hidden_size\": 1152, \"initializer_range\": 0.02, "
      "\"intermediate_size\": 6912, \"max_position_embeddings\": 32768, \"model_type\": "
      "\"gemma3_text\", \"num_attention_heads\": 4, \"num_hidden_layers\": 26, "
      "\"num_key_value_heads\": 1, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, "
      "\"rms_norm_eps\": 1e-06, \"rope_local_base_freq\": 10000, \"rope_scaling\": null, "
      "\"rope_theta\": 1000000, \"sliding_window\": 512, \"sliding_window_pattern\": 6, "
      "\"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.50.0.dev0\", \"use_cache\": "
      "true, \"vocab_size\": 262144}";
  int rc = config_from("gemma-3-1b-it", g1b, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "gemma3") == 0 && d.dim == 1152 && d.n_layers == 26 &&
            d.n_heads == 4 && d.n_kv_heads == 1 && d.head_dim == 256 && d.ffn == 6912 &&
            d.vocab == 262144 && d.ctx_train == 32768 && d.rope_theta == 1e6 &&
            d.norm_eps == 1e-6 && d.tied && d.qk_norm && !d.qkv_bias &&
            d.rope_layout == MKC_ROPE_NEOX && d.rope_scaling.type == MKC_ROPE_SCALING_NONE &&
            d.sliding_window == 512 && d.swa_local == 5 && d.swa_global == 1 &&
            d.rope_theta_swa == 10000 && d.attn_scale == 0 && d.embed_scale == sqrt(1152.0) &&
            d.ffn_gelu && d.post_norms,
        "gemma-3-1b-it: 5 local layers over 512 positions (base 1e4) : 1 global (1e6), GeGLU, "
        "post norms, embeddings x sqrt(1152), tied");
  free(msg);
  const char *g4b = /* gemma-3-4b-it's: the text model in text_config, the rest defaults */
      "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"boi_token_index\": 255999, "
      "\"eoi_token_index\": 256000, \"eos_token_id\": [1, 106], \"image_token_index\": 262144, "
      "\"initializer_range\": 0.02, \"mm_tokens_per_image\": 256, \"model_type\": \"gemma3\", "
      "\"text_config\": {\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": "
      "\"gemma3_text\", \"num_hidden_layers\": 34, \"rope_scaling\": {\"factor\": 8.0, "
      "\"rope_type\": \"linear\"}, \"sliding_window\": 1024}, \"torch_dtype\": \"bfloat16\", "
      "\"transformers_version\": \"4.50.0.dev0\", \"vision_config\": {\"hidden_size\": 1152, "
      "\"image_size\": 896, \"intermediate_size\": 4304, \"model_type\": \"siglip_vision_model\", "
      "\"num_attention_heads\": 16, \"num_hidden_layers\": 27, \"patch_size\": 14, "
      "\"vision_use_head\": false}}";
  rc = config_from("gemma-3-4b-it", g4b, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "gemma3") == 0 && d.dim == 2560 && d.n_layers == 34 &&
            d.n_heads == 8 && d.n_kv_heads == 4 && d.head_dim == 256 && d.ffn == 10240 &&
            d.vocab == 262208 && d.ctx_train == 131072 && d.rope_theta == 1e6 && d.tied &&
            d.rope_scaling.type == MKC_ROPE_SCALING_LINEAR && d.rope_scaling.factor == 8 &&
            d.sliding_window == 1024 && d.swa_local == 5 && d.swa_global == 1 &&
            d.rope_theta_swa == 10000 && d.attn_scale == 0,
        "gemma-3-4b-it: text_config with Gemma3TextConfig's defaults (8 heads, 4 KV, vocab "
        "262208), the global layers' RoPE linear x 8");
  free(msg);
  const char *g27b = /* gemma-3-27b-it's text_config, in a Gemma3Config */
      "{\"model_type\": \"gemma3\", \"text_config\": {\"head_dim\": 128, \"hidden_size\": 5376, "
      "\"intermediate_size\": 21504, \"model_type\": \"gemma3_text\", \"num_attention_heads\": 32, "
      "\"num_hidden_layers\": 62, \"num_key_value_heads\": 16, \"query_pre_attn_scalar\": 168, "
      "\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, \"sliding_window\": 1024}}";
  rc = config_from("gemma-3-27b-it", g27b, &d, &msg);
  CHECK(rc == 0 && d.head_dim == 128 && fabs(d.attn_scale - 0.07715167498104596) < 1e-15,
        "gemma-3-27b-it: scores scaled by query_pre_attn_scalar 168 ^ -1/2, not head_dim's");
  free(msg);
  const char *v5 = /* transformers 5's own Gemma3TextConfig.to_json_string(), abridged */
      "{\"_sliding_window_pattern\": 6, \"head_dim\": 8, \"hidden_activation\": "
      "\"gelu_pytorch_tanh\", \"hidden_size\": 16, \"intermediate_size\": 32, \"layer_types\": "
      "[\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\"], "
      "\"max_position_embeddings\": 128, \"model_type\": \"gemma3_text\", "
      "\"num_attention_heads\": 2, \"num_hidden_layers\": 4, \"num_key_value_heads\": 1, "
      "\"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, \"rope_parameters\": "
      "{\"full_attention\": {\"factor\": 4.0, \"rope_theta\": 1000000.0, \"rope_type\": "
      "\"linear\"}, \"sliding_attention\": {\"rope_theta\": 20000.0, \"rope_type\": \"default\"}}, "
      "\"sliding_window\": 8, \"tie_word_embeddings\": true, \"use_bidirectional_attention\": "
      "false, \"vocab_size\": 64}";
  rc = config_from("v5", v5, &d, &msg);
  CHECK(rc == 0 && d.swa_local == 1 && d.swa_global == 1 && d.sliding_window == 8 &&
            d.rope_theta == 1e6 && d.rope_theta_swa == 20000 &&
            d.rope_scaling.type == MKC_ROPE_SCALING_LINEAR && d.rope_scaling.factor == 4 &&
            d.attn_scale == 1.0 / 16,
        "transformers 5: layer_types 1 local : 1 global, rope_parameters per layer type, "
        "query_pre_attn_scalar 256 on heads of 8");
  free(msg);
  const char *all_global =
      "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 3, \"layer_types\": "
      "[\"full_attention\", \"full_attention\", \"full_attention\"]}";
  rc = config_from("global", all_global, &d, &msg);
  CHECK(rc == 0 && d.sliding_window == 0 && d.swa_local == 0 && d.rope_theta_swa == 0 &&
            d.dim == 2304 && d.n_heads == 8 && d.ffn == 9216,
        "every layer full_attention: no window; the other sizes Gemma3TextConfig's defaults");
  free(msg);

  const char *g2b = /* gemma-2-2b-it's config.json */
      "{\"architectures\": [\"Gemma2ForCausalLM\"], \"attention_bias\": false, "
      "\"attention_dropout\": 0.0, \"attn_logit_softcapping\": 50.0, \"bos_token_id\": 2, "
      "\"cache_implementation\": \"hybrid\", \"eos_token_id\": [1, 107], "
      "\"final_logit_softcapping\": 30.0, \"head_dim\": 256, \"hidden_act\": "
      "\"gelu_pytorch_tanh\", \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 2304, "
      "\"initializer_range\": 0.02, \"intermediate_size\": 9216, \"max_position_embeddings\": "
      "8192, \"model_type\": \"gemma2\", \"num_attention_heads\": 8, \"num_hidden_layers\": 26, "
      "\"num_key_value_heads\": 4, \"pad_token_id\": 0, \"query_pre_attn_scalar\": 256, "
      "\"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"sliding_window\": 4096, "
      "\"torch_dtype\": \"float32\", \"transformers_version\": \"4.42.4\", \"use_cache\": true, "
      "\"vocab_size\": 256000}";
  rc = config_from("gemma-2-2b-it", g2b, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "gemma2") == 0 && d.dim == 2304 && d.n_layers == 26 &&
            d.n_heads == 8 && d.n_kv_heads == 4 && d.head_dim == 256 && d.vocab == 256000 &&
            d.ctx_train == 8192 && d.rope_theta == 10000 && !d.qk_norm && d.tied &&
            d.sliding_window == 4096 && d.swa_local == 1 && d.swa_global == 1 &&
            d.rope_theta_swa == 0 && d.attn_softcap == 50 && d.final_softcap == 30 &&
            d.attn_scale == 0 && d.embed_scale == sqrt(2304.0) && d.ffn_gelu && d.post_norms,
        "gemma-2-2b-it: 1 local layer over 4096 positions : 1 global, one RoPE base, scores "
        "capped at 50, logits at 30, no Q/K norms");
  free(msg);
  const char *g2_27b = /* gemma-2-27b-it's sizes, the rest Gemma2Config's defaults; caps null */
      "{\"model_type\": \"gemma2\", \"head_dim\": 128, \"hidden_size\": 4608, "
      "\"intermediate_size\": 36864, \"num_attention_heads\": 32, \"num_hidden_layers\": 46, "
      "\"num_key_value_heads\": 16, \"query_pre_attn_scalar\": 144, "
      "\"attn_logit_softcapping\": null, \"final_logit_softcapping\": null}";
  rc = config_from("gemma-2-27b", g2_27b, &d, &msg);
  CHECK(rc == 0 && d.attn_scale == 1.0 / 12 && d.attn_softcap == 0 && d.final_softcap == 0 &&
            d.vocab == 256000 && d.sliding_window == 4096,
        "gemma2: query_pre_attn_scalar 144; caps given as null are none (absent: 50 and 30)");
  free(msg);

  static const char *const sizes =
      "\"hidden_size\": 16, \"num_hidden_layers\": 3, \"num_attention_heads\": 2, "
      "\"num_key_value_heads\": 1, \"head_dim\": 8, \"intermediate_size\": 32, \"vocab_size\": 64";
  struct {
    const char *label, *extra, *want;
  } bad[] = {
      {"a negative cap", "\"final_logit_softcapping\": -30.0",
       "\"final_logit_softcapping\": Expected a positive number, Actual -30"},
      {"EmbeddingGemma", "\"use_bidirectional_attention\": true",
       "\"use_bidirectional_attention\": true: mkc decodes causally"},
      {"exact GELU", "\"hidden_activation\": \"gelu\"",
       "unsupported hidden_activation \"gelu\" (mkc's Gemma MLP is GELU with the tanh "
       "approximation, gelu_pytorch_tanh)"},
      {"layer_types no pattern gives",
       "\"layer_types\": [\"sliding_attention\", \"full_attention\", \"full_attention\"]",
       "\"layer_types\": layer 2 is full_attention, unlike the pattern the layers before it set "
       "(1 local : 1 global; mkc runs L local : 1 global from layer 0)"},
      {"layer_types of the wrong length", "\"layer_types\": [\"full_attention\"]",
       "\"layer_types\": Expected 3 of \"sliding_attention\" or \"full_attention\", one a layer; "
       "Actual 1"},
      {"a layer type mkc has not heard of",
       "\"layer_types\": [\"sliding_attention\", \"chunked_attention\", \"full_attention\"]",
       "\"layer_types\"[1]: Expected \"sliding_attention\" or \"full_attention\", Actual "
       "\"chunked_attention\""},
      {"no window", "\"sliding_window\": null",
       "\"sliding_window\": null: its local layers need a window"},
      {"scaled local RoPE",
       "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2}}",
       "rope_parameters.sliding_attention: scaled: not supported (mkc scales only the global "
       "layers' RoPE)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char json[1400], want[1400];
    snprintf(json, sizeof json, "{\"model_type\": \"gemma3_text\", %s, %s}", sizes, bad[i].extra);
    rc = config_from("bad", json, &d, &msg);
    snprintf(want, sizeof want, "mkc: error: %s/bad/config.json: %s", tmp_dir, bad[i].want);
    CHECK(rc == -1 && strcmp(msg, want) == 0, "gemma3: %s: %s", bad[i].label, bad[i].want);
    free(msg);
  }
  rc = config_from("bad", "{\"model_type\": \"gemma3\", \"vision_config\": {}}", &d, &msg);
  char want[1400];
  snprintf(want, sizeof want,
           "mkc: error: %s/bad/config.json: \"text_config\": Expected an object, Actual nothing",
           tmp_dir);
  CHECK(rc == -1 && strcmp(msg, want) == 0, "gemma3 without a text_config: %s", want);
  free(msg);
  rc = config_from(
      "bad", "{\"model_type\": \"gemma3\", \"text_config\": {\"num_hidden_layers\": 0}}", &d, &msg);
  snprintf(want, sizeof want,
           "mkc: error: %s/bad/config.json: text_config: \"num_hidden_layers\": Expected an "
           "integer >= 1, Actual 0",
           tmp_dir);
  CHECK(rc == -1 && strcmp(msg, want) == 0, "a bad field in text_config is named there: %s", want);
  free(msg);
}

static void test_config(void) {
  mkc_model_desc d;
  char *msg;
  const char *tinyllama =
      "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"bos_token_id\": 1, "
      "\"eos_token_id\": 2, \"hidden_act\": \"silu\", \"hidden_size\": 2048, "
      "\"initializer_range\": 0.02, \"intermediate_size\": 5632, \"max_position_embeddings\": "
      "2048, \"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 22, "
      "\"num_key_value_heads\": 4, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, "
      "\"rope_scaling\": null, \"rope_theta\": 10000.0, \"tie_word_embeddings\": false, "
      "\"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.35.0\", \"use_cache\": true, "
      "\"vocab_size\": 32000}";
  int rc = config_from("TinyLlama-1.1B-Chat-v1.0", tinyllama, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "llama") == 0 &&
            strcmp(d.name, "tinyllama-1.1b-chat-v1.0") == 0 && d.dim == 2048 && d.n_layers == 22 &&
            d.n_heads == 32 && d.n_kv_heads == 4 && d.head_dim == 64 && d.ffn == 5632 &&
            d.vocab == 32000 && d.ctx_train == 2048 && d.rope_theta == 10000 &&
            d.norm_eps == 1e-5 && d.rope_layout == MKC_ROPE_INTERLEAVED && !d.tied && !d.qkv_bias &&
            !d.qk_norm,
        "llama (TinyLlama): sizes, head_dim 2048/32, interleaved, untied");
  free(msg);
  const char *qwen2 =
      "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, \"bos_token_id\": "
      "151643, \"eos_token_id\": 151643, \"hidden_act\": \"silu\", \"hidden_size\": 896, "
      "\"initializer_range\": 0.02, \"intermediate_size\": 4864, \"max_position_embeddings\": "
      "32768, \"max_window_layers\": 24, \"model_type\": \"qwen2\", \"num_attention_heads\": 14, "
      "\"num_hidden_layers\": 24, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-06, "
      "\"rope_theta\": 1000000.0, \"sliding_window\": 32768, \"tie_word_embeddings\": true, "
      "\"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.40.1\", \"use_cache\": true, "
      "\"use_mrope\": false, \"use_sliding_window\": false, \"vocab_size\": 151936}";
  rc = config_from("Qwen2.5-0.5B_Instruct", qwen2, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "qwen2") == 0 && strcmp(d.name, "qwen2.5-0.5b-instruct") == 0 &&
            d.dim == 896 && d.n_layers == 24 && d.n_heads == 14 && d.n_kv_heads == 2 &&
            d.head_dim == 64 && d.ffn == 4864 && d.vocab == 151936 && d.ctx_train == 32768 &&
            d.rope_theta == 1e6 && d.norm_eps == 1e-6 && d.rope_layout == MKC_ROPE_NEOX && d.tied &&
            d.qkv_bias && !d.qk_norm,
        "qwen2 (Qwen2.5-0.5B): NEOX, tied, qkv_bias; sliding window off");
  free(msg);
  const char *qwen3 =
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, "
      "\"attention_dropout\": 0.0, \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
      "\"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 1024, \"initializer_range\": "
      "0.02, \"intermediate_size\": 3072, \"max_position_embeddings\": 40960, "
      "\"max_window_layers\": 28, \"model_type\": \"qwen3\", \"num_attention_heads\": 16, "
      "\"num_hidden_layers\": 28, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-06, "
      "\"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": null, "
      "\"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"transformers_version\": "
      "\"4.51.0\", \"use_cache\": true, \"use_sliding_window\": false, \"vocab_size\": 151936}";
  rc = config_from("Qwen3-0.6B", qwen3, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "qwen3") == 0 && strcmp(d.name, "qwen3-0.6b") == 0 &&
            d.dim == 1024 && d.n_heads == 16 && d.n_kv_heads == 8 && d.head_dim == 128 &&
            d.ctx_train == 40960 && d.rope_layout == MKC_ROPE_NEOX && d.tied && !d.qkv_bias &&
            d.qk_norm,
        "qwen3 (Qwen3-0.6B): head_dim 128 given (16 x 128 != 1024), qk_norm");
  free(msg);
  const char *mistral =
      "{\"architectures\": [\"MistralForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2, "
      "\"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02, "
      "\"intermediate_size\": 14336, \"max_position_embeddings\": 32768, \"model_type\": "
      "\"mistral\", \"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
      "\"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, "
      "\"sliding_window\": 4096, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", "
      "\"transformers_version\": \"4.34.0.dev0\", \"use_cache\": true, \"vocab_size\": 32000}";
  rc = config_from("Mistral-7B-v0.1", mistral, &d, &msg);
  CHECK(rc == 0 && strcmp(d.arch, "mistral") == 0 && d.ctx_train == 4096 && d.head_dim == 128 &&
            d.rope_layout == MKC_ROPE_INTERLEAVED,
        "mistral v0.1: the 4096 sliding window bounds ctx_train");
  free(msg);
  const char *minimal =
      "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
      "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 500000.0}}";
  rc = config_from("tiny", minimal, &d, &msg);
  CHECK(rc == 0 && d.n_kv_heads == 4 && d.head_dim == 16 && d.ctx_train == 2048 &&
            d.rope_theta == 500000 && d.norm_eps == 1e-6 && !d.tied,
        "defaults: kv heads = heads, ctx 2048, eps 1e-6, untied; rope_parameters' theta");
  free(msg);
  test_config_rope();
  test_config_gemma();
  char dir[600];
  snprintf(dir, sizeof dir, "%s/tiny/", tmp_dir);
  rc = mkc_hf_config_read(dir, &d);
  CHECK(rc == 0 && strcmp(d.name, "tiny") == 0, "a trailing slash: the name is still 'tiny'");

  struct {
    const char *label, *json, *want;
  } bad[] = {
      {"missing hidden_size", "{\"model_type\": \"llama\"}", "missing \"hidden_size\""},
      {"gpt_neox", "{\"model_type\": \"gpt_neox\", \"hidden_size\": 64}",
       "unsupported model_type \"gpt_neox\" (mkc reads llama, mistral, mixtral, qwen2, "
       "qwen3, qwen3_moe, phi3, granite, granitemoe, gemma, gemma2, gemma3_text, gemma3, "
       "smollm3, exaone4)"},
      {"no model_type", "{\"hidden_size\": 64}", "missing \"model_type\""},
      {"dynamic rope_scaling",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}}",
       "unsupported rope_scaling \"dynamic\" (mkc runs default, linear, llama3, yarn and "
       "longrope)"},
      {"longrope in rope_parameters without its lists",
       "{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_parameters\": {\"rope_type\": \"longrope\", \"factor\": 4.0}}",
       "rope_parameters longrope needs \"short_factor\""},
      {"llama3 without its original context",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
       "\"rope_type\": \"llama3\"}}",
       "rope_scaling llama3 needs \"original_max_position_embeddings\""},
      {"llama3 with low above high",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_scaling\": {\"factor\": 8, \"high_freq_factor\": 1, \"low_freq_factor\": 4, "
       "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}",
       "rope_scaling llama3: factor 8, low_freq_factor 4, high_freq_factor 1 (Expected: factor >= "
       "1, low < high)"},
      {"linear without a factor",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_scaling\": {\"type\": \"linear\"}}",
       "rope_scaling linear needs \"factor\""},
      {"yarn without truncation",
       "{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"truncate\": false}}",
       "rope_parameters yarn \"truncate\": false: not supported (mkc's ramp truncates)"},
      {"hidden_size a string",
       "{\"model_type\": \"llama\", \"hidden_size\": \"64\", \"num_hidden_layers\": 2}",
       "\"hidden_size\": Expected an integer >= 1, Actual \"64\""},
      {"zero layers", "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 0}",
       "\"num_hidden_layers\": Expected an integer >= 1, Actual 0"},
      {"fractional heads",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4.5}",
       "\"num_attention_heads\": Expected an integer >= 1, Actual 4.5"},
      {"kv heads not dividing",
       "{\"model_type\": \"llama\", \"hidden_size\": 60, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 6, \"num_key_value_heads\": 4, \"intermediate_size\": 192, "
       "\"vocab_size\": 256}",
       "num_attention_heads 6 is not a multiple of num_key_value_heads 4"},
      {"odd head_dim",
       "{\"model_type\": \"llama\", \"hidden_size\": 60, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256}",
       "head_dim 15 is odd (RoPE rotates pairs)"},
      {"hidden not a multiple of heads",
       "{\"model_type\": \"llama\", \"hidden_size\": 66, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256}",
       "hidden_size 66 is not a multiple of num_attention_heads 4 (and no head_dim)"},
      {"gelu",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"hidden_act\": \"gelu\"}",
       "unsupported hidden_act \"gelu\" (mkc's MLP is SwiGLU with silu)"},
      {"llama attention_bias",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"attention_bias\": true}",
       "unsupported attention_bias true (the graph has no o_proj bias)"},
      {"mlp_bias",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"mlp_bias\": true}",
       "unsupported mlp_bias true (the graph has no MLP biases)"},
      {"tie_word_embeddings a string",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"tie_word_embeddings\": \"yes\"}",
       "\"tie_word_embeddings\": Expected true or false, Actual \"yes\""},
      {"negative rope_theta",
       "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
       "\"num_attention_heads\": 4, \"intermediate_size\": 192, \"vocab_size\": 256, "
       "\"rope_theta\": -1}",
       "\"rope_theta\": Expected a positive number, Actual -1"},
      {"not JSON", "{\"model_type\": llama}", "not valid JSON (at byte 15)"},
      {"an array", "[]", "not a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char want[1400];
    rc = config_from("bad", bad[i].json, &d, &msg);
    snprintf(want, sizeof want, "mkc: error: %s/bad/config.json: %s", tmp_dir, bad[i].want);
    CHECK(rc == -1 && strcmp(msg, want) == 0, "%s: %s", bad[i].label, bad[i].want);
    free(msg);
  }
  snprintf(dir, sizeof dir, "%s/emptydir", tmp_dir);
  check_stderr_begin();
  rc = mkc_hf_config_read(dir, &d);
  msg = first_line(check_stderr_end());
  char want[1400];
  snprintf(want, sizeof want, "mkc: error: %s/config.json: cannot read: No such file or directory",
           dir);
  CHECK(rc == -1 && strcmp(msg, want) == 0, "no config.json: %s", want);
  free(msg);
}

int main(void) {
  if (scratch_open("st") != 0) return 1;
  test_names();
  test_permute_example();
  test_permute_rope();
  test_round_trip();
  test_bias_and_norms();
  test_model();
  test_bad_files();
  test_bad_index();
  test_config();
  scratch_close();
  return check_done();
}
