/* Prompt chunks on tensor cores: a step of T > MKC_T_MAX inputs (all known)
 * runs its matmuls as tiled products, out[t][r] = W[r] . x[t] for a tile of
 * MKC_GEMM_BM tokens by MKC_GEMM_BN weight rows per block, with mma.sync
 * m16n8k8 tf32 (the preludes' mkc_mma_tf32). Each block stages a slice of
 * MKC_GEMM_BK columns of the tile's inputs and weights in shared memory as
 * floats, its 2 x 2 warps (more warps only help stage) each own 32 tokens by
 * 32 rows of the tile, and the finished tile goes through shared memory to
 * the stage's epilogue: store or add (matvec), SwiGLU, or Q/K/V with bias,
 * head norm, RoPE and the KV append.
 *
 * Precision: tf32 keeps 11 significant bits, so each input value is split
 * into a high and a low tf32 part (a = hi + lo within 2^-22 of a) and both go
 * through the tensor core: a bf16 weight is exact in tf32; a quantized one,
 * decoded to its exact float value (weights.cuh), is split too (hi * hi,
 * lo * hi, hi * lo), so the sums are as close to float's as the CUDA-core
 * path's (docs/DECISIONS.md). The fused RMSNorm is the CUDA-core path's: x
 * scaled by the norm weight per column, the product by 1 / rms per token in
 * the epilogue; the sum of squares is gathered while x is staged. */
#if MKC_THREADS != 128 && MKC_THREADS != 256
#error "prompt chunks (templates/gemm.cuh) are staged by blocks of 128 or 256 threads"
#endif
/* The tile (MKC_GEMM_BM x MKC_GEMM_BN, slices of MKC_GEMM_BK) comes from
 * codegen, which plans the shared memory; the warps' layout is this file's. */
#if MKC_GEMM_BM != 64 || MKC_GEMM_BN != 64 || MKC_GEMM_BK % 8 != 0
#error "prompt chunk tiles are 64 x 64 (2 x 2 warps of 32 x 32), slices a multiple of 8"
#endif
#define MKC_GEMM_LD (MKC_GEMM_BK + 4) /* smem row stride: a fragment load hits 32 banks */
#define MKC_MMA_MT 2                  /* a warp's m16 tiles: 32 tokens */
#define MKC_MMA_NT 4                  /* a warp's n8 tiles: 32 weight rows */

/* The stage's matrices end to end (q, k, v; gate, up; or one): virtual row r
 * is row r of m[0], then row r - rows[0] of m[1], ... */
typedef struct mkc_wcat {
  mkc_wmat m[3];
  int rows[3];
} mkc_wcat;

MKC_DEVICE mkc_wcat mkc_wcat_of(mkc_wmat a, int a_rows, mkc_wmat b, int b_rows, mkc_wmat c,
                                int c_rows) {
  mkc_wcat w;
  w.m[0] = a;
  w.m[1] = b;
  w.m[2] = c;
  w.rows[0] = a_rows;
  w.rows[1] = b_rows;
  w.rows[2] = c_rows;
  return w;
}

/* Written out, not a loop: for sm_100 and later NVRTC kept the loop, and w with it in local
 * memory (64 B of stack). */
MKC_DEVICE mkc_wrow mkc_wcat_row(mkc_wcat w, int r) {
  if (r < w.rows[0]) return mkc_wmat_row(w.m[0], r);
  r -= w.rows[0];
  if (r < w.rows[1]) return mkc_wmat_row(w.m[1], r);
  r -= w.rows[1];
  if (r < w.rows[2]) return mkc_wmat_row(w.m[2], r);
  return mkc_wrow_none();
}

/* Column j of a tile (of MKC_GEMM_BN) is virtual row base[j / 32] + j % 32, or
 * none when j % 32 >= len[j / 32]: the two halves are the two warp columns. */
typedef struct mkc_gemm_cols {
  int base[2], len[2];
} mkc_gemm_cols;

MKC_DEVICE mkc_gemm_cols mkc_gemm_cols_of(int base0, int len0, int base1, int len1) {
  mkc_gemm_cols c;
  c.base[0] = base0;
  c.base[1] = base1;
  c.len[0] = len0 < 0 ? 0 : len0 > 32 ? 32 : len0;
  c.len[1] = len1 < 0 ? 0 : len1 > 32 ? 32 : len1;
  return c;
}

/* Stages columns k0 .. k0 + MKC_GEMM_BK - 1 of the tile: a_tile[r][k] =
 * x[m0 + r][k] * norm_w[k] (0 past T or past the row), w_tile[j][k] = the
 * weight of column j (0 for none); this thread's squares of x go to ssq_part.
 * Thread i stages the same rows (i / 8 + 16 s) and columns in every slice. */
