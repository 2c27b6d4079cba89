/* Token embedding: x[t][c] = table[token_t][c] for the step's T inputs. */
MKC_DEVICE void mkc_embed(mkc_wmat table, int dim, float *x, int x_stride, const int *tokens,
                          int T) {
  int total = T * dim;
  for (int i = mkc_bid() * MKC_THREADS + mkc_tid(); i < total; i += mkc_nblocks() * MKC_THREADS) {
    int t = i / dim, c = i - t * dim;
    x[t * x_stride + c] = mkc_welem(mkc_wmat_row(table, tokens[t]), c);
  }
}
