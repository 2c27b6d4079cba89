/* Host prelude: the CPU twin of prelude_cuda.cuh. An emitted kernel compiled as
 * C by the host compiler (runtime/backend/cpu/backend.c) runs on the SIMT
 * emulator (runtime/backend/cpu/simt.c): every emulated thread calls mkc_step,
 * and the names below
 * ask the emulator for ids, barriers and shuffles. Same names, same semantics
 * as the CUDA prelude, so one emitted source serves both backends.
 *
 * The first part is the ABI between kernels and the emulator; simt.c includes
 * only that part (MKC_SIMT_ABI_ONLY), so both sides compile against one
 * declaration. The emulator lives in the host binary, linked with -rdynamic. */
#ifndef MKC_PRELUDE_CPU_H
#define MKC_PRELUDE_CPU_H

/* The emulated thread now running on this OS thread. One OS thread runs one
 * block, its emulated threads as fibers, and the emulator rewrites tid and
 * fiber at every fiber switch. Initial-exec TLS: the variable is defined in
 * the host executable, so it sits in static TLS and a kernel reads it with one
 * %fs-relative load instead of a __tls_get_addr call. */
typedef struct mkc_simt_self {
  int tid;                      /* threadIdx.x */
  int bid;                      /* blockIdx.x */
  int nblocks;                  /* gridDim.x */
  char *smem;                   /* the block's dynamic shared memory, 64-byte aligned */
  struct mkc_simt_fiber *fiber; /* emulator-private */
} mkc_simt_self;

extern __thread mkc_simt_self mkc_simt_cur __attribute__((tls_model("initial-exec")));

void mkc_simt_sync_block(void);                   /* __syncthreads() */
void mkc_simt_sync_warp(void);                    /* __syncwarp() with a full mask */
unsigned mkc_simt_shfl_xor(unsigned v, int mask); /* __shfl_xor_sync(0xffffffff, v, mask) */
void mkc_simt_warp_sum(float *v, int rows, int stride, int n); /* mkc_warp_sum_rows */
void mkc_simt_warp_sum_width(float *v, int n, int width);      /* mkc_warp_sum_width */
/* MKC_WARP_SUM_OF: a lane function run for every lane, then the warp sum;
 * with a warp function (may be null), the sums themselves in one call: row
 * r's n values at sums + r * n. */
typedef void (*mkc_simt_lane_fn)(const void *args, int lane, float *v);
typedef void (*mkc_simt_warp_fn)(const void *args, float *sums);
void mkc_simt_warp_sum_of(mkc_simt_lane_fn fn, mkc_simt_warp_fn warp_fn, const void *args, float *v,
                          int rows, int stride, int n);
/* Whether the sums of the lane's next mkc_simt_warp_sum_of (rows, stride and
 * n as it will pass them) are made already, by the first lane of its warp to
 * get there: then they are in v (unless v is null: a lane that reads none),
 * that call is taken, and the lane need not build its arguments. 0 on the
 * checking schedule, where every lane runs its own lane function. */
int mkc_simt_warp_sum_ready(float *v, int rows, int stride, int n);
void mkc_simt_pause(void); /* one turn of a spin-wait on other blocks */
/* After a write another block may spin for (the atomics below): wakes the
 * blocks the emulator put to sleep in mkc_simt_pause. */
void mkc_simt_wrote(void);
/* mkc_mma_tf32 (see the CUDA prelude): a warp meeting in which every lane
 * deposits its fragments, the first lane released computes the tiles, and
 * each lane reads back its accumulators. */
void mkc_simt_mma_tf32(const unsigned *a, const unsigned *b, int nb, float *c, int mt, int nt,
                       int MT, int NT);
/* mkc_mma_tf32_queue / mkc_mma_flush: the lane's fragments stored, and the
 * queue run in one warp meeting at the flush (fewer meetings: lane switches
 * are the emulator's main cost). */
void mkc_simt_mma_tf32_queue(const unsigned *a, const unsigned *b, int nb, int mt, int nt, int MT,
                             int NT);
