#!/usr/bin/env bash
# The cuda backend's host side on a machine without a GPU: mkc loads the
# CUDA driver and NVRTC doubles of tests/fake_cuda (MKC_LIBCUDA, MKC_NVRTC),
# which keep device memory apart from host memory, queue stream work until a
# synchronization, replay captured graphs, refuse what the real driver
# refuses, and run the kernel with the CPU backend. Checked here: tokens equal
# to the cpu backend's, the calls one step makes, the kernel cache's warm
# start, ahead-of-time images per device, bench, and that every failing
# driver or NVRTC call is reported by name and place without a crash. The
# device code itself only runs on a GPU (make test-gpu).
source "$(dirname "$0")/lib.sh"
fake=$PWD/build/fake_cuda
export MKC_LIBCUDA=$fake/libcuda.so.1 MKC_NVRTC=$fake/libnvrtc.so
# The cuda images (the fake NVRTC's) are this test's own: it checks cold and
# warm starts. The cpu backend's kernels behind them are the cpu tests' (the
# same sources, the same keys): with the suite's cache (tests/run.sh), each
# compiles once for both.
suite_cache=${MKC_CACHE_DIR:-}
export MKC_CACHE_DIR=$tmp/cache
if [ -n "$suite_cache" ]; then
  mkdir -p "$suite_cache/cpu" "$MKC_CACHE_DIR" && ln -s "$(realpath "$suite_cache/cpu")" "$MKC_CACHE_DIR/cpu"
fi
unset MKC_CUDA_GRAPH MKC_FAKE_CUDA_TRACE MKC_FAKE_CUDA_FAIL_AT MKC_FAKE_NVRTC_FAIL_AT
unset MKC_FAKE_CUDA_ARCH MKC_FAKE_CUDA_SMS MKC_FAKE_CUDA_DEVICES MKC_FAKE_CUDA_NO_COOP
unset MKC_FAKE_CUDA_NO_COOP_CAPTURE MKC_TEST_BACKEND
trace=$tmp/trace

args=(run --preset tiny --random-weights 5 -n 24 --prompt-ids 3,1,4,1,5 --draft-max 4)
"$mkc" "${args[@]}" --backend cpu >"$tmp/cpu" 2>/dev/null

# run NAME [ENV=VALUE...]: the cuda run with a fresh trace; sets rc.
run() {
  local name=$1
  shift
  rm -f "$trace"
  env MKC_FAKE_CUDA_TRACE="$trace" "$@" "$mkc" "${args[@]}" --backend cuda \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
}
no_misuse() { ! grep -q 'fake cuda: misuse' "$1"; }
same_tokens() { cmp -s "$tmp/cpu" "$tmp/$1.out" && [ "$(wc -w <"$tmp/cpu")" -eq 24 ]; }
calls() { grep -c "^$1\( \|$\)" "$trace"; }

# Cold start: NVRTC compiles once; the tokens are the cpu backend's.
run cold
if [ "$rc" -eq 0 ] && same_tokens cold && no_misuse "$tmp/cold.err"; then
  ok "cold start: tokens = cpu backend, no misuse of the driver"
else
  fail "cold start" "rc $rc" "$(cat "$tmp/cold.out" "$tmp/cold.err")"
fi
[ "$(calls 'nvrtcCompileProgram sm_90')" -eq 1 ] && ok "cold start: NVRTC compiles for the device's sm_90" \
  || fail "cold start: one NVRTC compile for sm_90" "$(grep nvrtcCompile "$trace")"
grep -q 'CUDA graph replay' "$tmp/cold.err" && ok "the step is replayed from a CUDA graph" \
  || fail "graph replay" "$(cat "$tmp/cold.err")"

# Warm start: the kernel cache answers. NVRTC compiles nothing; its version,
# part of the cache key, is its only call.
run warm
if [ "$rc" -eq 0 ] && same_tokens warm && [ "$(grep '^nvrtc' "$trace")" = nvrtcVersion ] \
  && grep -q 'from the kernel cache' "$tmp/warm.err"; then
  ok "warm start: NVRTC compiles nothing (nvrtcVersion only), the kernel comes from the cache"
else
  fail "warm start" "$(grep '^nvrtc' "$trace" | head -n 3)" "$(cat "$tmp/warm.err")"
fi

# Weights go up once, on the session's stream before the capture; one launch
# is captured; every step is the same four calls: inputs up, graph launch,
# state down (pos, counts, tokens), sync.
uploads=$(awk '/^cuStreamBeginCapture/ { exit } /^cuMemcpyHtoD/ { print $1 }' "$trace")
[ "$uploads" = cuMemcpyHtoDAsync_v2 ] && ok "the weights are uploaded once, on the session's stream" \
  || fail "one weight upload, on the stream" "$(grep cuMemcpyHtoD "$trace")"
[ "$(calls cuLaunchCooperativeKernel)" -eq 1 ] && [ "$(calls cuStreamBeginCapture_v2)" -eq 1 ] \
  && ok "one cooperative launch, captured" \
  || fail "one captured launch" "$(grep -E 'cuLaunch|Capture' "$trace")"
