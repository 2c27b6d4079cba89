/* See quant_mix.h. The rules are llama.cpp's (src/llama-quant.cpp), restated
 * for the file types mkc writes; the Falcon branch is left out (mkc does not
 * read Falcon). */
#include "quant_mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dequant.h"

enum {
  FT_F32 = 0,
  FT_F16 = 1,
  FT_Q4_0 = 2,
  FT_Q4_1 = 3,
  FT_Q8_0 = 7,
  FT_Q5_0 = 8,
  FT_Q5_1 = 9,
  FT_Q2_K = 10,
  FT_Q3_K_S = 11,
  FT_Q3_K_M = 12,
  FT_Q3_K_L = 13,
  FT_Q4_K_S = 14,
  FT_Q4_K_M = 15,
  FT_Q5_K_S = 16,
  FT_Q5_K_M = 17,
  FT_Q6_K = 18,
  FT_IQ2_XXS = 19,
  FT_IQ2_XS = 20,
  FT_Q2_K_S = 21,
  FT_IQ3_XS = 22,
  FT_IQ3_XXS = 23,
  FT_IQ1_S = 24,
  FT_IQ4_NL = 25,
  FT_IQ3_S = 26,
  FT_IQ3_M = 27,
  FT_IQ2_S = 28,
  FT_IQ2_M = 29,
  FT_IQ4_XS = 30,
  FT_IQ1_M = 31,
  FT_BF16 = 32,
  FT_TQ1_0 = 36,
  FT_TQ2_0 = 37,
  FT_MXFP4_MOE = 38,
  FT_NVFP4 = 39,
  FT_Q1_0 = 40,
  FT_Q2_0 = 41,
};

/* llama-quantize's names; Q3_K, Q4_K and Q5_K are its aliases of the _M mixes. The last field:
 * llama-quantize refuses the mix without an importance matrix. */
static const mkc_quant_ftype FTYPES[] = {{"Q4_0", FT_Q4_0, MKC_GGML_Q4_0, 0},
                                         {"Q4_1", FT_Q4_1, MKC_GGML_Q4_1, 0},
                                         {"Q5_0", FT_Q5_0, MKC_GGML_Q5_0, 0},
                                         {"Q5_1", FT_Q5_1, MKC_GGML_Q5_1, 0},
                                         {"Q8_0", FT_Q8_0, MKC_GGML_Q8_0, 0},
                                         {"Q2_K", FT_Q2_K, MKC_GGML_Q2_K, 0},
                                         {"Q2_K_S", FT_Q2_K_S, MKC_GGML_Q2_K, 1},
                                         {"Q3_K", FT_Q3_K_M, MKC_GGML_Q3_K, 0},
                                         {"Q3_K_S", FT_Q3_K_S, MKC_GGML_Q3_K, 0},
                                         {"Q3_K_M", FT_Q3_K_M, MKC_GGML_Q3_K, 0},
                                         {"Q3_K_L", FT_Q3_K_L, MKC_GGML_Q3_K, 0},
                                         {"Q4_K", FT_Q4_K_M, MKC_GGML_Q4_K, 0},
                                         {"Q4_K_S", FT_Q4_K_S, MKC_GGML_Q4_K, 0},
                                         {"Q4_K_M", FT_Q4_K_M, MKC_GGML_Q4_K, 0},
                                         {"Q5_K", FT_Q5_K_M, MKC_GGML_Q5_K, 0},
                                         {"Q5_K_S", FT_Q5_K_S, MKC_GGML_Q5_K, 0},
                                         {"Q5_K_M", FT_Q5_K_M, MKC_GGML_Q5_K, 0},
                                         {"Q6_K", FT_Q6_K, MKC_GGML_Q6_K, 0},
                                         {"IQ4_NL", FT_IQ4_NL, MKC_GGML_IQ4_NL, 0},
                                         {"IQ4_XS", FT_IQ4_XS, MKC_GGML_IQ4_XS, 0},
                                         {"IQ3_S", FT_IQ3_S, MKC_GGML_IQ3_S, 0},
                                         {"IQ3_M", FT_IQ3_M, MKC_GGML_IQ3_S, 0},
                                         {"IQ3_XS", FT_IQ3_XS, MKC_GGML_IQ3_S, 1},
                                         {"IQ3_XXS", FT_IQ3_XXS, MKC_GGML_IQ3_XXS, 1},
                                         {"IQ2_M", FT_IQ2_M, MKC_GGML_IQ2_S, 1},
                                         {"IQ2_S", FT_IQ2_S, MKC_GGML_IQ2_XS, 1},
                                         {"IQ2_XS", FT_IQ2_XS, MKC_GGML_IQ2_XS, 1},
                                         {"IQ2_XXS", FT_IQ2_XXS, MKC_GGML_IQ2_XXS, 1},
                                         {"IQ1_M", FT_IQ1_M, MKC_GGML_IQ1_M, 1},
                                         {"IQ1_S", FT_IQ1_S, MKC_GGML_IQ1_S, 1},
                                         {"TQ1_0", FT_TQ1_0, MKC_GGML_TQ1_0, 0},
                                         {"TQ2_0", FT_TQ2_0, MKC_GGML_TQ2_0, 0},
                                         {"Q1_0", FT_Q1_0, MKC_GGML_Q1_0, 0},
                                         {"Q2_0", FT_Q2_0, MKC_GGML_Q2_0, 0},
                                         {"MXFP4_MOE", FT_MXFP4_MOE, MKC_GGML_MXFP4, 0},
                                         {"F16", FT_F16, MKC_GGML_F16, 0},
                                         {"BF16", FT_BF16, MKC_GGML_BF16, 0},
                                         {"F32", FT_F32, MKC_GGML_F32, 0},
                                         {"COPY", FT_F32, MKC_QUANT_NO_TYPE, 0}};

