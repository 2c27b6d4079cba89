/* Matrix-vector products over the step's T tokens. A warp owns MKC_ROWS rows
 * at once (a rotation pair in qkv_rope); lanes stream them in chunks of 8
 * weights (16 bytes of bf16, or the part of a quantized block that holds
 * them: weights.cuh) and reuse each chunk for all T activation vectors, so verifying drafts costs
 * about one decode step of weight traffic. An optional RMSNorm is fused into
 * the input: x is read raw, scaled by the norm weight per column and by
 * inv_rms[t] after the reduction. */

/* inv_rms[t - t0] = 1 / sqrt(mean(x[t]^2) + eps) for t0 <= t < T, computed by
 * every block into smem. */
MKC_DEVICE void mkc_rms_prologue(const float *x, int x_stride, int n, float eps, int t0, int T,
                                 float *inv_rms, float *red) {
  for (int t = t0; t < T; t++) {
    float s = 0.0f;
    for (int c = mkc_tid(); c < n; c += MKC_THREADS) {
      float v = x[t * x_stride + c];
      s += v * v;
    }
    s = mkc_block_sum(s, red);
    if (mkc_tid() == 0) inv_rms[t - t0] = 1.0f / sqrtf(s / (float)n + eps);
  }
  mkc_sync_block();
}

MKC_DEVICE void mkc_unpack8(mkc_u4 v, float *f) {
  unsigned u[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; i++) {
    f[2 * i] = mkc_bf16_to_f32((mkc_bf16)(u[i] & 0xffffu));
    f[2 * i + 1] = mkc_bf16_to_f32((mkc_bf16)(u[i] >> 16));
  }
}

/* Rows a warp owns at once: their chunks are loaded together (several
 * 16-byte loads in flight per lane) and reduced in one warp sum. The GPU's 4
 * keeps the accumulators in registers. The emulator pays per row block
 * (every lane walks the stage's loop, the sums are a call), so the CPU build
 * takes 8; tests also build the GPU's 4 on the CPU (-DMKC_ROWS=4 in
 * MKC_CPU_CFLAGS), so both shapes are checked. */
#ifndef MKC_ROWS
#ifdef MKC_CPU
#define MKC_ROWS 8
#else
#define MKC_ROWS 4
#endif
#endif
#define MKC_DOT_ROWS_MAX (2 * MKC_ROWS)

/* Quantized rows' sums with the block's scale outside (weights.cuh,
 * mkc_dot8_q): the GPU's way. The CPU forms each weight as the reference does,
 * the order its warp path (mkc_dot_warp_of) adds them in; test_dot_warp builds
 * the GPU's way on the CPU too. */
#ifndef MKC_DOT_CODES
#ifdef MKC_CPU
#define MKC_DOT_CODES 0
#else
#define MKC_DOT_CODES 1
#endif
#endif

/* Chunks a lane loads for every row before it uses the first (bf16 rows: the
 * loads a lane has in flight are MKC_MV_UNROLL x the rows, gate and up together
 * half of that: mkc_dot_lanes_of). The lane still
 * adds its chunks in the order c, c + 32, c + 64, ...: the same sums, bit for
 * bit, whatever the unroll. */
#ifndef MKC_MV_UNROLL
#define MKC_MV_UNROLL 1
#endif

/* The matvecs whose row blocks leave warps idle (rows < the grid's warps x MKC_ROWS:
 * llama-3.2-1b's o-proj and down, 2048 rows against 2112 warps) give each warp one
 * row at a time, MKC_MV_ROW1 of its chunks loaded per lane at once (0: off, the
 * row blocks). Four rows with one chunk each kept 1 MB in flight on the H200, and
 * those stages ran at 24-33 % of copy bandwidth for it (docs/PERF.md, 2026-12-04);
 * one row with 8 keeps 8 MB. A row's sums are the same bits either way: each lane
 * adds its chunks c, c + 32, ... in that order, and the warp sum is per row. A
 * knob: on the H200 it gained 12-16 % at T = 1, less than the split (MKC_SPLIT,
 * which takes those stages first where it is on), and cost the verify steps 7 %. */
#ifndef MKC_MV_ROW1
#define MKC_MV_ROW1 0
#endif
#define MKC_MV_UNROLL_MAX (MKC_MV_ROW1 > MKC_MV_UNROLL ? MKC_MV_ROW1 : MKC_MV_UNROLL)

/* Input t's chunk c, scaled by the norm weights (ga, gb) when norm_w is given. The
 * weights are two mkc_f4, not a float[8]: in the decoded rows' loops below an array of
 * them was kept in local memory. */
MKC_DEVICE_INLINE void mkc_dot_input(const float *x, int x_stride, int t, int c,
                                     const mkc_bf16 *norm_w, mkc_f4 ga, mkc_f4 gb, mkc_f4 *a,
                                     mkc_f4 *b) {
  *a = mkc_load_f4(x + t * x_stride + c * 8);
  *b = mkc_load_f4(x + t * x_stride + c * 8 + 4);
  if (norm_w) {
    a->x *= ga.x;
    a->y *= ga.y;
    a->z *= ga.z;
    a->w *= ga.w;
    b->x *= gb.x;
    b->y *= gb.y;
    b->z *= gb.z;
    b->w *= gb.w;
  }
}

/* Whether a bf16 row's chunk is unpacked once for all the inputs (mkc_dot_chunk): by default
 * where no matrix is quantized. Kernels with quantized matrices keep the loop before 2026-12-05:
 * their registers are at the edge (llama-3.2-1b's Q4_K_M kernel at T <= 5 spilled 168 B with
 * it). MKC_DOT_ONCE=0 or 1 (a knob for the GPU's A/B) decides it for any kernel. */
#ifndef MKC_DOT_ONCE
#ifdef MKC_W_QUANTIZED
#define MKC_DOT_ONCE 0
#else
#define MKC_DOT_ONCE 1
#endif
#endif

/* The T inputs' chunk c (c % 32 = cl), scaled by the norm weight, into the rows' partials
 * (wc: the bf16 rows' chunks). The loops are unrolled whole: part's indices
 * are literals, so it stays in registers (at T = 8 the compiler's own choice
 * kept it in local memory). */
MKC_DEVICE_INLINE void mkc_dot_chunk(int type, const mkc_wrow *w, int nrows, int c, int cl,
                                     const mkc_u4 *wc, const float *x, int x_stride,
                                     const mkc_bf16 *norm_w, int T, mkc_dot_acc *part) {
  mkc_f4 ga = {0.0f, 0.0f, 0.0f, 0.0f}, gb = ga;
  if (norm_w) {
    mkc_u4 u = mkc_load_u4(norm_w + c * 8);
    ga.x = mkc_bf16_to_f32((mkc_bf16)(u.x & 0xffffu));
    ga.y = mkc_bf16_to_f32((mkc_bf16)(u.x >> 16));
    ga.z = mkc_bf16_to_f32((mkc_bf16)(u.y & 0xffffu));
    ga.w = mkc_bf16_to_f32((mkc_bf16)(u.y >> 16));
    gb.x = mkc_bf16_to_f32((mkc_bf16)(u.z & 0xffffu));
    gb.y = mkc_bf16_to_f32((mkc_bf16)(u.z >> 16));
    gb.z = mkc_bf16_to_f32((mkc_bf16)(u.w & 0xffffu));
    gb.w = mkc_bf16_to_f32((mkc_bf16)(u.w >> 16));
  }
  int bf16 = type == MKC_W_BF16; /* every row bf16 (on the GPU type is 0: the rows' literals) */
  if (!type) {
    bf16 = 1;
    MKC_UNROLL for (int r = 0; r < MKC_DOT_ROWS_MAX; r++) if (r < nrows && w[r].type != MKC_W_BF16)
        bf16 = 0;
  }
#if MKC_DOT_ONCE
  /* bf16 rows, 4 at a time: each row's chunk unpacked once for all T inputs, and each input's
   * chunk read once per 4 rows. Every row is used, a missing one reading another's chunk
   * (mkc_dot_lanes_of gives it 0): a test of the row at every input had kept the compiler from
   * sharing the unpacking between inputs, and the T <= 5 kernel's loops take about a third fewer
   * instructions so (docs/DECISIONS.md, 2026-12-05). Eight rows unpacked at once spilled. The
   * same products and sums as mkc_dot8_bf16's, bit for bit, at every T. */
  if (bf16) {
    MKC_UNROLL for (int g = 0; g < MKC_DOT_ROWS_MAX; g += 4) {
      if (g >= nrows) break;
      float wu[4][8];
      MKC_UNROLL for (int r = 0; r < 4; r++) if (g + r < nrows) mkc_unpack8(wc[g + r], wu[r]);
      MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
        if (t >= T) break;
        mkc_f4 a, b;
        mkc_dot_input(x, x_stride, t, c, norm_w, ga, gb, &a, &b);
        MKC_UNROLL for (int r = 0; r < 4; r++) {
          if (g + r >= nrows) break;
          mkc_dot_acc *p = &part[(g + r) * MKC_T_MAX + t];
          *p = mkc_dot8_f32(*p, wu[r], a, b);
        }
      }
    }
    return;
  }
#else
  if (bf16) { /* each input read once, for all the rows */
    MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      mkc_f4 a, b;
      mkc_dot_input(x, x_stride, t, c, norm_w, ga, gb, &a, &b);
      MKC_UNROLL for (int r = 0; r < MKC_DOT_ROWS_MAX; r++) {
        if (r >= nrows) break;
        if (w[r].p) part[r * MKC_T_MAX + t] = mkc_dot8_bf16(part[r * MKC_T_MAX + t], wc[r], a, b);
      }
    }
    return;
  }
#endif
  /* Decoded rows (or rows of mixed types): each row's chunk decoded where it is used, so 8
   * floats are live, not 8 a row (all of them decoded first spilled the Q4_K kernels), with
   * the inputs' chunks held for all the rows. A bf16 row's partial takes the same product as
   * above, the same sums bit for bit; a quantized row's, on the GPU, its codes with the scale
   * outside the sum (MKC_DOT_CODES). */
  mkc_f4 xa[MKC_T_MAX], xb[MKC_T_MAX];
  float xs[MKC_T_MAX]; /* each input's chunk summed, for the types with a min */
  MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
    if (t >= T) break;
    mkc_dot_input(x, x_stride, t, c, norm_w, ga, gb, &xa[t], &xb[t]);
    if (MKC_DOT_CODES) /* unused (and dropped) where no row's type has a min */
      xs[t] =
          ((xa[t].x + xa[t].y) + (xa[t].z + xa[t].w)) + ((xb[t].x + xb[t].y) + (xb[t].z + xb[t].w));
  }
  (void)xs;
  MKC_UNROLL for (int r = 0; r < MKC_DOT_ROWS_MAX; r++) {
    if (r >= nrows) break;
    if (!w[r].p) continue;
    int rt = type ? type : w[r].type;
    float wf[8]; /* written whole on either path: a chunk left unwritten kept it in memory */
#if MKC_DOT_CODES
    if (rt != MKC_W_BF16) { /* the codes, the scale outside the sum (mkc_dot8_q) */
      float dm[2];
      int has_min = mkc_wchunk_q(rt, w[r].p, c, cl, wf, dm);
      MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
        if (t >= T) break;
        mkc_dot_acc *p = &part[r * MKC_T_MAX + t];
        if (has_min) /* a literal once inlined: xs is computed only where a type has a min */
          *p = mkc_dot8_qm(*p, wf, dm[0], dm[1], xa[t], xb[t], xs[t]);
        else
          *p = mkc_dot8_q(*p, wf, dm[0], xa[t], xb[t]);
      }
      continue;
    }
#endif
    if (rt == MKC_W_BF16)
      mkc_unpack8(wc[r], wf); /* mkc_dot8_f32 of it is mkc_dot8_bf16's sum, bit for bit */
    else /* the CPU: each weight as the reference forms it, as mkc_dot_warp_of adds them */
      mkc_wchunk_at(rt, w[r].p, c, cl, wf);
    MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      part[r * MKC_T_MAX + t] = mkc_dot8_f32(part[r * MKC_T_MAX + t], wf, xa[t], xb[t]);
    }
  }
}

/* MKC_CP_RING (a knob for the GPU's A/B; codegen reserves the room): the
 * 16-byte pieces of shared memory each thread has for weight rows in flight.
 * A warp's lanes read one chunk of each of its rows per turn, one 16-byte
 * load each: with 4 rows a lane has 64 bytes in flight, and the H100's
 * stages that only a third of the grid's warps share (o-proj, down) streamed
 * at a third of copy bandwidth, bound by the loads' latency. With the ring a
 * lane copies the chunks of MKC_CP_RING / nrows turns ahead (cp.async: no
 * register holds a byte in flight) and reads each turn's from shared memory.
 * The same chunks, added in the same order: the same sums, bit for bit. */
#ifndef MKC_CP_RING
#define MKC_CP_RING 0
#endif
#if MKC_CP_RING
/* Piece k of the thread of lane in this warp: lanes side by side, so a warp's
 * copies and reads of a piece cover every bank once. */
MKC_DEVICE_INLINE unsigned char *mkc_cp_piece(int lane, int k) {
  return (unsigned char *)mkc_smem() + MKC_CP_RING_OFF +
         16 * (k * MKC_THREADS + mkc_warp() * 32 + lane);
}
/* Copies chunk c of the rows (null ones: none) into turn slot s, and commits
 * the group: an empty one past the rows' end, so every turn commits one and
 * mkc_cp_wait counts turns. */
MKC_DEVICE_INLINE void mkc_cp_rows(int lane, int s, const mkc_wrow *w, int nrows, int c,
                                   int n_chunks) {
  if (c < n_chunks)
    for (int r = 0; r < nrows; r++)
      if (w[r].p) mkc_cp_async16(mkc_cp_piece(lane, s * nrows + r), w[r].p + 16 * c);
  mkc_cp_commit();
}
#endif

/* This lane's partial dot products of nrows weight rows w[r] with the T
 * inputs, into acc[r * MKC_T_MAX + t]; a null row gives 0. Each chunk of an
 * input is read and scaled by the norm weight once for all the rows. Rows and
 * inputs are padded to a multiple of 8 with zeros by the buffer plan. */
