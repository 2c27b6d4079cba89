/* Prompt chunks: causal attention in tiles on tensor cores (flash attention),
 * the tiled twin of mkc_attention for a step of T > MKC_T_MAX inputs. A block
 * takes one kv head and a tile of MKC_ATTN_BM query rows: the group of query
 * heads that share the kv head for each of BM / group consecutive tokens
 * (row r: token m0 + r / group, head kv_head * group + r % group), so a K/V
 * tile staged once serves the whole group. It walks the positions the tile's
 * tokens see, [lo, pos + last token] (a sliding window: lo = pos + first
 * token + 1 - window), MKC_ATTN_BN at a time: S = Q K^T with mma.sync m16n8k8
 * tf32, the causal and window masks per row, an online softmax (running max
 * and sum per row), O += P V with mma again; the rows are divided by their
 * sums at the end. Warp w < 4 owns rows 16 w .. 16 w + 15, so a row's max and
 * sum are its quad's (the four lanes that hold its columns); more warps only
 * help stage. Position s is row s % kv_rows of the kv head's cache slice, or
 * where its slot's page table puts it (the rows of one slot, templates/slots.cuh).
 *
 * Precision as in gemm.cuh: Q and P are split into high and low tf32 parts;
 * a bf16 or f16 K/V value is exact in tf32, an f32 one is split too. Shared
 * memory holds the Q tile, one K and one V tile and the P tile as floats: it
 * does not grow with the context. */
#if MKC_ATTN_BM != 64 || (MKC_ATTN_BN != 16 && MKC_ATTN_BN != 32) || MKC_ATTN_DT < 1 ||            \
    MKC_ATTN_DT > 16
#error "chunk attention tiles are 64 query rows x 16 or 32 positions, heads of at most 128"
#endif
#define MKC_ATTN_LDQ (8 * MKC_ATTN_DT + 4) /* q_tile and k_tile row stride: conflict-free */
#define MKC_ATTN_LDV (8 * MKC_ATTN_DT + 8) /* v_tile: B is read down its columns */
#define MKC_ATTN_LDP (MKC_ATTN_BN + 4)
#define MKC_ATTN_ST (MKC_ATTN_BN / 8) /* a warp's n8 tiles of scores */
#if defined(MKC_KV_F32)
#define MKC_ATTN_KV_PARTS 2 /* an f32 K/V value: high and low tf32 parts */
#else
#define MKC_ATTN_KV_PARTS 1 /* bf16, f16: exact in tf32 */
#endif

/* Stages positions s0 .. s0 + BN - 1 (none past hi: zeros) of K and V as
 * floats, head dimensions past head_dim zero. */
MKC_DEVICE void mkc_attn_stage_kv(const mkc_kv *K, const mkc_kv *V, int head_dim, int kv_rows,
                                  const mkc_rowmap *rows, int s0, int hi, float *k_tile,
                                  float *v_tile) {
  for (int e = mkc_tid(); e < MKC_ATTN_BN * 8 * MKC_ATTN_DT; e += MKC_THREADS) {
    int j = e / (8 * MKC_ATTN_DT), d = e - j * (8 * MKC_ATTN_DT), s = s0 + j;
    float k = 0.0f, v = 0.0f;
    if (s <= hi && d < head_dim) {
      long at = mkc_kv_at(rows, 0, s, kv_rows, head_dim) + d;
      k = mkc_kv_to_f32(K[at]);
      v = mkc_kv_to_f32(V[at]);
    }
    k_tile[j * MKC_ATTN_LDQ + d] = k;
    v_tile[j * MKC_ATTN_LDV + d] = v;
  }
}

/* The A fragment (16 x 8, rows g and g + 8, columns q and q + 4) at row r0 and
 * column k of a float tile, as high and low tf32 parts: a[0..3], a[4..7]. */
MKC_DEVICE void mkc_attn_a_frag(const float *tile, int ld, int r0, int k, unsigned *a) {
  int lane = mkc_lane(), g = lane >> 2, q = lane & 3;
  const float *p = tile + (r0 + g) * ld + k + q;
  const float v[4] = {p[0], p[8 * ld], p[4], p[8 * ld + 4]};
  for (int r = 0; r < 4; r++) {
    unsigned hi = mkc_tf32(v[r]);
    a[r] = hi;
    a[4 + r] = mkc_tf32(v[r] - mkc_bits_f32(hi));
  }
}

/* One B value of K or V as the mma takes it: its high part, and its low part
 * at b_lo (an f32 cache only). */
MKC_DEVICE void mkc_attn_b(float v, unsigned *b, unsigned *b_lo) {
  unsigned hi = mkc_tf32(v);
  *b = hi;
  if (MKC_ATTN_KV_PARTS == 2) *b_lo = mkc_tf32(v - mkc_bits_f32(hi));
}

/* out[t][h] = softmax over the positions token t sees of (q[t][h] . K[s]) *
 * scale (and the head's sink, where sinks is not 0), times V[s], for every
 * token t < T and query head h: the tiled twin of mkc_attention. Ends
 * synchronized. */
