#!/usr/bin/env bash
# Acceptance of each draft source on a real model (issue 15):
#   tests/perf/draft_sources.sh [MKC] [MODEL] [K] [N]
# Three fixed prompts (prose, code, a repetitive list), greedy, N tokens
# each (--ignore-eos), drafts of up to K; for prompt lookup, self-speculation
# on the first 8, 12 and 16 layers, and the adaptive controller over lookup
# and over the first 16 layers. Prints a markdown table from --json's stats
# line: acceptance, tokens per target step, rounds, fallbacks, and the time
# split (wall time: compare within a run, on a quiet machine).
set -euo pipefail
mkc=${1:-build/mkc}
model=${2:-${MKC_TEST_DATA:-$HOME/.cache/mkc/testdata}/SmolLM2-135M-Instruct.Q4_1.gguf}
k=${3:-4} n=${4:-64}
[ -f "$model" ] || { echo "mkc: error: no model at $model (run tests/data/fetch.sh)" >&2; exit 2; }
declare -A prompts=(
  [prose]="The history of the city begins in the twelfth century, when a small group of merchants"
  [code]=$'def binary_search(items, target):\n    lo, hi = 0, len(items) - 1\n'
  [list]=$'Shopping list:\n1. apples\n2. pears\n3. plums\n4. apples\n5. pears\n6.'
)
sources=("lookup|" "self L=8|--draft-layers 8" "self L=12|--draft-layers 12" "self L=16|--draft-layers 16"
  "adaptive lookup|--draft-adaptive" "adaptive self L=16|--draft-layers 16 --draft-adaptive")
echo "| prompt | source | acceptance | tokens/step | rounds | drafted | accepted | all accepted | fallbacks | tok/s | draft s | target s | verify s |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for p in prose code list; do
  for s in "${sources[@]}"; do
    name=${s%%|*} flags=${s#*|}
    # shellcheck disable=SC2086
    "$mkc" run -m "$model" --backend cpu --ctx 256 -p "${prompts[$p]}" -n "$n" --ignore-eos \
      --draft-max "$k" $flags --json 2>/dev/null | tail -n 1 | python3 -c '
import json, sys
st = json.load(sys.stdin)["stats"]
gen_s = st["seconds"] - st["prompt_seconds"]
v = st["verify_seconds"]
print("| %s | %s | %.1f%% | %.2f | %d | %d | %d | %d | %d | %.2f | %.2f | %.2f | %s |" % (
    sys.argv[1], sys.argv[2], 100 * st["acceptance"], st["tokens_per_step"], st["rounds"],
    st["drafted"], st["accepted"], st["all_accepted"], st["fallbacks"],
    (st["generated"] - 1) / gen_s, st["draft_seconds"], st["target_seconds"],
    "n/a" if v is None else "%.2f" % v))' "$p" "$name"
  done
done