MKC_DEVICE void mkc_gemm_stage(const mkc_wrow *wr, int n_chunks, const float *x, int x_stride,
                               const mkc_bf16 *norm_w, int m0, int T, int k0, float *a_tile,
                               float *w_tile, float *ssq_part) {
  const int tid = mkc_tid(); /* read once: mkc_tid is volatile (templates/prelude_cuda.cuh) */
  MKC_UNROLL for (int s = 0; s < MKC_GEMM_BM * MKC_GEMM_BK / 4 / MKC_THREADS; s++) {
    int idx = tid + s * MKC_THREADS, r = idx / (MKC_GEMM_BK / 4);
    int k = k0 + (idx % (MKC_GEMM_BK / 4)) * 4;
    mkc_f4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (m0 + r < T && k < n_chunks * 8) {
      v = mkc_load_f4(x + (long)(m0 + r) * x_stride + k);
      ssq_part[s] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      if (norm_w) {
        v.x *= mkc_bf16_to_f32(norm_w[k]);
        v.y *= mkc_bf16_to_f32(norm_w[k + 1]);
        v.z *= mkc_bf16_to_f32(norm_w[k + 2]);
        v.w *= mkc_bf16_to_f32(norm_w[k + 3]);
      }
    }
    float *a = a_tile + r * MKC_GEMM_LD + (k - k0);
    a[0] = v.x;
    a[1] = v.y;
    a[2] = v.z;
    a[3] = v.w;
  }
  MKC_UNROLL for (int s = 0; s < MKC_GEMM_BN * MKC_GEMM_BK / 8 / MKC_THREADS;
                  s++) { /* wr[s]: registers */
    int idx = tid + s * MKC_THREADS, j = idx / (MKC_GEMM_BK / 8);
    int c = k0 / 8 + idx % (MKC_GEMM_BK / 8);
    /* decoded straight into the tile: through a float[8] of its own, whose type is known only
     * here, the decoders' cases kept it in local memory */
    float *w = w_tile + j * MKC_GEMM_LD + (c * 8 - k0);
    if (wr[s].p && c < n_chunks) {
      if (wr[s].type == MKC_W_BF16)
        mkc_unpack8(mkc_load_u4(wr[s].p + 16 * c), w);
      else
        mkc_wchunk(wr[s].type, wr[s].p, c, w);
    } else {
      for (int i = 0; i < 8; i++) w[i] = 0.0f;
    }
  }
}

#ifdef MKC_CPU
/* mkc_gemm_tile's results worked out by one thread for the whole block (the
 * emulator, off the checking schedule): every lane's fragments, their queue
 * and their gathering in the warp meetings cost the emulator several times
 * the products themselves. The same tf32 halves of the same staged values,
 * each product added in the order the emulated mma.sync adds it (per k-step
 * of 8: hi x hi, lo x hi, hi x lo, each in k order), to the same outputs, and
 * the sums of squares in the lanes' order: c_tile and inv_rms are the lanes'
 * bit for bit (test_gemm_tile). The products of two tf32 values are exact, so
 * a fused multiply-add rounds as the multiply and add do; products with a
 * zero operand (rows past T, columns past the row) leave a sum that starts at
 * +0 as it is, and are skipped. */
typedef float mkc_gemm_v8f __attribute__((vector_size(32)));
#define MKC_GEMM_SK 32 /* columns worked out at a time: a slice's halves fit in L1 */
/* 8 floats' tf32 high and low parts (mkc_tf32 of v, then of v less the high
 * part), each the operand the emulated tensor core reads from a register: its
 * top 19 bits. The scalar mkc_tf32's cases, lane by lane: the same bits. */
MKC_DEVICE_INLINE void mkc_tf32_split8(const float *v, float *hi, float *lo) {
  mkc_gemm_v8f f, h;
  mkc_v8u32 u[2];
  memcpy(&f, v, sizeof f);
  memcpy(&u[0], &f, sizeof u[0]);
  for (int part = 0; part < 2; part++) {
    mkc_v8u32 w = u[part], r = (w + 0x1000u) & 0xffffe000u;
    mkc_v8u32 kept = (mkc_v8u32)((w & 0x7f800000u) == 0x7f800000u); /* inf and NaN */
    mkc_v8u32 nan = (mkc_v8u32)((w & 0x7fffffffu) > 0x7f800000u);
    r = (r & ~kept) | (w & kept);
    r = (r & ~nan) | (0x7fffe000u & nan);
    if (part == 0) {
      memcpy(&h, &r, sizeof h);
      mkc_gemm_v8f rest = f - h;
      memcpy(&u[1], &rest, sizeof u[1]);
    }
    r &= 0xffffe000u;
    memcpy(part ? lo : hi, &r, sizeof r);
  }
}