const mkc_quant_ftype *mkc_quant_ftype_named(const char *name) {
  for (size_t i = 0; i < sizeof FTYPES / sizeof *FTYPES; i++)
    if (strcasecmp(name, FTYPES[i].name) == 0) return &FTYPES[i];
  return NULL;
}

/* llama-quantize's numbers name the first of its list with that number, as here (12: Q3_K);
 * COPY, which shares F32's 0 there, is taken by name only. */
const mkc_quant_ftype *mkc_quant_ftype_parse(const char *arg) {
  char *end;
  long n = strtol(arg, &end, 10);
  if (end == arg || *end) return mkc_quant_ftype_named(arg);
  for (size_t i = 0; i < sizeof FTYPES / sizeof *FTYPES; i++)
    if (FTYPES[i].ftype == n && FTYPES[i].base != MKC_QUANT_NO_TYPE) return &FTYPES[i];
  return NULL;
}

const char *mkc_quant_ftype_names(void) {
  static char names[512];
  if (!names[0])
    for (size_t i = 0, n = 0; i < sizeof FTYPES / sizeof *FTYPES && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", FTYPES[i].name);
  return names;
}

/* The kinds of tensor the rules tell apart, by name. */
enum kind {
  OUTPUT,
  TOKEN_EMBD,
  ATTN_QKV,
  ATTN_KV_B,
  ATTN_V,
  ATTN_K,
  ATTN_Q,
  ATTN_OUTPUT,
  FFN_UP,
  FFN_GATE,
  FFN_DOWN,
  OTHER
};

static enum kind kind_of(const char *name) {
  if (strcmp(name, "output.weight") == 0) return OUTPUT;
  if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0)
    return TOKEN_EMBD;
  static const struct {
    const char *part;
    enum kind kind;
  } parts[] = {{"attn_qkv.weight", ATTN_QKV},
               {"attn_kv_b.weight", ATTN_KV_B},
               {"attn_v.weight", ATTN_V},
               {"attn_k.weight", ATTN_K},
               {"attn_q.weight", ATTN_Q},
               {"attn_output.weight", ATTN_OUTPUT},
               {"ffn_up", FFN_UP},
               {"ffn_gate", FFN_GATE},
               {"ffn_down", FFN_DOWN}};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    if (strstr(name, parts[i].part)) return parts[i].kind;
  return OTHER;
}

/* V-like matrices, the most sensitive to quantization. */
static int v_like(enum kind k) { return k == ATTN_V || k == ATTN_QKV || k == ATTN_KV_B; }