MKC_DEVICE_INLINE void mkc_dot_lanes_of(int type, int lane, const mkc_wrow *w, int nrows,
                                        int n_chunks, const float *x, int x_stride,
                                        const mkc_bf16 *norm_w, int T, float *acc) {
  mkc_dot_acc part[MKC_DOT_ROWS_MAX * MKC_T_MAX];
  for (int r = 0; r < nrows; r++)
    for (int t = 0; t < MKC_T_MAX; t++) part[r * MKC_T_MAX + t] = mkc_dot_acc_zero();
#if MKC_CP_RING
#if MKC_MV_UNROLL > 1
#error "MKC_CP_RING takes the place of the loads MKC_MV_UNROLL unrolls"
#endif
  /* the ring's turns in flight, where every row is bf16 (a literal on the GPU) and it holds two
   * turns of them; 0: the loads below */
  int turns = 2 * nrows <= MKC_CP_RING ? MKC_CP_RING / nrows : 0;
  for (int r = 0; r < nrows; r++)
    if (w[r].p && (type ? type : w[r].type) != MKC_W_BF16) turns = 0;
  for (int s = 0; s < turns; s++) mkc_cp_rows(lane, s, w, nrows, lane + 32 * s, n_chunks);
#endif
  /* Where each row's chunks are read from: a missing row reads another's (and leaves its
   * chunks unused), so that every load is unconditional. Conditional, ptxas for sm_100 and later
   * carried each row's last chunks from turn to turn for the turns that skip the load, through
   * local memory: 64 reloads a turn in the LM head at T = 5. No row at all: no turn. */
  const unsigned char *any = 0, *src[MKC_DOT_ROWS_MAX];
  for (int r = 0; r < nrows; r++)
    if (w[r].p) any = w[r].p;
  for (int r = 0; r < nrows; r++) src[r] = w[r].p ? w[r].p : any;
  if (!any) n_chunks = 0;
  /* chunks per row a lane loads at once: a literal once inlined (nrows is). Gate and up
   * together (2 * MKC_ROWS rows) take half MKC_MV_UNROLL's, so that no call has more than
   * MKC_ROWS x MKC_MV_UNROLL loads in flight: at 2, llama-3.2-1b's T = 1 kernel keeps 128
   * registers and 4 blocks an SM (2 for gate/up too took 148, and spilled at 4 blocks) */
  const int unroll = nrows == 1 && MKC_MV_ROW1 ? MKC_MV_ROW1
                     : nrows > MKC_ROWS        ? (MKC_MV_UNROLL > 1 ? MKC_MV_UNROLL / 2 : 1)
                                               : MKC_MV_UNROLL;
  for (int c0 = lane, i = 0; c0 < n_chunks; c0 += 32 * unroll, i++) {
    /* every row's chunks first (several loads in flight), then each reused for all T inputs */
    mkc_u4 wc[MKC_MV_UNROLL_MAX][MKC_DOT_ROWS_MAX];
    const mkc_u4 z = {0u, 0u, 0u, 0u};
#if MKC_CP_RING
    if (turns) {
      mkc_cp_wait(turns - 1); /* this turn's group has landed */
      for (int r = 0; r < nrows; r++)
        wc[0][r] = w[r].p ? mkc_load_shared_u4(mkc_cp_piece(lane, i % turns * nrows + r)) : z;
    } else
#endif
    {
      MKC_UNROLL for (int u = 0; u < unroll; u++) /* wc stays in registers */
          for (int r = 0; r < nrows; r++) if ((type ? type : w[r].type) == MKC_W_BF16) wc[u][r] =
              c0 + 32 * u < n_chunks ? mkc_load_weight_u4(src[r] + 16 * (c0 + 32 * u)) : z;
    }
    MKC_UNROLL for (int u = 0; u < unroll; u++) {
      int c = c0 + 32 * u;
      if (c >= n_chunks) continue;
      mkc_dot_chunk(type, w, nrows, c, lane & 31, wc[u], x, x_stride, norm_w, T, part);
    }
#if MKC_CP_RING
    /* the slot again, for the turn `turns` ahead: its pieces were read into wc, and used */
    if (turns) mkc_cp_rows(lane, i % turns, w, nrows, c0 + 32 * turns, n_chunks);
#endif
  }
  for (int r = 0; r < nrows; r++)
    for (int t = 0; t < MKC_T_MAX; t++)
      acc[r * MKC_T_MAX + t] = w[r].p ? mkc_dot_acc_sum(part[r * MKC_T_MAX + t]) : 0.0f;
}

#ifdef MKC_CPU
#define MKC_DOT_XS_MAX 4096
typedef unsigned char mkc_v16u8 __attribute__((vector_size(16)));
typedef unsigned long long mkc_v2u64 __attribute__((vector_size(16))); /* the same bytes */

/* Piece b of a row: its 32 weights (32-weight block b, or part b % (block / 32)
 * of a larger block: chunks 4b .. 4b + 3 either way) as 32 codes and a
 * step per 16: weight i is s[i / 16] * (code i - off), or s[i / 16] * code i +
 * m[i / 16] for the types with a min (min set): mkc_wchunk_q's codes, which
 * mkc_wscale turns into weights by the same formula (the same bits). */
typedef struct mkc_wpiece {
  mkc_v16u8 q[2]; /* codes 0-15, 16-31 */
  float s[2], m[2], off;
  int min;
} mkc_wpiece;

/* Bits 0-15 of bits as 16 bytes, byte i 16 where bit i is set, else 0: the
 * fifth bits of Q5_0's and Q5_1's codes. */
MKC_DEVICE_INLINE mkc_v16u8 mkc_bits_x16(unsigned bits) {
  const mkc_v16u8 bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  unsigned char a = (unsigned char)bits, c = (unsigned char)(bits >> 8);
  mkc_v16u8 v = {a, a, a, a, a, a, a, a, c, c, c, c, c, c, c, c};
  return (mkc_v16u8)((v & bit) != 0) & 16;
}

#if defined(MKC_W_USES_IQ4_NL) || defined(MKC_W_USES_IQ4_XS) || defined(MKC_W_USES_MXFP4) ||       \
    defined(MKC_W_USES_NVFP4)
/* The levels of 16 nibbles (IQ4_NL's or MXFP4's, mkc_levels_chunk's words) as codes: each
 * level plus 128, so that a code less an offset of 128 is the level (exact). */
MKC_DEVICE_INLINE mkc_v16u8 mkc_levels_x16(mkc_v16u8 nibbles, int fp4) {
  const unsigned iq4[4] = {MKC_IQ4_NL_LEVELS}, fp4s[4] = {MKC_FP4_LEVELS};
  mkc_v16u8 table, r;
  memcpy(&table, fp4 ? fp4s : iq4, sizeof table);
  table ^= 128;
#ifdef __AVX2__
  __m128i t, i;
  memcpy(&t, &table, sizeof t);
  memcpy(&i, &nibbles, sizeof i);
  t = _mm_shuffle_epi8(t, i);
  memcpy(&r, &t, sizeof r);
#else
  for (int k = 0; k < 16; k++) r[k] = table[nibbles[k] & 15];
#endif
  return r;
}
#endif

#if defined(MKC_W_USES_IQ_SIGNS) || defined(MKC_W_USES_IQ1_S) || defined(MKC_W_USES_IQ1_M)
/* Piece b of a grid type's row: sub-block b % 8 of 256-weight block b / 8, chunk by chunk
 * (mkc_wgrid, type a literal at each call); every type's step covers 16 weights or 32. IQ1_M's
 * offset, 7 or 9 per chunk, is made 9 by adding 2 to the codes of a 7 (exact). */
MKC_DEVICE_INLINE int mkc_wpiece_grid(int type, const unsigned char *row, int b, mkc_wpiece *p) {
  unsigned long long v[4];
  float off[4];
  for (int k = 0; k < 4; k++) {
    float d;
    int c = 4 * b + k;
    v[k] = mkc_wgrid(type, row, c, c & 31, &d, &off[k]);
    if (!(k & 1)) p->s[k >> 1] = d;
    if (off[k] == 7.0f) v[k] += 2 * MKC_LOW_BITS;
  }
  memcpy(&p->q[0], v, sizeof p->q[0]);
  memcpy(&p->q[1], v + 2, sizeof p->q[1]);
  p->m[0] = p->m[1] = 0.0f;
  p->min = 0;
  p->off = off[0] == 128.0f ? 128.0f : 9.0f;
  return 1;
}
#endif

/* Piece b of a row as codes; 0 where the type has no such decoding (Q8_0's
 * signed codes: its own case). */
