#!/usr/bin/env bash
# mkc imatrix against llama-imatrix: tests/data/imatrix_llamacpp.gguf is llama-imatrix's matrix of
# a 2-layer llama (`mkc init` of tests/graphs/im_tiny_preset.lua, F32, the stand-in vocabulary of
# tests/data/standin_vocab.gguf) over tests/data/imatrix_text.txt in 4 chunks of 64, F32 cache
# (tools/quant_ggml_fixture.sh); mkc's of the same model and text, compared by
# tests/imatrix_compare.py (the same matrices and counts, the sums within 1e-5); its .dat; the
# thread count's and --process-output's effects; the matrix read back by mkc quantize; refusals.
source "$(dirname "$0")/lib.sh"
cat graphs/llama.lua tests/graphs/im_tiny_preset.lua >"$tmp/im.lua"
text=tests/data/imatrix_text.txt
"$mkc" init "$tmp/im.lua" --preset im-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
  -o "$tmp/m.gguf" >/dev/null 2>&1
args=(-m "$tmp/m.gguf" -f "$text" -c 64 --chunks 4 --kv-dtype f32)
if "$mkc" imatrix "${args[@]}" -t 2 -o "$tmp/im.gguf" >"$tmp/out" 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/im.gguf" tests/data/imatrix_llamacpp.gguf)
  [[ $got == ok* ]] && ok "llama-imatrix's matrix: $got" || fail "against llama-imatrix" "$got"
  grep -q '^mkc: imatrix: 4 of 4 chunks' "$tmp/err" && grep -q '^mkc: imatrix: 14 matrices over 256 tokens written to' "$tmp/err" \
    && ok "progress a chunk, and what was written" || fail "progress" "$(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] && ok "nothing on stdout" || fail "stdout" "$(head -n 3 "$tmp/out")"
else
  fail "mkc imatrix" "$(tail -n 3 "$tmp/err")"
fi
# A phi3 file: Q, K and V in one matrix (attn_qkv), gate and up in another (ffn_up), each one
# entry under the file's name, as llama-imatrix's (and so what quantize looks up)
cat graphs/llama.lua tests/graphs/im_neox_preset.lua >"$tmp/imn.lua"
"$mkc" init "$tmp/imn.lua" --preset im-neox --seed 2 --type f32 --arch phi3 \
  --vocab tests/data/standin_vocab.gguf -o "$tmp/phi3.gguf" >/dev/null 2>&1
if "$mkc" imatrix -m "$tmp/phi3.gguf" -f "$text" -c 64 --chunks 2 --kv-dtype f32 -o "$tmp/phi3-im.gguf" \
  >/dev/null 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/phi3-im.gguf" tests/data/imatrix_phi3_llamacpp.gguf)
  [[ $got == ok* ]] && ok "phi3's fused matrices: llama-imatrix's entries and sums: $got" \
    || fail "phi3 against llama-imatrix" "$got"
  "$mkc" quantize --imatrix "$tmp/phi3-im.gguf" "$tmp/phi3.gguf" "$tmp/phi3-q.gguf" Q4_0 >/dev/null 2>"$tmp/err"
  grep -q "phi3-im.gguf: 8 importance matrix entries (8 kept)" "$tmp/err" && ! grep -q "blk.*: no importance" "$tmp/err" \
    && ok "phi3: quantize finds an entry for every layer matrix" || fail "phi3 quantize" "$(head -n 8 "$tmp/err")"
else
  fail "mkc imatrix on a phi3 file" "$(tail -n 3 "$tmp/err")"
fi
if "$mkc" imatrix "${args[@]}" -t 1 --output-format dat -o "$tmp/im.dat" >/dev/null 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/im.gguf" tests/data/imatrix_llamacpp.gguf --dat "$tmp/im.dat")
  [[ $got == ok* ]] && ok "--output-format dat, one thread: the same means, times the calls" \
    || fail "--output-format dat" "$got"
else
  fail "mkc imatrix --output-format dat" "$(tail -n 3 "$tmp/err")"
fi
"$mkc" imatrix "${args[@]}" --process-output -o "$tmp/out.gguf" >/dev/null 2>&1
python3 tests/gguf_dump.py "$tmp/out.gguf" >"$tmp/with"
python3 tests/gguf_dump.py "$tmp/im.gguf" >"$tmp/without"
grep -q '^tensor output.weight.in_sum2 0 64,1 ' "$tmp/with" && ! grep -q '^tensor output' "$tmp/without" \
  && ok "--process-output: output.weight too (64 columns); without it, not" \
  || fail "--process-output" "$(grep output "$tmp/with")"
"$mkc" quantize --imatrix "$tmp/im.dat" "$tmp/m.gguf" "$tmp/q.gguf" Q4_0 >/dev/null 2>"$tmp/err" \
  && grep -q "^mkc: quantize: $tmp/im.dat: 14 importance matrix entries (14 kept) from $text, 4 chunks$" "$tmp/err" \
  && ok "mkc quantize reads it" || fail "quantize --imatrix" "$(head -n 3 "$tmp/err")"

expect_error "no text" "mkc: error: imatrix: -f FILE (the text) is required" -- imatrix -m "$tmp/m.gguf"
printf 'Too short for two chunks.' >"$tmp/short.txt" # 37 tokens: BOS, a leading space, the bytes (a space 3: ▁)
expect_error "a text too short" \
  "mkc: error: imatrix: the text is 37 tokens; a context of 64 needs 128 at least (two chunks; a smaller -c)" \
  -- imatrix -m "$tmp/m.gguf" -f "$tmp/short.txt" -c 64
expect_error "--output-format" "mkc: error: imatrix: --output-format: expected gguf or dat, got 'txt'" \
  -- imatrix -m "$tmp/m.gguf" -f "$text" --output-format txt
"$mkc" init --preset tiny --seed 1 -o "$tmp/novocab.gguf" >/dev/null 2>&1
expect_error "a model without a tokenizer" \
  "mkc: error: imatrix: $tmp/novocab.gguf has no tokenizer to read the text with" \
  -- imatrix -m "$tmp/novocab.gguf" -f "$text" -c 64
[ ! -e imatrix.gguf ] && ok "no refusal wrote imatrix.gguf" || fail "a refusal wrote imatrix.gguf"
"$mkc" imatrix --help >"$tmp/help" && grep -q '^usage: mkc imatrix' "$tmp/help" && ok "--help" \
  || fail "--help"
finish
