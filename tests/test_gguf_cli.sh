#!/usr/bin/env bash
# mkc init and mkc info: a GGUF file with seeded random weights, described
# with the values the preset gives; the same seed gives the same bytes; bad
# flags and bad files give clear messages.
source "$(dirname "$0")/lib.sh"

# expect_line NAME FILE LINE: FILE has exactly that line.
expect_line() {
  grep -qxF -- "$3" "$2" && ok "$1: $3" || fail "$1: $3" "$(cat "$2")"
}

if "$mkc" init graphs/llama.lua --preset tiny --seed 7 -o "$tmp/tiny.gguf" 2>"$tmp/err"; then
  ok "init tiny"
  grep -qE "^mkc: wrote $tmp/tiny.gguf \(llama-tiny, seed 7: 20 BF16 tensors, [0-9]+ bytes\)$" "$tmp/err" \
    && ok "init says what it wrote" || fail "init says what it wrote" "$(cat "$tmp/err")"
else
  fail "init tiny" "$(cat "$tmp/err")"
fi
if "$mkc" info -m "$tmp/tiny.gguf" >"$tmp/info" 2>"$tmp/err"; then
  ok "info tiny"
  size=$(wc -c <"$tmp/tiny.gguf")
  expect_line "info tiny" "$tmp/info" "format: GGUF v3, $size bytes, alignment 32, 15 metadata entries"
  expect_line "info tiny" "$tmp/info" "architecture: llama"
  expect_line "info tiny" "$tmp/info" "name: llama-tiny"
  expect_line "info tiny" "$tmp/info" "llama.block_count = 2"
  expect_line "info tiny" "$tmp/info" "llama.embedding_length = 64"
  expect_line "info tiny" "$tmp/info" "llama.feed_forward_length = 192"
  expect_line "info tiny" "$tmp/info" "llama.attention.head_count = 4"
  expect_line "info tiny" "$tmp/info" "llama.attention.head_count_kv = 2"
  expect_line "info tiny" "$tmp/info" "llama.context_length = 512"
  expect_line "info tiny" "$tmp/info" "llama.vocab_size = 256"
  expect_line "info tiny" "$tmp/info" "llama.rope.dimension_count = 16"
  expect_line "info tiny" "$tmp/info" "llama.rope.freq_base = 10000"
  expect_line "info tiny" "$tmp/info" "llama.attention.layer_norm_rms_epsilon = 1e-05"
  expect_line "info tiny" "$tmp/info" "tensors: 20 (BF16 20)"
  # tied head: embedding 256x64, per layer 2 norms 64, q 64x64, k,v 32x64, o 64x64,
  # gate, up 192x64, down 64x192; output norm 64
  params=$((256 * 64 + 2 * (2 * 64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 192 * 64) + 64))
  expect_line "info tiny" "$tmp/info" "tensor data: $((2 * params)) bytes (0.22 MiB), $params parameters"
  expect_line "info tiny" "$tmp/info" "tokenizer: none"
else
  fail "info tiny" "$(cat "$tmp/err")"
fi

# odd: untied head, NeoX RoPE, --ctx, and the graph argument left out.
if "$mkc" init --preset odd --seed 3 --ctx 100 -o "$tmp/odd.gguf" 2>"$tmp/err" \
  && "$mkc" info -m "$tmp/odd.gguf" >"$tmp/info" 2>>"$tmp/err"; then
  expect_line "info odd" "$tmp/info" "llama.context_length = 100"
  expect_line "info odd" "$tmp/info" "llama.embedding_length = 72"
  expect_line "info odd" "$tmp/info" "llama.attention.key_length = 12"
  expect_line "info odd" "$tmp/info" "tensors: 21 (BF16 21)"
else
  fail "init + info odd" "$(cat "$tmp/err")"
fi

# RoPE scaling: Llama 3's as the converter writes it (rope_freqs.weight, F32 [head_dim / 2]),
# YaRN's and linear's as rope.scaling.* metadata.
if "$mkc" init --preset llama3-tiny --seed 3 -o "$tmp/llama3.gguf" 2>"$tmp/err" \
  && "$mkc" info -m "$tmp/llama3.gguf" >"$tmp/info" 2>>"$tmp/err"; then
  grep -qE "^mkc: wrote $tmp/llama3.gguf \(llama-llama3-tiny, seed 3: 20 BF16 tensors and rope_freqs.weight \(F32\), [0-9]+ bytes\)$" "$tmp/err" \
    && ok "init llama3-tiny says it wrote rope_freqs.weight" || fail "init llama3-tiny's message" "$(cat "$tmp/err")"
  expect_line "info llama3-tiny" "$tmp/info" "tensors: 21 (F32 1, BF16 20)"
  expect_line "info llama3-tiny" "$tmp/info" "llama.rope.scaling.original_context_length = 64"
  if grep -q "^llama.rope.scaling.type\|^llama.rope.scaling.factor" "$tmp/info"; then
    fail "llama3-tiny: no rope.scaling.type/factor (llama.cpp would scale twice)" "$(cat "$tmp/info")"
  else
    ok "llama3-tiny: no rope.scaling.type/factor (llama.cpp would scale twice)"
  fi
else
  fail "init + info llama3-tiny" "$(cat "$tmp/err")"
