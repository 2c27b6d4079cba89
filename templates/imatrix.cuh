/* mkc imatrix's kernel (mkc_gen_opts.imatrix; spliced only there): a matmul stage's input as its
 * matmuls read it, normed where the stage norms it (x / rms(x) * norm_w, the fused prologue's
 * formula), squared and added over the step's T inputs into acc, column by column. Lane c of
 * grid warp w owns column 32 w + c: one writer a column and one order, so no atomics and the same
 * sums run to run. A warp finds each input's rms itself (its own pass over the row: the cost is
 * the imatrix kernel's, not a decode kernel's), with shuffles only, no barrier. */

/* Input t's 1 / rms (1 without a norm): the whole warp, every lane the same. */
MKC_DEVICE float mkc_imatrix_inv_rms(const float *xt, int n, const mkc_bf16 *norm_w, float eps) {
  if (!norm_w) return 1.0f;
  float ss = 0.0f;
  for (int i = mkc_lane(); i < n; i += 32) ss += xt[i] * xt[i];
  return 1.0f / sqrtf(mkc_warp_sum(ss) / (float)n + eps);
}

/* The stage's inputs into acc[0 .. n). With a router (a MOE node's first stage, mkc_moe_up's):
 * also into expert e's slice acc[n + e n ..) for each expert the input runs, chosen from the same
 * scores by the same function as mkc_moe_up's (mkc_moe_choose); column 0's lane counts each
 * expert's inputs in acc[n + E n + e]. */
MKC_DEVICE void mkc_imatrix_add(const float *x, int x_stride, int n, const mkc_bf16 *norm_w,
                                float eps, const float *router, int r_stride, int E, int K,
                                int norm_topk, int T, float *acc) {
  (void)r_stride, (void)E, (void)K, (void)norm_topk;
  for (int c0 = mkc_grid_warp() * 32; c0 < n; c0 += mkc_grid_warps() * 32) {
    const int c = c0 + mkc_lane();
    const float w = norm_w && c < n ? mkc_bf16_to_f32(norm_w[c]) : 1.0f;
    float sum = 0.0f;
    for (int t = 0; t < T; t++) {
      const float *xt = x + t * x_stride;
      const float inv = mkc_imatrix_inv_rms(xt, n, norm_w, eps);
      const float v = c < n ? xt[c] * inv * w : 0.0f;
      sum += v * v;
#ifdef MKC_MOE_K
      if (router) {
        float *experts = acc + n, *counts = experts + (long)E * n;
        float ids[MKC_MOE_K], wts[MKC_MOE_K];
        mkc_moe_choose(router + (long)t * r_stride, E, K, norm_topk, ids, wts);
        for (int k = 0; c < n && k < K; k++) experts[(long)ids[k] * n + c] += v * v;
        for (int k = 0; c == 0 && k < K; k++) counts[(int)ids[k]] += 1.0f;
      }
#endif
    }
    if (c < n) acc[c] += sum;
  }
}

#ifdef MKC_MOE_K
/* A MOE node's second stage (mkc_moe_down's): each input's k-th expert's hidden row hidden[t][k ffn
 * ..), squared into that expert's slice acc[e ffn ..), the experts as mkc_moe_up stored them in
 * choice. */
MKC_DEVICE void mkc_imatrix_add_down(const float *hidden, int h_stride, int ffn,
                                     const float *choice, int c_stride, int K, int T, float *acc) {
  for (int c = mkc_grid_warp() * 32 + mkc_lane(); c < ffn; c += mkc_grid_warps() * 32)
    for (int t = 0; t < T; t++)
      for (int k = 0; k < K; k++) {
        const float v = hidden[(long)t * h_stride + k * ffn + c];
        acc[(long)choice[(long)t * c_stride + k] * ffn + c] += v * v;
      }
}
#endif
