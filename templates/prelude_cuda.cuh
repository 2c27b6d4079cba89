/* Device prelude for NVRTC: the only CUDA features templates may use.
 * templates/prelude_cpu.h provides the same names for the SIMT emulator, so
 * one emitted source serves both backends. No CUDA headers are included. */
#ifndef MKC_MIN_BLOCKS /* blocks per SM the kernel's registers must allow (codegen sets it) */
#define MKC_MIN_BLOCKS 1
#endif
#define MKC_KERNEL extern "C" __global__ void __launch_bounds__(MKC_THREADS, MKC_MIN_BLOCKS)
#define MKC_DEVICE static __device__ __forceinline__
/* A function the CPU backend calls rather than inlines (templates/prelude_cpu.h).
 * Here it is inlined too: a call takes every register, so what the step keeps
 * across it (the layer, the round, its offsets) was spilled (docs/DECISIONS.md). */
#define MKC_DEVICE_CALLED static __device__ __forceinline__
#define MKC_DEVICE_INLINE static __device__ __forceinline__
/* read-only data of the kernel (the layer loop's tables): the constant cache */
#define MKC_CONSTANT __constant__
/* a lookup table whose lanes read different entries (the IQ grids): global memory through L1;
 * the constant cache would serialize a warp's distinct addresses */
#define MKC_TABLE static __device__ const
/* a loop unrolled whole: register arrays indexed by its counter stay in registers */
#define MKC_UNROLL _Pragma("unroll")

typedef unsigned short mkc_bf16;
typedef unsigned short mkc_f16;
typedef struct {
  unsigned x, y, z, w;
} mkc_u4;
typedef struct {
  float x, y, z, w;
} mkc_f4;

/* The thread's coordinates, read where they are used: volatile, so the
 * compiler neither hoists them nor what is computed from them out of the
 * layer loop. Hoisted, those values were live across the tiled functions'
 * calls, which take every register, and were spilled (docs/DECISIONS.md). */
MKC_DEVICE int mkc_tid(void) {
  int r;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(r));
  return r;
}
MKC_DEVICE int mkc_bid(void) {
  int r;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(r));
  return r;
}
MKC_DEVICE int mkc_nblocks(void) {
  int r;
  asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(r));
  return r;
}
/* The weights' base, read anew each round of mkc_step: volatile, so the
 * compiler cannot hoist what is computed from it out of the round loop. An
 * unrolled stage's matrix is the weights plus a literal offset, a value of the
 * kernel's constants alone: hoisted, each was held through the whole step,
 * and a kernel of several block types spilled them (docs/DECISIONS.md). */
MKC_DEVICE const mkc_bf16 *mkc_opaque_weights(const mkc_bf16 *w) {
  asm volatile("mov.b64 %0, %0;" : "+l"(w));
  return w;
}
MKC_DEVICE char *mkc_smem(void) {
  extern __shared__ __align__(16) char mkc_smem_base[];
  return mkc_smem_base;
}

MKC_DEVICE void mkc_sync_block(void) { __syncthreads(); }
MKC_DEVICE void mkc_sync_warp(void) { __syncwarp(); }
MKC_DEVICE float mkc_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
MKC_DEVICE int mkc_shfl_xor_int(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
/* Sums v[r * stride + i] (r < rows, i < n) over the warp, each into every
 * lane: an xor butterfly per value, levels outermost so the shuffles of one
 * level are independent. rows and stride are constants at the call sites, so
 * the loops unroll and v stays in registers. Every lane ends with the same
 * bits (each level adds a pair in both orders, and float addition commutes). */
MKC_DEVICE void mkc_warp_sum_rows(float *v, int rows, int stride, int n) {
  for (int m = 16; m > 0; m >>= 1)
    for (int r = 0; r < rows; r++)
      for (int i = 0; i < stride; i++)
        if (i < n) v[r * stride + i] += __shfl_xor_sync(0xffffffffu, v[r * stride + i], m);
}
/* Sums v[i] (i < n) over each aligned group of width lanes (a power of two,
 * at most 32) into every lane of the group: the butterfly of masks width / 2
 * down to 1, a value at a time. */
MKC_DEVICE void mkc_warp_sum_width(float *v, int n, int width) {
  for (int i = 0; i < n; i++)
    for (int m = width >> 1; m > 0; m >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], m);
}