fi
if "$mkc" init --preset yarn-tiny --seed 3 -o "$tmp/yarn.gguf" 2>"$tmp/err" \
  && "$mkc" info -m "$tmp/yarn.gguf" >"$tmp/info" 2>>"$tmp/err"; then
  expect_line "info yarn-tiny" "$tmp/info" 'qwen2.rope.scaling.type = "yarn"'
  expect_line "info yarn-tiny" "$tmp/info" "qwen2.rope.scaling.factor = 4"
  expect_line "info yarn-tiny" "$tmp/info" "qwen2.rope.scaling.original_context_length = 64"
else
  fail "init + info yarn-tiny" "$(cat "$tmp/err")"
fi

"$mkc" init --preset tiny --seed 7 -o "$tmp/again.gguf" 2>/dev/null
"$mkc" init --preset tiny --seed 8 -o "$tmp/other.gguf" 2>/dev/null
cmp -s "$tmp/tiny.gguf" "$tmp/again.gguf" && ok "the same seed writes the same bytes" \
  || fail "the same seed writes the same bytes"
! cmp -s "$tmp/tiny.gguf" "$tmp/other.gguf" && ok "another seed writes other weights" \
  || fail "another seed writes other weights"
ls "$tmp" | grep -q '\.tmp' && fail "no temporary file is left behind" "$(ls "$tmp")" \
  || ok "no temporary file is left behind"

# Bad flags and files.
expect_error "init without --preset" "mkc: error: init: --preset is required" -- init --seed 1 -o "$tmp/x.gguf"
expect_error "init without --seed" "mkc: error: init: --seed SEED is required" -- init --preset tiny -o "$tmp/x.gguf"
expect_error "init without -o" "mkc: error: init: -o FILE.gguf (or -o DIR) is required" -- init --preset tiny --seed 1
expect_error "init with a bad seed" "mkc: error: --seed: expected a non-negative integer, got '-3'" \
  -- init --preset tiny --seed -3 -o "$tmp/x.gguf"
expect_error "init with a bad --ctx" "mkc: error: --ctx: expected an integer in 1..1048576, got '0'" \
  -- init --preset tiny --seed 1 --ctx 0 -o "$tmp/x.gguf"
expect_error "init with an unknown option" "mkc: error: unknown option '--quant'" \
  -- init --preset tiny --seed 1 --quant q4 -o "$tmp/x.gguf"
expect_error "init with a missing value" "mkc: error: -o needs a value" -- init --preset tiny --seed 1 -o
expect_error "init with two graphs" "mkc: error: unexpected argument 'b.lua'" -- init a.lua b.lua --preset tiny
expect_error "init with an unknown preset" \
  "graphs/llama.lua:37: error: unknown preset huge (this graph has: tiny, odd, llama-3.2-1b, qwen2-tiny, qwen3-tiny, llama3-tiny, yarn-tiny, linear-tiny, longrope-tiny, partial-tiny, granite-tiny, gemma-3-1b, gemma-2-2b, smollm2-135m, blocks-tiny, swa-tiny, gemma-tiny, gemma3-tiny, gemma2-tiny, gemma1-tiny, smollm3-tiny, exaone4-tiny, exaone4-swa-tiny, hybrid-tiny, moe-tiny, mixtral-tiny, granitemoe-tiny, qwen3-30b-a3b-8l, gptoss-tiny, gpt-oss-20b-8l)" \
  -- init graphs/llama.lua --preset huge --seed 1 -o "$tmp/x.gguf"
expect_error "init to an unwritable path" "mkc: error: cannot write /nonexistent/x.gguf: No such file or directory" \
  -- init --preset tiny --seed 1 -o /nonexistent/x.gguf
expect_error "info without -m" "mkc: error: info: -m FILE.gguf is required" -- info
expect_error "info with an unknown option" "mkc: error: unknown option '--json'" -- info --json -m "$tmp/tiny.gguf"
expect_error "info -m without a value" "mkc: error: -m needs a value" -- info -m
expect_error "info on a missing file" "mkc: error: $tmp/nope.gguf: cannot open: No such file or directory" \
  -- info -m "$tmp/nope.gguf"
expect_error "info on a file that is not GGUF" \
  "mkc: error: README.md: not a GGUF file: magic 23 20 6d 6b, expected 47 47 55 46 (\"GGUF\")" -- info -m README.md
head -c 1000 "$tmp/tiny.gguf" >"$tmp/cut.gguf" # in the length of the seventh tensor name
expect_error "info on a truncated file" \
  "mkc: error: $tmp/cut.gguf: truncated at offset 994: tensor info 6 needs 8 bytes, 6 left" \
  -- info -m "$tmp/cut.gguf"
# Text from the file is shown escaped, never raw: a key, general.name and a
# tensor name holding terminal controls (same lengths, so the file stays whole).
perl -0777 -pe 's/llama\.block_count/llama.bl\x07ck_count/; s/llama-tiny/ll\x1b[31m\x07ny/' \
  "$tmp/tiny.gguf" >"$tmp/esc.gguf"
if "$mkc" info -m "$tmp/esc.gguf" >"$tmp/info" 2>"$tmp/err"; then
  expect_line "info, controls in a key and general.name" "$tmp/info" 'name: ll\x1b[31m\x07ny'
  expect_line "info, controls in a key and general.name" "$tmp/info" 'llama.bl\x07ck_count = 2'
  grep -q "$(printf '[\007\033]')" "$tmp/info" "$tmp/err" \
    && fail "info prints no raw control byte" "$(od -c "$tmp/info" | head)" \
    || ok "info prints no raw control byte"
else
  fail "info -m with controls in a key and general.name" "$(cat "$tmp/err")"
