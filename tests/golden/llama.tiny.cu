/* mkc 0.1.0 -- generated: do not edit.
 * graph:   graphs/llama.lua, preset tiny
 * hashes:  graph 22afb18ea66da309, templates 2218df11d515898b, options 1dafad5a1c6b2df3
 * options: draft_max 4 (T <= 5 tokens per step), max_ctx 512, 128 threads per block, <= 1024 blocks, KV bf16, prompt chunks <= 128 (tiled, tensor cores)
 * plan:    15 stages, 0 grid barriers, 14 flow waits; scratch 117440 floats, KV 65536 bf16, weights 115328 bf16, smem 39872 bytes
 * kernel:  mkc_step(weights, scratch, kv, state) runs one whole step; pos lives in state.
 * inspect: format 1: each stage comment lists its graph nodes, work items, smem, global reads
 *          and writes (bytes per step, t tokens, ctx cached positions) and flops (docs/INSPECT.md).
 */
#define MKC_THREADS 128
#define MKC_T_MAX 5
#define MKC_KV_BF16 1 /* the KV cache's element type */
#define MKC_MIN_BLOCKS 3 /* blocks per SM the registers must allow */
#define MKC_WEIGHT_NC 1 /* MKC_WEIGHT_NC: weight rows read past L1 */
#define MKC_T1_PATH 1 /* each decode stage also written for steps of one input (MKC_T1_PATH=0: not) */
#define MKC_T_CHUNK 128 /* a prompt chunk's inputs: past MKC_T_MAX, tiled */
#define MKC_GEMM_BM 64 /* tiles: tokens */
#define MKC_GEMM_BN 64 /* tiles: weight rows */
#define MKC_GEMM_BK 32 /* columns staged at a time */
#define MKC_ATTN_BM 64 /* attention tiles: query rows */
#define MKC_ATTN_BN 32 /* positions at a time */
#define MKC_ATTN_DT 2 /* n8 tiles of a head */
#if defined(__CUDACC__)
#line 1 "templates/prelude_cuda.cuh"
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
#else
#include "prelude_cpu.h"
#endif
#line 1 "templates/mkc_state.h"
/* Decode state shared by the megakernel and the host: one definition for both sides.
 * The kernel owns `pos`; the host writes only the inputs of the next step. */
#ifndef MKC_STATE_H
#define MKC_STATE_H

#define MKC_T_CAP 32        /* most input tokens a decode step can take: 1 + drafts */
#define MKC_CHUNK_CAP 512   /* most input tokens a prompt chunk can take (all fixed: tiled) */
#define MKC_MAX_BLOCKS 1024 /* grid size cap: per-block argmax partials are planned for it */
#define MKC_ROUNDS_MAX 16   /* most draft-and-verify rounds one launch runs (--rounds) */
#define MKC_ROUND_STOPS 8   /* token ids a launch of rounds stops at (end of generation) */
#define MKC_CANDS_K 64      /* top-k up to this takes the candidates stage (templates/sample.cuh) */
#define MKC_SLOTS_CAP 64    /* most sequences a slot kernel's step serves (templates/slots.cuh) */
#define MKC_KV_PAGE 16      /* positions per page of a paged slot kernel's KV pool (--kv-pages) */

enum mkc_status {
  MKC_STATUS_OK = 0,
  MKC_STATUS_CTX_FULL = 1,  /* pos + n_inputs would pass the KV cache: nothing was written */
  MKC_STATUS_BAD_INPUT = 2, /* n_inputs/n_fixed out of range or a token id outside the vocab */
  MKC_STATUS_NONFINITE = 3  /* no finite logit: NaN or inf reached the LM head */
};

#define MKC_HIST_CAP 256 /* repeat_last_n's cap: the penalties look this far back at most */
#define MKC_BIAS_CAP 128 /* most tokens a request's logit bias names (--logit-bias, logit_bias) */
#define MKC_LOGPROBS_MAX 20
/* Per input position, in the kernel's scratch when logprobs > 0: max logit,
 * log normalizer, 1 / temperature, the emitted token's log-probability, then
 * MKC_LOGPROBS_MAX top ids (ints) and their log-probabilities. */
#define MKC_LP_STRIDE 64
#define MKC_LP_EMITTED 3
#define MKC_LP_IDS 4
#define MKC_LP_VALS (MKC_LP_IDS + MKC_LOGPROBS_MAX)

/* One round of a launch that runs several (round_max > 1): what the step of
 * that round took and emitted, as the state's fields say for a single step. */
typedef struct mkc_round {
  int n_in;       /* its inputs T: the last emitted token, then drafts */
  int n_out;      /* tokens emitted: accepted + 1 */
  int n_accepted; /* drafts accepted */
  int status;     /* enum mkc_status */
  int out_tokens[MKC_T_CAP];
} mkc_round;

/* Sampling options, written by the host once per request (not per step) and
 * read by the sampler stage (templates/sample.cuh) and the reference. */
typedef struct mkc_sampling {
  float temp;           /* <= 0: greedy (argmax); the other fields are then ignored */
  int top_k;            /* <= 0: off */
  float top_p;          /* >= 1: off */
  float min_p;          /* <= 0: off */
  float repeat_penalty; /* 1 (or 0, as zeroed options hold): off; llama.cpp: l > 0 ? l / rp : l * rp
                         */
  float presence_penalty;        /* 0: off (logit -= presence if the token occurs) */
  float frequency_penalty;       /* 0: off (logit -= frequency * count) */
  int repeat_last_n;             /* the penalties look at the last N tokens, 0..MKC_HIST_CAP */
  unsigned int seed_lo, seed_hi; /* the Philox key */
  int logprobs;                  /* 0..MKC_LOGPROBS_MAX: top-N log-probabilities per token */
  /* llama.cpp's --logit-bias, OpenAI's logit_bias: bias[k] is added to token bias_id[k]'s logit
   * where the LM head writes it, before the greedy choice, the penalties and the sampler see it
   * (-inf: never chosen). Ids ascending, each once. It applies greedy too: not part of
   * MKC_SAMPLING_ON, and kept when the rest is off. */
  int n_bias;
  int bias_id[MKC_BIAS_CAP];
  float bias[MKC_BIAS_CAP];
} mkc_sampling;

/* Whether the options send a step through the sampler: a temperature, a
 * penalty or log-probabilities. All-zero options (a fresh or reset state) are
 * plain greedy decoding: a repeat penalty of 0 counts as none. The one
 * definition for the kernel (templates/sample.cuh) and the host. */
#define MKC_SAMPLING_ON(o)                                                                         \
  ((o)->temp > 0.0f || ((o)->repeat_penalty > 0.0f && (o)->repeat_penalty != 1.0f) ||              \
   (o)->presence_penalty != 0.0f || (o)->frequency_penalty != 0.0f || (o)->logprobs > 0)

typedef struct mkc_state {
  /* kernel-owned */
  int pos;                /* tokens whose K/V rows are valid in the cache */
  int n_accepted;         /* drafts accepted by the last step */
  int n_out;              /* tokens emitted by the last step: accepted + 1 */
  int status;             /* enum mkc_status of the last step */
  int step;               /* steps run */
  unsigned barrier_count; /* grid barrier: blocks arrived in this generation */
  unsigned barrier_gen;   /* grid barrier: generation, bumped by the last arriver */
  /* kernel-written each step */
  int out_tokens[MKC_T_CAP]; /* greedy choices after the fixed inputs: n_out of them */
  /* rounds in one launch (round_max > 1), last: the host reads back n_rounds of them */
  int n_rounds;
  int round_go; /* another round runs (mkc_round_next), set before the barrier that starts it */
  mkc_round rounds[MKC_ROUNDS_MAX];
  /* host-written before each step, last: the host copies these in and reads back only what is
   * above (offsetof round_max; the rounds only when it ran them), so a prompt chunk's inputs cost
   * no decode step a byte */
  /* Rounds (templates/rounds.cuh): after the step below, up to round_max - 1 more steps in the
   * same launch, each on the last emitted token and up to round_drafts drafts that prompt lookup
   * finds in the history, until round_budget tokens are emitted, a round emits one of
   * round_stops or the context is full. 0 or 1: the one step. */
  int round_max, round_drafts, round_budget, n_round_stops;
  int round_stops[MKC_ROUND_STOPS];
  /* Self-speculation in the kernel (templates/rounds.cuh): rounds draft with the first
   * draft_layers layers (0: by prompt lookup); draft_left drafts are still to be made for the
   * next round (the host sets the first round's), draft_n made so far. */
  int draft_layers, draft_left, draft_n;
  unsigned flow_count; /* flow waits (templates/common.cuh): arrivals this launch, from 0 */
  int n_inputs;        /* T: inputs[0] is the last known token, then fixed tokens, then drafts */
  int n_fixed; /* inputs[1..n_fixed] are known (prompt) and accepted unconditionally; a step of
                  T > t_max inputs (a prompt chunk, templates/gemm.cuh) has n_fixed = T - 1 */
  int inputs[MKC_CHUNK_CAP];
  /* host-written once per request, past what a step copies in or out: its 1 KB of biases cost
   * no step a byte */
  mkc_sampling sampling;
} mkc_state;

#endif
#line 1 "templates/common.cuh"
/* Building blocks every stage uses: lane/warp ids, warp and block reductions,
 * the atomics-based grid barrier, and the step's begin check. */
#define MKC_WARPS (MKC_THREADS / 32)

/* The KV cache's element type, chosen at generation time: the kernel defines
 * MKC_KV_BF16, MKC_KV_F16 or MKC_KV_F32. K and V are rounded to it (to
 * nearest even) once, when appended, and widened to float where attention
 * reads them; the reference executor rounds its K and V alike. */
#if defined(MKC_KV_BF16)
typedef mkc_bf16 mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return mkc_f32_to_bf16(f); }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return mkc_bf16_to_f32(v); }
#elif defined(MKC_KV_F16)
typedef mkc_f16 mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return mkc_f32_to_f16(f); }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return mkc_f16_to_f32(v); }
#elif defined(MKC_KV_F32)
typedef float mkc_kv;
MKC_DEVICE mkc_kv mkc_kv_from_f32(float f) { return f; }
MKC_DEVICE float mkc_kv_to_f32(mkc_kv v) { return v; }
#else
#error "the kernel names no KV cache type: define MKC_KV_BF16, MKC_KV_F16 or MKC_KV_F32"
#endif
#define MKC_NEG_MAX (-3.402823466e38f)

MKC_DEVICE int mkc_lane(void) { return mkc_tid() & 31; }

/* bench --stages: block 0's clock after stage i (0: the step's start). After
 * a grid barrier that is when every block has finished the stage; after a
 * stage without one, when block 0 has. */
MKC_DEVICE void mkc_stage_time(unsigned long long *timers, int i) {
  if (mkc_bid() == 0 && mkc_tid() == 0) timers[i] = mkc_globaltimer();
}
MKC_DEVICE int mkc_warp(void) { return mkc_tid() >> 5; }
/* Warps of the whole grid: matvec rows are dealt out one warp at a time. */
MKC_DEVICE int mkc_grid_warp(void) { return mkc_bid() * MKC_WARPS + mkc_warp(); }
MKC_DEVICE int mkc_grid_warps(void) { return mkc_nblocks() * MKC_WARPS; }

/* The sum over the warp, the same bits in every lane (see the preludes). */
MKC_DEVICE float mkc_warp_sum(float v) {
  mkc_warp_sum_rows(&v, 1, 1, 1);
  return v;
}

MKC_DEVICE float mkc_warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, mkc_shfl_xor(v, m));
  return v;
}

/* Nonzero in every lane when v is nonzero in any lane. */
MKC_DEVICE int mkc_warp_or(int v) {
  for (int m = 16; m > 0; m >>= 1) v |= mkc_shfl_xor_int(v, m);
  return v;
}

/* The gated MLP's glu(gate, up): act(gate) * up, act SiLU (SwiGLU), or where the kernel defines
 * MKC_GEGLU, GELU's tanh form (GeGLU: Gemma's gelu_pytorch_tanh); where it defines MKC_OAI_GLU,
 * gpt-oss's: gate clamped above and up on both sides at MKC_OAI_LIMIT, gate * sigmoid(MKC_OAI_ALPHA
 * gate) * (up + 1) (codegen defines both constants, graph.h the reference's). */
MKC_DEVICE float mkc_glu(float g, float u) {
#if defined(MKC_OAI_GLU)
  g = fminf(g, (float)MKC_OAI_LIMIT);
  u = fmaxf(fminf(u, (float)MKC_OAI_LIMIT), -(float)MKC_OAI_LIMIT);
  return g / (1.0f + expf(-(float)MKC_OAI_ALPHA * g)) * (u + 1.0f);
#elif defined(MKC_GEGLU)
  return 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
#else
  return g / (1.0f + expf(-g)) * u;
#endif
}

/* Gemma 2's soft caps, x -> c tanh(x / c): mkc_score on the scaled attention
 * scores where the kernel defines MKC_ATTN_SOFTCAP, mkc_logit on the logits
 * where it defines MKC_LOGIT_SOFTCAP; else each is x. */
#ifdef MKC_ATTN_SOFTCAP
#define mkc_score(s) (MKC_ATTN_SOFTCAP * tanhf((s) / MKC_ATTN_SOFTCAP))
#else
#define mkc_score(s) (s)
#endif
/* Granite's multipliers: the logits times MKC_LOGIT_SCALE (1 / logits_scaling) before any cap,
 * and a residual branch times MKC_RESIDUAL_SCALE before it is added (mkc_branch). */
#ifdef MKC_LOGIT_SCALE
#define mkc_logit_scaled(z) ((z)*MKC_LOGIT_SCALE)
#else
#define mkc_logit_scaled(z) (z)
#endif
#ifdef MKC_LOGIT_SOFTCAP
#define mkc_logit(z) (MKC_LOGIT_SOFTCAP * tanhf(mkc_logit_scaled(z) / MKC_LOGIT_SOFTCAP))
#else
#define mkc_logit(z) mkc_logit_scaled(z)
#endif
#ifdef MKC_RESIDUAL_SCALE
#define mkc_branch(v) ((v)*MKC_RESIDUAL_SCALE)
#else
#define mkc_branch(v) (v)
#endif

/* Attention's output of query head h: acc (its p.v sum) over l (its weights' sum, taken at the
 * running max m); with sinks (gpt-oss: each head's score that joins the sum with no value), over
 * l + exp(sink - m), both taken at max(m, sink) so that neither exp overflows. */
MKC_DEVICE_INLINE float mkc_att_out(float acc, float l, float m, const mkc_bf16 *sinks, int h) {
  if (!sinks) return acc / l;
  float s = mkc_bf16_to_f32(sinks[h]), top = fmaxf(m, s), a = expf(m - top);
  return acc * a / (l * a + expf(s - top));
}

/* A matmul's value v of row r: its bias added (bias: 0 where it has none: gpt-oss's output
 * projection and router have one), then stored, or with accumulate (a residual epilogue) added
 * as a branch onto prior, the value *o had (read by the caller, before its dot products: see
 * mkc_matvec; mkc_put reads it here). */
MKC_DEVICE_INLINE void mkc_put_onto(float *o, float prior, float v, const mkc_bf16 *bias, int r,
                                    int accumulate) {
  if (bias) v += mkc_bf16_to_f32(bias[r]);
  *o = accumulate ? prior + mkc_branch(v) : v;
}

/* mkc_put_onto with *o read now: the same bits. */
MKC_DEVICE_INLINE void mkc_put(float *o, float v, const mkc_bf16 *bias, int r, int accumulate) {
  mkc_put_onto(o, accumulate ? *o : 0.0f, v, bias, r, accumulate);
}

/* Sum over the block, returned to every thread; red: MKC_WARPS floats of smem. */
MKC_DEVICE float mkc_block_sum(float v, float *red) {
  v = mkc_warp_sum(v);
  if (mkc_lane() == 0) red[mkc_warp()] = v;
  mkc_sync_block();
  float s = 0.0f;
  for (int w = 0; w < MKC_WARPS; w++) s += red[w];
  mkc_sync_block(); /* red is reused by the next reduction */
  return s;
}

MKC_DEVICE float mkc_block_max(float v, float *red) {
  v = mkc_warp_max(v);
  if (mkc_lane() == 0) red[mkc_warp()] = v;
  mkc_sync_block();
  float m = MKC_NEG_MAX;
  for (int w = 0; w < MKC_WARPS; w++) m = fmaxf(m, red[w]);
  mkc_sync_block();
  return m;
}

/* Grid barrier on two counters in the state: every block must be resident
 * (cooperative launch on the GPU, one host thread per block on the CPU). The
 * generation is read before arriving, so the last arriver cannot bump it
 * unseen; the counter is reset before the bump that releases the others. */