int mkc_quant_v_like(const char *name) { return v_like(kind_of(name)); }

int mkc_quant_allowed(const char *name, int n_dims, int quantize_output) {
  size_t len = strlen(name);
  if (n_dims < 2 || len < 6 || strcmp(name + len - 6, "weight") != 0) return 0;
  if (!quantize_output && strcmp(name, "output.weight") == 0) return 0;
  if (strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0)
    return 0;
  /* kept as they are: norms, expert routers, small or special matrices of other models */
  static const char *const kept[] = {"_norm.weight",
                                     "ffn_gate_inp.weight",
                                     "ffn_gate_tid2eid.weight",
                                     "altup",
                                     "laurel",
                                     "per_layer_model_proj",
                                     "ssm_conv1d",
                                     "shortconv.conv.weight",
                                     "indexer.k_proj.weight",
                                     "indexer.q_proj.weight",
                                     "time_mix_first.weight",
                                     "time_mix_w0.weight",
                                     "time_mix_w1.weight",
                                     "time_mix_w2.weight",
                                     "time_mix_v0.weight",
                                     "time_mix_v1.weight",
                                     "time_mix_v2.weight",
                                     "time_mix_a0.weight",
                                     "time_mix_a1.weight",
                                     "time_mix_a2.weight",
                                     "time_mix_g1.weight",
                                     "time_mix_g2.weight",
                                     "time_mix_decay_w1.weight",
                                     "time_mix_decay_w2.weight",
                                     "time_mix_lerp_fused.weight",
                                     "attn_rel_b.weight",
                                     ".position_embd",
                                     "sam.pos_embd",
                                     "sam.neck.",
                                     "sam.net_",
                                     ".rel_pos",
                                     ".patch_embd",
                                     ".patch_merger",
                                     "a.rvq.codebook",
                                     "mm.a.code_embd"};
  for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
    if (strstr(name, kept[i])) return 0;
  return 1;
}

static int quantized(uint32_t type) {
  return type != MKC_GGML_F32 && type != MKC_GGML_F16 && type != MKC_GGML_BF16;
}

/* A layer the _M mixes give more bits: the first and last eighths, and every third between. */
static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The layer a FFN matrix's rules read: the count of its kind so far, or, with experts (whose
 * matrices llama.cpp does not meet in layer order), the one its name gives. */
static int ffn_layer(const mkc_quant_mix *m, int counted, const char *name) {
  int layer;
  if (m->n_expert > 1 && sscanf(name, "blk.%d.", &layer) == 1) return layer;
  return counted;
}

/* The IQ1 and IQ2 mixes, which share their own branch of the rules. */
static int lowest_bits(int ft) {
  return ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ2_S ||
         ft == FT_IQ2_M || ft == FT_IQ1_M;
}

/* The IQ1 and IQ2 mixes' type for a matrix of kind k (their branch of the rules). */
static uint32_t mix_lowest(mkc_quant_mix *m, enum kind k, const char *name, uint32_t type) {
  int ft = m->ft->ftype, s_or_m = ft == FT_IQ2_S || ft == FT_IQ2_M;
  if (v_like(k)) {
    m->i_attn_v++;
    if (m->n_gqa >= 4 || m->n_expert >= 4) return MKC_GGML_Q4_K;
    return s_or_m ? MKC_GGML_IQ3_S : MKC_GGML_Q2_K;
  }
  if (k == ATTN_K && m->n_expert == 8) return MKC_GGML_Q4_K;
  if (k == FFN_DOWN) {
    int i = ffn_layer(m, m->i_ffn_down++, name);
    if (i < m->n_layer / 8) return s_or_m ? MKC_GGML_IQ3_S : MKC_GGML_Q2_K;
    return type;
  }
  if (k == ATTN_OUTPUT) {
    if (m->n_expert == 8) return MKC_GGML_Q5_K;
    if (ft == FT_IQ1_S || ft == FT_IQ1_M) return MKC_GGML_IQ2_XXS;
    if (s_or_m) return MKC_GGML_IQ3_S;
  }
  return type;
}

/* The mix's type for a quantized matrix of kind k (type: the file type's base; n_dims: its
 * dimensions, 3 for experts stacked). */