__attribute__((noinline)) static void
mkc_gemm_tile_block(mkc_wcat w, mkc_gemm_cols cols, int quantized, int n_chunks, const float *x,
                    int x_stride, int n_x, const mkc_bf16 *norm_w, float eps, int m0, int T,
                    float *c_tile, int c_stride, int c_col, float *inv_rms) {
  /* 48 KiB of the fiber's 256 (a static __thread copy cost a call per use: the kernel is a
   * dlopen'ed library) */
  float a_op[2][MKC_GEMM_BM][MKC_GEMM_SK] __attribute__((aligned(32))); /* hi, lo */
  mkc_gemm_v8f b_op[2][8][MKC_GEMM_SK];                                 /* hi, lo; n-tile, k */
  mkc_gemm_v8f d[MKC_GEMM_BM][8];                                       /* row, n-tile */
  const int K = n_chunks * 8, m_in = T - m0 < 0 ? 0 : T - m0 < MKC_GEMM_BM ? T - m0 : MKC_GEMM_BM;
  /* the rows and n-tiles the warps write: whole m16 tiles of tokens, n8 tiles of rows */
  int m_out = (m_in + 15) / 16 * 16, n_tiles[2];
  for (int h = 0; h < 2; h++) n_tiles[h] = (cols.len[h] + 7) / 8;
  mkc_wrow wr[MKC_GEMM_BN];
  for (int j = 0; j < MKC_GEMM_BN; j++) {
    int h = j / 32, len = cols.len[h];
    wr[j] = j % 32 < len ? mkc_wcat_row(w, cols.base[h] + j % 32) : mkc_wrow_none();
  }
  for (int r = 0; r < m_out; r++)
    for (int n = 0; n < 8; n++) d[r][n] = (mkc_gemm_v8f){0};
  /* the rows past m_in of the last group of 8: read with the others, their sums never kept */
  for (int r = m_in; r < (m_in + 7) / 8 * 8; r++)
    for (int k = 0; k < MKC_GEMM_SK; k++) a_op[0][r][k] = a_op[1][r][k] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += MKC_GEMM_SK) {
    int sk = K - k0 < MKC_GEMM_SK ? K - k0 : MKC_GEMM_SK;
    for (int r = 0; r < m_in; r++)
      for (int k = 0; k < sk; k += 8) {
        float v[8];
        memcpy(v, x + (long)(m0 + r) * x_stride + k0 + k, sizeof v);
        if (norm_w)
          for (int i = 0; i < 8; i++) v[i] *= mkc_bf16_to_f32(norm_w[k0 + k + i]);
        mkc_tf32_split8(v, &a_op[0][r][k], &a_op[1][r][k]);
      }
    for (int n = 0; n < 8; n++) {
      if (n % 4 >= n_tiles[n / 4]) continue;
      for (int e = 0; e < 8; e++) {
        const mkc_wrow *wj = &wr[8 * n + e];
        for (int c = k0 / 8; c < (k0 + sk) / 8; c++) {
          float f[8];
          if (!wj->p)
            for (int i = 0; i < 8; i++) f[i] = 0.0f;
          else if (wj->type == MKC_W_BF16)
            mkc_unpack8(mkc_load_u4(wj->p + 16 * c), f);
          else
            mkc_wchunk(wj->type, wj->p, c, f);
          float hi[8], lo[8];
          mkc_tf32_split8(f, hi, lo);
          for (int i = 0; i < 8; i++) {
            b_op[0][n][c * 8 + i - k0][e] = hi[i];
            b_op[1][n][c * 8 + i - k0][e] = quantized ? lo[i] : 0.0f;
          }
        }
      }
    }
    for (int n = 0; n < 8; n++) {
      if (n % 4 >= n_tiles[n / 4]) continue;
      /* 8 rows at a time: 8 chains of additions in flight */
      for (int r0 = 0; r0 < m_in; r0 += 8) {
        int nr = m_in - r0 < 8 ? m_in - r0 : 8;
        mkc_gemm_v8f acc[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) acc[i] = d[r0 + i][n];
        for (int ks = 0; ks < sk; ks += 8)
          for (int p = 0; p < (quantized ? 3 : 2); p++) { /* (hi, hi), (lo, hi), (hi, lo) */
            const float(*a)[MKC_GEMM_SK] = a_op[p == 1] + r0;
            const mkc_gemm_v8f *b = b_op[p == 2][n] + ks;
            for (int k = 0; k < 8; k++)
#pragma GCC unroll 8
              for (int i = 0; i < 8; i++) acc[i] += a[i][ks + k] * b[k];
          }
        for (int i = 0; i < nr; i++) d[r0 + i][n] = acc[i];
      }
    }
  }
  for (int r = 0; r < m_out; r++)
    for (int n = 0; n < 8; n++) {
      if (n % 4 >= n_tiles[n / 4]) continue;
      memcpy(c_tile + r * c_stride + c_col + 8 * n, &d[r][n], sizeof d[r][n]);
    }
  if (norm_w) /* each row's squares as the staging threads gather them, then added in order */
    for (int r = 0; r < MKC_GEMM_BM; r++) {
      float part[MKC_GEMM_BK / 4], s = 0.0f;
      for (int i = 0; i < MKC_GEMM_BK / 4; i++) part[i] = 0.0f;
      for (int k0 = 0; r < m_in && k0 < K; k0 += MKC_GEMM_BK)
        for (int i = 0; i < MKC_GEMM_BK / 4 && k0 + 4 * i < K; i++) {
          mkc_f4 v = mkc_load_f4(x + (long)(m0 + r) * x_stride + k0 + 4 * i);
          part[i] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
      for (int i = 0; i < MKC_GEMM_BK / 4; i++) s += part[i];
      inv_rms[r] = 1.0f / sqrtf(s / (float)n_x + eps);
    }
}
#endif