MKC_DEVICE_INLINE int mkc_wpiece_of(int type, const unsigned char *row, int b, mkc_wpiece *p) {
  (void)row;
  (void)b;
  (void)p;
  switch (type) {
#if defined(MKC_W_USES_Q4_0) || defined(MKC_W_USES_Q4_1)
  case MKC_W_Q4_0:
  case MKC_W_Q4_1: { /* element i < 16 in byte i's low nibble, i + 16 in its high one */
    p->min = type == MKC_W_Q4_1;
    const unsigned char *blk = row + b * (p->min ? 20 : 18);
    p->s[0] = p->s[1] = mkc_f16_at(blk);
    p->m[0] = p->m[1] = p->min ? mkc_f16_at(blk + 2) : 0.0f;
    p->off = 8.0f;
    mkc_v16u8 q;
    memcpy(&q, blk + (p->min ? 4 : 2), sizeof q);
    p->q[0] = q & 15;
    p->q[1] = q >> 4;
    return 1;
  }
#endif
#if defined(MKC_W_USES_Q5_0) || defined(MKC_W_USES_Q5_1)
  case MKC_W_Q5_0:
  case MKC_W_Q5_1: { /* Q4_0's and Q4_1's nibbles, bit i of 4 bytes before them element i's 16 */
    p->min = type == MKC_W_Q5_1;
    const unsigned char *blk = row + b * (p->min ? 24 : 22), *fifth = blk + (p->min ? 4 : 2);
    p->s[0] = p->s[1] = mkc_f16_at(blk);
    p->m[0] = p->m[1] = p->min ? mkc_f16_at(blk + 2) : 0.0f;
    p->off = 16.0f;
    unsigned bits;
    mkc_v16u8 q;
    memcpy(&bits, fifth, sizeof bits);
    memcpy(&q, fifth + 4, sizeof q);
    p->q[0] = (q & 15) | mkc_bits_x16(bits);
    p->q[1] = (q >> 4) | mkc_bits_x16(bits >> 16);
    return 1;
  }
#endif
#if defined(MKC_W_USES_Q4_K) || defined(MKC_W_USES_Q5_K)
  case MKC_W_Q4_K:
  case MKC_W_Q5_K: { /* sub-block j's scale and min from the header; 32 bytes of nibbles per two
                      * sub-blocks (low, then high); Q5_K's bit j of 32 bytes its 16s */
    int j = b & 7, q5 = type == MKC_W_Q5_K;
    const unsigned char *blk = row + (b >> 3) * (q5 ? 176 : 144);
    float dm[2];
    mkc_k_scale_min(mkc_load_weight_u4(blk), j, dm);
    p->min = 1;
    p->s[0] = p->s[1] = dm[0];
    p->m[0] = p->m[1] = dm[1];
    p->off = 0.0f;
    for (int h = 0; h < 2; h++) {
      mkc_v16u8 q, hi;
      memcpy(&q, blk + (q5 ? 48 : 16) + (j >> 1) * 32 + 16 * h, sizeof q);
      p->q[h] = q >> (j & 1) * 4 & 15;
      if (q5) {
        memcpy(&hi, blk + 16 + 16 * h, sizeof hi);
        p->q[h] |= (hi >> j & 1) << 4;
      }
    }
    return 1;
  }
#endif
#ifdef MKC_W_USES_Q6_K
  case MKC_W_Q6_K: { /* sub-block j = 4 half + k: nibbles of 32 bytes at 64 half + 32 (k & 1),
                      * high by k >> 1; bit pair k of 32 bytes at 128 + 32 half; a scale per 16 */
    int j = b & 7, half = j >> 2, k = j & 3;
    const unsigned char *blk = row + (b >> 3) * 210;
    float d = mkc_f16_at(blk + 208);
    p->min = 0;
    p->off = 32.0f;
    for (int h = 0; h < 2; h++) {
      mkc_v16u8 lo, hi;
      memcpy(&lo, blk + half * 64 + (k & 1) * 32 + 16 * h, sizeof lo);
      memcpy(&hi, blk + 128 + half * 32 + 16 * h, sizeof hi);
      p->q[h] = (lo >> (k >> 1) * 4 & 15) | (hi >> 2 * k & 3) << 4;
      p->s[h] = d * (float)(signed char)blk[192 + 2 * j + h];
      p->m[h] = 0.0f;
    }
    return 1;
  }
#endif
#if defined(MKC_W_USES_Q2_K) || defined(MKC_W_USES_Q3_K)
  case MKC_W_Q2_K:
  case MKC_W_Q3_K: { /* sub-block j = 4 n + i: bit pair i of 32 bytes at 32 n of the pairs
                      * (Q3_K's third bit: bit j of the 32 bytes before them); a scale per 16 */
    int j = b & 7, n = j >> 2, i = j & 3, q3 = type == MKC_W_Q3_K;
    const unsigned char *blk = row + (b >> 3) * (q3 ? 110 : 84);
    for (int h = 0; h < 2; h++) {
      int s = 2 * j + h; /* the sub-block of 16 */
      mkc_v16u8 pairs;
      memcpy(&pairs, blk + (q3 ? 32 : 16) + 32 * n + 16 * h, sizeof pairs);
      p->q[h] = pairs >> 2 * i & 3;
      if (q3) { /* 6-bit scales: the low 4 bits a nibble of byte s % 8 (the high one for s >=
                 * 8), the top 2 bits 2 (s / 4) of byte 8 + s % 4; x = d * (scale - 32) * (q - 4) */
        mkc_v16u8 third;
        memcpy(&third, blk + 16 * h, sizeof third);
        p->q[h] |= (third >> j & 1) << 2;
        unsigned lo = blk[96 + (s & 7)] >> 4 * (s >> 3) & 15u,
                 hi = blk[104 + (s & 3)] >> 2 * (s >> 2) & 3u;
        p->s[h] = mkc_f16_at(blk + 108) * (float)((int)(lo | hi << 4) - 32);
        p->m[h] = 0.0f;
      } else { /* byte s: scale | min << 4; x = d * scale * q - dmin * min */
        unsigned sm = blk[s];
        p->s[h] = mkc_f16_at(blk + 80) * (float)(sm & 15u);
        p->m[h] = -(mkc_f16_at(blk + 82) * (float)(sm >> 4 & 15u));
      }
    }
    p->min = !q3;
    p->off = q3 ? 4.0f : 0.0f;
    return 1;
  }
#endif
#if defined(MKC_W_USES_IQ4_NL) || defined(MKC_W_USES_IQ4_XS) || defined(MKC_W_USES_MXFP4)
  case MKC_W_IQ4_NL:
  case MKC_W_IQ4_XS:
  case MKC_W_MXFP4: { /* Q4_0's nibbles indexing 16 levels: 18 bytes per 32 from an f16 step
                       * (IQ4_NL), 17 from an E8M0 exponent (MXFP4), or sub-block b % 8 of
                       * 136 per 256 with a 6-bit scale (IQ4_XS: mkc_wchunk_q's formulas) */
    const unsigned char *q;
    float d;
    if (type == MKC_W_IQ4_XS) {
      int j = b & 7;
      const unsigned char *blk = row + (b >> 3) * 136;
      unsigned scale =
          (blk[4 + (j >> 1)] >> 4 * (j & 1) & 15u) | (mkc_load_weight2(blk + 2) >> 2 * j & 3u) << 4;
      d = mkc_f16_at(blk) * (float)((int)scale - 32);
      q = blk + 8 + 16 * j;
    } else if (type == MKC_W_MXFP4) {
      d = mkc_e8m0_half(row[b * 17]);
      q = row + b * 17 + 1;
    } else {
      d = mkc_f16_at(row + b * 18);
      q = row + b * 18 + 2;
    }
    mkc_v16u8 nib;
    memcpy(&nib, q, sizeof nib);
    p->q[0] = mkc_levels_x16(nib & 15, type == MKC_W_MXFP4);
    p->q[1] = mkc_levels_x16(nib >> 4, type == MKC_W_MXFP4);
    p->s[0] = p->s[1] = d;
    p->m[0] = p->m[1] = 0.0f;
    p->min = 0;
    p->off = 128.0f;
    return 1;
  }
#endif
#ifdef MKC_W_USES_NVFP4
  case MKC_W_NVFP4: { /* sub-blocks 2 (b & 1) + h of 16, each 8 bytes of nibbles (low: its weights
                       * 0..7, high: 8..15) and its own scale byte: half a block of 64 */
    const unsigned char *blk = row + (b >> 1) * 36;
    for (int h = 0; h < 2; h++) {
      int sb = 2 * (b & 1) + h;
      unsigned long long v; /* low nibbles, then high, put together in registers */
      memcpy(&v, blk + 4 + 8 * sb, sizeof v);
      mkc_v2u64 halves = {v & MKC_LOW_NIBBLES, v >> 4 & MKC_LOW_NIBBLES};
      p->q[h] = mkc_levels_x16((mkc_v16u8)halves, 1);
      p->s[h] = mkc_ue4m3_half(blk[sb]);
      p->m[h] = 0.0f;
    }
    p->min = 0;
    p->off = 128.0f;
    return 1;
  }
#endif
#if defined(MKC_W_USES_Q1_0) || defined(MKC_W_USES_Q2_0) || defined(MKC_W_USES_TQ2_0)
  case MKC_W_Q1_0:
  case MKC_W_Q2_0:
  case MKC_W_TQ2_0: { /* codes less an offset of 1, one f16 step: Q1_0's bits as 0 or 2 (a quarter
                       * of a block of 128), Q2_0's pairs (half a block of 64: 4 a byte, the low
                       * first), TQ2_0's as Q2_K's pairs (bits 2 l of 32 bytes at 32 n) */
    p->off = 1.0f;
    p->min = 0;
    p->m[0] = p->m[1] = 0.0f;
    if (type == MKC_W_Q1_0) {
      const unsigned char *blk = row + (b >> 2) * 18;
      p->s[0] = p->s[1] = mkc_f16_at(blk);
      for (int h = 0; h < 2; h++) {
        const unsigned char *q = blk + 2 + 4 * (b & 3) + 2 * h;
        p->q[h] = mkc_bits_x16((unsigned)q[0] | (unsigned)q[1] << 8) >> 3;
      }
    } else if (type == MKC_W_Q2_0) {
      const unsigned char *blk = row + (b >> 1) * 18;
      p->s[0] = p->s[1] = mkc_f16_at(blk);
      for (int h = 0; h < 2; h++) { /* 4 bytes of pairs, 2 at a time (no per-byte shift counts) */
        const unsigned char *q = blk + 2 + 8 * (b & 1) + 4 * h;
        mkc_v2u64 codes = {mkc_pairs_x8(q[0] | (unsigned)q[1] << 8),
                           mkc_pairs_x8(q[2] | (unsigned)q[3] << 8)};
        p->q[h] = (mkc_v16u8)codes;
      }
    } else {
      int e = 32 * (b & 7), n = e >> 7, l = (e >> 5) & 3;
      const unsigned char *blk = row + (b >> 3) * 66;
      p->s[0] = p->s[1] = mkc_f16_at(blk + 64);
      for (int h = 0; h < 2; h++) {
        mkc_v16u8 v;
        memcpy(&v, blk + 32 * n + 16 * h, sizeof v);
        p->q[h] = v >> 2 * l & 3;
      }
    }
    return 1;
  }
#endif
#ifdef MKC_W_USES_TQ1_0
  case MKC_W_TQ1_0: { /* piece k = b % 8 of a block: k < 5 trit k of bytes 0..31; 5 and 6 trits
                       * 2 (k - 5) and the next of bytes 32..47; 7 trit 4 of those, then the 4-trit
                       * bytes 48..51's trits 0..3 (mkc_wchunk_q's order); less an offset of 1 */
    int k = b & 7;
    const unsigned char *blk = row + (b >> 3) * 54;
    static const unsigned char POW3[5] = {1, 3, 9, 27, 81};
    for (int h = 0; h < 2; h++) {
      mkc_v16u8 v, t;
      if (k < 5) {
        memcpy(&v, blk + 16 * h, sizeof v);
        t = v * POW3[k];
      } else if (k < 7 || h == 0) {
        memcpy(&v, blk + 32, sizeof v);
        t = v * POW3[k < 7 ? 2 * (k - 5) + h : 4];
      } else {
        const mkc_v16u8 pow3 = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
        mkc_v16u8 w; /* the 4 bytes 4 times */
        for (int r = 0; r < 4; r++) memcpy((unsigned char *)&w + 4 * r, blk + 48, 4);
        t = w * pow3;
      }
      /* the top trit of t: t 3 / 256, which is 0 up to 85, 1 up to 170, else 2 */
      p->q[h] = ((mkc_v16u8)(t > 85) & 1) + ((mkc_v16u8)(t > 170) & 1);
    }
    p->s[0] = p->s[1] = mkc_f16_at(blk + 52);
    p->m[0] = p->m[1] = 0.0f;
    p->min = 0;
    p->off = 1.0f;
    return 1;
  }
#endif
#if defined(MKC_W_USES_IQ_SIGNS) || defined(MKC_W_USES_IQ1_S) || defined(MKC_W_USES_IQ1_M)
#define MKC_WPIECE_GRID_CASE(TYPE)                                                                 \
  case TYPE:                                                                                       \
    return mkc_wpiece_grid(TYPE, row, b, p);
#ifdef MKC_W_USES_IQ2_XXS
    MKC_WPIECE_GRID_CASE(MKC_W_IQ2_XXS)
#endif
#ifdef MKC_W_USES_IQ2_XS
    MKC_WPIECE_GRID_CASE(MKC_W_IQ2_XS)
#endif
#ifdef MKC_W_USES_IQ2_S
    MKC_WPIECE_GRID_CASE(MKC_W_IQ2_S)
#endif
#ifdef MKC_W_USES_IQ3_XXS
    MKC_WPIECE_GRID_CASE(MKC_W_IQ3_XXS)
#endif
#ifdef MKC_W_USES_IQ3_S
    MKC_WPIECE_GRID_CASE(MKC_W_IQ3_S)
#endif
#ifdef MKC_W_USES_IQ1_S
    MKC_WPIECE_GRID_CASE(MKC_W_IQ1_S)
#endif
#ifdef MKC_W_USES_IQ1_M
    MKC_WPIECE_GRID_CASE(MKC_W_IQ1_M)
#endif
#endif
  default:
    return 0;
  }
}

/* A lane's partial of its 8 sums as mkc_dot_acc_sum adds them: q_j = p_j +
 * p_(j+4), then (q0 + q2) + (q1 + q3). */
MKC_DEVICE_INLINE float mkc_v8f_lane_sum(mkc_dot_acc v) {
  mkc_v4_f a, c;
  memcpy(&a, &v, sizeof a);
  memcpy(&c, (const float *)&v + 4, sizeof c);
  a += c;
  return (a[0] + a[2]) + (a[1] + a[3]);
}

/* Four lanes' partials (a's into out[0], b's into out[1], ...), each added as
 * mkc_v8f_lane_sum adds it, but the four side by side: halves, then pairs,
 * then the pairs' sums, where one at a time each is a horizontal pass. */
MKC_DEVICE_INLINE void mkc_v8f_lane_sums4(mkc_dot_acc a, mkc_dot_acc b, mkc_dot_acc c,
                                          mkc_dot_acc d, float *out) {
#ifdef __AVX__
  __m256 v[4];
  memcpy(&v[0], &a, sizeof a);
  memcpy(&v[1], &b, sizeof b);
  memcpy(&v[2], &c, sizeof c);
  memcpy(&v[3], &d, sizeof d);
  /* q_j = p_j + p_(j+4): a's in q01's low 128 bits, b's in its high; c's and d's in q23's */
  __m256 q01 = _mm256_add_ps(_mm256_permute2f128_ps(v[0], v[1], 0x20),
                             _mm256_permute2f128_ps(v[0], v[1], 0x31));
  __m256 q23 = _mm256_add_ps(_mm256_permute2f128_ps(v[2], v[3], 0x20),
                             _mm256_permute2f128_ps(v[2], v[3], 0x31));
  /* q0 + q2 and q1 + q3 of each: [a, c, a, c | b, d, b, d] */
  __m256 h = _mm256_hadd_ps(_mm256_shuffle_ps(q01, q23, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm256_shuffle_ps(q01, q23, _MM_SHUFFLE(3, 1, 3, 1)));
  __m256 r = _mm256_add_ps(h, _mm256_permute_ps(h, _MM_SHUFFLE(1, 0, 3, 2)));
  _mm_storeu_ps(out, _mm_unpacklo_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1)));
#else
  out[0] = mkc_v8f_lane_sum(a);
  out[1] = mkc_v8f_lane_sum(b);
  out[2] = mkc_v8f_lane_sum(c);
  out[3] = mkc_v8f_lane_sum(d);
#endif
}

/* The decoding of 32-weight pieces 16 weights to a vector where AVX-512 has
 * the registers for them, else 8 (test_dot_warp sets it either way, so that
 * every machine checks both). */
#ifndef MKC_DOT_V16
#ifdef __AVX512F__
#define MKC_DOT_V16 1
#else
#define MKC_DOT_V16 0
#endif
#endif

#if MKC_DOT_V16
typedef float mkc_v16f __attribute__((vector_size(64)));
/* 16 bytes as floats, unsigned or signed (GCC's vector conversions of bytes
 * compile to scalar code: hence the intrinsics) */
MKC_DEVICE_INLINE mkc_v16f mkc_v16f_of_u8(mkc_v16u8 q) {
  mkc_v16f r;
#ifdef __AVX512F__
  __m128i v;
  memcpy(&v, &q, sizeof v);
  __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
  memcpy(&r, &f, sizeof r);
#else
  for (int i = 0; i < 16; i++) r[i] = (float)q[i];
#endif
  return r;
}
MKC_DEVICE_INLINE mkc_v16f mkc_v16f_of_s8(const unsigned char *p) {
  mkc_v16f r;
#ifdef __AVX512F__
  __m128i v;
  memcpy(&v, p, sizeof v);
  __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
  memcpy(&r, &f, sizeof r);
#else
  for (int i = 0; i < 16; i++) r[i] = (float)(signed char)p[i];
#endif
  return r;
}

/* Piece b (32 weights, chunks 4b .. 4b + 3: mkc_wpiece) of a row, in
 * element order: elements 0-15 in lo, 16-31 in hi, each by mkc_wchunk's
 * formula (the same bits). 0: the type has no such path (the caller takes
 * chunks). */
MKC_DEVICE_INLINE int mkc_wblock32(int type, const unsigned char *row, int b, mkc_v16f *lo,
                                   mkc_v16f *hi) {
  (void)row;
  (void)b;
  (void)lo;
  (void)hi;
  switch (type) {
#ifdef MKC_W_USES_Q8_0
  case MKC_W_Q8_0: {
    const unsigned char *p = row + b * 34;
    float d = mkc_f16_at(p);
    *lo = mkc_v16f_of_s8(p + 2) * d;
    *hi = mkc_v16f_of_s8(p + 18) * d;
    return 1;
  }
#endif
  default: {
    mkc_wpiece p;
    if (!mkc_wpiece_of(type, row, b, &p)) return 0;
    mkc_v16f f[2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
      f[h] = mkc_v16f_of_u8(p.q[h]);
      f[h] = p.min ? p.s[h] * f[h] + p.m[h] : p.s[h] * (f[h] - p.off);
    }
    *lo = f[0];
    *hi = f[1];
    return 1;
  }
  }
}

/* Two lanes' partials (elements 0-7 and 8-15 of v, 8 sums each) added as
 * mkc_dot_acc_sum adds them: into out[0] and out[1]. */
MKC_DEVICE_INLINE void mkc_v16f_lane_sums(mkc_v16f v, float *out) {
  mkc_dot_acc a, c;
  memcpy(&a, &v, sizeof a);
  memcpy(&c, (const float *)&v + 8, sizeof c);
  out[0] = mkc_v8f_lane_sum(a);
  out[1] = mkc_v8f_lane_sum(c);
}

