/* Q, K and V projections with, in the epilogue, their biases, the per-head
 * Q/K RMSNorm, RoPE and the KV append. A warp owns a pair of rows: a rotation
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
enum { MKC_ROPE_PLAIN, MKC_ROPE_LINEAR, MKC_ROPE_LLAMA3, MKC_ROPE_YARN };
typedef struct mkc_rope {
  float theta;
  int scaling;                             /* MKC_ROPE_PLAIN, ... */
  float factor;                            /* the context's extension factor */
  float low_freq_factor, high_freq_factor; /* llama3 */
  float orig_ctx;                          /* llama3, yarn: the context before the extension */
  float beta_fast, beta_slow;              /* yarn: the ramp's ends, in rotations */
  float ext_factor, attn_factor;           /* yarn */
} mkc_rope;

MKC_DEVICE mkc_rope mkc_rope_plain(float theta) {
  mkc_rope r = {theta, MKC_ROPE_PLAIN, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
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

/* The pair whose frequency turns `rotations` times in orig_ctx positions. */
MKC_DEVICE float mkc_rope_yarn_dim(float rotations, int head_dim, mkc_rope r) {
  return (float)head_dim * logf(r.orig_ctx / (rotations * 6.28318531f)) / (2.0f * logf(r.theta));
}

/* Pair j's frequency, radians per position, and in *mscale the factor on cos
 * and sin (1 but for YaRN). Computed here from the parameters, per pair. */
MKC_DEVICE float mkc_rope_inv_freq(int j, int head_dim, mkc_rope r, float *mscale) {
  float freq = powf(r.theta, -(float)(2 * j) / (float)head_dim);
  *mscale = 1.0f;
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
  return freq;
}

/* Rotates (a, b), a rotation pair with frequency inv_freq, to position at,
 * scaled by mscale. */
MKC_DEVICE void mkc_rope_pair(float *a, float *b, float inv_freq, float mscale, int at) {
  float angle = (float)at * inv_freq, c = cosf(angle) * mscale, s = sinf(angle) * mscale;
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
                                   const mkc_bf16 *norm_w, float eps, int pos, int T) {
  int half = head_dim / 2;
  for (int t = 0; t < T; t++) {
    float *row = head + (long)t * t_stride;
    float ss = 0.0f;
    for (int i = mkc_lane(); i < head_dim; i += 32) ss += row[i] * row[i];
    /* the sum is a warp exchange: every lane has read the row before any lane writes it */
    float inv_rms = 1.0f / sqrtf(mkc_warp_sum(ss) / (float)head_dim + eps);
    for (int j = mkc_lane(); j < half; j += 32) {
      int i0 = layout ? j : 2 * j, i1 = i0 + (layout ? half : 1);
      float a = row[i0] * inv_rms * mkc_bf16_to_f32(norm_w[i0]);
      float b = row[i1] * inv_rms * mkc_bf16_to_f32(norm_w[i1]);
      float mscale, inv_freq = mkc_rope_inv_freq(j, head_dim, rotary, &mscale);
      mkc_rope_pair(&a, &b, inv_freq, mscale, pos + t);
      if (kv_out) {
        long kv_at = (long)((pos + t) % kv_rows) * head_dim;
        kv_out[kv_at + i0] = mkc_kv_from_f32(a);
        kv_out[kv_at + i1] = mkc_kv_from_f32(b);
      } else {
        row[i0] = a;
        row[i1] = b;
      }
    }
  }
}

MKC_DEVICE void mkc_qkv_rope(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q,
                             const mkc_bf16 *b_k, const mkc_bf16 *b_v, int n_chunks, int heads,
                             int kv_heads, int head_dim, int layout, mkc_rope rotary,
                             const float *x, int x_stride, const mkc_bf16 *norm_w,
                             const float *inv_rms, const mkc_bf16 *q_norm_w,
                             const mkc_bf16 *k_norm_w, float head_eps, unsigned *head_ready,
                             float *q_out, int q_stride, float *k_raw, int k_raw_stride,
                             mkc_kv *k_cache, mkc_kv *v_cache, int kv_rows, int pos, int T) {
  int half = head_dim / 2, q_pairs = heads * half, kv_pairs = kv_heads * half;
  float ab[2 * MKC_T_MAX]; /* the pair's two rows */
  for (int p = mkc_grid_warp(); p < q_pairs + 2 * kv_pairs; p += mkc_grid_warps()) {
    /* the pair's matrix, bias and head norm; its head h, and j-th pair in the head */
    mkc_wmat w = w_q;
    const mkc_bf16 *bias = b_q, *head_w = q_norm_w;
    int pair = p, rope = 1;
    if (p >= q_pairs + kv_pairs) {
      w = w_v;
      bias = b_v;
      head_w = 0;
      pair = p - q_pairs - kv_pairs;
      rope = 0;
    } else if (p >= q_pairs) {
      w = w_k;
      bias = b_k;
      head_w = k_norm_w;
      pair = p - q_pairs;
    }
    int h = pair / half, j = pair - h * half;
    int i0 = rope && layout ? j : 2 * j, i1 = i0 + (rope && layout ? half : 1);
    int r0 = h * head_dim + i0, r1 = h * head_dim + i1;
    mkc_wrow wr[2] = {mkc_wmat_row(w, r0), mkc_wmat_row(w, r1)};
    /* this warp's next pair lies about as many rows on, in the same matrix if any: prefetch */
    mkc_wrow next[2] = {mkc_wrow_none(), mkc_wrow_none()};
    int ahead = mkc_grid_warps() * (rope && layout ? 1 : 2);
    if (r1 + ahead < (p < q_pairs ? heads : kv_heads) * head_dim) {
      next[0] = mkc_wmat_row(w, r0 + ahead);
      next[1] = mkc_wmat_row(w, r1 + ahead);
    }
    mkc_prefetch_rows(next, 2);
    mkc_dot_rows(wr, 2, n_chunks, x, x_stride, norm_w, inv_rms, T, ab);
    /* token 0's row of the head: in float, q (and a k waiting for its norm) in scratch; else
     * the head of k, v in the cache ([kv_head][kv_rows][head_dim]) */
    mkc_kv *cache = 0;
    if (p >= q_pairs)
      cache = (p < q_pairs + kv_pairs ? k_cache : v_cache) + (long)h * kv_rows * head_dim;
    float *head = p < q_pairs ? q_out + h * head_dim : head_w ? k_raw + h * head_dim : 0;
    int t_stride = p < q_pairs ? q_stride : k_raw_stride;
    if (mkc_lane() == 0) {
      float bias0 = bias ? mkc_bf16_to_f32(bias[r0]) : 0.0f;
      float bias1 = bias ? mkc_bf16_to_f32(bias[r1]) : 0.0f;
      float mscale = 1.0f;
      float inv_freq = rope && !head_w ? mkc_rope_inv_freq(j, head_dim, rotary, &mscale) : 0.0f;
      for (int t = 0; t < MKC_T_MAX; t++) {
        if (t >= T) break;
        float ra = ab[t] + bias0, rb = ab[MKC_T_MAX + t] + bias1;
        if (rope && !head_w) mkc_rope_pair(&ra, &rb, inv_freq, mscale, pos + t);
        if (head) {
          head[(long)t * t_stride + i0] = ra;
          head[(long)t * t_stride + i1] = rb;
        } else {
          long kv_at = (long)((pos + t) % kv_rows) * head_dim;
          cache[kv_at + i0] = mkc_kv_from_f32(ra);
          cache[kv_at + i1] = mkc_kv_from_f32(rb);
        }
      }
    }
    if (!head_w) continue;
    /* per-head norm: the raw pair is out; count it, and the head's last pair finishes the head */
    mkc_sync_warp(); /* every lane's part of the pair, ordered before lane 0's release */
    int last = 0;
    if (mkc_lane() == 0) {
      unsigned *ready = head_ready + (p < q_pairs ? h : heads + h);
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
    mkc_head_norm_rope(head, t_stride, cache, kv_rows, head_dim, layout, rotary, head_w, head_eps,
                       pos, T);
  }
}
