/* Causal attention over the KV cache, one block per (query head, token):
 * token t sees positions [0, pos + t], or with a sliding window (window > 0)
 * the last `window` of them, [lo, pos + t]. Position s is row s % kv_rows of
 * each kv head (kv_rows = max_ctx, or a window's ring). Scores live in shared
 * memory (one float per position seen), so a block computes exact softmax in
 * three passes. GQA: query head h reads kv head h / group. K and V are
 * widened from the cache's type to float as they are read. Split-KV
 * (flash-decoding) is later work. */
MKC_DEVICE void mkc_attention(const float *q, int q_stride, const mkc_kv *k_cache,
                              const mkc_kv *v_cache, float *out, int out_stride, int heads,
                              int group, int head_dim, int kv_rows, int window, float scale,
                              int pos, int T, float *scores, float *q_head, float *red) {
  for (int item = mkc_bid(); item < heads * T; item += mkc_nblocks()) {
    int t = item / heads, h = item - t * heads, n = pos + t + 1;
    int lo = window > 0 && n > window ? n - window : 0; /* scores[s - lo] */
    const mkc_kv *K = k_cache + (long)(h / group) * kv_rows * head_dim;
    const mkc_kv *V = v_cache + (long)(h / group) * kv_rows * head_dim;
    for (int d = mkc_tid(); d < head_dim; d += MKC_THREADS)
      q_head[d] = q[t * q_stride + h * head_dim + d] * scale;
    mkc_sync_block();
    float m = MKC_NEG_MAX;
    for (int s = lo + mkc_tid(); s < n; s += MKC_THREADS) {
      float dot = 0.0f;
      for (int d = 0; d < head_dim; d++)
        dot += q_head[d] * mkc_kv_to_f32(K[(long)(s % kv_rows) * head_dim + d]);
      scores[s - lo] = dot;
      m = fmaxf(m, dot);
    }
    m = mkc_block_max(m, red);
    float sum = 0.0f;
    for (int s = mkc_tid(); s < n - lo; s += MKC_THREADS) {
      float e = expf(scores[s] - m);
      scores[s] = e;
      sum += e;
    }
    sum = mkc_block_sum(sum, red); /* its barriers also publish scores[] */
    for (int d = mkc_tid(); d < head_dim; d += MKC_THREADS) {
      float acc = 0.0f;
      for (int s = lo, row = lo % kv_rows; s < n; s++, row = row + 1 == kv_rows ? 0 : row + 1)
        acc += scores[s - lo] * mkc_kv_to_f32(V[(long)row * head_dim + d]);
      out[t * out_stride + h * head_dim + d] = acc / sum;
    }
    mkc_sync_block(); /* q_head and scores are rewritten by the next item */
  }
}