fi
perl -0777 -pe 's/output_norm\.weight(\x01\x00\x00\x00.{8})\x1e\x00\x00\x00/outp\x1b]0;hi\x07.weight${1}\x63\x00\x00\x00/s' \
  "$tmp/tiny.gguf" >"$tmp/esc.gguf"
expect_error "a tensor name with controls, in an error" \
  "mkc: error: $tmp/esc.gguf: tensor 'outp\\x1b]0;hi\\x07.weight': unknown tensor type 99" \
  -- info -m "$tmp/esc.gguf"
"$mkc" init --help >"$tmp/out" 2>&1 && grep -q '^usage: mkc init' "$tmp/out" && ok "init --help" || fail "init --help"
"$mkc" info --help >"$tmp/out" 2>&1 && grep -q '^usage: mkc info' "$tmp/out" && ok "info --help" || fail "info --help"

# Gemma 3 in a file: written as gemma3 (the window, its pattern and the local layers' RoPE base as
# metadata; embeddings scaled by sqrt(dim), GeGLU and the post norms implied), read back as the
# same graph: the kernel on the file gives the reference's tokens on the preset.
if "$mkc" init --preset gemma3-tiny --seed 5 -o "$tmp/g3.gguf" 2>"$tmp/err" &&
  "$mkc" run -m "$tmp/g3.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/g3.file" 2>"$tmp/err" &&
  "$mkc" run --preset gemma3-tiny --random-weights 5 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend ref \
    >"$tmp/g3.ref" 2>>"$tmp/err" && cmp -s "$tmp/g3.file" "$tmp/g3.ref" &&
  [ "$(tr ' ' '\n' <"$tmp/g3.ref" | sort -u | wc -l)" -ge 5 ]; then
  ok "gemma3-tiny through a gemma3 GGUF: the cpu kernel's 40 tokens are the reference's on the preset"
else
  fail "gemma3-tiny through a gemma3 GGUF: the cpu kernel's 40 tokens are the reference's on the preset" \
    "$(cat "$tmp/err") file: $(cat "$tmp/g3.file") ref: $(cat "$tmp/g3.ref")"
fi
# The same file against llama.cpp (tests/data/gemma3_llamacpp.txt, tools/gemma_llamacpp_fixture.sh): its
# greedy tokens past the window, each one's log-probability within 0.01 (llama.cpp's CPU rounds the
# activations to bf16 before a bf16 matmul; the kernel keeps them in float), at least 20 steps
# before a near-tie that rounding flips (lib.sh: expect_greedy).
expect_greedy "gemma3-tiny's file on the cpu kernel against llama.cpp" tests/data/gemma3_llamacpp.txt "$tmp/g3.gguf" 20
# A phi3 file (init --arch phi3): each layer's Q, K, V in attn_qkv and its gate and up in ffn_up,
# split back on reading; the same tokens as the preset, and llama.cpp's (its phi3 reads the fused
# matrices itself, so the split's order is checked by an engine that is not mkc).
if "$mkc" init --preset odd --seed 5 --arch phi3 -o "$tmp/phi3.gguf" 2>"$tmp/err" &&
  "$mkc" info -m "$tmp/phi3.gguf" >"$tmp/info" 2>&1 && grep -q "^architecture: phi3" "$tmp/info" &&
  grep -q "^tensors: 15 " "$tmp/info" && # 3 + 6 a layer: attn_qkv and ffn_up hold 5 of the graph's 9
  "$mkc" run -m "$tmp/phi3.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/phi3.file" 2>"$tmp/err" &&
  "$mkc" run --preset odd --random-weights 5 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend ref \
    >"$tmp/phi3.ref" 2>>"$tmp/err" && cmp -s "$tmp/phi3.file" "$tmp/phi3.ref"; then
  ok "odd through a phi3 GGUF (fused attn_qkv, gate and up in ffn_up): the reference's 40 tokens"
else
  fail "odd through a phi3 GGUF" "$(cat "$tmp/err" "$tmp/info" | head -40)" "file: $(cat "$tmp/phi3.file")"
fi
# llama.cpp's phi3 on the same file with F32 matrices (the bf16 values, exact), mkc's cache in F16 as
# llama.cpp's: all 48 greedy steps (within 0.005; with BF16 matrices llama.cpp rounds activations).
# The file is the one llama.cpp read (its sha256): a writer and a reader that fuse in the same wrong
# order would agree with each other, not with it.
"$mkc" init --preset odd --seed 5 --arch phi3 --type f32 -o "$tmp/phi3-f32.gguf" 2>/dev/null
expect_sha "init --arch phi3 --type f32 writes the file llama.cpp read" "$tmp/phi3-f32.gguf" \
  tests/data/phi3_llamacpp.txt
MKC_KV_DTYPE=f16 expect_greedy "odd's phi3 file on the cpu kernel against llama.cpp's phi3" \
  tests/data/phi3_llamacpp.txt "$tmp/phi3-f32.gguf"
# EXAONE 3's files (exaone: llama's layers, which llama.cpp runs with NEOX RoPE halves): odd as an
# exaone file, against llama.cpp's exaone (tests/data/exaone_llamacpp.txt) as phi3's above. The
# same weights as a llama file would be rotated in interleaved pairs there.
"$mkc" init --preset odd --seed 5 --arch exaone --type f32 -o "$tmp/exaone.gguf" 2>"$tmp/err" ||
  fail "init --arch exaone" "$(cat "$tmp/err")"
