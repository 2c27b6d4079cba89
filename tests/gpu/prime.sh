#!/usr/bin/env bash
# Before a GPU session, here (no GPU needed): fills build/gpu-cache with the
# cubins the GPU run (tests/gpu/bench.sh) will ask for, compiled by the real
# NVRTC for sm_90 under the key a CUDA 13.0 driver gives, and packs them as
# build/gpu-cache.tar.xz for the device call to carry. A cold NVRTC compile
# of llama-3.2-1b's kernel takes 15-30 s here since the layer loop (it took
# 5 minutes before): a dozen of them still cost a lent GPU's minutes.
#   1. the GPU run's commands on the driver and NVRTC doubles (tests/fake_cuda):
#      their kernel cache then holds every kernel's name and source, fast;
#   2. build/prime_kcache compiles each with the real NVRTC.
# ARCH (sm_90) and DRIVER (13000) are the lent machine's; a key that misses
# there only costs the compile it would have cost anyway.
set -u
cd "$(dirname "$0")/../.."
arch=${ARCH:-sm_90} driver=${DRIVER:-13000}
fake=build/gpu-prime/fake
rm -rf "$fake" build/gpu-prime/one # this tree's kernels only, not an earlier tree's
mkdir -p "$fake" build/gpu-prime/log
make -s all build/prime_kcache || exit 1
# The GPU image lacks these two shared libraries: they travel in build/lib.
mkdir -p build/lib
for l in liblua5.4.so.0 libcjson.so.1; do
  cp -L "$(ldd build/mkc | awk -v l=$l '$1 == l {print $3}')" build/lib/ || exit 1
done
export MKC_LIBCUDA=$PWD/build/fake_cuda/libcuda.so.1 MKC_NVRTC=$PWD/build/fake_cuda/libnvrtc.so
export MKC_FAKE_CUDA_ARCH=$arch MKC_FAKE_CUDA_DRIVER_VERSION=$driver MKC_FAKE_CUDA_SMS=2
export MKC_CACHE_DIR=$PWD/$fake
unset MKC_KV_DTYPE

# What tests/gpu/run.sh runs: its suite itself, on the doubles; its
# compute-sanitizer part needs the tool, so that part's kernel is asked for
# here with the same flags (draft-max 2; the weights do not change the source).
# PRIME_RUNS="NAME ...": only those benches' kernels (a short second call's), and
# tests/gpu/run.sh's too with PRIME_SUITE=1.
if [ -z "${PRIME_RUNS:-}" ] || [ -n "${PRIME_SUITE:-}" ]; then
  bash tests/gpu/run.sh >build/gpu-prime/log/run.log 2>&1
  echo "fake tests/gpu/run.sh: $(tail -n 1 build/gpu-prime/log/run.log)"
  for p in tiny odd qwen2-tiny qwen3-tiny; do
    build/mkc run --preset "$p" --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 2 \
      --backend cuda >/dev/null 2>&1
  done
  # tests/gpu/run.sh's compute-sanitizer runs of the tensor-core decode matmuls
  MKC_CP_RING=16 MKC_ATT_PREFETCH=1 build/mkc run --preset odd --random-weights 3 -n 6 \
    --prompt-ids 1,2,3,1,2 --draft-max 2 --backend cuda >/dev/null 2>&1
  for e in MKC_MMA_DECODE=1 "MKC_MMA_DECODE=1 MKC_SPLIT=1" "MKC_MMA_DECODE=1 MKC_CP_RING=16"; do
    # shellcheck disable=SC2086 # e: VAR=VALUE words
    env $e build/mkc run --preset odd --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 7 \
      --backend cuda >/dev/null 2>&1
  done
  printf '1,2,3\n5,6,7,8,9\n42,7\n' >build/gpu-prime/batch.txt
  MKC_MMA_DECODE=1 build/mkc run --preset tiny --random-weights 3 -n 6 --batch build/gpu-prime/batch.txt \
    --slots 3 --draft-max 2 --backend cuda >/dev/null 2>&1
  # ... and its wide slot steps (3 slots of 1 + 12 drafts), sampled batch too: unprimed, the
  # 2026-12-04 call's sanitizer part ran out of time compiling them
  build/mkc run --preset tiny --random-weights 3 -n 8 --batch build/gpu-prime/batch.txt --slots 3 \
    --draft-max 12 --backend cuda >/dev/null 2>&1
  build/mkc run --preset tiny --random-weights 3 -n 6 --batch build/gpu-prime/batch.txt --slots 3 \
    --draft-max 2 --temp 0.8 --seed 1 --backend cuda >/dev/null 2>&1
