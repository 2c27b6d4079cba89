#!/usr/bin/env bash
# Issue 15 on a GPU with real weights: SmolLM2-135M (its two halves carried
# by two calls, tests/gpu/model_parts.sh) decoding prose, greedy, 256 tokens:
# plain decoding (the T = 1 kernel), prompt-lookup drafts at depth 4, and the
# adaptive controller, 3 rounds alternating; the generation's tokens/s from
# the stats line, and the acceptance. The controller's bound: no slower than
# plain by more than 3 %.
#   bash tests/gpu/prose.sh [BUDGET_SECONDS]     (default 200)
set -u
budget=${1:-200} log_name=prose.log
source tests/gpu/session.sh
model=/tmp/mkc-models/smollm2-real.gguf
mkdir -p /tmp/mkc-models
if ! cat build/gpu-model-a/part build/gpu-model-b/part >"$model" 2>/dev/null ||
  [ "$(sha256sum -b <"$model" | cut -d' ' -f1)" != "$(cat build/gpu-model-b/sha256)" ]; then
  say "prose: the model's two parts are not both here, or do not join to its sha256"
  exit 1
fi
prompt="The history of the city begins in the twelfth century, when a small group of merchants"
modes=("plain|--draft-max 0" "lookup4|--draft-max 4" "adaptive|--draft-max 4 --draft-adaptive")
say "== $(date -u +%FT%TZ) tests/gpu/prose.sh: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
for rep in 1 2 3; do
  for m in "${modes[@]}"; do
    name=${m%%|*} flags=${m#*|}
    [ "$(left)" -gt 15 ] || break 2
    # shellcheck disable=SC2086 # flags: words
    timeout "$(limit 60)" build/mkc run -m "$model" --backend cuda --ctx 8192 -p "$prompt" -n "${PROSE_N:-256}" \
      --ignore-eos $flags --json 2>"$dest/prose-$name-$rep.err" | tail -n 1 >"$dest/prose-$name-$rep.json"
    python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["stats"]
print("prose %s round %s: %.1f tok/s, acceptance %.1f%%, %.2f tokens/step, %d fallbacks" % (
    sys.argv[2], sys.argv[3], (st["generated"] - 1) / (st["seconds"] - st["prompt_seconds"]),
    100 * st["acceptance"], st["tokens_per_step"], st["fallbacks"]))' \
      "$dest/prose-$name-$rep.json" "$name" "$rep" 2>&1 | tee -a "$log"
  done
done
say "== done, $(($(date +%s) - t_start)) s"
