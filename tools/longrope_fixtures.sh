#!/usr/bin/env bash
# Writes tests/data/NAME_{llamacpp,transformers}_{short,long}.txt for PRESET (longrope-tiny:
# longrope_*; partial-tiny: partial_*): llama.cpp's and Hugging Face transformers' greedy
# continuations on the phi3 model `mkc init --preset PRESET --seed 5 --arch phi3` writes (Phi-3's
# 128k RoPE: short and long factors, trained on 256 positions; partial-tiny also rotates 12 of 16
# dims, as Phi-4-mini does), each with the factors of one side of 256. llama.cpp picks them by
# its context (a multiple of 256): 256 gives the short ones, 512 the long ones. transformers picks
# them by the sequence's length at each forward: a 20-token prompt and 48 steps stay within 256
# (short), a 260-token prompt is past it from the start (long). test_gguf_cli.sh runs mkc with
# --ctx 256 and --ctx 512 against them. Needs what tools/gemma_llamacpp_fixture.sh and
# tools/gemma_hf_fixture.sh need:
#   PYTHON=/tmp/tv/bin/python WORK=/tmp/lcpp2 bash tools/longrope_fixtures.sh [PRESET]
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=${WORK:-$(mktemp -d)}
preset=${1:-longrope-tiny}
name=${preset%-tiny}
mkdir -p "$work"
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4"
LONG_PROMPT=$(for i in $(seq 260); do printf '%d ' $(((i * 37) % 271 + 1)); done)
LONG_PROMPT=${LONG_PROMPT% }
for side in short:256 long:512; do
  MKC_N_CTX=${side#*:} INIT_FLAGS="--arch phi3 --type f32" WORK=$work \
    bash tools/gemma_llamacpp_fixture.sh "$preset" >"tests/data/${name}_llamacpp_${side%:*}.txt"
done
rm -rf "$work/$name"
build/mkc init --preset "$preset" --seed 5 --arch phi3 -o "$work/$name" >&2
version=$("$py" -c 'import transformers; print(transformers.__version__)')
# fixture SIDE STEPS PROMPT
fixture() {
  {
    echo "# transformers $version (float32, eager attention) on \`mkc init --preset $preset --seed 5 --arch phi3\`"
    echo "# (tools/longrope_fixtures.sh; the $1 factors): the weights' file, the prompt's ids, then each"
    echo "# greedy step's id and log-probability, and the runner-up's"
    echo "sha256 $(sha256sum <"$work/$name/model.safetensors" | cut -d' ' -f1) model.safetensors"
    echo "prompt $3"
    # shellcheck disable=SC2086
    "$py" tools/hf_greedy.py "$work/$name" "$2" $3
  } >"tests/data/${name}_transformers_$1.txt"
}
fixture short 48 "$PROMPT"
fixture long 16 "$LONG_PROMPT"