steps=$(calls cuGraphLaunch)
state_bytes=$(awk '/^cuMemcpyDtoHAsync_v2/ { print $2; exit }' "$trace")
per_step=$(awk '/^cuGraphInstantiateWithFlags/ { on = 1; next } /^cuGraphExecDestroy/ { on = 0 }
  on { sub(/ [0-9]+$/, "", $0); printf "%s;", $0 }' "$trace")
want=$(for ((i = 0; i < steps; i++)); do
  printf 'cuMemcpyHtoDAsync_v2;cuGraphLaunch;cuMemcpyDtoHAsync_v2;cuStreamSynchronize;'
done)"cuStreamSynchronize;" # and the one closing the session
if [ "$steps" -gt 5 ] && [ "$per_step" = "$want" ] && [ "${state_bytes:-9999}" -le 512 ]; then
  ok "each of $steps steps: inputs up, graph launch, $state_bytes B of state down, one sync"
else
  fail "per-step calls" "steps $steps, state $state_bytes B" "${per_step:0:300}"
fi

# Plain launches give the same tokens.
run plain MKC_CUDA_GRAPH=0
if [ "$rc" -eq 0 ] && same_tokens plain && [ "$(calls cuGraphLaunch)" -eq 0 ] \
  && [ "$(calls cuLaunchCooperativeKernel)" -eq "$steps" ] && grep -q 'direct cooperative' "$tmp/plain.err"; then
  ok "MKC_CUDA_GRAPH=0: $steps direct launches, same tokens"
else
  fail "MKC_CUDA_GRAPH=0" "rc $rc" "$(cat "$tmp/plain.out" "$tmp/plain.err")"
fi

# A slot kernel (run --batch): every slot's state goes up and comes back each
# step, a refilled slot's pos is reset on the device; the cpu backend's lines.
printf '1,2,3\n5,6,7,8,9,10,11\n42\n7,7,7\n9,8\n' >"$tmp/batch.txt"
# batch_case NAME ARGS...: run --batch of the 5 lines with ARGS on cuda against the cpu backend
batch_case() {
  local name=$1
  shift
  local bargs=(run --preset tiny --random-weights 5 -n 10 --batch "$tmp/batch.txt" "$@")
  "$mkc" "${bargs[@]}" --backend cpu >"$tmp/batch-cpu" 2>/dev/null
  rm -f "$trace"
  env MKC_FAKE_CUDA_TRACE="$trace" "$mkc" "${bargs[@]}" --backend cuda >"$tmp/batch.out" 2>"$tmp/batch.err"
  rc=$?
  if [ "$rc" -eq 0 ] && cmp -s "$tmp/batch-cpu" "$tmp/batch.out" && [ "$(wc -l <"$tmp/batch.out")" -eq 5 ] \
    && no_misuse "$tmp/batch.err"; then
    ok "run --batch, $name: the cpu backend's lines, no misuse of the driver"
  else
    fail "run --batch on cuda, $name" "rc $rc" "$(cat "$tmp/batch.out" "$tmp/batch.err" "$tmp/batch-cpu")"
  fi
}
batch_case "5 lines on 3 slots" --slots 3 --draft-max 2
# wide steps (3 slots of 1 + 12 drafts: 39 rows, past 32): every row's logits come back
batch_case "wide steps of 39 rows, sampled" --slots 3 --draft-max 12 --temp 0.7 --seed 3

# Rounds (--rounds R): R steps per launch, the same tokens as the cpu
# backend's one launch per step; the host round trips (graph launches) of 64
# generated tokens after the prompt's launch are at most 64 / R.
rargs=(run --preset tiny --random-weights 5 -n 65 --prompt-ids 3,1,4,1,5,3,1,4 --draft-max 4)
"$mkc" "${rargs[@]}" --backend cpu >"$tmp/rounds-cpu" 2>/dev/null
# Drafted by prompt lookup, then by the kernel's own first layer (self-speculation in the kernel).
for src in "prompt lookup" "self-speculation in the kernel"; do
  extra=() && [ "$src" = "prompt lookup" ] || extra=(--draft-layers 1)
  for R in 4 16; do
    rm -f "$trace"
    env MKC_FAKE_CUDA_TRACE="$trace" "$mkc" "${rargs[@]}" --rounds "$R" "${extra[@]}" --backend cuda \
      >"$tmp/rounds$R.out" 2>"$tmp/rounds$R.err"
    rc=$?
    gen=$(($(calls cuGraphLaunch) - 1))
    if [ "$rc" -eq 0 ] && cmp -s "$tmp/rounds-cpu" "$tmp/rounds$R.out" && no_misuse "$tmp/rounds$R.err" \
      && [ "$(wc -w <"$tmp/rounds$R.out")" -eq 65 ] && [ "$gen" -ge 1 ] && [ $((gen * R)) -le 64 ] \
      && grep -q "in $gen launches" "$tmp/rounds$R.err" && grep -q "drafts from $src" "$tmp/rounds$R.err"; then
      ok "--rounds $R ${extra[*]}: the cpu backend's 65 tokens; $gen launches (host round trips) after the prompt's"
    else
      fail "--rounds $R ${extra[*]}" "rc $rc, $gen launches after the prompt's" "$(tail -n 3 "$tmp/rounds$R.err")"
    fi
  done
done

# A driver that will not capture a cooperative launch: a warning naming the
# call, then direct launches.
run nocap MKC_FAKE_CUDA_NO_COOP_CAPTURE=1
w='mkc: warning: cuda: cuLaunchCooperativeKernel failed at runtime/backend/cuda/backend.c:[0-9]+: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; the step is not captured in a CUDA graph: launching directly'
if [ "$rc" -eq 0 ] && same_tokens nocap && grep -Eq "^$w\$" "$tmp/nocap.err" && grep -q 'direct cooperative' "$tmp/nocap.err"; then
  ok "capture refused: warning, direct launches, same tokens"
else
  fail "capture refused" "rc $rc" "$(cat "$tmp/nocap.err")"
fi

MKC_FAKE_CUDA_NO_COOP=1 expect_error "a device without cooperative launch" \
  "mkc: error: cuda: mkc fake CUDA device (the CPU backend behind a driver double) cannot launch cooperative kernels: the megakernel needs every block resident" \
  -- "${args[@]}" --backend cuda
MKC_FAKE_CUDA_DEVICES=0 expect_error "a driver with no device" \
  "mkc: error: no CUDA device (the driver sees none); use --backend cpu" -- "${args[@]}" --backend cuda
"$mkc" "${args[@]}" --backend auto >"$tmp/auto.out" 2>"$tmp/auto.err"
MKC_FAKE_CUDA_DEVICES=0 "$mkc" "${args[@]}" --backend auto >"$tmp/auto0.out" 2>"$tmp/auto0.err"
grep -q '^mkc: cuda backend' "$tmp/auto.err" && grep -q '^mkc: cpu backend' "$tmp/auto0.err" \
  && cmp -s "$tmp/auto.out" "$tmp/cpu" && cmp -s "$tmp/auto0.out" "$tmp/cpu" \
  && ok "--backend auto: cuda where a device exists, cpu where none does" \
  || fail "--backend auto" "$(cat "$tmp/auto.err" "$tmp/auto0.err")"
# llama.cpp's -ngl where a device exists: 0 keeps the model on the cpu backend, a count puts it
# all on the GPU (mkc does not split a model); the tokens are the same
"$mkc" "${args[@]}" -ngl 0 >"$tmp/ngl0.out" 2>"$tmp/ngl0.err"
"$mkc" "${args[@]}" -ngl 20 >"$tmp/ngl20.out" 2>"$tmp/ngl20.err"
grep -q '^mkc: cpu backend' "$tmp/ngl0.err" && grep -q '^mkc: cuda backend' "$tmp/ngl20.err" \
  && cmp -s "$tmp/ngl0.out" "$tmp/cpu" && cmp -s "$tmp/ngl20.out" "$tmp/cpu" \
  && ok "-ngl 0 runs on the cpu backend beside a device, -ngl 20 on the GPU; the same tokens" \
  || fail "-ngl with a device" "$(tail -n 2 "$tmp/ngl0.err" "$tmp/ngl20.err")"

# Issue 12: a cold compile says what it does and how long it took, a warm
# start says nothing of it; auto without NVRTC runs on the cpu with one
# warning; NVRTC newer than the driver's CUDA is refused before any compile,
# and the driver's version is part of the kernel cache key.
said=$(grep -E '^mkc: compil' "$tmp/cold.err")
want_said="mkc: compiling llama.tiny.cu for sm_90 with NVRTC 0.1 (once: cached in $MKC_CACHE_DIR/cuda afterwards)..."
if [ "$(printf '%s\n' "$said" | head -n 1)" = "$want_said" ] && [ "$(printf '%s\n' "$said" | wc -l)" -eq 2 ] \
  && printf '%s\n' "$said" | tail -n 1 | grep -Eq '^mkc: compiled llama\.tiny\.cu for sm_90 in [0-9]+\.[0-9] s$' \
  && ! grep -q 'compil' "$tmp/warm.err"; then
  ok "a cold compile names the kernel, the arch, the cache and its time; a warm start says nothing of it"
else
  fail "the cold compile's lines" "want: $want_said" "cold: $said" "warm: $(cat "$tmp/warm.err")"
fi
no_nvrtc=$tmp/nowhere/libnvrtc.so
MKC_NVRTC=$no_nvrtc "$mkc" "${args[@]}" --backend auto >"$tmp/nonvrtc.out" 2>"$tmp/nonvrtc.err"
rc=$?
w="^mkc: warning: the CUDA device \(mkc fake CUDA device .*, sm_90\) answers, but NVRTC is not usable: libnvrtc not loaded from MKC_NVRTC=$no_nvrtc \(.*\); running on the cpu backend \(.*\)\$"
if [ "$rc" -eq 0 ] && cmp -s "$tmp/nonvrtc.out" "$tmp/cpu" && [ "$(grep -c 'mkc: warning' "$tmp/nonvrtc.err")" -eq 1 ] \
  && grep -Eq "$w" "$tmp/nonvrtc.err" && grep -q '^mkc: cpu backend' "$tmp/nonvrtc.err"; then
  ok "--backend auto, a device but no NVRTC: one warning saying where it looked, the cpu backend's tokens"
else
  fail "--backend auto without NVRTC" "rc $rc" "$(cat "$tmp/nonvrtc.err")"
fi
MKC_NVRTC=$no_nvrtc expect_error "--backend cuda without NVRTC: an error, no fallback" \
  "mkc: error: nvrtc: libnvrtc not loaded from MKC_NVRTC=$no_nvrtc ($no_nvrtc: cannot open shared object file: No such file or directory)" \
  -- "${args[@]}" --backend cuda
newer="mkc: error: NVRTC 13.0 ($MKC_NVRTC) builds kernels for CUDA 13.0, newer than the CUDA 12.4 this CUDA driver supports: it cannot load them. Install an NVIDIA driver that supports CUDA 13.0, or point MKC_NVRTC (or CUDA_HOME) at the NVRTC of a CUDA toolkit no newer than 12.4"
for b in cuda auto; do
  MKC_FAKE_CUDA_DRIVER_VERSION=12040 MKC_FAKE_NVRTC_VERSION=13.0 expect_error \
    "--backend $b: NVRTC 13.0 on a CUDA 12.4 driver is refused, naming both and what to install" "$newer" \
    -- "${args[@]}" --backend $b
done
run newer MKC_FAKE_CUDA_DRIVER_VERSION=12040 MKC_FAKE_NVRTC_VERSION=13.0
[ "$rc" -eq 1 ] && [ "$(calls nvrtcCompileProgram)" -eq 0 ] && [ "$(calls cuModuleLoadData)" -eq 0 ] \
  && ok "the refusal comes before NVRTC compiles and before a module loads" \
  || fail "refused before compiling" "rc $rc" "$(grep -E '^(nvrtcCompile|cuModuleLoad)' "$trace")"
# Minor-version compatibility: a cubin from NVRTC 12.8 loads on a CUDA 12.4 driver.
run minor MKC_FAKE_CUDA_DRIVER_VERSION=12040 MKC_FAKE_NVRTC_VERSION=12.8
[ "$rc" -eq 0 ] && same_tokens minor && ok "NVRTC 12.8's cubin on a CUDA 12.4 driver runs, same tokens" \
  || fail "NVRTC 12.8 on a CUDA 12.4 driver (a cubin, same major)" "rc $rc" "$(cat "$tmp/minor.err")"
run same MKC_FAKE_CUDA_DRIVER_VERSION=12080 MKC_FAKE_NVRTC_VERSION=12.8
[ "$rc" -eq 0 ] && same_tokens same && ok "NVRTC 12.8 on a CUDA 12.8 driver runs, same tokens" \
  || fail "NVRTC 12.8 on a CUDA 12.8 driver" "rc $rc" "$(cat "$tmp/same.err")"
# The key: the kernel cache has this kernel for driver 13.0 (the default); a
# 13.1 driver misses it once, then finds its own entry.
run drv131 MKC_FAKE_CUDA_DRIVER_VERSION=13010
first=$(calls 'nvrtcCompileProgram sm_90')
run drv131b MKC_FAKE_CUDA_DRIVER_VERSION=13010
second=$(calls 'nvrtcCompileProgram sm_90')
run drv130
third=$(calls 'nvrtcCompileProgram sm_90')
if [ "$first/$second/$third" = 1/0/0 ] && same_tokens drv131 && same_tokens drv131b && same_tokens drv130; then
  ok "the driver's version is in the kernel cache key: another driver compiles once, then hits"
else
  fail "driver version in the cache key" "NVRTC compiles: $first/$second/$third (want 1/0/0)"
fi
"$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/k128.cu" 2>/dev/null
MKC_FAKE_NVRTC_VERSION=12.8 "$mkc" compile "$tmp/k128.cu" --arch sm_90 -o "$tmp/aot128" >/dev/null 2>&1
# Its PTX, which the driver JIT-compiles (an sm_100 device: no cubin fits), needs CUDA 12.8.
MKC_FAKE_CUDA_ARCH=sm_100 MKC_FAKE_CUDA_DRIVER_VERSION=12040 expect_error \
  "run --kernel: PTX from NVRTC 12.8 for a CUDA 12.4 driver to JIT" \
  "mkc: error: $tmp/aot128 was compiled by NVRTC 12.8, newer than the CUDA 12.4 this CUDA driver supports: it cannot load the kernel. Install an NVIDIA driver that supports CUDA 12.8, or run mkc compile again with an NVRTC no newer than CUDA 12.4 (MKC_NVRTC or CUDA_HOME pointing at an older CUDA toolkit)" \
  -- run --kernel "$tmp/aot128" --random-weights 5 -n 12 --prompt-ids 3,1,4
MKC_FAKE_CUDA_DRIVER_VERSION=12040 "$mkc" run --kernel "$tmp/aot128" --random-weights 5 -n 12 --prompt-ids 3,1,4 \
  >"$tmp/aot128.out" 2>"$tmp/aot128.err"
rc=$?
"$mkc" run --preset tiny --random-weights 5 -n 12 --prompt-ids 3,1,4 --draft-max 4 --backend cpu \
  >"$tmp/aot128.want" 2>/dev/null
[ "$rc" -eq 0 ] && cmp -s "$tmp/aot128.out" "$tmp/aot128.want" \
  && ok "run --kernel: NVRTC 12.8's sm_90 cubin on a CUDA 12.4 driver gives the cpu backend's tokens" \
  || fail "run --kernel: NVRTC 12.8's cubin on driver 12.4" "rc $rc" "$(cat "$tmp/aot128.err")"

# Ahead of time: the cubin that fits each device, else the PTX, else an error.
"$mkc" gen graphs/llama.lua --preset tiny --draft-max 4 -o "$tmp/k.cu" 2>/dev/null
"$mkc" compile "$tmp/k.cu" --arch sm_80,sm_90 -o "$tmp/aot" >/dev/null 2>&1
"$mkc" run --preset tiny --random-weights 5 -n 12 --prompt-ids 3,1,4 --draft-max 4 --backend cpu \
  >"$tmp/aot.want" 2>/dev/null
for case in sm_90:sm_90 sm_89:sm_80 sm_86:sm_80 sm_100:compute_80 sm_120:compute_80; do
  dev=${case%:*} image=${case#*:}
  rm -f "$trace"
  MKC_FAKE_CUDA_ARCH=$dev MKC_FAKE_CUDA_TRACE=$trace "$mkc" run --kernel "$tmp/aot" --random-weights 5 \
    -n 12 --prompt-ids 3,1,4 >"$tmp/aot.out" 2>"$tmp/aot.err"
  if [ "$(calls "cuModuleLoadData $image")" -eq 1 ] && cmp -s "$tmp/aot.out" "$tmp/aot.want" \
    && no_misuse "$tmp/aot.err"; then
    ok "run --kernel on $dev loads $image, same tokens"
  else
    fail "run --kernel on $dev loads $image" "$(grep cuModuleLoadData "$trace")" "$(cat "$tmp/aot.err")"
  fi
done
MKC_FAKE_CUDA_ARCH=sm_75 expect_error "run --kernel on a device older than every image" \
  "mkc: error: $tmp/aot has cubins for sm_80, sm_90, PTX for compute_80: none runs on mkc fake CUDA device (the CPU backend behind a driver double) (sm_75); recompile with --arch sm_75" \
  -- run --kernel "$tmp/aot" --random-weights 5 -n 12

# mkc imatrix on the cuda backend: the sums read back from device scratch and zeroed there after
# each chunk (mkc_session_imatrix), the same file as the cpu backend's.
cat graphs/llama.lua tests/graphs/im_tiny_preset.lua >"$tmp/im.lua"
"$mkc" init "$tmp/im.lua" --preset im-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
  -o "$tmp/im.gguf" >/dev/null 2>&1
im=(imatrix -m "$tmp/im.gguf" -f tests/data/imatrix_text.txt -c 64 --chunks 3 --kv-dtype f32)
"$mkc" "${im[@]}" --backend cpu -o "$tmp/im-cpu.gguf" >/dev/null 2>&1
if "$mkc" "${im[@]}" --backend cuda -o "$tmp/im-cuda.gguf" >/dev/null 2>"$tmp/im.err" \
  && cmp -s "$tmp/im-cpu.gguf" "$tmp/im-cuda.gguf" && grep -q 'on the cuda backend' "$tmp/im.err" \
  && no_misuse "$tmp/im.err"; then
  ok "imatrix --backend cuda: the cpu backend's file, byte for byte"
else
  fail "imatrix on cuda" "$(tail -n 3 "$tmp/im.err")"
fi

# bench on the cuda backend: the table and the copy bandwidth of the same run.
"$mkc" bench --preset tiny --random-weights 1 -n 8 --backend cuda >"$tmp/bench" 2>"$tmp/bench.err"
if [ $? -eq 0 ] && grep -Eq '^\| llama tiny BF16 \| .* \| cuda \| tg8 \| [0-9.]+ ± [0-9.]+ \| sm_90 \|' "$tmp/bench" \
  && grep -Eq 'Copy bandwidth .*: [0-9.]+ GB/s' "$tmp/bench" && no_misuse "$tmp/bench.err"; then
  ok "bench --backend cuda: the table and a copy bandwidth"
else
  fail "bench --backend cuda" "$(cat "$tmp/bench" "$tmp/bench.err")"
fi

# ---- the legacy NULL stream against the session's non-blocking stream ----
# The double queues what cuMemsetD8, cuMemcpyHtoD and cuMemcpyDtoD leave to
# the device, as the driver does, and reports a race with a non-blocking
# stream's work either way round. First the double itself, on a small program
# of its own: each racy order is reported, each ordered one is not, and a
# synchronous memset's bytes are there once something waited for them.
cat >"$tmp/race.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int (*fn)();
int main(int argc, char **argv) {
  void *dl = dlopen(getenv("MKC_LIBCUDA"), RTLD_NOW);
  if (!dl || argc != 2) return 2;
#define F(name) fn name = (fn)dlsym(dl, #name)
  F(cuInit); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuStreamCreate);
  F(cuMemAlloc_v2); F(cuMemsetD8_v2); F(cuMemcpyHtoDAsync_v2); F(cuMemcpyDtoH_v2);
  F(cuMemsetD8Async); F(cuCtxSynchronize); F(cuStreamSynchronize); F(cuMemFree_v2);
  F(cuStreamDestroy_v2); F(cuDevicePrimaryCtxRelease_v2);
  void *ctx, *s;
  unsigned long long a, b;
  unsigned char host[64], got[64];
  memset(host, 7, sizeof host);
  cuInit(0), cuDevicePrimaryCtxRetain(&ctx, 0), cuCtxSetCurrent(ctx), cuStreamCreate(&s, 1);
  cuMemAlloc_v2(&a, (size_t)64), cuMemAlloc_v2(&b, (size_t)64);
  const char *c = argv[1];
  int r = 0;
  if (!strcmp(c, "null-then-stream")) /* a write on the NULL stream, then the stream reads it */
    r = cuMemsetD8_v2(a, 0, (size_t)64) || cuMemcpyHtoDAsync_v2(a + 32, host, (size_t)8, s);
  else if (!strcmp(c, "stream-then-null")) /* queued stream work, then the NULL stream writes */
    r = cuMemsetD8Async(a, 1, (size_t)16, s) || cuMemsetD8_v2(a + 8, 0, (size_t)8);
  else if (!strcmp(c, "ordered")) /* each side waited for before the other starts */
    r = cuMemsetD8_v2(a, 3, (size_t)64) || cuCtxSynchronize() ||
        cuMemcpyHtoDAsync_v2(a, host, (size_t)8, s) || cuStreamSynchronize(s) ||
        cuMemsetD8_v2(a + 8, 5, (size_t)8) || cuMemcpyDtoH_v2(got, a, (size_t)64);
  else if (!strcmp(c, "apart")) /* no common byte */
    r = cuMemsetD8_v2(b, 0, (size_t)64) || cuMemsetD8Async(a, 1, (size_t)64, s) ||
        cuMemsetD8_v2(b, 2, (size_t)64) || cuStreamSynchronize(s);
  else
    return 2;
  if (!strcmp(c, "ordered"))
    for (int i = 0; i < 64; i++)
      if (got[i] != (i < 8 ? 7 : i < 16 ? 5 : 3)) r = 1;
  cuStreamSynchronize(s), cuCtxSynchronize();
  cuMemFree_v2(a), cuMemFree_v2(b), cuStreamDestroy_v2(s), cuDevicePrimaryCtxRelease_v2(0);
  return r != 0;
}
EOF
if cc -std=c11 -D_GNU_SOURCE -w -o "$tmp/race" "$tmp/race.c" -ldl 2>"$tmp/race.cc"; then
  for case in null-then-stream:race stream-then-null:race ordered:clean apart:clean; do
    name=${case%:*} want=${case#*:}
    "$tmp/race" "$name" 2>"$tmp/race.err"
    rc=$?
    races=$(grep -c 'fake cuda: misuse: .*race' "$tmp/race.err")
    misuses=$(grep -c 'fake cuda: misuse' "$tmp/race.err")
    if { [ "$want" = race ] && [ "$rc" -eq 1 ] && [ "$races" -eq 1 ] && [ "$misuses" -eq 1 ]; } \
      || { [ "$want" = clean ] && [ "$rc" -eq 0 ] && [ "$misuses" -eq 0 ]; }; then
      ok "the double, $name: $([ "$want" = race ] && echo 'the race is reported' || echo 'no misuse, the bytes as ordered')"
    else
      fail "the double, $name: want $want" "rc $rc" "$(cat "$tmp/race.err")"
    fi
  done
else
  fail "the double's race program builds" "$(head -n 5 "$tmp/race.cc")"
fi

# Then mkc on it: bench resets the session before each of its repetitions,
# between steps; setup, resets and the copy-bandwidth run all stay ordered
# with the steps, so nothing is reported.
rm -f "$trace"
MKC_FAKE_CUDA_TRACE=$trace "$mkc" bench --preset tiny --random-weights 1 -n 8 --backend cuda \
  >"$tmp/bench2" 2>"$tmp/bench2.err"
rc=$?
# the state's zeroing is open's last memset before the first launch (scratch, KV, state)
state=$(awk '/^cuGraphLaunch/ { exit } /^cuMemsetD8/ { st = $2 } END { print st }' "$trace")
resets=$(awk -v st="${state:-0}" '/^cuGraphLaunch/ { on = 1 } on && /^cuMemsetD8/ && $2 == st { n++ }
  END { print n + 0 }' "$trace")
if [ "$rc" -eq 0 ] && no_misuse "$tmp/bench2.err" && [ "$resets" -ge 4 ] \
  && grep -Eq '^\| llama tiny BF16 \| .* \| tg8 \| [0-9.]+ ± [0-9.]+ \|' "$tmp/bench2"; then
  ok "bench on the cuda backend: $resets resets between steps, no race with the session's stream"
else
  fail "bench: resets between steps without a race" "rc $rc, $resets resets" "$(head -n 4 "$tmp/bench2.err")"
fi

# Residency counts registers: 64 K per SM in 256-register units per warp.
# 128 threads = 4 warps; 2 SMs of 1024 threads hold 8 blocks each at 32
# registers (threads bind); at 72, 72*32 = 2304 per warp, 9216 per block:
# 7 per SM; at 255, 8192 per warp, 32768 per block: 2 per SM. A kernel
# without prompt chunks (--ubatch 5: its shared memory is 2 KiB) so that
# registers bind; with them (the default, 37 KiB of tiles per block, and the
# 1 KiB each block reserves), 228 KiB per SM hold 5 at 32 registers. The grid
# takes at most the kernel's planned blocks per SM (MKC_MIN_BLOCKS, 3 by
# default): these runs plan 8, so that residency binds; the default's 3 next.
args_chunked=("${args[@]}")
args+=(--ubatch 5)
run plan3 MKC_FAKE_CUDA_REGISTERS=32
if [ "$rc" -eq 0 ] && same_tokens plan3 && grep -q "(6 blocks x 128 threads" "$tmp/plan3.err" \
  && no_misuse "$tmp/plan3.err"; then
  ok "the planned 3 blocks an SM where 8 fit: 6 blocks, same tokens"
else
  fail "the planned 3 blocks an SM: 6 blocks" "rc $rc" "$(grep -E 'blocks|misuse|error' "$tmp/plan3.err")"
fi
for case in 32:16 72:14 255:4; do
  regs=${case%:*} want=${case#*:}
  run "regs$regs" MKC_FAKE_CUDA_REGISTERS=$regs MKC_MIN_BLOCKS=8
  if [ "$rc" -eq 0 ] && same_tokens "regs$regs" && grep -q "$want blocks x 128 threads" "$tmp/regs$regs.err" \
    && no_misuse "$tmp/regs$regs.err"; then
    ok "residency at $regs registers per thread: $want blocks, same tokens"
  else
    fail "residency at $regs registers: $want blocks" "rc $rc" "$(grep -E 'blocks|misuse|error' "$tmp/regs$regs.err")"
  fi
done
# MKC_CUDA_BLOCKS: a grid of exactly N blocks (tests/test_slots.c's bit-for-bit checks), at
# most what is co-resident (16 at 32 registers, above).
run grid3 MKC_FAKE_CUDA_REGISTERS=32 MKC_CUDA_BLOCKS=3
if [ "$rc" -eq 0 ] && same_tokens grid3 && grep -q "(3 blocks x 128 threads" "$tmp/grid3.err" \
  && no_misuse "$tmp/grid3.err"; then
  ok "MKC_CUDA_BLOCKS=3: a grid of 3 blocks, same tokens"
else
  fail "MKC_CUDA_BLOCKS=3" "rc $rc" "$(grep -E 'blocks|misuse|error' "$tmp/grid3.err")"
fi
MKC_FAKE_CUDA_REGISTERS=32 MKC_CUDA_BLOCKS=17 expect_error "MKC_CUDA_BLOCKS past residency" \
  'mkc: error: cuda: MKC_CUDA_BLOCKS must be a grid of 1..16 blocks (the most that are co-resident here), got "17"' \
  -- "${args[@]}" --backend cuda
MKC_CUDA_BLOCKS=4x expect_error "MKC_CUDA_BLOCKS not a number" \
  'mkc: error: cuda: MKC_CUDA_BLOCKS must be a grid of 1..16 blocks (the most that are co-resident here), got "4x"' \
  -- "${args[@]}" --backend cuda
args=("${args_chunked[@]}")
run chunked MKC_FAKE_CUDA_REGISTERS=32 MKC_MIN_BLOCKS=8
if [ "$rc" -eq 0 ] && same_tokens chunked && grep -q "10 blocks x 128 threads" "$tmp/chunked.err" \
  && no_misuse "$tmp/chunked.err"; then
  ok "residency with prompt chunks' tiles in shared memory: 10 blocks, same tokens"
else
  fail "residency with prompt chunks: 10 blocks" "rc $rc" "$(grep -E 'blocks|misuse|error' "$tmp/chunked.err")"
fi

# Every driver call of a short run, made to fail in turn. Teardown calls warn
# and the run completes; the capture's calls fall back to direct launches;
# any other is an error naming the call and its place; never a crash.
args=(run --preset tiny --random-weights 5 -n 3 --prompt-ids 3,1 --draft-max 2)
"$mkc" "${args[@]}" --backend cpu >"$tmp/cpu" 2>/dev/null
# survives RE: the run completed, with the cpu backend's tokens and a line matching RE.
survives() { [ "$rc" -eq 0 ] && cmp -s "$tmp/cpu" "$tmp/inject.out" && grep -Eq "$1" "$tmp/inject.err"; }
# refuses RE: the run stopped with exit status 1 and a line matching RE.
refuses() { [ "$rc" -eq 1 ] && grep -Eq "$1" "$tmp/inject.err"; }
# judge STATUS WHAT: a failed expectation, or a misuse of the driver after
# the failure, is a failed check.
judge() {
  if [ "$1" -ne 0 ] || ! no_misuse "$tmp/inject.err"; then
    bad=$((bad + 1))
    fail "$2 made to fail" "rc $rc" "$(grep -v '^fake cuda: injected' "$tmp/inject.err" | head -n 4)"
  fi
}
run clean # compiles; the runs below start warm
run clean
mapfile -t trail < <(grep '^cu' "$trace")
# The session's close starts with the synchronization before cuGraphExecDestroy.
close_from=$(grep -n '^cuGraphExecDestroy' <(printf '%s\n' "${trail[@]}") | cut -d: -f1)
close_from=$((${close_from:-1} - 1))
bad=0 injected=0
for ((k = 1; k <= ${#trail[@]}; k++)); do
  call=${trail[k - 1]%% *}
  run inject MKC_FAKE_CUDA_FAIL_AT=$k
  grep -q "^fake cuda: injected: $call fails (call $k," "$tmp/inject.err" && injected=$((injected + 1))
  code=CUDA_ERROR_UNKNOWN
  [ "$call" = cuMemAlloc_v2 ] && code=CUDA_ERROR_OUT_OF_MEMORY
  place="${call%_v2}(\(.*\))? failed at runtime/[a-z_/]+\.c:[0-9]+: $code"
  captured=$(printf '%s\n' "${trail[@]:0:k}" | grep -c '^cuStreamBeginCapture')
  ended=$(printf '%s\n' "${trail[@]:0:k-1}" | grep -c '^cuStreamEndCapture')
  if [ "$k" -ge "$close_from" ]; then
    survives "^mkc: warning: cuda: $place\$"
  elif [ "$captured" -eq 1 ] && { [ "$ended" -eq 0 ] || [ "$call" = cuGraphInstantiateWithFlags ]; }; then
    survives "^mkc: warning: cuda: $place; the step is not captured in a CUDA graph"
  else
    refuses "^mkc: error: .*$place"
  fi
  judge $? "call $k ($call)"
done
[ "$bad" -eq 0 ] && ok "each of the ${#trail[@]} driver calls of a run, made to fail: reported by name and place, no crash"
# The loop proves something only if it made calls fail: every one of a
# run's calls, and a run makes at least 40 (49 before setup moved onto the
# stream).
[ "$injected" -eq "${#trail[@]}" ] && [ "$injected" -ge 40 ] \
  && ok "the driver loop injected $injected failures, one per call" \
  || fail "the driver loop injects a failure at every call, at least 40" "$injected of ${#trail[@]}"

# The same for NVRTC's calls on a cold compile (an empty kernel cache each
# time; the CPU backend's cache stays).
rm -rf "$MKC_CACHE_DIR/cuda"
run clean
mapfile -t trail < <(grep '^nvrtc' "$trace")
bad=0 injected=0
for ((k = 1; k <= ${#trail[@]}; k++)); do
  call=${trail[k - 1]%% *}
  rm -rf "$MKC_CACHE_DIR/cuda"
  run inject MKC_FAKE_NVRTC_FAIL_AT=$k
  grep -q "^fake cuda: injected: $call fails (call $k, MKC_FAKE_NVRTC_FAIL_AT)" "$tmp/inject.err" \
    && injected=$((injected + 1))
  place="$call failed at runtime/backend/cuda/nvrtc.c:[0-9]+: NVRTC_ERROR_INTERNAL_ERROR"
  case "$call" in
  nvrtcDestroyProgram) survives "^mkc: warning: nvrtc: $place\$" ;;
  nvrtcCompileProgram) refuses "^mkc: error: nvrtc: compiling llama.tiny.cu for sm_90 failed: NVRTC_ERROR_INTERNAL_ERROR" ;;
  *) refuses "^mkc: error: nvrtc: $place\$" ;;
  esac
  judge $? "NVRTC call $k ($call)"
done
[ "$bad" -eq 0 ] && [ "${#trail[@]}" -ge 6 ] \
  && ok "each of the ${#trail[@]} NVRTC calls of a cold compile, made to fail: reported, no crash"
[ "$injected" -eq "${#trail[@]}" ] && [ "$injected" -ge 6 ] \
  && ok "the NVRTC loop injected $injected failures, one per call" \
  || fail "the NVRTC loop injects a failure at every call, at least 6" "$injected of ${#trail[@]}"

# A streamed answer whose decoding fails part way (a driver call of its fourth step made to
# fail, found in a trace of the same request) ends with OpenAI's error event, not a finish
# (no finish_reason, no [DONE]), after the text so far; the server stops with the call named.
source "$(dirname "$0")/serve_lib.sh"
sargs=(--preset tiny --random-weights 5 --backend cuda --draft-max 2)
sbody='{"prompt": [3, 1, 4, 1, 5], "max_tokens": 16, "stream": true}'
if MKC_FAKE_CUDA_TRACE=$tmp/strace start straced "${sargs[@]}"; then
  call POST /v1/completions "$sbody"
  stop straced
  k=$(grep '^cu' "$tmp/strace" | grep -n '^cuGraphLaunch' | sed -n 5p | cut -d: -f1)
  if [ -n "$k" ] && MKC_FAKE_CUDA_FAIL_AT=$k start sfail "${sargs[@]}"; then
    call POST /v1/completions "$sbody"
    wait "$pid"
    src=$?
    last=$(sed -n 's/^data: //p' "$tmp/body" | tail -n 1)
    chunks=$(grep -c '"text"' "$tmp/body")
    if [ "$status" = 200 ] && [ "$last" = '{"error":{"type":"server_error","message":"decoding failed (the server'"'"'s log says why)","code":500}}' ] \
      && ! grep -q 'DONE\|"finish_reason":"' "$tmp/body" && [ "$chunks" -ge 1 ] && [ "$src" -ne 0 ] \
      && grep -q "^fake cuda: injected: cuGraphLaunch fails (call $k," "$tmp/sfail.err" \
      && grep -q "cuGraphLaunch.* failed at runtime/" "$tmp/sfail.err"; then
      ok "a stream whose decoding fails at call $k: $chunks chunks, then the error event; the server stops (exit $src)"
    else
      fail "a stream whose decoding fails" "status $status, exit $src, last: $last" "$(head -c 600 "$tmp/body")" \
        "$(tail -n 3 "$tmp/sfail.err")"
    fi
  else
    fail "a stream whose decoding fails: the fifth cuGraphLaunch of a traced request" "k=$k"
  fi
fi

# The GPU suite itself (make test-gpu) on the doubles: its scripts and the
# test programs' cuda paths run; compute-sanitizer needs a real GPU. Left
# out: test_wtypes and test_cp_ring, whose subjects (the block decoders, the
# cp.async ring) are device code only: on the doubles they are the cpu
# backend's emulation of the same kernels, which the cpu suite runs already,
# and a quarter of this test's time (2026-12-02).
MKC_GPU_SKIP="build/test_wtypes build/test_cp_ring" MKC_SKIP_SANITIZER="the fake driver" \
  bash tests/gpu/run.sh >"$tmp/gpu" 2>&1
line=$(tail -n 1 "$tmp/gpu")
read -r p _ f _ <<<"${line//,/}"
if [ "${f:-1}" -eq 0 ] && [ "${p:-0}" -gt 200 ]; then
  ok "make test-gpu's suite on the fake driver: $line"
else
  fail "make test-gpu's suite on the fake driver" "$(grep -E '^FAIL|^ +\|' "$tmp/gpu" | head -n 20)" "$line"
fi

# The drafter head's feature and the target's hidden states through the cuda backend's copies
# (write_feature, hidden) on the doubles: the same checks as on the cpu backend, on tiny (the
# copies are the same for every preset; the cpu run has odd, qwen3-tiny and SmolLM2).
MKC_TEST_ONLY=tiny MKC_TEST_DATA= MKC_TEST_BACKEND=cuda build/test_draft_head >"$tmp/head" 2>&1
line=$(tail -n 1 "$tmp/head")
read -r p _ f _ <<<"${line//,/}"
if [ "${f:-1}" -eq 0 ] && [ "${p:-0}" -ge 12 ] && no_misuse "$tmp/head"; then
  ok "test_draft_head on the fake driver: $line"
else
  fail "test_draft_head on the fake driver" "$(grep -E '^FAIL|misuse' "$tmp/head" | head -n 10)" "$line"
fi

finish