/* The same with one part each of A ([MT][4]) and B ([NT][2]): one product. */
void mkc_simt_mma_tf32_1_queue(const unsigned *a, const unsigned *b, int mt, int nt, int MT,
                               int NT);
void mkc_simt_mma_flush(float *c);
/* Nonzero while the launch runs on the checking schedule (MKC_SIMT_SEED):
 * there the emulator's shortcuts for whole warps and blocks step aside and
 * every lane runs the GPU's code. */
int mkc_simt_checking(void);

#include <string.h>
/* The sum of 32 lanes' values v[0..31] as the shuffle butterfly (masks 16
 * down to 1) leaves it in every lane, bit for bit: after mask m, lane l < m
 * holds its value plus lane l + m's (float addition commutes, so the lanes
 * of a pair agree). Part of the ABI: the emulator's warp sums and the
 * kernels' warp functions add lanes by this one definition. */
typedef float mkc_v16_f __attribute__((vector_size(64)));
typedef float mkc_v8_f __attribute__((vector_size(32)));
typedef float mkc_v4_f __attribute__((vector_size(16)));
static inline float mkc_lanes_sum(const float *v) {
  mkc_v16_f a, b;
  memcpy(&a, v, sizeof a);
  memcpy(&b, v + 16, sizeof b);
  a += b; /* mask 16 */
  mkc_v8_f c, d;
  memcpy(&c, &a, sizeof c);
  memcpy(&d, (const float *)&a + 8, sizeof d);
  c += d; /* mask 8 */
  mkc_v4_f e, f;
  memcpy(&e, &c, sizeof e);
  memcpy(&f, (const float *)&c + 4, sizeof f);
  e += f;                               /* mask 4 */
  return (e[0] + e[2]) + (e[1] + e[3]); /* masks 2 and 1 */
}

#ifndef MKC_SIMT_ABI_ONLY
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#define MKC_KERNEL __attribute__((visibility("default"))) void
#define MKC_DEVICE static inline
/* called, not inlined at every stage: the host compiler's time (the GPU inlines it) */
#define MKC_DEVICE_CALLED static __attribute__((noinline))
/* Inlined wherever it is called, whatever the compiler would choose: a body
 * specialized on a literal argument. */
#define MKC_DEVICE_INLINE static inline __attribute__((always_inline))
/* read-only data of the kernel (the layer loop's tables) */
#define MKC_CONSTANT static const
#define MKC_TABLE static const
#define MKC_UNROLL /* the host compiler unrolls as it sees fit */

typedef unsigned short mkc_bf16;
typedef unsigned short mkc_f16;
typedef struct {
  unsigned x, y, z, w;
} mkc_u4;
typedef struct {
  float x, y, z, w;
} mkc_f4;

MKC_DEVICE int mkc_tid(void) { return mkc_simt_cur.tid; }
MKC_DEVICE int mkc_bid(void) { return mkc_simt_cur.bid; }
MKC_DEVICE int mkc_nblocks(void) { return mkc_simt_cur.nblocks; }
MKC_DEVICE char *mkc_smem(void) { return mkc_simt_cur.smem; }
/* opaque to the GPU's compiler (prelude_cuda.cuh); the host's hoisting does no harm */
MKC_DEVICE const mkc_bf16 *mkc_opaque_weights(const mkc_bf16 *w) { return w; }

MKC_DEVICE void mkc_sync_block(void) { mkc_simt_sync_block(); }
MKC_DEVICE void mkc_sync_warp(void) { mkc_simt_sync_warp(); }
MKC_DEVICE float mkc_shfl_xor(float v, int mask) {
  unsigned u;
  memcpy(&u, &v, sizeof u);
  u = mkc_simt_shfl_xor(u, mask);
  memcpy(&v, &u, sizeof v);
  return v;
}
MKC_DEVICE int mkc_shfl_xor_int(int v, int mask) {
  return (int)mkc_simt_shfl_xor((unsigned)v, mask);
}
/* The CUDA prelude's butterfly, bit for bit, in one meeting of the warp
 * instead of one per shuffle: fiber switches are the emulator's main cost. */
