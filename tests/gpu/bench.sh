#!/usr/bin/env bash
# A GPU session's whole run, in ONE device call (DEVELOPERS.md), in order of
# what matters most, each part under its own time limit so that a hang or a
# slow part cannot take the rest with it:
#   machine facts; a first tiny run on cuda against the cpu backend; the flow
#   probe (tests/gpu/probe_flow.cu: a stage's cost beyond its bytes);
#   make test-gpu's suite (tests on cuda, graph replay); mkc bench for
#   llama-3.2-1b (T = 1: tg; T = 5: verify5; 0, 512 and 4096 cached
#   positions) and SmolLM2-135M shapes (tests/gpu/shapes.sh); the slots'
#   aggregate rate at B = 1, 4, 16, 32 (run --batch); the
#   transformers peer (tests/gpu/hf_peer.py) on the same shapes;
#   compute-sanitizer (memcheck, racecheck, synccheck); the remaining benches.
#
#   bash tests/gpu/bench.sh [BUDGET_SECONDS]     (default 500)
#   BENCH_SKIP="NAME ...": benches of tests/gpu/shapes.sh not to run (say, kernels not primed)
#
# It runs on what was built here, carried as ONE folder, build/gpu-carry
# (tests/gpu/pack.sh, the end of tests/gpu/prime.sh: mkc, the test binaries,
# build/lib with liblua5.4 and libcjson, which the GPU image lacks, and
# gpu-cache.tar.xz, cubins compiled ahead so that NVRTC's minutes are not
# spent on the GPU's); tests/gpu/session.sh puts it back in build/. The
# device call, after tests/gpu/prime.sh here: `bash tests/gpu/bench.sh 500`
# with timeout_s 560, carry ["build/gpu-carry"] (2026-11-27 on an H100: 479
# s). Logs go to $OUT (the device tool's folder, as logs.tar.gz), else
# build/gpu-bench; summary.log collects the tables.
set -u
budget=${1:-500} log_name=summary.log
source tests/gpu/session.sh
# The device tool brings back at most 8 files: the logs go to a folder packed
# into logs.tar.gz at the end; summary.log grows in $OUT as the run goes.
out=$(mktemp -d)
trap 'tar -C "$out" -czf "$dest/logs.tar.gz" . 2>/dev/null' EXIT
say "== $(date -u +%FT%TZ) tests/gpu/bench.sh, budget $budget s"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm \
  --format=csv 2>&1 | tee -a "$log"
say "cc: $(command -v cc || echo none); nvcc: $(nvcc --version 2>/dev/null | tail -n 1)"
say "kernel cache: $(ls "$MKC_CACHE_DIR/cuda" 2>/dev/null | wc -l) cubins primed"
if ! build/mkc --help >/dev/null 2>"$out/mkc.err"; then
  say "build/mkc does not run here:"
  tee -a "$log" <"$out/mkc.err"
  exit 1
fi

say "-- first run: tiny, 32 tokens, cuda against cpu"
args=(run --preset tiny --random-weights 7 -n 32 --prompt-ids 1,2,3 --draft-max 4)
timeout "$(limit 90)" build/mkc "${args[@]}" --backend cuda >"$out/first.cuda" 2>"$out/first.err"
first=$?
say "cuda exit $first: $(tr '\n' ' ' <"$out/first.cuda" | head -c 200)"
tail -n 4 "$out/first.err" | tee -a "$log"
build/mkc "${args[@]}" --backend cpu >"$out/first.cpu" 2>/dev/null
cmp -s "$out/first.cuda" "$out/first.cpu" && say "first run: cuda = cpu" ||
  say "first run: cuda != cpu; cpu: $(tr '\n' ' ' <"$out/first.cpu" | head -c 200)"

source tests/gpu/shapes.sh
peer() { # SHAPES
  say "-- transformers peer: $1"
  PYTHONUNBUFFERED=1 timeout "$(limit 150)" python3 tests/gpu/hf_peer.py --shapes "$1" \
    --depths 0,512,4096 -n 128 2>>"$out/peer.err" | tee -a "$log"
}
if [ "$first" -ne 0 ]; then # the kernel does not run: keep the device time for a fixed build
  peer llama-3.2-1b,smollm2-135m
  say "== stopped early: the first run failed; $(($(date +%s) - t_start)) s"
  exit 1
