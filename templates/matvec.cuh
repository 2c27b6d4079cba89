/* Matrix-vector products over the step's T tokens. A warp owns a row (or a
 * pair of rows); lanes stream the row in 16-byte chunks of 8 bf16 weights and
 * reuse each chunk for all T activation vectors, so verifying drafts costs
 * about one decode step of weight traffic. An optional RMSNorm is fused into
 * the input: x is read raw, scaled by the norm weight per column and by
 * inv_rms[t] after the reduction. */

/* inv_rms[t] = 1 / sqrt(mean(x[t]^2) + eps), computed by every block into smem. */
MKC_DEVICE void mkc_rms_prologue(const float *x, int x_stride, int n, float eps, int T,
                                 float *inv_rms, float *red) {
  for (int t = 0; t < T; t++) {
    float s = 0.0f;
    for (int c = mkc_tid(); c < n; c += MKC_THREADS) {
      float v = x[t * x_stride + c];
      s += v * v;
    }
    s = mkc_block_sum(s, red);
    if (mkc_tid() == 0) inv_rms[t] = 1.0f / sqrtf(s / (float)n + eps);
  }
  mkc_sync_block();
}

MKC_DEVICE void mkc_unpack8(mkc_u4 v, float *f) {
  unsigned u[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; i++) {
    f[2 * i] = mkc_bf16_to_f32((mkc_bf16)(u[i] & 0xffffu));
    f[2 * i + 1] = mkc_bf16_to_f32((mkc_bf16)(u[i] >> 16));
  }
}

/* This lane's partial dot products of one weight row with the T inputs.
 * Rows and inputs are padded to a multiple of 8 with zeros by the buffer plan. */
MKC_DEVICE void mkc_dot_lane(const mkc_bf16 *w, int n_chunks, const float *x, int x_stride,
                             const mkc_bf16 *norm_w, int T, float *acc) {
  for (int t = 0; t < MKC_T_MAX; t++) acc[t] = 0.0f;
  for (int c = mkc_lane(); c < n_chunks; c += 32) {
    float wf[8];
    mkc_unpack8(mkc_load_u4(w + c * 8), wf);
    if (norm_w) {
      float g[8];
      mkc_unpack8(mkc_load_u4(norm_w + c * 8), g);
      for (int i = 0; i < 8; i++) wf[i] *= g[i];
    }
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      mkc_f4 a = mkc_load_f4(x + t * x_stride + c * 8);
      mkc_f4 b = mkc_load_f4(x + t * x_stride + c * 8 + 4);
      acc[t] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x + wf[5] * b.y +
                wf[6] * b.z + wf[7] * b.w;
    }
  }
}

/* Full dot products in every lane: reduce the partials and apply the norm scale. */
MKC_DEVICE void mkc_dot_row(const mkc_bf16 *w, int n_chunks, const float *x, int x_stride,
                            const mkc_bf16 *norm_w, const float *inv_rms, int T, float *acc) {
  mkc_dot_lane(w, n_chunks, x, x_stride, norm_w, T, acc);
  for (int t = 0; t < MKC_T_MAX; t++) {
    if (t >= T) break;
    acc[t] = mkc_warp_sum(acc[t]);
    if (norm_w) acc[t] *= inv_rms[t];
  }
}

/* out[t][r] = W[r] . in[t], or out[t][r] += ... with accumulate (residual epilogue). */
MKC_DEVICE void mkc_matvec(const mkc_bf16 *w, int row_stride, int rows, int n_chunks,
                           const float *x, int x_stride, const mkc_bf16 *norm_w,
                           const float *inv_rms, float *out, int out_stride, int accumulate,
                           int T) {
  float acc[MKC_T_MAX];
  for (int r = mkc_grid_warp(); r < rows; r += mkc_grid_warps()) {
    mkc_dot_row(w + (long)r * row_stride, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    if (mkc_lane() == 0)
      for (int t = 0; t < T; t++) {
        float *o = out + t * out_stride + r;
        *o = accumulate ? *o + acc[t] : acc[t];
      }
  }
}

/* SwiGLU MLP input: out[t][r] = silu(gate[r] . in[t]) * (up[r] . in[t]). */
MKC_DEVICE void mkc_matvec_swiglu(const mkc_bf16 *w_gate, const mkc_bf16 *w_up, int row_stride,
                                  int rows, int n_chunks, const float *x, int x_stride,
                                  const mkc_bf16 *norm_w, const float *inv_rms, float *out,
                                  int out_stride, int T) {
  float g[MKC_T_MAX], u[MKC_T_MAX];
  for (int r = mkc_grid_warp(); r < rows; r += mkc_grid_warps()) {
    mkc_dot_row(w_gate + (long)r * row_stride, n_chunks, x, x_stride, norm_w, inv_rms, T, g);
    mkc_dot_row(w_up + (long)r * row_stride, n_chunks, x, x_stride, norm_w, inv_rms, T, u);
    if (mkc_lane() == 0)
      for (int t = 0; t < T; t++) out[t * out_stride + r] = g[t] / (1.0f + expf(-g[t])) * u[t];
  }
}