/* Every lane's partial of a row of nb 32-weight pieces into lane_sums[t *
 * 32 + lane]; 0, with nothing written, when mkc_wblock32 does not decode the
 * type. Lane l takes chunks l, l + 32, ...: lanes 4q .. 4q + 3 take the
 * chunks of pieces q, q + 8, q + 16, ..., a piece's low half lanes 4q and
 * 4q + 1, its high half 4q + 2 and 4q + 3. So the four lanes' accumulators
 * stay in two vectors (per input) while their pieces go by, in the order
 * each lane takes them. */
MKC_DEVICE_INLINE int mkc_dot_warp_blocks(int type, const unsigned char *row, int nb,
                                          const float *x, int x_stride, const mkc_bf16 *norm_w,
                                          int T, float *lane_sums, int t_max) {
  for (int q = 0; q < 8; q++) {
    mkc_v16f acc_lo[MKC_T_MAX], acc_hi[MKC_T_MAX];
    for (int t = 0; t < t_max; t++) acc_lo[t] = acc_hi[t] = (mkc_v16f){0};
    for (int b = q; b < nb; b += 8) {
      mkc_v16f lo, hi, g_lo, g_hi;
      if (!mkc_wblock32(type, row, b, &lo, &hi)) return 0; /* at the first block */
      if (norm_w)
        for (int k = 0; k < 2; k++) {
          mkc_unpack8(mkc_load_u4(norm_w + b * 32 + k * 8), (float *)&g_lo + k * 8);
          mkc_unpack8(mkc_load_u4(norm_w + b * 32 + 16 + k * 8), (float *)&g_hi + k * 8);
        }
      for (int t = 0; t < t_max; t++) {
        if (t >= T) break;
        mkc_v16f x_lo, x_hi;
        memcpy(&x_lo, x + t * x_stride + b * 32, sizeof x_lo);
        memcpy(&x_hi, x + t * x_stride + b * 32 + 16, sizeof x_hi);
        if (norm_w) {
          x_lo *= g_lo;
          x_hi *= g_hi;
        }
        acc_lo[t] = acc_lo[t] + lo * x_lo;
        acc_hi[t] = acc_hi[t] + hi * x_hi;
      }
    }
    for (int t = 0; t < t_max; t++) {
      if (t >= T) break;
      mkc_v16f_lane_sums(acc_lo[t], lane_sums + t * 32 + 4 * q);
      mkc_v16f_lane_sums(acc_hi[t], lane_sums + t * 32 + 4 * q + 2);
    }
  }
  return 1;
}
#else
/* Without AVX-512 a 64-byte vector is no register: GCC keeps mkc_v16f in
 * memory and each operation goes through the stack (SmolLM2's Q4_1 decode
 * ran 7 times slower on an AVX2 machine than on an AVX-512 one). There the
 * blocks go 8 weights at a time, in mkc_dot_acc's 32-byte vectors: the same
 * products and sums as the 16-wide path, in the same order. */
/* Piece b (32 weights, chunks 4b .. 4b + 3: mkc_wpiece) of a row, in
 * element order: elements 8k .. 8k + 7 in w[k], each by mkc_wchunk's formula
 * (the same bits). 0: the type has no such path (the caller takes chunks). */
MKC_DEVICE_INLINE int mkc_wblock32(int type, const unsigned char *row, int b, mkc_dot_acc *w) {
  (void)row;
  (void)b;
  (void)w;
  switch (type) {
#ifdef MKC_W_USES_Q8_0
  case MKC_W_Q8_0: {
    const unsigned char *p = row + b * 34;
    float d = mkc_f16_at(p);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) w[k] = mkc_s8x8_v(mkc_load8_a2(p + 2 + 8 * k)) * d;
    return 1;
  }
#endif
  default: {
    mkc_wpiece p;
    if (!mkc_wpiece_of(type, row, b, &p)) return 0;
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
      float s = p.s[k >> 1];
      mkc_dot_acc f = mkc_u8x8_v(mkc_load8((const unsigned char *)&p.q[k >> 1] + 8 * (k & 1)));
      w[k] = p.min ? s * f + p.m[k >> 1] : s * (f - p.off);
    }
    return 1;
  }
  }
}

/* Every lane's partial of a row of nb 32-weight pieces into lane_sums[t *
 * 32 + lane]; 0, with nothing written, when mkc_wblock32 does not decode the
 * type. Lane l takes chunks l, l + 32, ...: lane 4q + k takes chunk k of
 * pieces q, q + 8, q + 16, ..., in that order, into acc[t][k]. */
MKC_DEVICE_INLINE int mkc_dot_warp_blocks(int type, const unsigned char *row, int nb,
                                          const float *x, int x_stride, const mkc_bf16 *norm_w,
                                          int T, float *lane_sums, int t_max) {
  for (int q = 0; q < 8; q++) {
    mkc_dot_acc acc[MKC_T_MAX][4];
#pragma GCC unroll 32
    for (int t = 0; t < t_max; t++)
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++) acc[t][k] = mkc_dot_acc_zero();
    for (int b = q; b < nb; b += 8) {
      mkc_dot_acc w[4], g[4];
      if (!mkc_wblock32(type, row, b, w)) return 0; /* at the first block */
      if (norm_w)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) g[k] = mkc_bf16x8_v(mkc_load_u4(norm_w + b * 32 + k * 8));
#pragma GCC unroll 32
      for (int t = 0; t < t_max; t++) {
        if (t >= T) break;
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
          mkc_dot_acc xk;
          memcpy(&xk, x + t * x_stride + b * 32 + k * 8, sizeof xk);
          if (norm_w) xk *= g[k];
          acc[t][k] = acc[t][k] + w[k] * xk;
        }
      }
    }
#pragma GCC unroll 32
    for (int t = 0; t < t_max; t++) {
      if (t >= T) break;
      mkc_v8f_lane_sums4(acc[t][0], acc[t][1], acc[t][2], acc[t][3], lane_sums + t * 32 + 4 * q);
    }
  }
  return 1;
}
#endif

/* The same for any row (bf16, or a row not made of whole pieces): a chunk at
 * a time, into lane c % 32's accumulators in memory. bf16 rows stay here:
 * through mkc_wblock32 they ran 10 % slower (SmolLM2's shape, AVX2). */
MKC_DEVICE_INLINE void mkc_dot_warp_chunks(int type, const unsigned char *row, int n_chunks,
                                           const float *x, int x_stride, const mkc_bf16 *norm_w,
                                           int T, float *lane_sums) {
  mkc_dot_acc part[MKC_T_MAX][32] __attribute__((aligned(64)));
  for (int t = 0; t < MKC_T_MAX; t++) {
    if (t >= T) break;
    for (int l = 0; l < 32; l++) part[t][l] = mkc_dot_acc_zero();
  }
  for (int c = 0; c < n_chunks; c++) {
    mkc_u4 wc;
    float wf[8];
    mkc_dot_acc g;
    if (type == MKC_W_BF16)
      wc = mkc_load_u4(row + 16 * c);
    else
      mkc_wchunk(type, row, c, wf);
    if (norm_w) g = mkc_bf16x8_v(mkc_load_u4(norm_w + c * 8));
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      mkc_dot_acc xv;
      memcpy(&xv, x + t * x_stride + c * 8, sizeof xv);
      if (norm_w) xv *= g;
      mkc_dot_acc *p = &part[t][c & 31];
      *p = type == MKC_W_BF16 ? mkc_dot8_bf16_v(*p, wc, xv) : mkc_dot8_f32_v(*p, wf, xv);
    }
  }
  for (int t = 0; t < MKC_T_MAX; t++) {
    if (t >= T) break;
    for (int l = 0; l < 32; l++) lane_sums[t * 32 + l] = mkc_dot_acc_sum(part[t][l]);
  }
}

/* The warp sums of every lane's mkc_dot_lanes_of, row r's T at sums + r * T
 * (the emulator's MKC_WARP_SUM_OF_WARP): each lane's partial by the same
 * operations in the same order as its own call, bit for bit, and their sum
 * as the butterfly adds them (mkc_lanes_sum), without 32 calls' setup, a
 * lane's strided walk or a pass over 32 lanes' partials. A call of its own:
 * inlined into every case of mkc_dot_lanes' switch, the copies' frames would
 * add up on a fiber's stack. */
__attribute__((noinline)) static void mkc_dot_warp_of(int type, const mkc_wrow *w, int nrows,
                                                      int n_chunks, const float *x, int x_stride,
                                                      const mkc_bf16 *norm_w, int T, float *sums) {
  /* the inputs scaled by the norm once for all rows where they fit (the same
   * products the lanes take chunk by chunk) */
  float xs[MKC_DOT_XS_MAX] __attribute__((aligned(32)));
  if (norm_w && T * n_chunks * 8 <= MKC_DOT_XS_MAX) {
    for (int c = 0; c < n_chunks; c++) {
      mkc_dot_acc g = mkc_bf16x8_v(mkc_load_u4(norm_w + c * 8)), xc;
      for (int t = 0; t < T; t++) {
        memcpy(&xc, x + t * x_stride + c * 8, sizeof xc);
        xc *= g;
        memcpy(xs + t * n_chunks * 8 + c * 8, &xc, sizeof xc);
      }
    }
    x = xs;
    x_stride = n_chunks * 8;
    norm_w = 0;
  }
  assert((uintptr_t)x % 16 == 0 && x_stride % 4 == 0 && "mkc_dot_warp_of: unaligned inputs");
  for (int r = 0; r < nrows; r++) {
    float lane_sums[MKC_T_MAX * 32];
    int rtype = type ? type : w[r].type;
    if (!w[r].p)
      for (int t = 0; t < MKC_T_MAX; t++)
        for (int l = 0; l < 32; l++) lane_sums[t * 32 + l] = 0.0f;
    else if (n_chunks % 4 != 0 ||
             !(MKC_T_MAX > 1 && T == 1 /* a copy with one input's accumulators: in registers */
                   ? mkc_dot_warp_blocks(rtype, w[r].p, n_chunks / 4, x, x_stride, norm_w, 1,
                                         lane_sums, 1)
                   : mkc_dot_warp_blocks(rtype, w[r].p, n_chunks / 4, x, x_stride, norm_w, T,
                                         lane_sums, MKC_T_MAX)))
      mkc_dot_warp_chunks(rtype, w[r].p, n_chunks, x, x_stride, norm_w, T, lane_sums);
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      sums[r * T + t] = mkc_lanes_sum(lane_sums + t * 32);
    }
  }
}
#endif

/* The warp sums of all lanes' partials (lane MKC_ALL_LANES, the CPU only:
 * mkc_dot_warp_of, row r's T values at acc + r * T) or one lane's partials
 * (mkc_dot_lanes_of). */
#define MKC_ALL_LANES (-1)
MKC_DEVICE_INLINE void mkc_dot_of(int type, int lane, const mkc_wrow *w, int nrows, int n_chunks,
                                  const float *x, int x_stride, const mkc_bf16 *norm_w, int T,
                                  float *acc) {
#ifdef MKC_CPU
  if (lane == MKC_ALL_LANES) {
    mkc_dot_warp_of(type, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);
    return;
  }
#endif
  mkc_dot_lanes_of(type, lane, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);
}

/* mkc_dot_of with the rows' type as a literal where they share one (a
 * matrix, or gate and up stored alike), so the chunk loop holds one decoder and
 * no test of the type; rows of mixed types take the loop that tests per row.
 * On the GPU the stages are inlined and each row's type is a literal already
 * (a switch there would keep a second copy of the loop for the null rows'
 * case: a larger cubin); the CPU compiler keeps a stage as a call, where only
 * this switch makes it one. */
MKC_DEVICE_INLINE void mkc_dot_lanes(int lane, const mkc_wrow *w, int nrows, int n_chunks,
                                     const float *x, int x_stride, const mkc_bf16 *norm_w, int T,
                                     float *acc) {
#ifndef MKC_CPU /* inlined: each row's type is a literal, the loop keeps its decoder only */
  mkc_dot_of(0, lane, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);
#else
  int type = 0;
  for (int r = 0; r < nrows; r++)
    if (w[r].p && type != w[r].type) type = type ? -1 : w[r].type;
  switch (type) {
  case MKC_W_BF16:
    mkc_dot_of(MKC_W_BF16, lane, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);
    return;
#define MKC_DOT_LANES_CASE(TYPE)                                                                   \
  case TYPE:                                                                                       \
    mkc_dot_of(TYPE, lane, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);                       \
    return;
#ifdef MKC_W_USES_Q8_0
    MKC_DOT_LANES_CASE(MKC_W_Q8_0)
#endif
#ifdef MKC_W_USES_Q4_0
    MKC_DOT_LANES_CASE(MKC_W_Q4_0)
#endif
#ifdef MKC_W_USES_Q4_1
    MKC_DOT_LANES_CASE(MKC_W_Q4_1)
#endif
#ifdef MKC_W_USES_Q4_K
    MKC_DOT_LANES_CASE(MKC_W_Q4_K)
#endif
#ifdef MKC_W_USES_Q6_K
    MKC_DOT_LANES_CASE(MKC_W_Q6_K)
#endif
#undef MKC_DOT_LANES_CASE
  default: /* mixed types, or no row at all */
    mkc_dot_of(0, lane, w, nrows, n_chunks, x, x_stride, norm_w, T, acc);
  }
#endif
}

/* Prefetches lane's share of the rows w[r] (null: none), a 64-byte line per
 * lane in turn: the next rows a warp streams, asked for before this block's. */
MKC_DEVICE void mkc_prefetch_rows(const mkc_wrow *w, int nrows, int lane) {
  for (int r = 0; r < nrows; r++)
    if (w[r].p)
      for (int o = lane * 64; o < w[r].row_bytes; o += 32 * 64) mkc_prefetch(w[r].p + o);
}

/* mkc_dot_lanes as a lane function (MKC_WARP_SUM_OF), after the lane's share
 * of the prefetch of the rows the warp takes next: its arguments, and the
 * call for one lane, one function per number of rows the stages use, so that
 * the row loops of each have literal bounds (the CPU calls it through a
 * pointer, where nothing else would make them literal). */
typedef struct mkc_dot_args {
  const mkc_wrow *w, *next;
  int n_chunks;
  const float *x;
  int x_stride;
  const mkc_bf16 *norm_w;
  int T;
} mkc_dot_args;

