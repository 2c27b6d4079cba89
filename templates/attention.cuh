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
/* The K or V rows a thread loads before it uses the first of them, in the scores and in p.v
 * (each load one vector of a row). One at a time, a 4096-position step's item walked its 62
 * positions in 4 dependent round trips for K and 4 for V. */
#ifndef MKC_ATT_AHEAD
#define MKC_ATT_AHEAD 4
#endif
typedef char mkc_att_ahead_fits[MKC_ATT_AHEAD >= 1 && MKC_ATT_AHEAD <= 8 ? 1 : -1];

/* w (1, or 16 bytes' worth) cache elements from p, as loaded: 16 bytes, or the one element
 * widened, its bits in x (mkc_kv_widen gives the floats). */
MKC_DEVICE mkc_u4 mkc_kv_load(const mkc_kv *p, int w) {
  if (w != 1) return mkc_load_u4(p);
  mkc_u4 u = {mkc_f32_bits(mkc_kv_to_f32(p[0])), 0u, 0u, 0u};
  return u;
}

/* mkc_kv_load's elements as floats. */
MKC_DEVICE void mkc_kv_widen(mkc_u4 u, int w, float *f) {
  if (w == 1) {
    f[0] = mkc_bits_f32(u.x);
    return;
  }
  unsigned words[4] = {u.x, u.y, u.z, u.w};
#if defined(MKC_KV_F32)
  for (int i = 0; i < 4; i++) f[i] = mkc_bits_f32(words[i]);
#else
  for (int i = 0; i < 8; i++) f[i] = mkc_kv_to_f32((mkc_kv)(words[i >> 1] >> (16 * (i & 1))));
#endif
}

/* w cache elements from p, as floats. */
MKC_DEVICE void mkc_kv_vec(const mkc_kv *p, int w, float *f) {
  mkc_kv_widen(mkc_kv_load(p, w), w, f);
}

/* The floats of a partial's slot: a query head's acc[head_dim] for each of pass_heads, then
 * their m, then their l, rounded up to whole 16-byte vectors (buffers.lua plans the same). */
MKC_DEVICE int mkc_att_slot_floats(int pass_heads, int head_dim) {
  return (pass_heads * (head_dim + 2) + 3) & ~3;
}

/* One unit's partials merged: part holds `splits` slots from `slot0` on (mkc_att_slot_floats
 * each); o: the unit's gh heads' outputs (stride head_dim); sinks: the unit's heads' (0: none).
 * The block shares the work (one thread walking every split for its elements took 20-odd
 * dependent L2 round trips at 66 splits): a warp a head takes the head's max m over the splits,
 * each split's weight exp(m_i - m) (wts: smem, wcap floats a head, the splits a chunk of wcap at
 * a time) and the sum l; then `groups` groups of threads each add their share of the splits for
 * every element, 4 elements a thread where a head is whole vectors, MKC_ATT_AHEAD splits loaded
 * before the first is added, into red (red_floats of smem, a group's sums each); and the groups'
 * sums are added in group order, so the bits are the same on every run. mst: 2 * MKC_ATT_HEADS
 * floats of smem. */