MKC_DEVICE_CALLED void mkc_gemm_attention(const float *q, int q_stride, const mkc_kv *k_cache,
                                          const mkc_kv *v_cache, float *out, int out_stride,
                                          int heads, int group, int head_dim, int kv_rows,
                                          int window, float scale, const mkc_bf16 *sinks, int pos,
                                          int T, const mkc_rowmap *rows, float *q_tile,
                                          float *k_tile, float *v_tile, float *p_tile) {
  pos = mkc_row_pos(rows, pos, 0); /* one sequence's rows: a plain step's, or one slot's */
  int per_tile = MKC_ATTN_BM / group, used = per_tile * group; /* tokens, rows used */
  int m_tiles = (T + per_tile - 1) / per_tile, kv_heads = heads / group;
  int tid = mkc_tid(), warp = tid >> 5, g = (tid & 31) >> 2, qd = tid & 3;
  int dt = (head_dim + 7) / 8; /* n8 tiles of the output, k-steps of S */
  for (int item = mkc_bid(); item < kv_heads * m_tiles; item += mkc_nblocks()) {
    /* the tiles of the longest rows first: they have the most positions to walk */
    int kh = item / m_tiles, m0 = (m_tiles - 1 - item % m_tiles) * per_tile;
    int last = m0 + per_tile < T ? m0 + per_tile - 1 : T - 1;
    int hi = pos + last, lo = window > 0 && pos + m0 + 1 > window ? pos + m0 + 1 - window : 0;
    const mkc_kv *K = k_cache + (long)kh * kv_rows * head_dim;
    const mkc_kv *V = v_cache + (long)kh * kv_rows * head_dim;
    for (int e = mkc_tid(); e < MKC_ATTN_BM * 8 * MKC_ATTN_DT; e += MKC_THREADS) {
      int r = e / (8 * MKC_ATTN_DT), d = e - r * (8 * MKC_ATTN_DT), t = m0 + r / group;
      float v = 0.0f;
      if (r < used && t < T && d < head_dim)
        v = q[(long)t * q_stride + (kh * group + r % group) * head_dim + d] * scale;
      q_tile[r * MKC_ATTN_LDQ + d] = v;
    }
    /* this lane's rows, g and g + 8 of the warp's 16: the last position each sees (-1: a row
     * of no token) and the first */
    int see_hi[2], see_lo[2];
    for (int h = 0; h < 2; h++) {
      int r = warp * 16 + g + 8 * h, t = m0 + r / group;
      see_hi[h] = warp < 4 && r < used && t < T ? pos + t : -1;
      see_lo[h] = window > 0 && see_hi[h] + 1 > window ? see_hi[h] + 1 - window : 0;
    }
    /* the warp's rows: the first token's first position and the last token's last one */
    int r_first = warp * 16, r_last = warp * 16 + 15 < used ? warp * 16 + 15 : used - 1;
    int t_last = m0 + r_last / group < T ? m0 + r_last / group : T - 1;
    int warp_hi = warp < 4 && r_first < used && m0 + r_first / group < T ? pos + t_last : -1;
    int warp_lo = window > 0 && pos + m0 + r_first / group + 1 > window
                      ? pos + m0 + r_first / group + 1 - window
                      : 0;
    float m_run[2] = {MKC_NEG_MAX, MKC_NEG_MAX}, l_run[2] = {0.0f, 0.0f};
    float o[MKC_ATTN_DT * 4];
    for (int i = 0; i < MKC_ATTN_DT * 4; i++) o[i] = 0.0f;
    for (int s0 = lo; s0 <= hi; s0 += MKC_ATTN_BN) {
      mkc_attn_stage_kv(K, V, head_dim, kv_rows, rows, s0, hi, k_tile, v_tile);
      mkc_sync_block(); /* the tiles (and q_tile, the first time) are staged */
      /* warp-uniform: whether any of the warp's rows sees any position of the tile */
      int active = s0 <= warp_hi && s0 + MKC_ATTN_BN - 1 >= warp_lo;
      float s[MKC_ATTN_ST * 4];
      if (active) {
        for (int i = 0; i < MKC_ATTN_ST * 4; i++) s[i] = 0.0f;
        for (int ks = 0; ks < 8 * dt; ks += 8) {
          unsigned a[8], b[2 * MKC_ATTN_ST * 2]; /* [parts][n-tile][2], low parts: f32 only */
          mkc_attn_a_frag(q_tile, MKC_ATTN_LDQ, warp * 16, ks, a);
          /* B (k x n = head dimension x position): rows q, q + 4, column g of each n-tile */
          for (int j = 0; j < MKC_ATTN_ST; j++) {
            const float *kr = k_tile + (j * 8 + g) * MKC_ATTN_LDQ + ks + qd;
            mkc_attn_b(kr[0], &b[j * 2], &b[(MKC_ATTN_ST + j) * 2]);
            mkc_attn_b(kr[4], &b[j * 2 + 1], &b[(MKC_ATTN_ST + j) * 2 + 1]);
          }
          mkc_mma_tf32_queue(a, b, MKC_ATTN_KV_PARTS, s, 1, MKC_ATTN_ST, 1, MKC_ATTN_ST);
        }
        mkc_mma_flush(s);
        /* masks and the online softmax: s[4j + c] is row g + 8 (c >= 2), position
         * s0 + 8j + 2 qd + (c & 1) */
        float tile_max[2] = {MKC_NEG_MAX, MKC_NEG_MAX};
        for (int j = 0; j < MKC_ATTN_ST; j++)
          for (int c = 0; c < 4; c++) {
            int h = c >> 1, at = s0 + 8 * j + 2 * qd + (c & 1);
            if (at > see_hi[h] || at < see_lo[h]) {
              s[4 * j + c] = MKC_NEG_MAX; /* masked: its p is set to 0 below */
            } else {
              s[4 * j + c] = mkc_score(s[4 * j + c]);
              tile_max[h] = fmaxf(tile_max[h], s[4 * j + c]);
            }
          }
        float corr[2];
        for (int h = 0; h < 2; h++) {
          tile_max[h] = fmaxf(tile_max[h], mkc_shfl_xor(tile_max[h], 1));
          tile_max[h] = fmaxf(tile_max[h], mkc_shfl_xor(tile_max[h], 2));
          float m_new = fmaxf(m_run[h], tile_max[h]);
          corr[h] = expf(m_run[h] - m_new);
          m_run[h] = m_new;
          l_run[h] *= corr[h];
        }
        for (int j = 0; j < MKC_ATTN_ST; j++)
          for (int c = 0; c < 4; c++) {
            int h = c >> 1, at = s0 + 8 * j + 2 * qd + (c & 1);
            float p = at > see_hi[h] || at < see_lo[h] ? 0.0f : expf(s[4 * j + c] - m_run[h]);
            s[4 * j + c] = p;
            l_run[h] += p;
          }
        for (int i = 0; i < MKC_ATTN_DT * 4; i++) o[i] *= corr[i >> 1 & 1];
        /* P to shared memory, where its A fragments are read back */
        for (int j = 0; j < MKC_ATTN_ST; j++) {
          float *pr = p_tile + (warp * 16 + g) * MKC_ATTN_LDP + 8 * j + 2 * qd;
          pr[0] = s[4 * j];
          pr[1] = s[4 * j + 1];
          pr[8 * MKC_ATTN_LDP] = s[4 * j + 2];
          pr[8 * MKC_ATTN_LDP + 1] = s[4 * j + 3];
        }
      }
      mkc_sync_block(); /* P is written */
      if (active)
        /* B (k x n = position x head dimension): rows q, q + 4, column g; at most 8 n-tiles
         * a call, each group's products over the tile's positions in one queue */
        for (int j0 = 0; j0 < dt; j0 += 8) {
          int nt = dt - j0 < 8 ? dt - j0 : 8;
          for (int ks = 0; ks < MKC_ATTN_BN; ks += 8) {
            unsigned a[8], b[2 * 8 * 2];
            mkc_attn_a_frag(p_tile, MKC_ATTN_LDP, warp * 16, ks, a);
            for (int j = 0; j < nt; j++) {
              const float *vr = v_tile + (ks + qd) * MKC_ATTN_LDV + (j0 + j) * 8 + g;
              mkc_attn_b(vr[0], &b[j * 2], &b[(8 + j) * 2]);
              mkc_attn_b(vr[4 * MKC_ATTN_LDV], &b[j * 2 + 1], &b[(8 + j) * 2 + 1]);
            }
            mkc_mma_tf32_queue(a, b, MKC_ATTN_KV_PARTS, o + 4 * j0, 1, nt, 1, 8);
          }
          mkc_mma_flush(o + 4 * j0);
        }
      mkc_sync_block(); /* the K, V and P tiles are read before the next ones are staged */
    }
    /* each row's sum over its quad; the rows divided by it */
    for (int h = 0; h < 2; h++) {
      l_run[h] += mkc_shfl_xor(l_run[h], 1);
      l_run[h] += mkc_shfl_xor(l_run[h], 2);
    }
    for (int h = 0; h < 2; h++) {
      int r = warp * 16 + g + 8 * h, t = m0 + r / group;
      if (see_hi[h] < 0) continue;
      float *o_row = out + (long)t * out_stride + (kh * group + r % group) * head_dim;
      for (int j = 0; j < dt; j++)
        for (int c = 0; c < 2; c++) {
          int d = 8 * j + 2 * qd + c;
          if (d < head_dim)
            o_row[d] = mkc_att_out(o[4 * j + 2 * h + c], l_run[h], m_run[h], sinks,
                                   kh * group + r % group);
        }
    }
    mkc_sync_block(); /* q_tile is rewritten by the next item */
  }
}