expect_sha "init --arch exaone --type f32 writes the file llama.cpp read" "$tmp/exaone.gguf" \
  tests/data/exaone_llamacpp.txt
MKC_KV_DTYPE=f16 expect_greedy "odd's exaone file on the cpu kernel against llama.cpp's exaone" \
  tests/data/exaone_llamacpp.txt "$tmp/exaone.gguf"
expect_error "init --arch exaone of interleaved RoPE" \
  "mkc: error: init: --arch exaone: preset tiny has interleaved RoPE pairs, which an exaone file does not carry (exaone: llama's layers with NEOX RoPE halves)" \
  -- init --preset tiny --seed 5 --arch exaone -o "$tmp/ex-tiny.gguf"
expect_error "init --arch exaone of a qwen2 preset" \
  "mkc: error: init: --arch exaone: preset qwen2-tiny has qwen2, which an exaone file does not carry (exaone: llama's layers with NEOX RoPE halves)" \
  -- init --preset qwen2-tiny --seed 5 --arch exaone -o "$tmp/ex-q2.gguf"
"$mkc" init --preset odd --seed 1 --arch gemma -o "$tmp/x.gguf" 2>"$tmp/err"
[ $? -eq 2 ] && grep -qxF "mkc: error: --arch: expected phi3 or exaone (the others follow from the preset), got 'gemma'" "$tmp/err" &&
  ok "init --arch of another architecture: a usage error, exit 2" || fail "init --arch gemma" "$(cat "$tmp/err")"
expect_error "init --arch exaone of longrope scaling (llama.cpp's exaone reads rope_freqs only)" \
  "mkc: error: init: --arch exaone: preset longrope-tiny has longrope scaling, which an exaone file does not carry (exaone: llama's layers with NEOX RoPE halves)" \
  -- init --preset longrope-tiny --seed 5 --arch exaone -o "$tmp/ex-lr.gguf"
expect_error "init --arch exaone to a folder" \
  "mkc: error: init: --arch exaone writes a GGUF only (-o FILE.gguf)" \
  -- init --preset odd --seed 5 --arch exaone -o "$tmp/ex-dir"
# The phi3 Hugging Face folder (qkv_proj, gate_up_proj): the preset's tokens, and transformers'
# own Phi3ForCausalLM (tests/data/phi3_transformers.txt, tools/gemma_hf_fixture.sh) on the same
# weights, with mkc's cache in f32 as transformers keeps it: all 48 steps.
if "$mkc" init --preset odd --seed 5 --arch phi3 -o "$tmp/phi3-hf" 2>"$tmp/err" &&
  grep -q '"model_type":.*"phi3"' "$tmp/phi3-hf/config.json" &&
  "$mkc" run -m "$tmp/phi3-hf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/phi3-hf.out" 2>"$tmp/err" &&
  cmp -s "$tmp/phi3-hf.out" "$tmp/phi3.ref"; then
  ok "odd through a phi3 Hugging Face folder (qkv_proj, gate_up_proj): the reference's 40 tokens"
else
  fail "odd through a phi3 Hugging Face folder" "$(cat "$tmp/err")" "$(cat "$tmp/phi3-hf.out")"
fi
expect_sha "init --arch phi3 writes the weights transformers read" "$tmp/phi3-hf/model.safetensors" \
  tests/data/phi3_transformers.txt
MKC_KV_DTYPE=f32 expect_greedy "odd's phi3 folder on the cpu kernel against transformers' Phi3ForCausalLM" \
  tests/data/phi3_transformers.txt "$tmp/phi3-hf"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1])); c['partial_rotary_factor'] = 0.75
json.dump(c, open(sys.argv[1], 'w'))" "$tmp/phi3-hf/config.json"
expect_error "a phi3 folder whose partial_rotary_factor leaves an odd count of dims: refused" \
  "mkc: error: $tmp/phi3-hf/config.json: partial_rotary_factor 0.75: Expected a factor in (0, 1] that leaves an even count of the 12 dims" \
  -- run -m "$tmp/phi3-hf" --prompt-ids 1 -n 1 --backend cpu
expect_error "init --arch phi3 on a preset with interleaved RoPE: refused" \
  "mkc: error: init: --arch phi3: preset tiny has interleaved RoPE pairs, which a phi3 file does not carry (phi3: NEOX RoPE halves, no biases or head norms, no windows, no scaling but longrope)" \
  -- init --preset tiny --seed 5 --arch phi3 -o "$tmp/no.gguf"
expect_error "init --arch phi3 on a preset with YaRN: refused" \
  "mkc: error: init: --arch phi3: preset yarn-tiny has qwen2, which a phi3 file does not carry (phi3: NEOX RoPE halves, no biases or head norms, no windows, no scaling but longrope)" \
  -- init --preset yarn-tiny --seed 5 --arch phi3 -o "$tmp/no.gguf"
