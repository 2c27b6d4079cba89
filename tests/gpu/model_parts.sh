#!/usr/bin/env bash
# Splits the real SmolLM2-135M file (tests/data/fetch.sh model: 98 MB, over
# the 64 MiB a device call carries) into two halves for two calls on the same
# warm machine: build/gpu-model-a/part and build/gpu-model-b/part, each with
# the whole file's sha256. tests/gpu/prose.sh joins them there.
#   bash tests/gpu/model_parts.sh
# Then, while the machine is warm (its idle release is 30 s: call at once):
#   device call 1: `true`, carry ["build/gpu-model-a"]
#   device call 2: `bash tests/gpu/prose.sh 200`, carry ["build/gpu-model-b"]
# (build/gpu-carry, from the session's first call, is still there.)
set -eu
cd "$(dirname "$0")/../.."
src=$(bash tests/data/fetch.sh model)/SmolLM2-135M-Instruct.Q4_1.gguf
size=$(stat -L -c %s "$src")
half=$(((size + 1) / 2))
rm -rf build/gpu-model-a build/gpu-model-b
mkdir -p build/gpu-model-a build/gpu-model-b
head -c "$half" "$src" >build/gpu-model-a/part
tail -c +$((half + 1)) "$src" >build/gpu-model-b/part
sha256sum -b <"$src" | cut -d' ' -f1 | tee build/gpu-model-a/sha256 >build/gpu-model-b/sha256
echo "build/gpu-model-a, build/gpu-model-b: $size bytes in two parts"