/* fn(args, lane, v) in this lane, then the warp sum of v as above: a lane's
 * share of some work, added up over the warp. Here the call and the sum; the
 * CPU emulator may run fn for all 32 lanes at once instead of 32 meetings.
 * The values of v past n in each row are unspecified afterwards. */
#define MKC_WARP_SUM_OF(fn, args, v, rows, stride, n)                                              \
  do {                                                                                             \
    fn(args, mkc_lane(), v);                                                                       \
    mkc_warp_sum_rows(v, rows, stride, n);                                                         \
  } while (0)
/* The CPU emulator may call warp_fn once for all lanes instead; here it is
 * dropped (and need not exist). */
#define MKC_WARP_SUM_OF_WARP(fn, warp_fn, args, v, rows, stride, n)                                \
  MKC_WARP_SUM_OF(fn, args, v, rows, stride, n)

MKC_DEVICE unsigned mkc_atomic_add_u32(unsigned *p, unsigned v) { return atomicAdd(p, v); }
MKC_DEVICE void mkc_store_u32(unsigned *p, unsigned v) { *(volatile unsigned *)p = v; }
MKC_DEVICE unsigned mkc_load_volatile_u32(const unsigned *p) {
  return *(const volatile unsigned *)p;
}
MKC_DEVICE void mkc_fence(void) { __threadfence(); }
/* Release and acquire at GPU scope (PTX memory model): the add is ordered after
 * every write the thread has seen happen before it (a __syncthreads makes its
 * block's writes such), and the load before every later read. */