MKC_DEVICE void mkc_dot_lane_rows(const void *args, int lane, float *acc) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows(a->next, MKC_ROWS, lane);
  mkc_dot_lanes(lane, a->w, MKC_ROWS, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, acc);
}

MKC_DEVICE void mkc_dot_lane_rows2(const void *args, int lane, float *acc) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows(a->next, 2 * MKC_ROWS, lane);
  mkc_dot_lanes(lane, a->w, 2 * MKC_ROWS, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, acc);
}

MKC_DEVICE void mkc_dot_lane_row1(const void *args, int lane, float *acc) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows(a->next, 1, lane);
  mkc_dot_lanes(lane, a->w, 1, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, acc);
}

#ifdef MKC_CPU
/* Every lane's share of mkc_prefetch_rows: the rows whole. */
MKC_DEVICE void mkc_prefetch_rows_all(const mkc_wrow *w, int nrows) {
  for (int r = 0; r < nrows; r++)
    if (w[r].p)
      for (int o = 0; o < w[r].row_bytes; o += 64) mkc_prefetch(w[r].p + o);
}

/* The two above for all lanes at once (MKC_WARP_SUM_OF_WARP): the whole of the
 * next rows prefetched, then the warp sums. */
MKC_DEVICE void mkc_dot_warp_rows(const void *args, float *sums) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows_all(a->next, MKC_ROWS);
  mkc_dot_lanes(MKC_ALL_LANES, a->w, MKC_ROWS, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T,
                sums);
}

MKC_DEVICE void mkc_dot_warp_rows2(const void *args, float *sums) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows_all(a->next, 2 * MKC_ROWS);
  mkc_dot_lanes(MKC_ALL_LANES, a->w, 2 * MKC_ROWS, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T,
                sums);
}

MKC_DEVICE void mkc_dot_warp_row1(const void *args, float *sums) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows_all(a->next, 1);
  mkc_dot_lanes(MKC_ALL_LANES, a->w, 1, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, sums);
}
#endif

/* The rows' sums scaled by the norm's 1 / rms (where there is a norm and it is known: the split
 * takes its own, mkc_split_dot). */
MKC_DEVICE void mkc_rows_scale(float *acc, int nrows, const mkc_bf16 *norm_w, const float *inv_rms,
                               int T) {
  if (norm_w && inv_rms)
    for (int r = 0; r < nrows; r++)
      for (int t = 0; t < MKC_T_MAX; t++) {
        if (t >= T) break;
        acc[r * MKC_T_MAX + t] *= inv_rms[t];
      }
}

/* Full dot products in every lane of the rows w[0 .. nrows) (nrows: MKC_ROWS,
 * 2 * MKC_ROWS, or 1 where MKC_MV_ROW1 takes rows one at a time), the rows
 * next[0 .. nrows) prefetched: the partials of all rows reduced in one warp
 * sum, then scaled by the norm. */
MKC_DEVICE void mkc_dot_rows(const mkc_wrow *w, const mkc_wrow *next, int nrows, int n_chunks,
                             const float *x, int x_stride, const mkc_bf16 *norm_w,
                             const float *inv_rms, int T, float *acc) {
  mkc_dot_args args = {w, next, n_chunks, x, x_stride, norm_w, T};
  if (nrows == MKC_ROWS)
    MKC_WARP_SUM_OF_WARP(mkc_dot_lane_rows, mkc_dot_warp_rows, &args, acc, MKC_ROWS, MKC_T_MAX, T);
  else if (nrows == 1)
    MKC_WARP_SUM_OF_WARP(mkc_dot_lane_row1, mkc_dot_warp_row1, &args, acc, 1, MKC_T_MAX, T);
  else
    MKC_WARP_SUM_OF_WARP(mkc_dot_lane_rows2, mkc_dot_warp_rows2, &args, acc, 2 * MKC_ROWS,
                         MKC_T_MAX, T);
  mkc_rows_scale(acc, nrows, norm_w, inv_rms, T);
}

/* Whether mkc_dot_rows' sums of the lane's next rows are in acc already,
 * scaled: another lane's (the CPU emulator's warp sums,
 * mkc_simt_warp_sum_ready), so that the lane builds no rows. Where the caller
 * reads them in lane 0 only (lane0), the other lanes are not given them.
 * Never on the GPU, where each lane makes its own. */
MKC_DEVICE int mkc_dot_rows_ready(int nrows, const mkc_bf16 *norm_w, const float *inv_rms, int T,
                                  float *acc, int lane0) {
#ifdef MKC_CPU
  float *v = lane0 && mkc_lane() != 0 ? (float *)0 : acc;
  if (!mkc_simt_warp_sum_ready(v, nrows, MKC_T_MAX, T)) return 0;
  if (v) mkc_rows_scale(acc, nrows, norm_w, inv_rms, T);
  return 1;
#else
  (void)nrows, (void)norm_w, (void)inv_rms, (void)T, (void)acc, (void)lane0;
  return 0;
#endif
}

/* The rows r0 .. r0 + MKC_ROWS - 1 of w that exist (the rest null). */
MKC_DEVICE void mkc_row_block(mkc_wmat w, int rows, int r0, mkc_wrow *out) {
  for (int r = 0; r < MKC_ROWS; r++)
    out[r] = r0 + r < rows ? mkc_wmat_row(w, r0 + r) : mkc_wrow_none_of(w.type);
}

/* One warp's block of MKC_ROWS rows from r0 dotted with the T inputs into
 * acc, the block it takes next (r0 + step) prefetched first: the loop body
 * of the matvec and the LM head (which read acc in lane 0 only on the CPU). */