MKC_DEVICE void mkc_grid_sync(mkc_state *st) {
  mkc_sync_block();
  if (mkc_tid() == 0) {
    unsigned gen = mkc_load_volatile_u32(&st->barrier_gen);
    mkc_fence();
    unsigned arrived = mkc_atomic_add_u32(&st->barrier_count, 1u) + 1u;
    if (arrived == (unsigned)mkc_nblocks()) {
      mkc_store_u32(&st->barrier_count, 0u);
      mkc_fence();
      mkc_atomic_add_u32(&st->barrier_gen, 1u);
    } else {
      while (mkc_load_volatile_u32(&st->barrier_gen) == gen) mkc_pause();
    }
    mkc_fence();
  }
  mkc_sync_block();
}

/* Flow: a grid barrier split in two, so a block has something to do while
 * the others finish. A stage ends with mkc_flow_arrive: the block's writes
 * are done (__syncthreads), and thread 0 adds one to state->flow_count with
 * release order. The next stage starts by prefetching its own weights into
 * L2 (mkc_prefetch_first), which reads nothing another block writes, then
 * mkc_flow_wait: thread 0 spins with acquire loads until every block has
 * arrived as often as this one has waited (*waited counts, in blocks), and
 * the block meets at __syncthreads. The host zeroes flow_count before every
 * launch; one release and one acquire per block and stage, where
 * mkc_grid_sync pays for three fences, a reset and a second counter. */
/* A layer's output kept for the host (a drafter head's features): slot 0
 * keeps nothing; slot k copies every input's row of x into slot k - 1 of
 * keep (slot_floats each, rows at x's stride), the whole grid at once. */
MKC_DEVICE void mkc_keep(const float *x, int x_stride, int n, int T, float *keep, int slot_floats,
                         int slot) {
  if (slot == 0) return;
  float *dst = keep + (slot - 1) * slot_floats;
  for (int i = mkc_bid() * MKC_THREADS + mkc_tid(); i < T * n; i += mkc_nblocks() * MKC_THREADS)
    dst[i / n * x_stride + i % n] = x[i / n * x_stride + i % n];
}

MKC_DEVICE void mkc_flow_arrive(mkc_state *st) {
  mkc_sync_block();
  if (mkc_tid() == 0) mkc_add_release_u32(&st->flow_count, 1u);
}

MKC_DEVICE void mkc_flow_wait(mkc_state *st, unsigned *waited) {
  *waited += (unsigned)mkc_nblocks();
  if (mkc_tid() == 0)
    while ((int)(mkc_load_acquire_u32(&st->flow_count) - *waited) < 0) mkc_pause();
  mkc_sync_block();
}

/* A step's inputs checked: enum mkc_status. A step takes up to t_max inputs
 * (1 + drafts), or, as a prompt chunk whose inputs are all known, up to
 * t_chunk. */
MKC_DEVICE int mkc_inputs_status(const mkc_state *st, int vocab, int max_ctx, int t_max,
                                 int t_chunk) {
  int T = st->n_inputs, pos = st->pos, status = MKC_STATUS_OK;
  if (T < 1 || T > t_chunk || st->n_fixed < 0 || st->n_fixed >= T ||
      (T > t_max && st->n_fixed != T - 1))
    status = MKC_STATUS_BAD_INPUT;
  else if (pos < 0 || pos + T > max_ctx)
    status = MKC_STATUS_CTX_FULL;
  else
    for (int t = 0; t < T; t++)
      if (st->inputs[t] < 0 || st->inputs[t] >= vocab) status = MKC_STATUS_BAD_INPUT;
  return status;
}

/* A step refused before it ran: its status and nothing emitted, written by
 * one thread of the grid. */
MKC_DEVICE void mkc_step_refused(mkc_state *st, int status) {
  if (mkc_bid() == 0 && mkc_tid() == 0) {
    st->status = status;
    st->n_out = 0;
    st->n_accepted = 0;
  }
}

/* Every block reads the same state, so every block reaches the same verdict;
 * on a bad step nothing is written but the status. */
MKC_DEVICE int mkc_step_begin(mkc_state *st, int vocab, int max_ctx, int t_max, int t_chunk) {
  int status = mkc_inputs_status(st, vocab, max_ctx, t_max, t_chunk);
  if (status != MKC_STATUS_OK) {
    mkc_step_refused(st, status);
    return 0;
  }
  return 1;
}

/* This block's index counted from block b0 (which is 0). */
MKC_DEVICE int mkc_bid_from(int b0) {
  int n = mkc_nblocks(), b = mkc_bid() - b0 % n;
  return b < 0 ? b + n : b;
}

/* Whether (v, i) beats (best_v, best_i) in a greedy choice: the larger
 * logit, ties to the lower id. */
MKC_DEVICE int mkc_better(float v, int i, float best_v, int best_i) {
  return v > best_v || (v == best_v && i < best_i);
}
#line 1 "templates/slots.cuh"
/* Slots (mkc gen --slots B): one step serves up to B sequences. The kernel's
 * state is then an array of B mkc_state, one per slot, each with its own pos,
 * inputs, sampling options and results; state[0] also holds the launch's
 * counters (flow_count, the barrier). A slot with n_inputs 0 sits the step
 * out. Each slot has its own KV cache (MKC_KV_SLOT elements, the plain
 * kernel's layout) and token history.
 *
 * The step's rows are the slots' inputs one after another, so every stage
 * that streams weights reads each byte once for all of them. Only RoPE, the
 * KV append and attention care whose a row is (mkc_rowmap); the sampler and
 * the accept run once per slot on that slot's rows. With one slot taking part
 * the step is the plain kernel's on that slot's cache, prompt chunks
 * included. Several slots share a step of up to MKC_STEP_ROWS rows, each slot
 * at most MKC_T_MAX of them: up to MKC_T_MAX rows in all the decode path's,
 * more a wide step on the tiled path (templates/gemm.cuh; mkc gen
 * --step-rows), whose LM head gives every row its logits.
 *
 * Every block's thread 0 maps the rows into the block's shared memory, ahead
 * of the stages' (MKC_ROWMAP_BYTES): the map does not grow a thread's stack.
 *
 * Paged (mkc gen --kv-pages N, MKC_KV_PAGES): the slots share one pool of N
 * pages of MKC_KV_PAGE positions (every layer's K and V rows of them; a
 * layer's per-head block is the pool's rows, page after page). Slot s's
 * position p is at row table[s][p / MKC_KV_PAGE] * MKC_KV_PAGE + p %
 * MKC_KV_PAGE; the host fills the page tables (scratch, MKC_SLOT_PAGES ints
 * per slot) before the step. Every step then goes through the row map, and
 * a prompt chunk's K/V rows go through its slot's table too. A sliding
 * window's layer keeps its positions there as a global layer does (no ring)
 * and reads its window of them. */
#ifndef MKC_SLOTS
#define MKC_SLOTS 0 /* a plain kernel: one sequence, in state */
#endif
#define MKC_SLOT_N (MKC_SLOTS > 0 ? MKC_SLOTS : 1)
#ifndef MKC_KV_PAGES
#define MKC_KV_PAGES 0 /* not paged */
#endif
#ifndef MKC_STEP_ROWS
#define MKC_STEP_ROWS MKC_T_MAX /* a step's rows: a plain kernel's inputs */
#endif

typedef struct mkc_rowmap {
  int single;            /* >= 0: the only slot with inputs; -1: several */
  int first[MKC_SLOT_N]; /* a slot's first row in the step */
  int count[MKC_SLOT_N]; /* its rows (0: not in this step) */
  int spos[MKC_SLOT_N];  /* its pos when the step began */
  int pos[MKC_STEP_ROWS], slot[MKC_STEP_ROWS], tok[MKC_STEP_ROWS]; /* per row */
  int rows;                                                        /* the step's: 0, none */
  const int *table; /* paged: the slots' page tables, MKC_SLOT_PAGES each */
} mkc_rowmap;
#if MKC_SLOTS > 0
typedef char mkc_rowmap_fits[sizeof(mkc_rowmap) <= MKC_ROWMAP_BYTES ? 1 : -1]; /* codegen's room */
#endif

/* Row t's position: a plain step's pos + t, or its slot's. */
MKC_DEVICE int mkc_row_pos(const mkc_rowmap *rows, int pos, int t) {
  if (MKC_SLOTS == 0 || !rows) return pos + t;
  return rows->single >= 0 ? rows->spos[rows->single] + t : rows->pos[t];
}

/* Row t's slot (a mapped step's). */
MKC_DEVICE int mkc_row_slot(const mkc_rowmap *rows, int t) {
  return rows->single >= 0 ? rows->single : rows->slot[t];
}

/* Whether any row of the step has a logit bias to look up (st 0: none), read once before an LM
 * head's rows, so that a step with none spends nothing a row on it. */
MKC_DEVICE int mkc_step_logit_biased(const mkc_state *st, const mkc_rowmap *rows) {
  if (!st) return 0;
  if (MKC_SLOTS == 0 || !rows) return st->sampling.n_bias > 0;
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rows->count[s] > 0 && st[s].sampling.n_bias > 0) return 1;
  return 0;
}

/* The logit bias of token id at the step's row t: its slot's request's (mkc_sampling's bias; a
 * plain kernel's rows are all state's, rows 0), 0 where none is set or st is 0 (a matmul that is
 * no LM head). The ids are ascending: a binary search. */