static uint32_t mix(mkc_quant_mix *m, enum kind k, const char *name, int n_dims, int64_t cols,
                    uint32_t type) {
  int ft = m->ft->ftype, n = m->n_layer;
  if (k == OUTPUT || (m->tied && k == TOKEN_EMBD)) {
    if (m->output_type != MKC_QUANT_NO_TYPE) return m->output_type;
    if (ft == FT_MXFP4_MOE) return MKC_GGML_Q8_0;
    const mkc_ggml_type_info *t = mkc_ggml_type(type);
    if (cols % t->block != 0) return MKC_GGML_Q8_0;
    if (lowest_bits(ft) || ft == FT_IQ3_XXS) return MKC_GGML_Q5_K;
    return type == MKC_GGML_Q8_0 ? type : MKC_GGML_Q6_K;
  }
  if (ft == FT_MXFP4_MOE) /* the experts MXFP4, every other matrix Q8_0 */
    return n_dims > 2 ? MKC_GGML_MXFP4 : MKC_GGML_Q8_0;
  if (k == TOKEN_EMBD) {
    if (ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ1_M)
      return MKC_GGML_Q2_K;
    if (ft == FT_IQ2_S || ft == FT_IQ2_M || ft == FT_IQ3_XXS) return MKC_GGML_IQ3_S;
    if (ft == FT_TQ1_0 || ft == FT_TQ2_0 || ft == FT_Q2_0) return MKC_GGML_Q4_K;
    return type;
  }
  if (lowest_bits(ft)) return mix_lowest(m, k, name, type);
  if (v_like(k)) {
    int i = m->i_attn_v++;
    if (ft == FT_Q2_K)
      type = m->n_gqa >= 4 ? MKC_GGML_Q4_K : MKC_GGML_Q3_K;
    else if (ft == FT_Q2_K_S && m->n_gqa >= 4)
      type = MKC_GGML_Q4_K;
    else if (ft == FT_IQ3_XXS)
      type = m->n_gqa >= 4 ? MKC_GGML_Q4_K : !m->has_imatrix ? MKC_GGML_IQ3_S : MKC_GGML_IQ3_XXS;
    else if ((ft == FT_IQ3_XS || ft == FT_IQ3_S) && m->n_gqa >= 4)
      type = MKC_GGML_Q4_K;
    else if (ft == FT_IQ3_M)
      type = MKC_GGML_Q4_K;
    else if (ft == FT_Q3_K_M)
      type = i < 2 ? MKC_GGML_Q5_K : MKC_GGML_Q4_K;
    else if (ft == FT_Q3_K_L)
      type = MKC_GGML_Q5_K;
    else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && m->n_gqa >= 4)
      type = MKC_GGML_Q5_K;
    else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && more_bits(i, m->n_attn_v))
      type = MKC_GGML_Q6_K;
    else if (ft == FT_Q4_K_S && i < 4)
      type = MKC_GGML_Q5_K;
    if (m->is_70b && (type == MKC_GGML_Q3_K || type == MKC_GGML_Q4_K)) type = MKC_GGML_Q5_K;
    if (m->n_expert == 8) type = MKC_GGML_Q8_0;
    return type;
  }
  if (k == ATTN_K || k == ATTN_Q) {
    if (k == ATTN_K && m->n_expert == 8) return MKC_GGML_Q8_0;
    if (ft == FT_IQ3_XS) return MKC_GGML_IQ3_XXS;
    if (ft == FT_IQ3_XXS) return MKC_GGML_IQ2_S;
    return type;
  }
  if (k == FFN_DOWN) {
    int i = ffn_layer(m, m->i_ffn_down++, name);
    if (ft == FT_Q2_K) return MKC_GGML_Q3_K;
    if (ft == FT_Q2_K_S) return i < n / 8 ? MKC_GGML_Q4_K : type;
    if (ft == FT_IQ3_XXS && !m->has_imatrix) return i < n / 8 ? MKC_GGML_Q4_K : MKC_GGML_Q3_K;
    if (ft == FT_Q3_K_M) return i < n / 16 ? MKC_GGML_Q5_K : MKC_GGML_Q4_K;
    if (ft == FT_IQ3_M && (i < n / 8 || (m->n_expert == 8 && more_bits(i, n))))
      return MKC_GGML_Q4_K;
    if (ft == FT_Q3_K_L) return MKC_GGML_Q5_K;
    if (ft == FT_Q4_K_M) return more_bits(i, n) ? MKC_GGML_Q6_K : type;
    if (i < n / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS) && !m->has_imatrix) return MKC_GGML_Q5_K;
    if (ft == FT_Q5_K_M && more_bits(i, n)) return MKC_GGML_Q6_K;
    if (ft == FT_Q4_K_S && i < n / 8) return MKC_GGML_Q5_K;
    /* with an importance matrix, llama.cpp's guard for the first layers' ffn_down */
    if ((ft == FT_Q4_0 || ft == FT_Q5_0) && m->has_imatrix && i < n / 8)
      return ft == FT_Q4_0 ? MKC_GGML_Q4_1 : MKC_GGML_Q5_1;
    return type;
  }
  if (k == ATTN_OUTPUT) {
    if (m->n_expert == 8)
      return ft == FT_Q2_K || ft == FT_IQ3_XS || ft == FT_IQ3_XXS || ft == FT_Q3_K_S ||
                     ft == FT_Q3_K_M || ft == FT_IQ4_NL || ft == FT_Q4_K_S || ft == FT_Q4_K_M ||
                     ft == FT_IQ3_S || ft == FT_IQ3_M || ft == FT_IQ4_XS
                 ? MKC_GGML_Q5_K
                 : type;
    if (ft == FT_Q2_K) return MKC_GGML_Q3_K;
    if (ft == FT_IQ3_XXS) return MKC_GGML_IQ3_S;
    if (ft == FT_Q3_K_M || ft == FT_IQ3_M) return MKC_GGML_Q4_K;
    if (ft == FT_Q3_K_L) return MKC_GGML_Q5_K;
    return type;
  }
  if (k == FFN_GATE || k == FFN_UP) { /* IQ3_XS's middle layers */
    int i = ffn_layer(m, k == FFN_GATE ? m->i_ffn_gate++ : m->i_ffn_up++, name);
    if (ft == FT_IQ3_XS && i >= n / 8 && i < 7 * n / 8) return MKC_GGML_IQ3_XXS;
  }
  return type;
}

