#!/usr/bin/env bash
# The cpu backend's speed, side by side: tests/perf/cpu_speed.sh OLD_MKC NEW_MKC [MODEL]
# Each binary uses its own checkout's templates (built in). Runs every case
# twice, alternating the binaries, and prints their stats lines: decode of 64
# tokens after a short prompt, and the time to first token of a ~300-token
# prompt (-n 1). Kernels are compiled once before timing.
set -euo pipefail
old=$1 new=$2
model=${3:-${MKC_TEST_DATA:-$HOME/.cache/mkc/testdata}/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$model" ] || { echo "mkc: error: no model at $model (run tests/data/fetch.sh)" >&2; exit 2; }
long=""
for i in $(seq 1 24); do long+="The quick brown fox number $i jumps over the lazy dog. "; done
run() { "$1" run -m "$model" --backend cpu "${@:2}" 2>&1 >/dev/null | grep "cpu backend" || true; }
for b in "$old" "$new"; do run "$b" -p "warm" -n 1 >/dev/null; done
for rep in 1 2; do
  for b in "$old" "$new"; do
    echo "== $b (run $rep)"
    run "$b" -p "Once upon a time" -n 64
    run "$b" -p "$long" -n 1
  done
done