MKC_DEVICE float mkc_row_logit_bias(const mkc_state *st, const mkc_rowmap *rows, int t, int id) {
  if (!st) return 0.0f;
  const mkc_sampling *o = &st[MKC_SLOTS > 0 && rows ? mkc_row_slot(rows, t) : 0].sampling;
  int lo = 0, hi = o->n_bias;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (o->bias_id[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < o->n_bias && o->bias_id[lo] == id ? o->bias[lo] : 0.0f;
}

/* Where row t's position p is in a kv head's block of kv_rows rows, in KV
 * elements: a ring's row p % kv_rows, in its slot's cache when there are
 * several; or, paged, its slot's page's row. */
MKC_DEVICE long mkc_kv_at(const mkc_rowmap *rows, int t, int p, int kv_rows, int head_dim) {
#if MKC_KV_PAGES > 0
  (void)kv_rows;
  int page = rows->table[mkc_row_slot(rows, t) * MKC_SLOT_PAGES + p / MKC_KV_PAGE];
  return ((long)page * MKC_KV_PAGE + p % MKC_KV_PAGE) * head_dim;
#elif MKC_SLOTS > 0
  return (rows ? (long)mkc_row_slot(rows, t) * MKC_KV_SLOT : 0) + (long)(p % kv_rows) * head_dim;
#else
  (void)rows;
  (void)t;
  return (long)(p % kv_rows) * head_dim;
#endif
}

/* Checks every slot's inputs as mkc_step_begin does one sequence's and maps
 * the rows into rm, the block's shared memory. A slot that fails gets the
 * status and sits the step out. Several slots take part only with at most
 * MKC_T_MAX inputs each and MKC_STEP_ROWS in all (a prompt chunk runs alone);
 * past that every slot in the step is refused. Every block reads the same
 * state and maps the same rows. Returns the step's rows, 0: nothing to run. */
MKC_DEVICE int mkc_slots_begin(mkc_state *st, int vocab, int max_ctx, int t_max, int t_chunk,
                               const int *table, mkc_rowmap *rm) {
  if (mkc_tid() == 0) {
    int rows = 0, active = 0, last = -1, chunk = 0;
    for (int s = 0; s < MKC_SLOT_N; s++) {
      mkc_state *q = st + s;
      int T = q->n_inputs;
      rm->first[s] = rows;
      rm->count[s] = 0;
      rm->spos[s] = q->pos;
      if (T == 0) continue;
      int status = mkc_inputs_status(q, vocab, max_ctx, t_max, t_chunk);
      if (status == MKC_STATUS_OK && (q->round_max > 1 || q->draft_left > 0))
        status = MKC_STATUS_BAD_INPUT; /* a slot kernel runs no rounds */
      if (status != MKC_STATUS_OK) {
        mkc_step_refused(q, status);
        continue;
      }
      rm->count[s] = T;
      rows += T;
      active++;
      last = s;
      chunk |= T > t_max;
    }
    rm->single = active == 1 ? last : -1;
    if (active > 1 && (chunk || rows > MKC_STEP_ROWS)) {
      for (int s = 0; s < MKC_SLOT_N; s++)
        if (rm->count[s] > 0) {
          rm->count[s] = 0;
          mkc_step_refused(st + s, MKC_STATUS_BAD_INPUT);
        }
      rows = 0;
    }
    /* the per-row map, with several slots (one slot's rows are its spos + t) */
    if (rm->single < 0)
      for (int s = 0; s < MKC_SLOT_N; s++)
        for (int t = 0; t < rm->count[s]; t++) {
          int r = rm->first[s] + t;
          rm->pos[r] = rm->spos[s] + t;
          rm->slot[r] = s;
          rm->tok[r] = st[s].inputs[t];
        }
    rm->rows = rows;
    rm->table = table;
  }
  mkc_sync_block(); /* the map is the block's */
  return rm->rows;
}
#line 1 "templates/weights.cuh"
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
#line 1 "templates/embed.cuh"
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
#line 1 "templates/matvec.cuh"
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
#line 1 "templates/norm.cuh"
/* A norm on a matmul's output before its residual add (Gemma's post-attention
 * and post-FFN norms): x[t][c] += o[t][c] / sqrt(mean(o[t]^2) + eps) * w[c]
 * for the step's T inputs. The mean needs every column of o, so each block
 * finds o[t]'s inverse RMS itself (mkc_rms_prologue: n floats, from cache
 * after the first block), then adds its share of the columns; inv_rms: 1
 * float and red: MKC_WARPS floats of smem. */
MKC_DEVICE void mkc_norm_residual(const float *o, int o_stride, const mkc_bf16 *w, int n, float eps,
                                  float *x, int x_stride, int T, float *inv_rms, float *red) {
  for (int t = 0; t < T; t++) {
    mkc_rms_prologue(o, o_stride, n, eps, t, t + 1, inv_rms, red);
    const float *ot = o + t * o_stride;
    for (int c = mkc_bid() * MKC_THREADS + mkc_tid(); c < n; c += mkc_nblocks() * MKC_THREADS)
      x[t * x_stride + c] += mkc_branch(ot[c] * inv_rms[0] * mkc_bf16_to_f32(w[c]));
  }
}
#line 1 "templates/qkv_rope.cuh"
/* Q, K and V projections with, in the epilogue, their biases, the per-head
 * Q/K RMSNorm, RoPE and the KV append. A warp owns pairs of rows: a rotation
 * pair of Q or K (interleaved: 2j, 2j+1 of a head; neox: j, j + head_dim/2),
 * or two adjacent rows of V. K and V for token t land in the cache at
 * position pos + t, row (pos + t) % kv_rows (kv_rows = max_ctx, or a sliding
 * window's ring), rounded to the cache's type; q goes to scratch. A null
 * bias or head norm is absent.
 *
 * A per-head norm needs the whole head before RoPE, and a head's pairs are
 * spread over the grid: each warp writes its pair raw (bias added) in float,
 * q in place, k to k_raw in scratch, and counts it in head_ready[head] (q
 * heads, then kv heads); the warp that completes a head normalizes and
 * rotates it (q in place, k into the cache) and sets the counter back to
 * zero for the next layer. No grid barrier, and every warp keeps a pair to
 * do. K waits in float so that it is rounded once, after the norm. */

/* RoPE as the model was trained with it: the base theta and, for a model
 * stretched past the context it was first trained on, the scaling
 * (docs/MODELS.md), made by one of the mkc_rope_* functions below. */
enum {
  MKC_ROPE_PLAIN,
  MKC_ROPE_LINEAR,
  MKC_ROPE_LLAMA3,
  MKC_ROPE_YARN,
  MKC_ROPE_LONGROPE,
  MKC_ROPE_NONE
};
typedef struct mkc_rope {
  float theta;
  int scaling;                             /* MKC_ROPE_PLAIN, ... */
  float factor;                            /* the context's extension factor */
  float low_freq_factor, high_freq_factor; /* llama3 */
  float orig_ctx;                          /* llama3, yarn: the context before the extension */
  float beta_fast, beta_slow;              /* yarn: the ramp's ends, in rotations */
  float ext_factor, attn_factor;           /* yarn; longrope: attn_factor */
  const float *factors;                    /* longrope: each pair's frequency divisor */
  int rot_dim; /* the dims rotated, the first ones (0: all); the others pass through */
} mkc_rope;

MKC_DEVICE mkc_rope mkc_rope_plain(float theta) {
  mkc_rope r = {theta, MKC_ROPE_PLAIN, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0, 0};
  return r;
}

/* A NoPE layer's (SmolLM3's every 4th): every pair's frequency 0, so q and k pass as they are. */
MKC_DEVICE mkc_rope mkc_rope_none(void) {
  mkc_rope r = mkc_rope_plain(1.0f);
  r.scaling = MKC_ROPE_NONE;
  return r;
}

/* Positions divided by factor. */
MKC_DEVICE mkc_rope mkc_rope_linear(float theta, float factor) {
  mkc_rope r = mkc_rope_plain(theta);
  r.scaling = MKC_ROPE_LINEAR;
  r.factor = factor;
  return r;
}

/* Llama 3.1+: frequencies whose wavelength is below orig_ctx / high_freq_factor
 * kept, above orig_ctx / low_freq_factor divided by factor, a smooth mix between. */
MKC_DEVICE mkc_rope mkc_rope_llama3(float theta, float factor, float low_freq_factor,
                                    float high_freq_factor, float orig_ctx) {
  mkc_rope r = mkc_rope_linear(theta, factor);
  r.scaling = MKC_ROPE_LLAMA3;
  r.low_freq_factor = low_freq_factor;
  r.high_freq_factor = high_freq_factor;
  r.orig_ctx = orig_ctx;
  return r;
}

/* YaRN as llama.cpp's ggml_rope_ext computes it: frequencies that turn more
 * than beta_fast times in orig_ctx kept, fewer than beta_slow divided by
 * factor, a linear ramp over the pairs between (times ext_factor); cos and
 * sin scaled by attn_factor * (1 + 0.1 ln factor). */
MKC_DEVICE mkc_rope mkc_rope_yarn(float theta, float factor, float orig_ctx, float beta_fast,
                                  float beta_slow, float ext_factor, float attn_factor) {
  mkc_rope r = mkc_rope_linear(theta, factor);
  r.scaling = MKC_ROPE_YARN;
  r.orig_ctx = orig_ctx;
  r.beta_fast = beta_fast;
  r.beta_slow = beta_slow;
  r.ext_factor = ext_factor;
  r.attn_factor = attn_factor;
  return r;
}

/* LongRoPE (Phi-3's 128k models): pair j's frequency divided by factors[j] (the model's short or
 * long list, the kernel's table), cos and sin scaled by attn_factor. */
MKC_DEVICE mkc_rope mkc_rope_longrope(float theta, float attn_factor, const float *factors) {
  mkc_rope r = mkc_rope_plain(theta);
  r.scaling = MKC_ROPE_LONGROPE;
  r.attn_factor = attn_factor;
  r.factors = factors;
  return r;
}

/* Partial RoPE (Phi-4-mini, GPT-NeoX): r over the first rot_dim dims of a head, each frequency
 * theta^(-2j / rot_dim); the dims past them are not rotated. */
MKC_DEVICE mkc_rope mkc_rope_partial(mkc_rope r, int rot_dim) {
  r.rot_dim = rot_dim;
  return r;
}

/* A head's rotation pair j as its two dims: neox (rotate-half) j, j + rot_dim / 2, interleaved
 * 2j, 2j + 1; past the rotated dims, 2j, 2j + 1 in either layout. */
MKC_DEVICE int mkc_rope_dim0(int j, int head_dim, int layout, mkc_rope r) {
  int rot = r.rot_dim ? r.rot_dim : head_dim;
  return layout && 2 * j < rot ? j : 2 * j;
}
MKC_DEVICE int mkc_rope_dim1(int j, int head_dim, int layout, mkc_rope r) {
  int rot = r.rot_dim ? r.rot_dim : head_dim;
  return layout && 2 * j < rot ? j + rot / 2 : 2 * j + 1;
}

/* The pair whose frequency turns `rotations` times in orig_ctx positions (dims: the rotated). */
MKC_DEVICE float mkc_rope_yarn_dim(float rotations, int head_dim, mkc_rope r) {
  return (float)head_dim * logf(r.orig_ctx / (rotations * 6.28318531f)) / (2.0f * logf(r.theta));
}

/* Pair j's frequency, radians per position, and in *mscale the factor on cos
 * and sin (1 but for YaRN and LongRoPE). Computed here from the parameters, per pair.
 * A pair past the rotated dims gets 0 and 1: mkc_rope_pair leaves it as it is. */
MKC_DEVICE float mkc_rope_inv_freq(int j, int head_dim, mkc_rope r, float *mscale) {
  *mscale = 1.0f;
  if (r.scaling == MKC_ROPE_NONE) return 0.0f;
  if (r.rot_dim) {
    if (2 * j >= r.rot_dim) return 0.0f;
    head_dim = r.rot_dim;
  }
  float freq = powf(r.theta, -(float)(2 * j) / (float)head_dim);
  if (r.scaling == MKC_ROPE_LINEAR) return freq / r.factor;
  if (r.scaling == MKC_ROPE_LLAMA3) {
    float wavelen = 6.28318531f / freq;
    if (wavelen < r.orig_ctx / r.high_freq_factor) return freq;
    if (wavelen > r.orig_ctx / r.low_freq_factor) return freq / r.factor;
    float smooth =
        (r.orig_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    return (1.0f - smooth) * freq / r.factor + smooth * freq;
  }
  if (r.scaling == MKC_ROPE_YARN) {
    float lo = fmaxf(0.0f, floorf(mkc_rope_yarn_dim(r.beta_fast, head_dim, r)));
    float hi = fminf((float)(head_dim - 1), ceilf(mkc_rope_yarn_dim(r.beta_slow, head_dim, r)));
    float ramp = 1.0f - fminf(1.0f, fmaxf(0.0f, ((float)j - lo) / fmaxf(0.001f, hi - lo)));
    float kept = ramp * r.ext_factor; /* the share of the unscaled frequency */
    *mscale = r.ext_factor != 0.0f ? r.attn_factor * (1.0f + 0.1f * logf(r.factor)) : r.attn_factor;
    return freq / r.factor * (1.0f - kept) + freq * kept;
  }
  if (r.scaling == MKC_ROPE_LONGROPE) {
    *mscale = r.attn_factor;
    return freq / r.factors[j];
  }
  return freq;
}

/* Rotates (a, b), a rotation pair with frequency inv_freq, to position at,
 * scaled by mscale. */
MKC_DEVICE void mkc_rope_pair(float *a, float *b, float inv_freq, float mscale, int at) {
  /* the angle in turns, whole turns taken off in double (at * inv_freq is exact there),
   * then sine and cosine of what is left in half-turns: more exact than sinf of the
   * float product, and no large-argument path (sinf's keeps a local array) */
  double turns = (double)at * (double)inv_freq * 0.15915494309189533577;
  float half_turns = (float)(2.0 * (turns - rint(turns))), s, c;
  mkc_sincospif(half_turns, &s, &c);
  c *= mscale;
  s *= mscale;
  float ra = *a * c - *b * s, rb = *a * s + *b * c;
  *a = ra;
  *b = rb;
}

/* RMSNorm of one head's T rows (token t's row at head + t * t_stride), scaled
 * by norm_w, then RoPE at pos + t; written in place, or, with kv_out, to the
 * cache (token t's row at row (pos + t) % kv_rows of kv_out). The whole warp:
 * lanes over the elements for the sum of squares, then over the rotation
 * pairs. */
MKC_DEVICE void mkc_head_norm_rope(float *head, int t_stride, mkc_kv *kv_out, int kv_rows,
                                   int head_dim, int layout, mkc_rope rotary,
                                   const mkc_bf16 *norm_w, float eps, int pos, int T,
                                   const mkc_rowmap *rows) {
  int half = head_dim / 2;
  for (int t = 0; t < T; t++) {
    float *row = head + (long)t * t_stride;
    float ss = 0.0f;
    for (int i = mkc_lane(); i < head_dim; i += 32) ss += row[i] * row[i];
    /* the sum is a warp exchange: every lane has read the row before any lane writes it */
    float inv_rms = 1.0f / sqrtf(mkc_warp_sum(ss) / (float)head_dim + eps);
    for (int j = mkc_lane(); j < half; j += 32) {
      int i0 = mkc_rope_dim0(j, head_dim, layout, rotary);
      int i1 = mkc_rope_dim1(j, head_dim, layout, rotary);
      float a = row[i0] * inv_rms * mkc_bf16_to_f32(norm_w[i0]);
      float b = row[i1] * inv_rms * mkc_bf16_to_f32(norm_w[i1]);
      float mscale, inv_freq = mkc_rope_inv_freq(j, head_dim, rotary, &mscale);
      int at = mkc_row_pos(rows, pos, t);
      mkc_rope_pair(&a, &b, inv_freq, mscale, at);
      if (kv_out) {
        long kv_at = mkc_kv_at(rows, t, at, kv_rows, head_dim);
        kv_out[kv_at + i0] = mkc_kv_from_f32(a);
        kv_out[kv_at + i1] = mkc_kv_from_f32(b);
      } else {
        row[i0] = a;
        row[i1] = b;
      }
    }
  }
}

/* Pair p of the stage (q pairs, then k's, then v's): its matrix, bias and
 * head norm, its head h and j-th pair in the head, its two rows. */
typedef struct mkc_qkv_pair {
  mkc_wmat w;
  const mkc_bf16 *bias, *head_w;
  int kind; /* 0 q, 1 k, 2 v: v is not rotated */
  int h, j, i0, i1, r0, r1;
} mkc_qkv_pair;

MKC_DEVICE mkc_qkv_pair mkc_qkv_pair_at(int p, mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v,
                                        const mkc_bf16 *b_q, const mkc_bf16 *b_k,
                                        const mkc_bf16 *b_v, const mkc_bf16 *q_norm_w,
                                        const mkc_bf16 *k_norm_w, int q_pairs, int kv_pairs,
                                        int head_dim, int layout, mkc_rope rotary) {
  mkc_qkv_pair q;
  int half = head_dim / 2, pair = p;
  q.w = w_q;
  q.bias = b_q;
  q.head_w = q_norm_w;
  q.kind = 0;
  if (p >= q_pairs + kv_pairs) {
    q.w = w_v;
    q.bias = b_v;
    q.head_w = 0;
    q.kind = 2;
    pair = p - q_pairs - kv_pairs;
  } else if (p >= q_pairs) {
    q.w = w_k;
    q.bias = b_k;
    q.head_w = k_norm_w;
    q.kind = 1;
    pair = p - q_pairs;
  }
  q.h = pair / half;
  q.j = pair - q.h * half;
  q.i0 = q.kind != 2 ? mkc_rope_dim0(q.j, head_dim, layout, rotary) : 2 * q.j;
  q.i1 = q.kind != 2 ? mkc_rope_dim1(q.j, head_dim, layout, rotary) : 2 * q.j + 1;
  q.r0 = q.h * head_dim + q.i0;
  q.r1 = q.h * head_dim + q.i1;
  return q;
}

/* Input t's pair (ra, rb) of q, biases added: rotated to its position
 * (unless it is v's or its head norm waits) and stored, in float at head
 * (rows t_stride apart) or else in the cache. */
MKC_DEVICE void mkc_qkv_store(mkc_qkv_pair q, float ra, float rb, float inv_freq, float mscale,
                              int t, int pos, const mkc_rowmap *rows, float *head, int t_stride,
                              mkc_kv *cache, int kv_rows, int head_dim) {
  int at = mkc_row_pos(rows, pos, t);
  if (q.kind != 2 && !q.head_w) mkc_rope_pair(&ra, &rb, inv_freq, mscale, at);
  if (head) {
    head[(long)t * t_stride + q.i0] = ra;
    head[(long)t * t_stride + q.i1] = rb;
  } else {
    long kv_at = mkc_kv_at(rows, t, at, kv_rows, head_dim);
    cache[kv_at + q.i0] = mkc_kv_from_f32(ra);
    cache[kv_at + q.i1] = mkc_kv_from_f32(rb);
  }
}

/* A warp takes MKC_QKV_PAIRS pairs at once (MKC_ROWS rows, as a matvec does):
 * their chunks load together and reduce in one warp sum. Where it pays (few
 * pairs for the grid), a block takes them, its warps split the columns
 * (mkc_split_dot; part: its smem) and warp 0 finishes the pairs. */
#define MKC_QKV_PAIRS (MKC_ROWS / 2)

/* Task t of n_pairs: a warp's MKC_QKV_PAIRS from t * MKC_QKV_PAIRS, or where it splits a
 * block's (mkc_split_task). Its first pair into *p0, and how many (0: none, nor later). */
MKC_DEVICE int mkc_qkv_task(int n_pairs, int split, int t, int *p0) {
  if (split) return mkc_split_task(n_pairs, MKC_QKV_PAIRS, t, p0);
  *p0 = t * MKC_QKV_PAIRS;
  int n = n_pairs - *p0;
  return n < MKC_QKV_PAIRS ? (n > 0 ? n : 0) : MKC_QKV_PAIRS;
}

#if MKC_MMA_DECODE
/* mkc_qkv_rope on tensor cores (templates/matvec.cuh) where all three
 * matrices are bf16: a warp takes 4 pairs as one n-tile, pair k's rows at 2k
 * and 2k + 1, so lane (g, q) holds pair q of input 8m + g whole, and rotates
 * and stores it itself. With head norms the raw pair is stored instead, lane
 * (0, q) counts pair q, and the warp finishes each head whose last pair it
 * counted (mkc_head_norm_rope). */
MKC_DEVICE void mkc_qkv_rope_mma(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q,
                                 const mkc_bf16 *b_k, const mkc_bf16 *b_v, int n_chunks, int heads,
                                 int kv_heads, int head_dim, int layout, mkc_rope rotary,
                                 const float *x, int x_stride, const mkc_bf16 *norm_w,
                                 const float *inv_rms, const mkc_bf16 *q_norm_w,
                                 const mkc_bf16 *k_norm_w, float head_eps, unsigned *head_ready,
                                 float *q_out, int q_stride, float *k_raw, int k_raw_stride,
                                 mkc_kv *k_cache, mkc_kv *v_cache, int kv_rows, int pos, int T,
                                 const mkc_rowmap *rows, float *splitk) {
  int half = head_dim / 2, q_pairs = heads * half, kv_pairs = kv_heads * half;
  int n_pairs = q_pairs + 2 * kv_pairs, S = mkc_splitk_of((n_pairs + 3) / 4, splitk);
  int g = mkc_lane() >> 2, qd = mkc_lane() & 3;
  /* a task: a warp's 4 pairs, or slice t % S of group t / S (split-K, templates/matvec.cuh) */
  int tasks = S > 1 ? (n_pairs + 3) / 4 * S : n_pairs, each = S > 1 ? 1 : 4;
  int step = mkc_grid_warps() * each;
  for (int t0 = mkc_grid_warp() * each; t0 < tasks; t0 += step) {
    int p0 = S > 1 ? t0 / S * 4 : t0, pn0 = S > 1 ? (t0 + step) / S * 4 : t0 + step;
    mkc_wrow wr[8], next[8];
    for (int k = 0; k < 4; k++) {
      int p = p0 + k, pn = pn0 + k; /* pn: the pair this warp takes next in place of p */
      wr[2 * k] = wr[2 * k + 1] = next[2 * k] = next[2 * k + 1] = mkc_wrow_none();
      if (p < n_pairs) {
        mkc_qkv_pair pq = mkc_qkv_pair_at(p, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        wr[2 * k] = mkc_wmat_row(pq.w, pq.r0);
        wr[2 * k + 1] = mkc_wmat_row(pq.w, pq.r1);
      }
      if (pn < n_pairs) {
        mkc_qkv_pair nq = mkc_qkv_pair_at(pn, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        next[2 * k] = mkc_wmat_row(nq.w, nq.r0);
        next[2 * k + 1] = mkc_wmat_row(nq.w, nq.r1);
      }
    }
    float o[MKC_MV_MT * 2];
    if (!mkc_mma_task(wr, next, 1, n_chunks, x, x_stride, norm_w, T, S, 0, t0, t0 + step, 0, splitk,
                      o))
      continue;
    int valid = p0 + qd < n_pairs;
    mkc_qkv_pair q = mkc_qkv_pair_at(valid ? p0 + qd : 0, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w,
                                     k_norm_w, q_pairs, kv_pairs, head_dim, layout, rotary);
    /* q in float in scratch (raw where its norm waits, as a k waiting for its norm); else k and v
     * in the cache ([kv_head][kv_rows][head_dim]) */
    mkc_kv *cache = q.kind ? (q.kind == 1 ? k_cache : v_cache) + (long)q.h * kv_rows * head_dim : 0;
    float *head = q.kind == 0 ? q_out + q.h * head_dim : q.head_w ? k_raw + q.h * head_dim : 0;
    int t_stride = q.kind == 0 ? q_stride : k_raw_stride;
    float bias0 = q.bias ? mkc_bf16_to_f32(q.bias[q.r0]) : 0.0f;
    float bias1 = q.bias ? mkc_bf16_to_f32(q.bias[q.r1]) : 0.0f;
    float mscale = 1.0f;
    float inv_freq =
        q.kind != 2 && !q.head_w ? mkc_rope_inv_freq(q.j, head_dim, rotary, &mscale) : 0.0f;
    for (int m = 0; m < MKC_MV_MT; m++) { /* compile-time bounds: o stays in registers */
      int t = 8 * m + g;
      if (!valid || t >= T) continue;
      float ra = (norm_w ? o[m * 2] * inv_rms[t] : o[m * 2]) + bias0;
      float rb = (norm_w ? o[m * 2 + 1] * inv_rms[t] : o[m * 2 + 1]) + bias1;
      mkc_qkv_store(q, ra, rb, inv_freq, mscale, t, pos, rows, head, t_stride, cache, kv_rows,
                    head_dim);
    }
    if (!q_norm_w && !k_norm_w) continue;
    /* head norms: count each pair; a head's last pair finishes it */
    mkc_sync_warp(); /* every input's part of the pairs written before they are released */
    int last = 0;
    if (g == 0 && valid && q.head_w) {
      unsigned *ready = head_ready + (q.kind == 0 ? q.h : heads + q.h);
      mkc_fence(); /* release: the pair is visible before it is counted */
      last = mkc_atomic_add_u32(ready, 1u) + 1u == (unsigned)half;
      if (last) {
        mkc_fence(); /* acquire: the head's other pairs, counted before ours */
        mkc_store_u32(ready, 0u);
      }
    }
    /* a shuffle orders nothing: the counting lanes' acquire comes before the others read */
    mkc_sync_warp();
    for (int k = 0; k < 4; k++) {
      if (!mkc_warp_or(last && qd == k)) continue;
      mkc_qkv_pair f = mkc_qkv_pair_at(p0 + k, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                       q_pairs, kv_pairs, head_dim, layout, rotary);
      mkc_kv *f_cache = f.kind ? k_cache + (long)f.h * kv_rows * head_dim : 0;
      float *f_head = f.kind == 0 ? q_out + f.h * head_dim : k_raw + f.h * head_dim;
      mkc_head_norm_rope(f_head, f.kind == 0 ? q_stride : k_raw_stride, f_cache, kv_rows, head_dim,
                         layout, rotary, f.head_w, head_eps, pos, T, rows);
    }
  }
}
#endif

MKC_DEVICE void mkc_qkv_rope(mkc_wmat w_q, mkc_wmat w_k, mkc_wmat w_v, const mkc_bf16 *b_q,
                             const mkc_bf16 *b_k, const mkc_bf16 *b_v, int n_chunks, int heads,
                             int kv_heads, int head_dim, int layout, mkc_rope rotary,
                             const float *x, int x_stride, const mkc_bf16 *norm_w, float *inv_rms,
                             int n_x, float eps, float *red, const mkc_bf16 *q_norm_w,
                             const mkc_bf16 *k_norm_w, float head_eps, unsigned *head_ready,
                             float *q_out, int q_stride, float *k_raw, int k_raw_stride,
                             mkc_kv *k_cache, mkc_kv *v_cache, int kv_rows, int pos, int T,
                             const mkc_rowmap *rows, float *part, float *splitk) {
  int half = head_dim / 2, q_pairs = heads * half, kv_pairs = kv_heads * half;
  /* per-head norms (qwen3) keep the warp path: split, their kernel spilled at T = 8 */
  int n_pairs = q_pairs + 2 * kv_pairs;
  int mma =
      MKC_MMA_DECODE && w_q.type == MKC_W_BF16 && w_k.type == MKC_W_BF16 && w_v.type == MKC_W_BF16;
  int split = !mma && !q_norm_w && !k_norm_w && mkc_split_pays(2 * n_pairs);
  mkc_norm_first(x, x_stride, norm_w, n_x, eps, T, inv_rms, red, split);
#if MKC_MMA_DECODE
  if (mma) {
    mkc_qkv_rope_mma(w_q, w_k, w_v, b_q, b_k, b_v, n_chunks, heads, kv_heads, head_dim, layout,
                     rotary, x, x_stride, norm_w, inv_rms, q_norm_w, k_norm_w, head_eps, head_ready,
                     q_out, q_stride, k_raw, k_raw_stride, k_cache, v_cache, kv_rows, pos, T, rows,
                     splitk);
    return;
  }
#endif
  (void)splitk;
  /* task t: a warp's MKC_QKV_PAIRS pairs from t * MKC_QKV_PAIRS, or a block's (mkc_split_task) */
  int tasks = split ? mkc_nblocks() : mkc_grid_warps(), t0 = split ? mkc_bid() : mkc_grid_warp();
  int p0, pn0, n = mkc_qkv_task(n_pairs, split, t0, &p0);
  float ab[2 * MKC_QKV_PAIRS * MKC_T_MAX]; /* the pairs' rows: pair k's at 2k and 2k + 1 */
  for (int task = t0, nn; n > 0; task += tasks, p0 = pn0, n = nn) {
    nn = mkc_qkv_task(n_pairs, split, task + tasks, &pn0);
    mkc_qkv_pair pr[MKC_QKV_PAIRS];
    mkc_wrow wr[2 * MKC_QKV_PAIRS], next[2 * MKC_QKV_PAIRS];
    int lane0 = !q_norm_w && !k_norm_w; /* without head norms only lane 0 writes */
    /* the CPU: the sums another lane made, and no rows to build */
    int made = !split && mkc_dot_rows_ready(2 * MKC_QKV_PAIRS, norm_w, inv_rms, T, ab, lane0);
#ifdef MKC_CPU
    if (made && lane0 && mkc_lane() != 0) continue; /* nor anything to write */
#endif
    for (int k = 0; k < MKC_QKV_PAIRS; k++) {
      int p = p0 + k; /* pn0 + k: the pair this warp takes next in place of p */
      pr[k] = mkc_qkv_pair_at(k < n ? p : 0, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                              q_pairs, kv_pairs, head_dim, layout, rotary);
      if (made) continue;
      wr[2 * k] = k < n ? mkc_wmat_row(pr[k].w, pr[k].r0) : mkc_wrow_none_of(pr[k].w.type);
      wr[2 * k + 1] = k < n ? mkc_wmat_row(pr[k].w, pr[k].r1) : mkc_wrow_none_of(pr[k].w.type);
      next[2 * k] = mkc_wrow_none(); /* each its own (a copy of the other stalled the CPU) */
      next[2 * k + 1] = mkc_wrow_none();
      if (k < nn) {
        mkc_qkv_pair nq = mkc_qkv_pair_at(pn0 + k, w_q, w_k, w_v, b_q, b_k, b_v, q_norm_w, k_norm_w,
                                          q_pairs, kv_pairs, head_dim, layout, rotary);
        next[2 * k] = mkc_wmat_row(nq.w, nq.r0);
        next[2 * k + 1] = mkc_wmat_row(nq.w, nq.r1);
      }
    }
    if (split) {
      mkc_split_dot(wr, next, 2 * MKC_QKV_PAIRS, n_chunks, x, x_stride, norm_w, n_x, eps, T, part,
                    ab);
      if (mkc_warp() != 0) continue; /* warp 0 finishes the block's pairs */
      const float *sums = part + MKC_WARPS * 2 * MKC_QKV_PAIRS * MKC_T_MAX;
      for (int i = 0; i < 2 * MKC_QKV_PAIRS * MKC_T_MAX; i++) ab[i] = sums[i];
    } else if (!made) {
      mkc_dot_rows(wr, next, 2 * MKC_QKV_PAIRS, n_chunks, x, x_stride, norm_w, inv_rms, T, ab);
    }
    for (int k = 0; k < MKC_QKV_PAIRS; k++) {
      if (k >= n) break;
      mkc_qkv_pair q = pr[k];
      const float *ra_t = ab + 2 * k * MKC_T_MAX, *rb_t = ab + (2 * k + 1) * MKC_T_MAX;
      /* token 0's row of the head: in float, q (and a k waiting for its norm) in scratch;
       * else the head of k, v in the cache ([kv_head][kv_rows][head_dim]) */
      mkc_kv *cache = 0;
      if (q.kind) cache = (q.kind == 1 ? k_cache : v_cache) + (long)q.h * kv_rows * head_dim;
      float *head = q.kind == 0 ? q_out + q.h * head_dim : q.head_w ? k_raw + q.h * head_dim : 0;
      int t_stride = q.kind == 0 ? q_stride : k_raw_stride;
      if (mkc_lane() == 0) {
        float bias0 = q.bias ? mkc_bf16_to_f32(q.bias[q.r0]) : 0.0f;
        float bias1 = q.bias ? mkc_bf16_to_f32(q.bias[q.r1]) : 0.0f;
        float mscale = 1.0f;
        float inv_freq =
            q.kind != 2 && !q.head_w ? mkc_rope_inv_freq(q.j, head_dim, rotary, &mscale) : 0.0f;
        for (int t = 0; t < MKC_T_MAX; t++) {
          if (t >= T) break;
          float ra = ra_t[t] + bias0, rb = rb_t[t] + bias1;
          mkc_qkv_store(q, ra, rb, inv_freq, mscale, t, pos, rows, head, t_stride, cache, kv_rows,
                        head_dim);
        }
      }
      if (!q.head_w) continue;
      /* per-head norm: the raw pair is out; count it, and the head's last pair finishes it */
      mkc_sync_warp(); /* every lane's part of the pair, ordered before lane 0's release */
      int last = 0;
      if (mkc_lane() == 0) {
        unsigned *ready = head_ready + (q.kind == 0 ? q.h : heads + q.h);
        mkc_fence(); /* release: the pair is visible before it is counted */
        last = mkc_atomic_add_u32(ready, 1u) + 1u == (unsigned)half;
        if (last) {
          mkc_fence(); /* acquire: the other warps' pairs, counted before ours */
          mkc_store_u32(ready, 0u);
        }
      }
      /* A shuffle orders nothing: the warp synchronizes so lane 0's acquire comes before
       * the other lanes read what the other warps wrote. */
      mkc_sync_warp();
      if (!mkc_warp_or(last)) continue;
      mkc_head_norm_rope(head, t_stride, cache, kv_rows, head_dim, layout, rotary, q.head_w,
                         head_eps, pos, T, rows);
    }
  }
}
#line 1 "templates/gemm.cuh"
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
#line 1 "templates/gemm_attn.cuh"
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
#line 1 "templates/attention.cuh"
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
#line 1 "templates/lm_head.cuh"
#if MKC_MMA_DECODE
/* The LM head's rows 8 a warp with mkc_mma_rows: lane (g, q) writes its
 * logits and keeps its best row for inputs g, g + 8, ...; the 4 lanes of an
 * input then pick the best of theirs (the order is total: the value, then the
 * lower row), and lane q = 0 writes the warp's into warp_val and warp_idx. */
MKC_DEVICE void mkc_lm_head_mma(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                                const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                                int logits_stride, int t0, int T, const mkc_state *st,
                                const mkc_rowmap *rmap, float *warp_val, int *warp_idx) {
  int g = mkc_lane() >> 2, q = mkc_lane() & 3, step = mkc_grid_warps() * 8;
  const int biased = mkc_step_logit_biased(st, rmap); /* else no row looks its bias up */
  float best_v[MKC_MV_MT];
  int best_i[MKC_MV_MT];
  for (int m = 0; m < MKC_MV_MT; m++) {
    best_v[m] = MKC_NEG_MAX;
    best_i[m] = 0x7fffffff;
  }
  for (int r0 = mkc_grid_warp() * 8; r0 < rows; r0 += step) {
    mkc_wrow wr[8], next[8];
    float o[MKC_MV_MT * 2];
    mkc_mma_row_block(w, rows, r0, wr);
    mkc_mma_row_block(w, rows, r0 + step, next);
    mkc_mma_rows(wr, next, 1, n_chunks, x, x_stride, norm_w, T, o);
    float bias[2]; /* a plain kernel's inputs are one request's: the lane's two rows' biases */
    for (int e = 0; e < 2; e++)
      bias[e] = biased && MKC_SLOTS == 0 ? mkc_row_logit_bias(st, rmap, t0, r0 + 2 * q + e) : 0.0f;
    for (int m = 0; m < MKC_MV_MT; m++) /* compile-time bounds: o stays in registers */
      for (int e = 0; e < 2; e++) {
        int t = 8 * m + g, r = r0 + 2 * q + e;
        if (t >= T || r >= rows) continue;
        float v = mkc_logit(norm_w ? o[m * 2 + e] * inv_rms[t] : o[m * 2 + e]) +
                  (biased && MKC_SLOTS > 0 ? mkc_row_logit_bias(st, rmap, t0 + t, r) : bias[e]);
        logits[t * logits_stride + r] = v;
        if (mkc_better(v, r, best_v[m], best_i[m])) {
          best_v[m] = v;
          best_i[m] = r;
        }
      }
  }
  for (int m = 0; m < MKC_MV_MT; m++) {
    for (int mask = 1; mask <= 2; mask <<= 1) {
      float v = mkc_shfl_xor(best_v[m], mask);
      int i = mkc_shfl_xor_int(best_i[m], mask);
      if (mkc_better(v, i, best_v[m], best_i[m])) {
        best_v[m] = v;
        best_i[m] = i;
      }
    }
    int t = 8 * m + g;
    if (q == 0 && t < T) {
      warp_val[mkc_warp() * MKC_T_MAX + t] = best_v[m];
      warp_idx[mkc_warp() * MKC_T_MAX + t] = best_i[m];
    }
  }
}
#endif

/* LM head with the greedy choice fused in: each warp keeps its best (logit,
 * row) per token while it writes logits, the block reduces its warps, and
 * per-block partials ([block][MKC_STEP_ROWS]) go to scratch for mkc_accept.
 * Ties go to the lower id. Each logit has its row's request's logit bias
 * added (mkc_row_logit_bias: st, the state or the slots' states; rmap, a slot
 * kernel's row map, else 0) before it is written or ranked.
 * Only inputs t0 .. T - 1 (a prompt chunk: its last) get logits, at rows
 * t - t0 of logits and of the partials. */
/* The warps' best rows on CUDA cores: MKC_ROWS rows a warp (mkc_dot_row_block),
 * every lane with every row's logit; lane 0 writes logits and the warp's best. */
MKC_DEVICE void mkc_lm_head_cores(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                                  const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                                  int logits_stride, int t0, int T, const mkc_state *st,
                                  const mkc_rowmap *rmap, float *warp_val, int *warp_idx) {
  float acc[MKC_ROWS * MKC_T_MAX], best_v[MKC_T_MAX];
  int best_i[MKC_T_MAX];
  for (int t = 0; t < MKC_T_MAX; t++) {
    best_v[t] = MKC_NEG_MAX;
    best_i[t] = 0x7fffffff;
  }
  int step = mkc_grid_warps() * MKC_ROWS;
  const int biased = mkc_step_logit_biased(st, rmap); /* else no row looks its bias up */
  for (int r0 = mkc_grid_warp() * MKC_ROWS; r0 < rows; r0 += step) {
    mkc_dot_row_block(w, rows, r0, step, n_chunks, x, x_stride, norm_w, inv_rms, T, acc);
    for (int r = 0; r < MKC_ROWS; r++) { /* compile-time bounds: acc stays in registers */
      /* a plain kernel's inputs are one request's: its bias, looked up once a row */
      float bias = biased && MKC_SLOTS == 0 ? mkc_row_logit_bias(st, rmap, t0, r0 + r) : 0.0f;
      for (int t = 0; t < MKC_T_MAX; t++) {
        if (r0 + r >= rows || t >= T) break;
#ifdef MKC_CPU
        if (mkc_lane() != 0) continue; /* lanes run one by one here: only lane 0's choice is kept */
#endif
        float v = mkc_logit(acc[r * MKC_T_MAX + t]) +
                  (biased && MKC_SLOTS > 0 ? mkc_row_logit_bias(st, rmap, t0 + t, r0 + r) : bias);
        if (mkc_lane() == 0) logits[t * logits_stride + r0 + r] = v;
        if (mkc_better(v, r0 + r, best_v[t], best_i[t])) {
          best_v[t] = v;
          best_i[t] = r0 + r;
        }
      }
    }
  }
  if (mkc_lane() == 0)
    for (int t = 0; t < MKC_T_MAX; t++) {
      if (t >= T) break;
      warp_val[mkc_warp() * MKC_T_MAX + t] = best_v[t];
      warp_idx[mkc_warp() * MKC_T_MAX + t] = best_i[t];
    }
}

MKC_DEVICE void mkc_lm_head(mkc_wmat w, int rows, int n_chunks, const float *x, int x_stride,
                            const mkc_bf16 *norm_w, const float *inv_rms, float *logits,
                            int logits_stride, int t0, int T, const mkc_state *st,
                            const mkc_rowmap *rmap, float *part_val, int *part_idx, float *warp_val,
                            int *warp_idx) {
  x += (long)t0 * x_stride;
  T -= t0;
#if MKC_MMA_DECODE
  if (w.type == MKC_W_BF16) /* 8 rows a warp on tensor cores (templates/matvec.cuh) */
    mkc_lm_head_mma(w, rows, n_chunks, x, x_stride, norm_w, inv_rms, logits, logits_stride, t0, T,
                    st, rmap, warp_val, warp_idx);
  else
#endif
    mkc_lm_head_cores(w, rows, n_chunks, x, x_stride, norm_w, inv_rms, logits, logits_stride, t0, T,
                      st, rmap, warp_val, warp_idx);
  mkc_sync_block();
  for (int t = mkc_tid(); t < T; t += MKC_THREADS) {
    float v = MKC_NEG_MAX;
    int i = 0x7fffffff;
    for (int wp = 0; wp < MKC_WARPS; wp++)
      if (mkc_better(warp_val[wp * MKC_T_MAX + t], warp_idx[wp * MKC_T_MAX + t], v, i)) {
        v = warp_val[wp * MKC_T_MAX + t];
        i = warp_idx[wp * MKC_T_MAX + t];
      }
    part_val[mkc_bid() * MKC_STEP_ROWS + t] = v;
    part_idx[mkc_bid() * MKC_STEP_ROWS + t] = i;
  }
}
#line 1 "templates/sample.cuh"
/* Sampling in the step (issue 14), after the LM head: for each input
 * position t one block turns the raw logits into the distribution p_t that
 * the options ask for — penalties over the last repeat_last_n tokens (the
 * step's earlier inputs included, as if appended), top-k, top-p, min-p on
 * the untempered softmax, then temperature: llama.cpp's chain order — and
 * draws from it with a counter-based generator, so a token depends only on
 * (seed, position, purpose) and nothing is saved between steps. No sort: each
 * cut is a threshold found by bisection over the logits' ordered bit
 * patterns, every probe a block-wide count or mass.
 *
 * Per position t the block writes: the token drawn from p_t, p_t(draft) for
 * the draft that follows input t, and a token drawn from the residual
 * norm(max(0, p_t - q)) where q is the point mass on that draft. mkc_accept
 * then keeps a draft with probability p_t(draft) and otherwise emits the
 * residual token: speculative sampling, lossless for point-mass drafts. */

/* The repeat penalty, 1 (none) for the all-zero options a fresh or reset
 * state holds: zero options are plain greedy decoding. */
MKC_DEVICE float mkc_repeat_penalty(const mkc_sampling *o) {
  return o->repeat_penalty > 0.0f ? o->repeat_penalty : 1.0f;
}

/* Whether the step samples rather than takes the plain argmax: a
 * temperature, or penalties (which greedy decoding applies too, as llama.cpp's
 * does: then the choice is the argmax of the penalized logits), or
 * log-probabilities (MKC_SAMPLING_ON, mkc_state.h). */
MKC_DEVICE int mkc_sampling_on(const mkc_sampling *o) { return MKC_SAMPLING_ON(o); }

/* What to draw a uniform for: one stream each, so they are independent. */
#define MKC_DRAW_SAMPLE 0u
#define MKC_DRAW_ACCEPT 1u
#define MKC_DRAW_RESIDUAL 2u

/* Philox4x32-10 (Salmon et al., SC'11): ten rounds of two 32x32->64-bit
 * multiplies over a 128-bit counter, the 64-bit key bumped by the Weyl
 * constants between rounds. By value: the counter stays in registers. */
MKC_DEVICE mkc_u4 mkc_philox4x32(mkc_u4 c, unsigned k0, unsigned k1) {
  for (int r = 0; r < 10; r++) {
    unsigned long long p0 = (unsigned long long)0xD2511F53u * c.x;
    unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c.z;
    mkc_u4 n;
    n.x = (unsigned)(p1 >> 32) ^ c.y ^ k0;
    n.y = (unsigned)p1;
    n.z = (unsigned)(p0 >> 32) ^ c.w ^ k1;
    n.w = (unsigned)p0;
    c = n;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/* A uniform in [0, 1) with 24 random bits, for the token at `position`. */
MKC_DEVICE float mkc_uniform(const mkc_sampling *o, unsigned position, unsigned purpose) {
  mkc_u4 c;
  c.x = position;
  c.y = purpose;
  c.z = 0u;
  c.w = 0u;
  c = mkc_philox4x32(c, o->seed_lo, o->seed_hi);
  return (float)(c.x >> 8) * (1.0f / 16777216.0f);
}

/* The float's order as an unsigned: a < b exactly when key(a) < key(b). */
MKC_DEVICE unsigned mkc_order_key(float f) {
  unsigned u = mkc_f32_bits(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* A token cut by top-k, top-p or min-p: exp of it is 0. */
#define MKC_CUT MKC_NEG_MAX

/* The token at absolute position q: the step's inputs from pos on, the
 * history (every position's token, written by mkc_accept) before. */
MKC_DEVICE int mkc_token_at(const mkc_state *st, const int *history, int pos, int q) {
  return q >= pos ? st->inputs[q - pos] : history[q];
}

/* Penalties for the token after input t: the window is the last
 * repeat_last_n tokens up to and including input t; each distinct token in
 * it is penalized once, with its count. Only tokens in [lo, hi) (a block's
 * slice of the vocabulary, mkc_sample_cands) are touched. */
MKC_DEVICE void mkc_penalize(const mkc_sampling *o, const mkc_state *st, const int *history,
                             int pos, int t, float *work, int lo, int hi) {
  int last = pos + t, n = o->repeat_last_n < last + 1 ? o->repeat_last_n : last + 1;
  if (n > MKC_HIST_CAP) n = MKC_HIST_CAP; /* the host checks; the kernel stays in bounds */
  float rp = mkc_repeat_penalty(o);
  if (rp == 1.0f && o->presence_penalty == 0.0f && o->frequency_penalty == 0.0f) return;
  for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
    int tok = mkc_token_at(st, history, pos, last - j), first = 1, count = 0;
    if (tok < lo || tok >= hi) continue;
    for (int i = 0; i < n; i++) {
      int other = mkc_token_at(st, history, pos, last - i);
      if (other != tok) continue;
      count++;
      if (i < j) first = 0; /* a nearer copy applies it */
    }
    if (!first) continue;
    float l = work[tok];
    l = l <= 0.0f ? l * rp : l / rp;
    work[tok] = l - (float)count * o->frequency_penalty - o->presence_penalty;
  }
  mkc_sync_block();
}

/* This thread's contiguous share of [0, n). */
MKC_DEVICE void mkc_share(int n, int *lo, int *hi) {
  int per = (n + MKC_THREADS - 1) / MKC_THREADS;
  *lo = mkc_tid() * per < n ? mkc_tid() * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

/* The weight a token adds to a threshold probe: 1 when counting (top-k,
 * mass_scale 0), else its mass exp((l - max) * mass_scale) (top-p). */
MKC_DEVICE float mkc_probe_weight(float l, float max, float mass_scale) {
  return mass_scale > 0.0f ? expf((l - max) * mass_scale) : 1.0f;
}

/* The candidates a pass visits: every id, or after top-k the survivors'
 * ids in ascending order (list). */
MKC_DEVICE int mkc_cand(const int *list, int j) { return list ? list[j] : j; }

/* The amount (count or mass) of candidates whose key is >= key, block-wide. */
MKC_DEVICE float mkc_amount_at_least(const float *work, const int *list, int n, unsigned key,
                                     float max, float mass_scale, float *red) {
  float s = 0.0f;
  for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
    float l = work[mkc_cand(list, j)];
    if (l > MKC_CUT && mkc_order_key(l) >= key) s += mkc_probe_weight(l, max, mass_scale);
  }
  return mkc_block_sum(s, red);
}

/* The largest key whose at-least amount reaches target, bit by bit. */
MKC_DEVICE unsigned mkc_key_bisect(const float *work, const int *list, int n, float target,
                                   float max, float mass_scale, float *red) {
  unsigned key = 0u;
  for (int b = 31; b >= 0; b--) {
    unsigned probe = key | (1u << b);
    if (mkc_amount_at_least(work, list, n, probe, max, mass_scale, red) >= target) key = probe;
  }
  return key;
}

/* The same for counts (top-k) in four passes of 8 bits: a histogram of the
 * next byte among the candidates' keys that match the bytes found so far,
 * then the byte where the count from the top reaches what is still needed.
 * Counts are integers: the atomics give the same result in any order. hist:
 * 256 unsigned of smem; sel: 2 ints of smem. */
MKC_DEVICE unsigned mkc_key_radix(const float *work, const int *list, int n, int k, unsigned *hist,
                                  int *sel) {
  unsigned key = 0u;
  int need = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = mkc_tid(); i < 256; i += MKC_THREADS) hist[i] = 0u;
    mkc_sync_block();
    unsigned high = shift == 24 ? 0u : 0xffffffffu << (shift + 8);
    for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
      float l = work[mkc_cand(list, j)];
      if (l <= MKC_CUT) continue;
      unsigned kk = mkc_order_key(l);
      if ((kk & high) == (key & high)) mkc_atomic_add_u32(&hist[(kk >> shift) & 255u], 1u);
    }
    mkc_sync_block();
    if (mkc_tid() == 0) {
      /* from the top, eight bins a turn while none of them reaches need: their loads are
       * independent, where one bin a turn made a chain of up to 255 loads and adds */
      int d = 255, above = 0;
      while (d >= 8) {
        int h = 0;
        for (int i = 0; i < 8; i++) h += (int)hist[d - i];
        if (above + h >= need) break;
        above += h;
        d -= 8;
      }
      while (d > 0 && above + (int)hist[d] < need) above += (int)hist[d--];
      sel[0] = d;
      sel[1] = need - above;
    }
    mkc_sync_block();
    key |= (unsigned)sel[0] << shift;
    need = sel[1];
    mkc_sync_block(); /* sel and hist are rewritten next pass */
  }
  return key;
}

/* Keeps the candidates above the boundary key and as many of its ties
 * (lowest ids first) as target needs, each tie weighing the same; cuts the
 * rest. */
MKC_DEVICE void mkc_cut_below(float *work, const int *list, int n, unsigned key, float target,
                              float max, float mass_scale, float *red, float *part) {
  float above = key == 0xffffffffu
                    ? 0.0f
                    : mkc_amount_at_least(work, list, n, key + 1u, max, mass_scale, red);
  int lo, hi;
  mkc_share(n, &lo, &hi);
  float mine = 0.0f, each = 0.0f;
  for (int j = lo; j < hi; j++) {
    float l = work[mkc_cand(list, j)];
    if (l > MKC_CUT && mkc_order_key(l) == key) {
      each = mkc_probe_weight(l, max, mass_scale);
      mine += 1.0f;
    }
  }
  part[mkc_tid()] = mine;
  mkc_sync_block();
  /* The tie count before this thread's share (ids in order across threads). */
  float before = 0.0f;
  for (int i = 0; i < mkc_tid(); i++) before += part[i];
  float w = mkc_block_max(each, red); /* a tie's weight, in every thread */
  float need = 0.0f;                  /* ceil((target - above) / w): whole ties */
  if (w > 0.0f) {
    float q = (target - above) / w;
    need = (float)(int)q;
    if (need < q) need += 1.0f;
  }
  if (need < 1.0f) need = 1.0f;
  for (int j = lo; j < hi; j++) {
    int i = mkc_cand(list, j);
    if (work[i] <= MKC_CUT) continue;
    unsigned k = mkc_order_key(work[i]);
    if (k < key || (k == key && !(before++ < need))) work[i] = MKC_CUT;
  }
  mkc_sync_block();
}

/* Counts over the block's threads in thread order: *at, the counts of the
 * threads before this one; returns the total. part: MKC_THREADS floats. */
MKC_DEVICE int mkc_count_before(int mine, float *part, int *at) {
  part[mkc_tid()] = (float)mine;
  mkc_sync_block();
  int total = 0;
  *at = 0;
  for (int i = 0; i < MKC_THREADS; i++) {
    if (i < mkc_tid()) *at += (int)part[i];
    total += (int)part[i];
  }
  return total;
}

/* The candidates that survive, base + id in candidate order, into out;
 * their count. */
MKC_DEVICE int mkc_compact(const float *work, const int *list, int n, int base, int *out,
                           float *part) {
  int lo, hi;
  mkc_share(n, &lo, &hi);
  int mine = 0;
  for (int j = lo; j < hi; j++) mine += work[mkc_cand(list, j)] > MKC_CUT;
  int at, total = mkc_count_before(mine, part, &at);
  for (int j = lo; j < hi; j++)
    if (work[mkc_cand(list, j)] > MKC_CUT) out[at++] = base + mkc_cand(list, j);
  mkc_sync_block();
  return total;
}

/* Log-probabilities of one position (lp: MKC_LP_STRIDE floats): the
 * log-softmax over the whole vocabulary of the penalized logits over the
 * temperature (1 when greedy), before any cut; its normalizer and the top
 * `logprobs` tokens (ties to the lower id), one block-wide argmax each. */
MKC_DEVICE void mkc_logprobs_top(const mkc_sampling *o, const float *work, int vocab, float max,
                                 float *lp, float *red) {
  float inv = o->temp > 0.0f ? 1.0f / o->temp : 1.0f, z = 0.0f;
  for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) z += expf((work[i] - max) * inv);
  float norm = logf(mkc_block_sum(z, red));
  int *ids = (int *)(lp + MKC_LP_IDS);
  for (int r = 0; r < o->logprobs; r++) {
    float best = MKC_NEG_MAX, first = -(float)vocab;
    for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) {
      int taken = 0;
      for (int j = 0; j < r; j++) taken |= ids[j] == i;
      if (!taken) best = fmaxf(best, work[i]);
    }
    best = mkc_block_max(best, red);
    for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) {
      int taken = 0;
      for (int j = 0; j < r; j++) taken |= ids[j] == i;
      if (!taken && work[i] == best && -(float)i > first) first = -(float)i;
    }
    int id = (int)-mkc_block_max(first, red);
    if (mkc_tid() == 0) {
      ids[r] = id < vocab ? id : -1;
      lp[MKC_LP_VALS + r] = (best - max) * inv - norm;
    }
    mkc_sync_block();
  }
  if (mkc_tid() == 0) {
    lp[0] = max;
    lp[1] = norm;
    lp[2] = inv;
  }
}

/* One position's draw from the tempered survivors by inverse CDF over the
 * candidates in id order, skipping id `skip` (the residual: p without the
 * draft, renormalized). -1 when nothing is left. */
MKC_DEVICE int mkc_draw(const float *work, const int *list, int n, float max, float inv_temp,
                        int skip, float u, float *part, int *winner) {
  int lo, hi;
  mkc_share(n, &lo, &hi);
  float mine = 0.0f;
  for (int j = lo; j < hi; j++) {
    int i = mkc_cand(list, j);
    if (i != skip) mine += expf((work[i] - max) * inv_temp);
  }
  part[mkc_tid()] = mine;
  if (mkc_tid() == 0) *winner = -1;
  mkc_sync_block();
  float before = 0.0f, total = 0.0f;
  for (int i = 0; i < MKC_THREADS; i++) {
    if (i < mkc_tid()) before += part[i];
    total += part[i];
  }
  float target = u * total;
  if (total > 0.0f && target >= before &&
      (target < before + mine || mkc_tid() == MKC_THREADS - 1)) {
    /* This share holds the target (the last one takes what rounding left). */
    float run = before;
    int last = -1;
    for (int j = lo; j < hi; j++) {
      int i = mkc_cand(list, j);
      if (i == skip) continue;
      float e = expf((work[i] - max) * inv_temp);
      if (e <= 0.0f) continue;
      last = i;
      run += e;
      if (target < run) break;
    }
    if (last >= 0) *winner = last;
  }
  mkc_sync_block();
  int r = *winner;
  if (r < 0 && total > 0.0f) { /* rounding put the target past every share's end */
    if (mkc_tid() == 0)
      for (int j = n - 1; j >= 0; j--) {
        int i = mkc_cand(list, j);
        if (i != skip && expf((work[i] - max) * inv_temp) > 0.0f) {
          *winner = i;
          break;
        }
      }
    mkc_sync_block();
    r = *winner;
  }
  mkc_sync_block(); /* winner and part are reused */
  return r;
}

/* Whether the step's top-k is small enough for the candidates stage: then
 * each block keeps its slice's top k, and the sampler reads the union of
 * those lists instead of the vocabulary. Log-probabilities span the whole
 * vocabulary and greedy takes the argmax: both stay on the full path. */
MKC_DEVICE int mkc_cands_on(const mkc_sampling *o, int vocab) {
  return o->temp > 0.0f && o->top_k > 0 && o->top_k <= MKC_CANDS_K && o->top_k < vocab &&
         o->logprobs == 0;
}

/* A slot kernel's stage conditions (templates/slots.cuh): some slot in the
 * step samples, or takes the candidates stage. */
MKC_DEVICE int mkc_slots_sampling(const mkc_state *st, const mkc_rowmap *rm) {
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rm->count[s] > 0 && mkc_sampling_on(&st[s].sampling)) return 1;
  return 0;
}
MKC_DEVICE int mkc_slots_cands(const mkc_state *st, const mkc_rowmap *rm, int vocab) {
  for (int s = 0; s < MKC_SLOT_N; s++)
    if (rm->count[s] > 0 && mkc_cands_on(&st[s].sampling, vocab)) return 1;
  return 0;
}

/* Block b's slice of the vocabulary: contiguous, in block order. */
MKC_DEVICE void mkc_slice(int vocab, int b, int *lo, int *hi) {
  int per = (vocab + mkc_nblocks() - 1) / mkc_nblocks();
  *lo = b * per < vocab ? b * per : vocab;
  *hi = *lo + per < vocab ? *lo + per : vocab;
}

/* The candidates stage, every block, before the sampler when mkc_cands_on:
 * for each position t in [t0, T), block b copies its slice of the logits into
 * work and penalizes it (a penalty may raise a logit, so it comes before any
 * selection), writes the slice's maximum, cuts all but the slice's top k by
 * (value descending, id ascending) and lists the survivors' ids in ascending
 * order at the slice's own offset in lists. The global top k under that order
 * lie in the union of the slices' lists: an id with fewer than k ids before
 * it in the vocabulary has fewer than k before it in its slice. And every id
 * outside the union is cut in work, as the full path's top-k cut leaves it.
 * cand_max: [T][MKC_MAX_BLOCKS] floats; cand_n: [T][MKC_MAX_BLOCKS] ints. */
MKC_DEVICE void mkc_sample_cands(const mkc_state *st, const int *history, const float *logits,
                                 int logits_stride, int vocab, int pos, int t0, int T, float *work,
                                 int *lists, float *cand_max, int *cand_n, float *cand_kth,
                                 float *red, float *part, unsigned *hist, int *sel) {
  const mkc_sampling *o = &st->sampling;
  int lo, hi, k = o->top_k;
  mkc_slice(vocab, mkc_bid(), &lo, &hi);
  for (int t = t0; t < T; t++) {
    int row = t - t0, n = hi - lo;
    float *w = work + row * vocab;
    for (int i = lo + mkc_tid(); i < hi; i += MKC_THREADS) w[i] = logits[row * logits_stride + i];
    mkc_sync_block();
    mkc_penalize(o, st, history, pos, t, w, lo, hi);
    float max = MKC_NEG_MAX;
    for (int i = lo + mkc_tid(); i < hi; i += MKC_THREADS) max = fmaxf(max, w[i]);
    max = mkc_block_max(max, red);
    if (k < n) {
      unsigned key = mkc_key_radix(w + lo, 0, n, k, hist, sel);
      mkc_cut_below(w + lo, 0, n, key, (float)k, max, 0.0f, red, part);
    }
    int kept = mkc_compact(w + lo, 0, n, lo, lists + row * vocab + lo, part);
    /* the slice's k-th value, the least it kept (MKC_CUT: it kept fewer than k) */
    float least = MKC_NEG_MAX;
    for (int j = mkc_tid(); j < kept; j += MKC_THREADS)
      least = fmaxf(least, -w[lists[row * vocab + lo + j]]);
    least = -mkc_block_max(least, red);
    if (mkc_tid() == 0) {
      cand_max[row * MKC_MAX_BLOCKS + mkc_bid()] = max;
      cand_n[row * MKC_MAX_BLOCKS + mkc_bid()] = kept;
      cand_kth[row * MKC_MAX_BLOCKS + mkc_bid()] = k > 0 && kept >= k ? least : MKC_CUT;
    }
  }
}

/* Whether the sampler's union is also bounded by the threads' slice maxima, and the slices
 * below the bound skipped (mkc_cands_gather): 1 since 2026-12-05's third session; 0 is the
 * gather before, every list walked against the slices' k-th values, for the GPU's A/B. The
 * draws are the same bits either way. */
#ifndef MKC_CANDS_BOUND
#define MKC_CANDS_BOUND 1
#endif

/* The union of the blocks' lists for one row, in block order (so ids
 * ascend), into out; its size. Only the candidates at or above a bound that
 * is at most the row's k-th value join it, the same survivors in the same
 * order, from a union cut down before the passes over it. The bound is the
 * larger of two:
 * - the largest of the slices' k-th values (cand_kth): a slice that kept k
 *   has k values at or above its k-th;
 * - the k-th largest of the threads' maxima over their shares of the slices'
 *   maxima (cand_max): those are k values of k different ids.
 * The first alone left a union of 12932 ids of llama-3.2-1b's 128256 on
 * random weights (528 slices), and 4399 of SmolLM2's 49152 on its own
 * logits; with the second, 52 and 127 (build/bench_cands, docs/PERF.md). A
 * slice whose maximum is below the bound holds nobody above it: its list is
 * not walked. Ids outside the union keep their values in w, which nothing
 * after the cut reads (p(draft) reads the survivors). part: MKC_THREADS
 * floats; out is complete after the block's next barrier. */
MKC_DEVICE int mkc_cands_gather(const int *lists, const int *cand_n, const float *cand_kth,
                                const float *cand_max, int vocab, int k, const float *w, int *out,
                                float *part, float *red) {
  float bound = MKC_CUT;
  for (int s = mkc_tid(); s < mkc_nblocks(); s += MKC_THREADS) bound = fmaxf(bound, cand_kth[s]);
  int b_lo, b_hi, mine = 0;
  mkc_share(mkc_nblocks(), &b_lo, &b_hi);
  if (MKC_CANDS_BOUND) {
    float top = MKC_CUT; /* this thread's maximum: of its share's slices */
    for (int b = b_lo; b < b_hi; b++) top = fmaxf(top, cand_max[b]);
    part[mkc_tid()] = top;
    mkc_sync_block();
    int above = 0; /* its rank: the threads' maxima before it, larger or tied at a lower thread */
    for (int i = 0; i < MKC_THREADS; i++)
      above += part[i] > top || (part[i] == top && i < mkc_tid());
    if (above == k - 1) bound = fmaxf(bound, top);
  }
  bound = mkc_block_max(bound, red); /* its barriers also end the reads of part */
  for (int b = b_lo; b < b_hi; b++) {
    if (MKC_CANDS_BOUND && !(cand_max[b] >= bound)) continue;
    int lo, hi;
    mkc_slice(vocab, b, &lo, &hi);
    for (int j = 0; j < cand_n[b]; j++) mine += w[lists[lo + j]] >= bound;
  }
  int at, total = mkc_count_before(mine, part, &at);
  for (int b = b_lo; b < b_hi; b++) {
    if (MKC_CANDS_BOUND && !(cand_max[b] >= bound)) continue;
    int lo, hi;
    mkc_slice(vocab, b, &lo, &hi);
    for (int j = 0; j < cand_n[b]; j++) {
      int id = lists[lo + j];
      if (w[id] >= bound) out[at++] = id;
    }
  }
  return total; /* no barrier: the caller's mkc_key_radix has one before it reads out */
}

/* The sampler stage: block b takes positions t = t0 + b, t0 + b + nblocks,
 * ... < T (t0: the first input with logits; a prompt chunk's last), each at
 * row t - t0 of what it reads and writes. cands: the candidates stage ran
 * (mkc_cands_on): work already holds the penalized logits with everything
 * outside the slices' top k cut, cand_max and cand_n its slices' maxima and
 * list sizes, and top-k reads their union (gathered into uni: [T][vocab]
 * ints). The survivors are then the full path's, the same ids in the same
 * order with the same values, so the draws are the same bits.
 * history: the token at every position before pos (mkc_accept writes it).
 * lp: [T][MKC_LP_STRIDE] log-probabilities, when the options ask.
 * logits: [T][logits_stride] raw; work: [T][vocab] scratch; lists: [T][vocab]
 * ints, top-k's survivors; drawn: [T][2] (the token from p_t, the token from
 * the residual); p_draft: [T]. smem: red (MKC_WARPS floats), part
 * (MKC_THREADS floats), winner (3 ints), hist (256 unsigned). Block b0 takes
 * the first input, the blocks after it the next ones (a slot kernel's slots
 * start at their first rows, so their samplers run side by side). */
MKC_DEVICE void mkc_sample(const mkc_state *st, const int *history, const float *logits,
                           int logits_stride, int vocab, int pos, int t0, int T, int b0,
                           float *work, int *lists, int cands, const float *cand_max,
                           const int *cand_n, const float *cand_kth, int *uni, int *drawn,
                           float *p_draft_out, float *lp, float *red, float *part, int *winner,
                           unsigned *hist) {
  const mkc_sampling *o = &st->sampling;
  for (int t = t0 + mkc_bid_from(b0); t < T; t += mkc_nblocks()) {
    int row = t - t0;
    float *w = work + row * vocab;
    float max = MKC_NEG_MAX;
    if (cands) {
      for (int b = mkc_tid(); b < mkc_nblocks(); b += MKC_THREADS)
        max = fmaxf(max, cand_max[row * MKC_MAX_BLOCKS + b]);
    } else {
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) w[i] = logits[row * logits_stride + i];
      mkc_sync_block();
      mkc_penalize(o, st, history, pos, t, w, 0, vocab);
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS) max = fmaxf(max, w[i]);
    }
    max = mkc_block_max(max, red);
    int draft = t + 1 < T ? st->inputs[t + 1] : -1;
    if (o->logprobs > 0) mkc_logprobs_top(o, w, vocab, max, lp + row * MKC_LP_STRIDE, red);
    if (o->temp <= 0.0f) {
      /* greedy on penalized logits: the first id at the max; a draft is kept
       * exactly when it is that id (p_t is a point mass) */
      float first = -(float)vocab; /* minus the lowest id at the max: ids < 2^24 are exact */
      for (int i = mkc_tid(); i < vocab; i += MKC_THREADS)
        if (w[i] == max && -(float)i > first) first = -(float)i;
      int best = (int)-mkc_block_max(first, red);
      if (best >= vocab) best = -1;
      if (mkc_tid() == 0) {
        drawn[row * 2 + 0] = best;
        drawn[row * 2 + 1] = best;
        p_draft_out[row] = draft >= 0 && draft == best ? 1.0f : 0.0f;
      }
      mkc_sync_block();
      continue;
    }
    float inv_temp = 1.0f / o->temp;
    /* The candidates: every id, or after top-k its k survivors, so that the
     * later cuts and draws read k values rather than the vocabulary. */
    const int *list = 0;
    int n = vocab;
    int k = o->top_k;
    if (k > 0 && k < vocab) {
      /* on the candidates' union (cands) or every id */
      const int *from = 0;
      float *vals = w; /* what the radix and the cut read: every id's value, or ... */
      if (cands) {
        from = uni + row * vocab;
        n = mkc_cands_gather(lists + row * vocab, cand_n + row * MKC_MAX_BLOCKS,
                             cand_kth + row * MKC_MAX_BLOCKS, cand_max + row * MKC_MAX_BLOCKS,
                             vocab, k, w, uni + row * vocab, part, red);
        mkc_sync_block();
        /* ... the union's values in order, in its lists' row (read): the radix's four passes
         * and the cut's three read them there, from L1, not work[id] through the ids, two
         * dependent loads an element (the union: blocks x k ids, 15840 on llama-3.2-1b).
         * Positions ascend with ids, so the cut's ties go by id as before. */
        vals = (float *)(lists + row * vocab);
        for (int j = mkc_tid(); j < n; j += MKC_THREADS) vals[j] = w[from[j]];
      }
      unsigned key = mkc_key_radix(vals, 0, n, k, hist, winner + 1);
      mkc_cut_below(vals, 0, n, key, (float)k, max, 0.0f, red, part);
      if (cands) {
        for (int j = mkc_tid(); j < n; j += MKC_THREADS) /* the cuts, back in work */
          if (vals[j] <= MKC_CUT) w[from[j]] = MKC_CUT;
        mkc_sync_block();
      }
      n = mkc_compact(w, from, n, 0, lists + row * vocab, part);
      list = lists + row * vocab;
    }
    if (o->top_p < 1.0f) {
      float scale = 1.0f; /* top-p on the untempered softmax: temperature comes last */
      float z = 0.0f;
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        float l = w[mkc_cand(list, j)];
        if (l > MKC_CUT) z += mkc_probe_weight(l, max, scale);
      }
      z = mkc_block_sum(z, red);
      unsigned key = mkc_key_bisect(w, list, n, o->top_p * z, max, scale, red);
      mkc_cut_below(w, list, n, key, o->top_p * z, max, scale, red, part);
    }
    if (o->min_p > 0.0f) {
      float floor_l = max + logf(o->min_p);
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        int i = mkc_cand(list, j);
        if (w[i] < floor_l) w[i] = MKC_CUT;
      }
      mkc_sync_block();
    }
    unsigned position = (unsigned)(pos + t + 1); /* of the token drawn */
    int token = mkc_draw(w, list, n, max, inv_temp, -1, mkc_uniform(o, position, MKC_DRAW_SAMPLE),
                         part, winner);
    int residual = -1;
    float p_draft = 0.0f;
    if (draft >= 0) {
      /* p_t(draft): its weight over all the survivors' (0 when it is none of them), added
       * where it is met: past the candidates' union, work holds values no cut has seen */
      float z = 0.0f, e = 0.0f;
      for (int j = mkc_tid(); j < n; j += MKC_THREADS) {
        int i = mkc_cand(list, j);
        float x = expf((w[i] - max) * inv_temp);
        z += x;
        if (i == draft) e = x;
      }
      z = mkc_block_sum(z, red);
      e = mkc_block_sum(e, red); /* one thread's, and zeros: its bits */
      p_draft = z > 0.0f ? e / z : 0.0f;
      residual = mkc_draw(w, list, n, max, inv_temp, draft,
                          mkc_uniform(o, position, MKC_DRAW_RESIDUAL), part, winner);
    }
    if (mkc_tid() == 0) {
      drawn[row * 2 + 0] = token;
      drawn[row * 2 + 1] = residual;
      p_draft_out[row] = p_draft;
    }
  }
}
#line 1 "templates/accept.cuh"
/* Greedy choice and speculative accept, run by block 0 after the LM head.
 * inputs = [last, fixed_1..fixed_f, d_1..d_k]; choice[t] is the target's
 * token after input t. Fixed inputs are taken as given; drafts are accepted
 * while each equals the choice before it. pos moves past every accepted input
 * plus `last`: rejected K/V rows lie beyond it and are overwritten later.
 * When sampling (temp > 0), the choice after input t is what mkc_sample drew
 * there, and draft t+1 is kept with probability p_t(draft) (a uniform of its
 * own stream below it), else the residual's token is emitted: speculative
 * sampling with point-mass drafts. Every accepted input's token is written to
 * history at its position (the penalties' window). Choices, draws and
 * log-probabilities exist from input t0 on (a prompt chunk: its last only),
 * at row t - t0; every input a step can accept lies there (n_fixed >= t0). */
