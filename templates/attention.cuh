/* Causal attention over the KV cache, split-KV (flash-decoding). Token t sees
 * positions [0, pos + t], or with a sliding window (window > 0) the last
 * `window` of them, [lo, pos + t]; with sinks (not 0: gpt-oss), each head's
 * sink joins its softmax's sum (mkc_att_out). Position s is row s % kv_rows of each kv
 * head (kv_rows = max_ctx, or a window's ring). In a slot kernel (rows, the
 * step's row map: templates/slots.cuh) token t's position and cache are its
 * slot's, and paged, position s is at its slot's page's row. K and V are
 * widened from the cache's type to float as they are read.
 *
 * A unit is one kv head's query heads (up to pass_heads of its GQA group at a
 * time, so K and V are read once per pass) for one token; its positions are
 * split into `splits` spans (of MKC_ATT_SPLIT_MIN positions at least), one
 * work item each, so that a decode step's few units still fill the grid. An item walks its span in
 * tiles of MKC_ATT_TILE positions with an online softmax (running max m and sum l per head, the
 * accumulator rescaled as m grows), in shared memory only two tiles' scores: nothing grows with the
 * context. Lanes split a K or V row into vectors of `vec` elements (16-byte loads where the row
 * allows, else 1). With one span the item writes the output; with more, each writes its partial
 * (unnormalized acc[head_dim] per head, then m, then l) to its slot of part (slot = item < nblocks)
 * and counts it in counters[unit]; the block that brings the count to `splits` merges the unit's
 * partials, writes the output and zeroes the counter, so no grid barrier is needed. */
#define MKC_ATT_TILE 256     /* positions whose scores a block holds at a time (two buffers) */
#define MKC_ATT_SPLIT_MIN 16 /* the fewest positions worth a split of their own */
#define MKC_ATT_HEADS 4 /* the most query heads of a pass (pass_heads): register accumulators */
/* MKC_ATT_PREFETCH=1 (a knob for the GPU's A/B): a tile's K and V rows asked
 * of L2 together when the tile begins. A block reads a tile's rows a few per
 * warp at a time, each read waiting on the one before (a 4096-position step
 * spent 16 us a layer on 8 MB, on the H100); prefetched, those reads find
 * the rows in L2. A prefetch changes no value. */
#ifndef MKC_ATT_PREFETCH
#define MKC_ATT_PREFETCH 0
#endif

/* w (1, or 16 bytes' worth) cache elements from p, as floats. */
MKC_DEVICE void mkc_kv_vec(const mkc_kv *p, int w, float *f) {
  if (w == 1) {
    f[0] = mkc_kv_to_f32(p[0]);
    return;
  }
  mkc_u4 u = mkc_load_u4(p);
  unsigned words[4] = {u.x, u.y, u.z, u.w};
#if defined(MKC_KV_F32)
  for (int i = 0; i < 4; i++) f[i] = mkc_bits_f32(words[i]);
#else
  for (int i = 0; i < 8; i++) f[i] = mkc_kv_to_f32((mkc_kv)(words[i >> 1] >> (16 * (i & 1))));
#endif
}

/* One unit's partials merged: part holds `splits` slots from `slot0` on, each of
 * pass_heads * (head_dim + 2) floats; o: the unit's heads' outputs (stride head_dim); sinks: the
 * unit's heads' (0: none). */
MKC_DEVICE void mkc_attention_merge(const float *part, int slot0, int splits, int pass_heads,
                                    int gh, int head_dim, const mkc_bf16 *sinks, float *o) {
  int slot = pass_heads * (head_dim + 2);
  for (int e = mkc_tid(); e < gh * head_dim; e += MKC_THREADS) {
    int h = e / head_dim;
    float m = MKC_NEG_MAX;
    for (int i = 0; i < splits; i++)
      m = fmaxf(m, part[(long)(slot0 + i) * slot + pass_heads * head_dim + h]);
    float l = 0.0f, acc = 0.0f;
    for (int i = 0; i < splits; i++) {
      const float *p = part + (long)(slot0 + i) * slot;
      float w = expf(p[pass_heads * head_dim + h] - m);
      l += w * p[pass_heads * head_dim + pass_heads + h];
      acc += w * p[e];
    }
    o[e] = mkc_att_out(acc, l, m, sinks, h);
  }
}

/* Not inlined: inlined at each of llama-3.2-1b's 16 attention stages inside
 * the rounds loop it took ptxas to 234 registers (2 blocks per SM); called,
 * the kernel keeps 168, no spills, no stack. */
