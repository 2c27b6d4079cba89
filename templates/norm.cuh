/* A norm on a matmul's output before its residual add (Gemma's post-attention
 * and post-FFN norms): x[t][c] += o[t][c] / sqrt(mean(o[t]^2) + eps) * w[c]
 * for the step's T inputs. The mean needs every column of o, so each block
 * finds o[t]'s inverse RMS itself (mkc_rms_prologue: n floats, from cache
 * after the first block), then adds its share of the columns; inv_rms: 1
 * float and red: MKC_WARPS floats of smem. */
MKC_DEVICE void mkc_norm_residual(const float *o, int o_stride, const mkc_bf16 *w, int n, float eps,
                                  float *x, int x_stride, int T, float *inv_rms, float *red) {
  for (int t = 0; t < T; t++) {
    mkc_rms_prologue(o, o_stride, n, eps, t, t + 1, inv_rms, red);
    const float *ot = o + t * o_stride;
    for (int c = mkc_bid() * MKC_THREADS + mkc_tid(); c < n; c += mkc_nblocks() * MKC_THREADS)
      x[t * x_stride + c] += mkc_branch(ot[c] * inv_rms[0] * mkc_bf16_to_f32(w[c]));
  }
}
