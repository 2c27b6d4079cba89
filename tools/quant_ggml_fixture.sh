#!/usr/bin/env bash
# Writes the fixtures of ggml's own quantizers and importance matrices that test_quantize_fit
# reads: tests/data/quant_ggml.bin (tools/quant_ggml_fixture.c: random rows in each type, as
# ggml_quantize_chunk encodes them, without and with an importance matrix) and
# tests/data/imatrix_blocks_tiny.gguf and .dat (llama-imatrix, both formats, on `mkc init
# --preset blocks-tiny --seed 2 --type f32` with tools/gguf_add_vocab.py's stand-in vocabulary,
# over this repo's README). llama.cpp is the one llama-cpp-python 0.3.36 vendors, built here on
# the CPU by tools/gemma_llamacpp_fixture.sh (WORK: that folder, to reuse the build):
#   pip install gguf   # tools/gguf_add_vocab.py
#   bash tools/quant_ggml_fixture.sh
set -eu
cd "$(dirname "$0")/.."
work=${WORK:-$(mktemp -d)}
# the download, the checksum and the static build, as tools/embed_llamacpp_fixture.sh gets them
[ -f "$work/llama.cpp/build/ggml/src/libggml-base.a" ] ||
  WORK=$work bash tools/gemma_llamacpp_fixture.sh gemma3-tiny >/dev/null
l=$work/llama.cpp
cmake --build "$l/build" --target llama-imatrix -j"$(nproc)" >&2
gcc -O1 tools/quant_ggml_fixture.c -I"$l/ggml/include" "$l/build/ggml/src/libggml-base.a" \
  -lpthread -lm -o "$work/quant_ggml_fixture"
"$work/quant_ggml_fixture" tests/data/quant_ggml.bin
build/mkc init --preset blocks-tiny --seed 2 --type f32 -o "$work/bt.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/bt.gguf" "$work/bt-vocab.gguf"
for format in gguf dat; do
  "$l/build/bin/llama-imatrix" -m "$work/bt-vocab.gguf" -f README.md -c 64 --chunks 4 -t 2 \
    --output-format $format -o tests/data/imatrix_blocks_tiny.$format >&2
done