# LongRoPE (Phi-3's 128k files) and partial RoPE (Phi-4-mini's): phi3_oracles PRESET ROPE MIN
# writes PRESET as a phi3 GGUF (rope_factors_short.weight and rope_factors_long.weight;
# rope.dimension_count) and a phi3 folder (rope_scaling longrope; partial_rotary_factor), whose
# `mkc info` shows ROPE, and runs it on each side of the 256 positions it was first trained on:
# --ctx 256 takes the short factors, --ctx 512 the long ones. Through the GGUF, the reference's
# tokens; against llama.cpp (MIN steps on the short side) and transformers, theirs
# (tools/longrope_fixtures.sh). The other side's factors change every step's log-probability by
# more than 0.01: the fixtures tell the two apart.
phi3_oracles() {
  local preset=$1 rope=$2 min_short=$3 name=${1%-tiny} all=0 c want side
  local f=$tmp/$name
  if "$mkc" init --preset "$preset" --seed 5 --arch phi3 -o "$f.gguf" 2>"$tmp/err" &&
    "$mkc" info -m "$f.gguf" >"$tmp/info" 2>&1 && grep -qF "$rope" "$tmp/info" &&
    grep -q "phi3.rope.scaling.original_context_length = 256" "$tmp/info"; then
    all=1
    for c in 256 512; do
      "$mkc" run -m "$f.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --ctx $c --backend cpu >"$f.file$c" 2>>"$tmp/err" &&
        "$mkc" run --preset "$preset" --random-weights 5 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --ctx $c \
          --backend ref >"$f.ref$c" 2>>"$tmp/err" && cmp -s "$f.file$c" "$f.ref$c" || all=0
    done
    ! cmp -s "$f.ref256" "$f.ref512" || all=0
  fi
  [ $all = 1 ] && ok "$preset through a phi3 GGUF, --ctx 256 and 512: the reference's 40 tokens (which differ)" ||
    fail "$preset through a phi3 GGUF" "$(cat "$tmp/err" "$tmp/info" | head -40)"
  "$mkc" init --preset "$preset" --seed 5 --arch phi3 --type f32 -o "$f-f32.gguf" 2>/dev/null
  for side in short long; do
    expect_sha "init --preset $preset --arch phi3 --type f32 writes the file llama.cpp read ($side)" \
      "$f-f32.gguf" "tests/data/${name}_llamacpp_$side.txt"
  done
  for side in short:256:$min_short long:512:48; do
    c=${side#*:}
    MKC_KV_DTYPE=f16 GREEDY_FLAGS="--ctx ${c%:*}" expect_greedy \
      "$preset's phi3 file, --ctx ${c%:*}, against llama.cpp's phi3 (the ${side%%:*} factors)" \
      "tests/data/${name}_llamacpp_${side%%:*}.txt" "$f-f32.gguf" "${side##*:}"
  done
  "$mkc" init --preset "$preset" --seed 5 --arch phi3 -o "$f-hf" 2>/dev/null
  for side in short long; do
    expect_sha "init --preset $preset --arch phi3 writes the weights transformers read ($side)" \
      "$f-hf/model.safetensors" "tests/data/${name}_transformers_$side.txt"
  done
  grep -q '"rope_type":.*"longrope"' "$f-hf/config.json" &&
    ! grep -q attention_factor "$f-hf/config.json" &&
    ok "init --preset $preset --arch phi3's config.json: longrope, no attention_factor (derived)" ||
    fail "init --preset $preset --arch phi3's config.json" "$(cat "$f-hf/config.json")"
  for side in short:256 long:512; do
    MKC_KV_DTYPE=f32 GREEDY_FLAGS="--ctx ${side#*:}" expect_greedy \
      "$preset's phi3 folder, --ctx ${side#*:}, against transformers' Phi3ForCausalLM (the ${side%:*} factors)" \
      "tests/data/${name}_transformers_${side%:*}.txt" "$f-hf"
  done
}
# (step 43 of longrope-tiny's short side is a near-tie: llama.cpp's 270 leads its 122 by 0.004)
phi3_oracles longrope-tiny "(neox, longrope scaling: original context 256, attn factor 1.11803, 8 short and long factors)" 42
phi3_oracles partial-tiny "(neox, the first 12 dims, longrope scaling: original context 256, attn factor 1.11803, 6 short and long factors)" 48
# Granite (llama's layers with four multipliers): the GGUF and the folder `mkc init --preset
# granite-tiny` writes give the reference's tokens, and llama.cpp's granite and transformers'
# GraniteForCausalLM theirs (tools/oracle_fixtures.sh). Each multiplier left out of the kernel
# moves every step's log-probability by more than 0.01.
if "$mkc" init --preset granite-tiny --seed 5 -o "$tmp/granite.gguf" 2>"$tmp/err" &&
  "$mkc" init --preset granite-tiny --seed 5 -o "$tmp/granite-hf" 2>>"$tmp/err" &&
  "$mkc" info -m "$tmp/granite.gguf" >"$tmp/info" 2>&1 &&
  grep -q "granite.logit_scale = 8" "$tmp/info" &&
  grep -q "embeddings x 12, attention scale 0.0625, residual branches x 0.22, logits / 8)" "$tmp/info" &&
  "$mkc" run --preset granite-tiny --random-weights 5 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend ref \
    >"$tmp/granite.ref" 2>>"$tmp/err" &&
  "$mkc" run -m "$tmp/granite.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/granite.file" 2>>"$tmp/err" &&
  "$mkc" run -m "$tmp/granite-hf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu >"$tmp/granite.hf" 2>>"$tmp/err" &&
  cmp -s "$tmp/granite.file" "$tmp/granite.ref" && cmp -s "$tmp/granite.hf" "$tmp/granite.ref"; then
  ok "granite-tiny through a granite GGUF and a granite folder: the reference's 40 tokens"
else
  fail "granite-tiny through a granite GGUF and folder" "$(cat "$tmp/err" "$tmp/info" | head -40)"
fi
"$mkc" init --preset granite-tiny --seed 5 --type f32 -o "$tmp/granite-f32.gguf" 2>/dev/null
expect_sha "init --preset granite-tiny --type f32 writes the file llama.cpp read" \
  "$tmp/granite-f32.gguf" tests/data/granite_llamacpp.txt
MKC_KV_DTYPE=f16 expect_greedy "granite-tiny's file on the cpu kernel against llama.cpp's granite" \
  tests/data/granite_llamacpp.txt "$tmp/granite-f32.gguf"
expect_sha "init --preset granite-tiny writes the weights transformers read" \
  "$tmp/granite-hf/model.safetensors" tests/data/granite_transformers.txt
MKC_KV_DTYPE=f32 expect_greedy "granite-tiny's folder on the cpu kernel against transformers' GraniteForCausalLM" \
  tests/data/granite_transformers.txt "$tmp/granite-hf"
# Experts (Qwen3-MoE's, Granite MoE's and Mixtral's sparse MLPs): the GGUF (qwen3moe, granitemoe;
# llama with experts) and the folder (qwen3_moe, mixtral: one tensor an expert; granitemoe: every
# expert's gate and up in one tensor, and their down in another) `mkc init` writes, read back, give on the cpu
# kernel the greedy tokens and log-probabilities llama.cpp and transformers gave on them
# (tools/oracle_fixtures.sh); a file of Q4_0 experts gives the reference's tokens.
moe_oracles() {
  local preset=$1 name=${1%-tiny} summary=$2
  "$mkc" init --preset "$preset" --seed 5 --type f32 -o "$tmp/$name.gguf" 2>/dev/null
  "$mkc" init --preset "$preset" --seed 5 -o "$tmp/$name-hf" 2>/dev/null
  expect_sha "init --preset $preset --type f32 writes the file llama.cpp read" "$tmp/$name.gguf" \
    "tests/data/${name}_llamacpp.txt"
  expect_sha "init --preset $preset writes the weights transformers read" \
    "$tmp/$name-hf/model.safetensors" "tests/data/${name}_transformers.txt"
  "$mkc" info -m "$tmp/$name.gguf" >"$tmp/info" 2>&1
  expect_line "$preset's GGUF: its experts" "$tmp/info" "$summary"
  MKC_KV_DTYPE=f16 expect_greedy "$preset's GGUF on the cpu kernel against llama.cpp" \
    "tests/data/${name}_llamacpp.txt" "$tmp/$name.gguf"
  MKC_KV_DTYPE=f32 expect_greedy "$preset's folder on the cpu kernel against transformers" \
    "tests/data/${name}_transformers.txt" "$tmp/$name-hf"
  "$mkc" init --preset "$preset" --seed 3 --type q4_0 -o "$tmp/$name-q4.gguf" 2>/dev/null
  local q4 ref
  q4=$("$mkc" run -m "$tmp/$name-q4.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 32 --backend cpu 2>"$tmp/err")
  ref=$("$mkc" run -m "$tmp/$name-q4.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 32 --backend ref 2>>"$tmp/err")
  if [ "$q4" = "$ref" ] && [ "$(echo "$ref" | wc -w)" = 32 ]; then
    ok "$preset with Q4_0 experts on the cpu kernel: the reference's 32 tokens"
  else
    fail "$preset with Q4_0 experts on the cpu kernel" "$q4" "ref: $ref" "$(head -5 "$tmp/err")"
  fi
}
# Experts whose weights stay as the softmax gives them (Qwen3MoeConfig's norm_topk_prob false): a
# qwen3_moe folder says so and reads back so; a GGUF cannot, and init refuses it; the cpu kernel
# gives the reference's tokens (a copy of the graph with such a preset)
cp graphs/llama.lua "$tmp/g.lua"
sed -n '/^preset "moe-tiny"/,/^}/p' graphs/llama.lua |
  sed 's/preset "moe-tiny"/preset "nonorm-tiny"/; s/norm_topk = true/norm_topk = false/' >>"$tmp/g.lua"
"$mkc" init "$tmp/g.lua" --preset nonorm-tiny --seed 2 -o "$tmp/nonorm-hf" 2>/dev/null
ref=$("$mkc" run --graph "$tmp/g.lua" --preset nonorm-tiny --random-weights 2 --prompt-ids 3,1,4 -n 24 --backend ref 2>/dev/null)
cpu=$("$mkc" run --graph "$tmp/g.lua" --preset nonorm-tiny --random-weights 2 --prompt-ids 3,1,4 -n 24 --backend cpu 2>/dev/null)
hf=$("$mkc" run -m "$tmp/nonorm-hf" --prompt-ids 3,1,4 -n 24 --backend cpu 2>/dev/null)
if grep -q '"norm_topk_prob":[[:space:]]*false' "$tmp/nonorm-hf/config.json" && [ "$(echo "$ref" | wc -w)" = 24 ] &&
  [ "$cpu" = "$ref" ] && [ "$hf" = "$ref" ]; then
  ok "experts not renormalized: the cpu kernel and a qwen3_moe folder (norm_topk_prob false) give the reference's 24 tokens"
else
  fail "experts not renormalized" "ref $ref" "cpu $cpu" "hf  $hf"
fi
expect_error "init: experts not renormalized into a GGUF: refused" \
  "mkc: error: preset nonorm-tiny: experts' weights left as the softmax gives them (only a qwen3_moe folder can say so: GGUF loaders and Mixtral's and Granite MoE's configs renormalize them), which mkc's model files do not carry" \
  -- init "$tmp/g.lua" --preset nonorm-tiny --seed 2 -o "$tmp/nonorm.gguf"
moe_oracles moe-tiny "graph: graphs/llama.lua, preset llama-moe-tiny (qwen3moe: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 160, vocab 288, context 256, rope theta 1e+06 (neox), rms eps 1e-06, separate head, qk norm, 3 of 8 experts of ffn 48 a token (weights renormalized))"
moe_oracles granitemoe-tiny "graph: graphs/llama.lua, preset llama-granitemoe-tiny (granitemoe: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 96, vocab 284, context 256, rope theta 10000 (interleaved), rms eps 1e-05, separate head, embeddings x 12, attention scale 0.0625, residual branches x 0.22, logits / 8, 2 of 4 experts of ffn 96 a token (weights renormalized))"
moe_oracles mixtral-tiny "graph: graphs/llama.lua, preset llama-mixtral-tiny (llama: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 96, vocab 288, context 256, rope theta 1e+06 (interleaved), rms eps 1e-05, separate head, 2 of 4 experts of ffn 96 a token (weights renormalized))"
# gpt-oss's layer (gptoss-tiny: attention sinks, biases on Q/K/V, the output projection, the router
# and the experts, its clamped glu, local and global layers in turn): the gpt-oss GGUF init writes
# (sinks and experts' biases in F32, as its converter stores them), read back, says so and gives the reference's tokens
# on the cpu kernel; its folder is not written yet; its parts in another architecture's file and
# a gpt-oss file without sliding windows are refused.
"$mkc" init --preset gptoss-tiny --seed 5 -o "$tmp/gptoss.gguf" 2>"$tmp/err"
"$mkc" info -m "$tmp/gptoss.gguf" >"$tmp/info" 2>&1
expect_line "gptoss-tiny's GGUF" "$tmp/info" "graph: graphs/llama.lua, preset llama-gptoss-tiny (gpt-oss: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 64, vocab 288, context 256, rope theta 150000 (neox, yarn scaling: factor 4, original context 64, beta fast/slow 32/1, ext factor 1, attn factor 1), rms eps 1e-05, separate head, qkv bias, 1 local : 1 global layers over a window of 16, 3 of 8 experts of ffn 64 a token (weights renormalized), attention sinks, biases on the output, router and experts, gpt-oss's clamped glu)"
grep -q '^mkc: wrote .*gptoss.gguf (llama-gptoss-tiny, seed 5: 41 tensors (F32 8, BF16 33)' "$tmp/err" \
  && ok "init writes gptoss-tiny's sinks and experts' biases in F32 (8 tensors)" \
  || fail "gptoss-tiny's tensor types" "$(cat "$tmp/err")"
ref=$("$mkc" run --preset gptoss-tiny --random-weights 5 --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend ref 2>/dev/null)
cpu=$("$mkc" run -m "$tmp/gptoss.gguf" --prompt-ids 3,1,4,1,5,9,2,6 -n 40 --backend cpu 2>"$tmp/err")
if [ "$(echo "$ref" | wc -w)" = 40 ] && [ "$cpu" = "$ref" ]; then
  ok "gptoss-tiny through a gpt-oss GGUF on the cpu kernel: the reference's 40 tokens (past the window of 16)"
else
  fail "gptoss-tiny through a gpt-oss GGUF" "ref $ref" "cpu $cpu" "$(head -5 "$tmp/err")"
fi
# llama.cpp's openai-moe on the GGUF init writes with F32 matrices (tools/gemma_llamacpp_fixture.sh):
# its greedy tokens and log-probabilities, sinks, biases, glu, YaRN and the window included
"$mkc" init --preset gptoss-tiny --seed 5 --type f32 -o "$tmp/gptoss-f32.gguf" 2>/dev/null
expect_sha "init --preset gptoss-tiny --type f32 writes the file llama.cpp read" "$tmp/gptoss-f32.gguf" \
  tests/data/gptoss_llamacpp.txt
MKC_KV_DTYPE=f16 expect_greedy "gptoss-tiny's GGUF on the cpu kernel against llama.cpp's openai-moe" \
  tests/data/gptoss_llamacpp.txt "$tmp/gptoss-f32.gguf"
expect_error "init: gpt-oss's layers into a folder" \
  "mkc: error: preset gptoss-tiny: gpt-oss's layers go to a GGUF only (-o FILE.gguf); mkc does not write its Hugging Face folder yet" \
  -- init --preset gptoss-tiny --seed 5 -o "$tmp/gptoss-hf"
sed -n '/^preset "gptoss-tiny"/,/^}/p' graphs/llama.lua |
  sed 's/preset "gptoss-tiny"/preset "nosink-tiny"/; s/attn_sinks = true/attn_sinks = false/' >>"$tmp/g.lua"
sed -n '/^preset "gptoss-tiny"/,/^}/p' graphs/llama.lua |
  sed 's/preset "gptoss-tiny"/preset "nowin-tiny"/; s/sliding_window = {[^}]*}/sliding_window = "none"/' >>"$tmp/g.lua"
expect_error "init: gpt-oss's parts without its sinks" \
  "mkc: error: preset nosink-tiny: a bias on a matrix other than Q, K or V without attention sinks in every layer: mkc's model files carry them only in a gpt-oss file" \
  -- init "$tmp/g.lua" --preset nosink-tiny --seed 5 -o "$tmp/x.gguf"
expect_error "init: a gpt-oss layer without sliding windows" \
  "mkc: error: preset nowin-tiny: a gpt-oss file cannot carry it: layers that are not local and global in turn from layer 0" \
  -- init "$tmp/g.lua" --preset nowin-tiny --seed 5 -o "$tmp/x.gguf"
# Phi-3's first configs named the scaling "su"; a list of another length than the rotated dims / 2
# is refused
python3 -c "
import json, sys
c = json.load(open(sys.argv[1])); r = c['rope_scaling']; r['type'] = 'su'; del r['rope_type']
json.dump(c, open(sys.argv[1], 'w'))" "$tmp/longrope-hf/config.json"
"$mkc" info -m "$tmp/longrope-hf" >"$tmp/info" 2>&1
expect_line "a phi3 folder with rope_scaling type \"su\": longrope" "$tmp/info" \
  "graph: graphs/llama.lua, preset longrope-hf (phi3: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 160, vocab 276, context 1024, rope theta 10000 (neox, longrope scaling: original context 256, attn factor 1.11803, 8 short and long factors), rms eps 1e-05, separate head)"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1])); c['rope_scaling']['long_factor'].pop()
