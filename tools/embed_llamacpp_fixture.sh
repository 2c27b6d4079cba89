#!/usr/bin/env bash
# Writes llama.cpp's embeddings of a prompt on the files `mkc init --preset P --seed 5 --type f32`
# writes (qwen3-tiny, gemma3-tiny): for each, the file's sha256, then the vector pooled by mean, cls
# and last, not normalized. test_embed.sh checks `mkc embed` against it. F32 matrices (the bf16
# values init draws, exact in F32), so llama.cpp's CPU matmuls keep their activations in F32 as
# mkc's kernel does (with BF16 matrices they round them to BF16); mkc runs with an F16 KV cache,
# llama.cpp's default. llama.cpp is the one llama-cpp-python 0.3.36 vendors, built as
# tools/gemma_llamacpp_fixture.sh builds it (WORK: that folder, to reuse the build):
#   pip install gguf   # tools/gguf_add_vocab.py
#   bash tools/embed_llamacpp_fixture.sh > tests/data/embed_llamacpp.txt
set -eu
cd "$(dirname "$0")/.."
work=${WORK:-$(mktemp -d)}
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4"
l=$work/llama.cpp
if [ ! -f "$l/build/src/libllama.a" ]; then
  WORK=$work bash tools/gemma_llamacpp_fixture.sh gemma3-tiny >/dev/null
fi
g++ -O1 -x c tools/llamacpp_embed.c -x none -I"$l/include" -I"$l/ggml/include" \
  "$l/build/src/libllama.a" "$l/build/ggml/src/libggml.a" "$l/build/ggml/src/libggml-cpu.a" \
  "$l/build/ggml/src/libggml-base.a" -lgomp -lpthread -lm -o "$work/embed"
echo "# llama.cpp (llama-cpp-python 0.3.36's) embeddings on \`mkc init --preset P --seed 5 --type f32\`"
echo "# (tools/embed_llamacpp_fixture.sh): the prompt's ids; per preset its file's sha256, then"
echo "# POOLING and the pooled vector, not normalized"
echo "prompt $PROMPT"
for preset in qwen3-tiny gemma3-tiny; do
  build/mkc init --preset "$preset" --seed 5 --type f32 -o "$work/$preset-f32.gguf" >&2
  python3 tools/gguf_add_vocab.py "$work/$preset-f32.gguf" "$work/$preset-f32-vocab.gguf"
  echo "file $preset $(sha256sum <"$work/$preset-f32.gguf" | cut -d' ' -f1)"
  for pool in mean cls last; do
    # shellcheck disable=SC2086
    echo "$preset $pool $("$work/embed" "$work/$preset-f32-vocab.gguf" $pool $PROMPT 2>/dev/null)"
  done
done
