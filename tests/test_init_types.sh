#!/usr/bin/env bash
# mkc init --type / --tensor-type: the GGUF holds each tensor in the type
# asked for, or in the fallback when its columns are not whole blocks (one
# line each on stderr); the tensor data has the size the formats give; the
# files run, kernel and reference agreeing; bad types and names, and types a
# Hugging Face folder cannot hold, are refused.
source "$(dirname "$0")/lib.sh"

# expect_line NAME FILE LINE: FILE has exactly that line.
expect_line() {
  grep -qxF -- "$3" "$2" && ok "$1: $3" || fail "$1: $3" "$(cat "$2")"
}

# expect_count NAME FILE PATTERN N: N lines of FILE match PATTERN (grep -E).
expect_count() {
  local n
  n=$(grep -cE -- "$3" "$2")
  [ "$n" -eq "$4" ] && ok "$1: $4 lines" || fail "$1: $4 lines" "got $n" "$(cat "$2")"
}

# init_info NAME ARGS...: runs mkc init ARGS (stderr in $tmp/err), then info -m on
# the file after -o (stdout in $tmp/info).
init_info() {
  local name=$1
  shift
  if "$mkc" init "$@" 2>"$tmp/err"; then
    local out=${*: -1}
    "$mkc" info -m "$out" >"$tmp/info" 2>>"$tmp/err" || fail "$name: info -m" "$(cat "$tmp/err")"
  else
    fail "$name: init" "$(cat "$tmp/err")"
    : >"$tmp/info"
  fi
}

# bf16 is the default: --type bf16 (any case) writes the same bytes.
"$mkc" init --preset tiny --seed 7 -o "$tmp/tiny.gguf" 2>/dev/null
"$mkc" init --preset tiny --seed 7 --type BF16 -o "$tmp/tiny-bf16.gguf" 2>/dev/null
cmp -s "$tmp/tiny.gguf" "$tmp/tiny-bf16.gguf" && ok "--type BF16 = no --type (same bytes)" \
  || fail "--type BF16 = no --type (same bytes)"

# tiny, Q8_0: 15 matrices (dim 64, ffn 192: whole 32s) and 5 norm vectors of 64.
# Matrix elements: token_embd 256*64 + 2 layers * (q 64*64 + k, v 2 * 32*64 + o 64*64
# + gate, up, down 3 * 192*64) = 114688, 34 bytes per 32: 121856; norms 5*64*2 = 640.
init_info "tiny q8_0" --preset tiny --seed 7 --type q8_0 -o "$tmp/tiny-q8_0.gguf"
expect_line "tiny q8_0" "$tmp/info" "tensors: 20 (Q8_0 15, BF16 5)"
grep -q "^tensor data: 122496 bytes " "$tmp/info" && ok "tiny q8_0: tensor data 121856 + 640 bytes" \
  || fail "tiny q8_0: tensor data 121856 + 640 bytes" "$(cat "$tmp/info")"
grep -qE "^mkc: wrote $tmp/tiny-q8_0.gguf \(llama-tiny, seed 7: 20 tensors \(Q8_0 15, BF16 5\), [0-9]+ bytes\)$" \
  "$tmp/err" && ok "tiny q8_0: init says what it wrote" || fail "tiny q8_0: init says what it wrote" "$(cat "$tmp/err")"
expect_count "tiny q8_0: no fallback" "$tmp/err" "needs columns" 0