/* One tile: c_tile[r][c_col + j] = sum over k of a[m0 + r][k] w_j[k] for the
 * tile's rows r < MKC_GEMM_BM and columns j < MKC_GEMM_BN (cols says which),
 * and, with norm_w, inv_rms[r] = 1 / rms(x[m0 + r]) over its n_x values.
 * Rows past T and columns of none hold garbage. Ends synchronized: the tile
 * and inv_rms are the whole block's to read. quantized: some weight is not
 * bf16 (its low tf32 part is needed; the stage's literal, passed on). */
MKC_DEVICE_CALLED void mkc_gemm_tile_lanes(mkc_wcat w, mkc_gemm_cols cols, int quantized,
                                           int n_chunks, const float *x, int x_stride, int n_x,
                                           const mkc_bf16 *norm_w, float eps, int m0, int T,
                                           float *c_tile, int c_stride, int c_col, float *a_tile,
                                           float *w_tile, float *ssq, float *inv_rms) {
  /* the weight rows this thread stages: columns tid / (BK / 8) + (threads / (BK / 8)) s */
  mkc_wrow wr[MKC_GEMM_BN * MKC_GEMM_BK / 8 / MKC_THREADS];
  const int tid = mkc_tid(), lane = tid & 31; /* read once: mkc_tid is volatile */
  MKC_UNROLL for (int s = 0; s < MKC_GEMM_BN * MKC_GEMM_BK / 8 / MKC_THREADS; s++) {
    int j = (tid + s * MKC_THREADS) / (MKC_GEMM_BK / 8), half = j / 32;
    /* halves chosen by value: an index into cols would put cols in local memory */
    int len = half ? cols.len[1] : cols.len[0], base = half ? cols.base[1] : cols.base[0];
    wr[s] = j % 32 < len ? mkc_wcat_row(w, base + j % 32) : mkc_wrow_none();
  }
  /* this warp's quarter: 32 tokens x 32 rows, the m- and n-tiles that hold any */
  int warp = tid >> 5, wm = warp & 1, wn = (warp >> 1) & 1;
  int mt = (T - m0 - wm * 32 + 15) / 16, nt = ((wn ? cols.len[1] : cols.len[0]) + 7) / 8;
  mt = warp >= 4 || mt < 0 ? 0 : mt > MKC_MMA_MT ? MKC_MMA_MT : mt;
  if (warp >= 4) nt = 0;
  float acc[MKC_MMA_MT * MKC_MMA_NT * 4];
  for (int i = 0; i < MKC_MMA_MT * MKC_MMA_NT * 4; i++) acc[i] = 0.0f;
  float ssq_part[MKC_GEMM_BM * MKC_GEMM_BK / 4 / MKC_THREADS];
  for (int s = 0; s < MKC_GEMM_BM * MKC_GEMM_BK / 4 / MKC_THREADS; s++) ssq_part[s] = 0.0f;
  int g = lane >> 2, q = lane & 3;
  for (int k0 = 0; k0 < n_chunks * 8; k0 += MKC_GEMM_BK) {
    mkc_gemm_stage(wr, n_chunks, x, x_stride, norm_w, m0, T, k0, a_tile, w_tile, ssq_part);
    mkc_sync_block();
    if (mt > 0 && nt > 0) {
      for (int ks = 0; ks < MKC_GEMM_BK; ks += 8) {
        /* fragments in the PTX ISA's layout (m16n8k8, tf32): A rows g, g + 8 and columns q,
         * q + 4 of each m-tile; B (k x n = the weights' column x row) rows q, q + 4, column g */
        unsigned a[2 * MKC_MMA_MT * 4], b[2 * MKC_MMA_NT * 2];
        for (int i = 0; i < MKC_MMA_MT; i++) {
          const float *ar = a_tile + (wm * 32 + i * 16 + g) * MKC_GEMM_LD + ks + q;
          const float v[4] = {ar[0], ar[8 * MKC_GEMM_LD], ar[4], ar[8 * MKC_GEMM_LD + 4]};
          for (int r = 0; r < 4; r++) {
            unsigned hi = mkc_tf32(v[r]);
            a[i * 4 + r] = hi;
            a[(MKC_MMA_MT + i) * 4 + r] = mkc_tf32(v[r] - mkc_bits_f32(hi));
          }
        }
        for (int j = 0; j < MKC_MMA_NT; j++) {
          const float *br = w_tile + (wn * 32 + j * 8 + g) * MKC_GEMM_LD + ks + q;
          const float v[2] = {br[0], br[4]};
          for (int r = 0; r < 2; r++) {
            unsigned hi = mkc_tf32(v[r]);
            b[j * 2 + r] = hi;
            b[(MKC_MMA_NT + j) * 2 + r] = quantized ? mkc_tf32(v[r] - mkc_bits_f32(hi)) : 0u;
          }
        }
        mkc_mma_tf32_queue(a, b, quantized ? 2 : 1, acc, mt, nt, MKC_MMA_MT, MKC_MMA_NT);
      }
      mkc_mma_flush(acc); /* the slice's products, in order */
    }
    mkc_sync_block(); /* the slice is read before the next one is staged */
  }
  /* the accumulators (c0 (g, 2q), c1 (g, 2q + 1), c2 (g + 8, 2q), c3 (g + 8, 2q + 1)) */
  for (int i = 0; i < MKC_MMA_MT; i++)
    for (int j = 0; j < MKC_MMA_NT; j++) {
      if (i >= mt || j >= nt) continue;
      const float *d = acc + (i * MKC_MMA_NT + j) * 4;
      float *o = c_tile + (wm * 32 + i * 16 + g) * c_stride + c_col + wn * 32 + j * 8 + 2 * q;
      o[0] = d[0];
      o[1] = d[1];
      o[8 * c_stride] = d[2];
      o[8 * c_stride + 1] = d[3];
    }
  if (norm_w) {
    /* ssq[r][i]: the squares of row r's columns 4i .. 4i + 3 of every slice */
    for (int s = 0; s < MKC_GEMM_BM * MKC_GEMM_BK / 4 / MKC_THREADS; s++)
      ssq[tid + s * MKC_THREADS] = ssq_part[s];
    mkc_sync_block();
    for (int r = mkc_tid(); r < MKC_GEMM_BM; r += MKC_THREADS) {
      float s = 0.0f;
      for (int i = 0; i < MKC_GEMM_BK / 4; i++) s += ssq[r * (MKC_GEMM_BK / 4) + i];
      inv_rms[r] = 1.0f / sqrtf(s / (float)n_x + eps);
    }
  }
  mkc_sync_block();
}