MKC_DEVICE void mkc_attention_merge(const float *part, int slot0, int splits, int pass_heads,
                                    int gh, int head_dim, const mkc_bf16 *sinks, float *o,
                                    float *wts, int wcap, float *red, int red_floats, float *mst) {
  const int slot = mkc_att_slot_floats(pass_heads, head_dim), ms = pass_heads * head_dim;
  const int n = gh * head_dim, w = head_dim % 4 ? 1 : 4, cols = n / w; /* vectors of w elements */
  const float *base = part + (long)slot0 * slot;
  for (int h = mkc_warp(); h < gh; h += MKC_WARPS) { /* each head's m and l over the splits */
    float m = MKC_NEG_MAX, l = 0.0f;
    for (int i = mkc_lane(); i < splits; i += 32) m = fmaxf(m, base[(long)i * slot + ms + h]);
    m = mkc_warp_max(m);
    for (int i = mkc_lane(); i < splits; i += 32) {
      const float *p = base + (long)i * slot;
      float wt = expf(p[ms + h] - m);
      l += wt * p[ms + pass_heads + h];
      if (i < wcap) wts[h * wcap + i] = wt; /* the first chunk's weights */
    }
    l = mkc_warp_sum(l);
    if (mkc_lane() == 0) {
      mst[h] = m;
      mst[MKC_ATT_HEADS + h] = l;
    }
  }
  int groups = MKC_THREADS / cols;
  if (groups > red_floats / n) groups = red_floats / n;
  if (groups < 1) groups = 1;
  const int grp = mkc_tid() / cols; /* this thread's group: < groups where it has one */
  mkc_sync_block();                 /* mst and the first chunk's weights written */
  for (int c0 = 0; c0 < splits; c0 += wcap) {
    int cn = splits - c0 < wcap ? splits - c0 : wcap;
    if (c0) { /* the weights of a chunk past the first: split c0 + i's, head hh */
      for (int e = mkc_tid(); e < gh * cn; e += MKC_THREADS) {
        int hh = e / cn, i = e - hh * cn;
        wts[hh * wcap + i] = expf(base[(long)(c0 + i) * slot + ms + hh] - mst[hh]);
      }
      mkc_sync_block();
    }
    /* vector cc's sum over this group's splits of the chunk (the loads past the chunk read its
     * last split again, and add 0) */
    for (int cc = mkc_tid() % cols; grp < groups && cc < cols; cc += MKC_THREADS) {
      const int hc = cc * w / head_dim;
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int i = grp; i < cn; i += groups * MKC_ATT_AHEAD) {
        float v[MKC_ATT_AHEAD][4];
        MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) {
          int iu = i + u * groups < cn ? i + u * groups : cn - 1;
          const float *p = base + (long)(c0 + iu) * slot + cc * w;
          mkc_f4 f = {0.0f, 0.0f, 0.0f, 0.0f};
          if (w == 4)
            f = mkc_load_f4(p);
          else
            f.x = p[0];
          v[u][0] = f.x;
          v[u][1] = f.y;
          v[u][2] = f.z;
          v[u][3] = f.w;
        }
        MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) { /* every load used (as in p.v) */
          int in = i + u * groups < cn;
          float wt = in ? wts[hc * wcap + i + u * groups] : 0.0f;
          for (int k = 0; k < w; k++) acc[k] += wt * (in ? v[u][k] : 0.0f);
        }
      }
      float *r = red + grp * n + cc * w;
      for (int k = 0; k < w; k++) r[k] = c0 ? r[k] + acc[k] : acc[k];
    }
    mkc_sync_block(); /* wts rewritten by the next chunk; red whole after the last */
  }
  for (int e = mkc_tid(); e < n; e += MKC_THREADS) {
    int he = e / head_dim;
    float sum = 0.0f;
    for (int g = 0; g < groups; g++) sum += red[g * n + e];
    o[e] = mkc_att_out(sum, mst[MKC_ATT_HEADS + he], mst[he], sinks, he);
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
    float *ra = red + slice * pass_heads * head_dim + v_at * vec; /* this thread's p.v sums */
    if (a >= b && slice < P) /* no positions, no tile: the sums are 0 */
      for (int h = 0; h < pass_heads; h++)
        for (int k = 0; k < vec; k++) ra[h * head_dim + k] = 0.0f;
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
      /* scores: R rows per warp, L lanes per row, each lane a vector at a time; a lane's first
       * vector of MKC_ATT_AHEAD rows loaded before the first is used (rows past the tile load
       * its last row again, and store nothing) */
      for (int i0 = mkc_warp() * R; i0 < len; i0 += MKC_WARPS * R * MKC_ATT_AHEAD) {
        mkc_u4 kr[MKC_ATT_AHEAD];
        MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) {
          int i = i0 + u * MKC_WARPS * R + row;
          const mkc_kv *kp =
              K + mkc_kv_at(rows, t, s0 + (i < len ? i : len - 1), kv_rows, head_dim);
          kr[u] = mkc_kv_load(kp + (sub < nv ? sub : 0) * vec, vec);
        }
        MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) {
          int i = i0 + u * MKC_WARPS * R + row;
          if (i0 + u * MKC_WARPS * R >= len) break; /* the warp's rows past the tile */
          float dot[MKC_ATT_HEADS] = {0.0f};
          if (i < len)
            for (int j = sub; j < nv; j += L) {
              float kf[8];
              if (j == sub)
                mkc_kv_widen(kr[u], vec, kf);
              else
                mkc_kv_vec(K + mkc_kv_at(rows, t, s0 + i, kv_rows, head_dim) + j * vec, vec, kf);
              for (int h = 0; h < pass_heads; h++)
                for (int k = 0; k < vec; k++) dot[h] += q_s[h * head_dim + j * vec + k] * kf[k];
            }
          mkc_warp_sum_width(dot, pass_heads, L); /* a row's L lanes */
          if (i < len && sub == 0)
            for (int h = 0; h < gh; h++) sc[h * MKC_ATT_TILE + i] = mkc_score(dot[h]);
        }
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
        /* the thread's sums so far, kept in red between tiles (its own floats there): in
         * registers through the scores, they left too few for K's loads ahead */
        float acc[MKC_ATT_HEADS][8];
        for (int h = 0; h < pass_heads; h++)
          for (int k = 0; k < vec; k++)
            acc[h][k] = (s0 == a ? 0.0f : ra[h * head_dim + k]) * alpha[h];
        /* MKC_ATT_AHEAD of the slice's positions loaded before the first is used (past the
         * tile: its last row again, adding 0) */
        for (int i0 = slice; i0 < len; i0 += P * MKC_ATT_AHEAD) {
          mkc_u4 vr[MKC_ATT_AHEAD];
          MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) {
            int i = i0 + u * P < len ? i0 + u * P : len - 1;
            vr[u] =
                mkc_kv_load(V + mkc_kv_at(rows, t, s0 + i, kv_rows, head_dim) + v_at * vec, vec);
          }
          /* every load used, past the tile as 0 * 0: a load whose use a branch skips is moved
           * down to its use by the compiler, one round trip at a time again */
          MKC_UNROLL for (int u = 0; u < MKC_ATT_AHEAD; u++) {
            int i = i0 + u * P, in = i < len;
            float vf[8];
            mkc_kv_widen(vr[u], vec, vf);
            for (int k = 0; k < vec; k++) vf[k] = in ? vf[k] : 0.0f;
            for (int h = 0; h < pass_heads; h++) {
              float p = in ? sc[h * MKC_ATT_TILE + i] : 0.0f;
              for (int k = 0; k < vec; k++) acc[h][k] += p * vf[k];
            }
          }
        }
        for (int h = 0; h < pass_heads; h++)
          for (int k = 0; k < vec; k++) ra[h * head_dim + k] = acc[h][k];
      }
      /* no barrier: the next tile's scores go to the other buffer, and its softmax (alpha)
       * comes after the barrier that follows them, which every thread reaches after this p.v */
    }
    /* the slices' accumulators (red[slice][h][d]) summed */
    mkc_sync_block();
    float *slot = part + (long)item * mkc_att_slot_floats(pass_heads, head_dim);
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
                            sinks ? sinks + h0 : sinks, out + t * out_stride + h0 * head_dim, sc2,
                            2 * MKC_ATT_TILE, red, P * pass_heads * head_dim, stat);
    }
    mkc_sync_block(); /* q_s, stat and red are rewritten by the next item */
  }
}
