/* Q, K and V projections with, in the epilogue, their biases, the per-head
 * Q/K RMSNorm, RoPE and the KV append. A warp owns pairs of rows: a rotation
 * pair of Q or K (interleaved: 2j, 2j+1 of a head; neox: j, j + head_dim/2),
 * or two adjacent rows of V. K and V for token t land in the cache at
 * position pos + t, row (pos + t) % kv_rows (kv_rows = max_ctx, or a sliding
 * window's ring), rounded to the cache's type; q goes to scratch. A null
 * bias or head norm is absent.
 *
 * A per-head norm needs the whole head before RoPE, and a head's pairs are
 * spread over the grid: each warp writes its pair raw (bias added) in float,
 * q in place, k to k_raw in scratch, and counts it in head_ready[head] (q
 * heads, then kv heads); the warp that completes a head normalizes and
 * rotates it (q in place, k into the cache) and sets the counter back to
 * zero for the next layer. No grid barrier, and every warp keeps a pair to
 * do. K waits in float so that it is rounded once, after the norm. */

/* RoPE as the model was trained with it: the base theta and, for a model
 * stretched past the context it was first trained on, the scaling
 * (docs/MODELS.md), made by one of the mkc_rope_* functions below. */
enum {
  MKC_ROPE_PLAIN,
  MKC_ROPE_LINEAR,
  MKC_ROPE_LLAMA3,
  MKC_ROPE_YARN,
  MKC_ROPE_LONGROPE,
  MKC_ROPE_NONE
};
typedef struct mkc_rope {
  float theta;
  int scaling;                             /* MKC_ROPE_PLAIN, ... */
  float factor;                            /* the context's extension factor */
  float low_freq_factor, high_freq_factor; /* llama3 */
  float orig_ctx;                          /* llama3, yarn: the context before the extension */
  float beta_fast, beta_slow;              /* yarn: the ramp's ends, in rotations */
  float ext_factor, attn_factor;           /* yarn; longrope: attn_factor */
  const float *factors;                    /* longrope: each pair's frequency divisor */
  int rot_dim; /* the dims rotated, the first ones (0: all); the others pass through */
} mkc_rope;

MKC_DEVICE mkc_rope mkc_rope_plain(float theta) {
  mkc_rope r = {theta, MKC_ROPE_PLAIN, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0, 0};
  return r;
}

/* A NoPE layer's (SmolLM3's every 4th): every pair's frequency 0, so q and k pass as they are. */
MKC_DEVICE mkc_rope mkc_rope_none(void) {
  mkc_rope r = mkc_rope_plain(1.0f);
  r.scaling = MKC_ROPE_NONE;
  return r;
}

/* Positions divided by factor. */
MKC_DEVICE mkc_rope mkc_rope_linear(float theta, float factor) {
  mkc_rope r = mkc_rope_plain(theta);
  r.scaling = MKC_ROPE_LINEAR;
  r.factor = factor;
  return r;
}

/* Llama 3.1+: frequencies whose wavelength is below orig_ctx / high_freq_factor
 * kept, above orig_ctx / low_freq_factor divided by factor, a smooth mix between. */
MKC_DEVICE mkc_rope mkc_rope_llama3(float theta, float factor, float low_freq_factor,
                                    float high_freq_factor, float orig_ctx) {
  mkc_rope r = mkc_rope_linear(theta, factor);
  r.scaling = MKC_ROPE_LLAMA3;
  r.low_freq_factor = low_freq_factor;
  r.high_freq_factor = high_freq_factor;
  r.orig_ctx = orig_ctx;
  return r;
}

/* YaRN as llama.cpp's ggml_rope_ext computes it: frequencies that turn more
 * than beta_fast times in orig_ctx kept, fewer than beta_slow divided by
 * factor, a linear ramp over the pairs between (times ext_factor); cos and
 * sin scaled by attn_factor * (1 + 0.1 ln factor). */
MKC_DEVICE mkc_rope mkc_rope_yarn(float theta, float factor, float orig_ctx, float beta_fast,
                                  float beta_slow, float ext_factor, float attn_factor) {
  mkc_rope r = mkc_rope_linear(theta, factor);
  r.scaling = MKC_ROPE_YARN;
  r.orig_ctx = orig_ctx;
  r.beta_fast = beta_fast;
  r.beta_slow = beta_slow;
  r.ext_factor = ext_factor;
  r.attn_factor = attn_factor;
  return r;
}

