#!/usr/bin/env bash
# mkc imatrix against llama-imatrix: tests/data/imatrix_llamacpp.gguf is llama-imatrix's matrix of
# a 2-layer llama (`mkc init` of tests/graphs/im_tiny_preset.lua, F32, the stand-in vocabulary of
# tests/data/standin_vocab.gguf) over tests/data/imatrix_text.txt in 4 chunks of 64, F32 cache
# (tools/quant_ggml_fixture.sh); mkc's of the same model and text, compared by
# tests/imatrix_compare.py (the same matrices and counts, the sums within 1e-5): from the imatrix
# kernel on the cpu backend (its matmul stages sum their inputs' squares), in prompt chunks (tiled)
# and in steps of one input, and from the reference executor (--backend ref); its .dat; the
# thread count's and --process-output's effects; the kernel against the reference on SmolLM2; the
# matrix read back by mkc quantize; --show-statistics against llama-imatrix's report; refusals.
# The perplexity estimates it prints on the way
# (llama-imatrix's): mkc perplexity's lines for the same chunks, and within 1e-4 of
# tests/data/imatrix_ppl_llamacpp.txt, what llama-imatrix printed making the fixture.
source "$(dirname "$0")/lib.sh"
cat graphs/llama.lua tests/graphs/im_tiny_preset.lua >"$tmp/im.lua"
text=tests/data/imatrix_text.txt
"$mkc" init "$tmp/im.lua" --preset im-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
  -o "$tmp/m.gguf" >/dev/null 2>&1
args=(-m "$tmp/m.gguf" -f "$text" -c 64 --chunks 4 --kv-dtype f32)
if "$mkc" imatrix "${args[@]}" --backend cpu -o "$tmp/im.gguf" >"$tmp/out" 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/im.gguf" tests/data/imatrix_llamacpp.gguf)
  [[ $got == ok* ]] && ok "the kernel, prompt chunks of 64: llama-imatrix's matrix: $got" \
    || fail "the kernel against llama-imatrix" "$got"
  grep -q '^mkc: imatrix: 4 chunks of 64, on the cpu backend, 32 a step to position 32, then 5 a step (the last 31 of each scored)$' "$tmp/err" \
    && grep -q '^mkc: imatrix: 4 of 4 chunks' "$tmp/err" && grep -q '^mkc: imatrix: 14 matrices over 256 tokens written to' "$tmp/err" \
    && ok "the backend, progress a chunk, and what was written" || fail "progress" "$(cat "$tmp/err")"
  # the estimates: perplexity's (each chunk's second half, its last token's logits unused), and
  # llama-imatrix's own
  "$mkc" perplexity "${args[@]}" --backend cpu --draft-max 4 >"$tmp/ppl" 2>/dev/null
  cmp -s "$tmp/out" "$tmp/ppl" && grep -q '^\[1\][0-9.]*,\[2\][0-9.]*,\[3\][0-9.]*,\[4\][0-9.]*,$' "$tmp/out" \
    && ok "stdout: mkc perplexity's running and final estimates, line for line ($(head -n 1 "$tmp/out"))" \
    || fail "the estimates against mkc perplexity's" "$(cat "$tmp/out")" "$(cat "$tmp/ppl")"
  got=$(python3 tests/ppl_compare.py "$tmp/out" tests/data/imatrix_ppl_llamacpp.txt)
  [[ $got == ok* ]] && ok "the estimates are llama-imatrix's within 1e-4: ${got%% \[*}" || fail "llama-imatrix's estimates" "$got"
else
  fail "mkc imatrix" "$(tail -n 3 "$tmp/err")"
fi
# steps of one input: the decode stages' sums (a kernel with no tiled path); --no-ppl: no
# estimate, no steps of 5 for it
if "$mkc" imatrix "${args[@]}" --backend cpu -ub 1 --no-ppl -o "$tmp/im1.gguf" >"$tmp/out" 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/im1.gguf" tests/data/imatrix_llamacpp.gguf)
  [[ $got == ok* ]] && grep -q ', 1 a step$' "$tmp/err" && [ ! -s "$tmp/out" ] \
    && ok "the kernel, steps of one input, --no-ppl: llama-imatrix's matrix: $got; nothing on stdout" \
    || fail "the kernel, -ub 1 --no-ppl, against llama-imatrix" "$got" "$(head -n 2 "$tmp/err")" "$(head -c 300 "$tmp/out")"
else
  fail "mkc imatrix -ub 1" "$(tail -n 3 "$tmp/err")"