# cpu_is_ref NAME FILE PROMPT N: the kernel (cpu) and the reference agree on the file's weights.
cpu_is_ref() {
  if "$mkc" run -m "$2" --prompt-ids "$3" -n "$4" --backend cpu >"$tmp/a" 2>"$tmp/err" \
    && "$mkc" run -m "$2" --prompt-ids "$3" -n "$4" --backend ref >"$tmp/b" 2>>"$tmp/err" \
    && [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then
    ok "$1: run -m, cpu = ref"
  else
    fail "$1: run -m, cpu = ref" "$(cat "$tmp/a" "$tmp/b" "$tmp/err")"
  fi
}
cpu_is_ref "tiny q8_0" "$tmp/tiny-q8_0.gguf" 3,1,4,1,5 12
# F32 holds the bf16 values exactly: the same model as the BF16 file.
"$mkc" init --preset tiny --seed 7 --type f32 -o "$tmp/tiny-f32.gguf" 2>/dev/null
"$mkc" run -m "$tmp/tiny-f32.gguf" --prompt-ids 3,1,4,1,5 -n 12 --backend ref >"$tmp/a" 2>"$tmp/err"
"$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 3,1,4,1,5 -n 12 --backend ref >"$tmp/b" 2>>"$tmp/err"
[ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b" && ok "tiny f32: runs as the BF16 file" \
  || fail "tiny f32: runs as the BF16 file" "$(cat "$tmp/a" "$tmp/b" "$tmp/err")"

# tiny: no matrix has whole 256s of columns, all have whole 32s: the K types fall back as
# llama.cpp's quantize does, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q3_K to IQ4_NL.
for kf in Q4_K:Q5_0 Q5_K:Q5_1 Q6_K:Q8_0 Q3_K:IQ4_NL; do
  k=${kf%:*} f=${kf#*:}
  init_info "tiny $k" --preset tiny --seed 7 --type "$k" -o "$tmp/tiny-$k.gguf"
  expect_line "tiny $k" "$tmp/info" "tensors: 20 ($f 15, BF16 5)"
  expect_line "tiny $k" "$tmp/err" "mkc: init: blk.0.ffn_down.weight: $k needs columns in multiples of 256; stored as $f"
  expect_count "tiny $k: one fallback line per matrix" "$tmp/err" "^mkc: init: .*: $k needs columns in multiples of 256; stored as $f$" 15
done
# The fallbacks' blocks run on the kernel as the reference reads them.
for k in Q4_K Q5_K Q3_K; do cpu_is_ref "tiny $k (its fallback's blocks)" "$tmp/tiny-$k.gguf" 3,1,4,1,5 12; done

# odd (dim 72, ffn 172): no matrix has whole 32s of columns: BF16, from either kind of type.
init_info "odd q4_0" --preset odd --seed 3 --type q4_0 -o "$tmp/odd-q4_0.gguf"
expect_line "odd q4_0" "$tmp/info" "tensors: 21 (BF16 21)"
expect_line "odd q4_0" "$tmp/err" "mkc: init: blk.1.ffn_down.weight: Q4_0 needs columns in multiples of 32; stored as BF16"
expect_count "odd q4_0: one fallback line per matrix" "$tmp/err" "^mkc: init: .*: Q4_0 needs columns" 16
init_info "odd q6_k" --preset odd --seed 3 --type q6_k -o "$tmp/odd-q6_k.gguf"
expect_line "odd q6_k" "$tmp/info" "tensors: 21 (BF16 21)"
expect_line "odd q6_k" "$tmp/err" "mkc: init: output.weight: Q6_K needs columns in multiples of 256; stored as BF16"

# A graph with a dim of 256: every type stored as asked, one fallback (ffn_down's 288 columns).
cat graphs/llama.lua tests/data/test_presets.lua >"$tmp/wide.lua"
init_info "wide" "$tmp/wide.lua" --preset wide --seed 1 --type q4_k \
  --tensor-type output.weight=q8_0 --tensor-type output.weight=q6_k \
  --tensor-type blk.0.attn_v.weight=Q4_1 --tensor-type blk.0.attn_k.weight=q5_k \
  --tensor-type blk.0.attn_q.weight=q3_k --tensor-type blk.0.ffn_gate.weight=q2_k \
  --tensor-type blk.0.attn_norm.weight=f32 -o "$tmp/wide.gguf"
expect_line "wide" "$tmp/info" "tensors: 12 (F32 1, Q4_1 1, Q5_0 1, Q2_K 1, Q3_K 1, Q4_K 3, Q5_K 1, Q6_K 1, BF16 2)"
# Q4_K: token_embd 64 + o 256 + up 288 rows of 144 bytes; Q3_K: q 256 rows of 110; Q2_K: gate
# 288 rows of 84; Q5_K: k 128 rows of 176; Q4_1: v 128 rows * 8 blocks * 20; Q5_0: down 256
# rows * 9 * 22; Q6_K: output 64 rows * 210; F32 256 * 4; BF16 2 * 256 * 2.
want=$(((64 + 256 + 288) * 144 + 256 * 110 + 288 * 84 + 128 * 176 + 128 * 8 * 20 + 256 * 9 * 22 \
  + 64 * 210 + 1024 + 1024))
grep -q "^tensor data: $want bytes " "$tmp/info" && ok "wide: tensor data $want bytes" \
  || fail "wide: tensor data $want bytes" "$(cat "$tmp/info")"
expect_count "wide: one fallback" "$tmp/err" "needs columns" 1
expect_line "wide" "$tmp/err" "mkc: init: blk.0.ffn_down.weight: Q4_K needs columns in multiples of 256; stored as Q5_0"
cpu_is_ref "wide" "$tmp/wide.gguf" 1,2,3 8
# The IQ1/IQ2/IQ3 grid types on the same graph: each stored as asked, ffn_down's 288 columns as IQ4_NL
# (llama.cpp's fallback for them), and the file runs on the kernel as the reference reads it.
init_info "wide iq" "$tmp/wide.lua" --preset wide --seed 1 --type iq2_xxs \
  --tensor-type blk.0.attn_k.weight=iq2_xs --tensor-type blk.0.attn_v.weight=iq2_s \
  --tensor-type blk.0.attn_output.weight=iq3_xxs --tensor-type output.weight=IQ3_S \
  --tensor-type blk.0.ffn_gate.weight=iq1_s --tensor-type blk.0.attn_q.weight=iq1_m -o "$tmp/wide-iq.gguf"
expect_line "wide iq" "$tmp/info" "tensors: 12 (IQ2_XXS 2, IQ2_XS 1, IQ3_XXS 1, IQ1_S 1, IQ4_NL 1, IQ3_S 1, IQ2_S 1, IQ1_M 1, BF16 3)"
expect_line "wide iq" "$tmp/err" "mkc: init: blk.0.ffn_down.weight: IQ2_XXS needs columns in multiples of 256; stored as IQ4_NL"
cpu_is_ref "wide iq" "$tmp/wide-iq.gguf" 1,2,3 8
# NVFP4 and the ternary, 1- and 2-bit types: ffn_down's 288 columns in Q4_0 for TQ1_0 (llama.cpp's
# fallback), the others as asked
init_info "wide low" "$tmp/wide.lua" --preset wide --seed 1 --type tq1_0 \
  --tensor-type blk.0.attn_k.weight=tq2_0 --tensor-type blk.0.attn_v.weight=q1_0 \
  --tensor-type blk.0.attn_output.weight=q2_0 --tensor-type output.weight=NVFP4 -o "$tmp/wide-low.gguf"
expect_line "wide low" "$tmp/info" "tensors: 12 (Q4_0 1, BF16 3, TQ1_0 4, TQ2_0 1, NVFP4 1, Q1_0 1, Q2_0 1)"
expect_line "wide low" "$tmp/err" "mkc: init: blk.0.ffn_down.weight: TQ1_0 needs columns in multiples of 256; stored as Q4_0"
cpu_is_ref "wide low" "$tmp/wide-low.gguf" 1,2,3 8

# A Hugging Face folder takes bf16 only.
"$mkc" init --preset tiny --seed 7 --type bf16 --tensor-type token_embd.weight=BF16 -o "$tmp/hf" 2>"$tmp/err" \
  && [ -s "$tmp/hf/model.safetensors" ] && ok "HF folder with --type bf16" \
  || fail "HF folder with --type bf16" "$(cat "$tmp/err")"

choices="bf16, f16, f32, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq2_xxs, iq2_xs, "
choices+="iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m, iq4_nl, iq4_xs, mxfp4, nvfp4, tq1_0, tq2_0, q1_0, q2_0"
expect_error "--type q8_k" "mkc: error: --type: expected one of $choices, got 'q8_k'" \
  -- init --preset tiny --seed 1 --type q8_k -o "$tmp/x.gguf"
expect_error "--type without a value" "mkc: error: --type needs a value" -- init --preset tiny --seed 1 --type
expect_error "--tensor-type without =" "mkc: error: --tensor-type: expected NAME=TYPE, got 'token_embd.weight'" \
  -- init --preset tiny --seed 1 --tensor-type token_embd.weight -o "$tmp/x.gguf"
expect_error "--tensor-type without a name" "mkc: error: --tensor-type: expected NAME=TYPE, got '=q8_0'" \
  -- init --preset tiny --seed 1 --tensor-type =q8_0 -o "$tmp/x.gguf"
expect_error "--tensor-type with a bad type" \
  "mkc: error: --tensor-type: expected a type among $choices after '=', got 'token_embd.weight=q9'" \
  -- init --preset tiny --seed 1 --tensor-type token_embd.weight=q9 -o "$tmp/x.gguf"
expect_error "--tensor-type with an unknown name" \
  "mkc: error: init: --tensor-type: preset tiny has no tensor 'output.weight'" \
  -- init --preset tiny --seed 1 --tensor-type output.weight=q8_0 -o "$tmp/x.gguf"
[ ! -e "$tmp/x.gguf" ] && ok "nothing written after an error" || fail "nothing written after an error"
expect_error "--type q8_0 to an HF folder" \
  "mkc: error: --type q8_0: a Hugging Face folder is written in BF16 only (-o FILE.gguf takes other types)" \
  -- init --preset tiny --seed 1 --type q8_0 -o "$tmp/hf-x"
expect_error "--tensor-type to an HF folder" \
  "mkc: error: --tensor-type token_embd.weight=f16: a Hugging Face folder is written in BF16 only (-o FILE.gguf takes other types)" \
  -- init --preset tiny --seed 1 --tensor-type token_embd.weight=f16 -o "$tmp/hf-x"

"$mkc" init --help >"$tmp/out" 2>&1 && grep -q -- "--type T" "$tmp/out" && grep -q -- "--tensor-type NAME=T" "$tmp/out" \
  && ok "init --help names --type and --tensor-type" || fail "init --help names --type and --tensor-type" "$(cat "$tmp/out")"

# Quantizing a real-size model says how far it is (past 2^26 values); a tiny one says nothing.
"$mkc" init --preset smollm2-135m --seed 1 --type q8_0 -o "$tmp/sm.gguf" 2>"$tmp/err"
lines=$(grep -c '^mkc: init: quantized [0-9]*% of 134M values ([0-9]* s)$' "$tmp/err")
[ "$lines" -ge 5 ] && tail -n 2 "$tmp/err" | head -n 1 | grep -q '^mkc: init: quantized 100% of 134M' \
  && ok "init of SmolLM2-135M in Q8_0: $lines progress lines, the last at 100%" \
  || fail "init of SmolLM2-135M shows its progress" "$(cat "$tmp/err")"
"$mkc" init --preset tiny --seed 7 --type q8_0 -o "$tmp/t.gguf" 2>"$tmp/err"
grep -q 'quantized' "$tmp/err" && fail "init of tiny: no progress lines" "$(cat "$tmp/err")" \
  || ok "init of tiny: no progress lines"

finish