MKC_DEVICE void mkc_accept_sampled(const mkc_state *st, const int *drawn, const float *p_draft,
                                   int pos, int t0, int T, int *choice, int *a_out) {
  int a = st->n_fixed;
  for (; a + 1 < T; a++) {
    if (!(mkc_uniform(&st->sampling, (unsigned)(pos + a + 1), MKC_DRAW_ACCEPT) < p_draft[a - t0]))
      break;
    choice[a - t0] = st->inputs[a + 1];
  }
  /* the bonus token after the last input, or the residual's after a rejection */
  choice[a - t0] = drawn[(a - t0) * 2 + (a + 1 < T ? 1 : 0)];
  *a_out = a;
}

/* The best (logit, id) over every block's LM-head partial, for each input:
 * the whole block scans, each thread a stride of the blocks, then a
 * butterfly in each warp and thread 0 over the warps (a serial scan of 1024
 * partials per input was one thread's work before). Ties go to the lower
 * id; mkc_better is a total order, so every lane ends with the same pair. */
MKC_DEVICE void mkc_argmax_partials(const float *part_val, const int *part_idx, int T, int *choice,
                                    float *red_v, int *red_i) {
  for (int t = 0; t < T; t++) {
    float v = MKC_NEG_MAX;
    int i = 0x7fffffff;
    for (int b = mkc_tid(); b < mkc_nblocks(); b += MKC_THREADS)
      if (mkc_better(part_val[b * MKC_STEP_ROWS + t], part_idx[b * MKC_STEP_ROWS + t], v, i)) {
        v = part_val[b * MKC_STEP_ROWS + t];
        i = part_idx[b * MKC_STEP_ROWS + t];
      }
    for (int m = 16; m > 0; m >>= 1) {
      float ov = mkc_shfl_xor(v, m);
      int oi = mkc_shfl_xor_int(i, m);
      if (mkc_better(ov, oi, v, i)) {
        v = ov;
        i = oi;
      }
    }
    if (mkc_lane() == 0) {
      red_v[mkc_warp()] = v;
      red_i[mkc_warp()] = i;
    }
    mkc_sync_block();
    if (mkc_tid() == 0) {
      for (int w = 1; w < MKC_WARPS; w++)
        if (mkc_better(red_v[w], red_i[w], v, i)) {
          v = red_v[w];
          i = red_i[w];
        }
      choice[t] = i;
    }
    mkc_sync_block(); /* red is reused by the next input */
  }
}