MKC_DEVICE void mkc_warp_sum_rows(float *v, int rows, int stride, int n) {
  mkc_simt_warp_sum(v, rows, stride, n);
}
MKC_DEVICE void mkc_warp_sum_width(float *v, int n, int width) {
  mkc_simt_warp_sum_width(v, n, width);
}
/* fn(args, lane, v) in every lane, then mkc_warp_sum_rows(v, ...) (see the
 * CUDA prelude). The emulator may run fn for all 32 lanes in the first lane
 * that gets here, and give the others the sums without a meeting. */
#define MKC_WARP_SUM_OF(fn, args, v, rows, stride, n)                                              \
  mkc_simt_warp_sum_of(fn, 0, args, v, rows, stride, n)
/* MKC_WARP_SUM_OF with warp_fn(args, sums) giving its sums bit for bit (row
 * r's n values at sums + r * n; mkc_lanes_sum adds 32 lanes' values in the
 * butterfly's order): the emulator runs it instead of 32 calls of fn and the
 * butterfly, except under the checking schedule. */
#define MKC_WARP_SUM_OF_WARP(fn, warp_fn, args, v, rows, stride, n)                                \
  mkc_simt_warp_sum_of(fn, warp_fn, args, v, rows, stride, n)

/* Blocks are OS threads: cross-block traffic goes through seq_cst atomics. The
 * spin-waits (mkc_pause) wait on nothing else, so each write is followed by
 * mkc_simt_wrote. */