MKC_DEVICE void mkc_dot_row_block(mkc_wmat w, int rows, int r0, int step, int n_chunks,
                                  const float *x, int x_stride, const mkc_bf16 *norm_w,
                                  const float *inv_rms, int T, float *acc) {
  if (mkc_dot_rows_ready(MKC_ROWS, norm_w, inv_rms, T, acc, 1)) return;
  mkc_wrow wr[MKC_ROWS], next[MKC_ROWS];
  mkc_row_block(w, rows, r0, wr);
  mkc_row_block(w, rows, r0 + step, next);
  mkc_dot_rows(wr, next, MKC_ROWS, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
}

/* Bytes per storage block of the type (ggml's; bf16: a chunk's 16), whose elements are 8 times
 * mkc_wtype_chunks. */
MKC_DEVICE int mkc_wtype_block_bytes(int type) {
  switch (type) {
  case MKC_W_Q8_0:
    return 34;
  case MKC_W_Q4_0:
    return 18;
  case MKC_W_Q4_1:
    return 20;
  case MKC_W_Q5_0:
    return 22;
  case MKC_W_Q5_1:
    return 24;
  case MKC_W_IQ4_NL:
    return 18;
  case MKC_W_MXFP4:
    return 17;
  case MKC_W_NVFP4:
    return 36;
  case MKC_W_Q1_0:
  case MKC_W_Q2_0:
    return 18;
  case MKC_W_TQ1_0:
    return 54;
  case MKC_W_TQ2_0:
    return 66;
  case MKC_W_Q2_K:
    return 84;
  case MKC_W_Q3_K:
    return 110;
  case MKC_W_Q4_K:
    return 144;
  case MKC_W_Q5_K:
    return 176;
  case MKC_W_Q6_K:
    return 210;
  case MKC_W_IQ2_XXS:
    return 66;
  case MKC_W_IQ2_XS:
    return 74;
  case MKC_W_IQ2_S:
    return 82;
  case MKC_W_IQ3_XXS:
    return 98;
  case MKC_W_IQ3_S:
    return 110;
  case MKC_W_IQ1_S:
    return 50;
  case MKC_W_IQ1_M:
    return 56;
  case MKC_W_IQ4_XS:
    return 136;
  default:
    return 16; /* bf16: a chunk of 8 */
  }
}

/* Chunks (8 elements) per storage block of the type: a row splits only between blocks. */
MKC_DEVICE int mkc_wtype_chunks(int type) {
  switch (type) {
  case MKC_W_BF16:
    return 1;
  case MKC_W_Q8_0:
  case MKC_W_Q4_0:
  case MKC_W_Q4_1:
  case MKC_W_Q5_0:
  case MKC_W_Q5_1:
  case MKC_W_IQ4_NL:
  case MKC_W_MXFP4:
    return 4;
  case MKC_W_NVFP4:
  case MKC_W_Q2_0:
    return 8;
  case MKC_W_Q1_0:
    return 16;
  default:
    return 32; /* the types of 256 */
  }
}

/* Bytes of the first c chunks of a row of the type (c a whole number of its blocks). (Until
 * 2026-12-01 only Q8_0, Q4_0, Q4_1, Q4_K and Q6_K were known here, and MKC_SPLIT=1 split rows of
 * the other block types at the wrong bytes.) */
MKC_DEVICE long mkc_wtype_bytes(int type, int c) {
  return (long)(c / mkc_wtype_chunks(type)) * mkc_wtype_block_bytes(type);
}

/* Splitting the columns of a row block over a block's warps, for stages with
 * too few rows to give every warp of the grid its own (llama-3.2-1b's o-proj
 * and down: 2048 rows, where 1584 warps of 4 rows each leave two thirds
 * idle). Whether it takes fewer passes: a block's row blocks, each a quarter
 * of a warp's work, against a warp's row blocks. Only with MKC_SPLIT 1,
 * which codegen emits for all-bf16 kernels of one input a step: there the
 * H200 ran 18 % faster with it. In the kernel with drafts it was 15 %
 * slower (spilling at T <= 5), as every split stage was on the H100, where
 * each pass's warp sum, smem partials and two block barriers cost more than
 * the idle warps (docs/DECISIONS.md, 2026-11-27 and 2026-12-04). */
#ifndef MKC_SPLIT
#define MKC_SPLIT 0
#endif
MKC_DEVICE int mkc_split_pays_n(int rows, int n) { /* n: the rows a warp takes at once */
  if (!MKC_SPLIT) return 0;                        /* every stage's row blocks by warp */
  int per_block = mkc_nblocks() * n, per_warp = mkc_grid_warps() * n;
  return (rows + per_block - 1) / per_block < (rows + per_warp - 1) / per_warp * MKC_WARPS;
}
MKC_DEVICE int mkc_split_pays(int rows) { return mkc_split_pays_n(rows, MKC_ROWS); }

/* The split's task k (a block's index, then one grid of blocks more each pass): n units (rows,
 * or Q/K/V pairs) a block while every block gets n, then the units left spread over all the
 * blocks, ceil(left / blocks) each, so that no block takes a whole task more than another
 * (llama-3.2-1b's 1536 Q/K/V pairs at 528 blocks, 2 a task: 3 pairs at most, where whole tasks
 * gave 240 blocks 4 and 288 blocks 2). Its first unit into *u0, and how many (0: none, nor in
 * any later task). */
MKC_DEVICE int mkc_split_task(int units, int n, int k, int *u0) {
  int nb = mkc_nblocks(), whole = units / (nb * n) * nb, left = units - whole * n;
  int m = (left + nb - 1) / nb, count = n;
  *u0 = k * n;
  if (k >= whole) {
    *u0 = whole * n + (k - whole) * m;
    count = units - *u0 < m ? units - *u0 : m;
  }
  return count > 0 ? count : 0;
}

/* Whether mkc_matvec takes its rows one a warp (MKC_MV_ROW1): where its row blocks would
 * leave warps idle and it does not split; and the rows a warp takes at once then. */
MKC_DEVICE int mkc_row1_pays(int rows) {
  return MKC_MV_ROW1 && !mkc_split_pays(rows) &&
         (rows + MKC_ROWS - 1) / MKC_ROWS < mkc_grid_warps();
}
MKC_DEVICE int mkc_matvec_rows_n(int rows) { return mkc_row1_pays(rows) ? 1 : MKC_ROWS; }

/* This warp's share of a split row of n_chunks: its first chunk into *c0 and how many
 * (<= 0: none) into *nc, whole blocks of g chunks each. */
MKC_DEVICE void mkc_split_share(int n_chunks, int g, int *c0, int *nc) {
  int share = (n_chunks / g + MKC_WARPS - 1) / MKC_WARPS * g;
  *c0 = mkc_warp() * share;
  *nc = n_chunks - *c0 < share ? n_chunks - *c0 : share;
}

/* The smem the split takes: MKC_WARPS + 1 times nrows x MKC_T_MAX floats; codegen
 * reserves it for up to 8 rows per matrix (the CPU's MKC_ROWS). */
#define MKC_SPLIT_ROWS_MAX 8
typedef char mkc_split_rows_fit[MKC_ROWS <= MKC_SPLIT_ROWS_MAX ? 1 : -1];

/* v's first k elements, the rest 0 (k <= 0: none). */
MKC_DEVICE_INLINE mkc_f4 mkc_f4_first(mkc_f4 v, int k) {
  v.x = k > 0 ? v.x : 0.0f;
  v.y = k > 1 ? v.y : 0.0f;
  v.z = k > 2 ? v.z : 0.0f;
  v.w = k > 3 ? v.w : 0.0f;
  return v;
}

/* The whole block's dot products of one row block, wr[0 .. nrows) (MKC_ROWS or
 * 2 * MKC_ROWS; null rows give 0; next: prefetched), with the T inputs: each
 * warp takes its share of the columns (whole storage blocks of every row's
 * type), writes its partials to part, and the block adds them in warp order
 * (the same bits on every run: no atomics) into sums[r * MKC_T_MAX + t], which
 * every thread may read when it returns. part: MKC_WARPS * nrows * MKC_T_MAX
 * floats of smem, sums the nrows * MKC_T_MAX after them, then MKC_WARPS *
 * MKC_T_MAX for a norm's squares; acc: the caller's registers for the warp's
 * own sums (nrows * MKC_T_MAX), free again after. A norm (norm_w) is taken
 * here: each warp adds the squares of its columns of x, which its dot has just
 * read (L1), and the block scales its sums by 1 / sqrt(their sum / n_x + eps).
 * The stage then needs no prologue before its first loads (mkc_rms_prologue: a
 * round trip and three barriers). */
MKC_DEVICE void mkc_split_dot(mkc_wrow *wr, mkc_wrow *next, int nrows, int n_chunks, const float *x,
                              int x_stride, const mkc_bf16 *norm_w, int n_x, float eps, int T,
                              float *part, float *acc) {
  float *sums = part + MKC_WARPS * nrows * MKC_T_MAX, *squares = sums + nrows * MKC_T_MAX;
  int g = 1;
  for (int r = 0; r < nrows; r++)
    if (wr[r].p && mkc_wtype_chunks(wr[r].type) > g) g = mkc_wtype_chunks(wr[r].type);
  int c0, nc;
  mkc_split_share(n_chunks, g, &c0, &nc);
  for (int r = 0; r < nrows; r++) { /* this warp's columns of each row */
    if (wr[r].p) {
      wr[r].p += mkc_wtype_bytes(wr[r].type, c0);
      wr[r].row_bytes = nc > 0 ? (int)mkc_wtype_bytes(wr[r].type, nc) : 0;
    }
    if (next[r].p) {
      next[r].p += mkc_wtype_bytes(next[r].type, c0);
      next[r].row_bytes = nc > 0 ? (int)mkc_wtype_bytes(next[r].type, nc) : 0;
    }
  }
  if (nc > 0)
    mkc_dot_rows(wr, next, nrows, nc, x + c0 * 8, x_stride, norm_w ? norm_w + c0 * 8 : norm_w,
                 (const float *)0, T, acc);
  if (norm_w) {
    MKC_UNROLL for (int t = 0; t < MKC_T_MAX; t++) {
      float q = 0.0f;
      for (int c = c0 + mkc_lane(); t < T && c < c0 + nc; c += 32) {
        mkc_f4 a = mkc_load_f4(x + t * x_stride + c * 8),
               b = mkc_load_f4(x + t * x_stride + c * 8 + 4);
        if (n_x % 8) { /* the columns past n_x: padding, which the prologue does not count */
          a = mkc_f4_first(a, n_x - c * 8);
          b = mkc_f4_first(b, n_x - c * 8 - 4);
        }
        q += ((a.x * a.x + a.y * a.y) + (a.z * a.z + a.w * a.w)) +
             ((b.x * b.x + b.y * b.y) + (b.z * b.z + b.w * b.w));
      }
      q = mkc_warp_sum(q);
      if (mkc_lane() == 0) squares[mkc_warp() * MKC_T_MAX + t] = q;
    }
  }
  if (mkc_lane() == 0)
    for (int i = 0; i < nrows * MKC_T_MAX; i++)
      part[mkc_warp() * nrows * MKC_T_MAX + i] = nc > 0 ? acc[i] : 0.0f;
  mkc_sync_block();
  for (int i = mkc_tid(); i < nrows * MKC_T_MAX; i += MKC_THREADS) {
    float s = 0.0f, q = 0.0f;
    for (int wp = 0; wp < MKC_WARPS; wp++) s += part[wp * nrows * MKC_T_MAX + i];
    if (norm_w) {
      for (int wp = 0; wp < MKC_WARPS; wp++) q += squares[wp * MKC_T_MAX + i % MKC_T_MAX];
      s *= 1.0f / sqrtf(q / (float)n_x + eps);
    }
    sums[i] = s;
  }
  mkc_sync_block();
}

/* ---- The decode matvec on tensor cores (MKC_MMA_DECODE=1; bf16 matrices) ----
 * mma.sync m16n8k8 tf32 with 8 rows of a matrix as B (an n-tile) and the
 * inputs as A: an m-tile's rows 0-7 are 8 inputs' high tf32 parts and rows
 * 8-15 their low parts, so one product takes both and the tensor core's sum
 * over k replaces the warp sum. The order of k is free while A and B agree:
 * lane (g, q) loads chunk 4s + q (8 columns) of row g and of input 8m + g, and
 * product i of k-step s takes the chunk's columns 2i (k = q) and 2i + 1
 * (k = q + 4). A bf16 weight is exact in tf32 (its half of a word, shifted);
 * the two parts hold an input within 2^-20 of it (mkc_tf32_cut); the
 * products are exact and summed in float. An input's chunk serves 8 rows (4
 * on the CUDA-core path) and lanes past T load none: a verify or slot row
 * costs tensor-core time, not L1 traffic (docs/DECISIONS.md, "why T = 5 costs
 * 2.2 x T = 1"). The same code serves every T, so a row's bits do not depend
 * on the step's T and speculation stays lossless. Quantized matrices keep the
 * CUDA-core path. */
#ifndef MKC_MMA_DECODE
#define MKC_MMA_DECODE 0
#endif
#if MKC_MMA_DECODE
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "MKC_MMA_DECODE=1 needs tf32 tensor cores (sm_80 on)"
#endif
#define MKC_MV_MT ((MKC_T_MAX + 7) / 8) /* m-tiles: 8 inputs each */
#define MKC_MV_NT 2 /* n-tiles at most: one matrix's 8 rows, or gate's and up's */
/* k-steps (4 chunks) whose weight loads a lane issues before the first product:
 * 16 bytes per n-tile each (MKC_MMA_UNROLL, a knob for the GPU's A/B: 1 to 8) */
#ifndef MKC_MMA_UNROLL
#define MKC_MMA_UNROLL 4
#endif
typedef char mkc_mma_unroll_fits[MKC_MMA_UNROLL >= 1 && MKC_MMA_UNROLL <= 8 ? 1 : -1];

/* An input's tf32 parts are cut, not rounded: the high part is its top 19 bits
 * (one AND, where sm_90 spends a dozen instructions on cvt.rna's rounding for
 * each of 8 values a lane splits per k-step), the low part the same of the
 * exact remainder. The two hold the input within 2^-20 of it, relatively. */
MKC_DEVICE_INLINE unsigned mkc_tf32_cut(float f) { return mkc_f32_bits(f) & 0xffffe000u; }

#if MKC_CP_RING
/* A batch's chunks (MKC_MMA_UNROLL k-steps from chunk c0, this lane's q) of
 * the n-tiles' rows wp into the ring's group slot, committed as one group
 * (empty past the rows' end): the ring of the CUDA-core path, per batch. */
MKC_DEVICE_INLINE void mkc_mma_cp(int lane, int slot, const unsigned char *const *wp, int nt, int q,
                                  int c0, int n_chunks) {
  for (int u = 0; u < MKC_MMA_UNROLL; u++)
    for (int j = 0; j < MKC_MV_NT; j++) {
      int ch = c0 + 4 * u + q;
      if (ch < n_chunks && wp[j]) /* wp[j]: null past nt */
        mkc_cp_async16(mkc_cp_piece(lane, (slot * MKC_MMA_UNROLL + u) * nt + j), wp[j] + 16 * ch);
    }
  mkc_cp_commit();
}
#endif

/* This lane's (g, q) outputs of rows w[0 .. 8 nt) (n-tile j: w[8j .. 8j + 8),
 * null rows 0) with the T inputs, o[(m * nt + j) * 2 + e] = w[8j + 2q + e] .
 * x[8m + g] (x scaled per column by norm_w), over chunks 0 .. n_chunks - 1. */
MKC_DEVICE_INLINE void mkc_mma_lane(int lane, const mkc_wrow *w, int nt, int n_chunks,
                                    const float *x, int x_stride, const mkc_bf16 *norm_w, int T,
                                    float *o) {
  int g = lane >> 2, q = lane & 3, mt = (T + 7) / 8;
  float c[MKC_MV_MT * MKC_MV_NT * 4];
  for (int i = 0; i < MKC_MV_MT * MKC_MV_NT * 4; i++) c[i] = 0.0f;
  const unsigned char *wp[MKC_MV_NT];
  /* row g of each n-tile, picked by literal indices: w[8 * j + g] would keep the rows in local
   * memory */
  for (int j = 0; j < MKC_MV_NT; j++) {
    wp[j] = 0;
    MKC_UNROLL for (int r = 0; r < 8; r++) if (j < nt && r == g) wp[j] = w[8 * j + r].p;
  }
#if MKC_CP_RING
  /* batches in flight in the ring (MKC_CP_RING): 2 at least, or the loads below */
  const int groups =
      MKC_CP_RING / (MKC_MMA_UNROLL * nt) >= 2 ? MKC_CP_RING / (MKC_MMA_UNROLL * nt) : 0;
  for (int d = 0; d < groups; d++) mkc_mma_cp(lane, d, wp, nt, q, 4 * MKC_MMA_UNROLL * d, n_chunks);
#endif
  for (int c0 = 0, b = 0; c0 < n_chunks; c0 += 4 * MKC_MMA_UNROLL, b++) {
    mkc_u4 wc[MKC_MMA_UNROLL][MKC_MV_NT];
#if MKC_CP_RING
    if (groups) mkc_cp_wait(groups - 1); /* this batch's group has landed */
#endif
    MKC_UNROLL for (int u = 0; u < MKC_MMA_UNROLL; u++) /* every load first: wc in registers */
        for (int j = 0; j < MKC_MV_NT; j++) {
      int ch = c0 + 4 * u + q;
      mkc_u4 z = {0u, 0u, 0u, 0u};
#if MKC_CP_RING
      if (groups) { /* the batch's pieces, not the loads */
        wc[u][j] = ch < n_chunks && wp[j] ? mkc_load_shared_u4(mkc_cp_piece(
                                                lane, ((b % groups) * MKC_MMA_UNROLL + u) * nt + j))
                                          : z;
        continue;
      }
#endif
      wc[u][j] = ch < n_chunks && wp[j] ? mkc_load_weight_u4(wp[j] + 16 * ch) : z;
    }
    int queued = 0; /* products since the last flush: the emulator's queue holds 16 */
    MKC_UNROLL for (int u = 0; u < MKC_MMA_UNROLL; u++) {
      if (c0 + 4 * u >= n_chunks) break; /* past the warp's last k-step */
      if (queued == 16) {
        mkc_mma_flush(c);
        queued = 0;
      }
      queued += 4;
      int ch = c0 + 4 * u + q;
      float gn[8], xv[MKC_MV_MT][8];
      if (norm_w && ch < n_chunks) mkc_unpack8(mkc_load_u4(norm_w + ch * 8), gn);
      for (int m = 0; m < MKC_MV_MT; m++) {
        int t = 8 * m + g;
        for (int i = 0; i < 8; i++) xv[m][i] = 0.0f;
        if (m >= mt || t >= T || ch >= n_chunks) continue;
        mkc_f4 a = mkc_load_f4(x + t * x_stride + ch * 8),
               b = mkc_load_f4(x + t * x_stride + ch * 8 + 4);
        float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        for (int i = 0; i < 8; i++) xv[m][i] = norm_w ? v[i] * gn[i] : v[i];
      }
      for (int i = 0; i < 4; i++) {
        unsigned a[MKC_MV_MT * 4], b[MKC_MV_NT * 2];
        for (int m = 0; m < MKC_MV_MT;
             m++) { /* a0 (g, q), a1 (g + 8, q), a2 (g, q + 4), a3 (g + 8, q + 4) */
          unsigned h0 = mkc_tf32_cut(xv[m][2 * i]), h1 = mkc_tf32_cut(xv[m][2 * i + 1]);
          a[m * 4] = h0;
          a[m * 4 + 1] = mkc_tf32_cut(xv[m][2 * i] - mkc_bits_f32(h0));
          a[m * 4 + 2] = h1;
          a[m * 4 + 3] = mkc_tf32_cut(xv[m][2 * i + 1] - mkc_bits_f32(h1));
        }
        for (int j = 0; j < MKC_MV_NT; j++) { /* b0 (q, g), b1 (q + 4, g): columns 2i and 2i + 1 */
          unsigned word = i == 0   ? wc[u][j].x
                          : i == 1 ? wc[u][j].y
                          : i == 2 ? wc[u][j].z
                                   : wc[u][j].w;
          b[j * 2] = word << 16;
          b[j * 2 + 1] = word & 0xffff0000u;
        }
        mkc_mma_tf32_1_queue(a, b, c, mt, nt, MKC_MV_MT, MKC_MV_NT);
      }
    }
    mkc_mma_flush(c); /* queued > 0: the loop's first k-step always runs */
#if MKC_CP_RING
    /* the slot again, for the batch `groups` ahead: its pieces were read into wc, and used */
    if (groups) mkc_mma_cp(lane, b % groups, wp, nt, q, c0 + 4 * MKC_MMA_UNROLL * groups, n_chunks);
#endif
  }
  /* c0 (g, 2q), c1 (g, 2q + 1): the high parts' sums; c2, c3 (g + 8, ...) the low parts' */
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < MKC_MV_NT; j++) {
      if (j >= nt) break;
      const float *d = c + (m * MKC_MV_NT + j) * 4;
      o[(m * nt + j) * 2] = d[0] + d[2];
      o[(m * nt + j) * 2 + 1] = d[1] + d[3];
    }
}

#ifdef MKC_CPU
typedef float mkc_mma_v8f __attribute__((vector_size(32)));
/* Every lane's mkc_mma_lane at once, sums[r * T + t] = row r's (of 8 nt)
 * output for input t, by the emulator's arithmetic for the products the
 * lanes queue: each in k order into the input's high or low accumulator,
 * then the two added. Products past n_chunks are +0 and leave a sum that
 * starts at +0 as it is, so they are skipped. Rows go 8 at a time as one
 * vector, each lane of it one row's chain of additions. */