MKC_DEVICE void mkc_accept(mkc_state *st, const float *part_val, const int *part_idx,
                           const int *drawn, const float *p_draft, int *history, int vocab, int pos,
                           int t0, int T, int b0, const float *work, float *lp, int *choices,
                           int *choice, float *red_v, int *red_i) {
  if (mkc_bid() != b0 % mkc_nblocks()) return; /* a slot kernel's slots on blocks side by side */
  mkc_argmax_partials(part_val, part_idx, T - t0, choice, red_v, red_i);
  if (mkc_tid() != 0) return;
  /* every input's greedy choice for the host, before sampling replaces any (a drafter head's
   * block: T ints to read where its logits were T rows of the vocabulary) */
  for (int t = 0; t < T - t0; t++) choices[t] = choice[t];
  if (st->draft_left > 0) { /* a draft pass (templates/rounds.cuh): its argmax is the next draft */
    int n = st->draft_n + 1, c = choice[0];
    if (c >= 0 && c < vocab) {
      st->inputs[n] = c;
      st->draft_n = n;
      st->draft_left -= 1;
    } else {
      st->draft_left = 0; /* no finite logit: verify the drafts made so far */
    }
    if (st->draft_left == 0) {
      st->n_inputs = st->draft_n + 1;
      st->n_fixed = 0;
    }
    return;
  }
  int f = st->n_fixed, a = f;
  if (mkc_sampling_on(&st->sampling)) {
    mkc_accept_sampled(st, drawn, p_draft, pos, t0, T, choice, &a);
    if (choice[a - t0] < 0 || choice[a - t0] >= vocab) {
      /* nothing to draw from: every probability was NaN, inf or cut */
      st->status = MKC_STATUS_NONFINITE;
      st->n_out = 0;
      st->n_accepted = 0;
      return;
    }
    for (int t = 0; t <= a; t++) history[pos + t] = st->inputs[t];
    for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
    /* an emitted token survived every cut: its penalized logit is in work */
    if (st->sampling.logprobs > 0)
      for (int t = f; t <= a; t++) {
        float *l = lp + (t - t0) * MKC_LP_STRIDE;
        l[MKC_LP_EMITTED] = (work[(t - t0) * vocab + choice[t - t0]] - l[0]) * l[2] - l[1];
      }
    st->n_out = a - f + 1;
    st->n_accepted = a - f;
    st->pos = pos + a + 1;
    st->step += 1;
    st->status = MKC_STATUS_OK;
    return;
  }
  for (int t = t0; t <= f; t++)
    if (choice[t - t0] < 0 || choice[t - t0] >= vocab) {
      /* no finite logit won: a NaN or inf reached the head */
      st->status = MKC_STATUS_NONFINITE;
      st->n_out = 0;
      st->n_accepted = 0;
      return;
    }
  while (a + 1 < T && st->inputs[a + 1] == choice[a - t0]) a++;
  if (choice[a - t0] < 0 || choice[a - t0] >= vocab) a--; /* keep the last emitted choice valid */
  for (int t = 0; t <= a; t++) history[pos + t] = st->inputs[t];
  for (int t = f; t <= a; t++) st->out_tokens[t - f] = choice[t - t0];
  st->n_out = a - f + 1;
  st->n_accepted = a - f;
  st->pos = pos + a + 1;
  st->step += 1;
  st->status = MKC_STATUS_OK;
}
#line 1 "templates/rounds.cuh"
/* Several draft-and-verify rounds in one launch (state.round_max > 1): after
 * a step's accept, block 0 records the round, drafts the next one by prompt
 * lookup over the history the kernel keeps (the token at every position),
 * and one grid barrier later every block runs the stages again, with no
 * host round trip between. The next round is the one the host's decode loop
 * would run (exec/decode.c): its first input the last emitted token, then
 * min(round_drafts, tokens still wanted - 1, room left - 1) drafts found as
 * exec/draft.c's mkc_draft_lookup finds them. A round that emits one of
 * round_stops (the end of generation) ends the launch.
 *
 * With draft_layers > 0 the drafts come from the model's own first layers
 * instead (self-speculation, LayerSkip-style): the next round's drafts are
 * made by that many passes of the stages on one input each, through the
 * first draft_layers passes of the layer loop, the final norm and the LM
 * head, each pass's argmax the next pass's input (mkc_accept's draft branch);
 * the round then verifies them all. The draft passes write the K/V rows of
 * the first layers at the drafts' positions, which the round rewrites. */