json.dump(c, open(sys.argv[1], 'w'))" "$tmp/longrope-hf/config.json"
expect_error "a phi3 folder with 7 long factors for 8 pairs: refused" \
  "mkc: error: $tmp/longrope-hf/config.json: rope_scaling su \"long_factor\": Expected a list of 8 numbers (rotated dims / 2), Actual a list of 7" \
  -- run -m "$tmp/longrope-hf" --prompt-ids 1 -n 1 --backend cpu
expect_error "init --arch phi3 with the Q/K/V parts in two types: refused" \
  "mkc: error: init: --arch phi3 fuses layer 0's attn_q, attn_k and attn_v into one matrix: give them one type (--tensor-type)" \
  -- init --preset odd --seed 5 --arch phi3 --tensor-type blk.0.attn_k.weight=f16 -o "$tmp/no.gguf"
"$mkc" info -m "$tmp/g3.gguf" >"$tmp/info" 2>&1
expect_line "info on a gemma3 file: the window's pattern" "$tmp/info" "gemma3.attention.sliding_window_pattern = 3"
expect_line "info on a gemma3 file: the local layers' RoPE base" "$tmp/info" "gemma3.rope.freq_base_swa = 10000"
expect_line "info on a gemma3 file: the global layers' RoPE base" "$tmp/info" "gemma3.rope.freq_base = 1e+06"
perl -0777 -pe 's/blk\.0\.post_ffw_norm/blk.0.post_ffx_norm/' "$tmp/g3.gguf" >"$tmp/g3-bad.gguf"
expect_error "a gemma3 file without a post-FFN norm" \
  "mkc: error: $tmp/g3-bad.gguf: gemma3 model without blk.0.post_ffw_norm.weight" \
  -- run -m "$tmp/g3-bad.gguf" --prompt-ids 1 -n 1