__attribute__((noinline)) static void mkc_mma_warp_of(const mkc_wrow *w, int nt, int n_chunks,
                                                      const float *x, int x_stride,
                                                      const mkc_bf16 *norm_w, int T, float *sums) {
  for (int j = 0; j < nt; j++) {
    mkc_mma_v8f dh[MKC_T_MAX], dl[MKC_T_MAX];
    for (int t = 0; t < MKC_T_MAX; t++) dh[t] = dl[t] = (mkc_mma_v8f){0};
    for (int s = 0; s * 4 < n_chunks; s++) {
      mkc_mma_v8f wv[32]; /* wv[o][r]: column 32s + o of row 8j + r */
      for (int o = 0; o < 32; o++) wv[o] = (mkc_mma_v8f){0};
      for (int r = 0; r < 8; r++) {
        const unsigned char *p = w[8 * j + r].p;
        for (int cc = 0; cc < 4 && p && 4 * s + cc < n_chunks; cc++) {
          float f[8];
          mkc_unpack8(mkc_load_u4(p + 16 * (4 * s + cc)), f);
          for (int e = 0; e < 8; e++) wv[8 * cc + e][r] = f[e];
        }
      }
      int cols = n_chunks * 8 - 32 * s < 32 ? n_chunks * 8 - 32 * s : 32;
      for (int t = 0; t < T; t++) {
        float xh[32], xl[32];
        for (int o = 0; o < 32; o++) {
          int col = 32 * s + o;
          float v = o < cols ? x[t * x_stride + col] : 0.0f;
          if (norm_w && o < cols) v *= mkc_bf16_to_f32(norm_w[col]);
          xh[o] = mkc_bits_f32(mkc_tf32_cut(v));
          xl[o] = mkc_bits_f32(mkc_tf32_cut(v - xh[o]));
        }
        mkc_mma_v8f h = dh[t], l = dl[t];
        for (int i = 0; i < 4; i++)
          for (int k = 0; k < 8; k++) {
            int o = 8 * (k & 3) + 2 * i + (k >> 2);
            if (o >= cols) continue;
            h += xh[o] * wv[o];
            l += xl[o] * wv[o];
          }
        dh[t] = h;
        dl[t] = l;
      }
    }
    for (int r = 0; r < 8; r++)
      for (int t = 0; t < T; t++) sums[(8 * j + r) * T + t] = dh[t][r] + dl[t][r];
  }
}

/* mkc_mma_lane as a lane function of a warp sum: the lane's outputs at their
 * rows and inputs (v[r * MKC_T_MAX + t]), zeros elsewhere, so the sum over
 * the lanes is each output, exactly; and the warp's sums at once. */
MKC_DEVICE void mkc_mma_lane_into(const void *args, int nt, int lane, float *v) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  float o[MKC_MV_MT * MKC_MV_NT * 2];
  mkc_prefetch_rows(a->next, 8 * nt, lane);
  mkc_mma_lane(lane, a->w, nt, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, o);
  for (int i = 0; i < 8 * nt * MKC_T_MAX; i++) v[i] = 0.0f;
  int g = lane >> 2, q = lane & 3;
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < nt; j++)
      for (int e = 0; e < 2; e++)
        if (8 * m + g < a->T)
          v[(8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g] = o[(m * nt + j) * 2 + e];
}
MKC_DEVICE void mkc_mma_lane_rows(const void *args, int lane, float *v) {
  mkc_mma_lane_into(args, 1, lane, v);
}
MKC_DEVICE void mkc_mma_lane_rows2(const void *args, int lane, float *v) {
  mkc_mma_lane_into(args, 2, lane, v);
}
MKC_DEVICE void mkc_mma_warp_rows(const void *args, float *sums) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows_all(a->next, 8);
  mkc_mma_warp_of(a->w, 1, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, sums);
}
MKC_DEVICE void mkc_mma_warp_rows2(const void *args, float *sums) {
  const mkc_dot_args *a = (const mkc_dot_args *)args;
  mkc_prefetch_rows_all(a->next, 16);
  mkc_mma_warp_of(a->w, 2, a->n_chunks, a->x, a->x_stride, a->norm_w, a->T, sums);
}
#endif

/* This lane's outputs (mkc_mma_lane's o) of the rows w[0 .. 8 nt), nt 1 or 2,
 * the rows next[0 .. 8 nt) prefetched. */
MKC_DEVICE void mkc_mma_rows(const mkc_wrow *w, const mkc_wrow *next, int nt, int n_chunks,
                             const float *x, int x_stride, const mkc_bf16 *norm_w, int T,
                             float *o) {
#ifdef MKC_CPU
  mkc_dot_args args = {w, next, n_chunks, x, x_stride, norm_w, T};
  float all[8 * MKC_MV_NT * MKC_T_MAX];
  if (nt == 1)
    MKC_WARP_SUM_OF_WARP(mkc_mma_lane_rows, mkc_mma_warp_rows, &args, all, 8, MKC_T_MAX, T);
  else
    MKC_WARP_SUM_OF_WARP(mkc_mma_lane_rows2, mkc_mma_warp_rows2, &args, all, 16, MKC_T_MAX, T);
  int g = mkc_lane() >> 2, q = mkc_lane() & 3;
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < nt; j++)
      for (int e = 0; e < 2; e++)
        o[(m * nt + j) * 2 + e] =
            8 * m + g < T ? all[(8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g] : 0.0f;
#else
  mkc_prefetch_rows(next, 8 * nt, mkc_lane());
  mkc_mma_lane(mkc_lane(), w, nt, n_chunks, x, x_stride, norm_w, T, o);
#endif
}

/* The rows r0 .. r0 + 7 of w that exist (the rest null). */
MKC_DEVICE void mkc_mma_row_block(mkc_wmat w, int rows, int r0, mkc_wrow *out) {
  for (int r = 0; r < 8; r++)
    out[r] = r0 + r < rows ? mkc_wmat_row(w, r0 + r) : mkc_wrow_none_of(w.type);
}

/* Rows w[0 .. n) cut to slice s of S of their n_chunks (whole k-steps): its
 * first chunk into *c0, its chunks (>= 0) into *nc. */
MKC_DEVICE void mkc_splitk_rows(mkc_wrow *w, int n, int n_chunks, int s, int S, int *c0, int *nc) {
  int per = ((n_chunks + 3) / 4 + S - 1) / S * 4;
  *c0 = s * per;
  *nc = n_chunks - *c0 < per ? n_chunks - *c0 : per;
  if (*nc < 0) *nc = 0;
  for (int r = 0; r < n; r++)
    if (w[r].p) {
      w[r].p += 16 * *c0;
      w[r].row_bytes = 16 * *nc;
    }
}

/* mkc_mma_rows over slice s of S of the rows' columns (next: cut to slice
 * s_next, the one this warp takes next). */
MKC_DEVICE void mkc_mma_slice_rows(mkc_wrow *w, mkc_wrow *next, int nt, int n_chunks, int s,
                                   int s_next, int S, const float *x, int x_stride,
                                   const mkc_bf16 *norm_w, int T, float *o) {
  int c0, nc, c0_next, nc_next;
  mkc_splitk_rows(w, 8 * nt, n_chunks, s, S, &c0, &nc);
  mkc_splitk_rows(next, 8 * nt, n_chunks, s_next, S, &c0_next, &nc_next);
  mkc_mma_rows(w, next, nt, nc, x + c0 * 8, x_stride, norm_w && nc ? norm_w + c0 * 8 : norm_w, T,
               o);
}

/* mkc_mma_rows for a whole block, its warps splitting the columns in k-steps
 * (MKC_SPLIT=1): each warp's outputs go to part (MKC_WARPS x 8 nt x
 * MKC_T_MAX floats of smem), and warp 0's lanes add theirs in warp order into
 * o (the same bits on every run). */