MKC_DEVICE void mkc_add_release_u32(unsigned *p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
MKC_DEVICE unsigned mkc_load_acquire_u32(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
MKC_DEVICE void mkc_pause(void) { __nanosleep(64); }

/* A float's bit pattern (the sampler orders floats by it). */
MKC_DEVICE unsigned mkc_f32_bits(float f) { return __float_as_uint(f); }
/* and back: the float of a bit pattern (a tf32 operand's value). */
MKC_DEVICE float mkc_bits_f32(unsigned u) { return __uint_as_float(u); }
/* sin(pi x) and cos(pi x) */
MKC_DEVICE void mkc_sincospif(float x, float *s, float *c) { sincospif(x, s, c); }
MKC_DEVICE float mkc_bf16_to_f32(mkc_bf16 h) { return __uint_as_float((unsigned)h << 16); }
/* Rounding to 16 bits, to nearest even, as the CPU prelude and the runtime
 * (mkc_float_to_bf16, mkc_float_to_f16) do: the hardware conversions, and
 * before sm_80 (no bf16 cvt) the runtime's bit trick. f16 overflows to inf
 * from 65520 up; NaN stays NaN. */
MKC_DEVICE mkc_bf16 mkc_f32_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  mkc_bf16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (mkc_bf16)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (mkc_bf16)(u >> 16);
#endif
}
MKC_DEVICE mkc_f16 mkc_f32_to_f16(float f) {
  mkc_f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
MKC_DEVICE float mkc_f16_to_f32(mkc_f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
/* 8 bytes, little-endian, from a 2-byte aligned address (quantized blocks'
 * fields are only that aligned): four 2-byte loads. */
MKC_DEVICE unsigned long long mkc_load8_a2(const void *p) {
  const unsigned short *h = (const unsigned short *)p;
  return (unsigned long long)h[0] | (unsigned long long)h[1] << 16 |
         (unsigned long long)h[2] << 32 | (unsigned long long)h[3] << 48;
}
/* 2 and 4 bytes, little-endian, from addresses that aligned: one load. */
MKC_DEVICE unsigned mkc_load2(const void *p) { return *(const unsigned short *)p; }
MKC_DEVICE unsigned mkc_load4(const void *p) { return *(const unsigned *)p; }
/* 8 bytes, little-endian, from a 4-byte aligned address: two 4-byte loads. */
MKC_DEVICE unsigned long long mkc_load8_a4(const void *p) {
  const unsigned *w = (const unsigned *)p;
  return (unsigned long long)w[0] | (unsigned long long)w[1] << 32;
}
/* 8 bytes, little-endian, from an 8-byte aligned address: one load. */
MKC_DEVICE unsigned long long mkc_load8(const void *p) { return *(const unsigned long long *)p; }
/* The count of set bits. */
MKC_DEVICE int mkc_popc(unsigned x) { return __popc(x); }
/* Byte k of the result: byte (s >> 4k) & 7 of y:x (selector nibbles below 8). */
MKC_DEVICE unsigned mkc_byte_perm(unsigned x, unsigned y, unsigned s) {
  return __byte_perm(x, y, s);
}
/* The 8 bytes of v (byte i = bits 8i..8i+7) as floats less k (a small whole
 * number), exact: byte i is put under 2^23's exponent (one byte permute) and
 * 2^23 + k taken off (one add). Two instructions a byte on full-rate pipes,
 * not one integer-to-float conversion on Hopper's narrow one. */
MKC_DEVICE void mkc_u8x8_minus_f32(unsigned long long v, float k, float *f) {
  unsigned w[2] = {(unsigned)v, (unsigned)(v >> 32)};
  for (int i = 0; i < 8; i++)
    f[i] =
        __uint_as_float(__byte_perm(w[i >> 2], 0x4b000000u, 0x7440u | (i & 3))) - (8388608.0f + k);
}
MKC_DEVICE void mkc_u8x8_to_f32(unsigned long long v, float *f) { mkc_u8x8_minus_f32(v, 0.0f, f); }
/* Signed bytes: each byte's sign bit flipped (v + 128, unsigned), less 128. */
MKC_DEVICE void mkc_s8x8_to_f32(unsigned long long v, float *f) {
  mkc_u8x8_minus_f32(v ^ 0x8080808080808080ull, 128.0f, f);
}
/* Nanoseconds of the GPU's global timer (coarse: it ticks every ~1 us on some parts). */
MKC_DEVICE unsigned long long mkc_globaltimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/* A hint that p will be read soon: the line is brought into L2. */
MKC_DEVICE void mkc_prefetch(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
/* A lane's running dot product, fed 8 bf16 weights (a 16-byte chunk) at a
 * time: one float here, each chunk summed as a tree (p[i] + p[i + 4], then
 * the pairs 2 apart, then the last two) and added on. The CPU prelude keeps 8
 * partial sums instead, for SIMD; mkc_dot_acc_sum gives the float. */
typedef float mkc_dot_acc;
MKC_DEVICE mkc_dot_acc mkc_dot_acc_zero(void) { return 0.0f; }
MKC_DEVICE mkc_dot_acc mkc_dot8_bf16(mkc_dot_acc acc, mkc_u4 w, mkc_f4 a, mkc_f4 b) {
  float p0 = __uint_as_float(w.x << 16) * a.x, p1 = __uint_as_float(w.x & 0xffff0000u) * a.y;
  float p2 = __uint_as_float(w.y << 16) * a.z, p3 = __uint_as_float(w.y & 0xffff0000u) * a.w;
  float p4 = __uint_as_float(w.z << 16) * b.x, p5 = __uint_as_float(w.z & 0xffff0000u) * b.y;
  float p6 = __uint_as_float(w.w << 16) * b.z, p7 = __uint_as_float(w.w & 0xffff0000u) * b.w;
  return acc + (((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)));
}
/* Eight weights already decoded to float (a quantized row's chunk), summed alike. */
MKC_DEVICE mkc_dot_acc mkc_dot8_f32(mkc_dot_acc acc, const float *w, mkc_f4 a, mkc_f4 b) {
  float p0 = w[0] * a.x, p1 = w[1] * a.y, p2 = w[2] * a.z, p3 = w[3] * a.w;
  float p4 = w[4] * b.x, p5 = w[5] * b.y, p6 = w[6] * b.z, p7 = w[7] * b.w;
  return acc + (((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)));
}
/* acc + a b, rounded once (a quantized chunk's scaled sums, weights.cuh). */
MKC_DEVICE mkc_dot_acc mkc_dot_acc_fma(mkc_dot_acc acc, float a, float b) {
  return fmaf(a, b, acc);
}
MKC_DEVICE float mkc_dot_acc_sum(mkc_dot_acc acc) { return acc; }
MKC_DEVICE mkc_u4 mkc_load_u4(const void *p) {
  uint4 v = *(const uint4 *)p;
  mkc_u4 r = {v.x, v.y, v.z, v.w};
  return r;
}
/* 16 bytes of a weight row, read once per step. With MKC_WEIGHT_NC (codegen's
 * default): through the read-only path and not kept in L1, which the
 * activations every warp rereads use instead (12 % faster on the H100,
 * docs/PERF.md). */
MKC_DEVICE mkc_u4 mkc_load_weight_u4(const void *p) {
#if MKC_WEIGHT_NC
  mkc_u4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
#else
  return mkc_load_u4(p);
#endif
}
/* A quantized block's fields (weights.cuh), read as the rows above: 1, 2, 4 and
 * 8 bytes from addresses that aligned, and 8 bytes from 2- and 4-aligned ones. */
MKC_DEVICE unsigned mkc_load_weight1(const void *p) {
#if MKC_WEIGHT_NC
  unsigned short v;
  asm("ld.global.nc.L1::no_allocate.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
#else
  return *(const unsigned char *)p;
#endif
}
MKC_DEVICE unsigned mkc_load_weight2(const void *p) {
#if MKC_WEIGHT_NC
  unsigned short v;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
#else
  return mkc_load2(p);
#endif
}
MKC_DEVICE unsigned mkc_load_weight4(const void *p) {
#if MKC_WEIGHT_NC
  unsigned v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#else
  return mkc_load4(p);
#endif
}
MKC_DEVICE unsigned long long mkc_load_weight8(const void *p) {
#if MKC_WEIGHT_NC
  unsigned long long v;
  asm("ld.global.nc.L1::no_allocate.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
#else
  return mkc_load8(p);
#endif
}
MKC_DEVICE unsigned long long mkc_load_weight8_a2(const void *p) {
  const unsigned char *b = (const unsigned char *)p;
  return (unsigned long long)mkc_load_weight2(b) |
         (unsigned long long)mkc_load_weight2(b + 2) << 16 |
         (unsigned long long)mkc_load_weight2(b + 4) << 32 |
         (unsigned long long)mkc_load_weight2(b + 6) << 48;
}
MKC_DEVICE unsigned long long mkc_load_weight8_a4(const void *p) {
  const unsigned char *b = (const unsigned char *)p;
  return (unsigned long long)mkc_load_weight4(b) | (unsigned long long)mkc_load_weight4(b + 4)
                                                       << 32;
}
/* Weight rows streamed into shared memory (MKC_CP_RING, templates/matvec.cuh):
 * cp.async copies 16 bytes without a register to hold them while they fly,
 * so a lane can have many more of a row's bytes in flight than its registers
 * allow. .cg: kept in L2 only, as the weight loads above. A thread's copies
 * are committed in groups; mkc_cp_wait(n) returns when at most n of its
 * groups are still in flight (n a literal after inlining: the switch folds;
 * past 7, 7: a longer wait, never a shorter one). nvcc's host pass (no
 * __CUDA_ARCH__) sees them too: the templates' device code names them. */
#if MKC_CP_RING && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
MKC_DEVICE void mkc_cp_async16(void *dst, const void *src) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
      "l"(src)
      : "memory");
}
MKC_DEVICE void mkc_cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
MKC_DEVICE void mkc_cp_wait(int n) {
  switch (n) {
  case 0:
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    break;
  case 1:
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    break;
  case 2:
    asm volatile("cp.async.wait_group 2;" ::: "memory");
    break;
  case 3:
    asm volatile("cp.async.wait_group 3;" ::: "memory");
    break;
  case 4:
    asm volatile("cp.async.wait_group 4;" ::: "memory");
    break;
  case 5:
    asm volatile("cp.async.wait_group 5;" ::: "memory");
    break;
  case 6:
    asm volatile("cp.async.wait_group 6;" ::: "memory");
    break;
  default:
    asm volatile("cp.async.wait_group 7;" ::: "memory");
    break;
  }
}
/* 16 bytes this thread's copies wrote, once mkc_cp_wait has seen them land */
MKC_DEVICE mkc_u4 mkc_load_shared_u4(const void *p) {
  mkc_u4 r;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "r"((unsigned)__cvta_generic_to_shared(p))
               : "memory");
  return r;
}
#elif MKC_CP_RING
#error "MKC_CP_RING needs cp.async (sm_80 on)"
#endif
MKC_DEVICE mkc_f4 mkc_load_f4(const float *p) {
  float4 v = *(const float4 *)p;
  mkc_f4 r = {v.x, v.y, v.z, v.w};
  return r;
}
/* Tensor cores (templates/gemm.cuh): a float as tf32, rounded to nearest
 * with ties away from zero (cvt.rna, sm_80 on; before, the same bits by hand,
 * as the CPU prelude computes them). */
MKC_DEVICE unsigned mkc_tf32(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(f));
  return u;
#else
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffe000u; /* NaN: a quiet one */
  return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
#endif
}
#if __CUDA_ARCH__ >= 800
/* d = A B + d, one mma.sync.m16n8k8 tf32 on this lane's fragments. */
MKC_DEVICE void mkc_mma_sync(const unsigned *a, const unsigned *b, float *d) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
/* One warp's block of mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32:
 * fragments in the PTX ISA's layout, a: [2][MT][4] (A's high and low tf32
 * parts, m-tiles of 16 rows), b: [nb][NT][2] (B's parts, n-tiles of 8
 * columns), c: [MT][NT][4] the accumulators. For the products (a0, b0),
 * (a1, b0) and, with nb = 2, (a0, b1), in that order, every m-tile i < mt
 * with every n-tile j < nt: c[i][j] = A[i] B[j] + c[i][j]. MT and NT are the
 * arrays' extents (literals at the call), mt and nt the same in every lane.
 * Before sm_80 the product is made of shuffles: lane (g, q) gathers rows g
 * and g + 8 of A and columns 2q, 2q + 1 of B from the lanes that hold them. */
MKC_DEVICE void mkc_mma_tf32(const unsigned *a, const unsigned *b, int nb, float *c, int mt, int nt,
                             int MT, int NT) {
  for (int p = 0; p < 3; p++) {
    int pa = p == 1, pb = p == 2;
    if (pb >= nb) break;
    for (int i = 0; i < MT; i++) {
      if (i >= mt) break;
      const unsigned *ai = a + (pa * MT + i) * 4;
      for (int j = 0; j < NT; j++) {
        if (j >= nt) break;
        const unsigned *bj = b + (pb * NT + j) * 2;
        float *d = c + (i * NT + j) * 4;
#if __CUDA_ARCH__ >= 800
        mkc_mma_sync(ai, bj, d);
#else
        int lane = (int)(threadIdx.x & 31u), g = lane >> 2, q = lane & 3;
        for (int k = 0; k < 8; k++) {
          /* A[row][k] sits in lane 4 * (row % 8) + k % 4, register (row >= 8) + 2 (k >= 4);
           * B[k][n] in lane 4n + k % 4, register k >= 4 */
          int src_a = 4 * g + (k & 3), src_b0 = 4 * (2 * q) + (k & 3), src_b1 = src_b0 + 4;
          float a_g = __uint_as_float(__shfl_sync(0xffffffffu, ai[k < 4 ? 0 : 2], src_a));
          float a_g8 = __uint_as_float(__shfl_sync(0xffffffffu, ai[k < 4 ? 1 : 3], src_a));
          float b_0 = __uint_as_float(__shfl_sync(0xffffffffu, bj[k < 4 ? 0 : 1], src_b0));
          float b_1 = __uint_as_float(__shfl_sync(0xffffffffu, bj[k < 4 ? 0 : 1], src_b1));
          d[0] += a_g * b_0;
          d[1] += a_g * b_1;
          d[2] += a_g8 * b_0;
          d[3] += a_g8 * b_1;
        }
#endif
      }
    }
  }
}

/* mkc_mma_tf32 in a queue that mkc_mma_flush ends. Here each is the
 * instruction at once; the CPU emulator runs a lane's queue at the flush, in
 * one warp meeting. Between the two, c is neither read nor written and the
 * warp meets nowhere. */
MKC_DEVICE void mkc_mma_tf32_queue(const unsigned *a, const unsigned *b, int nb, float *c, int mt,
                                   int nt, int MT, int NT) {
  mkc_mma_tf32(a, b, nb, c, mt, nt, MT, NT);
}
/* One product per tile, a: [MT][4] one part of A, b: [NT][2] one part of B
 * (the decode matvec's: A's rows 8 .. 15 carry the low parts itself). Only
 * sm_80 on: the decode matvec takes it only there. */
MKC_DEVICE void mkc_mma_tf32_1_queue(const unsigned *a, const unsigned *b, float *c, int mt, int nt,
                                     int MT, int NT) {
  for (int i = 0; i < MT; i++) {
    if (i >= mt) break;
    for (int j = 0; j < NT; j++) {
      if (j >= nt) break;
      const unsigned *ai = a + i * 4, *bj = b + j * 2;
      float *d = c + (i * NT + j) * 4;
#if __CUDA_ARCH__ >= 800
      mkc_mma_sync(ai, bj, d);
#else
      (void)ai;
      (void)bj;
      (void)d;
      __trap(); /* the decode matvec uses tensor cores from sm_80 on only */
#endif
    }
  }
}
MKC_DEVICE void mkc_mma_flush(float *c) { (void)c; }
