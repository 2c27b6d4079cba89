#!/usr/bin/env bash
# mkc embed and the server's embedding endpoints: the cpu kernel's vectors
# against the ref backend's and against llama.cpp's (tests/data/embed_llamacpp.txt,
# tools/embed_llamacpp_fixture.sh), the pooling a model file names, the
# normalizations, texts a line each (with the test data's SmolLM2), the
# server's three APIs against the command, and the refusals. test_embed.c
# checks the vectors against the reference executor itself.
source "$(dirname "$0")/lib.sh"
vec=tests/embed_vectors.py
unset MKC_KV_DTYPE
ids=3,1,4,1,5,9,2,6,5,3
tiny=(--preset tiny --random-weights 5 --prompt-ids "$ids")

# embed NAME ARGS...: mkc embed ARGS into $tmp/NAME (stderr into $tmp/NAME.err); sets rc.
embed() {
  local name=$1
  shift
  "$mkc" embed "$@" >"$tmp/$name" 2>"$tmp/$name.err"
  rc=$?
}

# close NAME A B TOL: vector files A and B within TOL of the largest value.
close() {
  local worst
  if worst=$(python3 "$vec" close "$2" "$3" "$4"); then
    ok "$1 (within $worst of the largest value)"
  else
    fail "$1" "$worst" "$(head -c 300 "$2")" "$(head -c 300 "$3")"
  fi
}

# The cpu kernel against the ref backend, each pooling; and normalized to 1 by default.
for pool in mean cls last; do
  embed "cpu-$pool" "${tiny[@]}" --backend cpu --pooling $pool --embd-normalize -1
  embed "ref-$pool" "${tiny[@]}" --backend ref --pooling $pool --embd-normalize -1
  close "tiny, pooling $pool: the cpu kernel's vector is the ref backend's" \
    "$tmp/cpu-$pool" "$tmp/ref-$pool" 1e-4
done
embed default "${tiny[@]}" --backend cpu
if [ "$rc" -eq 0 ] && [ "$(python3 "$vec" norms "$tmp/default")" = "1.000000 64" ] &&
  grep -q "pooling last, euclidean norm 1" "$tmp/default.err"; then
  ok "by default: pooled by the last token, 64 values of euclidean norm 1"
else
  fail "default pooling and norm" "$(cat "$tmp/default.err")" "$(python3 "$vec" norms "$tmp/default")"
fi
python3 -c "
import json, math
a = json.loads(open('$tmp/cpu-last').read()); n = math.sqrt(sum(x * x for x in a))
print(json.dumps([x / n for x in a]))" >"$tmp/last-normed"
close "the default vector is the last token's, divided by its norm" "$tmp/default" "$tmp/last-normed" 1e-6
embed int16 "${tiny[@]}" --backend cpu --embd-normalize 0
if python3 -c "
import json, sys
v = json.loads(open('$tmp/int16').read())
sys.exit(abs(max(abs(x) for x in v) - 32760) > 1e-3)"; then
  ok "--embd-normalize 0: the largest |value| is 32760"
else
  fail "--embd-normalize 0" "$(head -c 200 "$tmp/int16")"
fi

# A model file that names its pooling: init --pooling writes ARCH.pooling_type.
"$mkc" init --preset tiny --seed 5 --pooling mean -o "$tmp/mean.gguf" 2>"$tmp/init.err"
embed file -m "$tmp/mean.gguf" --prompt-ids "$ids" --backend cpu --embd-normalize -1
if [ "$rc" -eq 0 ] && grep -q "pooling mean" "$tmp/file.err" && cmp -s "$tmp/file" "$tmp/cpu-mean"; then
  ok "a GGUF with pooling_type 1: pooled by mean, the preset's --pooling mean vector to the digit"
else
  fail "the file's pooling" "$(cat "$tmp/init.err" "$tmp/file.err")"
fi
embed file-cls -m "$tmp/mean.gguf" --prompt-ids "$ids" --backend cpu --embd-normalize -1 --pooling cls
cmp -s "$tmp/file-cls" "$tmp/cpu-cls" && ok "--pooling cls over the file's mean" \
  || fail "--pooling over the file's" "$(cat "$tmp/file-cls.err")"
"$mkc" info -m "$tmp/mean.gguf" >"$tmp/info" 2>&1
grep -q "pooling mean" "$tmp/info" && ok "info names the file's pooling" \
  || fail "info names the pooling" "$(cat "$tmp/info")"
