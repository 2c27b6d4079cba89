/* Token embedding: x[t][c] = table[token_t][c] * scale for the step's T
 * inputs (scale 1, or Gemma's sqrt(dim)). A
 * thread per 8 elements (a chunk): a quantized row's chunk is decoded once,
 * not once per element, and picked by literal indices (an element picked from
 * it by a variable index kept it, and with it the decode loops' chunks, in
 * local memory). */
MKC_DEVICE void mkc_embed(mkc_wmat table, int dim, float scale, float *x, int x_stride,
                          const int *tokens, int T) {
  int chunks = (dim + 7) / 8, total = T * chunks;
  for (int i = mkc_bid() * MKC_THREADS + mkc_tid(); i < total; i += mkc_nblocks() * MKC_THREADS) {
    int t = i / chunks, c = i - t * chunks;
    mkc_wrow w = mkc_wmat_row(table, tokens[t]);
    float *out = x + t * x_stride + c * 8;
    if (w.type == MKC_W_BF16) { /* element by element: a row need not be padded to a chunk */
      for (int k = 0; k < 8 && c * 8 + k < dim; k++)
        out[k] = mkc_bf16_to_f32(((const mkc_bf16 *)w.p)[c * 8 + k]) * scale;
    } else { /* quantized rows are whole blocks of chunks */
      float f[8];
      mkc_wchunk(w.type, w.p, c, f);
      MKC_UNROLL for (int k = 0; k < 8; k++) if (c * 8 + k < dim) out[k] = f[k] * scale;
    }
  }
}
