#!/usr/bin/env bash
# Writes llama.cpp's greedy continuation of a prompt on the file `mkc init --preset PRESET --seed 5`
# writes (gemma3-tiny: a gemma3 file; gemma2-tiny: a gemma2 file; gemma1-tiny: a gemma file), with
# each step's log-probability. test_gguf_cli.sh and test_gemma_hf.sh check mkc's kernel against it. llama.cpp
# is the one llama-cpp-python 0.3.36 vendors (the sdist tests/data/fetch.sh pins), built here on
# the CPU:
#   pip install gguf   # tools/gguf_add_vocab.py
#   bash tools/gemma_llamacpp_fixture.sh gemma3-tiny > tests/data/gemma3_llamacpp.txt
#   bash tools/gemma_llamacpp_fixture.sh gemma2-tiny > tests/data/gemma2_llamacpp.txt
#   bash tools/gemma_llamacpp_fixture.sh gemma1-tiny > tests/data/gemma1_llamacpp.txt
#   bash tools/gemma_llamacpp_fixture.sh smollm3-tiny > tests/data/smollm3_llamacpp.txt
#   INIT_FLAGS="--type f32" bash tools/gemma_llamacpp_fixture.sh exaone4-tiny > tests/data/exaone4_llamacpp.txt
#   INIT_FLAGS="--type f32" bash tools/gemma_llamacpp_fixture.sh exaone4-swa-tiny > tests/data/exaone4_swa_llamacpp.txt
# MKC_N_CTX: llama.cpp's context (256; tools/llamacpp_greedy.c). INIT_FLAGS go to mkc init (a phi3 file, fused matrices and all; F32 matrices, so llama.cpp's CPU
# keeps its activations in F32, and test_gguf_cli.sh runs mkc with an F16 cache as llama.cpp's):
#   INIT_FLAGS="--arch phi3 --type f32" bash tools/gemma_llamacpp_fixture.sh odd > tests/data/phi3_llamacpp.txt
#   INIT_FLAGS="--arch exaone --type f32" bash tools/gemma_llamacpp_fixture.sh odd > tests/data/exaone_llamacpp.txt
set -eu
cd "$(dirname "$0")/.."
preset=${1:-gemma3-tiny}
work=${WORK:-$(mktemp -d)}
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4" # past the window of 16
STEPS=48
if [ ! -d "$work/llama.cpp" ]; then
  python3 -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$work" >&2
  echo "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e  $work/llama_cpp_python-0.3.36.tar.gz" |
    sha256sum -c --quiet - >&2
  tar -xzf "$work/llama_cpp_python-0.3.36.tar.gz" -C "$work"
  mv "$work/llama_cpp_python-0.3.36/vendor/llama.cpp" "$work/llama.cpp"
fi
l=$work/llama.cpp
cmake -S "$l" -B "$l/build" -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$l/build" --target llama -j"$(nproc)" >&2
g++ -O1 -x c tools/llamacpp_greedy.c -x none -I"$l/include" -I"$l/ggml/include" \
  "$l/build/src/libllama.a" "$l/build/ggml/src/libggml.a" "$l/build/ggml/src/libggml-cpu.a" \
  "$l/build/ggml/src/libggml-base.a" -lgomp -lpthread -lm -o "$work/greedy"
# shellcheck disable=SC2086
build/mkc init --preset "$preset" --seed 5 ${INIT_FLAGS:-} -o "$work/$preset.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/$preset.gguf" "$work/$preset-vocab.gguf"
echo "# llama.cpp (llama-cpp-python 0.3.36's) on \`mkc init --preset $preset --seed 5${INIT_FLAGS:+ $INIT_FLAGS}\`"
echo "# (tools/gemma_llamacpp_fixture.sh): the file's sha256, the prompt's ids, then each greedy step's id and"
echo "# log-probability, and the runner-up's"
[ -z "${MKC_N_CTX:-}" ] || echo "# with a context of $MKC_N_CTX positions (MKC_N_CTX)"
echo "sha256 $(sha256sum <"$work/$preset.gguf" | cut -d' ' -f1)" # the file mkc init wrote
echo "prompt $PROMPT"
# shellcheck disable=SC2086
"$work/greedy" "$work/$preset-vocab.gguf" $STEPS $PROMPT 2>/dev/null