fi
if "$mkc" imatrix "${args[@]}" --backend ref -t 2 -o "$tmp/imr.gguf" >"$tmp/out" 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/imr.gguf" tests/data/imatrix_llamacpp.gguf)
  [[ $got == ok* ]] && grep -q '^mkc: imatrix: 4 chunks of 64, on the reference executor, 2 threads$' "$tmp/err" \
    && ok "the reference executor, 2 threads: llama-imatrix's matrix: $got" \
    || fail "the reference against llama-imatrix" "$got" "$(head -n 3 "$tmp/err")"
  # its two threads end chunks out of order; the estimates are printed in order, the kernel's
  # within 1e-6 (double against float)
  got=$(python3 tests/ppl_compare.py "$tmp/out" "$tmp/ppl" 1e-6)
  [[ $got == ok* ]] && ok "the reference's estimates, in chunk order: the kernel's within 1e-6 (${got:3:7})" \
    || fail "the reference's estimates" "$got"
else
  fail "mkc imatrix --backend ref" "$(tail -n 3 "$tmp/err")"
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
# Experts: moe-tiny (8 experts, 3 an input), each _exps entry an expert a slice with its own count
# (the inputs that chose it), the router's entry every input's: llama-imatrix's, on the kernel and
# on the reference; its .dat; and quantize finds every matrix's entry
"$mkc" init --preset moe-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf -o "$tmp/moe.gguf" \
  >/dev/null 2>&1
margs=(-m "$tmp/moe.gguf" -f "$text" -c 64 --chunks 4 --kv-dtype f32)
for b in cpu ref; do
  if "$mkc" imatrix "${margs[@]}" --backend $b -o "$tmp/moe-$b.gguf" >/dev/null 2>"$tmp/err"; then
    got=$(python3 tests/imatrix_compare.py "$tmp/moe-$b.gguf" tests/data/imatrix_moe_llamacpp.gguf)
    [[ $got == ok* ]] && ok "experts, --backend $b: llama-imatrix's entries, counts and sums: $got" \
      || fail "experts on $b against llama-imatrix" "$got"
  else
    fail "mkc imatrix on moe-tiny, --backend $b" "$(tail -n 3 "$tmp/err")"
  fi
done
python3 tests/gguf_dump.py "$tmp/moe-cpu.gguf" >"$tmp/moe-dump"
grep -q '^tensor blk.1.ffn_down_exps.weight.in_sum2 0 48,8 ' "$tmp/moe-dump" \
  && grep -q '^tensor blk.1.ffn_gate_exps.weight.counts 0 1,8 ' "$tmp/moe-dump" \
  && grep -q '^tensor blk.1.ffn_gate_inp.weight.counts 0 1 ' "$tmp/moe-dump" \
  && cmp -s <(python3 tests/gguf_dump.py tests/data/imatrix_moe_llamacpp.gguf | awk '/^tensor/ {print $2, $4}' | sort) \
    <(awk '/^tensor/ {print $2, $4}' "$tmp/moe-dump" | sort) \
  && ok "experts: in_sum2 [8][48] for down, counts [8][1]; the router one matrix; every shape llama-imatrix's" \
  || fail "experts' shapes" "$(grep 'blk.1.ffn' "$tmp/moe-dump")"
if "$mkc" imatrix "${margs[@]}" --backend ref --output-format dat -o "$tmp/moe.dat" >/dev/null 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/moe-ref.gguf" tests/data/imatrix_moe_llamacpp.gguf --dat "$tmp/moe.dat")
  [[ $got == ok* ]] && ok "experts: --output-format dat, each expert's means times the calls" \
    || fail "experts' .dat" "$got"
else
  fail "experts' .dat" "$(tail -n 3 "$tmp/err")"
fi
# (down's 48 columns are no whole Q4_0 block: kept in f16)
"$mkc" quantize --imatrix "$tmp/moe-cpu.gguf" --tensor-type 'ffn_down_exps=f16' "$tmp/moe.gguf" "$tmp/moe-q.gguf" \
  Q4_0 >/dev/null 2>"$tmp/err"
grep -q "moe-cpu.gguf: 16 importance matrix entries (16 kept)" "$tmp/err" && ! grep -q "blk.*: no importance" "$tmp/err" \
  && ok "experts: quantize finds an entry for every layer matrix" || fail "experts: quantize" "$(head -n 8 "$tmp/err")"
