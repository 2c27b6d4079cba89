// What a megakernel stage costs beyond its bytes, measured apart from mkc's kernel (issue 12).
// The H200's stage timers put the short matmul stages at 26-28 % of copy bandwidth and a
// stage of no weights (attention at 64 positions) at about 4.5 us: this tells the two causes
// apart. Three things, each a persistent cooperative kernel with mkc's flow protocol (one
// counter, red.release.gpu by each block's thread 0 after __syncthreads, ld.acquire.gpu spins,
// templates/common.cuh):
//   hop    stages of no work: the cost of one flow wait and arrival, by block shape and the
//          spin's __nanosleep;
//   stream stages that each read M bytes of weights no earlier stage read (a 2.5 GB arena, as
//          llama-3.2-1b's), every thread 16-byte non-caching loads in batches of U, the next
//          batch issued before the last is used (2U in flight), the grid strided: the floor of a matmul stage's structure at sizes of llama-3.2-1b's stages,
//          with the loads issued after the wait (as mkc does), the first U issued before it
//          (into registers: weights depend on no other block), or the thread's whole share
//          asked of L2 before it (prefetch.global.L2);
//   read   one pass over the arena, no stages: the read bandwidth a stage could reach.
// Plus cudaMemcpy device to device of 1 GiB, counted read + write as mkc bench counts it.
// Built here by nvcc (tests/gpu/pack.sh); a GPU runs it (tests/gpu/bench.sh). Prints tables.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "probe_flow: %s: %s\n", #x, cudaGetErrorString(e_));                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

__device__ __forceinline__ void flow_arrive(unsigned *c) {
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
}

__device__ __forceinline__ void flow_wait(unsigned *c, unsigned target, int pause) {
  if (threadIdx.x == 0)
    for (;;) {
      unsigned v;
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(c) : "memory");
      if ((int)(v - target) >= 0) break;
      if (pause) __nanosleep(pause);
    }
  __syncthreads();
}

__device__ __forceinline__ uint4 load_nc(const uint4 *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ float take(uint4 v) { // a cheap use of every word, as a dot's FMAs
  return __uint_as_float(v.x << 16) + __uint_as_float(v.y & 0xffff0000u) +
         __uint_as_float(v.z << 16) + __uint_as_float(v.w & 0xffff0000u);
}

__global__ void hop(unsigned *count, int stages, int pause) {
  for (int s = 0; s < stages; s++) {
    if (s > 0) flow_wait(count, (unsigned)s * gridDim.x, pause);
    flow_arrive(count);
  }
}

// mode 0: loads after the wait; 1: the first U before it, in registers; 2: the thread's whole
// share of the stage asked of L2 before it.
template <int U>
__global__ void stream(const uint4 *arena, long regions, long pieces, unsigned *count, int stages,
                       int mode, float *sink) {
  long g = (long)blockIdx.x * blockDim.x + threadIdx.x, G = (long)gridDim.x * blockDim.x;
  float acc = 0.0f;
  for (int s = 0; s < stages; s++) {
    const uint4 *w = arena + (s % regions) * pieces;
    uint4 v[U];
    long i = g;
    if (mode == 1)
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = i + u * G < pieces ? load_nc(w + i + u * G) : make_uint4(0, 0, 0, 0);
    if (mode == 2 && (g & 7) == 0) // a 128-byte line is 8 threads' pieces: one asks for it
      for (long j = g; j < pieces; j += G) asm volatile("prefetch.global.L2 [%0];" ::"l"(w + j));
    if (s > 0) flow_wait(count, (unsigned)s * gridDim.x, 64);
    if (mode != 1)
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = i + u * G < pieces ? load_nc(w + i + u * G) : make_uint4(0, 0, 0, 0);
    for (;;) {
      long next = i + U * G;
      uint4 n[U];
#pragma unroll
      for (int u = 0; u < U; u++) n[u] = next + u * G < pieces ? load_nc(w + next + u * G) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < U; u++) acc += take(v[u]);
      if (next >= pieces) break;
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = n[u];
      i = next;
    }
    for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, m);
    if ((threadIdx.x & 31) == 0) sink[g / 32] = acc; // keeps the loads; the next stage's input
    flow_arrive(count);
  }
}

static int sms;

// Blocks for a cooperative launch of k at `threads`, per SM at most `per_sm`; 0 where none fit.
template <typename K> static int grid_of(K k, int threads, int per_sm) {
  int fit = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, k, threads, 0));
  return (fit < per_sm ? fit : per_sm) * sms;
}

static float launch_ms(const void *k, int blocks, int threads, void **args, unsigned *count) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  float best = 1e30f;
  for (int rep = 0; rep < 3; rep++) { // the best of 3: the first pays for cold pages
    CHECK(cudaMemset(count, 0, 4));
    CHECK(cudaEventRecord(a));
    CHECK(cudaLaunchCooperativeKernel(k, blocks, threads, args, 0, 0));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (ms < best) best = ms;
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return best;
}