#define MKC_LOOKUP_NGRAM_MAX 3 /* exec/draft.h's MKC_DRAFT_NGRAM_MAX */

/* Token i of the history h[0..n_hist) followed by last. */
MKC_DEVICE int mkc_hist_at(const int *h, int n_hist, int last, int i) {
  return i < n_hist ? h[i] : last;
}

/* Prompt lookup over h[0..n_hist) + last by the whole block: the longest
 * suffix (3 tokens down to 1) found earlier, its most recent match, and up to
 * k of the tokens that followed it into out. Returns how many, to every
 * thread. red: MKC_WARPS ints of smem. */
MKC_DEVICE int mkc_lookup_drafts(const int *h, int n_hist, int last, int k, int *out, int *red) {
  int n = n_hist + 1;
  for (int len = MKC_LOOKUP_NGRAM_MAX; len >= 1 && k > 0; len--) {
    if (len >= n) continue;
    int best = -1;
    for (int start = mkc_tid(); start <= n - len - 1; start += MKC_THREADS) {
      int j = 0;
      while (j < len &&
             mkc_hist_at(h, n_hist, last, start + j) == mkc_hist_at(h, n_hist, last, n - len + j))
        j++;
      if (j == len && start > best) best = start;
    }
    for (int m = 16; m > 0; m >>= 1) {
      int o = mkc_shfl_xor_int(best, m);
      best = o > best ? o : best;
    }
    if (mkc_lane() == 0) red[mkc_warp()] = best;
    mkc_sync_block();
    best = -1;
    for (int w = 0; w < MKC_WARPS; w++) best = red[w] > best ? red[w] : best;
    mkc_sync_block(); /* red is reused by the next length */
    if (best >= 0) {
      int got = 0;
      for (int i = best + len; i < n && got < k; i++) got++;
      for (int i = mkc_tid(); i < got; i += MKC_THREADS)
        out[i] = mkc_hist_at(h, n_hist, last, best + len + i);
      return got;
    }
  }
  return 0;
}