if "$mkc" imatrix "${args[@]}" --backend ref -t 1 --output-format dat -o "$tmp/im.dat" >/dev/null 2>"$tmp/err"; then
  got=$(python3 tests/imatrix_compare.py "$tmp/imr.gguf" tests/data/imatrix_llamacpp.gguf --dat "$tmp/im.dat")
  [[ $got == ok* ]] && ok "--output-format dat, the reference on one thread: the same means, times the calls" \
    || fail "--output-format dat" "$got"
else
  fail "mkc imatrix --output-format dat" "$(tail -n 3 "$tmp/err")"
fi
"$mkc" imatrix "${args[@]}" --backend cpu --process-output -o "$tmp/out.gguf" >/dev/null 2>&1
"$mkc" imatrix "${args[@]}" --backend ref --process-output -o "$tmp/outr.gguf" >/dev/null 2>&1
python3 tests/gguf_dump.py "$tmp/out.gguf" >"$tmp/with"
python3 tests/gguf_dump.py "$tmp/im.gguf" >"$tmp/without"
got=$(python3 tests/imatrix_compare.py "$tmp/out.gguf" "$tmp/outr.gguf")
grep -q '^tensor output.weight.in_sum2 0 64 ' "$tmp/with" && ! grep -q '^tensor output' "$tmp/without" \
  && [[ $got == ok* ]] && ok "--process-output: output.weight too (64 columns), the kernel's the reference's: $got; without it, not" \
  || fail "--process-output" "$(grep output "$tmp/with")" "$got"
# A real model, quantized (Q4_1 blocks in the kernel, the format's dequantizer in the reference),
# 30 layers: the kernel's sums against the reference's. An F32 cache, so that only float against
# double arithmetic differs (with bf16 K and V a value near a rounding boundary rounds apart: 3 %
# off in attn_output's sums of late layers). 2e-4: 3 times the largest seen (6e-5, blk.18's
# attn_output; half the sums within 5e-6).
smol=${MKC_TEST_DATA:+$MKC_TEST_DATA/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ -n "$smol" ] && [ -f "$smol" ]; then
  sargs=(-m "$smol" -f "$text" -c 32 --chunks 2 --kv-dtype f32)
  if "$mkc" imatrix "${sargs[@]}" --backend cpu -o "$tmp/sk.gguf" >/dev/null 2>"$tmp/err" \
    && "$mkc" imatrix "${sargs[@]}" --backend ref -o "$tmp/sr.gguf" >/dev/null 2>>"$tmp/err"; then
    got=$(python3 tests/imatrix_compare.py "$tmp/sk.gguf" "$tmp/sr.gguf" --tol 2e-4)
    [[ $got == ok* ]] && ok "SmolLM2-135M Q4_1: the kernel's sums are the reference's: $got" \
      || fail "SmolLM2: the kernel against the reference" "$got"
  else
    fail "mkc imatrix on SmolLM2" "$(tail -n 3 "$tmp/err")"
  fi
else
  skip "SmolLM2: the kernel against the reference (no test data: tests/data/fetch.sh)"
fi
# the kernel mkc imatrix runs, as gen writes it: each matmul stage's sums first, in the layer loop;
# no other kernel splices the template
"$mkc" gen graphs/llama.lua --preset tiny --imatrix-kernel -o "$tmp/im.cu" 2>/dev/null
"$mkc" gen graphs/llama.lua --preset tiny -o "$tmp/plain.cu" 2>/dev/null
[ "$(grep -c '^  mkc_imatrix_add(scratch + [0-9]*, [0-9]*, [0-9]*, .*scratch + lay_i\[' "$tmp/im.cu")" -eq 4 ] \
  && [ "$(grep -c '^  mkc_imatrix_add(' "$tmp/im.cu")" -eq 5 ] && ! grep -q imatrix "$tmp/plain.cu" \
  && ok "gen --imatrix-kernel: 4 stages of the layer loop and the LM head sum their inputs; a plain kernel has none" \
  || fail "gen --imatrix-kernel" "$(grep -n 'imatrix' "$tmp/im.cu" | head -n 8)"
"$mkc" quantize --imatrix "$tmp/im.dat" "$tmp/m.gguf" "$tmp/q.gguf" Q4_0 >/dev/null 2>"$tmp/err" \
  && grep -q "^mkc: quantize: $tmp/im.dat: 14 importance matrix entries (14 kept) from $text, 4 chunks$" "$tmp/err" \
  && ok "mkc quantize reads it" || fail "quantize --imatrix" "$(head -n 3 "$tmp/err")"

