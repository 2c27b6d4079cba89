#!/usr/bin/env bash
# mkc run -m / mkc info -m: a GGUF from mkc init runs the very weights
# --random-weights makes; the real model (tests/data/fetch.sh) streams text
# that the kernel and the reference executor agree on; bad flags and
# prompts that do not fit are refused before anything runs; a model file
# cut or grown while run has it open ends in one message, not a signal.
source "$(dirname "$0")/lib.sh"

# expect_same NAME FILE_A FILE_B
expect_same() {
  if cmp -s "$2" "$3"; then ok "$1"; else fail "$1" "$(head -c 300 "$2")" "$(head -c 300 "$3")"; fi
}

# A model file with seed 7 is the model --random-weights 7 makes.
"$mkc" init --preset tiny --seed 7 -o "$tmp/tiny.gguf" 2>"$tmp/err" || fail "init tiny" "$(cat "$tmp/err")"
if "$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 3,1,4,1,5 -n 12 --draft-max 3 --backend cpu \
  >"$tmp/file.out" 2>"$tmp/err" \
  && "$mkc" run --preset tiny --random-weights 7 --prompt-ids 3,1,4,1,5 -n 12 --backend ref \
    >"$tmp/random.out" 2>>"$tmp/err"; then
  expect_same "run -m tiny.gguf (cpu, drafts) = run --random-weights 7 (ref)" "$tmp/file.out" "$tmp/random.out"
  grep -q "model $tmp/tiny.gguf" "$tmp/err" && ok "the stats line names the model file" \
    || fail "the stats line names the model file" "$(cat "$tmp/err")"
else
  fail "run -m tiny.gguf" "$(cat "$tmp/err")"
fi
"$mkc" info -m "$tmp/tiny.gguf" >"$tmp/info" 2>"$tmp/err"
grep -qx "graph: graphs/llama.lua, preset llama-tiny (llama: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 192, vocab 256, context 512, rope theta 10000 (interleaved), rms eps 1e-05, tied head)" "$tmp/info" \
  && ok "info -m: the derived preset" || fail "info -m: the derived preset" "$(cat "$tmp/info" "$tmp/err")"

# init --vocab: random weights that read and write StarCoder's tokens (llama.cpp's test vocabulary):
# its tokenizer, FIM markers found (its published ids: <fim_prefix> 1, <fim_suffix> 3,
# <fim_middle> 2), a text becomes llama.cpp's ids for it (the fixture's first case: the same
# continuation as those ids given directly).
vocab=${MKC_TEST_DATA:-}/vocab/ggml-vocab-starcoder.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$vocab" ]; then
  skip "init --vocab: no test data (run tests/data/fetch.sh)"
elif "$mkc" init --preset tiny --seed 7 --vocab "$vocab" -o "$tmp/sc.gguf" 2>"$tmp/err"; then
  "$mkc" info -m "$tmp/sc.gguf" >"$tmp/info" 2>>"$tmp/err"
  grep -qxF "tokenizer: bpe (smollm), 49152 tokens, bos 0, eos 0, fill-in-the-middle (prefix 1, suffix 3, middle 2)" "$tmp/info" \
    && grep -q "vocab 49152, context 512" "$tmp/info" \
    && ok "init --vocab: StarCoder's tokenizer and its 49152 tokens, the FIM markers found" \
    || fail "init --vocab: info" "$(cat "$tmp/info" "$tmp/err")"
  text=$(head -n 1 "$vocab.inp") ids=$(head -n 1 "$vocab.out" | sed 's/^ //; s/ /,/g')
  "$mkc" run -m "$tmp/sc.gguf" -p "$text" -n 6 --json --backend cpu 2>/dev/null | grep -o '"id":[0-9]*' >"$tmp/by_text"
  "$mkc" run -m "$tmp/sc.gguf" --prompt-ids "$ids" -n 6 --json --backend cpu 2>/dev/null | grep -o '"id":[0-9]*' >"$tmp/by_ids"
  [ "$(wc -l <"$tmp/by_text")" = 6 ] && cmp -s "$tmp/by_text" "$tmp/by_ids" \
    && ok "init --vocab: '$text' reads as llama.cpp's ids ($ids): the same continuation" \
    || fail "init --vocab: the text's ids" "$(cat "$tmp/by_text")" "$(cat "$tmp/by_ids")"
else
  fail "init --vocab" "$(cat "$tmp/err")"
fi
expect_error "init --vocab: a file without a tokenizer" "mkc: error: $tmp/tiny.gguf: no tokenizer.ggml.model: the file has no tokenizer" \
  -- init --preset tiny --seed 1 --vocab "$tmp/tiny.gguf" -o "$tmp/x.gguf"
expect_error "init --vocab: a Hugging Face folder" \
  "mkc: error: --vocab: the tokenizer goes into a GGUF file (-o FILE.gguf); init does not write a Hugging Face folder's tokenizer.json" \
  -- init --preset tiny --seed 1 --vocab "$tmp/tiny.gguf" -o "$tmp/hf"