# Gemma 3's window pattern as one flag a layer (fuzz/corpus/gguf: 2 local : 1 global), then with
# layer 0 global and the next local: no pattern mkc runs.
seed=fuzz/corpus/gguf/gemma3_window_flags.gguf
"$mkc" info -m "$seed" >"$tmp/info" 2>&1
grep -q '^graph: .*2 local : 1 global layers over a window of 4' "$tmp/info" &&
  ok "a gemma3 window pattern given as per-layer flags" || fail "a gemma3 window pattern given as per-layer flags" "$(cat "$tmp/info")"
perl -0777 -pe 's/(sliding_window_pattern\x09\x00\x00\x00\x07\x00{3}\x03\x00{7})\x01\x01\x00/${1}\x00\x01\x01/' \
  "$seed" >"$tmp/flags.gguf"
expect_error "gemma3 window flags that no pattern gives" \
  "mkc: error: $tmp/flags.gguf: gemma3.attention.sliding_window_pattern: layer 1 is local, unlike the pattern the layers before it set (every layer global; mkc runs L local : 1 global from layer 0)" \
  -- run -m "$tmp/flags.gguf" --prompt-ids 1 -n 1
# ollama's gemma3 files: rope.global/local.freq_base, no epsilon (Gemma's 1e-6), the vision
# tower's tensors beside the text model's: read as the same model as the standard keys give.
"$mkc" info -m fuzz/corpus/gguf/gemma3_window.gguf 2>&1 | grep '^graph:' >"$tmp/std.graph"
"$mkc" info -m fuzz/corpus/gguf/gemma3_ollama.gguf 2>&1 | grep '^graph:' >"$tmp/ollama.graph"
[ -s "$tmp/std.graph" ] && cmp -s "$tmp/std.graph" "$tmp/ollama.graph" &&
  grep -q 'rope theta 1e+06 (neox), rms eps 1e-06, .*window of 4 (rope theta 10000)' "$tmp/ollama.graph" &&
  ok "ollama's gemma3 key names and defaults read as the standard keys" ||
  fail "ollama's gemma3 key names and defaults read as the standard keys" "$(cat "$tmp/std.graph" "$tmp/ollama.graph")"
expect_error "init swa-tiny: a window no file carries outside Gemma" \
  "mkc: error: preset swa-tiny: sliding windows, which a llama file does not carry (gemma2, gemma3, exaone4 and gpt-oss files do)" \
  -- init --preset swa-tiny --seed 1 -o "$tmp/swa.gguf"

finish
