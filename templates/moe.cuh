/* Experts: a sparse MLP in three stages. A matvec stage scores the experts
 * (router . xn, xn the normed input); mkc_moe_up chooses each input's experts
 * and runs the first half of theirs (gate and up); mkc_moe_down the second
 * (down), weighted, into the residual. Expert e's rows of a matrix are its
 * block from row e * rows (GGUF's 3-d _exps tensors, rows one expert after
 * another). An input's tasks read only that input's rows, and each task runs
 * T = 1 dot products: the experts differ from input to input, so a verify
 * step's or a prompt chunk's inputs share no weight rows by construction. */

/* Expert e's rows of m: the matrix from its row e * rows. */
MKC_DEVICE mkc_wmat mkc_wmat_expert(mkc_wmat m, int e, int rows) {
  m.p += (long)e * rows * m.row_bytes;
  return m;
}

/* The K experts with the largest scores r[0 .. E) (the lower index first
 * among equals) into ids, their softmax probabilities over all E into wts
 * (renormalized to sum 1 over the K with norm_topk): the whole warp, every
 * lane with the same results. Lane l owns experts l, l + 32, ... (E <= 1024:
 * bit i of `taken` is expert l + 32 i). */
MKC_DEVICE void mkc_moe_choose(const float *r, int E, int K, int norm_topk, float *ids,
                               float *wts) {
  int lane = mkc_lane();
  float mx = MKC_NEG_MAX, sum = 0.0f, wsum = 0.0f;
  for (int e = lane; e < E; e += 32) mx = fmaxf(mx, r[e]);
  mx = mkc_warp_max(mx);
  for (int e = lane; e < E; e += 32) sum += expf(r[e] - mx);
  sum = mkc_warp_sum(sum);
  unsigned taken = 0u;
  for (int k = 0; k < K; k++) {
    float best_v = MKC_NEG_MAX;
    int best_e = E; /* none yet */
    for (int i = 0; lane + 32 * i < E; i++) {
      float v = r[lane + 32 * i];
      if (!((taken >> i) & 1u) && (best_e == E || v > best_v)) {
        best_v = v;
        best_e = lane + 32 * i;
      }
    }
    for (int m = 16; m > 0; m >>= 1) {
      float ov = mkc_shfl_xor(best_v, m);
      int oe = mkc_shfl_xor_int(best_e, m);
      if (oe < E && (best_e == E || ov > best_v || (ov == best_v && oe < best_e))) {
        best_v = ov;
        best_e = oe;
      }
    }
    if (lane == best_e % 32) taken |= 1u << (best_e / 32);
    float p = expf(best_v - mx) / sum;
    ids[k] = (float)best_e; /* exact: E <= 1024 */
    wts[k] = p;
    wsum += p;
  }
  if (norm_topk)
    for (int k = 0; k < K; k++) wts[k] /= wsum;
}

/* The first half of the T inputs' experts. Every block first takes each
 * input t (a warp an input): its 1 / rms (inv[t], smem; 1 without a norm)
 * and its experts from its scores router[t * r_stride ..] (sel, smem [T][2K]:
 * ids, then weights), which block 0 also stores at choice[t * c_stride ..]
 * for mkc_moe_down. Then the grid's warps take (input, k-th expert, MKC_ROWS
 * rows) tasks: out[t * out_stride + k * ffn + f] = glu(gate_e[f] . xn,
 * up_e[f] . xn) (each + its bias where b_gate is not 0: b_up then neither), e input t's k-th
 * expert. */