/* After a pass of the stages: a draft pass goes on to the next pass; a
 * round's is recorded, and the next round set up. Called by every thread of
 * every block; nonzero when another pass runs (all blocks then see its inputs
 * in the state). history: the tokens by position (mkc_accept writes them);
 * red: MKC_WARPS + 2 ints of smem. */
MKC_DEVICE int mkc_round_next(mkc_state *st, const int *history, int max_ctx, int drafting,
                              int *red) {
  if (drafting) { /* mkc_accept stored the draft; the next pass reads it */
    mkc_grid_sync(st);
    return 1;
  }
  if (st->round_max <= 1) return 0; /* host-written, the same for every block */
  if (mkc_bid() == 0) {
    int more = 0;
    if (mkc_tid() == 0) {
      int round = st->n_rounds; /* draft passes are not rounds */
      mkc_round *r = &st->rounds[round];
      r->n_in = st->n_inputs;
      r->n_out = st->status == MKC_STATUS_OK ? st->n_out : 0;
      r->n_accepted = st->status == MKC_STATUS_OK ? st->n_accepted : 0;
      r->status = st->status;
      for (int i = 0; i < r->n_out; i++) r->out_tokens[i] = st->out_tokens[i];
      st->n_rounds = round + 1;
      int emitted = 0, stop = 0;
      for (int i = 0; i <= round; i++) emitted += st->rounds[i].n_out;
      for (int i = 0; i < r->n_out; i++)
        for (int j = 0; j < st->n_round_stops && j < MKC_ROUND_STOPS; j++)
          stop |= r->out_tokens[i] == st->round_stops[j];
      more = st->status == MKC_STATUS_OK && !stop && round + 1 < st->round_max &&
             round + 1 < MKC_ROUNDS_MAX && emitted < st->round_budget && st->pos < max_ctx;
      if (more) {
        int k = st->round_drafts, want = st->round_budget - emitted, room = max_ctx - st->pos;
        if (k > want - 1) k = want - 1;
        if (k > room - 1) k = room - 1;
        red[MKC_WARPS] = k < 0 ? 0 : k;
        st->inputs[0] = st->out_tokens[st->n_out - 1];
      }
      red[MKC_WARPS + 1] = more;
    }
    mkc_sync_block();
    more = red[MKC_WARPS + 1];
    if (more && st->draft_layers > 0) { /* the drafts come from the next passes */
      if (mkc_tid() == 0) {
        st->n_inputs = 1;
        st->n_fixed = 0;
        st->draft_n = 0;
        st->draft_left = red[MKC_WARPS];
      }
    } else if (more) {
      int got =
          mkc_lookup_drafts(history, st->pos, st->inputs[0], red[MKC_WARPS], st->inputs + 1, red);
      if (mkc_tid() == 0) {
        st->n_inputs = 1 + got;
        st->n_fixed = 0;
      }
    }
    if (mkc_tid() == 0) st->round_go = more;
  }
  mkc_grid_sync(st);
  return st->round_go;
}
/* The layer loop's values that differ from pass to pass (mkc_step: lay_i, lay_w). */
MKC_CONSTANT int mkc_layer_i[2][11] = {
  {16512, 20608, 22656, 16384, 0, 16384, 24704, 28928, 41216, 28800, 53504},
  {65920, 70016, 72064, 65792, 32768, 49152, 74112, 78336, 90624, 78208, 102912},
};
#line 6352 "llama.tiny.cu"

