#!/usr/bin/env bash
# Writes tests/data/gemma{1,2,3}_transformers*.txt: Hugging Face transformers' greedy continuation
# of a prompt on the Gemma folders `mkc init --preset gemma3-tiny --seed 5`, `--preset gemma2-tiny
# --seed 5` and `--preset gemma1-tiny --seed 5` write (config.json as transformers 4 wrote
# Gemma's), and on gemma3-tiny's weights under the config.json transformers itself saves (tests/data/gemma3_transformers5.json: rope_parameters
# per layer type and layer_types, as transformers 5 writes them) for a variant whose scores are
# scaled by query_pre_attn_scalar = 64 and whose global layers' RoPE is linearly scaled by 4.
# test_gemma_hf.sh checks mkc's kernel against them. Also tests/data/phi3_transformers.txt, on the
# phi3 folder `mkc init --preset odd --seed 5 --arch phi3` writes (qkv_proj, gate_up_proj), which
# test_gguf_cli.sh reads, tests/data/smollm3_transformers.txt, on smollm3-tiny's folder (NoPE
# layers), which test_nope.sh reads, and tests/data/exaone4{,_swa}_transformers.txt, on
# exaone4-tiny's and exaone4-swa-tiny's folders, which test_exaone4.sh reads. Needs torch and transformers:
#   python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch transformers
#   PYTHON=/tmp/tv/bin/python bash tools/gemma_hf_fixture.sh
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
PROMPT="3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3 8 4" # past the windows of 16
STEPS=48
rm -rf "$work/g1" "$work/g2" "$work/g3" "$work/g3v" "$work/phi3" "$work/s3" "$work/e4" "$work/e4s"
build/mkc init --preset gemma1-tiny --seed 5 -o "$work/g1" >&2
build/mkc init --preset smollm3-tiny --seed 5 -o "$work/s3" >&2
build/mkc init --preset exaone4-tiny --seed 5 -o "$work/e4" >&2
build/mkc init --preset exaone4-swa-tiny --seed 5 -o "$work/e4s" >&2
build/mkc init --preset gemma2-tiny --seed 5 -o "$work/g2" >&2
build/mkc init --preset odd --seed 5 --arch phi3 -o "$work/phi3" >&2
build/mkc init --preset gemma3-tiny --seed 5 -o "$work/g3" >&2
mkdir -p "$work/g3v"
cp "$work/g3/model.safetensors" "$work/g3v/"
"$py" - "$work/g3" "$work/g3v" <<'PY'
import sys
import transformers
config = transformers.AutoConfig.from_pretrained(sys.argv[1])
config.query_pre_attn_scalar = 64
config.rope_parameters["full_attention"].update(rope_type="linear", factor=4.0)
config.save_pretrained(sys.argv[2])
PY
cp "$work/g3v/config.json" tests/data/gemma3_transformers5.json
version=$("$py" -c 'import transformers; print(transformers.__version__)')
# fixture NAME DIR PRESET [CONFIG]
fixture() {
  {
    echo "# transformers $version (float32, eager attention) on \`mkc init --preset $3 --seed 5\`"
    [ -z "${4:-}" ] || echo "# under $4"
    echo "# (tools/gemma_hf_fixture.sh): the weights' file, the prompt's ids, then each greedy"
    echo "# step's id and log-probability, and the runner-up's"
    echo "sha256 $(sha256sum <"$2/model.safetensors" | cut -d' ' -f1) model.safetensors"
    echo "prompt $PROMPT"
    # shellcheck disable=SC2086
    "$py" tools/hf_greedy.py "$2" $STEPS $PROMPT
  } >"tests/data/$1.txt"
}
fixture gemma1_transformers "$work/g1" gemma1-tiny
fixture smollm3_transformers "$work/s3" smollm3-tiny
fixture exaone4_transformers "$work/e4" exaone4-tiny
fixture exaone4_swa_transformers "$work/e4s" exaone4-swa-tiny
fixture gemma2_transformers "$work/g2" gemma2-tiny
fixture gemma3_transformers "$work/g3" gemma3-tiny
fixture gemma3_transformers5 "$work/g3v" gemma3-tiny tests/data/gemma3_transformers5.json
fixture phi3_transformers "$work/phi3" "odd --arch phi3"