/* mkc_gemm_tile_lanes, or on the emulator off the checking schedule the same
 * results by one thread (mkc_gemm_tile_block). */
MKC_DEVICE_CALLED void mkc_gemm_tile(mkc_wcat w, mkc_gemm_cols cols, int quantized, int n_chunks,
                                     const float *x, int x_stride, int n_x, const mkc_bf16 *norm_w,
                                     float eps, int m0, int T, float *c_tile, int c_stride,
                                     int c_col, float *a_tile, float *w_tile, float *ssq,
                                     float *inv_rms) {
#ifdef MKC_CPU
  if (!mkc_simt_checking()) {
    mkc_sync_block(); /* as the lanes' staging: the block is done with the last tile */
    if (mkc_tid() == 0)
      mkc_gemm_tile_block(w, cols, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, m0, T,
                          c_tile, c_stride, c_col, inv_rms);
    mkc_sync_block();
    return;
  }
#endif
  mkc_gemm_tile_lanes(w, cols, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, m0, T, c_tile,
                      c_stride, c_col, a_tile, w_tile, ssq, inv_rms);
}

/* The tiles of a stage, dealt to the blocks in turn: tokens fastest, so the
 * blocks that run at once share weight rows (one read from memory, the
 * others from L2). */
MKC_DEVICE int mkc_gemm_m_tiles(int T) { return (T + MKC_GEMM_BM - 1) / MKC_GEMM_BM; }

