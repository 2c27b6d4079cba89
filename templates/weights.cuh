/* Weight matrices as the kernel reads them: bf16 rows, or the model file's
 * quantized blocks kept as stored (ggml's layouts; runtime/formats/dequant.c
 * says where every bit lives), decoded 8 elements at a time inside the dot
 * product, so a step streams the file's bytes and never a widened copy. The
 * type is a literal at every call: after inlining, each stage keeps only the
 * decoder of its own matrices, and the kernel compiles only the decoders of
 * the types it uses (codegen defines MKC_W_USES_<TYPE>). */
#define MKC_W_Q4_0 2 /* ggml's type ids */
#define MKC_W_Q4_1 3
#define MKC_W_Q5_0 6
#define MKC_W_Q5_1 7
#define MKC_W_Q8_0 8
#define MKC_W_Q2_K 10
#define MKC_W_Q3_K 11
#define MKC_W_Q4_K 12
#define MKC_W_Q5_K 13
#define MKC_W_Q6_K 14
#define MKC_W_IQ2_XXS 16
#define MKC_W_IQ2_XS 17
#define MKC_W_IQ3_XXS 18
#define MKC_W_IQ1_S 19
#define MKC_W_IQ4_NL 20
#define MKC_W_IQ3_S 21
#define MKC_W_IQ2_S 22
#define MKC_W_IQ4_XS 23
#define MKC_W_IQ1_M 29
#define MKC_W_BF16 30
#define MKC_W_MXFP4 39
#define MKC_W_NVFP4 40
#define MKC_W_TQ1_0 34
#define MKC_W_TQ2_0 35
#define MKC_W_Q1_0 41
#define MKC_W_Q2_0 42

/* A matrix: its first row, the bytes from one row to the next, its type. */
typedef struct mkc_wmat {
  const unsigned char *p;
  int row_bytes, type;
} mkc_wmat;

/* One row of a matrix; p null: no row (dot products with it are 0). */
typedef struct mkc_wrow {
  const unsigned char *p;
  int row_bytes, type;
} mkc_wrow;

MKC_DEVICE mkc_wmat mkc_wmat_of(const mkc_bf16 *p, int row_bytes, int type) {
  mkc_wmat m;
  m.p = (const unsigned char *)p;
  m.row_bytes = row_bytes;
  m.type = type;
  return m;
}

MKC_DEVICE mkc_wrow mkc_wmat_row(mkc_wmat m, int r) {
  mkc_wrow w;
  w.p = m.p + (long)r * m.row_bytes;
  w.row_bytes = m.row_bytes;
  w.type = m.type;
  return w;
}

/* No row, of the given type: a stage's missing rows take its matrix's type, so that every
 * row a decode loop sees has the same literal type and only that decoder is compiled (a
 * bf16 placeholder among Q4_K rows kept the decoded chunk in local memory). */
MKC_DEVICE mkc_wrow mkc_wrow_none_of(int type) {
  mkc_wrow w;
  w.p = 0;
  w.row_bytes = 0;
  w.type = type;
  return w;
}
MKC_DEVICE mkc_wrow mkc_wrow_none(void) { return mkc_wrow_none_of(MKC_W_BF16); }

/* Eight bytes as one little-endian word, masked bytewise after a shift: the
 * nibble (or 2-bit field) each byte holds at that shift, for all 8 at once. */
#define MKC_LOW_NIBBLES 0x0f0f0f0f0f0f0f0full
#define MKC_LOW_PAIRS 0x0303030303030303ull
#define MKC_LOW_BITS 0x0101010101010101ull

/* A little-endian f16 of a block: one load (every block's f16 is 2-byte aligned). */
MKC_DEVICE float mkc_f16_at(const unsigned char *p) {
  return mkc_f16_to_f32((mkc_f16)mkc_load_weight2(p));
}

/* MXFP4's E8M0 scale byte e as the f32 2^(e - 128), half the format's 2^(e - 127): its levels are
 * FP4's doubled, so they stay integers. Below e = 2 the value is subnormal. */
