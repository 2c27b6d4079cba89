/* Q, K and V projections with RoPE and the KV append in the epilogue. A warp
 * owns a pair of rows: a rotation pair of Q or K (interleaved: 2j, 2j+1 of a
 * head; neox: j, j + head_dim/2), or two adjacent rows of V. K and V for
 * token t land in the cache at position pos + t; q goes to scratch. */
MKC_DEVICE void mkc_rope_rows(int pair, int head_dim, int layout, int *r0, int *r1, int *j) {
  int half = head_dim / 2, h = pair / half;
  *j = pair - h * half;
  *r0 = h * head_dim + (layout ? *j : 2 * *j);
  *r1 = *r0 + (layout ? half : 1);
}

MKC_DEVICE void mkc_qkv_rope(const mkc_bf16 *w_q, const mkc_bf16 *w_k, const mkc_bf16 *w_v,
                             int row_stride, int n_chunks, int heads, int kv_heads, int head_dim,
                             int layout, float theta, const float *x, int x_stride,
                             const mkc_bf16 *norm_w, const float *inv_rms, float *q_out,
                             int q_stride, float *k_cache, float *v_cache, int max_ctx, int pos,
                             int T) {
  int q_pairs = heads * head_dim / 2, kv_pairs = kv_heads * head_dim / 2;
  float a[MKC_T_MAX], b[MKC_T_MAX];
  for (int p = mkc_grid_warp(); p < q_pairs + 2 * kv_pairs; p += mkc_grid_warps()) {
    int r0, r1, j = -1;
    const mkc_bf16 *w;
    if (p < q_pairs) {
      w = w_q;
      mkc_rope_rows(p, head_dim, layout, &r0, &r1, &j);
    } else if (p < q_pairs + kv_pairs) {
      w = w_k;
      mkc_rope_rows(p - q_pairs, head_dim, layout, &r0, &r1, &j);
    } else {
      w = w_v;
      r0 = 2 * (p - q_pairs - kv_pairs);
      r1 = r0 + 1;
    }
    mkc_dot_row(w + (long)r0 * row_stride, n_chunks, x, x_stride, norm_w, inv_rms, T, a);
    mkc_dot_row(w + (long)r1 * row_stride, n_chunks, x, x_stride, norm_w, inv_rms, T, b);
    if (mkc_lane() != 0) continue;
    float inv_freq = j >= 0 ? powf(theta, -(float)(2 * j) / (float)head_dim) : 0.0f;
    for (int t = 0; t < T; t++) {
      float ra = a[t], rb = b[t];
      if (j >= 0) {
        float angle = (float)(pos + t) * inv_freq, c = cosf(angle), s = sinf(angle);
        ra = a[t] * c - b[t] * s;
        rb = a[t] * s + b[t] * c;
      }
      if (p < q_pairs) {
        q_out[t * q_stride + r0] = ra;
        q_out[t * q_stride + r1] = rb;
      } else {
        /* cache rows are [kv_head][max_ctx][head_dim] */
        float *cache = p < q_pairs + kv_pairs ? k_cache : v_cache;
        int kvh = r0 / head_dim;
        float *row = cache + ((long)kvh * max_ctx + pos + t) * head_dim;
        row[r0 - kvh * head_dim] = ra;
        row[r1 - kvh * head_dim] = rb;
      }
    }
  }
}