"$mkc" init --preset tiny --seed 5 --pooling rank -o "$tmp/rank.gguf" 2>/dev/null
expect_error "a reranker's file (pooling rank): refused" \
  "mkc: error: the model's pooling is rank (a reranker): its classifier head is not something mkc runs; give --pooling mean, cls or last for an embedding of its hidden states" \
  -- embed -m "$tmp/rank.gguf" --prompt-ids "$ids" --backend cpu

# A sentence-transformers folder: modules.json names the Pooling module, whose config.json says how.
"$mkc" init --preset tiny --seed 5 -o "$tmp/st" 2>/dev/null
printf '[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pool", "type": "sentence_transformers.models.Pooling"}]\n' >"$tmp/st/modules.json"
mkdir -p "$tmp/st/1_Pool"
echo '{"word_embedding_dimension": 64, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}' \
  >"$tmp/st/1_Pool/config.json"
embed st-cls -m "$tmp/st" --prompt-ids "$ids" --backend cpu --embd-normalize -1
if [ "$rc" -eq 0 ] && grep -q "pooling cls" "$tmp/st-cls.err" &&
  python3 "$vec" close "$tmp/st-cls" "$tmp/cpu-cls" 1e-6 >/dev/null; then
  ok "a Hugging Face folder whose sentence-transformers Pooling says cls: pooled by cls"
else
  fail "sentence-transformers cls" "$(cat "$tmp/st-cls.err")"
fi
echo '{"pooling_mode_max_tokens": true}' >"$tmp/st/1_Pool/config.json"
expect_error "sentence-transformers' max pooling: refused" \
  "mkc: error: the model's sentence-transformers pooling is not mean, cls or last (max, one of the weighted means, or several at once), which mkc does not give; --pooling mean, cls or last pools otherwise" \
  -- embed -m "$tmp/st" --prompt-ids "$ids" --backend cpu
echo '[{"type": "sentence_transformers.models.Pooling", "path": "../elsewhere"}]' >"$tmp/st/modules.json"
expect_error "a Pooling module outside the folder: refused" \
  "mkc: error: $tmp/st/modules.json: the Pooling module's \"path\" is not a folder name in the model's" \
  -- embed -m "$tmp/st" --prompt-ids "$ids" --backend cpu
echo '[{"type": ' >"$tmp/st/modules.json"
expect_error "a modules.json that is not JSON: refused" \
  "mkc: error: $tmp/st/modules.json: not valid JSON" \
  -- embed -m "$tmp/st" --prompt-ids "$ids" --backend cpu

# llama.cpp's vectors (F32 matrices, an F16 cache as llama.cpp's default): within 5e-3 of the
# largest value, about 5 times the largest difference seen (gemma3-tiny's last: 1.2e-3).
fixture=tests/data/embed_llamacpp.txt
prompt=$(sed -n 's/^prompt //p' "$fixture" | tr ' ' ',')
for preset in qwen3-tiny gemma3-tiny; do
  "$mkc" init --preset "$preset" --seed 5 --type f32 -o "$tmp/$preset.gguf" 2>/dev/null
  want=$(sed -n "s/^file $preset //p" "$fixture")
  if [ "$(sha256sum <"$tmp/$preset.gguf" | cut -d' ' -f1)" != "$want" ]; then
    fail "$preset: init writes the file llama.cpp read (sha256 $want)"
    continue
  fi
  for pool in mean cls last; do
    grep "^$preset $pool " "$fixture" >"$tmp/lc"
    embed "lc-$preset-$pool" -m "$tmp/$preset.gguf" --prompt-ids "$prompt" --backend cpu \
      --kv-dtype f16 --pooling $pool --embd-normalize -1
    close "$preset, pooling $pool: llama.cpp's embedding of the fixture's prompt" \
      "$tmp/lc-$preset-$pool" "$tmp/lc" 5e-3
  done
done
# ... and a planted error fails that comparison: the last token's vector for the mean
grep "^qwen3-tiny mean " "$fixture" >"$tmp/lc"
if python3 "$vec" close "$tmp/lc-qwen3-tiny-last" "$tmp/lc" 5e-3 >/dev/null; then
  fail "planted error (last for mean): the llama.cpp comparison fails"
else
  ok "planted error (the last token's vector for the mean): the llama.cpp comparison fails"
fi