# --in-file: llama-imatrix's own combination of its GGUF and .dat of blocks-tiny
# (tests/data/imatrix_combined_llamacpp.*), byte for byte, with no model read
for f in gguf dat; do
  "$mkc" imatrix --in-file tests/data/imatrix_blocks_tiny.gguf --in-file tests/data/imatrix_blocks_tiny.dat -c 64 \
    --output-format $f -o "$tmp/comb.$f" >/dev/null 2>"$tmp/err"
  cmp -s "$tmp/comb.$f" tests/data/imatrix_combined_llamacpp.$f \
    && grep -q "^mkc: imatrix: 14 matrices of 2 files written to $tmp/comb.$f$" "$tmp/err" \
    && ok "--in-file twice, no -f ($f): llama-imatrix's combination, byte for byte" \
    || fail "--in-file ($f)" "$(cat "$tmp/err")"
done
# --show-statistics: llama-imatrix's report on three of its files (tests/data/imatrix_stats_llamacpp.txt),
# byte for byte: a GGUF, moe-tiny's (an expert never chosen in layer 0: its columns left out) and
# a .dat; and on mkc's own matrix
for f in imatrix_llamacpp.gguf imatrix_moe_llamacpp.gguf imatrix_blocks_tiny.dat; do
  "$mkc" imatrix --show-statistics --in-file tests/data/$f 2>>"$tmp/err"
done >"$tmp/stats"
cmp -s "$tmp/stats" tests/data/imatrix_stats_llamacpp.txt \
  && ok "--show-statistics: llama-imatrix's three reports, byte for byte" \
  || fail "--show-statistics against llama-imatrix's" "$(diff "$tmp/stats" tests/data/imatrix_stats_llamacpp.txt | head -n 8)"
"$mkc" imatrix --show-statistics --in-file "$tmp/im.gguf" -m "$tmp/m.gguf" >"$tmp/stats" 2>"$tmp/err"
grep -q "^Computing statistics for $tmp/im.gguf (14 tensors)$" "$tmp/stats" \
  && grep -q "^mkc: imatrix: --show-statistics: $tmp/m.gguf is not read$" "$tmp/err" \
  && [ "$(grep -c '^    [01]	' "$tmp/stats")" -eq 16 ] \
  && ok "--show-statistics on mkc's matrix: 14 matrices and 2 layers; -m is not read" \
  || fail "--show-statistics on mkc's matrix" "$(cat "$tmp/err" "$tmp/stats")"
for flags in "" "--in-file $tmp/im.gguf --in-file $tmp/im1.gguf" "--in-file $tmp/im.gguf -f $text"; do
  expect_error "--show-statistics ${flags:-alone}" \
    "mkc: error: imatrix: --show-statistics reports on one matrix, given by --in-file, and reads no text (no -f)" \
    -- imatrix --show-statistics $flags
done
# A run in two halves: --chunks 2, then --chunk 2 (the next two) with the first's matrix in: the
# four chunks' run (the same counts and chunk count, the sums within float rounding); a copy every
# 2 chunks (--save-frequency) is the run that stopped there, byte for byte
"$mkc" imatrix "${args[@]}" --backend cpu --chunks 2 -o "$tmp/half.gguf" >/dev/null 2>&1
"$mkc" imatrix "${args[@]}" --backend cpu --chunk 2 --chunks 2 --in-file "$tmp/half.gguf" -o "$tmp/whole.gguf" \
  >/dev/null 2>"$tmp/err"
got=$(python3 tests/imatrix_compare.py "$tmp/whole.gguf" "$tmp/im.gguf" --tol 1e-6)
[[ $got == ok* ]] && grep -q '^mkc: imatrix: the first 2 chunks skipped$' "$tmp/err" \
  && ok "--chunk 2 --in-file (the first two chunks' matrix): the whole run's: $got" \
  || fail "--chunk and --in-file" "$got" "$(head -n 4 "$tmp/err")"
# llama-imatrix's other spellings: --from-chunk, --output-file, -ofreq; --ppl (the default)
"$mkc" imatrix "${args[@]}" --backend cpu --from-chunk 2 --chunks 2 --in-file "$tmp/half.gguf" --ppl \
  --output-file "$tmp/whole2.gguf" -ofreq 1 >/dev/null 2>"$tmp/err"
cmp -s "$tmp/whole2.gguf" "$tmp/whole.gguf" && grep -q "^mkc: imatrix: 3 chunks in, written to $tmp/whole2.gguf$" "$tmp/err" \
  && ok "--from-chunk, --output-file, -ofreq and --ppl: --chunk's run, written after each chunk" \
  || fail "llama-imatrix's spellings" "$(cat "$tmp/err")"
expect_error "--ppl with --no-ppl" "mkc: error: imatrix: --ppl or --no-ppl, not both" \
  -- imatrix "${args[@]}" --ppl --no-ppl