MKC_DEVICE void mkc_mma_split(mkc_wrow *wr, mkc_wrow *next, int nt, int n_chunks, const float *x,
                              int x_stride, const mkc_bf16 *norm_w, int T, float *part, float *o) {
  mkc_mma_slice_rows(wr, next, nt, n_chunks, mkc_warp(), mkc_warp(), MKC_WARPS, x, x_stride, norm_w,
                     T, o);
  int g = mkc_lane() >> 2, q = mkc_lane() & 3, per = 8 * nt * MKC_T_MAX;
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < nt; j++)
      for (int e = 0; e < 2; e++)
        if (8 * m + g < T)
          part[mkc_warp() * per + (8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g] =
              o[(m * nt + j) * 2 + e];
  mkc_sync_block();
  if (mkc_warp() == 0)
    for (int m = 0; m < MKC_MV_MT; m++)
      for (int j = 0; j < nt; j++)
        for (int e = 0; e < 2; e++) {
          float s = 0.0f;
          if (8 * m + g >= T) continue;
          for (int wp = 0; wp < MKC_WARPS; wp++)
            s += part[wp * per + (8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g];
          o[(m * nt + j) * 2 + e] = s;
        }
  mkc_sync_block();
}

/* Split-K over the grid's warps (MKC_SPLITK=1): a stage with fewer 8-row
 * groups than the grid has warps (llama-3.2-1b's o-proj and down: 256 for
 * 1584) gives each group S slices of its columns, S warps anywhere in the
 * grid. Each writes its slice's outputs to splitk (scratch: [group][slice]
 * [8 nt rows][MKC_T_MAX]), releases them and counts itself in the group's
 * counter (after MKC_SPLITK_PART_FLOATS floats of partials); the warp that
 * completes the count acquires the others' and adds the S slices in order, so
 * the sums are the same whoever comes last, and finishes the group (output,
 * residual, SwiGLU or RoPE), then zeroes the counter for the next stage. S
 * depends on the grid and the rows, not on T: a row's bits do not change
 * with the step's inputs. */
#ifndef MKC_SPLITK
#define MKC_SPLITK 0
#define MKC_SPLITK_PART_FLOATS 0 /* codegen plans the buffer only with MKC_SPLITK=1 */
#endif
#define MKC_SPLITK_MAX 8

/* The slices per group of a stage of `groups` 8-row groups: 1 (no split) unless
 * MKC_SPLITK gives the kernel its buffer and the groups leave warps idle. */
MKC_DEVICE int mkc_splitk_of(int groups, const float *splitk) {
  if (!MKC_SPLITK || !splitk) return 1;
  int S = mkc_grid_warps() / groups;
  return S < 2 ? 1 : S > MKC_SPLITK_MAX ? MKC_SPLITK_MAX : S;
}

/* Task k of a stage's groups x S: slice k % S of group k / S, the rows w[0 ..
 * 8 nt) (next: the rows of task k_next, which this warp takes next,
 * prefetched) over their slice's columns, the partials out, the group
 * counted. 1 in the warp that completes the group, with o (as mkc_mma_rows
 * gives it) the sum of the S slices; 0 elsewhere. */
MKC_DEVICE int mkc_mma_slice(mkc_wrow *w, mkc_wrow *next, int nt, int n_chunks, const float *x,
                             int x_stride, const mkc_bf16 *norm_w, int T, int k, int k_next, int S,
                             float *splitk, float *o) {
  int grp = k / S, s = k % S;
  mkc_mma_slice_rows(w, next, nt, n_chunks, s, k_next % S, S, x, x_stride, norm_w, T, o);
  int g = mkc_lane() >> 2, q = mkc_lane() & 3, per = 8 * nt * MKC_T_MAX;
  float *part = splitk + ((long)grp * S + s) * per;
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < nt; j++)
      for (int e = 0; e < 2; e++)
        if (8 * m + g < T)
          part[(8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g] = o[(m * nt + j) * 2 + e];
  mkc_sync_warp(); /* every lane's partials written before lane 0 releases them */
  int last = 0;
  if (mkc_lane() == 0) {
    unsigned *count = (unsigned *)(splitk + MKC_SPLITK_PART_FLOATS) + grp;
    mkc_fence(); /* release: the slice's partials are visible before it is counted */
    last = mkc_atomic_add_u32(count, 1u) + 1u == (unsigned)S;
    if (last) {
      mkc_fence(); /* acquire: the other slices, counted before ours */
      mkc_store_u32(count, 0u);
    }
  }
  /* a shuffle orders nothing: lane 0's acquire comes before the other lanes read */
  mkc_sync_warp();
  if (!mkc_warp_or(last)) return 0;
  const float *all = splitk + (long)grp * S * per;
  for (int m = 0; m < MKC_MV_MT; m++)
    for (int j = 0; j < nt; j++)
      for (int e = 0; e < 2; e++) {
        int at = (8 * j + 2 * q + e) * MKC_T_MAX + 8 * m + g;
        float sum = 0.0f;
        if (8 * m + g < T)
          for (int k = 0; k < S; k++) sum += all[k * per + at];
        o[(m * nt + j) * 2 + e] = sum;
      }
  return 1;
}

/* Task k's outputs o (as mkc_mma_rows gives them) of the rows wr (next: task
 * k_next's, prefetched), the stage's way: slice k % S of a group (S > 1), a
 * block's share of its rows (split), or the warp's rows. 1 in the warp that
 * writes them: the group's last slice, warp 0 of a split, every warp else. */
MKC_DEVICE int mkc_mma_task(mkc_wrow *wr, mkc_wrow *next, int nt, int n_chunks, const float *x,
                            int x_stride, const mkc_bf16 *norm_w, int T, int S, int split, int k,
                            int k_next, float *part, float *splitk, float *o) {
  if (S > 1)
    return mkc_mma_slice(wr, next, nt, n_chunks, x, x_stride, norm_w, T, k, k_next, S, splitk, o);
  if (split) {
    mkc_mma_split(wr, next, nt, n_chunks, x, x_stride, norm_w, T, part, o);
    return mkc_warp() == 0;
  }
  mkc_mma_rows(wr, next, nt, n_chunks, x, x_stride, norm_w, T, o);
  return 1;
}

/* mkc_matvec of a bf16 matrix: a warp's 8 rows at a time (or a block's, split). */
MKC_DEVICE void mkc_matvec_mma(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                               const mkc_bf16 *norm_w, const float *inv_rms, float *out,
                               int out_stride, int accumulate, const mkc_bf16 *bias, int T,
                               float *part, float *splitk) {
  int S = mkc_splitk_of((rows + 7) / 8, splitk), g = mkc_lane() >> 2, q = mkc_lane() & 3;
  int split = S == 1 && mkc_split_pays_n(rows, 8);
  /* a task: a warp's 8 rows, a block's (split), or slice t % S of group t / S (split-K) */
  int tasks = S > 1 ? (rows + 7) / 8 * S : rows, each = S > 1 ? 1 : 8;
  int step = (split ? mkc_nblocks() : mkc_grid_warps()) * each;
  for (int k = (split ? mkc_bid() : mkc_grid_warp()) * each; k < tasks; k += step) {
    int r0 = S > 1 ? k / S * 8 : k, rn = S > 1 ? (k + step) / S * 8 : k + step;
    mkc_wrow wr[8], next[8];
    float o[MKC_MV_MT * 2];
    mkc_mma_row_block(w, rows, r0, wr);
    mkc_mma_row_block(w, rows, rn, next);
    if (!mkc_mma_task(wr, next, 1, n_chunks, x, x_stride, norm_w, T, S, split, k, k + step, part,
                      splitk, o))
      continue;
    for (int m = 0; m < MKC_MV_MT; m++) /* compile-time bounds: o stays in registers */
      for (int e = 0; e < 2; e++) {
        int t = 8 * m + g, r = r0 + 2 * q + e;
        if (t >= T || r >= rows) continue;
        float v = norm_w ? o[m * 2 + e] * inv_rms[t] : o[m * 2 + e];
        mkc_put(out + t * out_stride + r, v, bias, r, accumulate);
      }
  }
}

/* mkc_matvec_swiglu of bf16 gate and up: their 8 rows each as two n-tiles. */
MKC_DEVICE void mkc_matvec_swiglu_mma(mkc_wmat w_gate, mkc_wmat w_up, int rows, int n_chunks,
                                      const float *x, int x_stride, const mkc_bf16 *norm_w,
                                      const float *inv_rms, float *out, int out_stride, int T,
                                      float *part, float *splitk) {
  int S = mkc_splitk_of((rows + 7) / 8, splitk), g = mkc_lane() >> 2, q = mkc_lane() & 3;
  int split = S == 1 && mkc_split_pays_n(rows, 8);
  int tasks = S > 1 ? (rows + 7) / 8 * S : rows, each = S > 1 ? 1 : 8; /* as mkc_matvec_mma */
  int step = (split ? mkc_nblocks() : mkc_grid_warps()) * each;
  for (int k = (split ? mkc_bid() : mkc_grid_warp()) * each; k < tasks; k += step) {
    int r0 = S > 1 ? k / S * 8 : k, rn = S > 1 ? (k + step) / S * 8 : k + step;
    mkc_wrow wr[16], next[16];
    float o[MKC_MV_MT * 4];
    mkc_mma_row_block(w_gate, rows, r0, wr);
    mkc_mma_row_block(w_up, rows, r0, wr + 8);
    mkc_mma_row_block(w_gate, rows, rn, next);
    mkc_mma_row_block(w_up, rows, rn, next + 8);
    if (!mkc_mma_task(wr, next, 2, n_chunks, x, x_stride, norm_w, T, S, split, k, k + step, part,
                      splitk, o))
      continue;
    for (int m = 0; m < MKC_MV_MT; m++)
      for (int e = 0; e < 2; e++) {
        int t = 8 * m + g, r = r0 + 2 * q + e;
        if (t >= T || r >= rows) continue;
        float gv = o[(m * 2) * 2 + e], uv = o[(m * 2 + 1) * 2 + e];
        if (norm_w) {
          gv *= inv_rms[t];
          uv *= inv_rms[t];
        }
        out[t * out_stride + r] = mkc_glu(gv, uv);
      }
  }
}
#endif

/* Up to MKC_PREFETCH_BYTES of what a warp streams first from one of a stage's
 * n_mats matrices, into L2 while its block waits for the others: the first
 * 128-byte lines of its first n rows (r0 = its grid warp * n), or where the
 * stage splits (mkc_split_pays), of its share of its block's first task's rows.
 * One line per lane at a time. A hint: it changes no value. */
#ifndef MKC_PREFETCH_BYTES
#define MKC_PREFETCH_BYTES 8192
#endif
MKC_DEVICE void mkc_prefetch_first(mkc_wmat w, int rows, int n, int n_mats) {
  int lines = MKC_PREFETCH_BYTES / 128 / (n * n_mats), r0 = mkc_grid_warp() * n;
  long from = 0, bytes = w.row_bytes;
  if (mkc_split_pays(rows)) {
    int g = mkc_wtype_chunks(w.type), c0, nc;
    mkc_split_share((int)(w.row_bytes / mkc_wtype_bytes(w.type, g)) * g, g, &c0, &nc);
    if (nc <= 0) return;
    n = mkc_split_task(rows, n, mkc_bid(), &r0);
    from = mkc_wtype_bytes(w.type, c0);
    bytes = mkc_wtype_bytes(w.type, nc);
  }
  if (lines > (bytes + 127) / 128) lines = (int)((bytes + 127) / 128);
  for (int r = r0; r < r0 + n && r < rows; r++)
    for (int l = mkc_lane(); l < lines; l += 32)
      mkc_prefetch(w.p + (long)r * w.row_bytes + from + l * 128);
}

/* The whole of w's rows [0, rows) asked of L2, a 128-byte line per thread of the grid in turn:
 * with MKC_NEXT_PREFETCH=1 a stage that streams no weights (attention) asks for the next stage's
 * as it begins, so that they stream while it works and waits; with =2 o-proj and gate/up also
 * ask for the next stage's first rows once their own are done, before they arrive. A hint: it
 * changes no value. */
MKC_DEVICE void mkc_prefetch_next(mkc_wmat w, int rows) {
  /* int offsets: codegen asks for 16 MiB at most */
  int bytes = rows * (int)w.row_bytes, step = mkc_nblocks() * MKC_THREADS * 128;
  for (int o = (mkc_bid() * MKC_THREADS + mkc_tid()) * 128; o < bytes; o += step)
    mkc_prefetch(w.p + o);
}

/* A split task's sums each thread writes: i, i + MKC_THREADS, ... of MKC_ROWS x MKC_T_MAX. */
#define MKC_PUT_EACH ((MKC_ROWS * MKC_T_MAX + MKC_THREADS - 1) / MKC_THREADS)

/* A normed input's 1 / rms (norm_w: the norm's weights; n_x columns, eps) for a matvec stage:
 * where the stage splits, mkc_split_dot takes it from the squares of the columns its warps have
 * read; else every block first (mkc_rms_prologue, into inv_rms; red: MKC_WARPS floats). split:
 * whether the stage splits. red 0: the caller took it first, as codegen writes kernels that
 * cannot split (there the prologue's place in the template cost the T <= 5 Q4_K kernel 8 B of
 * spill). */
MKC_DEVICE void mkc_norm_first(const float *x, int x_stride, const mkc_bf16 *norm_w, int n_x,
                               float eps, int T, float *inv_rms, float *red, int split) {
  if (norm_w && red && !split) mkc_rms_prologue(x, x_stride, n_x, eps, 0, T, inv_rms, red);
}

/* out[t][r] = W[r] . in[t] (+ bias[r] where bias is not 0), or out[t][r] += ... with accumulate
 * (residual epilogue); in[t] normed where norm_w is given (mkc_norm_first). Where it pays, a
 * block's warps split the columns (mkc_split_dot; part: its smem). */
MKC_DEVICE void mkc_matvec(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                           const mkc_bf16 *norm_w, float *inv_rms, int n_x, float eps, float *red,
                           float *out, int out_stride, int accumulate, const mkc_bf16 *bias, int T,
                           float *part, float *splitk) {
  int mma = MKC_MMA_DECODE && w.type == MKC_W_BF16;
  mkc_norm_first(x, x_stride, norm_w, n_x, eps, T, inv_rms, red, !mma && mkc_split_pays(rows));
#if MKC_MMA_DECODE
  if (mma) {
    mkc_matvec_mma(w, rows, n_chunks, x, x_stride, norm_w, inv_rms, out, out_stride, accumulate,
                   bias, T, part, splitk);
    return;
  }
#endif
  (void)splitk;
  if (mkc_row1_pays(rows)) { /* one row a warp, MKC_MV_ROW1 chunks of it per lane at once */
    float acc1[MKC_T_MAX];
    int step = mkc_grid_warps();
    for (int r = mkc_grid_warp(); r < rows; r += step) {
      if (!mkc_dot_rows_ready(1, norm_w, inv_rms, T, acc1, 1)) {
        mkc_wrow wr = mkc_wmat_row(w, r);
        mkc_wrow next = r + step < rows ? mkc_wmat_row(w, r + step) : mkc_wrow_none_of(w.type);
        mkc_dot_rows(&wr, &next, 1, n_chunks, x, x_stride, norm_w, inv_rms, T, acc1);
      }
      if (mkc_lane() == 0)
        for (int t = 0; t < MKC_T_MAX; t++) {
          if (t >= T) break;
          mkc_put(out + t * out_stride + r, acc1[t], bias, r, accumulate);
        }
    }
    return;
  }
  float acc[MKC_ROWS * MKC_T_MAX];
  if (mkc_split_pays(rows)) {
    int r0, rn, n = mkc_split_task(rows, MKC_ROWS, mkc_bid(), &r0);
    for (int k = mkc_bid(), nn; n > 0; k += mkc_nblocks(), r0 = rn, n = nn) {
      nn = mkc_split_task(rows, MKC_ROWS, k + mkc_nblocks(), &rn);
      mkc_wrow wr[MKC_ROWS], next[MKC_ROWS];
      mkc_row_block(w, r0 + n, r0, wr);
      mkc_row_block(w, rn + nn, rn, next);
      /* the residual's values read before the dot, their round trip beside the weights' where it
       * followed the block's sums (o-proj's and down's: a stage of one task a block) */
      float prior[MKC_PUT_EACH];
      MKC_UNROLL for (int e = 0; e < MKC_PUT_EACH; e++) {
        int i = mkc_tid() + e * MKC_THREADS, r = i / MKC_T_MAX, t = i % MKC_T_MAX;
        prior[e] = accumulate && i < MKC_ROWS * MKC_T_MAX && r < n && t < T
                       ? out[t * out_stride + r0 + r]
                       : 0.0f;
      }
      mkc_split_dot(wr, next, MKC_ROWS, n_chunks, x, x_stride, norm_w, n_x, eps, T, part, acc);
      const float *sums = part + MKC_WARPS * MKC_ROWS * MKC_T_MAX;
      MKC_UNROLL for (int e = 0; e < MKC_PUT_EACH; e++) {
        int i = mkc_tid() + e * MKC_THREADS, r = i / MKC_T_MAX, t = i % MKC_T_MAX;
        if (i >= MKC_ROWS * MKC_T_MAX || r >= n || t >= T) continue;
        mkc_put_onto(out + t * out_stride + r0 + r, prior[e], sums[i], bias, r0 + r, accumulate);
      }
    }
    return;
  }
  int step = mkc_grid_warps() * MKC_ROWS;
  for (int r0 = mkc_grid_warp() * MKC_ROWS; r0 < rows; r0 += step) {
    mkc_dot_row_block(w, rows, r0, step, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    if (mkc_lane() == 0)
      for (int r = 0; r < MKC_ROWS; r++) /* compile-time bounds: acc stays in registers */
        for (int t = 0; t < MKC_T_MAX; t++) {
          if (r0 + r >= rows || t >= T) break;
          mkc_put(out + t * out_stride + r0 + r, acc[r * MKC_T_MAX + t], bias, r0 + r, accumulate);
        }
  }
}

/* SwiGLU MLP input: out[t][r] = silu(gate[r] . in[t]) * (up[r] . in[t]) (mkc_glu: GELU for
 * GeGLU); normed and split as mkc_matvec. */
MKC_DEVICE void mkc_matvec_swiglu(mkc_wmat w_gate, mkc_wmat w_up, int rows, int n_chunks,
                                  const float *x, int x_stride, const mkc_bf16 *norm_w,
                                  float *inv_rms, int n_x, float eps, float *red, float *out,
                                  int out_stride, int T, float *part, float *splitk) {
  int mma = MKC_MMA_DECODE && w_gate.type == MKC_W_BF16 && w_up.type == MKC_W_BF16;
  mkc_norm_first(x, x_stride, norm_w, n_x, eps, T, inv_rms, red, !mma && mkc_split_pays(rows));
#if MKC_MMA_DECODE
  if (mma) {
    mkc_matvec_swiglu_mma(w_gate, w_up, rows, n_chunks, x, x_stride, norm_w, inv_rms, out,
                          out_stride, T, part, splitk);
    return;
  }
#endif
  (void)splitk;
  float acc[2 * MKC_ROWS * MKC_T_MAX]; /* gate rows, then up rows */
  mkc_wrow wr[2 * MKC_ROWS], next[2 * MKC_ROWS];
  if (mkc_split_pays(rows)) {
    int r0, rn, n = mkc_split_task(rows, MKC_ROWS, mkc_bid(), &r0);
    for (int k = mkc_bid(), nn; n > 0; k += mkc_nblocks(), r0 = rn, n = nn) {
      nn = mkc_split_task(rows, MKC_ROWS, k + mkc_nblocks(), &rn);
      mkc_row_block(w_gate, r0 + n, r0, wr);
      mkc_row_block(w_up, r0 + n, r0, wr + MKC_ROWS);
      mkc_row_block(w_gate, rn + nn, rn, next);
      mkc_row_block(w_up, rn + nn, rn, next + MKC_ROWS);
      mkc_split_dot(wr, next, 2 * MKC_ROWS, n_chunks, x, x_stride, norm_w, n_x, eps, T, part, acc);
      const float *sums = part + MKC_WARPS * 2 * MKC_ROWS * MKC_T_MAX;
      for (int i = mkc_tid(); i < MKC_ROWS * MKC_T_MAX; i += MKC_THREADS) {
        int r = i / MKC_T_MAX, t = i % MKC_T_MAX;
        if (r >= n || t >= T) continue;
        float g = sums[i], u = sums[MKC_ROWS * MKC_T_MAX + i];
        out[t * out_stride + r0 + r] = mkc_glu(g, u);
      }
    }
    return;
  }
  int step = mkc_grid_warps() * MKC_ROWS;
  for (int r0 = mkc_grid_warp() * MKC_ROWS; r0 < rows; r0 += step) {
    if (!mkc_dot_rows_ready(2 * MKC_ROWS, norm_w, inv_rms, T, acc, 1)) {
      mkc_row_block(w_gate, rows, r0, wr);
      mkc_row_block(w_up, rows, r0, wr + MKC_ROWS);
      mkc_row_block(w_gate, rows, r0 + step, next);
      mkc_row_block(w_up, rows, r0 + step, next + MKC_ROWS);
      mkc_dot_rows(wr, next, 2 * MKC_ROWS, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    }
    if (mkc_lane() == 0)
      for (int r = 0; r < MKC_ROWS; r++)
        for (int t = 0; t < MKC_T_MAX; t++) {
          if (r0 + r >= rows || t >= T) break;
          float g = acc[r * MKC_T_MAX + t], u = acc[(MKC_ROWS + r) * MKC_T_MAX + t];
          out[t * out_stride + r0 + r] = mkc_glu(g, u);
        }
  }
}
