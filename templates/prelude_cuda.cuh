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

MKC_DEVICE unsigned mkc_atomic_add_u32(unsigned *p, unsigned v) { return atomicAdd(p, v); }
MKC_DEVICE void mkc_store_u32(unsigned *p, unsigned v) { *(volatile unsigned *)p = v; }
MKC_DEVICE unsigned mkc_load_volatile_u32(const unsigned *p) {
  return *(const volatile unsigned *)p;
}
MKC_DEVICE void mkc_fence(void) { __threadfence(); }
MKC_DEVICE void mkc_pause(void) { __nanosleep(64); }

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
