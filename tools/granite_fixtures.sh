#!/usr/bin/env bash
# Writes tests/data/granite_llamacpp.txt and tests/data/granite_transformers.txt: llama.cpp's
# granite and Hugging Face transformers' GraniteForCausalLM, greedy, on the GGUF (F32 matrices) and
# the folder `mkc init --preset granite-tiny --seed 5` writes (Granite's multipliers: embeddings
# x 12, scores x 1/16, residual branches x 0.22, logits / 8). test_gguf_cli.sh checks mkc's
# kernel against them. Needs what tools/gemma_llamacpp_fixture.sh and tools/gemma_hf_fixture.sh
# need:
#   PYTHON=/tmp/tv/bin/python WORK=/tmp/lcpp2 bash tools/granite_fixtures.sh
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4"
INIT_FLAGS="--type f32" WORK=$work bash tools/gemma_llamacpp_fixture.sh granite-tiny >tests/data/granite_llamacpp.txt
rm -rf "$work/granite"
build/mkc init --preset granite-tiny --seed 5 -o "$work/granite" >&2
{
  echo "# transformers $("$py" -c 'import transformers; print(transformers.__version__)') (float32, eager attention) on \`mkc init --preset granite-tiny --seed 5\`"
  echo "# (tools/granite_fixtures.sh): the weights' file, the prompt's ids, then each greedy step's id"
  echo "# and log-probability, and the runner-up's"
  echo "sha256 $(sha256sum <"$work/granite/model.safetensors" | cut -d' ' -f1) model.safetensors"
  echo "prompt $PROMPT"
  # shellcheck disable=SC2086
  "$py" tools/hf_greedy.py "$work/granite" 48 $PROMPT
} >tests/data/granite_transformers.txt