MKC_DEVICE_CALLED void mkc_attention(const float *q, int q_stride, const mkc_kv *k_cache,
                                     const mkc_kv *v_cache, float *out, int out_stride, int heads,
                                     int group, int pass_heads, int head_dim, int vec, int kv_rows,
                                     int window, float scale, const mkc_bf16 *sinks, int pos, int T,
                                     const mkc_rowmap *rows, float *part, unsigned *counters,
                                     float *q_s, float *sc2, float *stat, float *red) {
  const int kv_heads = heads / group, passes = (group + pass_heads - 1) / pass_heads;
  const int nv = head_dim / vec; /* vectors per row */
  int L = 1;                     /* lanes per K row (scores) */
  while (L < nv && L < 32) L <<= 1;
  const int R = 32 / L;           /* K rows per warp at a time */
  const int P = MKC_THREADS / nv; /* V position slices (p.v) */
  const int lane = mkc_lane(), row = lane / L, sub = lane % L;
  const int v_at = mkc_tid() % nv, slice = mkc_tid() / nv;
  /* splits: as many spans as fill the grid, of MKC_ATT_SPLIT_MIN positions at least; the same for
   * every unit */
  const int units = kv_heads * passes * T;
  int longest = 0; /* the most positions a row sees */
  for (int t = 0; t < T; t++) {
    int n = mkc_row_pos(rows, pos, t) + 1, see = window > 0 && n > window ? window : n;
    longest = see > longest ? see : longest;
  }
  int splits = mkc_nblocks() / units;
  if (splits > longest / MKC_ATT_SPLIT_MIN) splits = longest / MKC_ATT_SPLIT_MIN;
  if (splits < 1) splits = 1;
  float *m_run = stat, *l_run = stat + MKC_ATT_HEADS, *alpha = stat + 2 * MKC_ATT_HEADS;
  float *bred = stat + 3 * MKC_ATT_HEADS; /* MKC_WARPS floats: mkc_block_sum's */
  for (int item = mkc_bid(); item < units * splits; item += mkc_nblocks()) {
    int unit = item / splits, c = item - unit * splits;
    int t = unit / (kv_heads * passes), gp = unit - t * (kv_heads * passes);
    int g = gp / passes, h0 = g * group + (gp - g * passes) * pass_heads; /* first query head */
    int gh = group - (h0 - g * group) < pass_heads ? group - (h0 - g * group) : pass_heads;
    int n = mkc_row_pos(rows, pos, t) + 1, lo = window > 0 && n > window ? n - window : 0;
    int span = (n - lo + splits - 1) / splits;
    int a = lo + c * span, b = a + span < n ? a + span : n; /* this item's positions [a, b) */
    const mkc_kv *K = k_cache + (long)g * kv_rows * head_dim;
    const mkc_kv *V = v_cache + (long)g * kv_rows * head_dim;
    for (int e = mkc_tid(); e < gh * head_dim; e += MKC_THREADS)
      q_s[e] = q[t * q_stride + h0 * head_dim + e] * scale;
    if (mkc_tid() < pass_heads) {
      m_run[mkc_tid()] = MKC_NEG_MAX;
      l_run[mkc_tid()] = 0.0f;
    }
    float acc[MKC_ATT_HEADS][8];
    for (int h = 0; h < MKC_ATT_HEADS; h++)
      for (int k = 0; k < 8; k++) acc[h][k] = 0.0f;
    mkc_sync_block();
    for (int s0 = a, buf = 0; s0 < b; s0 += MKC_ATT_TILE, buf ^= 1) {
      /* sc: the tile's scores, in the buffer the previous tile's p.v is not reading */
      int len = b - s0 < MKC_ATT_TILE ? b - s0 : MKC_ATT_TILE;
      float *sc = sc2 + buf * pass_heads * MKC_ATT_TILE;
#if MKC_ATT_PREFETCH
      /* the tile's K and V rows, a 128-byte line per thread at a time */
      const int lines = (head_dim * (int)sizeof(mkc_kv) + 127) / 128;
      for (int e = mkc_tid(); e < 2 * len * lines; e += MKC_THREADS) {
        int r = e % (len * lines);
        const mkc_kv *row =
            (e < len * lines ? K : V) + mkc_kv_at(rows, t, s0 + r / lines, kv_rows, head_dim);
        mkc_prefetch((const char *)row + 128 * (r % lines));
      }
#endif
      /* scores: R rows per warp, L lanes per row, each lane a vector at a time */
      for (int i0 = mkc_warp() * R; i0 < len; i0 += MKC_WARPS * R) {
        int i = i0 + row;
        float dot[MKC_ATT_HEADS] = {0.0f};
        if (i < len)
          for (int j = sub; j < nv; j += L) {
            float kf[8];
            mkc_kv_vec(K + mkc_kv_at(rows, t, s0 + i, kv_rows, head_dim) + j * vec, vec, kf);
            for (int h = 0; h < pass_heads; h++)
              for (int k = 0; k < vec; k++) dot[h] += q_s[h * head_dim + j * vec + k] * kf[k];
          }
        mkc_warp_sum_width(dot, pass_heads, L); /* a row's L lanes */
        if (i < len && sub == 0)
          for (int h = 0; h < gh; h++) sc[h * MKC_ATT_TILE + i] = mkc_score(dot[h]);
      }
      mkc_sync_block();
      /* online softmax: a warp per head; sc becomes the tile's weights exp(s - m) */
      for (int h = mkc_warp(); h < gh; h += MKC_WARPS) {
        float tm = MKC_NEG_MAX;
        for (int i = lane; i < len; i += 32) tm = fmaxf(tm, sc[h * MKC_ATT_TILE + i]);
        float m_old = m_run[h], m = fmaxf(m_old, mkc_warp_max(tm)), sum = 0.0f;
        for (int i = lane; i < len; i += 32) {
          float e = expf(sc[h * MKC_ATT_TILE + i] - m);
          sc[h * MKC_ATT_TILE + i] = e;
          sum += e;
        }
        sum = mkc_warp_sum(sum);
        /* every lane's read of m_run[h] before lane 0 rewrites it: a shuffle orders
         * no memory (compute-sanitizer racecheck on an H100 reported the hazard) */
        mkc_sync_warp();
        if (lane == 0) {
          alpha[h] = expf(m_old - m);
          l_run[h] = l_run[h] * alpha[h] + sum;
          m_run[h] = m;
        }
      }
      mkc_sync_block();
      /* p.v: thread (slice, v_at) takes the slice's positions of vector v_at of each head */
      if (slice < P) {
        for (int h = 0; h < pass_heads; h++)
          for (int k = 0; k < vec; k++) acc[h][k] *= alpha[h];
        for (int i = slice; i < len; i += P) {
          float vf[8];
          mkc_kv_vec(V + mkc_kv_at(rows, t, s0 + i, kv_rows, head_dim) + v_at * vec, vec, vf);
          for (int h = 0; h < pass_heads; h++) {
            float p = sc[h * MKC_ATT_TILE + i];
            for (int k = 0; k < vec; k++) acc[h][k] += p * vf[k];
          }
        }
      }
      /* no barrier: the next tile's scores go to the other buffer, and its softmax (alpha)
       * comes after the barrier that follows them, which every thread reaches after this p.v */
    }
    /* the slices' accumulators summed: red[slice][h][d] */
    if (slice < P)
      for (int h = 0; h < gh; h++)
        for (int k = 0; k < vec; k++)
          red[(slice * pass_heads + h) * head_dim + v_at * vec + k] = acc[h][k];
    mkc_sync_block();
    float *slot = part + (long)item * pass_heads * (head_dim + 2);
    for (int e = mkc_tid(); e < gh * head_dim; e += MKC_THREADS) {
      int h = e / head_dim;
      float sum = 0.0f;
      for (int p = 0; p < P; p++) sum += red[p * pass_heads * head_dim + e];
      if (splits == 1)
        out[t * out_stride + h0 * head_dim + e] =
            mkc_att_out(sum, l_run[h], m_run[h], sinks, h0 + h);
      else
        slot[e] = sum;
    }
    if (splits > 1) {
      if (mkc_tid() < gh) {
        slot[pass_heads * head_dim + mkc_tid()] = m_run[mkc_tid()];
        slot[pass_heads * head_dim + pass_heads + mkc_tid()] = l_run[mkc_tid()];
      }
      mkc_sync_block();  /* the block's partial written before it is counted */
      float last = 0.0f; /* 1 in thread 0 when this block completes the unit */
      if (mkc_tid() == 0) {
        mkc_fence(); /* release: the partial is visible before it is counted */
        if (mkc_atomic_add_u32(&counters[unit], 1u) + 1u == (unsigned)splits) {
          mkc_fence(); /* acquire: the unit's other partials, counted before ours */
          mkc_store_u32(&counters[unit], 0u);
          last = 1.0f;
        }
      }
      if (mkc_block_sum(last, bred) > 0.0f) /* its barriers hand thread 0's verdict to all */
        mkc_attention_merge(part, unit * splits, splits, pass_heads, gh, head_dim,
                            sinks ? sinks + h0 : sinks, out + t * out_stride + h0 * head_dim);
    }
    mkc_sync_block(); /* q_s, stat and red are rewritten by the next item */
  }
}