/* LongRoPE (Phi-3's 128k models): pair j's frequency divided by factors[j] (the model's short or
 * long list, the kernel's table), cos and sin scaled by attn_factor. */
MKC_DEVICE mkc_rope mkc_rope_longrope(float theta, float attn_factor, const float *factors) {
  mkc_rope r = mkc_rope_plain(theta);
  r.scaling = MKC_ROPE_LONGROPE;
  r.attn_factor = attn_factor;
  r.factors = factors;
  return r;
}

/* Partial RoPE (Phi-4-mini, GPT-NeoX): r over the first rot_dim dims of a head, each frequency
 * theta^(-2j / rot_dim); the dims past them are not rotated. */
MKC_DEVICE mkc_rope mkc_rope_partial(mkc_rope r, int rot_dim) {
  r.rot_dim = rot_dim;
  return r;
}

/* A head's rotation pair j as its two dims: neox (rotate-half) j, j + rot_dim / 2, interleaved
 * 2j, 2j + 1; past the rotated dims, 2j, 2j + 1 in either layout. */
MKC_DEVICE int mkc_rope_dim0(int j, int head_dim, int layout, mkc_rope r) {
  int rot = r.rot_dim ? r.rot_dim : head_dim;
  return layout && 2 * j < rot ? j : 2 * j;
}
MKC_DEVICE int mkc_rope_dim1(int j, int head_dim, int layout, mkc_rope r) {
  int rot = r.rot_dim ? r.rot_dim : head_dim;
  return layout && 2 * j < rot ? j + rot / 2 : 2 * j + 1;
}

/* The pair whose frequency turns `rotations` times in orig_ctx positions (dims: the rotated). */
MKC_DEVICE float mkc_rope_yarn_dim(float rotations, int head_dim, mkc_rope r) {
  return (float)head_dim * logf(r.orig_ctx / (rotations * 6.28318531f)) / (2.0f * logf(r.theta));
}

/* Pair j's frequency, radians per position, and in *mscale the factor on cos
 * and sin (1 but for YaRN and LongRoPE). Computed here from the parameters, per pair.
 * A pair past the rotated dims gets 0 and 1: mkc_rope_pair leaves it as it is. */
