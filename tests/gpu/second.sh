#!/usr/bin/env bash
# A short second device call after tests/gpu/bench.sh, with what the first
# one lacked: BENCH NAMES (of tests/gpu/shapes.sh, its benches and its slot
# runs, slots-B[-VAR=VALUE...]; primed with PRIME_RUNS="NAMES"
# tests/gpu/prime.sh), then, given PEER_SHAPES, a full
# racecheck report of tiny and the transformers peer; with SUITE_S=N, first
# tests/gpu/run.sh's suite (N seconds at most). Same carry as bench.sh.
#   bash tests/gpu/second.sh BUDGET "BENCH NAMES" [PEER_SHAPES]
set -u
budget=$1 names=$2 shapes=${3:-} log_name=second.log
source tests/gpu/session.sh
say "== $(date -u +%FT%TZ) tests/gpu/second.sh: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
if [ -n "${SUITE_S:-}" ]; then # SUITE_S=N: tests/gpu/run.sh's suite first, N seconds at most
  say "-- the suite (cuda against the reference)"
  MKC_GPU_PARTS=suite timeout "$(limit "$SUITE_S")" bash tests/gpu/run.sh >"$dest/suite.log" 2>&1
  say "exit $?: $(tail -n 1 "$dest/suite.log")"
  grep -E '^FAIL' "$dest/suite.log" | head -n 20 | tee -a "$log"
fi
source tests/gpu/shapes.sh
models=/tmp/mkc-models
mkdir -p $models
for run in "${BENCH_RUNS[@]}"; do
  run_parts "$run"
  [[ " $names " == *" $run_name "* ]] || continue
  run_model $models "${run_args[@]}" >/dev/null 2>&1
  [ "$(left)" -gt 20 ] || { say "-- mkc bench $run_name: no time left"; continue; }
  say "-- mkc bench $run_name: ${run_envs[*]} ${run_args[*]}"
  t0=$(date +%s)
  timeout "$(limit 60)" env "${run_envs[@]}" build/mkc bench "${run_args[@]}" --backend cuda 2>&1 |
    grep -E '^\||GB/s|error|compil' | tee -a "$log"
  say "($(($(date +%s) - t0)) s)"
done
for entry in "${SLOT_RUNS[@]}"; do # slot runs by name: slots-B[-VAR=VALUE...]
  [[ " $names " == *" slots-${entry// /-} "* ]] || continue
  [ "$(left)" -gt 20 ] || { say "-- slots $entry: no time left"; continue; }
  slot_bench "$entry" "$dest"
done
[ -n "$shapes" ] || { say "== done, $(($(date +%s) - t_start)) s"; exit 0; }
say "-- racecheck tiny"
MKC_CUDA_GRAPH=0 timeout 40 compute-sanitizer --tool racecheck --racecheck-report all build/mkc run --preset tiny \
  --random-weights 3 -n 6 --prompt-ids 1,2,3,1,2 --draft-max 2 --backend cuda >"$dest/racecheck.log" 2>&1
say "racecheck exit $?: $(grep -c Hazard "$dest/racecheck.log") hazard lines"
say "-- transformers peer: $shapes ($(left) s left)"
PYTHONUNBUFFERED=1 timeout $(($(left) - 5)) python3 tests/gpu/hf_peer.py --shapes "$shapes" \
  --depths 0,512,4096 -n 128 2>"$dest/peer.err" | tee -a "$log"
say "== done, $(($(date +%s) - t_start)) s"