/* out[t][r] = W[r] . in[t] (times 1 / rms(in[t]) with norm_w; + bias[r] where bias is not 0), or +=
 * with accumulate (residual epilogue): the tiled twin of mkc_matvec. With best_v (the LM head's),
 * each row's best (value, r) over the block's tiles is kept in best_v[t], best_i[t] (smem; row m0 +
 * r is thread r's in every tile), the values capped and given their logit bias (st, rmap: as
 * mkc_lm_head's; 0 in any other matmul). */
MKC_DEVICE_CALLED void mkc_gemm_matvec(mkc_wmat w, int rows, int quantized, int n_chunks,
                                       const float *x, int x_stride, int n_x,
                                       const mkc_bf16 *norm_w, float eps, float *out,
                                       int out_stride, int accumulate, const mkc_bf16 *bias, int T,
                                       const mkc_state *st, const mkc_rowmap *rmap, float *best_v,
                                       int *best_i, float *a_tile, float *w_tile, float *c_tile,
                                       float *ssq, float *inv_rms) {
  mkc_wcat wc = mkc_wcat_of(w, rows, w, 0, w, 0);
  int m_tiles = mkc_gemm_m_tiles(T), n_tiles = (rows + MKC_GEMM_BN - 1) / MKC_GEMM_BN;
  const int biased = best_v && mkc_step_logit_biased(st, rmap); /* the LM head's, if any */
  for (int tile = mkc_bid(); tile < m_tiles * n_tiles; tile += mkc_nblocks()) {
    int m0 = (tile % m_tiles) * MKC_GEMM_BM, n0 = (tile / m_tiles) * MKC_GEMM_BN;
    mkc_gemm_cols cols = mkc_gemm_cols_of(n0, rows - n0, n0 + 32, rows - n0 - 32);
    mkc_gemm_tile(wc, cols, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, m0, T, c_tile,
                  MKC_GEMM_BN + 4, 0, a_tile, w_tile, ssq, inv_rms);
    for (int e = mkc_tid(); e < MKC_GEMM_BM * MKC_GEMM_BN; e += MKC_THREADS) {
      int r = e / MKC_GEMM_BN, j = e % MKC_GEMM_BN;
      if (m0 + r >= T || n0 + j >= rows) continue;
      float v = c_tile[r * (MKC_GEMM_BN + 4) + j] * (norm_w ? inv_rms[r] : 1.0f);
      if (best_v) /* the LM head's: capped and biased before they are written or ranked */
        v = mkc_logit(v) + (biased ? mkc_row_logit_bias(st, rmap, m0 + r, n0 + j) : 0.0f);
      mkc_put(out + (long)(m0 + r) * out_stride + n0 + j, v, bias, n0 + j, accumulate);
    }
    for (int r = mkc_tid(); best_v && r < MKC_GEMM_BM && m0 + r < T; r += MKC_THREADS)
      for (int j = 0; j < MKC_GEMM_BN && n0 + j < rows; j++) {
        float v = mkc_logit(c_tile[r * (MKC_GEMM_BN + 4) + j] * (norm_w ? inv_rms[r] : 1.0f)) +
                  (biased ? mkc_row_logit_bias(st, rmap, m0 + r, n0 + j) : 0.0f);
        if (mkc_better(v, n0 + j, best_v[m0 + r], best_i[m0 + r])) {
          best_v[m0 + r] = v;
          best_i[m0 + r] = n0 + j;
        }
      }
    mkc_sync_block(); /* c_tile and inv_rms are rewritten by the next tile */
  }
}

/* A wide slot step's LM head (templates/slots.cuh): logits[t] for every row
 * t < T, the tiled twin of mkc_lm_head, with its greedy partials: each
 * block's best (logit, id) per row to part_val[block][MKC_STEP_ROWS],
 * part_idx likewise, for mkc_accept. best_v, best_i: MKC_STEP_ROWS each. */