MKC_DEVICE unsigned mkc_atomic_add_u32(unsigned *p, unsigned v) {
  unsigned old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  mkc_simt_wrote();
  return old;
}
MKC_DEVICE void mkc_store_u32(unsigned *p, unsigned v) {
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
  mkc_simt_wrote();
}
MKC_DEVICE unsigned mkc_load_volatile_u32(const unsigned *p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
MKC_DEVICE void mkc_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/* Release and acquire, as the GPU's red.release / ld.acquire. */
MKC_DEVICE void mkc_add_release_u32(unsigned *p, unsigned v) {
  __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
  mkc_simt_wrote();
}
MKC_DEVICE unsigned mkc_load_acquire_u32(const unsigned *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
/* Yields the OS thread (other blocks need it), or sleeps until another block
 * writes, not the fiber: see simt.c on spins. */
MKC_DEVICE void mkc_pause(void) { mkc_simt_pause(); }

/* A float's bit pattern (the sampler orders floats by it). */
MKC_DEVICE unsigned mkc_f32_bits(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
/* and back: the float of a bit pattern (a tf32 operand's value). */
MKC_DEVICE float mkc_bits_f32(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* sin(pi x) and cos(pi x) */
MKC_DEVICE void mkc_sincospif(float x, float *s, float *c) {
  *s = (float)sin(3.14159265358979323846 * (double)x);
  *c = (float)cos(3.14159265358979323846 * (double)x);
}
MKC_DEVICE float mkc_bf16_to_f32(mkc_bf16 h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* Rounding to 16 bits, to nearest even: the bit tricks of the runtime's
 * mkc_float_to_bf16 (weights.c) and mkc_float_to_f16 (dequant.c), which the
 * reference executor uses, so both round alike. f16 overflows to inf from
 * 65520 up; NaN stays NaN. */
MKC_DEVICE mkc_bf16 mkc_f32_to_bf16(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (mkc_bf16)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* add 0x7fff plus the lowest kept bit, then truncate */
  return (mkc_bf16)(u >> 16);
}
MKC_DEVICE mkc_f16 mkc_f32_to_f16(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  unsigned sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu, e = a >> 23, h, rest, half;
  if (a > 0x7f800000u) return (mkc_f16)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
  if (a >= 0x477ff000u) return (mkc_f16)(sign | 0x7c00u); /* 65520 and up round to inf */
  if (e < 113) {                                          /* below 2^-14: subnormal or zero */
    if (e < 102) return (mkc_f16)sign;                    /* below 2^-25: rounds to zero */
    unsigned m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
    h = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  } else {
    h = (e - 112) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu, half = 0x1000u;
  }
  if (rest > half || (rest == half && (h & 1u))) h++; /* a carry moves into the exponent */
  return (mkc_f16)(sign | h);
}
MKC_DEVICE float mkc_f16_to_f32(mkc_f16 h) {
#ifdef __F16C__ /* the hardware's conversion (exact, as below): quantized blocks' scales need it   \
                 */
  return _cvtsh_ss(h);
#endif
  unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    float f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  u = sign | (e == 31 ? 0x7f800000u | m << 13 : (e + 112) << 23 | m << 13); /* inf, NaN; normal */
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* 16-byte loads of a misaligned address fault on the GPU: fail here too. */
MKC_DEVICE mkc_u4 mkc_load_u4(const void *p) {
  assert((uintptr_t)p % 16 == 0 && "mkc_load_u4: a 16-byte load needs a 16-byte aligned address");
  mkc_u4 r;
  memcpy(&r, p, sizeof r);
  return r;
}
/* A weight row's 16 bytes (the GPU reads them past L1; here the same load). */
MKC_DEVICE mkc_u4 mkc_load_weight_u4(const void *p) { return mkc_load_u4(p); }
/* The GPU's cp.async (MKC_CP_RING): here the copy lands at once, so a read
 * of a slot before its copy, or a copy over a slot not yet read, gives wrong
 * values rather than a lucky right one; the waits have nothing to wait for. */
MKC_DEVICE void mkc_cp_async16(void *dst, const void *src) {
  assert((uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0 &&
         "mkc_cp_async16: cp.async of 16 bytes needs both addresses 16-byte aligned");
  memcpy(dst, src, 16);
}
MKC_DEVICE void mkc_cp_commit(void) {}
MKC_DEVICE void mkc_cp_wait(int n) { (void)n; }
MKC_DEVICE mkc_u4 mkc_load_shared_u4(const void *p) { return mkc_load_u4(p); }
MKC_DEVICE mkc_f4 mkc_load_f4(const float *p) {
  assert((uintptr_t)p % 16 == 0 && "mkc_load_f4: a 16-byte load needs a 16-byte aligned address");
  mkc_f4 r;
  memcpy(&r, p, sizeof r);
  return r;
}
/* n bytes at p into v, little-endian as this host is, after checking that p
 * is as aligned as the GPU's load of them needs (quantized blocks' fields). */
MKC_DEVICE void mkc_load_aligned(void *v, const void *p, size_t n, size_t align) {
  assert((uintptr_t)p % align == 0 && "a quantized field's load: its address not that aligned");
  memcpy(v, p, n);
}
/* 8 bytes from a 2-byte aligned address; 2 and 4 bytes from addresses that
 * aligned; 8 bytes from a 4- and an 8-byte aligned one. */
MKC_DEVICE unsigned long long mkc_load8_a2(const void *p) {
  unsigned long long v;
  mkc_load_aligned(&v, p, sizeof v, 2);
  return v;
}
MKC_DEVICE unsigned mkc_load2(const void *p) {
  unsigned short v;
  mkc_load_aligned(&v, p, sizeof v, 2);
  return v;
}
MKC_DEVICE unsigned mkc_load4(const void *p) {
  unsigned v;
  mkc_load_aligned(&v, p, sizeof v, 4);
  return v;
}
MKC_DEVICE unsigned long long mkc_load8_a4(const void *p) {
  unsigned long long v;
  mkc_load_aligned(&v, p, sizeof v, 4);
  return v;
}
MKC_DEVICE unsigned long long mkc_load8(const void *p) {
  unsigned long long v;
  mkc_load_aligned(&v, p, sizeof v, 8);
  return v;
}
/* A quantized block's fields (the GPU reads them past L1; here the same loads). */
MKC_DEVICE unsigned mkc_load_weight1(const void *p) { return *(const unsigned char *)p; }
MKC_DEVICE unsigned mkc_load_weight2(const void *p) { return mkc_load2(p); }
MKC_DEVICE unsigned mkc_load_weight4(const void *p) { return mkc_load4(p); }
MKC_DEVICE unsigned long long mkc_load_weight8(const void *p) { return mkc_load8(p); }
MKC_DEVICE unsigned long long mkc_load_weight8_a2(const void *p) { return mkc_load8_a2(p); }
MKC_DEVICE unsigned long long mkc_load_weight8_a4(const void *p) { return mkc_load8_a4(p); }
/* The count of set bits. */
MKC_DEVICE int mkc_popc(unsigned x) { return __builtin_popcount(x); }
/* __byte_perm for selector nibbles below 8: byte k of the result is byte (s >> 4k) & 7 of y:x. */
MKC_DEVICE unsigned mkc_byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int k = 0; k < 4; k++) r |= (unsigned)(v >> 8 * (s >> 4 * k & 7) & 255u) << 8 * k;
  return r;
}
/* Nanoseconds of a monotonic clock: the CPU's %globaltimer. */
MKC_DEVICE unsigned long long mkc_globaltimer(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
/* A hint that p will be read soon, once: emulated lanes run one after
 * another, so without it a lane's few loads wait on memory one lane at a time. */
MKC_DEVICE void mkc_prefetch(const void *p) { __builtin_prefetch(p, 0, 0); }
/* A lane's running dot product (see the CUDA prelude): here 8 partial sums,
 * one per position in the chunk, so that a chunk costs one vector multiply-add
 * (GCC vector types; -march=native picks the widest SIMD) and the tree is
 * summed once, at the end. The same products, added in another order: the
 * CPU's sums differ from the GPU's in the last bits, as FMA contraction
 * already makes them, and both are checked against the reference. */
#pragma GCC diagnostic ignored "-Wpsabi" /* static inline: no ABI crosses a boundary */
typedef unsigned short mkc_v8u16 __attribute__((vector_size(16)));
typedef unsigned mkc_v8u32 __attribute__((vector_size(32)));
typedef float mkc_dot_acc __attribute__((vector_size(32)));
MKC_DEVICE mkc_dot_acc mkc_dot_acc_zero(void) {
  mkc_dot_acc z = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  return z;
}
/* The 8 bytes of v (byte i = bits 8i..8i+7) as floats, signed or not (a
 * literal): a quantized chunk's values, one widening and one conversion with
 * AVX2. As a value the caller keeps in a register, where a store through a
 * float pointer keeps its vector (and, with it, an array of them) in memory. */
MKC_DEVICE mkc_dot_acc mkc_b8x8_v(unsigned long long v, int is_signed) {
  mkc_dot_acc f;
#ifdef __AVX2__
  __m128i b = _mm_cvtsi64_si128((long long)v);
  __m256 r = _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
  memcpy(&f, &r, sizeof f);
#else
  for (int i = 0; i < 8; i++)
    f[i] = is_signed ? (float)(signed char)(v >> 8 * i) : (float)(unsigned char)(v >> 8 * i);
#endif
  return f;
}
MKC_DEVICE mkc_dot_acc mkc_u8x8_v(unsigned long long v) { return mkc_b8x8_v(v, 0); }
MKC_DEVICE mkc_dot_acc mkc_s8x8_v(unsigned long long v) { return mkc_b8x8_v(v, 1); }
/* The same into f[0..7]. */
MKC_DEVICE void mkc_u8x8_to_f32(unsigned long long v, float *f) {
  mkc_dot_acc r = mkc_u8x8_v(v);
  memcpy(f, &r, sizeof r);
}
MKC_DEVICE void mkc_s8x8_to_f32(unsigned long long v, float *f) {
  mkc_dot_acc r = mkc_s8x8_v(v);
  memcpy(f, &r, sizeof r);
}
/* The same less k (a small whole number): exact, as the GPU's. */
MKC_DEVICE void mkc_u8x8_minus_f32(unsigned long long v, float k, float *f) {
  mkc_u8x8_to_f32(v, f);
  for (int i = 0; i < 8; i++) f[i] -= k;
}
/* 8 bf16s as floats (mkc_unpack8's values) in one vector: built in a register,
 * where two 16-byte stores read back as one 32-byte load stall the load. */
MKC_DEVICE mkc_dot_acc mkc_bf16x8_v(mkc_u4 w) {
  mkc_v8u16 h;
  memcpy(&h, &w, sizeof h);
  mkc_v8u32 u = __builtin_convertvector(h, mkc_v8u32) << 16;
  mkc_dot_acc wf;
  memcpy(&wf, &u, sizeof wf);
  return wf;
}
/* acc + w x for 8 weights and 8 inputs as vectors (the emulator's warp path
 * loads them so; the lane path's forms below come here too: the same bits). */
MKC_DEVICE mkc_dot_acc mkc_dot8_bf16_v(mkc_dot_acc acc, mkc_u4 w, mkc_dot_acc x) {
  return acc + mkc_bf16x8_v(w) * x;
}
MKC_DEVICE mkc_dot_acc mkc_dot8_f32_v(mkc_dot_acc acc, const float *w, mkc_dot_acc x) {
  mkc_dot_acc wf;
  memcpy(&wf, w, sizeof wf);
  return acc + wf * x;
}
MKC_DEVICE mkc_dot_acc mkc_dot8_bf16(mkc_dot_acc acc, mkc_u4 w, mkc_f4 a, mkc_f4 b) {
  mkc_dot_acc x = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  return mkc_dot8_bf16_v(acc, w, x);
}
/* Eight weights already decoded to float (a quantized row's chunk). */
MKC_DEVICE mkc_dot_acc mkc_dot8_f32(mkc_dot_acc acc, const float *w, mkc_f4 a, mkc_f4 b) {
  mkc_dot_acc x = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  return mkc_dot8_f32_v(acc, w, x);
}
/* acc + a b, rounded once, as the GPU's (weights.cuh's mkc_dot8_q): in the
 * first of the 8 partials, the others 0 for such a row, so the sum is the
 * GPU's bit for bit. Only builds with MKC_DOT_CODES take this path. */
MKC_DEVICE mkc_dot_acc mkc_dot_acc_fma(mkc_dot_acc acc, float a, float b) {
  acc[0] = fmaf(a, b, acc[0]);
  return acc;
}
/* Tensor cores (templates/gemm.cuh): a float as tf32, to nearest with ties
 * away from zero, as cvt.rna.tf32.f32 (inf stays inf, NaN a quiet NaN). */
MKC_DEVICE unsigned mkc_tf32(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffe000u; /* NaN: a quiet one */
  return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
}
/* mma.sync m16n8k8 tf32 (the CUDA prelude says what it computes), emulated
 * in one meeting of the warp from the fragments in the PTX ISA's layout. */
MKC_DEVICE void mkc_mma_tf32(const unsigned *a, const unsigned *b, int nb, float *c, int mt, int nt,
                             int MT, int NT) {
  mkc_simt_mma_tf32(a, b, nb, c, mt, nt, MT, NT);
}
MKC_DEVICE void mkc_mma_tf32_queue(const unsigned *a, const unsigned *b, int nb, float *c, int mt,
                                   int nt, int MT, int NT) {
  (void)c;
  mkc_simt_mma_tf32_queue(a, b, nb, mt, nt, MT, NT);
}
MKC_DEVICE void mkc_mma_tf32_1_queue(const unsigned *a, const unsigned *b, float *c, int mt, int nt,
                                     int MT, int NT) {
  (void)c;
  mkc_simt_mma_tf32_1_queue(a, b, mt, nt, MT, NT);
}
MKC_DEVICE void mkc_mma_flush(float *c) { mkc_simt_mma_flush(c); }
MKC_DEVICE float mkc_dot_acc_sum(mkc_dot_acc p) {
  float q0 = p[0] + p[4], q1 = p[1] + p[5], q2 = p[2] + p[6], q3 = p[3] + p[7];
  return (q0 + q2) + (q1 + q3);
}
#endif /* MKC_SIMT_ABI_ONLY */

#endif