/* llama.cpp's fallback for a row that is not whole blocks of type; MKC_QUANT_NO_TYPE where it
 * has none. */
static uint32_t fallback(uint32_t type, int64_t cols) {
  uint32_t to;
  switch (type) {
  case MKC_GGML_IQ1_S:
  case MKC_GGML_IQ1_M:
  case MKC_GGML_IQ2_XXS:
  case MKC_GGML_IQ2_XS:
  case MKC_GGML_IQ2_S:
  case MKC_GGML_IQ3_XXS:
  case MKC_GGML_IQ3_S:
  case MKC_GGML_IQ4_XS:
    to = MKC_GGML_IQ4_NL;
    break;
  case MKC_GGML_Q2_K:
  case MKC_GGML_Q3_K:
  case MKC_GGML_TQ1_0:
  case MKC_GGML_TQ2_0:
  case MKC_GGML_Q2_0:
    to = MKC_GGML_Q4_0;
    break;
  case MKC_GGML_Q4_K:
    to = MKC_GGML_Q5_0;
    break;
  case MKC_GGML_Q5_K:
    to = MKC_GGML_Q5_1;
    break;
  case MKC_GGML_Q6_K:
    to = MKC_GGML_Q8_0;
    break;
  default: /* a type of 32 has none smaller: F16; Q1_0 and NVFP4 none at all */
    if (mkc_ggml_type(type)->block > 32) return MKC_QUANT_NO_TYPE;
    return MKC_GGML_F16;
  }
  return cols % mkc_ggml_type(to)->block == 0 ? to : MKC_GGML_F16;
}