fi
# What tests/gpu/bench.sh bench runs: each only until its kernel is in the cache.
# PATTERN: a regex the header of the last kernel the run asks for matches ("preset" for
# any): with --draft-layers L, the drafter's ("preset [^ ]*-L4"), with --draft-head the
# head's ("draft_head.lua, preset"), asked for after the target's (which another run may
# have cached already).
until_cached() { # PATTERN [VAR=VALUE...] COMMAND...: run, stopped once it asked for its kernels
  local pat=$1 mark=build/gpu-prime/mark
  shift
  touch "$mark"
  env "$@" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    sleep 1
    find "$fake/cuda" -name '*.cubin' -newer "$mark" -exec grep -l -a -e "$pat" {} + 2>/dev/null |
      grep -q . && break
    kill -0 $pid 2>/dev/null || break
  done
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
}
source tests/gpu/shapes.sh
models=build/gpu-prime/models
mkdir -p $models
for f in smollm2-q41 l1b-q4k l1b-iq3s; do
  make_model $f $models >>build/gpu-prime/log/models.log 2>&1 || { echo "make_model $f failed"; exit 1; }
done
declare -A seen
for run in "${BENCH_RUNS[@]}"; do
  # -p, -d, -n, --rounds, --draft-adaptive, logit biases and the host's samplers are run-time:
  # runs that differ only there share a kernel (one that asks for none new would run on the
  # doubles' emulator until until_cached gives up: 10 minutes for bias128-t1 on 2026-12-06).
  k=$(sed -E 's/ (-p|-d|-n|--rounds) [0-9]+//g; s/ --draft-adaptive//; s/^[^ ]+ //
    s/ -l [0-9]+[+-][0-9.]+//g
    s/ --(dry-multiplier|mirostat|typical|top-nsigma|xtc-probability|dynatemp-range) [0-9.]+//g' <<<"$run")
  [ -n "${seen[$k]:-}" ] && continue
  run_parts "$run"
  [ -n "${PRIME_RUNS:-}" ] && [[ " $PRIME_RUNS " != *" $run_name "* ]] && continue
  seen[$k]=1
  pat="preset"
  [[ " ${run_args[*]} " =~ " --draft-layers "([0-9]+)" " ]] && pat="preset [^ ]*-L${BASH_REMATCH[1]}"
  [[ " ${run_args[*]} " == *" --draft-head "* ]] && pat="draft_head.lua, preset"
  until_cached "$pat" "${run_envs[@]}" build/mkc bench "${run_args[@]}" --backend cuda
  echo "fake ${run%% *}: $(ls "$fake/cuda" | wc -l) kernels so far"
done
for entry in "${SLOT_RUNS[@]}"; do # the slot kernels bench.sh runs (B = 1: l1b's plain kernel)
  slot_parts "$entry"
  name="slots-${entry// /-}"
  [ -n "${PRIME_RUNS:-}" ] && [[ " $PRIME_RUNS " != *" $name "* ]] && continue
  slot_args "$b" "build/gpu-prime/$name.txt"
  until_cached "preset" "${slot_envs[@]}" build/mkc "${slot_run[@]}" "${slot_extra[@]}" --backend cuda
  echo "fake $name: $(ls "$fake/cuda" | wc -l) kernels so far"
done
make_model smollm2-q41-vocab $models >>build/gpu-prime/log/models.log 2>&1 || { echo "make_model failed"; exit 1; }
imatrix_text build/gpu-prime/im.txt
for ppl in "" --no-ppl; do # bench.sh's two kernels: T <= 5 for the estimates, T = 1 without
  until_cached "preset" build/mkc imatrix -m $models/smollm2-q41-vocab.gguf -f build/gpu-prime/im.txt \
    "${IMATRIX_ARGS[@]}" $ppl -o build/gpu-prime/im.gguf
done
echo "fake imatrix: $(ls "$fake/cuda" | wc -l) kernels so far"
echo "fake runs: $(ls "$fake/cuda" | wc -l) kernels"

# The real compiles, JOBS at a time (2: this machine's cores; NVRTC took
# 11.7 GB for SmolLM2's 30 unrolled layers, so two such at once nearly fill
# 24 GB). Entries already in build/gpu-cache are only checked.
export MKC_NVRTC=${REAL_NVRTC:-} MKC_CACHE_DIR=$PWD/build/gpu-cache
[ -n "$MKC_NVRTC" ] || unset MKC_NVRTC
unset MKC_LIBCUDA
mkdir -p build/gpu-prime/one
ls "$fake/cuda"/*.cubin | xargs -P "${JOBS:-2}" -I{} sh -c \
  'd=build/gpu-prime/one/$(basename {} .cubin); mkdir -p $d; ln -sf "$PWD/{}" $d/; build/prime_kcache $d '"$arch $driver" \
  | tee build/gpu-prime/keys.txt
# Only this tree's kernels travel (the cache keeps older ones).
n=$(ls "$fake/cuda"/*.cubin | wc -l)
[ "$(wc -l <build/gpu-prime/keys.txt)" -eq "$n" ] || { echo "prime: $n kernels, fewer primed"; exit 1; }
awk '{print "gpu-cache/cuda/" $1 ".cubin"}' build/gpu-prime/keys.txt |
  tar -C build -cf - -T - | xz -T2 -6 >build/gpu-cache.tar.xz
echo "build/gpu-cache.tar.xz: $n kernels, $(du -h build/gpu-cache.tar.xz | cut -f1)"
bash tests/gpu/pack.sh
