#if MKC_MMA_DECODE
/* The LM head's rows 8 a warp with mkc_mma_rows: lane (g, q) writes its
 * logits and keeps its best row for inputs g, g + 8, ...; the 4 lanes of an
 * input then pick the best of theirs (the order is total: the value, then the
 * lower row), and lane q = 0 writes the warp's into warp_val and warp_idx. */
MKC_DEVICE void mkc_lm_head_mma(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                                const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                                int logits_stride, int t0, int T, const mkc_state *st,
                                const mkc_rowmap *rmap, float *warp_val, int *warp_idx) {
  int g = mkc_lane() >> 2, q = mkc_lane() & 3, step = mkc_grid_warps() * 8;
  const int biased = mkc_step_logit_biased(st, rmap); /* else no row looks its bias up */
  float best_v[MKC_MV_MT];
  int best_i[MKC_MV_MT];
  for (int m = 0; m < MKC_MV_MT; m++) {
    best_v[m] = MKC_NEG_MAX;
    best_i[m] = 0x7fffffff;
  }
  for (int r0 = mkc_grid_warp() * 8; r0 < rows; r0 += step) {
    mkc_wrow wr[8], next[8];
    float o[MKC_MV_MT * 2];
    mkc_mma_row_block(w, rows, r0, wr);
    mkc_mma_row_block(w, rows, r0 + step, next);
    mkc_mma_rows(wr, next, 1, n_chunks, x, x_stride, norm_w, T, o);
    float bias[2]; /* a plain kernel's inputs are one request's: the lane's two rows' biases */
    for (int e = 0; e < 2; e++)
      bias[e] = biased && MKC_SLOTS == 0 ? mkc_row_logit_bias(st, rmap, t0, r0 + 2 * q + e) : 0.0f;
    for (int m = 0; m < MKC_MV_MT; m++) /* compile-time bounds: o stays in registers */
      for (int e = 0; e < 2; e++) {
        int t = 8 * m + g, r = r0 + 2 * q + e;
        if (t >= T || r >= rows) continue;
        float v = mkc_logit(norm_w ? o[m * 2 + e] * inv_rms[t] : o[m * 2 + e]) +
                  (biased && MKC_SLOTS > 0 ? mkc_row_logit_bias(st, rmap, t0 + t, r) : bias[e]);
        logits[t * logits_stride + r] = v;
        if (mkc_better(v, r, best_v[m], best_i[m])) {
          best_v[m] = v;
          best_i[m] = r;
        }
      }
  }
  for (int m = 0; m < MKC_MV_MT; m++) {
    for (int mask = 1; mask <= 2; mask <<= 1) {
      float v = mkc_shfl_xor(best_v[m], mask);
      int i = mkc_shfl_xor_int(best_i[m], mask);
      if (mkc_better(v, i, best_v[m], best_i[m])) {
        best_v[m] = v;
        best_i[m] = i;
      }
    }
    int t = 8 * m + g;
    if (q == 0 && t < T) {
      warp_val[mkc_warp() * MKC_T_MAX + t] = best_v[m];
      warp_idx[mkc_warp() * MKC_T_MAX + t] = best_i[m];
    }
  }
}
#endif

/* LM head with the greedy choice fused in: each warp keeps its best (logit,
 * row) per token while it writes logits, the block reduces its warps, and
 * per-block partials ([block][MKC_STEP_ROWS]) go to scratch for mkc_accept.
 * Ties go to the lower id. Each logit has its row's request's logit bias
 * added (mkc_row_logit_bias: st, the state or the slots' states; rmap, a slot
 * kernel's row map, else 0) before it is written or ranked.
 * Only inputs t0 .. T - 1 (a prompt chunk: its last) get logits, at rows
 * t - t0 of logits and of the partials. */
/* The warps' best rows on CUDA cores: MKC_ROWS rows a warp (mkc_dot_row_block),
 * every lane with every row's logit; lane 0 writes logits and the warp's best. */
MKC_DEVICE void mkc_lm_head_cores(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                                  const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                                  int logits_stride, int t0, int T, const mkc_state *st,
                                  const mkc_rowmap *rmap, float *warp_val, int *warp_idx) {
  float acc[MKC_ROWS * MKC_T_MAX], best_v[MKC_T_MAX];
  int best_i[MKC_T_MAX];
  for (int t = 0; t < MKC_T_MAX; t++) {
    best_v[t] = MKC_NEG_MAX;
    best_i[t] = 0x7fffffff;
  }
  int step = mkc_grid_warps() * MKC_ROWS;
  const int biased = mkc_step_logit_biased(st, rmap); /* else no row looks its bias up */
  for (int r0 = mkc_grid_warp() * MKC_ROWS; r0 < rows; r0 += step) {
    mkc_dot_row_block(w, rows, r0, step, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    for (int r = 0; r < MKC_ROWS; r++) { /* compile-time bounds: acc stays in registers */
      /* a plain kernel's inputs are one request's: its bias, looked up once a row */
      float bias = biased && MKC_SLOTS == 0 ? mkc_row_logit_bias(st, rmap, t0, r0 + r) : 0.0f;
      for (int t = 0; t < MKC_T_MAX; t++) {
        if (r0 + r >= rows || t >= T) break;
#ifdef MKC_CPU
        if (mkc_lane() != 0) continue; /* lanes run one by one here: only lane 0's choice is kept */
#endif
        float v = mkc_logit(acc[r * MKC_T_MAX + t]) +
                  (biased && MKC_SLOTS > 0 ? mkc_row_logit_bias(st, rmap, t0 + t, r0 + r) : bias);
        if (mkc_lane() == 0) logits[t * logits_stride + r0 + r] = v;
        if (mkc_better(v, r0 + r, best_v[t], best_i[t])) {
          best_v[t] = v;
          best_i[t] = r0 + r;
        }
      }
    }
  }
  if (mkc_lane() == 0)
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      warp_val[mkc_warp() * MKC_T_MAX + t] = best_v[t];
      warp_idx[mkc_warp() * MKC_T_MAX + t] = best_i[t];
    }
}

MKC_DEVICE void mkc_lm_head(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                            const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                            int logits_stride, int t0, int T, const mkc_state *st,
                            const mkc_rowmap *rmap, float *part_val, int *part_idx, float *warp_val,
                            int *warp_idx) {
  x += (long)t0 * x_stride;
  T -= t0;
#if MKC_MMA_DECODE
  if (w.type == MKC_W_BF16) /* 8 rows a warp on tensor cores (templates/matvec.cuh) */
    mkc_lm_head_mma(w, rows, n_chunks, x, x_stride, norm_w, inv_rms, logits, logits_stride, t0, T,
                    st, rmap, warp_val, warp_idx);
  else
#endif
    mkc_lm_head_cores(w, rows, n_chunks, x, x_stride, norm_w, inv_rms, logits, logits_stride, t0, T,
                      st, rmap, warp_val, warp_idx);
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