uint32_t mkc_quant_type(mkc_quant_mix *m, const char *name, int n_dims, int64_t cols, uint32_t keep,
                        uint32_t override, uint32_t *fell_back) {
  *fell_back = MKC_QUANT_NO_TYPE;
  if (!mkc_quant_allowed(name, n_dims, m->quantize_output) || m->ft->base == MKC_QUANT_NO_TYPE)
    return keep; /* COPY: every tensor as it is */
  enum kind k = kind_of(name);
  if (m->embd_type != MKC_QUANT_NO_TYPE && k == TOKEN_EMBD) return m->embd_type;
  if (m->output_type != MKC_QUANT_NO_TYPE && k == OUTPUT) return m->output_type;
  uint32_t type = m->ft->base;
  if (!quantized(type)) return type;
  if (override != MKC_QUANT_NO_TYPE)
    type = override;
  else if (!m->pure)
    type = mix(m, k, name, n_dims, cols, type);
  if (cols % mkc_ggml_type(type)->block == 0) return type;
  *fell_back = type;
  m->n_fallback++;
  return fallback(type, cols);
}

int mkc_quant_needs_imatrix(const mkc_quant_mix *m, const char *name, uint32_t type) {
  enum kind k = kind_of(name);
  if (k == OUTPUT || k == TOKEN_EMBD) return 0;
  if (type == MKC_GGML_Q2_K) return m->ft->ftype == FT_Q2_K_S;
  return type == MKC_GGML_IQ3_XXS || type == MKC_GGML_IQ2_XXS || type == MKC_GGML_IQ2_XS ||
         type == MKC_GGML_IQ2_S || type == MKC_GGML_IQ1_M || type == MKC_GGML_IQ1_S;
}

int mkc_quant_order(const char *a, const char *b) {
  int la = -1, lb = -1;
  sscanf(a, "blk.%d.", &la);
  sscanf(b, "blk.%d.", &lb);
  if (la != lb) return la < lb ? -1 : 1;
  return strcmp(a, b);
}

int mkc_quant_guess_ftype(const uint32_t *types, size_t n) {
  static const int FT_OF[MKC_GGML_TYPE_COUNT] = {
      [MKC_GGML_F32] = FT_F32,         [MKC_GGML_F16] = FT_F16,       [MKC_GGML_BF16] = FT_BF16,
      [MKC_GGML_Q4_0] = FT_Q4_0,       [MKC_GGML_Q4_1] = FT_Q4_1,     [MKC_GGML_Q5_0] = FT_Q5_0,
      [MKC_GGML_Q5_1] = FT_Q5_1,       [MKC_GGML_Q8_0] = FT_Q8_0,     [MKC_GGML_Q2_K] = FT_Q2_K,
      [MKC_GGML_Q3_K] = FT_Q3_K_M,     [MKC_GGML_Q4_K] = FT_Q4_K_M,   [MKC_GGML_Q5_K] = FT_Q5_K_M,
      [MKC_GGML_Q6_K] = FT_Q6_K,       [MKC_GGML_TQ1_0] = FT_TQ1_0,   [MKC_GGML_TQ2_0] = FT_TQ2_0,
      [MKC_GGML_IQ2_XXS] = FT_IQ2_XXS, [MKC_GGML_IQ2_XS] = FT_IQ2_XS, [MKC_GGML_IQ2_S] = FT_IQ2_S,
      [MKC_GGML_IQ3_XXS] = FT_IQ3_XXS, [MKC_GGML_IQ1_S] = FT_IQ1_S,   [MKC_GGML_IQ1_M] = FT_IQ1_M,
      [MKC_GGML_IQ4_NL] = FT_IQ4_NL,   [MKC_GGML_IQ4_XS] = FT_IQ4_XS, [MKC_GGML_IQ3_S] = FT_IQ3_S,
      [MKC_GGML_NVFP4] = FT_NVFP4,     [MKC_GGML_Q1_0] = FT_Q1_0,     [MKC_GGML_Q2_0] = FT_Q2_0};
  size_t count[MKC_GGML_TYPE_COUNT] = {0}, most = 0;
  uint32_t top = MKC_GGML_F32;
  for (size_t k = 0; k < n; k++)
    if (types[k] < MKC_GGML_TYPE_COUNT && most < ++count[types[k]])
      most = count[types[k]], top = types[k];
  return FT_OF[top] | 1024; /* a type not listed: F32's 0, as llama.cpp's */
}
