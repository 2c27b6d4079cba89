#!/usr/bin/env bash
# Writes tests/data/NAME_llamacpp.txt and tests/data/NAME_transformers.txt for each PRESET
# (NAME: the preset less -tiny): llama.cpp's and Hugging Face transformers' greedy continuations,
# with each step's log-probability, on the GGUF (F32 matrices) and the folder `mkc init --preset
# PRESET --seed 5` writes. test_gguf_cli.sh checks mkc against them:
#   granite-tiny: llama.cpp's granite, transformers' GraniteForCausalLM (Granite's multipliers:
#     embeddings x 12, scores x 1/16, residual branches x 0.22, logits / 8)
#   moe-tiny: qwen3moe, Qwen3MoeForCausalLM; mixtral-tiny: llama with experts, MixtralForCausalLM;
#   granitemoe-tiny: granitemoe, GraniteMoeForCausalLM
# Needs what tools/gemma_llamacpp_fixture.sh and tools/hf_greedy.py need:
#   PYTHON=/tmp/tv/bin/python WORK=/tmp/lcpp2 bash tools/oracle_fixtures.sh granite-tiny moe-tiny \
#     mixtral-tiny granitemoe-tiny
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4"
for preset in "$@"; do
  name=${preset%-tiny}
  INIT_FLAGS="--type f32" WORK=$work bash tools/gemma_llamacpp_fixture.sh "$preset" >"tests/data/${name}_llamacpp.txt"
  rm -rf "${work:?}/$name-hf"
  build/mkc init --preset "$preset" --seed 5 -o "$work/$name-hf" >&2
  {
    echo "# transformers $("$py" -c 'import transformers; print(transformers.__version__)') (float32, eager attention) on \`mkc init --preset $preset --seed 5\`"
    echo "# (tools/oracle_fixtures.sh): the weights' file, the prompt's ids, then each greedy step's id"
    echo "# and log-probability, and the runner-up's"
    echo "sha256 $(sha256sum <"$work/$name-hf/model.safetensors" | cut -d' ' -f1) model.safetensors"
    echo "prompt $PROMPT"
    # shellcheck disable=SC2086
    "$py" tools/hf_greedy.py "$work/$name-hf" 48 $PROMPT
  } >"tests/data/${name}_transformers.txt"
done