# info on a GGUF mkc cannot run: the file is described, the reason given, exit 0.
perl -0777 -pe 's/(general\.architecture\x08\x00\x00\x00\x05\x00{7})llama/${1}gptnx/' \
  "$tmp/tiny.gguf" >"$tmp/gptnx.gguf"
if "$mkc" info -m "$tmp/gptnx.gguf" >"$tmp/info" 2>"$tmp/err" \
  && grep -qx "tensors: 20 (BF16 20)" "$tmp/info" \
  && grep -qx "graph: none (mkc cannot run this model: see the error above)" "$tmp/info" \
  && grep -qxF "mkc: error: $tmp/gptnx.gguf: architecture \"gptnx\" is not supported (mkc runs llama, mistral, qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, phi3, granite, granitemoe, gpt-oss, smollm3, exaone, exaone4)" "$tmp/err"; then
  ok "info -m on an architecture mkc does not run: described, with the reason"
else
  fail "info -m on an architecture mkc does not run" "$(cat "$tmp/info" "$tmp/err")"
fi

# The same model as a Hugging Face folder (config.json + model.safetensors).
if "$mkc" init --preset tiny --seed 7 -o "$tmp/hf-tiny" 2>"$tmp/err" \
  && "$mkc" run -m "$tmp/hf-tiny" --prompt-ids 3,1,4,1,5 -n 12 --draft-max 3 --backend cpu \
    >"$tmp/hf.out" 2>>"$tmp/err"; then
  expect_same "run -m HF folder = run -m GGUF (same seed)" "$tmp/hf.out" "$tmp/file.out"
  "$mkc" info -m "$tmp/hf-tiny" >"$tmp/info" 2>"$tmp/err"
  for want in "format: safetensors, 1 file" "tensors: 20 (BF16 20)" \
    "graph: graphs/llama.lua, preset hf-tiny (llama: 2 layers, dim 64, 4 heads (2 KV) of 16, ffn 192, vocab 256, context 512, rope theta 10000 (interleaved), rms eps 1e-05, tied head)"; do
    grep -qxF "$want" "$tmp/info" && ok "info -m HF folder: $want" \
      || fail "info -m HF folder: $want" "$(cat "$tmp/info" "$tmp/err")"
  done
else
  fail "init/run an HF folder" "$(cat "$tmp/err")"