# Refusals.
expect_error "--pooling max: a usage error" \
  "mkc: error: embed: --pooling: expected mean, cls or last, got 'max'" \
  -- embed "${tiny[@]}" --pooling max
expect_error "--embd-normalize 99: a usage error" \
  "mkc: error: --embd-normalize: expected an integer in -1..64, got '99'" \
  -- embed "${tiny[@]}" --embd-normalize 99
expect_error "a text without a model file" \
  "mkc: error: embed: a text needs a model with a tokenizer (-m)" \
  -- embed --preset tiny --random-weights 5 -p hello
expect_error "no text" \
  "mkc: error: embed: give the texts as -p TEXT, -f FILE or --prompt-ids: one of them" \
  -- embed --preset tiny --random-weights 5
expect_error "a text past the context" \
  "mkc: error: text 1 is 10 tokens but the context holds 8: nothing more was run (use --ctx 10)" \
  -- embed "${tiny[@]}" --ctx 8 --backend cpu

# Texts through a tokenizer, one a line (the test data's SmolLM2).
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "texts a line each: no test data (SmolLM2)"
else
  printf 'The sky is blue.\nGrass is green.\n' >"$tmp/texts"
  embed two -m "$model" -f "$tmp/texts" --backend cpu
  embed one -m "$model" -p "Grass is green." --backend cpu
  norms=$(python3 "$vec" norms "$tmp/two" | tr '\n' ' ')
  if [ "$rc" -eq 0 ] && [ "$norms" = "1.000000 576 1.000000 576 " ] &&
    [ "$(sed -n 2p "$tmp/two")" = "$(cat "$tmp/one")" ]; then
    ok "SmolLM2: two lines, two vectors of 576 (norm 1); the second is that text's alone"
  else
    fail "SmolLM2 texts" "$norms" "$(cat "$tmp/two.err" "$tmp/one.err")"
  fi
fi

# The server: its three APIs give the command's vectors.
client=tests/serve_client.py
call() {
  python3 "$client" "$port" POST "$1" "$2" >"$tmp/ans" 2>&1
  tail -n +2 "$tmp/ans" >"$tmp/body"
  status=$(head -n 1 "$tmp/ans")
}
if start serve --preset tiny --random-weights 5 --backend cpu; then
  call /v1/embeddings "{\"input\": [$ids]}"
  python3 "$vec" answer "$tmp/body" >"$tmp/v1"
  [ "$status" = 200 ] && close "POST /v1/embeddings (token ids): the command's vector" \
    "$tmp/v1" "$tmp/default" 1e-6 || fail "/v1/embeddings" "$(cat "$tmp/ans")"
  call /v1/embeddings "{\"input\": [[$ids], [$ids]], \"encoding_format\": \"base64\"}"
  python3 "$vec" answer "$tmp/body" >"$tmp/b64"
  cat "$tmp/default" "$tmp/default" >"$tmp/twice"
  [ "$status" = 200 ] && cmp -s <(python3 "$vec" norms "$tmp/b64") <(python3 "$vec" norms "$tmp/twice") &&
    close "base64: two inputs, each the command's vector as float32" "$tmp/b64" "$tmp/twice" 1e-7 ||
    fail "base64" "$(head -c 300 "$tmp/ans")"
  call /v1/embeddings "{\"input\": [$ids], \"dimensions\": 8}"
  python3 "$vec" answer "$tmp/body" >"$tmp/dim8"
  python3 -c "