MKC_DEVICE float mkc_rope_inv_freq(int j, int head_dim, mkc_rope r, float *mscale) {
  *mscale = 1.0f;
  if (r.scaling == MKC_ROPE_NONE) return 0.0f;
  if (r.rot_dim) {
    if (2 * j >= r.rot_dim) return 0.0f;
    head_dim = r.rot_dim;
  }
  float freq = powf(r.theta, -(float)(2 * j) / (float)head_dim);
  if (r.scaling == MKC_ROPE_LINEAR) return freq / r.factor;
  if (r.scaling == MKC_ROPE_LLAMA3) {
    float wavelen = 6.28318531f / freq;
    if (wavelen < r.orig_ctx / r.high_freq_factor) return freq;
    if (wavelen > r.orig_ctx / r.low_freq_factor) return freq / r.factor;
    float smooth =
        (r.orig_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    return (1.0f - smooth) * freq / r.factor + smooth * freq;
  }
  if (r.scaling == MKC_ROPE_YARN) {
    float lo = fmaxf(0.0f, floorf(mkc_rope_yarn_dim(r.beta_fast, head_dim, r)));
    float hi = fminf((float)(head_dim - 1), ceilf(mkc_rope_yarn_dim(r.beta_slow, head_dim, r)));
    float ramp = 1.0f - fminf(1.0f, fmaxf(0.0f, ((float)j - lo) / fmaxf(0.001f, hi - lo)));
    float kept = ramp * r.ext_factor; /* the share of the unscaled frequency */
    *mscale = r.ext_factor != 0.0f ? r.attn_factor * (1.0f + 0.1f * logf(r.factor)) : r.attn_factor;
    return freq / r.factor * (1.0f - kept) + freq * kept;
  }
  if (r.scaling == MKC_ROPE_LONGROPE) {
    *mscale = r.attn_factor;
    return freq / r.factors[j];
  }
  return freq;
}

/* Rotates (a, b), a rotation pair with frequency inv_freq, to position at,
 * scaled by mscale. */
MKC_DEVICE void mkc_rope_pair(float *a, float *b, float inv_freq, float mscale, int at) {
  /* the angle in turns, whole turns taken off in double (at * inv_freq is exact there),
   * then sine and cosine of what is left in half-turns: more exact than sinf of the
   * float product, and no large-argument path (sinf's keeps a local array) */
  double turns = (double)at * (double)inv_freq * 0.15915494309189533577;
  float half_turns = (float)(2.0 * (turns - rint(turns))), s, c;
  mkc_sincospif(half_turns, &s, &c);
  c *= mscale;
  s *= mscale;
  float ra = *a * c - *b * s, rb = *a * s + *b * c;
  *a = ra;
  *b = rb;
}

/* RMSNorm of one head's T rows (token t's row at head + t * t_stride), scaled
 * by norm_w, then RoPE at pos + t; written in place, or, with kv_out, to the
 * cache (token t's row at row (pos + t) % kv_rows of kv_out). The whole warp:
 * lanes over the elements for the sum of squares, then over the rotation
 * pairs. */
MKC_DEVICE void mkc_head_norm_rope(float *head, int t_stride, mkc_kv *kv_out, int kv_rows,
                                   int head_dim, int layout, mkc_rope rotary,
                                   const mkc_bf16 *norm_w, float eps, int pos, int T,
                                   const mkc_rowmap *rows) {
  int half = head_dim / 2;
  for (int t = 0; t < T; t++) {
    float *row = head + (long)t * t_stride;
    float ss = 0.0f;
    for (int i = mkc_lane(); i < head_dim; i += 32) ss += row[i] * row[i];
    /* the sum is a warp exchange: every lane has read the row before any lane writes it */
    float inv_rms = 1.0f / sqrtf(mkc_warp_sum(ss) / (float)head_dim + eps);
    for (int j = mkc_lane(); j < half; j += 32) {
      int i0 = mkc_rope_dim0(j, head_dim, layout, rotary);
      int i1 = mkc_rope_dim1(j, head_dim, layout, rotary);
      float a = row[i0] * inv_rms * mkc_bf16_to_f32(norm_w[i0]);
      float b = row[i1] * inv_rms * mkc_bf16_to_f32(norm_w[i1]);
      float mscale, inv_freq = mkc_rope_inv_freq(j, head_dim, rotary, &mscale);
      int at = mkc_row_pos(rows, pos, t);
      mkc_rope_pair(&a, &b, inv_freq, mscale, at);
      if (kv_out) {
        long kv_at = mkc_kv_at(rows, t, at, kv_rows, head_dim);
        kv_out[kv_at + i0] = mkc_kv_from_f32(a);
        kv_out[kv_at + i1] = mkc_kv_from_f32(b);
      } else {
        row[i0] = a;
        row[i1] = b;
      }
    }
  }
}

/* Pair p of the stage (q pairs, then k's, then v's): its matrix, bias and
 * head norm, its head h and j-th pair in the head, its two rows. */
typedef struct mkc_qkv_pair {
  mkc_wmat w;
  const mkc_bf16 *bias, *head_w;
  int kind; /* 0 q, 1 k, 2 v: v is not rotated */
  int h, j, i0, i1, r0, r1;
} mkc_qkv_pair;

MKC_DEVICE mkc_qkv_pair mkc_qkv_pair_at(int p, mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v,
                                        const mkc_bf16 *b_q, const mkc_bf16 *b_k,
                                        const mkc_bf16 *b_v, const mkc_bf16 *q_norm_w,
                                        const mkc_bf16 *k_norm_w, int q_pairs, int kv_pairs,
                                        int head_dim, int layout, mkc_rope rotary) {
  mkc_qkv_pair q;
  int half = head_dim / 2, pair = p;
  q.w = w_q;
  q.bias = b_q;
  q.head_w = q_norm_w;
  q.kind = 0;
  if (p >= q_pairs + kv_pairs) {
    q.w = w_v;
    q.bias = b_v;
    q.head_w = 0;
    q.kind = 2;
    pair = p - q_pairs - kv_pairs;
  } else if (p >= q_pairs) {
    q.w = w_k;
    q.bias = b_k;
    q.head_w = k_norm_w;
    q.kind = 1;
    pair = p - q_pairs;
  }
  q.h = pair / half;
  q.j = pair - q.h * half;
  q.i0 = q.kind != 2 ? mkc_rope_dim0(q.j, head_dim, layout, rotary) : 2 * q.j;
  q.i1 = q.kind != 2 ? mkc_rope_dim1(q.j, head_dim, layout, rotary) : 2 * q.j + 1;
  q.r0 = q.h * head_dim + q.i0;
  q.r1 = q.h * head_dim + q.i1;
  return q;
}

/* Input t's pair (ra, rb) of q, biases added: rotated to its position
 * (unless it is v's or its head norm waits) and stored, in float at head
 * (rows t_stride apart) or else in the cache. */
MKC_DEVICE void mkc_qkv_store(mkc_qkv_pair q, float ra, float rb, float inv_freq, float mscale,
                              int t, int pos, const mkc_rowmap *rows, float *head, int t_stride,
                              mkc_kv *cache, int kv_rows, int head_dim) {
  int at = mkc_row_pos(rows, pos, t);
  if (q.kind != 2 && !q.head_w) mkc_rope_pair(&ra, &rb, inv_freq, mscale, at);
  if (head) {
    head[(long)t * t_stride + q.i0] = ra;
    head[(long)t * t_stride + q.i1] = rb;
  } else {
    long kv_at = mkc_kv_at(rows, t, at, kv_rows, head_dim);
    cache[kv_at + q.i0] = mkc_kv_from_f32(ra);
    cache[kv_at + q.i1] = mkc_kv_from_f32(rb);
  }
}

/* A warp takes MKC_QKV_PAIRS pairs at once (MKC_ROWS rows, as a matvec does):
 * their chunks load together and reduce in one warp sum. Where it pays (few
 * pairs for the grid), a block takes them, its warps split the columns
 * (mkc_split_dot; part: its smem) and warp 0 finishes the pairs. */
#define MKC_QKV_PAIRS (MKC_ROWS / 2)

/* Task t of n_pairs: a warp's MKC_QKV_PAIRS from t * MKC_QKV_PAIRS, or where it splits a
 * block's (mkc_split_task). Its first pair into *p0, and how many (0: none, nor later). */
MKC_DEVICE int mkc_qkv_task(int n_pairs, int split, int t, int *p0) {
  if (split) return mkc_split_task(n_pairs, MKC_QKV_PAIRS, t, p0);
  *p0 = t * MKC_QKV_PAIRS;
  int n = n_pairs - *p0;
  return n < MKC_QKV_PAIRS ? (n > 0 ? n : 0) : MKC_QKV_PAIRS;
}

#if MKC_MMA_DECODE
/* mkc_qkv_rope on tensor cores (templates/matvec.cuh) where all three
 * matrices are bf16: a warp takes 4 pairs as one n-tile, pair k's rows at 2k
 * and 2k + 1, so lane (g, q) holds pair q of input 8m + g whole, and rotates
 * and stores it itself. With head norms the raw pair is stored instead, lane
 * (0, q) counts pair q, and the warp finishes each head whose last pair it
 * counted (mkc_head_norm_rope). */
MKC_DEVICE void mkc_qkv_rope_mma(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q,
                                 const mkc_bf16 *b_k, const mkc_bf16 *b_v, int n_chunks, int heads,
                                 int kv_heads, int head_dim, int layout, mkc_rope rotary,
                                 const float *x, int x_stride, const mkc_bf16 *norm_w,
                                 const float *inv_rms, const mkc_bf16 *q_norm_w,
                                 const mkc_bf16 *k_norm_w, float head_eps, unsigned *head_ready,
                                 float *q_out, int q_stride, float *k_raw, int k_raw_stride,
                                 mkc_kv *k_cache, mkc_kv *v_cache, int kv_rows, int pos, int T,
                                 const mkc_rowmap *rows, float *splitk) {
  int half = head_dim / 2, q_pairs = heads * half, kv_pairs = kv_heads * half;
  int n_pairs = q_pairs + 2 * kv_pairs, S = mkc_splitk_of((n_pairs + 3) / 4, splitk);
  int g = mkc_lane() >> 2, qd = mkc_lane() & 3;
  /* a task: a warp's 4 pairs, or slice t % S of group t / S (split-K, templates/matvec.cuh) */
  int tasks = S > 1 ? (n_pairs + 3) / 4 * S : n_pairs, each = S > 1 ? 1 : 4;
  int step = mkc_grid_warps() * each;
  for (int t0 = mkc_grid_warp() * each; t0 < tasks; t0 += step) {
    int p0 = S > 1 ? t0 / S * 4 : t0, pn0 = S > 1 ? (t0 + step) / S * 4 : t0 + step;
    mkc_wrow wr[8], next[8];
    for (int k = 0; k < 4; k++) {
      int p = p0 + k, pn = pn0 + k; /* pn: the pair this warp takes next in place of p */
      wr[2 * k] = wr[2 * k + 1] = next[2 * k] = next[2 * k + 1] = mkc_wrow_none();
      if (p < n_pairs) {
        mkc_qkv_pair pq = mkc_qkv_pair_at(p, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        wr[2 * k] = mkc_wmat_row(pq.w, pq.r0);
        wr[2 * k + 1] = mkc_wmat_row(pq.w, pq.r1);
      }
      if (pn < n_pairs) {
        mkc_qkv_pair nq = mkc_qkv_pair_at(pn, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        next[2 * k] = mkc_wmat_row(nq.w, nq.r0);
        next[2 * k + 1] = mkc_wmat_row(nq.w, nq.r1);
      }
    }
    float o[MKC_MV_MT * 2];
    if (!mkc_mma_task(wr, next, 1, n_chunks, x, x_stride, norm_w, T, S, 0, t0, t0 + step, 0, splitk,
                      o))
      continue;
    int valid = p0 + qd < n_pairs;
    mkc_qkv_pair q = mkc_qkv_pair_at(valid ? p0 + qd : 0, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w,
                                     k_norm_w, q_pairs, kv_pairs, head_dim, layout, rotary);
    /* q in float in scratch (raw where its norm waits, as a k waiting for its norm); else k and v
     * in the cache ([kv_head][kv_rows][head_dim]) */
    mkc_kv *cache = q.kind ? (q.kind == 1 ? k_cache : v_cache) + (long)q.h * kv_rows * head_dim : 0;
    float *head = q.kind == 0 ? q_out + q.h * head_dim : q.head_w ? k_raw + q.h * head_dim : 0;
    int t_stride = q.kind == 0 ? q_stride : k_raw_stride;
    float bias0 = q.bias ? mkc_bf16_to_f32(q.bias[q.r0]) : 0.0f;
    float bias1 = q.bias ? mkc_bf16_to_f32(q.bias[q.r1]) : 0.0f;
    float mscale = 1.0f;
    float inv_freq =
        q.kind != 2 && !q.head_w ? mkc_rope_inv_freq(q.j, head_dim, rotary, &mscale) : 0.0f;
    for (int m = 0; m < MKC_MV_MT; m++) { /* compile-time bounds: o stays in registers */
      int t = 8 * m + g;
      if (!valid || t >= T) continue;
      float ra = (norm_w ? o[m * 2] * inv_rms[t] : o[m * 2]) + bias0;
      float rb = (norm_w ? o[m * 2 + 1] * inv_rms[t] : o[m * 2 + 1]) + bias1;
      mkc_qkv_store(q, ra, rb, inv_freq, mscale, t, pos, rows, head, t_stride, cache, kv_rows,
                    head_dim);
    }
    if (!q_norm_w && !k_norm_w) continue;
    /* head norms: count each pair; a head's last pair finishes it */
    mkc_sync_warp(); /* every input's part of the pairs written before they are released */
    int last = 0;
    if (g == 0 && valid && q.head_w) {
      unsigned *ready = head_ready + (q.kind == 0 ? q.h : heads + q.h);
      mkc_fence(); /* release: the pair is visible before it is counted */
      last = mkc_atomic_add_u32(ready, 1u) + 1u == (unsigned)half;
      if (last) {
        mkc_fence(); /* acquire: the head's other pairs, counted before ours */
        mkc_store_u32(ready, 0u);
      }
    }
    /* a shuffle orders nothing: the counting lanes' acquire comes before the others read */
    mkc_sync_warp();
    for (int k = 0; k < 4; k++) {
      if (!mkc_warp_or(last && qd == k)) continue;
      mkc_qkv_pair f = mkc_qkv_pair_at(p0 + k, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                       q_pairs, kv_pairs, head_dim, layout, rotary);
      mkc_kv *f_cache = f.kind ? k_cache + (long)f.h * kv_rows * head_dim : 0;
      float *f_head = f.kind == 0 ? q_out + f.h * head_dim : k_raw + f.h * head_dim;
      mkc_head_norm_rope(f_head, f.kind == 0 ? q_stride : k_raw_stride, f_cache, kv_rows, head_dim,
                         layout, rotary, f.head_w, head_eps, pos, T, rows);
    }
  }
}
#endif

MKC_DEVICE void mkc_qkv_rope(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q,
                             const mkc_bf16 *b_k, const mkc_bf16 *b_v, int n_chunks, int heads,
                             int kv_heads, int head_dim, int layout, mkc_rope rotary,
                             const float *x, int x_stride, const mkc_bf16 *norm_w, float *inv_rms,
                             int n_x, float eps, float *red, const mkc_bf16 *q_norm_w,
                             const mkc_bf16 *k_norm_w, float head_eps, unsigned *head_ready,
                             float *q_out, int q_stride, float *k_raw, int k_raw_stride,
                             mkc_kv *k_cache, mkc_kv *v_cache, int kv_rows, int pos, int T,
                             const mkc_rowmap *rows, float *part, float *splitk) {
  int half = head_dim / 2, q_pairs = heads * half, kv_pairs = kv_heads * half;
  /* per-head norms (qwen3) keep the warp path: split, their kernel spilled at T = 8 */
  int n_pairs = q_pairs + 2 * kv_pairs;
  int mma =
      MKC_MMA_DECODE && w_q.type == MKC_W_BF16 && w_k.type == MKC_W_BF16 && w_v.type == MKC_W_BF16;
  int split = !mma && !q_norm_w && !k_norm_w && mkc_split_pays(2 * n_pairs);
  mkc_norm_first(x, x_stride, norm_w, n_x, eps, T, inv_rms, red, split);
#if MKC_MMA_DECODE
  if (mma) {
    mkc_qkv_rope_mma(w_q, w_k, w_v, b_q, b_k, b_v, n_chunks, heads, kv_heads, head_dim, layout,
                     rotary, x, x_stride, norm_w, inv_rms, q_norm_w, k_norm_w, head_eps, head_ready,
                     q_out, q_stride, k_raw, k_raw_stride, k_cache, v_cache, kv_rows, pos, T, rows,
                     splitk);
    return;
  }
#endif
  (void)splitk;
  /* task t: a warp's MKC_QKV_PAIRS pairs from t * MKC_QKV_PAIRS, or a block's (mkc_split_task) */
  int tasks = split ? mkc_nblocks() : mkc_grid_warps(), t0 = split ? mkc_bid() : mkc_grid_warp();
  int p0, pn0, n = mkc_qkv_task(n_pairs, split, t0, &p0);
  float ab[2 * MKC_QKV_PAIRS * MKC_T_MAX]; /* the pairs' rows: pair k's at 2k and 2k + 1 */
  for (int task = t0, nn; n > 0; task += tasks, p0 = pn0, n = nn) {
    nn = mkc_qkv_task(n_pairs, split, task + tasks, &pn0);
    mkc_qkv_pair pr[MKC_QKV_PAIRS];
    mkc_wrow wr[2 * MKC_QKV_PAIRS], next[2 * MKC_QKV_PAIRS];
    int lane0 = !q_norm_w && !k_norm_w; /* without head norms only lane 0 writes */
    /* the CPU: the sums another lane made, and no rows to build */
    int made = !split && mkc_dot_rows_ready(2 * MKC_QKV_PAIRS, norm_w, inv_rms, T, ab, lane0);
#ifdef MKC_CPU
    if (made && lane0 && mkc_lane() != 0) continue; /* nor anything to write */
#endif
    for (int k = 0; k < MKC_QKV_PAIRS; k++) {
      int p = p0 + k; /* pn0 + k: the pair this warp takes next in place of p */
      pr[k] = mkc_qkv_pair_at(k < n ? p : 0, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                              q_pairs, kv_pairs, head_dim, layout, rotary);
      if (made) continue;
      wr[2 * k] = k < n ? mkc_wmat_row(pr[k].w, pr[k].r0) : mkc_wrow_none_of(pr[k].w.type);
      wr[2 * k + 1] = k < n ? mkc_wmat_row(pr[k].w, pr[k].r1) : mkc_wrow_none_of(pr[k].w.type);
      next[2 * k] = mkc_wrow_none(); /* each its own (a copy of the other stalled the CPU) */
      next[2 * k + 1] = mkc_wrow_none();
      if (k < nn) {
        mkc_qkv_pair nq = mkc_qkv_pair_at(pn0 + k, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        next[2 * k] = mkc_wmat_row(nq.w, nq.r0);
        next[2 * k + 1] = mkc_wmat_row(nq.w, nq.r1);
      }
    }
    if (split) {
      mkc_split_dot(wr, next, 2 * MKC_QKV_PAIRS, n_chunks, x, x_stride, norm_w, n_x, eps, T, part,
                    ab);
      if (mkc_warp() != 0) continue; /* warp 0 finishes the block's pairs */
      const float *sums = part + MKC_WARPS * 2 * MKC_QKV_PAIRS * MKC_T_MAX;
      for (int i = 0; i < 2 * MKC_QKV_PAIRS * MKC_T_MAX; i++) ab[i] = sums[i];
    } else if (!made) {
      mkc_dot_rows(wr, next, 2 * MKC_QKV_PAIRS, n_chunks, x, x_stride, norm_w, inv_rms, T, ab);
    }
    for (int k = 0; k < MKC_QKV_PAIRS; k++) {
      if (k >= n) break;
      mkc_qkv_pair q = pr[k];
      const float *ra_t = ab + 2 * k * MKC_T_MAX, *rb_t = ab + (2 * k + 1) * MKC_T_MAX;
      /* token 0's row of the head: in float, q (and a k waiting for its norm) in scratch;
       * else the head of k, v in the cache ([kv_head][kv_rows][head_dim]) */
      mkc_kv *cache = 0;
      if (q.kind) cache = (q.kind == 1 ? k_cache : v_cache) + (long)q.h * kv_rows * head_dim;
      float *head = q.kind == 0 ? q_out + q.h * head_dim : q.head_w ? k_raw + q.h * head_dim : 0;
      int t_stride = q.kind == 0 ? q_stride : k_raw_stride;
      if (mkc_lane() == 0) {
        float bias0 = q.bias ? mkc_bf16_to_f32(q.bias[q.r0]) : 0.0f;
        float bias1 = q.bias ? mkc_bf16_to_f32(q.bias[q.r1]) : 0.0f;
        float mscale = 1.0f;
        float inv_freq =
            q.kind != 2 && !q.head_w ? mkc_rope_inv_freq(q.j, head_dim, rotary, &mscale) : 0.0f;
        for (int t = 0; t < MKC_T_MAX; t++) {
          if (t >= T) break;
          float ra = ra_t[t] + bias0, rb = rb_t[t] + bias1;
          mkc_qkv_store(q, ra, rb, inv_freq, mscale, t, pos, rows, head, t_stride, cache, kv_rows,
                        head_dim);
        }
      }
      if (!q.head_w) continue;
      /* per-head norm: the raw pair is out; count it, and the head's last pair finishes it */
      mkc_sync_warp(); /* every lane's part of the pair, ordered before lane 0's release */
      int last = 0;
      if (mkc_lane() == 0) {
        unsigned *ready = head_ready + (q.kind == 0 ? q.h : heads + q.h);
        mkc_fence(); /* release: the pair is visible before it is counted */
        last = mkc_atomic_add_u32(ready, 1u) + 1u == (unsigned)half;
        if (last) {
          mkc_fence(); /* acquire: the other warps' pairs, counted before ours */
          mkc_store_u32(ready, 0u);
        }
      }
      /* A shuffle orders nothing: the warp synchronizes so lane 0's acquire comes before
       * the other lanes read what the other warps wrote. */
      mkc_sync_warp();
      if (!mkc_warp_or(last)) continue;
      mkc_head_norm_rope(head, t_stride, cache, kv_rows, head_dim, layout, rotary, q.head_w,
                         head_eps, pos, T, rows);
    }
  }
}