fi
for p in qwen2-tiny qwen3-tiny; do
  "$mkc" init --preset $p --seed 5 -o "$tmp/$p.gguf" 2>/dev/null
  "$mkc" init --preset $p --seed 5 -o "$tmp/hf-$p" 2>/dev/null
  "$mkc" run -m "$tmp/$p.gguf" --prompt-ids 2,7,1,8 -n 10 --draft-max 2 --backend cpu >"$tmp/a" 2>"$tmp/err"
  "$mkc" run -m "$tmp/hf-$p" --prompt-ids 2,7,1,8 -n 10 --backend ref >"$tmp/b" 2>>"$tmp/err"
  "$mkc" run --preset $p --random-weights 5 --prompt-ids 2,7,1,8 -n 10 --backend ref >"$tmp/c" 2>>"$tmp/err"
  if [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/a" "$tmp/c"; then
    ok "$p: GGUF (kernel) = HF folder (reference) = --random-weights (reference)"
  else
    fail "$p: GGUF = HF folder = --random-weights" "$(cat "$tmp/a" "$tmp/b" "$tmp/c" "$tmp/err")"
  fi
done
# RoPE scalings through files: info -m names them; the kernel (cpu) and the reference agree on
# the file, and with the preset (generated past each small trained context).
declare -A scaling=(
  [llama3-tiny]="llama3 scaling: factor 8, low/high freq factor 1/4, original context 64"
  [yarn-tiny]="yarn scaling: factor 4, original context 64, beta fast/slow 32/1, ext factor 1, attn factor 1"
  [linear-tiny]="linear scaling: factor 4")
for p in llama3-tiny yarn-tiny linear-tiny; do
  "$mkc" init --preset $p --seed 5 -o "$tmp/$p.gguf" 2>/dev/null
  "$mkc" info -m "$tmp/$p.gguf" >"$tmp/info" 2>"$tmp/err"
  grep -qF "${scaling[$p]})" "$tmp/info" && ok "info -m $p.gguf: ${scaling[$p]}" \
    || fail "info -m $p.gguf: ${scaling[$p]}" "$(cat "$tmp/info" "$tmp/err")"
  "$mkc" run -m "$tmp/$p.gguf" --prompt-ids 2,7,1,8 -n 90 --draft-max 2 --backend cpu >"$tmp/a" 2>"$tmp/err"
  "$mkc" run -m "$tmp/$p.gguf" --prompt-ids 2,7,1,8 -n 90 --backend ref >"$tmp/b" 2>>"$tmp/err"
  "$mkc" run --preset $p --random-weights 5 --prompt-ids 2,7,1,8 -n 90 --backend ref >"$tmp/c" 2>>"$tmp/err"
  if [ "$(wc -w <"$tmp/a")" -eq 90 ] && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/a" "$tmp/c"; then
    ok "$p: run -m on cpu = --backend ref = the preset's --random-weights (90 tokens)"
  else
    fail "$p: run -m cpu = ref = --random-weights" "$(cat "$tmp/a" "$tmp/b" "$tmp/c" "$tmp/err")"
  fi
done
"$mkc" info -m "$tmp/llama3-tiny.gguf" >"$tmp/info" 2>&1
grep -qx "tensors: 21 (F32 1, BF16 20)" "$tmp/info" && ok "llama3-tiny.gguf carries rope_freqs.weight (F32)" \
  || fail "llama3-tiny.gguf carries rope_freqs.weight (F32)" "$(cat "$tmp/info")"
"$mkc" init --preset llama3-tiny --seed 5 -o "$tmp/hf-llama3-tiny" 2>/dev/null
"$mkc" run -m "$tmp/llama3-tiny.gguf" --prompt-ids 2,7,1,8 -n 90 --backend ref >"$tmp/a" 2>/dev/null
if grep -qE '"rope_type":[[:space:]]*"llama3"' "$tmp/hf-llama3-tiny/config.json" \
  && "$mkc" run -m "$tmp/hf-llama3-tiny" --prompt-ids 2,7,1,8 -n 90 --backend cpu >"$tmp/b" 2>"$tmp/err" \
  && cmp -s "$tmp/a" "$tmp/b"; then
  ok "llama3-tiny as an HF folder (rope_scaling llama3) runs the GGUF's tokens"
else
  fail "llama3-tiny as an HF folder" "$(cat "$tmp/hf-llama3-tiny/config.json" "$tmp/err")"
fi
if "$mkc" gen -m "$tmp/llama3-tiny.gguf" -o "$tmp/k.cu" 2>"$tmp/err" \
  && "$mkc" gen graphs/llama.lua --preset llama3-tiny -o "$tmp/t.cu" 2>>"$tmp/err" \
  && grep -q 'mkc_rope_llama3(10000, 8.0f, 1.0f, 4.0f, 64.0f)' "$tmp/k.cu" \
  && diff <(sed 's/llama-llama3-tiny/llama3-tiny/g' "$tmp/k.cu" | grep -v '^ \* \(graph\|hashes\):') \
    <(grep -v '^ \* \(graph\|hashes\):' "$tmp/t.cu") >"$tmp/diff"; then
  ok "gen -m llama3-tiny.gguf: the preset's kernel, the scaling's parameters as literals"
else
  fail "gen -m llama3-tiny.gguf" "$(cat "$tmp/err"; head -20 "$tmp/diff")"
fi

grep -qE '"model_type":[[:space:]]*"qwen3"' "$tmp/hf-qwen3-tiny/config.json" && ok "qwen3-tiny's config.json says qwen3" \
  || fail "qwen3-tiny's config.json says qwen3" "$(cat "$tmp/hf-qwen3-tiny/config.json")"
expect_error "init -o DIR for a layout config.json cannot say" \
  "mkc: error: a llama model with NEOX RoPE cannot be written as a Hugging Face folder (config.json has no way to say it); use -o FILE.gguf" \
  -- init --preset odd --seed 1 -o "$tmp/hf-odd"

# gen -m: the kernel for the model file's preset.
if "$mkc" gen -m "$tmp/tiny.gguf" --draft-max 2 -o "$tmp/k.cu" 2>"$tmp/err" \
  && "$mkc" gen graphs/llama.lua --preset tiny --draft-max 2 -o "$tmp/t.cu" 2>>"$tmp/err"; then
  # the same model under another preset name: the same kernel but for the names
  if diff <(sed 's/llama-tiny/tiny/g' "$tmp/k.cu" | grep -v '^ \* \(graph\|hashes\):') \
    <(grep -v '^ \* \(graph\|hashes\):' "$tmp/t.cu") >"$tmp/diff"; then
    ok "gen -m tiny.gguf emits the tiny preset's kernel"
  else
    fail "gen -m tiny.gguf emits the tiny preset's kernel" "$(head -20 "$tmp/diff")"
  fi
else
  fail "gen -m" "$(cat "$tmp/err")"
fi
expect_error "gen -m with --preset" "mkc: error: gen: -m brings its own preset; drop --preset" \
  -- gen -m "$tmp/tiny.gguf" --preset tiny -o "$tmp/x.cu"

# bench -m: the model file's weights, timed.
if "$mkc" bench -m "$tmp/tiny.gguf" -n 4 --draft-max 2 --backend cpu >"$tmp/bench" 2>"$tmp/err"; then
  n=$(grep -c '^| llama llama-tiny BF16 | 0.22 MiB | 0.12 M | cpu | ' "$tmp/bench")
  [ "$n" -eq 6 ] && grep -q '| tg4 verify3 |' "$tmp/bench" &&
    ok "bench -m tiny.gguf: pp, tg, tg-with-drafts, verify and sampled rows" \
    || fail "bench -m tiny.gguf: pp, tg, tg-with-drafts, verify and sampled rows" "$(cat "$tmp/bench")"
else
  fail "bench -m tiny.gguf" "$(cat "$tmp/err")"
fi
expect_error "bench -m with --random-weights" \
  "mkc: error: bench: -m brings its own graph, preset and weights; drop --preset, --graph and --random-weights" \
  -- bench -m "$tmp/tiny.gguf" --random-weights 1

# --kv-dtype: the kernel and the reference store the cache alike.
for kv in f16 f32; do
  "$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 3,1,4,1,5 -n 12 --draft-max 3 --kv-dtype $kv --backend cpu \
    >"$tmp/kv-cpu" 2>"$tmp/err"
  "$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 3,1,4,1,5 -n 12 --kv-dtype $kv --backend ref \
    >"$tmp/kv-ref" 2>>"$tmp/err"
  if [ -s "$tmp/kv-cpu" ] && cmp -s "$tmp/kv-cpu" "$tmp/kv-ref"; then ok "--kv-dtype $kv: kernel = reference"
  else fail "--kv-dtype $kv: kernel = reference" "$(cat "$tmp/kv-cpu" "$tmp/kv-ref" "$tmp/err")"; fi
done
"$mkc" gen -m "$tmp/tiny.gguf" --kv-dtype f16 -o "$tmp/k16.cu" 2>"$tmp/err"
grep -q "KV f16" "$tmp/err" && grep -q "#define MKC_KV_F16 1" "$tmp/k16.cu" \
  && ok "gen --kv-dtype f16 makes an f16-cache kernel" \
  || fail "gen --kv-dtype f16 makes an f16-cache kernel" "$(cat "$tmp/err")"
if "$mkc" compile "$tmp/k16.cu" --arch sm_80 -o "$tmp/aot16" 2>"$tmp/err"; then
  MKC_LIBCUDA=/nonexistent/libcuda.so.1 expect_error "run --kernel of an f16-cache kernel gets past the source check" \
    "mkc: error: no CUDA driver (/nonexistent/libcuda.so.1 not found); --kernel needs a GPU (use --backend cpu without --kernel)" \
    -- run -m "$tmp/tiny.gguf" --kernel "$tmp/aot16" --prompt-ids 1 -n 2
else
  fail "compile an f16-cache kernel" "$(cat "$tmp/err")"
fi
expect_error "--kv-dtype with --kernel" "mkc: error: run: --kernel DIR brings its own KV type; drop --kv-dtype" \
  -- run --kernel "$tmp/aot16" --kv-dtype f32 --random-weights 1 -n 2
expect_error "a bad --kv-dtype" "mkc: error: --kv-dtype: expected bf16, f16 or f32, got 'fp8'" \
  -- run -m "$tmp/tiny.gguf" --prompt-ids 1 --kv-dtype fp8

# Flags.
expect_error "-m with --preset" \
  "mkc: error: run: -m brings its own graph, preset and weights; drop --preset, --graph and --random-weights" \
  -- run -m "$tmp/tiny.gguf" --preset tiny --prompt-ids 1
expect_error "-m without a prompt" "mkc: error: run: -p TEXT (or -f FILE, --prompt-ids) is required with -m" \
  -- run -m "$tmp/tiny.gguf"
expect_error "-p without -m" "mkc: error: run: a text prompt needs a model with a tokenizer (-m)" \
  -- run --preset tiny --random-weights 1 -n 2 -p hello
expect_error "-p and --prompt-ids" "mkc: error: run: give the prompt as -p TEXT, -f FILE or --prompt-ids: one" \
  -- run -m "$tmp/tiny.gguf" -p hi --prompt-ids 1
expect_error "-p on a model without a tokenizer" \
  "mkc: error: $tmp/tiny.gguf has no tokenizer: give the prompt as --prompt-ids" \
  -- run -m "$tmp/tiny.gguf" -p hello -n 2
expect_error "--temp out of range" "mkc: error: --temp: expected a number in 0..100, got '-1'" \
  -- run -m "$tmp/tiny.gguf" --prompt-ids 1 --temp -1
expect_error "a prompt longer than the context" \
  "mkc: error: the prompt is 5 tokens but the context holds 4: nothing was run (use --ctx 6 or a shorter prompt)" \
  -- run -m "$tmp/tiny.gguf" --prompt-ids 1,2,3,4,5 -n 2 --ctx 4
expect_error "llama.cpp's -c for --ctx" \
  "mkc: error: the prompt is 5 tokens but the context holds 4: nothing was run (use --ctx 5 or a shorter prompt)" \
  -- run -m "$tmp/tiny.gguf" --prompt-ids 1,2,3,4,5 -c 4
"$mkc" run --model "$tmp/tiny.gguf" --prompt-ids 3,1,4,1,5 --n-predict 12 --ctx-size 64 --backend ref \
  >"$tmp/long.out" 2>"$tmp/err"
expect_same "llama.cpp's long spellings (--model, --n-predict, --ctx-size)" "$tmp/long.out" "$tmp/file.out"
expect_error "a missing model file" "mkc: error: cannot open model $tmp/none.gguf: No such file or directory" \
  -- run -m "$tmp/none.gguf" --prompt-ids 1
printf 'not a model' >"$tmp/junk.gguf"
expect_error "a file that is not GGUF" \
  "mkc: error: $tmp/junk.gguf: not a GGUF file: magic 6e 6f 74 20, expected 47 47 55 46 (\"GGUF\")" \
  -- run -m "$tmp/junk.gguf" --prompt-ids 1

# Sampling (in the kernel): the same seed gives the same tokens, drafts on or off.
"$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 1 -n 16 --temp 1.5 --seed 3 --backend cpu >"$tmp/s1" 2>/dev/null
"$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 1 -n 16 --temp 1.5 --seed 3 --backend cpu >"$tmp/s2" 2>/dev/null
"$mkc" run -m "$tmp/tiny.gguf" --prompt-ids 1 -n 16 --temp 1.5 --seed 4 --backend cpu >"$tmp/s3" 2>/dev/null
expect_same "--temp with one --seed samples the same tokens twice" "$tmp/s1" "$tmp/s2"
if [ -s "$tmp/s1" ] && ! cmp -s "$tmp/s1" "$tmp/s3"; then ok "another --seed samples other tokens"
else fail "another --seed samples other tokens" "$(cat "$tmp/s1")" "$(cat "$tmp/s3")"; fi

# The model file changed while `mkc run` has it open, at the moment a test
# hook holds it (MKC_TEST_PAUSE_AFTER_MAP: mapped, nothing read yet;
# MKC_TEST_PAUSE_BEFORE_TENSORS: header read, no tensor yet).
# changed_while_running NAME HOOK MODEL FILE CHANGE
changed_while_running() {
  changed_while_open "$1" "$2" "$4" "$5" -- run -m "$3" --prompt-ids 1 -n 2 --backend ref
}
g=$tmp/changing.gguf
cp "$tmp/tiny.gguf" "$g"
changed_while_running "GGUF emptied after mapping: the header read faults" \
  MKC_TEST_PAUSE_AFTER_MAP "$g" "$g" "truncate -s 0 $g"
cp "$tmp/tiny.gguf" "$g"
changed_while_running "GGUF emptied before the tensors: the first tensor read faults" \
  MKC_TEST_PAUSE_BEFORE_TENSORS "$g" "$g" "truncate -s 0 $g"
cp "$tmp/tiny.gguf" "$g"
changed_while_running "GGUF cut in half before the tensors" \
  MKC_TEST_PAUSE_BEFORE_TENSORS "$g" "$g" "truncate -s $(($(wc -c <"$g") / 2)) $g"
cp "$tmp/tiny.gguf" "$g"
changed_while_running "GGUF grown by a byte before the tensors" \
  MKC_TEST_PAUSE_BEFORE_TENSORS "$g" "$g" "printf x >>$g"
if [ -f "$tmp/hf-tiny/model.safetensors" ]; then
  cp -r "$tmp/hf-tiny" "$tmp/hf-changing"
  changed_while_running "safetensors emptied before the tensors" MKC_TEST_PAUSE_BEFORE_TENSORS \
    "$tmp/hf-changing" "$tmp/hf-changing/model.safetensors" "truncate -s 0 $tmp/hf-changing/model.safetensors"
fi

# Draft sources (issue 15): self-speculation (--draft-layers) and draft
# models (-md: another seed of the same preset, and the target itself) give
# plain greedy's tokens; the stats line and --json's last line count the
# rounds; bad flags are refused before anything runs.
"$mkc" init --preset tiny --seed 5 -o "$tmp/d5.gguf" 2>"$tmp/err" || fail "init tiny seed 5" "$(cat "$tmp/err")"
"$mkc" init --preset odd --seed 5 -o "$tmp/odd5.gguf" 2>"$tmp/err" || fail "init odd seed 5" "$(cat "$tmp/err")"
dr=(run -m "$tmp/tiny.gguf" --prompt-ids 1,2,3,4,1,2,3,4 -n 40 --backend cpu)
"$mkc" "${dr[@]}" >"$tmp/plain.out" 2>"$tmp/err" || fail "run tiny.gguf plain" "$(cat "$tmp/err")"
for src in "--draft-layers 1|self-speculation (first 1 of 2 layers)" "-md $tmp/d5.gguf|draft model $tmp/d5.gguf" \
  "-md $tmp/tiny.gguf|draft model $tmp/tiny.gguf"; do
  flags=${src%%|*} name=$(printf '%s' "${src#*|}" | sed 's/[().]/\\&/g') # as a regex
  # shellcheck disable=SC2086
  if "$mkc" "${dr[@]}" --draft-max 4 $flags >"$tmp/draft.out" 2>"$tmp/err" && cmp -s "$tmp/plain.out" "$tmp/draft.out" \
    && grep -Eq "drafts from $name: [0-9]+ rounds, [0-9]+ mismatches, [0-9]+ all accepted; time: draft [0-9.]+ s, target [0-9.]+ s, verify ([0-9.]+ s|n/a)" "$tmp/err"; then
    ok "run $flags --draft-max 4: plain greedy's tokens; the drafter's stats"
  else
    fail "run $flags --draft-max 4" "plain: $(cat "$tmp/plain.out")" "draft: $(cat "$tmp/draft.out")" "$(cat "$tmp/err")"
  fi
done
"$mkc" run --preset tiny --random-weights 7 --prompt-ids 1,2,3,4,1,2,3,4 -n 40 --backend cpu --draft-max 4 \
  --draft-layers 1 >"$tmp/draft.out" 2>"$tmp/err"
expect_same "run --preset tiny --random-weights 7 --draft-layers 1 = plain tiny.gguf" "$tmp/plain.out" "$tmp/draft.out"
if "$mkc" "${dr[@]}" --draft-max 4 -md "$tmp/tiny.gguf" --json >"$tmp/json" 2>"$tmp/err" \
  && out=$(python3 - "$tmp/json" "$tmp/plain.out" <<'EOF2' 2>&1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
plain = [int(t) for t in open(sys.argv[2]).read().split()]
st = lines[-1]["stats"]
ids = [l["id"] for l in lines[:-1]]
assert ids == plain, (ids, plain)
assert st["generated"] == 40 and st["drafted"] == st["accepted"] > 0, st
assert st["rounds"] == st["all_accepted"] > 0 and st["mismatches"] == 0, st
assert st["draft_source"] == "draft model " + sys.argv[1].rsplit("/", 1)[0] + "/tiny.gguf", st
assert st["draft_steps"] > 0 and st["draft_seconds"] >= 0 and st["target_seconds"] > 0, st
assert sum(n for n, _ in st["step_seconds"].values()) == st["steps"], st
print("%d rounds, %d drafted, all accepted" % (st["rounds"], st["drafted"]))
EOF2
); then
  ok "run -md (the target itself) --json: the tokens, then a stats line ($out)"
else
  fail "run -md --json" "${out:-}" "$(cat "$tmp/json" "$tmp/err")"
fi
expect_error "--draft-layers 0" "mkc: error: --draft-layers: expected an integer in 1..65536, got '0'" -- \
  "${dr[@]}" --draft-max 4 --draft-layers 0
expect_error "--draft-layers = the target's layers" \
  "mkc: error: --draft-layers 2: the target has 2 layers; self-speculation drafts with its first 1..1" -- \
  "${dr[@]}" --draft-max 4 --draft-layers 2
expect_error "--draft-layers past the target's layers" \
  "mkc: error: --draft-layers 9: the target has 2 layers; self-speculation drafts with its first 1..1" -- \
  "${dr[@]}" --draft-max 4 --draft-layers 9
expect_error "-md with another vocabulary" \
  "mkc: error: -md $tmp/odd5.gguf: its vocabulary has 300 tokens, the target's ($tmp/tiny.gguf) 256: a draft model needs the target's vocabulary" -- \
  "${dr[@]}" --draft-max 4 -md "$tmp/odd5.gguf"
expect_error "-md a missing file" "mkc: error: cannot open model $tmp/missing.gguf: No such file or directory" -- \
  "${dr[@]}" --draft-max 4 -md "$tmp/missing.gguf"
expect_error "-md and --draft-layers" "mkc: error: run: --draft-layers, -md and --draft-head are draft sources: give one" -- \
  "${dr[@]}" --draft-max 4 -md "$tmp/d5.gguf" --draft-layers 1
# The drafter head on the target's hidden state (graphs/draft_head.lua): random weights only.
hr=(run --preset tiny --random-weights 7 --prompt-ids 1,2,3,4,1,2,3,4 -n 40 --backend cpu --draft-max 4)
if "$mkc" "${hr[@]}" --draft-head >"$tmp/draft.out" 2>"$tmp/err" && cmp -s "$tmp/plain.out" "$tmp/draft.out" \
  && grep -Eq "drafted [1-9][0-9]*, .*drafts from drafter head \(tiny, random weights\): [1-9][0-9]* rounds" "$tmp/err"; then
  ok "run --draft-head --draft-max 4: plain greedy's tokens; the head drafted"
else
  fail "run --draft-head" "plain: $(cat "$tmp/plain.out")" "draft: $(cat "$tmp/draft.out")" "$(cat "$tmp/err")"
fi
expect_error "-m with --draft-head" \
  "mkc: error: run: --draft-head needs a trained head's weights, and mkc reads none yet: it runs with --preset and --random-weights only" -- \
  "${dr[@]}" --draft-max 4 --draft-head
expect_error "--draft-head with --rounds" \
  "mkc: error: run: --rounds drafts inside the kernel (prompt lookup, or --draft-layers), at a fixed depth and without log-probabilities: not with --draft-head" -- \
  "${hr[@]}" --draft-head --rounds 4
expect_error "-md without --draft-max" "mkc: error: run: -md drafts K tokens a step: give --draft-max K (1..31)" -- \
  "${dr[@]}" -md "$tmp/d5.gguf"

# The real model: text in, text out, the kernel agreeing with the reference.
smol=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$smol" ]; then
  skip "SmolLM2-135M-Instruct: no test data (run tests/data/fetch.sh)"
else
  "$mkc" info -m "$smol" >"$tmp/info" 2>"$tmp/err"
  for want in "architecture: llama" "tensors: 272 (F32 61, Q4_1 210, Q8_0 1)" \
    "graph: graphs/llama.lua, preset smollm2-135m-8k-lc100k-mix1-ep2 (llama: 30 layers, dim 576, 9 heads (3 KV) of 64, ffn 1536, vocab 49152, context 8192, rope theta 100000 (interleaved), rms eps 1e-05, tied head)"; do
    grep -qxF "$want" "$tmp/info" && ok "info SmolLM2: $want" || fail "info SmolLM2: $want" "$(cat "$tmp/info" "$tmp/err")"
  done
  p="The capital of France is"
  if "$mkc" run -m "$smol" -p "$p" -n 6 --ctx 32 --draft-max 3 --backend cpu >"$tmp/cpu" 2>"$tmp/err" \
    && "$mkc" run -m "$smol" -p "$p" -n 6 --ctx 32 --backend ref >"$tmp/ref" 2>>"$tmp/err"; then
    expect_same "SmolLM2 text: kernel (cpu, drafts) = reference" "$tmp/cpu" "$tmp/ref"
    case "$(cat "$tmp/cpu")" in
    "$p"*Paris*) ok "SmolLM2 text: the prompt echoed, then the completion ($(tr '\n' ' ' <"$tmp/cpu"))" ;;
    *) fail "SmolLM2 text: the prompt echoed, then the completion" "$(cat "$tmp/cpu")" ;;
    esac
  else
    fail "run SmolLM2" "$(cat "$tmp/err")"
  fi
  # The echo shows the prompt as the model reads it, control tokens included.
  chat=$(printf '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')
  if "$mkc" run -m "$smol" -p "$chat" -n 2 --ctx 32 --backend ref >"$tmp/chat" 2>"$tmp/err"; then
    case "$(cat "$tmp/chat")" in
    "$chat"*) ok "SmolLM2 chat: the echo shows <|im_start|> and <|im_end|> as given" ;;
    *) fail "SmolLM2 chat: the echo shows <|im_start|> and <|im_end|> as given" "$(cat "$tmp/chat")" ;;
    esac
  else
    fail "run SmolLM2 chat prompt" "$(cat "$tmp/err")"
  fi
  # --context-shift: the text runs on past a context of 48, the same with drafts (lossless across
  # the shifts), and begins with what the unshifted run gives before its context is full.
  fruit="The list of fruits: apple, banana,"
  cs=(run -m "$smol" -p "$fruit" --ctx 48 --backend cpu)
  if "$mkc" "${cs[@]}" >"$tmp/full" 2>"$tmp/err" \
    && "$mkc" "${cs[@]}" -n 100 --context-shift --keep 4 >"$tmp/shift0" 2>>"$tmp/err" \
    && "$mkc" "${cs[@]}" -n 100 --context-shift --keep 4 --draft-max 3 >"$tmp/shift3" 2>"$tmp/err3"; then
    expect_same "SmolLM2 --context-shift: drafts give plain decoding's text" "$tmp/shift0" "$tmp/shift3"
    head -c -1 "$tmp/full" >"$tmp/full.text"
    n=$(wc -c <"$tmp/full.text")
    if [ "$(wc -c <"$tmp/shift0")" -gt $((n + 40)) ] && cmp -s "$tmp/full.text" <(head -c "$n" "$tmp/shift0"); then
      ok "SmolLM2 --context-shift: the unshifted text ($n bytes), then more"
    else
      fail "SmolLM2 --context-shift: the unshifted text, then more" "$(cat "$tmp/full")" "$(cat "$tmp/shift0")"
    fi
    grep -q "generated 100 tokens.* context 48, shifted [2-9] times" "$tmp/err3" \
      && ok "SmolLM2 --context-shift: 100 tokens, the shifts counted" || fail "SmolLM2 --context-shift: stats" "$(cat "$tmp/err3")"
  else
    fail "run SmolLM2 --context-shift" "$(cat "$tmp/err" "$tmp/err3" 2>/dev/null)"
  fi
  # No -n: it ends at a reverse prompt the text reaches only past a shift.
  if timeout 300 "$mkc" "${cs[@]}" --context-shift --keep 4 --draft-max 3 -r "pear, pear, pear, pear" \
    >"$tmp/rev" 2>"$tmp/err" && grep -q 'shifted [1-9] times.*stopped: reverse prompt "pear, pear, pear, pear"' "$tmp/err"; then
    ok "SmolLM2 --context-shift, no -n: a reverse prompt past the shift ends it"
  else
    fail "SmolLM2 --context-shift, no -n, -r" "$(tail -c 300 "$tmp/rev")" "$(cat "$tmp/err")"
  fi
  # --prompt-cache (llama.cpp's): the first run writes its prompt's rows; a longer prompt that
  # begins the same way reads them (its stats say how many) and answers as a run without them;
  # -ro leaves the file as it was; -all keeps the answer's rows too; another model's file is
  # not used (a warning)
  pc=$tmp/prompt.cache p1="The capital of France is a city" p2="The capital of France is a city that has"
  pargs=(-m "$smol" --backend cpu --ctx 64 -n 6 --no-display-prompt)
  "$mkc" run "${pargs[@]}" -p "$p1" --prompt-cache "$pc" >/dev/null 2>"$tmp/pc1.err"
  n1=$(sed -E -n 's/.*prompt ([0-9]+) tokens.*/\1/p' "$tmp/pc1.err")
  "$mkc" run "${pargs[@]}" -p "$p2" --prompt-cache "$pc" >"$tmp/pc2.out" 2>"$tmp/pc2.err"
  "$mkc" run "${pargs[@]}" -p "$p2" >"$tmp/nopc.out" 2>/dev/null
  if [ -s "$pc" ] && grep -q ", 0 from --prompt-cache)" "$tmp/pc1.err" && grep -q ", $n1 from --prompt-cache)" "$tmp/pc2.err" \
    && cmp -s "$tmp/pc2.out" "$tmp/nopc.out"; then
    ok "run --prompt-cache: the first run's $n1 prompt tokens read back by a longer prompt, the same answer"
  else
    fail "run --prompt-cache" "$(tail -n 1 "$tmp/pc1.err")" "$(tail -n 1 "$tmp/pc2.err")" "$(cat "$tmp/pc2.out" "$tmp/nopc.out")"
  fi
  cp "$pc" "$tmp/pc.before"
  "$mkc" run "${pargs[@]}" -p "A different start" --prompt-cache "$pc" --prompt-cache-ro >/dev/null 2>&1
  cmp -s "$pc" "$tmp/pc.before" && ok "--prompt-cache-ro: the file is left as it was" || fail "--prompt-cache-ro wrote the file"
  "$mkc" run "${pargs[@]}" -p "$p1" --prompt-cache "$tmp/all.cache" --prompt-cache-all >/dev/null 2>&1
  held=$(od -An -tu4 -j16 -N4 "$tmp/all.cache" 2>/dev/null | tr -d ' ')
  [ "$held" = $((n1 + 5)) ] && ok "--prompt-cache-all: the prompt's and the answer's rows ($held tokens: $n1 + 6 - 1)" \
    || fail "--prompt-cache-all" "held $held, want $((n1 + 5))"
  "$mkc" run -m "$tmp/sc.gguf" --backend cpu --ctx 64 -n 6 -p "$p2" --prompt-cache "$pc" --prompt-cache-ro >/dev/null 2>"$tmp/other.err"
  grep -q "^mkc: warning: --prompt-cache $pc was written for another model or kernel: not used$" "$tmp/other.err" \
    && grep -q ", 0 from --prompt-cache)" "$tmp/other.err" \
    && ok "--prompt-cache of another model: a warning, not used" || fail "--prompt-cache of another model" "$(cat "$tmp/other.err")"
  expect_error "--prompt-cache-ro without --prompt-cache" \
    "mkc: error: run: --prompt-cache-ro and --prompt-cache-all go with --prompt-cache FILE" \
    -- run "${pargs[@]}" -p "$p1" --prompt-cache-ro
  long=$(printf ' word%.0s' $(seq 1 40)) # 40 tokens: " word" is one
  expect_error "SmolLM2: a prompt longer than --ctx" \
    "mkc: error: the prompt is 40 tokens but the context holds 16: nothing was run (use --ctx 41 or a shorter prompt)" \
    -- run -m "$smol" -p "$long" -n 2 --ctx 16
fi

finish
