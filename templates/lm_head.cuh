/* LM head with the greedy choice fused in: each warp keeps its best (logit,
 * row) per token while it writes logits, the block reduces its warps, and
 * per-block partials ([block][MKC_STEP_ROWS]) go to scratch for mkc_accept.
 * Ties go to the lower id.
 * Only inputs t0 .. T - 1 (a prompt chunk: its last) get logits, at rows
 * t - t0 of logits and of the partials. */
MKC_DEVICE void mkc_lm_head(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                            const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                            int logits_stride, int t0, int T, float *part_val, int *part_idx,
                            float *warp_val, int *warp_idx) {
  x += (long)t0 * x_stride;
  T -= t0;
  float acc[MKC_ROWS * MKC_T_MAX], best_v[MKC_T_MAX];
  int best_i[MKC_T_MAX];
  for (int t = 0; t < MKC_T_MAX; t++) {
    best_v[t] = MKC_NEG_MAX;
    best_i[t] = 0x7fffffff;
  }
  int step = mkc_grid_warps() * MKC_ROWS;
  for (int r0 = mkc_grid_warp() * MKC_ROWS; r0 < rows; r0 += step) {
    mkc_dot_row_block(w, rows, r0, step, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    for (int r = 0; r < MKC_ROWS; r++) /* compile-time bounds: acc stays in registers */
      for (int t = 0; t < MKC_T_MAX; t++) {
        if (r0 + r >= rows || t >= T) break;
        if (mkc_lane() == 0) logits[t * logits_stride + r0 + r] = acc[r * MKC_T_MAX + t];
        if (mkc_better(acc[r * MKC_T_MAX + t], r0 + r, best_v[t], best_i[t])) {
          best_v[t] = acc[r * MKC_T_MAX + t];
          best_i[t] = r0 + r;
        }
      }
  }
  if (mkc_lane() == 0)
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      warp_val[mkc_warp() * MKC_T_MAX + t] = best_v[t];
      warp_idx[mkc_warp() * MKC_T_MAX + t] = best_i[t];
    }
  mkc_sync_block();
  for (int t = mkc_tid(); t < T; t += MKC_THREADS) {
    float v = MKC_NEG_MAX;
    int i = 0x7fffffff;
    for (int wp = 0; wp < MKC_WARPS; wp++)
      if (mkc_better(warp_val[wp * MKC_T_MAX + t], warp_idx[wp * MKC_T_MAX + t], v, i)) {
        v = warp_val[wp * MKC_T_MAX + t];
        i = warp_idx[wp * MKC_T_MAX + t];
      }
    part_val[mkc_bid() * MKC_STEP_ROWS + t] = v;
    part_idx[mkc_bid() * MKC_STEP_ROWS + t] = i;
  }
}