MKC_DEVICE void mkc_moe_up(const float *router, int r_stride, int E, int K, int norm_topk,
                           mkc_wmat w_gate, mkc_wmat w_up, const mkc_bf16 *b_gate,
                           const mkc_bf16 *b_up, int ffn, int n_chunks, const float *x,
                           int x_stride, int n, const mkc_bf16 *norm_w, float eps, float *out,
                           int out_stride, float *choice, int c_stride, int T, float *sel,
                           float *inv) {
  for (int t = mkc_warp(); t < T; t += MKC_WARPS) {
    float ss = 0.0f;
    for (int c = mkc_lane(); c < n; c += 32) {
      float v = x[t * x_stride + c];
      ss += v * v;
    }
    ss = mkc_warp_sum(ss);
    float ids[MKC_MOE_K], wts[MKC_MOE_K];
    mkc_moe_choose(router + (long)t * r_stride, E, K, norm_topk, ids, wts);
    if (mkc_lane() == 0) {
      inv[t] = norm_w ? 1.0f / sqrtf(ss / (float)n + eps) : 1.0f;
      for (int k = 0; k < K; k++) {
        sel[t * 2 * K + k] = ids[k];
        sel[t * 2 * K + K + k] = wts[k];
        if (mkc_bid() == 0) {
          choice[(long)t * c_stride + k] = ids[k];
          choice[(long)t * c_stride + K + k] = wts[k];
        }
      }
    }
  }
  mkc_sync_block();
  int blocks = (ffn + MKC_ROWS - 1) / MKC_ROWS, tasks = T * K * blocks, step = mkc_grid_warps();
  float acc[2 * MKC_ROWS * MKC_T_MAX]; /* gate rows, then up rows */
  for (int task = mkc_grid_warp(); task < tasks; task += step) {
    int t = task / (K * blocks), k = task / blocks % K, r0 = task % blocks * MKC_ROWS;
    /* the CPU: the sums another lane made, and no rows to build */
    if (!mkc_dot_rows_ready(2 * MKC_ROWS, norm_w, inv + t, 1, acc, 1)) {
      mkc_wrow wr[2 * MKC_ROWS], next[2 * MKC_ROWS];
      for (int i = 0; i < 2; i++) { /* this task's rows, then the next one's (prefetched) */
        int at = task + i * step, ta = at / (K * blocks), ka = at / blocks % K;
        mkc_wrow *rows = i ? next : wr;
        if (at >= tasks) {
          for (int r = 0; r < 2 * MKC_ROWS; r++) rows[r] = mkc_wrow_none_of(w_gate.type);
          continue;
        }
        int e = (int)sel[ta * 2 * K + ka], ra = at % blocks * MKC_ROWS;
        mkc_row_block(mkc_wmat_expert(w_gate, e, ffn), ffn, ra, rows);
        mkc_row_block(mkc_wmat_expert(w_up, e, ffn), ffn, ra, rows + MKC_ROWS);
      }
      mkc_dot_rows(wr, next, 2 * MKC_ROWS, n_chunks, x + (long)t * x_stride, x_stride, norm_w,
                   inv + t, 1, acc);
    }
    if (mkc_lane() == 0) {
      long b = (long)sel[t * 2 * K + k] * ffn + r0; /* the expert's biases of these rows */
      for (int r = 0; r < MKC_ROWS; r++) {
        if (r0 + r >= ffn) break;
        float g = acc[r * MKC_T_MAX], u = acc[(MKC_ROWS + r) * MKC_T_MAX];
        if (b_gate) {
          g += mkc_bf16_to_f32(b_gate[b + r]);
          u += mkc_bf16_to_f32(b_up[b + r]);
        }
        out[(long)t * out_stride + k * ffn + r0 + r] = mkc_glu(g, u);
      }
    }
  }
}

/* The second half: out[t * out_stride + d] += branch(sum over k of w_k *
 * (down_{e_k}[d] . hidden[t][k * ffn ..] + its bias where b_down is not 0)), the experts and
 * weights as mkc_moe_up stored them in choice; the grid's warps take (input, MKC_ROWS rows) tasks,
 * the experts' rows in turn, the next expert's prefetched. */
MKC_DEVICE void mkc_moe_down(const float *choice, int c_stride, int K, mkc_wmat w_down,
                             const mkc_bf16 *b_down, int dim, int n_chunks, const float *hidden,
                             int h_stride, int ffn, float *out, int out_stride, int T) {
  int blocks = (dim + MKC_ROWS - 1) / MKC_ROWS, tasks = T * blocks, step = mkc_grid_warps();
  float acc[MKC_ROWS * MKC_T_MAX];
  for (int task = mkc_grid_warp(); task < tasks; task += step) {
    int t = task / blocks, r0 = task % blocks * MKC_ROWS;
    const float *sel = choice + (long)t * c_stride;
    float sum[MKC_ROWS];
    for (int r = 0; r < MKC_ROWS; r++) sum[r] = 0.0f;
    for (int k = 0; k < K; k++) {
      /* the CPU: the sums another lane made, and no rows to build */
      if (!mkc_dot_rows_ready(MKC_ROWS, (const mkc_bf16 *)0, (const float *)0, 1, acc, 0)) {
        mkc_wrow wr[MKC_ROWS], next[MKC_ROWS];
        mkc_row_block(mkc_wmat_expert(w_down, (int)sel[k], dim), dim, r0, wr);
        if (k + 1 < K)
          mkc_row_block(mkc_wmat_expert(w_down, (int)sel[k + 1], dim), dim, r0, next);
        else
          for (int r = 0; r < MKC_ROWS; r++) next[r] = mkc_wrow_none_of(w_down.type);
        mkc_dot_rows(wr, next, MKC_ROWS, n_chunks, hidden + (long)t * h_stride + k * ffn, h_stride,
                     (const mkc_bf16 *)0, (const float *)0, 1, acc);
      }
      long b = (long)sel[k] * dim + r0; /* the expert's biases of these rows */
      for (int r = 0; r < MKC_ROWS; r++)
        sum[r] += sel[K + k] * (acc[r * MKC_T_MAX] +
                                (b_down && r0 + r < dim ? mkc_bf16_to_f32(b_down[b + r]) : 0.0f));
    }
    if (mkc_lane() == 0)
      for (int r = 0; r < MKC_ROWS; r++) {
        if (r0 + r >= dim) break;
        out[(long)t * out_stride + r0 + r] += mkc_branch(sum[r]);
      }
  }
}