# --parse-special: control tokens' spellings in the text are those tokens (mkc tokenize's count
# of the text, which parses them), else text (tokenize --no-parse-special's)
{ printf '</s>Two <s>'; cat "$text"; } >"$tmp/special.txt"
for flag in --parse-special ""; do
  tk=(--no-parse-special)
  [ -n "$flag" ] && tk=()
  want=$("$mkc" tokenize -m "$tmp/m.gguf" -f "$tmp/special.txt" --ids "${tk[@]}" 2>/dev/null | tr -cd , | wc -c)
  "$mkc" imatrix -m "$tmp/m.gguf" -f "$tmp/special.txt" -c 64 --chunks 1 --kv-dtype f32 --backend cpu \
    --no-ppl $flag -o "$tmp/sp.gguf" >/dev/null 2>"$tmp/err"
  grep -q "^mkc: imatrix: $((want + 1)) tokens$" "$tmp/err" \
    && ok "${flag:-no --parse-special}: the text is $((want + 1)) tokens, as tokenize reads it" \
    || fail "${flag:-no --parse-special}" "tokenize: $((want + 1))" "$(grep tokens "$tmp/err")"
done
"$mkc" imatrix "${args[@]}" --backend cpu --save-frequency 2 --output-frequency 1 -o "$tmp/often.gguf" \
  >/dev/null 2>"$tmp/err"
cmp -s "$tmp/often.gguf.at_2" "$tmp/half.gguf" && cmp -s "$tmp/often.gguf.at_4" "$tmp/often.gguf" \
  && grep -q "^mkc: imatrix: 3 chunks in, written to $tmp/often.gguf$" "$tmp/err" \
  && ! grep -q "4 chunks in, written" "$tmp/err" \
  && ok "--save-frequency 2: .at_2 is the two chunks' matrix, .at_4 the whole; --output-frequency 1 writes -o each chunk" \
  || fail "--save-frequency" "$(cat "$tmp/err")" "$(ls "$tmp" | grep often)"
# Ctrl-C (at MKC_TEST_PAUSE_AFTER_CHUNK: after the first chunk): the run ends there, 130, with
# the one chunk's matrix written, the --chunks 1 run's byte for byte
"$mkc" imatrix "${args[@]}" --backend cpu --chunks 1 -o "$tmp/one.gguf" >"$tmp/one.out" 2>/dev/null
rm -f "$tmp/pause" && mkfifo "$tmp/pause"
MKC_TEST_PAUSE_AFTER_CHUNK=$tmp/pause "$mkc" imatrix "${args[@]}" --backend cpu -o "$tmp/int.gguf" \
  >"$tmp/int.out" 2>"$tmp/err" &
pid=$!
timeout 60 bash -c 'exec 3>"$1"; kill -INT "$2"; exec 3>&-' - "$tmp/pause" "$pid" || kill "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] && cmp -s "$tmp/int.gguf" "$tmp/one.gguf" \
  && grep -q "^mkc: imatrix: interrupted: 1 chunks written to $tmp/int.gguf$" "$tmp/err" \
  && cmp -s "$tmp/int.out" "$tmp/one.out" && grep -q '^Final estimate' "$tmp/int.out" \
  && grep -q "^mkc: imatrix: the estimate is of the first 1 chunks$" "$tmp/err" \
  && ok "Ctrl-C after a chunk: exit 130, that chunk's matrix written, its estimate printed" \
  || fail "Ctrl-C" "exit $rc" "$(tail -n 3 "$tmp/err")"
expect_error "another model's matrix in" \
  "mkc: error: imatrix: blk.0.attn_k.weight: 64 sums here, 256 in the file: another model's" \
  -- imatrix "${args[@]}" --backend cpu --in-file tests/data/imatrix_blocks_tiny.gguf -o "$tmp/x.gguf"
expect_error "--chunk past the text" \
  "mkc: error: imatrix: the text is 836 tokens; after --chunk 12 (768 tokens) a context of 64 needs 128 more at least (two chunks)" \
  -- imatrix "${args[@]}" --chunk 12
expect_error "gen --imatrix-kernel with --slots" "mkc: error: --imatrix-kernel: a plain kernel's (not with --slots)" \
  -- gen graphs/llama.lua --preset tiny --slots 2 --imatrix-kernel -o "$tmp/x.cu"
expect_error "no text" "mkc: error: imatrix: -f FILE (the text) is required, or --in-file matrices to combine" \
  -- imatrix -m "$tmp/m.gguf"
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