MKC_DEVICE_CALLED void mkc_gemm_lm_head(mkc_wmat w, int rows, int quantized, int n_chunks,
                                        const float *x, int x_stride, int n_x,
                                        const mkc_bf16 *norm_w, float eps, float *logits,
                                        int logits_stride, int T, float *part_val, int *part_idx,
                                        const mkc_state *st, const mkc_rowmap *rmap, float *best_v,
                                        int *best_i, float *a_tile, float *w_tile, float *c_tile,
                                        float *ssq, float *inv_rms) {
  /* no barrier: mkc_gemm_tile's come before any other thread reads these */
  for (int t = mkc_tid(); t < T; t += MKC_THREADS) {
    best_v[t] = MKC_NEG_MAX;
    best_i[t] = 0x7fffffff;
  }
  mkc_gemm_matvec(w, rows, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, logits,
                  logits_stride, 0, (const mkc_bf16 *)0, T, st, rmap, best_v, best_i, a_tile,
                  w_tile, c_tile, ssq, inv_rms);
  for (int t = mkc_tid(); t < T; t += MKC_THREADS) {
    part_val[mkc_bid() * MKC_STEP_ROWS + t] = best_v[t];
    part_idx[mkc_bid() * MKC_STEP_ROWS + t] = best_i[t];
  }
}

/* SwiGLU MLP input, out[t][r] = silu(gate[r] . in[t]) * (up[r] . in[t]): a
 * tile's left half is 32 gate rows, its right half the same 32 up rows. */
MKC_DEVICE_CALLED void mkc_gemm_swiglu(mkc_wmat w_gate, mkc_wmat w_up, int rows, int quantized,
                                       int n_chunks, const float *x, int x_stride, int n_x,
                                       const mkc_bf16 *norm_w, float eps, float *out,
                                       int out_stride, int T, float *a_tile, float *w_tile,
                                       float *c_tile, float *ssq, float *inv_rms) {
  mkc_wcat wc = mkc_wcat_of(w_gate, rows, w_up, rows, w_up, 0);
  int m_tiles = mkc_gemm_m_tiles(T), n_tiles = (rows + 31) / 32;
  for (int tile = mkc_bid(); tile < m_tiles * n_tiles; tile += mkc_nblocks()) {
    int m0 = (tile % m_tiles) * MKC_GEMM_BM, f0 = (tile / m_tiles) * 32;
    mkc_gemm_cols cols = mkc_gemm_cols_of(f0, rows - f0, rows + f0, rows - f0);
    mkc_gemm_tile(wc, cols, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, m0, T, c_tile,
                  MKC_GEMM_BN + 4, 0, a_tile, w_tile, ssq, inv_rms);
    for (int e = mkc_tid(); e < MKC_GEMM_BM * 32; e += MKC_THREADS) {
      int r = e / 32, j = e % 32;
      if (m0 + r >= T || f0 + j >= rows) continue;
      float scale = norm_w ? inv_rms[r] : 1.0f;
      float g = c_tile[r * (MKC_GEMM_BN + 4) + j] * scale;
      float u = c_tile[r * (MKC_GEMM_BN + 4) + 32 + j] * scale;
      out[(long)(m0 + r) * out_stride + f0 + j] = mkc_glu(g, u);
    }
    mkc_sync_block();
  }
}

/* One head of one token from the finished tile, as the CUDA-core path's
 * epilogue computes it: value i = c[i] * scale + bias[i]; q and k then their
 * head norm (norm_w, when the model has one) and RoPE at position at; q to
 * q_out, k and v rounded into the cache row kv_out. The whole warp: lanes
 * over the elements, then over the rotation pairs. */
MKC_DEVICE void mkc_gemm_head(const float *c, float scale, const mkc_bf16 *bias, int head_dim,
                              int rope, int layout, mkc_rope rotary, const mkc_bf16 *norm_w,
                              float eps, int at, float *q_out, mkc_kv *kv_out) {
  int half = head_dim / 2;
  if (!rope) {
    for (int i = mkc_lane(); i < head_dim; i += 32)
      kv_out[i] = mkc_kv_from_f32(c[i] * scale + (bias ? mkc_bf16_to_f32(bias[i]) : 0.0f));
    return;
  }
  float inv_rms = 1.0f;
  if (norm_w) {
    float ss = 0.0f;
    for (int i = mkc_lane(); i < head_dim; i += 32) {
      float v = c[i] * scale + (bias ? mkc_bf16_to_f32(bias[i]) : 0.0f);
      ss += v * v;
    }
    inv_rms = 1.0f / sqrtf(mkc_warp_sum(ss) / (float)head_dim + eps);
  }
  for (int j = mkc_lane(); j < half; j += 32) {
    int i0 = mkc_rope_dim0(j, head_dim, layout, rotary);
    int i1 = mkc_rope_dim1(j, head_dim, layout, rotary);
    float a = c[i0] * scale + (bias ? mkc_bf16_to_f32(bias[i0]) : 0.0f);
    float b = c[i1] * scale + (bias ? mkc_bf16_to_f32(bias[i1]) : 0.0f);
    if (norm_w) {
      a = a * inv_rms * mkc_bf16_to_f32(norm_w[i0]);
      b = b * inv_rms * mkc_bf16_to_f32(norm_w[i1]);
    }
    float mscale, inv_freq = mkc_rope_inv_freq(j, head_dim, rotary, &mscale);
    mkc_rope_pair(&a, &b, inv_freq, mscale, at);
    if (q_out) {
      q_out[i0] = a;
      q_out[i1] = b;
    } else {
      kv_out[i0] = mkc_kv_from_f32(a);
      kv_out[i1] = mkc_kv_from_f32(b);
    }
  }
}