MKC_DEVICE float mkc_e8m0_half(unsigned e) {
  return mkc_bits_f32(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
}

#ifdef MKC_W_USES_NVFP4
/* NVFP4's scale byte e (unsigned E4M3, bit 7 unused) halved as mkc_e8m0_half's: (8 + man) 2^(exp -
 * 11), or man 2^-10 where exp is 0; 0x7f is 0 (ggml's ggml_ue4m3_to_fp32). */
MKC_DEVICE float mkc_ue4m3_half(unsigned e) {
  unsigned exp = e >> 3 & 15u, man = e & 7u;
  float v = exp ? mkc_bits_f32((exp + 119u) << 23 | man << 20) : (float)man * 9.765625e-4f;
  return e == 0x7fu ? 0.0f : v;
}
#endif

#if defined(MKC_W_USES_Q2_0) || defined(MKC_W_USES_Q1_0) || defined(MKC_W_USES_TQ2_0)
/* The 2-bit fields of 16 bits (field i: bits 2i, 2i + 1) as bytes: field i to bit 8i. */
MKC_DEVICE unsigned long long mkc_pairs_x8(unsigned w) {
  unsigned long long x = w & 0xffffu;
  x = (x | x << 24) & 0x000000ff000000ffull; /* fields 4..7 to bit 32 */
  x = (x | x << 12) & 0x000f000f000f000full; /* then 2, 3 of each half up 16 */
  return (x | x << 6) & MKC_LOW_PAIRS;       /* then the odd ones up 8 */
}
#endif

#ifdef MKC_W_USES_TQ1_0
/* Each byte of v times p, mod 256, even and odd bytes apart in 16-bit lanes (no carry between). */
MKC_DEVICE unsigned long long mkc_bytes_times(unsigned long long v, unsigned p) {
  const unsigned long long m = 0x00ff00ff00ff00ffull;
  return ((v & m) * p & m) | ((v >> 8 & m) * p & m) << 8;
}
/* Trit n (0: the top one) of each byte of v, a TQ1_0 byte of 5 (dequant.c's tq1_trit): times 3^n
 * brings it to the top, times 3 over 256 reads it. */
MKC_DEVICE unsigned long long mkc_trits_x8(unsigned long long v, int n) {
  const unsigned long long m = 0x00ff00ff00ff00ffull;
  unsigned p = n == 0 ? 1u : n == 1 ? 3u : n == 2 ? 9u : n == 3 ? 27u : 81u;
  unsigned long long t = mkc_bytes_times(v, p);
  return ((t & m) * 3u >> 8 & m) | ((t >> 8 & m) * 3u >> 8 & m) << 8;
}
#endif

#if defined(MKC_W_USES_IQ2_XXS) || defined(MKC_W_USES_IQ2_XS) || defined(MKC_W_USES_IQ2_S) ||      \
    defined(MKC_W_USES_IQ3_XXS) || defined(MKC_W_USES_IQ3_S)
#define MKC_W_USES_IQ_SIGNS 1 /* the grid types with a sign per value (mkc_iq_codes) */
#endif

#if defined(MKC_W_USES_Q5_0) || defined(MKC_W_USES_Q5_1) || defined(MKC_W_USES_IQ_SIGNS) ||        \
    defined(MKC_W_USES_Q1_0)
/* Bit k of b as bit 0 of byte k: the fifth bits of a chunk's 8 codes, its signs, or Q1_0's bits. */
MKC_DEVICE unsigned long long mkc_spread8(unsigned b) {
  /* byte k keeps bit k of b (0 or 2^k); adding 0x7f carries it to bit 7, never into byte k + 1 */
  unsigned long long x =
      (unsigned long long)(b & 255u) * 0x0101010101010101ull & 0x8040201008040201ull;
  return (x + 0x7f7f7f7f7f7f7f7full) >> 7 & MKC_LOW_BITS;
}
#endif

#ifdef MKC_W_USES_IQ_SIGNS
/* A group's 8 grid values (bytes, each 1..62) negated where bit j of signs is set, as codes:
 * each signed value plus 128 (~v + 1 = 256 - v carries into no other byte; flipping bit 7 of an
 * int8 byte adds 128 to it). */
MKC_DEVICE unsigned long long mkc_iq_codes(unsigned long long v, unsigned signs) {
  unsigned long long neg = mkc_spread8(signs);
  return ((v ^ neg * 255u) + neg) ^ 0x8080808080808080ull;
}
/* The signs of a 7-bit index (IQ2_XXS, IQ2_XS, IQ3_XXS): bit 7 makes the count even. */
MKC_DEVICE unsigned mkc_iq_sign_byte(unsigned i) { return i | (unsigned)(mkc_popc(i) & 1) << 7; }
#endif

#if defined(MKC_W_USES_IQ4_NL) || defined(MKC_W_USES_IQ4_XS) || defined(MKC_W_USES_MXFP4) ||       \
    defined(MKC_W_USES_NVFP4)
/* A table of 16 signed byte levels, looked up 4 at a time: q holds 4 indices (0..15) in its
 * bytes; levels 0..7 are the bytes of the words lo[0], lo[1], levels 8..15 those of hi[0], hi[1].
 */
MKC_DEVICE unsigned mkc_levels_x4(unsigned q, const unsigned *lo, const unsigned *hi) {
  unsigned sel = (q & 0x7u) | (q >> 4 & 0x70u) | (q >> 8 & 0x700u) | (q >> 12 & 0x7000u);
  unsigned l = mkc_byte_perm(lo[0], lo[1], sel), h = mkc_byte_perm(hi[0], hi[1], sel);
  unsigned high = (q >> 3 & 0x01010101u) * 255u; /* the bytes whose index is >= 8 */
  return (l & ~high) | (h & high);
}
/* IQ4_NL's 16 levels (ggml's kvalues_iq4nl: -127, -104, ..., 89, 113) and MXFP4's
 * (kvalues_mxfp4: 0, 1, 2, 3, 4, 6, 8, 12 and their negatives) as four words, level i in byte
 * i % 4 of word i / 4. */
#define MKC_IQ4_NL_LEVELS 0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u
#define MKC_FP4_LEVELS 0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu
/* The 8 levels of the nibbles in q's bytes, as floats: IQ4_NL's, or with fp4 MXFP4's. */
MKC_DEVICE void mkc_levels_chunk(unsigned long long q, int fp4, float *f) {
  const unsigned iq4[4] = {MKC_IQ4_NL_LEVELS}, fp4s[4] = {MKC_FP4_LEVELS};
  const unsigned *lo = fp4 ? fp4s : iq4, *hi = lo + 2;
  unsigned long long v = (unsigned long long)mkc_levels_x4((unsigned)(q >> 32), lo, hi) << 32 |
                         mkc_levels_x4((unsigned)q, lo, hi);
  mkc_s8x8_to_f32(v, f);
}
#endif

#ifdef MKC_W_USES_MXFP4
/* 8 bytes from any address: 2-byte loads where it is even, else a byte, three 2-byte loads and a
 * byte (MXFP4's 17-byte blocks put every other block's nibbles at an odd address). */
MKC_DEVICE unsigned long long mkc_load_weight8_a1(const unsigned char *b) {
  if (((unsigned long long)b & 1u) == 0) return mkc_load_weight8_a2(b);
  return (unsigned long long)mkc_load_weight1(b) |
         (unsigned long long)mkc_load_weight2(b + 1) << 8 |
         (unsigned long long)mkc_load_weight2(b + 3) << 24 |
         (unsigned long long)mkc_load_weight2(b + 5) << 40 |
         (unsigned long long)mkc_load_weight1(b + 7) << 56;
}
#endif

#if defined(MKC_W_USES_Q4_K) || defined(MKC_W_USES_Q5_K)
/* Sub-block j's step d * scale and offset -dmin * min (dm[0], dm[1]) from a K block's header
 * h (f16 d | dmin << 16, then 12 bytes of 6-bit scales and mins: j < 4 the
 * low 6 bits of bytes j and j + 4; j >= 4 the nibbles of byte j + 4 below the
 * top 2 bits of bytes j - 4 and j). Q4_K and Q5_K share it. Both cases are
 * computed, scale in the low half-word and min in the high one, and one is
 * picked: j is the lane's (its chunks are c % 32 = lane), so a branch on it
 * split every warp in two. */
MKC_DEVICE void mkc_k_scale_min(mkc_u4 h, int j, float *dm) {
  unsigned k = (unsigned)j & 3u;
  /* s[k] | s[k + 4] << 16, and s[k + 8] in both halves (other bytes masked off below) */
  unsigned ab = mkc_byte_perm(h.y, h.z, k | (k + 4u) << 8), c = mkc_byte_perm(h.w, h.w, k * 0x101u);
  unsigned low = ab & 0x003f003fu;                                                /* j < 4 */
  unsigned high = (c & 0x0fu) | (c >> 4 & 0x000f0000u) | (ab >> 2 & 0x00300030u); /* j >= 4 */
  float sm[8];
  mkc_u8x8_to_f32(j < 4 ? low : high, sm); /* scale in sm[0], min in sm[2] */
  dm[0] = mkc_f16_to_f32((mkc_f16)(h.x & 0xffffu)) * sm[0];
  dm[1] = -(mkc_f16_to_f32((mkc_f16)(h.x >> 16)) * sm[2]);
}
#endif

#if defined(MKC_W_USES_IQ_SIGNS) || defined(MKC_W_USES_IQ1_S) || defined(MKC_W_USES_IQ1_M)
/* Chunk c (c % 32 = cl) of a grid type's row (templates/iq_grids.cuh): one entry of 8 values
 * (IQ2) or two of 4 (IQ3), signed, times its sub-block's step. Returned as 8 byte codes, the
 * weights *d * (code - *off): IQ2's and IQ3's signed values plus 128 (*off 128, exact). Their
 * blocks are 2-byte aligned (IQ1_M's 8-byte): halfword loads. mkc_wchunk_q's chunks and the cpu
 * backend's pieces (templates/matvec.cuh) both decode here. */
MKC_DEVICE_INLINE unsigned long long mkc_wgrid(int type, const unsigned char *row, int c, int cl,
                                               float *d, float *off) {
  (void)row;
  (void)c;
  (void)cl;
  *off = 128.0f;
  switch (type) {
#ifdef MKC_W_USES_IQ2_XXS
  case MKC_W_IQ2_XXS: { /* 66 per 256: f16 d, per 32 4 grid bytes, then 4 sign indices, a scale */
    const unsigned char *b = row + (c >> 5) * 66, *sub = b + 2 + (cl >> 2) * 8;
    unsigned aux = mkc_load_weight2(sub + 4) | mkc_load_weight2(sub + 6) << 16;
    unsigned index = mkc_load_weight2(sub + (cl & 2)) >> 8 * (cl & 1) & 255u;
    *d = mkc_f16_at(b) * (0.5f + (float)(aux >> 28)) * 0.25f;
    return mkc_iq_codes(mkc_iq2xxs_grid[index], mkc_iq_sign_byte(aux >> 7 * (cl & 3) & 127u));
  }
#endif
#ifdef MKC_W_USES_IQ2_XS
  case MKC_W_IQ2_XS: { /* 74 per 256: f16 d, a u16 per 8 (9-bit index, 7-bit signs), scales */
    const unsigned char *b = row + (c >> 5) * 74;
    unsigned v = mkc_load_weight2(b + 2 + 2 * cl);
    unsigned sc = mkc_load_weight2(b + 66 + (cl >> 2 & ~1)) >> 4 * (cl >> 1 & 3) & 15u; /* per 16 */
    *d = mkc_f16_at(b) * (0.5f + (float)sc) * 0.25f;
    return mkc_iq_codes(mkc_iq2xs_grid[v & 511u], mkc_iq_sign_byte(v >> 9));
  }
#endif
#ifdef MKC_W_USES_IQ2_S
  case MKC_W_IQ2_S: { /* 82 per 256: f16 d, index bytes, sign bytes, index top bits, scales */
    const unsigned char *b = row + (c >> 5) * 82;
    unsigned low = mkc_load_weight2(b + 2 + (cl & ~1)) >> 8 * (cl & 1) & 255u;
    unsigned signs = mkc_load_weight2(b + 34 + (cl & ~1)) >> 8 * (cl & 1) & 255u;
    unsigned top =
        mkc_load_weight2(b + 66 + (cl >> 2 & ~1)) >> (8 * (cl >> 2 & 1) + 2 * (cl & 3)) & 3u;
    unsigned sc = mkc_load_weight2(b + 74 + (cl >> 2 & ~1)) >> 4 * (cl >> 1 & 3) & 15u; /* per 16 */
    *d = mkc_f16_at(b) * (0.5f + (float)sc) * 0.25f;
    return mkc_iq_codes(mkc_iq2s_grid[low | top << 8], signs);
  }
#endif
#ifdef MKC_W_USES_IQ3_XXS
  case MKC_W_IQ3_XXS: { /* 98 per 256: f16 d, 64 index bytes, per 32 4 sign indices and a scale */
    const unsigned char *b = row + (c >> 5) * 98;
    unsigned index = mkc_load_weight2(b + 2 + 2 * cl);
    unsigned aux =
        mkc_load_weight2(b + 66 + 4 * (cl >> 2)) | mkc_load_weight2(b + 68 + 4 * (cl >> 2)) << 16;
    *d = mkc_f16_at(b) * (0.5f + (float)(aux >> 28)) * 0.5f;
    unsigned long long v =
        mkc_iq3xxs_grid[index & 255u] | (unsigned long long)mkc_iq3xxs_grid[index >> 8] << 32;
    return mkc_iq_codes(v, mkc_iq_sign_byte(aux >> 7 * (cl & 3) & 127u));
  }
#endif
#ifdef MKC_W_USES_IQ3_S
  case MKC_W_IQ3_S: { /* 110 per 256: f16 d, index bytes, their ninth bits, sign bytes, scales */
    const unsigned char *b = row + (c >> 5) * 110;
    unsigned index = mkc_load_weight2(b + 2 + 2 * cl);
    unsigned ninth =
        mkc_load_weight2(b + 66 + (cl >> 2 & ~1)) >> (8 * (cl >> 2 & 1) + 2 * (cl & 3));
    unsigned signs = mkc_load_weight2(b + 74 + (cl & ~1)) >> 8 * (cl & 1) & 255u;
    unsigned sc =
        mkc_load_weight2(b + 106 + (cl >> 3 & ~1)) >> 4 * (cl >> 2 & 3) & 15u; /* per 32 */
    *d = mkc_f16_at(b) * (float)(1 + 2 * (int)sc);
    unsigned long long v = mkc_iq3s_grid[(index & 255u) | (ninth & 1u) << 8] |
                           (unsigned long long)mkc_iq3s_grid[index >> 8 | (ninth & 2u) << 7] << 32;
    return mkc_iq_codes(v, signs);
  }
#endif
  /* IQ1: the grid's -1, 0, 1 are kept as 0, 1, 2 (u), and the weights are d (2 scale + 1)
   * (u - 1 +- 1/8): codes 8 u less an offset of 7 or 9, the step d (2 scale + 1) / 8 */
#ifdef MKC_W_USES_IQ1_S
  case MKC_W_IQ1_S: { /* 50 per 256: f16 d, index bytes, per 32 a u16 (index bits, scale, sign) */
    const unsigned char *b = row + (c >> 5) * 50;
    unsigned low = mkc_load_weight2(b + 2 + (cl & ~1)) >> 8 * (cl & 1) & 255u;
    unsigned h = mkc_load_weight2(b + 34 + 2 * (cl >> 2));
    *d = mkc_f16_at(b) * (float)(2 * (int)(h >> 12 & 7u) + 1) * 0.125f;
    *off = h & 0x8000u ? 9.0f : 7.0f;
    return mkc_iq1s_grid[low | (h >> 3 * (cl & 3) & 7u) << 8] << 3;
  }
#endif
#ifdef MKC_W_USES_IQ1_M
  case MKC_W_IQ1_M: { /* 56 per 256: index bytes, a nibble per 8 (index bits, sign), scales */
    const unsigned char *b = row + (c >> 5) * 56; /* 56 = 7 x 8: the scale words one load */
    unsigned low = mkc_load_weight2(b + (cl & ~1)) >> 8 * (cl & 1) & 255u;
    unsigned h = mkc_load_weight2(b + 32 + (cl >> 1 & ~1)) >> 4 * (cl & 3) & 15u;
    unsigned long long s = mkc_load_weight8(b + 48); /* 3-bit scales per 16; d's nibbles on top */
    unsigned dh = (unsigned)(s >> 12 & 0xfu) | (unsigned)(s >> 24 & 0xf0u) |
                  (unsigned)(s >> 36 & 0xf00u) | (unsigned)(s >> 48 & 0xf000u);
    unsigned sc = (unsigned)(s >> (16 * (cl >> 3) + 3 * (cl >> 1 & 3))) & 7u;
    *d = mkc_f16_to_f32((mkc_f16)dh) * (float)(2 * (int)sc + 1) * 0.125f;
    *off = h & 8u ? 9.0f : 7.0f;
    return mkc_iq1s_grid[low | (h & 7u) << 8] << 3;
  }
#endif
  default:
    break; /* unreachable: codegen plans only the types above */
  }
  *d = 0.0f;
  return 0;
}
#endif

/* Chunk c (elements 8c .. 8c + 7) of a row of a block type as its codes: the
 * weights are d * q[i] + m where the type has a min (returns 1; dm = {d, m}),
 * else d * q[i] (returns 0; dm = {d, 0}). q holds whole numbers, exact, with
 * the format's offset taken off (Q4_0's q - 8). cl = c % 32: where the chunk
 * sits in its block (every type's chunks per block divide 32). A lane's chunks
 * all have its own cl (it takes c = lane, lane + 32, ...), so given as the
 * lane, the offsets inside a block are worked out once per stage, not once per
 * chunk and row. */
MKC_DEVICE int mkc_wchunk_q(int type, const unsigned char *row, int c, int cl, float *q,
                            float *dm) {
  (void)row; /* unused in a kernel whose matrices are all bf16 */
  (void)c;
  (void)cl;
  (void)q;
  dm[1] = 0.0f;
  switch (type) {
#ifdef MKC_W_USES_Q8_0
  case MKC_W_Q8_0: { /* 34 bytes per 32: f16 d, int8 q[32]; x = d * q */
    const unsigned char *b = row + (c >> 2) * 34;
    float d = mkc_f16_at(b);
    mkc_s8x8_to_f32(mkc_load_weight8_a2(b + 2 + (cl & 3) * 8), q);
    dm[0] = d;
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q4_0
  case MKC_W_Q4_0: { /* 18 per 32: f16 d, element i < 16 in byte i's low nibble, i + 16 high */
    const unsigned char *b = row + (c >> 2) * 18;
    float d = mkc_f16_at(b);
    mkc_u8x8_minus_f32(mkc_load_weight8_a2(b + 2 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES,
                       8.0f, q);
    dm[0] = d;
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q4_1
  case MKC_W_Q4_1: { /* 20 per 32: f16 d, f16 m, nibbles as Q4_0; x = d * q + m */
    /* 20-byte blocks are 4-aligned: d and m one load, the nibbles two */
    const unsigned char *b = row + (c >> 2) * 20;
    unsigned h = mkc_load_weight4(b);
    dm[0] = mkc_f16_to_f32((mkc_f16)(h & 0xffffu));
    dm[1] = mkc_f16_to_f32((mkc_f16)(h >> 16));
    mkc_u8x8_to_f32(mkc_load_weight8_a4(b + 4 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES, q);
    return 1;
  }
#endif
#ifdef MKC_W_USES_Q5_0
  case MKC_W_Q5_0: { /* 22 per 32: f16 d, 4 bytes of fifth bits (bit i: element i), nibbles as
                      * Q4_0's; x = d * (q - 16). Blocks are only 2-aligned */
    const unsigned char *b = row + (c >> 2) * 22;
    float d = mkc_f16_at(b);
    unsigned fifth = (unsigned)mkc_load_weight2(b + 2 + (cl & 2)) >> (cl & 1) * 8; /* byte cl & 3 */
    unsigned long long lo =
        mkc_load_weight8_a2(b + 6 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES;
    mkc_u8x8_minus_f32(lo | mkc_spread8(fifth) << 4, 16.0f, q);
    dm[0] = d;
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q5_1
  case MKC_W_Q5_1: { /* 24 per 32: f16 d, f16 m, fifth bits, nibbles; x = d * q + m. 8-aligned */
    const unsigned char *b = row + (c >> 2) * 24;
    unsigned h = mkc_load_weight4(b), fifth = mkc_load_weight4(b + 4) >> (cl & 3) * 8;
    dm[0] = mkc_f16_to_f32((mkc_f16)(h & 0xffffu));
    dm[1] = mkc_f16_to_f32((mkc_f16)(h >> 16));
    unsigned long long lo =
        mkc_load_weight8(b + 8 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES;
    mkc_u8x8_to_f32(lo | mkc_spread8(fifth) << 4, q);
    return 1;
  }
#endif
#ifdef MKC_W_USES_IQ4_NL
  case MKC_W_IQ4_NL: { /* 18 per 32: f16 d, nibbles as Q4_0's indexing 16 levels; x = d * level */
    const unsigned char *b = row + (c >> 2) * 18;
    mkc_levels_chunk(mkc_load_weight8_a2(b + 2 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES, 0,
                     q);
    dm[0] = mkc_f16_at(b);
    return 0;
  }
#endif
#ifdef MKC_W_USES_MXFP4
  case MKC_W_MXFP4: { /* 17 per 32 (gpt-oss's experts): an E8M0 scale byte e, nibbles as Q4_0's
                       * indexing FP4's levels doubled; x = 2^(e - 128) * level. Byte-aligned */
    const unsigned char *b = row + (c >> 2) * 17;
    mkc_levels_chunk(mkc_load_weight8_a1(b + 1 + (cl & 1) * 8) >> (cl & 2) * 2 & MKC_LOW_NIBBLES, 1,
                     q);
    dm[0] = mkc_e8m0_half(mkc_load_weight1(b));
    return 0;
  }
#endif
#ifdef MKC_W_USES_NVFP4
  case MKC_W_NVFP4: { /* 36 per 64: 4 UE4M3 scale bytes (one per 16), then per 16 8 bytes of
                       * nibbles (low: elements 0..7, high: 8..15) indexing MXFP4's levels.
                       * 4-aligned */
    const unsigned char *b = row + (c >> 3) * 36;
    int s = (cl & 7) >> 1;
    mkc_levels_chunk(mkc_load_weight8_a4(b + 4 + 8 * s) >> (cl & 1) * 4 & MKC_LOW_NIBBLES, 1, q);
    dm[0] = mkc_ue4m3_half(mkc_load_weight1(b + s));
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q1_0
  case MKC_W_Q1_0: { /* 18 per 128: f16 d, a bit per element (bit i % 8 of byte i / 8); x = d * (2
                      * bit - 1), exactly the reference's bit ? d : -d */
    const unsigned char *b = row + (c >> 4) * 18;
    unsigned bits = mkc_load_weight2(b + 2 + (cl & 14)) >> 8 * (cl & 1) & 255u;
    mkc_u8x8_minus_f32(mkc_spread8(bits) << 1, 1.0f, q);
    dm[0] = mkc_f16_at(b);
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q2_0
  case MKC_W_Q2_0: { /* 18 per 64: f16 d, 2 bits per element (bits 2 (i % 4) of byte i / 4); x = d
                      * * (code - 1) */
    const unsigned char *b = row + (c >> 3) * 18;
    mkc_u8x8_minus_f32(mkc_pairs_x8(mkc_load_weight2(b + 2 + 2 * (cl & 7))), 1.0f, q);
    dm[0] = mkc_f16_at(b);
    return 0;
  }
#endif
#ifdef MKC_W_USES_TQ2_0
  case MKC_W_TQ2_0: { /* 66 per 256: codes as Q2_K's pairs (element 128 n + 32 l + m: bits 2 l of
                       * byte 32 n + m), f16 d at 64; x = d * (code - 1). 2-aligned */
    const unsigned char *b = row + (c >> 5) * 66;
    int e = cl * 8, n = e >> 7, l = (e >> 5) & 3, m = e & 31;
    mkc_u8x8_minus_f32(mkc_load_weight8_a2(b + 32 * n + m) >> 2 * l & MKC_LOW_PAIRS, 1.0f, q);
    dm[0] = mkc_f16_at(b + 64);
    return 0;
  }
#endif
#ifdef MKC_W_USES_TQ1_0
  case MKC_W_TQ1_0: { /* 54 per 256: bytes of 5 trits (0..31: elements 32 n + m; 32..47: 160 + 16 n
                       * + m), 4 of 4 trits (48 + j: 240 + 4 n + j), f16 d at 52; x = d * (trit -
                       * 1). Chunks 30 and 31 read trits 2 (cl - 30) and the next of bytes 48..51:
                       * the next is trit n of the bytes times 3. 2-aligned */
    const unsigned char *b = row + (c >> 5) * 54;
    int off = cl < 20 ? 8 * (cl & 3) : cl < 30 ? 32 + 8 * (cl & 1) : 46;
    int n = cl < 20 ? cl >> 2 : cl < 30 ? (cl - 20) >> 1 : 2 * (cl - 30);
    unsigned long long v = mkc_load_weight8_a2(b + off);
    if (cl >= 30) { /* bytes 46..53: the 4 bytes of 4 at 2..5 */
      unsigned long long h = v >> 16 & 0xffffffffull;
      v = h | mkc_bytes_times(h, 3u) << 32;
    }
    mkc_u8x8_minus_f32(mkc_trits_x8(v, n), 1.0f, q);
    dm[0] = mkc_f16_at(b + 52);
    return 0;
  }
#endif
#ifdef MKC_W_USES_IQ4_XS
  case MKC_W_IQ4_XS: { /* 136 per 256: f16 d, 2 high and 4 low bits of 8 scales, nibbles per 32 */
    /* sub-block j's scale: nibble j % 2 of byte 4 + j / 2, then bits 2j of the u16 at 2; x = d *
     * (scale - 32) * level, the 32 levels' nibbles as IQ4_NL's at 8 + 16 j. 8-aligned */
    const unsigned char *b = row + (c >> 5) * 136;
    unsigned dh = mkc_load_weight4(b), sl = mkc_load_weight4(b + 4);
    int j = cl >> 2, k = cl & 3; /* sub-block, and the chunk in it */
    int scale = (int)((sl >> 4 * j & 15u) | (dh >> 16 >> 2 * j & 3u) << 4);
    dm[0] = mkc_f16_to_f32((mkc_f16)(dh & 0xffffu)) * (float)(scale - 32);
    mkc_levels_chunk(
        mkc_load_weight8(b + 8 + 16 * j + (k & 1) * 8) >> (k & 2) * 2 & MKC_LOW_NIBBLES, 0, q);
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q2_K
  case MKC_W_Q2_K: { /* 84 per 256: 4-bit scale | min << 4 per 16, pairs, f16 d, dmin; 4-aligned */
    /* element 128 n + 32 j + l: bits 2j of pairs byte 32 n + l; sub-block 8 n + 2 j + l / 16 */
    const unsigned char *b = row + (c >> 5) * 84;
    int e = cl * 8, n = e >> 7, j = (e >> 5) & 3, l = e & 31, s = 8 * n + 2 * j + (l >> 4);
    unsigned h = mkc_load_weight4(b + 80), sm = mkc_load_weight4(b + (s & ~3)) >> 8 * (s & 3);
    dm[0] = mkc_f16_to_f32((mkc_f16)(h & 0xffffu)) * (float)(sm & 15u);
    dm[1] = -(mkc_f16_to_f32((mkc_f16)(h >> 16)) * (float)(sm >> 4 & 15u));
    mkc_u8x8_to_f32(mkc_load_weight8_a4(b + 16 + 32 * n + l) >> 2 * j & MKC_LOW_PAIRS, q);
    return 1;
  }
#endif
#ifdef MKC_W_USES_Q3_K
  case MKC_W_Q3_K: { /* 110 per 256: third bits, pairs, 6-bit scales, f16 d; 2-aligned */
    /* as Q2_K's pairs; the third bit is bit 4 n + j of byte l; scale s: the low 4 bits a
     * nibble of byte s % 8 (the high one for s >= 8), the top 2 bits 2 (s / 4) of byte 8 + s % 4 */
    const unsigned char *b = row + (c >> 5) * 110;
    int e = cl * 8, n = e >> 7, j = (e >> 5) & 3, l = e & 31, s = 8 * n + 2 * j + (l >> 4);
    unsigned lo = mkc_load_weight2(b + 96 + (s & 6)) >> 8 * (s & 1) >> 4 * (s >> 3) & 15u;
    unsigned hi = mkc_load_weight2(b + 104 + (s & 2)) >> 8 * (s & 1) >> 2 * (s >> 2) & 3u;
    dm[0] = mkc_f16_at(b + 108) * (float)((int)(lo | hi << 4) - 32);
    unsigned long long pairs = mkc_load_weight8_a2(b + 32 + 32 * n + l) >> 2 * j & MKC_LOW_PAIRS;
    unsigned long long third = mkc_load_weight8_a2(b + l) >> (4 * n + j) & MKC_LOW_BITS;
    mkc_u8x8_minus_f32(pairs | third << 2, 4.0f, q);
    return 0;
  }
#endif
#ifdef MKC_W_USES_Q4_K
  case MKC_W_Q4_K: { /* 144 per 256: f16 d, dmin, 6-bit scales and mins of 8 sub-blocks, nibbles */
    /* Blocks are 16-byte aligned (144 = 9 x 16; rows start 256-aligned in the arena), so the
     * header is one 16-byte load (a warp's lanes share it: one transaction) and the nibbles
     * one 8-byte load: two loads per chunk, not eleven byte and halfword loads, which held
     * the H100 to 4.5 % of its bandwidth (docs/PERF.md, 2026-11-27) */
    const unsigned char *b = row + (c >> 5) * 144;
    int e = cl * 8, j = e >> 5, l = e & 31;
    mkc_k_scale_min(mkc_load_weight_u4(b), j, dm);
    /* sub-blocks 2k, 2k + 1 share 32 bytes: low nibbles, then high */
    mkc_u8x8_to_f32(mkc_load_weight8(b + 16 + (j >> 1) * 32 + l) >> (j & 1) * 4 & MKC_LOW_NIBBLES,
                    q);
    return 1;
  }
#endif
#ifdef MKC_W_USES_Q5_K
  case MKC_W_Q5_K: { /* 176 per 256: Q4_K's 16-byte header, 32 bytes of fifth bits, nibbles */
    const unsigned char *b = row + (c >> 5) * 176; /* 11 x 16: 16-aligned as Q4_K's */
    int e = cl * 8, j = e >> 5, l = e & 31;
    mkc_k_scale_min(mkc_load_weight_u4(b), j, dm);
    /* element 32j + l: the nibble of qs byte (j / 2) 32 + l, plus bit j of qh byte l as 16 */
    unsigned long long lo =
        mkc_load_weight8(b + 48 + (j >> 1) * 32 + l) >> (j & 1) * 4 & MKC_LOW_NIBBLES;
    unsigned long long hi = mkc_load_weight8(b + 16 + l) >> j & MKC_LOW_BITS;
    mkc_u8x8_to_f32(lo | hi << 4, q);
    return 1;
  }
#endif
  /* the grid types: each case calls mkc_wgrid with its type as a literal, so that its switch
   * folds away wherever this one is taken with a type known only at run time */
#define MKC_WGRID_CASE(TYPE)                                                                       \
  case TYPE: {                                                                                     \
    float off;                                                                                     \
    unsigned long long v = mkc_wgrid(TYPE, row, c, cl, dm, &off);                                  \
    mkc_u8x8_minus_f32(v, off, q);                                                                 \
    return 0;                                                                                      \
  }
#ifdef MKC_W_USES_IQ2_XXS
    MKC_WGRID_CASE(MKC_W_IQ2_XXS)
#endif
#ifdef MKC_W_USES_IQ2_XS
    MKC_WGRID_CASE(MKC_W_IQ2_XS)
#endif
#ifdef MKC_W_USES_IQ2_S
    MKC_WGRID_CASE(MKC_W_IQ2_S)
#endif
#ifdef MKC_W_USES_IQ3_XXS
    MKC_WGRID_CASE(MKC_W_IQ3_XXS)
#endif
#ifdef MKC_W_USES_IQ3_S
    MKC_WGRID_CASE(MKC_W_IQ3_S)
#endif
#ifdef MKC_W_USES_IQ1_S
    MKC_WGRID_CASE(MKC_W_IQ1_S)
#endif
#ifdef MKC_W_USES_IQ1_M
    MKC_WGRID_CASE(MKC_W_IQ1_M)
#endif
#ifdef MKC_W_USES_Q6_K
  case MKC_W_Q6_K: { /* 210 per 256: low nibbles, high bit pairs, int8 scales per 16, f16 d */
    const unsigned char *b = row + (c >> 5) * 210;
    int e = cl * 8, half = e >> 7, k = (e >> 5) & 3, l = e & 31;
    unsigned long long ql = mkc_load_weight8_a2(b + half * 64 + (k & 1) * 32 + l) >> (k >> 1) * 4;
    unsigned long long qh = mkc_load_weight8_a2(b + 128 + half * 32 + l) >> 2 * k;
    unsigned sc = mkc_load_weight2(b + 192 + (e >> 4 & ~1)) >> 8 * (e >> 4 & 1); /* byte e / 16 */
    dm[0] = mkc_f16_at(b + 208) * (float)(signed char)sc;
    mkc_u8x8_minus_f32((ql & MKC_LOW_NIBBLES) | (qh & MKC_LOW_PAIRS) << 4, 32.0f, q);
    return 0;
  }
#endif
  default:
    break; /* unreachable: codegen plans only the types above */
  }
  for (int i = 0; i < 8; i++) q[i] = 0.0f;
  dm[0] = 0.0f;
  return 0;
}

/* The weights of a chunk from its codes, by each format's formula in the
 * reference's order (in place: f may be q). */
MKC_DEVICE void mkc_wscale(const float *q, const float *dm, int has_min, float *f) {
  if (has_min)
    for (int i = 0; i < 8; i++) f[i] = dm[0] * q[i] + dm[1];
  else
    for (int i = 0; i < 8; i++) f[i] = dm[0] * q[i];
}

/* The 8 weights of chunk c (c % 32 = cl) of a row. */
MKC_DEVICE void mkc_wchunk_at(int type, const unsigned char *row, int c, int cl, float *f) {
  float dm[2];
  mkc_wscale(f, dm, mkc_wchunk_q(type, row, c, cl, f, dm), f);
}

/* Chunk c of a row, wherever it sits. */
MKC_DEVICE void mkc_wchunk(int type, const unsigned char *row, int c, float *f) {
  mkc_wchunk_at(type, row, c, c & 31, f);
}

/* A chunk's codes q (weights d * q[i] + m, mkc_wchunk_q) into a lane's
 * running dot product with the scale outside the sum: d * sum(q x), plus m *
 * sx for the types with a min (sx: the chunk's 8 inputs summed, once for all
 * rows). The GPU's matvec (MKC_DOT_CODES): 10 instructions a row where scaling
 * each weight first took 8 more. The CPU's warp path forms each weight as the
 * reference does instead, so its sums differ from the GPU's in the last bits;
 * test_dot_warp runs this path on the CPU against dequant.c, in double. */
MKC_DEVICE float mkc_dot8_codes(const float *q, mkc_f4 a, mkc_f4 b) {
  float s0 = fmaf(q[3], a.w, fmaf(q[2], a.z, fmaf(q[1], a.y, q[0] * a.x)));
  float s1 = fmaf(q[7], b.w, fmaf(q[6], b.z, fmaf(q[5], b.y, q[4] * b.x)));
  return s0 + s1;
}
MKC_DEVICE mkc_dot_acc mkc_dot8_q(mkc_dot_acc acc, const float *q, float d, mkc_f4 a, mkc_f4 b) {
  return mkc_dot_acc_fma(acc, d, mkc_dot8_codes(q, a, b));
}
MKC_DEVICE mkc_dot_acc mkc_dot8_qm(mkc_dot_acc acc, const float *q, float d, float m, mkc_f4 a,
                                   mkc_f4 b, float sx) {
  return mkc_dot_acc_fma(mkc_dot_acc_fma(acc, d, mkc_dot8_codes(q, a, b)), m, sx);
}
