#!/usr/bin/env bash
# A GPU session's whole benchmark in one script (DEVELOPERS.md), in parts so
# that each fits one device call of at most 10 minutes:
#   bash tests/gpu/bench.sh test    make test-gpu (suite on cuda, graph replay, compute-sanitizer)
#   bash tests/gpu/bench.sh bench   mkc bench: llama-3.2-1b bf16 and Q4_K (T = 1: tg; T = 5: tg
#                                   draft4, whose steps verify 5 tokens) at 0, 512 and 4096 cached
#                                   positions, and a SmolLM2-135M-shaped file in Q4_1/Q8_0 and bf16;
#                                   at 0 positions also 8 rounds per launch (--rounds 8)
#   bash tests/gpu/bench.sh peer    the transformers peer (tests/gpu/hf_peer.py) on the same shapes
#   bash tests/gpu/bench.sh all     the three, in order
# Logs go to $OUT (the device tool's folder), else build/gpu-bench; summary.log
# collects the tables. Weights are random (seeded): no download is needed.
set -u
part=${1:-all}
out=${OUT:-build/gpu-bench}
mkdir -p "$out"
mkc=build/mkc
log="$out/summary.log"
say() { echo "$*" | tee -a "$log"; }

say "== $(date -u +%FT%TZ) tests/gpu/bench.sh $part"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
  2>&1 | tee -a "$log"
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
  say "build failed:"
  tail -n 30 "$out/build.log" | tee -a "$log"
  exit 1
fi

if [ "$part" = test ] || [ "$part" = all ]; then
  t0=$(date +%s)
  make test-gpu >"$out/test-gpu.log" 2>&1
  say "make test-gpu: exit $?, $(($(date +%s) - t0)) s: $(tail -n 1 "$out/test-gpu.log")"
  grep -E '^FAIL|^skip' "$out/test-gpu.log" | head -n 40 | tee -a "$log"
fi

bench() { # NAME ARGS...: one mkc bench table into the summary
  local name=$1
  shift
  say "-- mkc bench $name: $*"
  "$mkc" bench "$@" --backend cuda >"$out/bench-$name.md" 2>"$out/bench-$name.err"
  local rc=$?
  grep -E '^\||GB/s' "$out/bench-$name.md" | tee -a "$log"
  [ "$rc" -eq 0 ] || { say "exit $rc:"; tail -n 5 "$out/bench-$name.err" | tee -a "$log"; }
}

if [ "$part" = bench ] || [ "$part" = all ]; then
  l1b=(--preset llama-3.2-1b --random-weights 1 --ctx 8192 --draft-max 4 -n 128)
  bench l1b-d0 "${l1b[@]}" -p 512 --rounds 8
  bench l1b-d512 "${l1b[@]}" -p 64 -d 512
  bench l1b-d4096 "${l1b[@]}" -p 64 -d 4096
  if "$mkc" init --preset llama-3.2-1b --seed 1 --type q4_k -o /tmp/l1b-q4k.gguf >"$out/init.log" 2>&1; then
    bench l1b-q4k-d0 -m /tmp/l1b-q4k.gguf --ctx 8192 --draft-max 4 -n 128 -p 512
  else
    say "init llama-3.2-1b q4_k failed: $(tail -n 2 "$out/init.log")"
  fi
  if "$mkc" init --preset smollm2-135m --seed 1 --type q4_1 --tensor-type token_embd.weight=q8_0 \
    -o /tmp/smollm2.gguf >>"$out/init.log" 2>&1; then
    bench smollm2-q41 -m /tmp/smollm2.gguf --ctx 8192 --draft-max 4 -n 128 -p 512 --rounds 8
    bench smollm2-bf16 -m /tmp/smollm2.gguf --ctx 8192 --draft-max 4 -n 128 -p 512 --dequant
  else
    say "init smollm2-135m failed: $(tail -n 2 "$out/init.log")"
  fi
fi

if [ "$part" = peer ] || [ "$part" = all ]; then
  say "-- transformers peer"
  PYTHONUNBUFFERED=1 python3 tests/gpu/hf_peer.py --depths 0,512,4096 -n 128 2>"$out/peer.err" | tee -a "$log"
  [ -s "$out/peer.err" ] && tail -n 5 "$out/peer.err" | tee -a "$log"
fi
say "== done $(date -u +%FT%TZ)"