fi

# What a stage costs beyond its bytes, apart from mkc's kernel (tests/gpu/probe_flow.cu): a few
# seconds, its tables whole into the summary
if [ -x build/probe_flow ]; then
  say "-- probe_flow: flow hops, stages of llama-3.2-1b's sizes, read bandwidth"
  timeout "$(limit 60)" build/probe_flow 2>&1 | tee -a "$log"
  say "probe_flow exit ${PIPESTATUS[0]}"
else
  say "-- probe_flow: not built (no nvcc where tests/gpu/pack.sh ran)"
fi

say "-- make test-gpu (the suite and graph replay; compute-sanitizer later)"
MKC_GPU_PARTS=suite timeout "$(limit 150)" bash tests/gpu/run.sh >"$out/test-gpu.log" 2>&1
say "exit $?: $(tail -n 1 "$out/test-gpu.log")"
grep -E '^FAIL|^skip|     \|' "$out/test-gpu.log" | head -n 30 | tee -a "$log"

models=/tmp/mkc-models
mkdir -p $models
make_model smollm2-q41 $models >"$out/models.log" 2>&1 || say "make_model failed: $(tail -n 2 "$out/models.log")"
bench() { # RUN: one mkc bench table into the summary (not if its name is in $BENCH_SKIP)
  run_parts "$1"
  local name=$run_name
  [[ " ${BENCH_SKIP:-} " == *" $name "* ]] && { say "-- mkc bench $name: skipped (BENCH_SKIP)"; return; }
  run_model $models "${run_args[@]}" >>"$out/models.log" 2>&1 || say "make_model failed: $(tail -n 2 "$out/models.log")"
  say "-- mkc bench $name: ${run_envs[*]} ${run_args[*]}"
  timeout "$(limit 90)" env "${run_envs[@]}" build/mkc bench "${run_args[@]}" --backend cuda \
    >"$out/bench-$name.md" 2>"$out/bench-$name.err"
  local rc=$?
  grep -E '^\||GB/s' "$out/bench-$name.md" | tee -a "$log"
  [ "$rc" -eq 0 ] || { say "exit $rc:"; tail -n 5 "$out/bench-$name.err" | tee -a "$log"; }
}
for run in "${BENCH_RUNS[@]:0:8}"; do bench "$run"; done
for entry in "${SLOT_RUNS[@]}"; do # the slots' aggregate rate, while the peer and the sanitizer keep theirs
  [ "$(left)" -gt 220 ] || { say "-- slots from B = $entry on: left for tests/gpu/second.sh"; break; }
  slot_bench "$entry" "$out"
done
[ "$(left)" -gt 30 ] && peer llama-3.2-1b,smollm2-135m
if [ "$(left)" -gt 40 ]; then
  say "-- compute-sanitizer"
  MKC_GPU_PARTS=sanitizer timeout "$(limit 200)" bash tests/gpu/run.sh >"$out/sanitizer.log" 2>&1
  say "exit $?: $(tail -n 1 "$out/sanitizer.log")"
  grep -E '^FAIL|^ok|^skip|     \|' "$out/sanitizer.log" | head -n 30 | tee -a "$log"
fi
make_model l1b-q4k $models >>"$out/models.log" 2>&1 || say "make_model failed: $(tail -n 2 "$out/models.log")"
for run in "${BENCH_RUNS[@]:8}"; do [ "$(left)" -gt 30 ] && bench "$run"; done
if [ "$(left)" -gt 30 ]; then
  make_model smollm2-q41-vocab $models >>"$out/models.log" 2>&1
  imatrix_text "$out/im.txt"
  for ppl in "" --no-ppl; do # with the perplexity estimates (steps of 5 for them), and without
    say "-- mkc imatrix: SmolLM2-135M shapes, Q4_1: ${IMATRIX_ARGS[*]} $ppl"
    timeout "$(limit 60)" build/mkc imatrix -m $models/smollm2-q41-vocab.gguf -f "$out/im.txt" \
      "${IMATRIX_ARGS[@]}" $ppl -o "$out/im.gguf" 2>&1 | grep -E 'error|chunks of|16 of 16|written|Final' | tee -a "$log"
  done
fi
say "== done $(date -u +%FT%TZ), $(($(date +%s) - t_start)) s"