/* Q, K and V projections of a prompt chunk with the qkv_rope stage's
 * epilogue: the tiled twin of mkc_qkv_rope. A tile is MKC_GEMM_BM tokens by a
 * group of whole heads (q heads, then kv heads of K, then of V, end to end;
 * max(1, 64 / head_dim) of them), so a head's norm and its rotation pairs
 * are all in the block: c_cols columns of c_tile (a multiple of
 * MKC_GEMM_BN, computed MKC_GEMM_BN at a time). Token t's K and V land in the
 * cache at row (pos + t) % kv_rows (a sliding window's ring), or where the
 * slots' row map puts row t (templates/slots.cuh); q in q_out. */
MKC_DEVICE_CALLED void
mkc_gemm_qkv(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q, const mkc_bf16 *b_k,
             const mkc_bf16 *b_v, int quantized, int n_chunks, int heads, int kv_heads,
             int head_dim, int layout, mkc_rope rotary, const float *x, int x_stride, int n_x,
             const mkc_bf16 *norm_w, float eps, const mkc_bf16 *q_norm_w, const mkc_bf16 *k_norm_w,
             float head_eps, float *q_out, int q_stride, mkc_kv *k_cache, mkc_kv *v_cache,
             int kv_rows, int pos, int T, const mkc_rowmap *rows, int c_cols, float *a_tile,
             float *w_tile, float *c_tile, float *ssq, float *inv_rms) {
  int all = heads + 2 * kv_heads, group = head_dim < MKC_GEMM_BN ? MKC_GEMM_BN / head_dim : 1;
  mkc_wcat wc =
      mkc_wcat_of(w_q, heads * head_dim, w_k, kv_heads * head_dim, w_v, kv_heads * head_dim);
  int m_tiles = mkc_gemm_m_tiles(T), n_groups = (all + group - 1) / group;
  for (int tile = mkc_bid(); tile < m_tiles * n_groups; tile += mkc_nblocks()) {
    int m0 = (tile % m_tiles) * MKC_GEMM_BM, h0 = (tile / m_tiles) * group;
    int n_heads = all - h0 < group ? all - h0 : group, n_cols = n_heads * head_dim;
    for (int c0 = 0; c0 < n_cols; c0 += MKC_GEMM_BN) {
      int v0 = h0 * head_dim + c0;
      mkc_gemm_cols cols = mkc_gemm_cols_of(v0, n_cols - c0, v0 + 32, n_cols - c0 - 32);
      mkc_gemm_tile(wc, cols, quantized, n_chunks, x, x_stride, n_x, norm_w, eps, m0, T, c_tile,
                    c_cols + 4, c0, a_tile, w_tile, ssq, inv_rms);
    }
    /* a warp per (token, head) of the tile */
    for (int item = mkc_warp(); item < MKC_GEMM_BM * n_heads; item += MKC_WARPS) {
      int r = item / n_heads, hl = item - r * n_heads, hh = h0 + hl, t = m0 + r;
      if (t >= T) break;
      const float *c = c_tile + r * (c_cols + 4) + hl * head_dim;
      float scale = norm_w ? inv_rms[r] : 1.0f;
      int at = mkc_row_pos(rows, pos, t);
      if (hh < heads) {
        mkc_gemm_head(c, scale, b_q ? b_q + hh * head_dim : 0, head_dim, 1, layout, rotary,
                      q_norm_w, head_eps, at, q_out + (long)t * q_stride + hh * head_dim, 0);
      } else {
        int k = hh < heads + kv_heads, h = hh - heads - (k ? 0 : kv_heads);
        const mkc_bf16 *bias = k ? b_k : b_v;
        mkc_kv *row = (k ? k_cache : v_cache) + (long)h * kv_rows * head_dim +
                      mkc_kv_at(rows, t, at, kv_rows, head_dim);
        mkc_gemm_head(c, scale, bias ? bias + h * head_dim : 0, head_dim, k, layout, rotary,
                      k ? k_norm_w : 0, head_eps, at, 0, row);
      }
    }
    mkc_sync_block();
  }
}
