/* mkc 0.1.0 -- generated: do not edit.
 * graph:   tests/fails/bad_kernel.cu, preset planted
 * hashes:  graph 0000000000000000, templates 0000000000000000, options 0000000000000000
 * options: draft_max 0 (T <= 1 tokens per step), max_ctx 16, 128 threads per block, <= 1024 blocks
 * plan:    1 stages, 0 grid barriers; scratch 64 floats, KV 0 floats, weights 0 bf16, smem 0 bytes
 * kernel:  mkc_step(weights, scratch, kv, state) runs one whole step; pos lives in state.
 * inspect: format 1: a hand-planted bad kernel for `mkc inspect --check` (tests/test_inspect.sh).
 *
 * It parses, and `mkc inspect --check` must print exactly these warnings,
 * at the template's file:line:column (through #line), and exit 1:
 * expect: templates/bad.cuh:4:9: warning: unused variable 'unused' [-Wunused-variable]
 * expect: templates/bad.cuh:7:11: warning: declaration shadows a local variable [-Wshadow]
 * expect: templates/bad.cuh:10:20: warning: implicit conversion changes signedness: 'int' to 'unsigned int' [-Wsign-conversion]
 * expect: templates/bad.cuh:12:3: warning: array index 4 is past the end of the array (that has type 'float[4]') [-Warray-bounds]
 * expect: bad_kernel.cu:26:75: warning: unused parameter 'kv' [-Wunused-parameter]
 * expect: bad_kernel.cu:26:85: warning: unused parameter 'state' [-Wunused-parameter]
 * expect: bad_kernel.cu:27:11: warning: expression result unused [-Wunused-value]
 */
#define MKC_THREADS 128
#define MKC_T_MAX 1
#define MKC_KERNEL extern "C" __global__ void __launch_bounds__(MKC_THREADS)
#define MKC_DEVICE static __device__ __forceinline__
#line 1 "templates/bad.cuh"
/* A template with the mistakes --check exists to catch. */
MKC_DEVICE float mkc_bad_sum(const float *x, int n) {
  float s = 0.0f;
  float unused = 1.0f;
  for (int i = 0; i < n; i++) {
    s += x[i];
    float s = x[i] * 2.0f;
    (void)s;
  }
  unsigned count = n;
  float a[4] = {s, s, s, s};
  a[4] = (float)count;
  return a[0];
}
#line 26 "bad_kernel.cu"
MKC_KERNEL mkc_step(const unsigned short *weights, float *scratch, float *kv, void *state) {
  weights + 1;
  /* stage 1/1: planted -- no graph node */
  scratch[0] = mkc_bad_sum(scratch, 64);
}