static const void *stream_kernel(int u) {
  return u == 2 ? (const void *)stream<2> : u == 4 ? (const void *)stream<4> : (const void *)stream<8>;
}

int main(void) {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  sms = p.multiProcessorCount;
  int drv = 0;
  CHECK(cudaDriverGetVersion(&drv));
  printf("probe_flow: %s, %d SMs, L2 %d MB, driver CUDA %d\n", p.name, sms, p.l2CacheSize >> 20, drv);
  if (!p.cooperativeLaunch) {
    printf("probe_flow: no cooperative launch on this device\n");
    return 1;
  }
  unsigned *count;
  float *sink;
  CHECK(cudaMalloc(&count, 4));
  CHECK(cudaMalloc(&sink, 1 << 20));

  // copy bandwidth as mkc bench measures it: 1 GiB device to device, read + write
  const size_t arena_bytes = (size_t)5 << 29; // 2.5 GiB, llama-3.2-1b's weights
  char *arena;
  CHECK(cudaMalloc(&arena, arena_bytes));
  CHECK(cudaMemset(arena, 0x3f, arena_bytes));
  {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    float best = 1e30f;
    for (int rep = 0; rep < 3; rep++) {
      CHECK(cudaEventRecord(a));
      CHECK(cudaMemcpy(arena + ((size_t)1 << 30), arena, (size_t)1 << 30, cudaMemcpyDeviceToDevice));
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (ms < best) best = ms;
    }
    printf("copy 1 GiB: %.1f GB/s (read + write)\n", 2.0 * (1 << 30) / (best * 1e-3) / 1e9);
  }

  printf("\nhop: stages of no work, us per stage (2000 stages)\n");
  printf("| threads | blocks/SM | blocks | spin sleep 0 ns | 64 ns |\n|---:|---:|---:|---:|---:|\n");
  const int shapes[][2] = {{128, 1}, {128, 3}, {128, 4}, {256, 2}, {512, 1}, {1024, 1}};
  for (auto &sh : shapes) {
    int blocks = grid_of(hop, sh[0], sh[1]), stages = 2000;
    if (blocks == 0) continue;
    float us[2];
    for (int z = 0; z < 2; z++) {
      int pause = z ? 64 : 0;
      void *args[] = {&count, &stages, &pause};
      us[z] = launch_ms((const void *)hop, blocks, sh[0], args, count) * 1e3f / stages;
    }
    printf("| %d | %d | %d | %.2f | %.2f |\n", sh[0], blocks / sms, blocks, us[0], us[1]);
  }

  // llama-3.2-1b's stage sizes: o-proj, qkv, down, gate/up; and two more points of the line
  const double mbs[] = {2.1, 4.2, 8.39, 12.6, 33.55, 67.1};
  const int streams[][2] = {{128, 4}, {512, 1}};
  for (auto &sh : streams) {
    printf("\nstream, %d threads x %d blocks an SM: us per stage (GB/s); mode after = loads after "
           "the wait, regs = first U before it, l2 = share asked of L2 before it\n",
           sh[0], sh[1]);
    printf("| MB | U | after | regs | l2 |\n|---:|---:|---|---|---|\n");
    for (double mb : mbs) {
      long pieces = (long)(mb * 1e6 / 16), regions = (long)(arena_bytes / 16 / pieces);
      int stages = (int)(regions < 400 ? regions : 400);
      for (int u : {2, 4, 8}) {
        const void *k = stream_kernel(u);
        int fit = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, k, sh[0], 0));
        int blocks = (fit < sh[1] ? fit : sh[1]) * sms;
        if (blocks == 0) continue;
        printf("| %.2f | %d |", mb, u);
        for (int mode = 0; mode < 3; mode++) {
          const uint4 *w = (const uint4 *)arena;
          void *args[] = {&w, &regions, &pieces, &count, &stages, &mode, &sink};
          float us = launch_ms(k, blocks, sh[0], args, count) * 1e3f / stages;
          printf(" %.2f (%.0f) |", us, mb * 1e6 / (us * 1e-6) / 1e9);
        }
        printf("\n");
      }
    }
  }

  printf("\nread: one stage over the 2.5 GiB arena, 8 in flight\n");
  for (auto &sh : streams) {
    long pieces = (long)(arena_bytes / 16), regions = 1;
    int stages = 1, mode = 0;
    const uint4 *w = (const uint4 *)arena;
    int fit = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, stream<8>, sh[0], 0));
    int blocks = (fit < sh[1] ? fit : sh[1]) * sms;
    void *args[] = {&w, &regions, &pieces, &count, &stages, &mode, &sink};
    float ms = launch_ms((const void *)stream<8>, blocks, sh[0], args, count);
    printf("%d threads x %d blocks: %.1f GB/s\n", sh[0], blocks / sms, arena_bytes / (ms * 1e-3) / 1e9);
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