import json, math
a = json.loads(open('$tmp/default').read())[:8]; n = math.sqrt(sum(x * x for x in a))
print(json.dumps([x / n for x in a]))" >"$tmp/first8"
  [ "$status" = 200 ] && close "dimensions 8: the first 8 values, normalized again" \
    "$tmp/dim8" "$tmp/first8" 1e-6 || fail "dimensions" "$(cat "$tmp/ans")"
  call /api/embed '{"input": "hello"}'
  [ "$status" = 400 ] && grep -q "no tokenizer: send token ids to /v1/embeddings" "$tmp/body" &&
    ok "ollama's /api/embed with text on a preset: 400, token ids asked for" ||
    fail "/api/embed text without a tokenizer" "$(cat "$tmp/ans")"
  call /api/embed '{"model": "tiny"}'
  [ "$status" = 200 ] && [ "$(python3 "$client" get "$tmp/body" embeddings)" = "[]" ] &&
    ok "/api/embed without input: 200, no vectors (ollama's way to load a model)" ||
    fail "/api/embed without input" "$(cat "$tmp/ans")"
  call /api/embeddings '{"prompt": ""}'
  [ "$status" = 200 ] && [ "$(cat "$tmp/body")" = '{"embedding":[]}' ] &&
    ok "/api/embeddings with an empty prompt: an empty embedding" ||
    fail "/api/embeddings empty" "$(cat "$tmp/ans")"
  call /v1/embeddings '{"input": [3, 999]}'
  [ "$status" = 400 ] && grep -q "token 999 is outside the vocabulary" "$tmp/body" &&
    ok "a token outside the vocabulary: 400" || fail "token outside" "$(cat "$tmp/ans")"
  call /v1/embeddings "{\"input\": [$ids], \"dimensions\": 65}"
  [ "$status" = 400 ] && grep -q "dimensions 65: the model's embeddings have 64" "$tmp/body" &&
    ok "dimensions past the model's: 400" || fail "dimensions 65" "$(cat "$tmp/ans")"
  # a completion after an embedding: the session forgot what it held, the tokens are run's
  "$mkc" run --preset tiny --random-weights 5 --prompt-ids "$ids" -n 8 --backend cpu 2>/dev/null >"$tmp/run"
  call /v1/completions "{\"prompt\": [$ids], \"max_tokens\": 8}"
  call /v1/embeddings '{"input": [7, 7, 7]}'
  call /v1/completions "{\"prompt\": [$ids], \"max_tokens\": 8}"
  got=$(python3 "$client" get "$tmp/body" choices 0 text)
  [ "$status" = 200 ] && [ "$got" = "$(cat "$tmp/run")" ] &&
    ok "a completion after an embedding: run's tokens ($got)" ||
    fail "completion after an embedding" "want $(cat "$tmp/run")" "got $(cat "$tmp/ans")"
  kill -INT "$pid"
  wait "$pid"
fi
# --parallel: the inputs are sequences on the slots, beside a completion decoding there; a
# 40-token text's mean (fed in chunks) and a 10-token one's are the command's vectors.
long=$(seq -s, 1 40)
embed mean-normed --preset tiny --random-weights 5 --prompt-ids "$ids" --backend cpu --pooling mean
embed long-mean --preset tiny --random-weights 5 --prompt-ids "$long" --backend cpu --pooling mean
"$mkc" run --preset tiny --random-weights 5 --prompt-ids "$ids" -n 24 --backend cpu 2>/dev/null >"$tmp/run24"
if start parallel --preset tiny --random-weights 5 --backend cpu --parallel 2 --pooling mean; then
  python3 "$client" "$port" POST /v1/completions "{\"prompt\": [$ids], \"max_tokens\": 24}" \
    >"$tmp/beside" 2>&1 &
  beside=$!
  call /v1/embeddings "{\"input\": [[$long], [$ids], [$long]]}"
  python3 "$vec" answer "$tmp/body" >"$tmp/par"
  cat "$tmp/long-mean" "$tmp/mean-normed" "$tmp/long-mean" >"$tmp/par-want"
  [ "$status" = 200 ] && cmp -s <(python3 "$vec" norms "$tmp/par") <(python3 "$vec" norms "$tmp/par-want") &&
    close "--parallel: three inputs on the slots, pooled by mean, the command's vectors" \
      "$tmp/par" "$tmp/par-want" 1e-6 || fail "--parallel embeddings" "$(head -c 300 "$tmp/ans")"
  wait "$beside"
  tail -n +2 "$tmp/beside" >"$tmp/beside.json"
  got=$(python3 "$client" get "$tmp/beside.json" choices 0 text 2>&1)
  [ "$(head -n 1 "$tmp/beside")" = 200 ] && [ "$got" = "$(cat "$tmp/run24")" ] &&
    ok "--parallel: the completion beside the embeddings gives run's 24 tokens" ||
    fail "completion beside embeddings" "want $(cat "$tmp/run24")" "got $(cat "$tmp/beside")"
  kill -INT "$pid"
  wait "$pid"
  grep -q "POST /v1/embeddings: 3 inputs, 90 tokens, pooling mean" "$tmp/parallel.err" &&
    ok "--parallel: the server's log line for the embeddings" ||
    fail "--parallel log" "$(tail -n 5 "$tmp/parallel.err")"
fi
finish
