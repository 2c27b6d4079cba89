/* Device prelude for NVRTC: the only CUDA features templates may use.
 * templates/prelude_cpu.h provides the same names for the SIMT emulator, so
 * one emitted source serves both backends. No CUDA headers are included. */
#define MKC_KERNEL extern "C" __global__ void __launch_bounds__(MKC_THREADS)
#define MKC_DEVICE static __device__ __forceinline__

typedef unsigned short mkc_bf16;
typedef unsigned short mkc_f16;
typedef struct {
  unsigned x, y, z, w;
} mkc_u4;
typedef struct {
  float x, y, z, w;
} mkc_f4;

MKC_DEVICE int mkc_tid(void) { return (int)threadIdx.x; }
MKC_DEVICE int mkc_bid(void) { return (int)blockIdx.x; }
MKC_DEVICE int mkc_nblocks(void) { return (int)gridDim.x; }
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

MKC_DEVICE unsigned mkc_atomic_add_u32(unsigned *p, unsigned v) { return atomicAdd(p, v); }
MKC_DEVICE void mkc_store_u32(unsigned *p, unsigned v) { *(volatile unsigned *)p = v; }
MKC_DEVICE unsigned mkc_load_volatile_u32(const unsigned *p) {
  return *(const volatile unsigned *)p;
}
MKC_DEVICE void mkc_fence(void) { __threadfence(); }
MKC_DEVICE void mkc_pause(void) { __nanosleep(64); }

/* A float's bit pattern (the sampler orders floats by it). */
MKC_DEVICE unsigned mkc_f32_bits(float f) { return __float_as_uint(f); }
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
/* The 8 bytes of v (byte i = bits 8i..8i+7) as floats, unsigned or signed. */
MKC_DEVICE void mkc_u8x8_to_f32(unsigned long long v, float *f) {
  for (int i = 0; i < 8; i++) f[i] = (float)(unsigned)((v >> 8 * i) & 255u);
}
MKC_DEVICE void mkc_s8x8_to_f32(unsigned long long v, float *f) {
  for (int i = 0; i < 8; i++) f[i] = (float)(signed char)(v >> 8 * i);
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
MKC_DEVICE float mkc_dot_acc_sum(mkc_dot_acc acc) { return acc; }
MKC_DEVICE mkc_u4 mkc_load_u4(const void *p) {
  uint4 v = *(const uint4 *)p;
  mkc_u4 r = {v.x, v.y, v.z, v.w};
  return r;
}
MKC_DEVICE mkc_f4 mkc_load_f4(const float *p) {
  float4 v = *(const float4 *)p;
  mkc_f4 r = {v.x, v.y, v.z, v.w};
  return r;
}