MKC_KERNEL mkc_step(const mkc_bf16 *weights, float *scratch, mkc_kv *kv, mkc_state *state) {
  char *smem = mkc_smem();
  (void)smem;
  unsigned flow_waited = 0; /* flow arrivals waited for, in blocks (mkc_flow_wait) */
  for (int round = 0;; round++) { /* state->round_max > 1: more rounds (templates/rounds.cuh) */
  if (round == 0 && mkc_bid() == 0 && mkc_tid() == 0) state->n_rounds = 0; /* none recorded yet */
  const int drafting = state->draft_left > 0; /* a pass that drafts (templates/rounds.cuh) */
  if (!drafting && !mkc_step_begin(state, 256, 512, 5, 128)) return;
  const int pos = state->pos + (drafting ? state->draft_n : 0), T = drafting ? 1 : state->n_inputs;
  const int *inputs = state->inputs + (drafting ? state->draft_n : 0);
  const int t0 = T > MKC_T_MAX ? T - 1 : 0; /* the first input with logits: a prompt chunk's last */

  /* stage 1/15: embed -- embed token_embd.weight (line 470)
   * work: T x 64 elements, grid-strided over threads; smem 0 bytes
   * nodes: 2; items: 64*t, one thread each; flops: 0; sync: flow
   * smem: none
   * reads: weights+0 128*t (token_embd.weight)
   * writes: scratch+0 256*t (embed token_embd.weight (line 470)) */
  mkc_embed(mkc_wmat_of(weights + 0, 128, MKC_W_BF16), 64, 1.0f, scratch + 0, 64, inputs, T);
  mkc_flow_arrive(state); /* next stage reads embed (line 470) written by another block */

  /* layer loop: stages 2-11 are 2 passes of the 5 below, whose code differs only in
   * the pass's values lay_i[j] and lay_w[j] (offsets, a window, stage numbers), read from
   * mkc_layer_i and mkc_layer_w above. Each pass's stages, in order (inspect unfolds the loop): */
  /* stage 2/15: qkv_rope -- rmsnorm blk.0.attn_norm.weight (line 474), matmul blk.0.attn_q.weight (line 426), matmul blk.0.attn_k.weight (line 427), matmul blk.0.attn_v.weight (line 428), rope (line 437), rope (line 438)
   * work: 64 row pairs (q/k rotation pairs, v row pairs), one warp per pair; smem 39072 bytes
   * nodes: 4 6 9 12 7 10; items: 64, one warp each; flops: 16384*t; sync: flow
   * smem: inv_rms 0+32, red 32+16, part 48+880, a_tile 928+9216, w_tile 10144+9216, c_tile 19360+17408, ssq 36768+2048, inv_tile 38816+256
   * reads: weights+16512 8192 (blk.0.attn_q.weight), weights+20608 4096 (blk.0.attn_k.weight), weights+22656 4096 (blk.0.attn_v.weight), scratch+0 256*t (embed token_embd.weight (line 470)), weights+16384 128 (blk.0.attn_norm.weight)
   * writes: scratch+8192 256*t (rope (line 437)), kv+0 64*t (K cache layer 0), kv+16384 64*t (V cache layer 0) */
  /* stage 3/15: attention -- attention layer 0 (line 440)
   * work: 2 kv heads x 2-head passes x T units, positions split across the blocks; tiles of 256; smem 19968 bytes
   * nodes: 13; items: 2*t, one block each; flops: 256*att; sync: flow
   * smem: q_s 0+128, sc2 128+4096, stat 4224+64, red 4288+8192, q_tile 0+5120, k_tile 5120+2560, v_tile 7680+3072, p_tile 10752+9216
   * reads: scratch+8192 256*t (rope (line 437)), kv+0 64*ctx (K cache layer 0), kv+16384 64*ctx (V cache layer 0)
   * writes: scratch+16384 256*t (attention layer 0 (line 440)) */
  /* stage 4/15: matvec_residual -- matmul blk.0.attn_output.weight (line 445), add (line 475)
   * work: 64 rows, one warp per row; smem 39024 bytes
   * nodes: 15 16; items: 64, one warp each; flops: 8192*t; sync: flow
   * smem: part 0+880, a_tile 880+9216, w_tile 10096+9216, c_tile 19312+17408, ssq 36720+2048, inv_tile 38768+256
   * reads: weights+24704 8192 (blk.0.attn_output.weight), scratch+16384 256*t (attention layer 0 (line 440)), scratch+0 256*t (add (line 475))
   * writes: scratch+0 256*t (add (line 475)) */
  /* stage 5/15: gate_up_swiglu -- rmsnorm blk.0.ffn_norm.weight (line 477), matmul blk.0.ffn_gate.weight (line 464), matmul blk.0.ffn_up.weight (line 465), swiglu (line 466)
   * work: 192 row pairs (gate, up), one warp per pair; smem 39872 bytes
   * nodes: 18 20 22 23; items: 192, one warp each; flops: 49152*t; sync: flow
   * smem: inv_rms 0+32, red 32+16, part 48+1680, a_tile 1728+9216, w_tile 10944+9216, c_tile 20160+17408, ssq 37568+2048, inv_tile 39616+256
   * reads: weights+28928 24576 (blk.0.ffn_gate.weight), weights+41216 24576 (blk.0.ffn_up.weight), scratch+0 256*t (add (line 475)), weights+28800 128 (blk.0.ffn_norm.weight)
   * writes: scratch+24576 768*t (swiglu (line 466)) */
  /* stage 6/15: matvec_residual -- matmul blk.0.ffn_down.weight (line 466), add (line 478)
   * work: 64 rows, one warp per row; smem 39024 bytes
   * nodes: 25 26; items: 64, one warp each; flops: 24576*t; sync: flow
   * smem: part 0+880, a_tile 880+9216, w_tile 10096+9216, c_tile 19312+17408, ssq 36720+2048, inv_tile 38768+256
   * reads: weights+53504 24576 (blk.0.ffn_down.weight), scratch+24576 768*t (swiglu (line 466)), scratch+0 256*t (add (line 478))
   * writes: scratch+0 256*t (add (line 478)) */
  /* stage 7/15: qkv_rope -- rmsnorm blk.1.attn_norm.weight (line 474), matmul blk.1.attn_q.weight (line 426), matmul blk.1.attn_k.weight (line 427), matmul blk.1.attn_v.weight (line 428), rope (line 437), rope (line 438)
   * work: 64 row pairs (q/k rotation pairs, v row pairs), one warp per pair; smem 39072 bytes
   * nodes: 28 30 33 36 31 34; items: 64, one warp each; flops: 16384*t; sync: flow
   * smem: inv_rms 0+32, red 32+16, part 48+880, a_tile 928+9216, w_tile 10144+9216, c_tile 19360+17408, ssq 36768+2048, inv_tile 38816+256
   * reads: weights+65920 8192 (blk.1.attn_q.weight), weights+70016 4096 (blk.1.attn_k.weight), weights+72064 4096 (blk.1.attn_v.weight), scratch+0 256*t (add (line 478)), weights+65792 128 (blk.1.attn_norm.weight)
   * writes: scratch+8192 256*t (rope (line 437)), kv+32768 64*t (K cache layer 1), kv+49152 64*t (V cache layer 1) */
  /* stage 8/15: attention -- attention layer 1 (line 440)
   * work: 2 kv heads x 2-head passes x T units, positions split across the blocks; tiles of 256; smem 19968 bytes
   * nodes: 37; items: 2*t, one block each; flops: 256*att; sync: flow
   * smem: q_s 0+128, sc2 128+4096, stat 4224+64, red 4288+8192, q_tile 0+5120, k_tile 5120+2560, v_tile 7680+3072, p_tile 10752+9216
   * reads: scratch+8192 256*t (rope (line 437)), kv+32768 64*ctx (K cache layer 1), kv+49152 64*ctx (V cache layer 1)
   * writes: scratch+16384 256*t (attention layer 1 (line 440)) */
  /* stage 9/15: matvec_residual -- matmul blk.1.attn_output.weight (line 445), add (line 475)
   * work: 64 rows, one warp per row; smem 39024 bytes
   * nodes: 39 40; items: 64, one warp each; flops: 8192*t; sync: flow
   * smem: part 0+880, a_tile 880+9216, w_tile 10096+9216, c_tile 19312+17408, ssq 36720+2048, inv_tile 38768+256
   * reads: weights+74112 8192 (blk.1.attn_output.weight), scratch+16384 256*t (attention layer 1 (line 440)), scratch+0 256*t (add (line 475))
   * writes: scratch+0 256*t (add (line 475)) */
  /* stage 10/15: gate_up_swiglu -- rmsnorm blk.1.ffn_norm.weight (line 477), matmul blk.1.ffn_gate.weight (line 464), matmul blk.1.ffn_up.weight (line 465), swiglu (line 466)
   * work: 192 row pairs (gate, up), one warp per pair; smem 39872 bytes
   * nodes: 42 44 46 47; items: 192, one warp each; flops: 49152*t; sync: flow
   * smem: inv_rms 0+32, red 32+16, part 48+1680, a_tile 1728+9216, w_tile 10944+9216, c_tile 20160+17408, ssq 37568+2048, inv_tile 39616+256
   * reads: weights+78336 24576 (blk.1.ffn_gate.weight), weights+90624 24576 (blk.1.ffn_up.weight), scratch+0 256*t (add (line 475)), weights+78208 128 (blk.1.ffn_norm.weight)
   * writes: scratch+24576 768*t (swiglu (line 466)) */
  /* stage 11/15: matvec_residual -- matmul blk.1.ffn_down.weight (line 466), add (line 478)
   * work: 64 rows, one warp per row; smem 39024 bytes
   * nodes: 49 50; items: 64, one warp each; flops: 24576*t; sync: flow
   * smem: part 0+880, a_tile 880+9216, w_tile 10096+9216, c_tile 19312+17408, ssq 36720+2048, inv_tile 38768+256
   * reads: weights+102912 24576 (blk.1.ffn_down.weight), scratch+24576 768*t (swiglu (line 466)), scratch+0 256*t (add (line 478))
   * writes: scratch+0 256*t (add (line 478)) */
  for (int layer = 0; layer < (drafting ? state->draft_layers : 2); layer++) { /* layer loop */
  const int *lay_i = mkc_layer_i[layer];

  /* pass stage 1/5: qkv_rope */
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[0], 128, MKC_W_BF16), 64, MKC_ROWS, 3);
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[1], 128, MKC_W_BF16), 32, MKC_ROWS, 3);
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[2], 128, MKC_W_BF16), 32, MKC_ROWS, 3);
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T > MKC_T_MAX) { /* a prompt chunk: tiled, on tensor cores */
    mkc_gemm_qkv(mkc_wmat_of(weights + lay_i[0], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[1], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[2], 128, MKC_W_BF16),
                 (const mkc_bf16 *)0, (const mkc_bf16 *)0, (const mkc_bf16 *)0,
                 0, 8, 4, 2, 16, 0, mkc_rope_plain(10000),
                 scratch + 0, 64, 64, weights + lay_i[3], 1e-05f,
                 (const mkc_bf16 *)0, (const mkc_bf16 *)0, 0.0f,
                 scratch + 8192, 64, kv + lay_i[4], kv + lay_i[5],
                 512, pos, T, (const mkc_rowmap *)0,
                 64, (float *)(smem + 928), (float *)(smem + 10144), (float *)(smem + 19360), (float *)(smem + 36768), (float *)(smem + 38816));
  } else {
    if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
      mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, 0, 1, (float *)(smem + 0), (float *)(smem + 32));
      mkc_qkv_rope(mkc_wmat_of(weights + lay_i[0], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[1], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[2], 128, MKC_W_BF16),
                   (const mkc_bf16 *)0, (const mkc_bf16 *)0, (const mkc_bf16 *)0,
                   8, 4, 2, 16, 0, mkc_rope_plain(10000),
                   scratch + 0, 64, weights + lay_i[3], (float *)(smem + 0), 64, 1e-05f, (float *)0,
                   (const mkc_bf16 *)0, (const mkc_bf16 *)0, 0.0f, (unsigned *)0,
                   scratch + 8192, 64, (float *)0, 0,
                   kv + lay_i[4], kv + lay_i[5], 512, pos, 1,
                   (const mkc_rowmap *)0, (float *)(smem + 48), (float *)0);
    } else {
      mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, 0, T, (float *)(smem + 0), (float *)(smem + 32));
      mkc_qkv_rope(mkc_wmat_of(weights + lay_i[0], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[1], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[2], 128, MKC_W_BF16),
                   (const mkc_bf16 *)0, (const mkc_bf16 *)0, (const mkc_bf16 *)0,
                   8, 4, 2, 16, 0, mkc_rope_plain(10000),
                   scratch + 0, 64, weights + lay_i[3], (float *)(smem + 0), 64, 1e-05f, (float *)0,
                   (const mkc_bf16 *)0, (const mkc_bf16 *)0, 0.0f, (unsigned *)0,
                   scratch + 8192, 64, (float *)0, 0,
                   kv + lay_i[4], kv + lay_i[5], 512, pos, T,
                   (const mkc_rowmap *)0, (float *)(smem + 48), (float *)0);
    }
  }
  mkc_flow_arrive(state); /* next stage reads rope (line 437) written by another block */

  /* pass stage 2/5: attention */
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T > MKC_T_MAX) { /* a prompt chunk: tiled, on tensor cores */
    mkc_gemm_attention(scratch + 8192, 64, kv + lay_i[4], kv + lay_i[5], scratch + 16384, 64,
                       4, 2, 16, 512, 0, 0.25f, (const mkc_bf16 *)0, pos, T,
                       (const mkc_rowmap *)0, (float *)(smem + 0), (float *)(smem + 5120), (float *)(smem + 7680), (float *)(smem + 10752));
  } else {
    if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
      mkc_attention(scratch + 8192, 64, kv + lay_i[4], kv + lay_i[5], scratch + 16384, 64,
                    4, 2, 2, 16, 8, 512, 0, 0.25f, (const mkc_bf16 *)0, pos, 1,
                    (const mkc_rowmap *)0, scratch + 59392, (unsigned *)(scratch + 96256), (float *)(smem + 0), (float *)(smem + 128), (float *)(smem + 4224), (float *)(smem + 4288));
    } else {
      mkc_attention(scratch + 8192, 64, kv + lay_i[4], kv + lay_i[5], scratch + 16384, 64,
                    4, 2, 2, 16, 8, 512, 0, 0.25f, (const mkc_bf16 *)0, pos, T,
                    (const mkc_rowmap *)0, scratch + 59392, (unsigned *)(scratch + 96256), (float *)(smem + 0), (float *)(smem + 128), (float *)(smem + 4224), (float *)(smem + 4288));
    }
  }
  mkc_flow_arrive(state); /* next stage reads attention (line 440) written by another block */

  /* pass stage 3/5: matvec_residual */
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[6], 128, MKC_W_BF16), 64, mkc_matvec_rows_n(64), 1);
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T > MKC_T_MAX) { /* a prompt chunk: tiled, on tensor cores */
    mkc_gemm_matvec(mkc_wmat_of(weights + lay_i[6], 128, MKC_W_BF16), 64, 0, 8, scratch + 16384, 64, 64, (const mkc_bf16 *)0, 0.0f,
                    scratch + 0, 64, 1, (const mkc_bf16 *)0, T,
                    (const mkc_state *)0, (const mkc_rowmap *)0, (float *)0, (int *)0, (float *)(smem + 880), (float *)(smem + 10096), (float *)(smem + 19312), (float *)(smem + 36720), (float *)(smem + 38768));
  } else {
    if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
      mkc_matvec(mkc_wmat_of(weights + lay_i[6], 128, MKC_W_BF16), 64, 8, scratch + 16384, 64, (const mkc_bf16 *)0, (float *)0, 64, 0.0f, (float *)0, scratch + 0, 64, 1, (const mkc_bf16 *)0, 1, (float *)(smem + 0), (float *)0);
    } else {
      mkc_matvec(mkc_wmat_of(weights + lay_i[6], 128, MKC_W_BF16), 64, 8, scratch + 16384, 64, (const mkc_bf16 *)0, (float *)0, 64, 0.0f, (float *)0, scratch + 0, 64, 1, (const mkc_bf16 *)0, T, (float *)(smem + 0), (float *)0);
    }
  }
  mkc_flow_arrive(state); /* next stage reads add (line 475) written by another block */

  /* pass stage 4/5: gate_up_swiglu */
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[7], 128, MKC_W_BF16), 192, MKC_ROWS, 2);
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[8], 128, MKC_W_BF16), 192, MKC_ROWS, 2);
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T > MKC_T_MAX) { /* a prompt chunk: tiled, on tensor cores */
    mkc_gemm_swiglu(mkc_wmat_of(weights + lay_i[7], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[8], 128, MKC_W_BF16),
                    192, 0, 8, scratch + 0, 64, 64, weights + lay_i[9], 1e-05f,
                    scratch + 24576, 192, T,
                    (float *)(smem + 1728), (float *)(smem + 10944), (float *)(smem + 20160), (float *)(smem + 37568), (float *)(smem + 39616));
  } else {
    if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
      mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, 0, 1, (float *)(smem + 0), (float *)(smem + 32));
      mkc_matvec_swiglu(mkc_wmat_of(weights + lay_i[7], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[8], 128, MKC_W_BF16), 192, 8, scratch + 0, 64, weights + lay_i[9], (float *)(smem + 0), 64, 1e-05f, (float *)0, scratch + 24576, 192, 1, (float *)(smem + 48), (float *)0);
    } else {
      mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, 0, T, (float *)(smem + 0), (float *)(smem + 32));
      mkc_matvec_swiglu(mkc_wmat_of(weights + lay_i[7], 128, MKC_W_BF16), mkc_wmat_of(weights + lay_i[8], 128, MKC_W_BF16), 192, 8, scratch + 0, 64, weights + lay_i[9], (float *)(smem + 0), 64, 1e-05f, (float *)0, scratch + 24576, 192, T, (float *)(smem + 48), (float *)0);
    }
  }
  mkc_flow_arrive(state); /* next stage reads swiglu (line 466) written by another block */

  /* pass stage 5/5: matvec_residual */
  mkc_prefetch_first(mkc_wmat_of(weights + lay_i[10], 384, MKC_W_BF16), 64, mkc_matvec_rows_n(64), 1);
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T > MKC_T_MAX) { /* a prompt chunk: tiled, on tensor cores */
    mkc_gemm_matvec(mkc_wmat_of(weights + lay_i[10], 384, MKC_W_BF16), 64, 0, 24, scratch + 24576, 192, 192, (const mkc_bf16 *)0, 0.0f,
                    scratch + 0, 64, 1, (const mkc_bf16 *)0, T,
                    (const mkc_state *)0, (const mkc_rowmap *)0, (float *)0, (int *)0, (float *)(smem + 880), (float *)(smem + 10096), (float *)(smem + 19312), (float *)(smem + 36720), (float *)(smem + 38768));
  } else {
    if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
      mkc_matvec(mkc_wmat_of(weights + lay_i[10], 384, MKC_W_BF16), 64, 24, scratch + 24576, 192, (const mkc_bf16 *)0, (float *)0, 192, 0.0f, (float *)0, scratch + 0, 64, 1, (const mkc_bf16 *)0, 1, (float *)(smem + 0), (float *)0);
    } else {
      mkc_matvec(mkc_wmat_of(weights + lay_i[10], 384, MKC_W_BF16), 64, 24, scratch + 24576, 192, (const mkc_bf16 *)0, (float *)0, 192, 0.0f, (float *)0, scratch + 0, 64, 1, (const mkc_bf16 *)0, T, (float *)(smem + 0), (float *)0);
    }
  }
  mkc_flow_arrive(state); /* next stage reads add (line 478) written by another block */
  } /* layer loop */

  /* stage 12/15: lm_head -- rmsnorm output_norm.weight (line 480), matmul token_embd.weight (line 483), logits (line 483)
   * work: 256 vocab rows, one warp per row; argmax partial per block; smem 208 bytes
   * nodes: 52 53 54; items: 256, one warp each; flops: 32768*t; sync: flow
   * smem: inv_rms 0+32, red 32+16, warp_val 48+80, warp_idx 128+80
   * reads: weights+0 32768 (token_embd.weight), scratch+0 256*t (add (line 478)), weights+115200 128 (output_norm.weight)
   * writes: scratch+8192 1024*t (logits (line 483)) */
  mkc_prefetch_first(mkc_wmat_of(weights + 0, 128, MKC_W_BF16), 256, MKC_ROWS, 1);
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  if (T == 1) { /* one input: T = 1, t0 = 0 written as literals */
    mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, 0, 1, (float *)(smem + 0), (float *)(smem + 32));
    mkc_lm_head(mkc_wmat_of(weights + 0, 128, MKC_W_BF16), 256, 8, scratch + 0, 64, weights + 115200, (float *)(smem + 0),
                scratch + 8192, 256, 0, 1, state, (const mkc_rowmap *)0, scratch + 49152, (int *)(scratch + 54272),
                (float *)(smem + 48), (int *)(smem + 128));
  } else {
    mkc_rms_prologue(scratch + 0, 64, 64, 1e-05f, t0, T, (float *)(smem + 0), (float *)(smem + 32));
    mkc_lm_head(mkc_wmat_of(weights + 0, 128, MKC_W_BF16), 256, 8, scratch + 0, 64, weights + 115200, (float *)(smem + 0),
                scratch + 8192, 256, t0, T, state, (const mkc_rowmap *)0, scratch + 49152, (int *)(scratch + 54272),
                (float *)(smem + 48), (int *)(smem + 128));
  }
  mkc_flow_arrive(state); /* next stage reads logits (line 483) written by another block */

  /* stage 13/15: sample_cands -- no graph node
   * work: T positions x every block's slice of the vocabulary: penalties, the slice's top-k; smem 1568 bytes
   * nodes: none; items: 256*t, one thread each; flops: 0; sync: flow
   * smem: red 0+16, part 16+512, sel 528+16, hist 544+1024
   * reads: none
   * writes: none */
  if (!drafting && mkc_cands_on(&state->sampling, 256)) {
    mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
    mkc_sample_cands(state, (const int *)(scratch + 97280), scratch + 8192, 256, 256, pos, t0, T, scratch + 97792, (int *)(scratch + 99072), scratch + 100352, (int *)(scratch + 105472), scratch + 110592, (float *)(smem + 0), (float *)(smem + 16), (unsigned *)(smem + 544), (int *)(smem + 528));
    mkc_flow_arrive(state); /* next stage reads the candidates' maxima, counts and k-th values written by another block */
  }

  /* stage 14/15: sample -- no graph node
   * work: T positions, one block each: penalties, top-k/top-p/min-p thresholds, draws; smem 1568 bytes
   * nodes: none; items: 1*t, one block each; flops: 0; sync: flow
   * smem: red 0+16, part 16+512, winner 528+16, hist 544+1024
   * reads: none
   * writes: none */
  if (!drafting && mkc_sampling_on(&state->sampling)) {
    mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
    mkc_sample(state, (const int *)(scratch + 97280), scratch + 8192, 256, 256, pos, t0, T, 0, scratch + 97792, (int *)(scratch + 99072), mkc_cands_on(&state->sampling, 256), scratch + 100352, (const int *)(scratch + 105472), scratch + 110592, (int *)(scratch + 115712), (int *)(scratch + 116992), scratch + 117002, scratch + 117120, (float *)(smem + 0), (float *)(smem + 16), (int *)(smem + 528), (unsigned *)(smem + 544));
    mkc_flow_arrive(state); /* next stage reads sampled tokens written by another block */
  }

  /* stage 15/15: accept -- no graph node
   * work: T tokens, block 0 only (its threads share the argmax over the blocks' partials); smem 64 bytes
   * nodes: none; items: 1*t, one thread of block 0 each; flops: 0; sync: end
   * smem: choice 0+32, red_v 32+16, red_i 48+16
   * reads: none
   * writes: none */
  mkc_flow_wait(state, &flow_waited); /* the last stage's writes, every block's */
  mkc_accept(state, scratch + 49152, (const int *)(scratch + 54272), (const int *)(scratch + 116992), scratch + 117002, (int *)(scratch + 97280), 256, pos, t0, T, 0, scratch + 97792, scratch + 117120, (int *)(scratch + 117056), (int *)(smem + 0), (float *)(smem + 32), (int *)(smem + 48));

  if (!mkc_round_next(state, (const int *)(scratch + 97280), 512, drafting, (int *)smem)) return;
  } /* rounds */
}
