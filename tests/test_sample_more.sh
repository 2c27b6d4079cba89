#!/usr/bin/env bash
# llama.cpp's samplers the kernel lacks (typical, top-n-sigma, XTC, dynamic temperature,
# mirostat, DRY) end to end: run, run --batch and serve (llama-server's fields, ollama's
# options, --parallel) on the test data's SmolLM2 and the cpu backend, each token chosen on the
# host (the chain itself is test_sample_chain's). The oracles
# are plain decoding and the same run another way: greedy with DRY is the same with drafts as
# without (speculation is lossless) and differs from plain greedy on a repetitive prompt;
# mirostat at temperature 0 is plain greedy (its chain is temperature first); each line of run
# --batch is what run gives that prompt alone, and so is each answer of serve; a seed repeats its
# answer. Flags out of range,
# and flags that cannot go with a host's choice, are refused with their reasons.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE

# ---- refusals that need no model ----
expect_error "--mirostat 3" "mkc: error: --mirostat: expected an integer in 0..2, got '3'" \
  -- run -m README.md -p hi --mirostat 3
expect_error "--typical 1.5" "mkc: error: --typical: expected a number in 0..1, got '1.5'" \
  -- run -m README.md -p hi --typical 1.5
long=$(printf 'x%.0s' {1..40})
expect_error "a DRY breaker of 40 bytes" \
  "mkc: error: --dry-sequence-breaker: expected 1 to 39 bytes, got '$long'" \
  -- run -m README.md -p hi --dry-sequence-breaker "$long"
expect_error "an empty DRY breaker" "mkc: error: --dry-sequence-breaker: expected a text" \
  -- run -m README.md -p hi --dry-multiplier 1 --dry-sequence-breaker ''
what="a sampler the kernel lacks (--typical, --mirostat, --dry-...)"
expect_error "mirostat with --rounds" \
  "mkc: error: run: $what chooses each token on the host: not with --rounds (a launch's rounds are the kernel's choices)" \
  -- run -m README.md -p hi --mirostat 2 --rounds 4
expect_error "a DRY breaker without a tokenizer" \
  "mkc: error: run: --dry-sequence-breaker is matched on the tokens' texts: it needs the model's tokenizer (-m)" \
  -- run --preset tiny --random-weights 1 -n 4 --dry-multiplier 0.8 --dry-sequence-breaker x
expect_error "bench: a DRY breaker without a tokenizer" \
  "mkc: error: bench: --dry-sequence-breaker is matched on the tokens' texts: it needs the model's tokenizer (-m)" \
  -- bench --preset tiny --random-weights 1 --dry-multiplier 0.8 --dry-sequence-breaker x
expect_error "--samplers out of llama.cpp's order" \
  "mkc: error: --samplers: 'top_k' is out of llama.cpp's order (penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature): mkc runs that order, leaving out the samplers not given" \
  -- run -m README.md -p hi --samplers 'temperature;top_k'
expect_error "--sampling-seq with a letter of none" \
  "mkc: error: --sampling-seq: letter 'z' is none of llama.cpp's samplers that mkc runs (edskypmxt)" \
  -- run -m README.md -p hi --sampling-seq kz
expect_error "run --batch: XTC with drafts" \
  "mkc: error: run --batch: $what chooses each token on the host, one a step on the slots: drop --draft-max" \
  -- run -m README.md --batch README.md --draft-max 2 --xtc-probability 0.5

same() { # NAME A B: files A and B hold the same answer
  if [ -s "$tmp/$2" ] && cmp -s "$tmp/$2" "$tmp/$3"; then ok "$1"; else
    fail "$1" "$2: $(head -c 200 "$tmp/$2")" "$3: $(head -c 200 "$tmp/$3")"
  fi
}

# ---- token ids (a preset, no tokenizer): every token a candidate, none with a text ----
pargs=(--preset tiny --random-weights 3 --backend cpu -n 24)
ids() { # NAME ARGS...: run's ids into $tmp/NAME, the stats line into $tmp/NAME.err
  local name=$1
  shift
  "$mkc" run "${pargs[@]}" "$@" >"$tmp/$name" 2>"$tmp/$name.err" ||
    fail "$name: run failed" "$(tail -n 3 "$tmp/$name.err")"
}
rep=5,6,7,8,5,6,7,8,5,6,7,8,5,6,7
ids ids_plain --prompt-ids $rep
ids ids_dry --prompt-ids $rep --dry-multiplier 0.8 --dry-allowed-length 1
ids ids_dry_drafts --prompt-ids $rep --dry-multiplier 0.8 --dry-allowed-length 1 --draft-max 4
same "token ids, greedy with DRY: drafts (--draft-max 4) change nothing" ids_dry ids_dry_drafts
if [ -s "$tmp/ids_dry" ] && ! cmp -s "$tmp/ids_plain" "$tmp/ids_dry"; then
  ok "token ids: DRY 0.8 changes greedy's answer to a repeating prompt"
else
  fail "token ids: DRY changed nothing" "$(cat "$tmp/ids_plain")" "$(cat "$tmp/ids_dry")"
fi
grep -q "greedy on the host (DRY 0.8); drafted [1-9]" "$tmp/ids_dry_drafts.err" &&
  ok "token ids: the samplers chosen on the host, and drafts verified there" ||
  fail "token ids: stats line" "$(cat "$tmp/ids_dry_drafts.err")"
ids ids_miro --prompt-ids $rep --mirostat 2 --temp 0
same "token ids: mirostat 2 at temperature 0 is plain greedy" ids_plain ids_miro
printf '%s\n' 3,1,4,1,5 $rep >"$tmp/id_lines"
"$mkc" run "${pargs[@]}" --batch "$tmp/id_lines" --temp 0.9 --seed 4 --typical 0.7 \
  >"$tmp/id_batch" 2>"$tmp/id_batch.err" || fail "run --batch of ids with typical" "$(tail -n 3 "$tmp/id_batch.err")"
line=0
while IFS= read -r p; do
  line=$((line + 1))
  ids id_solo --prompt-ids "$p" --temp 0.9 --seed $((4 + line - 1)) --typical 0.7
  if [ "$(sed -n "${line}p" "$tmp/id_batch")" = "$(cat "$tmp/id_solo")" ] && [ -s "$tmp/id_solo" ]; then
    ok "run --batch of ids, line $line (typical 0.7, seed 4 + $((line - 1))) = run alone"
  else
    fail "run --batch of ids, line $line" "batch: $(sed -n "${line}p" "$tmp/id_batch")" "alone: $(cat "$tmp/id_solo")"
  fi
done <"$tmp/id_lines"
"$mkc" bench --preset tiny --random-weights 3 --backend cpu -p 8 -n 8 --draft-max 2 --mirostat 2 \
  >"$tmp/bench" 2>"$tmp/bench.err"
if grep -q '| tg8 host (mirostat 2 ' "$tmp/bench" && grep -q '| tg8 host draft2 (mirostat 2 ' "$tmp/bench" &&
  grep -q '| tg8 sampled |' "$tmp/bench"; then
  ok "bench --mirostat 2: rows sampled on the host, with and without drafts, beside the kernel's"
else
  fail "bench's host rows" "$(cat "$tmp/bench" "$tmp/bench.err")"
fi

model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2 with the host's samplers: no test data (tests/data/fetch.sh)"
  finish
  exit
fi
margs=(-m "$model" --backend cpu --no-display-prompt --ctx 512 -n 24)
list="The list: apple, banana, apple, banana, apple,"
# answer NAME ARGS...: the answer into $tmp/NAME, the stats line into $tmp/NAME.err
answer() {
  local name=$1
  shift
  "$mkc" run "${margs[@]}" "$@" >"$tmp/$name" 2>"$tmp/$name.err" ||
    fail "$name: run failed" "$(tail -n 3 "$tmp/$name.err")"
}

answer plain -p "$list"
answer dry -p "$list" --dry-multiplier 0.8
answer dry_drafts -p "$list" --dry-multiplier 0.8 --draft-max 4
same "greedy with DRY: drafts (--draft-max 4) change nothing" dry dry_drafts
if ! cmp -s "$tmp/plain" "$tmp/dry"; then ok "greedy with DRY 0.8 leaves the repetition plain greedy falls into"; else
  fail "DRY changed nothing on a repetitive prompt" "$(head -c 200 "$tmp/dry")"
fi
if grep -q "greedy on the host (DRY 0.8); drafted [1-9]" "$tmp/dry_drafts.err"; then
  ok "the stats line names the samplers on the host, and drafts were verified"
else
  fail "stats line" "$(grep -o 'greedy[^;]*; drafted [0-9]*' "$tmp/dry_drafts.err")"
fi
answer miro0 -p "$list" --mirostat 2 --temp 0
same "mirostat 2 at temperature 0 is plain greedy (temperature comes first)" plain miro0
answer typ1 -p "Once upon a time" --typical 0.5 --temp 0.9 --seed 7
answer typ2 -p "Once upon a time" --typical 0.5 --temp 0.9 --seed 7
same "typical 0.5 at temperature 0.9, seed 7: the same answer twice" typ1 typ2
answer miro1 -p "Once upon a time" --mirostat 1 --temp 1 --seed 11 --draft-max 3
answer miro2 -p "Once upon a time" --mirostat 1 --temp 1 --seed 11 --draft-max 3
same "mirostat 1 with drafts, seed 11: the same answer twice" miro1 miro2
for flags in "--top-nsigma 1.5" "--xtc-probability 1 --xtc-threshold 0.1" "--dynatemp-range 0.5"; do
  # shellcheck disable=SC2086
  answer other -p "Once upon a time" --temp 0.8 --seed 5 $flags
  if [ -s "$tmp/other" ] && grep -q "sampled, seed 5 on the host (" "$tmp/other.err"; then
    ok "$flags: an answer, chosen on the host"
  else
    fail "$flags" "$(tail -n 2 "$tmp/other.err")"
  fi
done

# --samplers and --sampling-seq: the samplers left out are off (the kernel samples)
answer chain_flags -p "Once upon a time" --top-k 0 --top-p 1 --temp 0.8 --seed 3
answer chain_names -p "Once upon a time" --samplers "min_p;temperature" --temp 0.8 --seed 3
answer chain_letters -p "Once upon a time" --sampling-seq mt --temp 0.8 --seed 3
same "--samplers 'min_p;temperature' = --top-k 0 --top-p 1 (same seed)" chain_flags chain_names
same "--sampling-seq mt = the same" chain_flags chain_letters

# ---- run --batch: each line what run gives it alone ----
printf '%s\n' "$list" "One, two, one, two, one," >"$tmp/prompts"
"$mkc" run "${margs[@]}" --batch "$tmp/prompts" --dry-multiplier 0.8 --typical 0.9 \
  >"$tmp/batch" 2>"$tmp/batch.err" || fail "run --batch with DRY failed" "$(tail -n 3 "$tmp/batch.err")"
line=0
while IFS= read -r p; do
  line=$((line + 1))
  answer solo -p "$p" --dry-multiplier 0.8 --typical 0.9
  # run's closing newline off, then the batch line's escapes
  want=$(python3 -c 'import sys
t = open(sys.argv[1]).read(); t = t[:-1] if t.endswith("\n") else t
print(t.replace("\\", "\\\\").replace("\n", "\\n"))' "$tmp/solo")
  got=$(sed -n "${line}p" "$tmp/batch")
  if [ "$got" = "$want" ]; then ok "run --batch line $line (DRY, typical) = run alone"; else
    fail "run --batch line $line" "batch: $got" "alone: $want"
  fi
done <"$tmp/prompts"

# ---- serve: the server's flags, a request's fields over them ----
jstr() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
comp() { echo "{\"prompt\": $(jstr "$list"), \"max_tokens\": 24$1}"; }
if start smoldry -m "$model" --backend cpu --ctx 512 --dry-multiplier 0.8; then
  call POST /v1/completions "$(comp "")"
  [ "$status" = 200 ] && [ "$(content choices 0 text)" = "$(quoted "$tmp/dry")" ] \
    && ok "serve --dry-multiplier 0.8: a completion gets run --dry-multiplier 0.8's answer" \
    || fail "serve's DRY" "want: $(quoted "$tmp/dry")" "got: $(head -c 300 "$tmp/ans")"
  call POST /v1/completions "$(comp ', "dry_multiplier": 0')"
  [ "$status" = 200 ] && [ "$(content choices 0 text)" = "$(quoted "$tmp/plain")" ] \
    && ok "serve: a request's dry_multiplier 0 turns the server's DRY off: plain greedy" \
    || fail "serve's DRY off" "want: $(quoted "$tmp/plain")" "got: $(head -c 300 "$tmp/ans")"
  call POST /api/generate "{\"prompt\": $(jstr "$list"), \"raw\": true, \"stream\": false, \"options\": {\"num_predict\": 24, \"temperature\": 0, \"mirostat\": 2, \"mirostat_tau\": 4, \"mirostat_eta\": 0.2}}"
  [ "$(content response)" = "$(quoted "$tmp/plain")" ] \
    && ok "ollama's mirostat 2 at temperature 0 over the server's DRY: plain greedy (mirostat's chain has no DRY)" \
    || fail "ollama's mirostat" "want: $(quoted "$tmp/plain")" "got: $(head -c 300 "$tmp/ans")"
  sleep 0.2 # the log line follows the answer
  if grep "POST /api/generate" "$tmp/smoldry.err" | grep -q "options not followed"; then
    fail "ollama's mirostat, mirostat_tau, mirostat_eta are followed" "$(grep 'POST /api/generate' "$tmp/smoldry.err")"
  else
    ok "ollama's mirostat, mirostat_tau, mirostat_eta: followed (no 'options not followed')"
  fi
  call POST /completion '{"prompt": "Once upon a time", "n_predict": 24, "temperature": 0.8, "seed": 3, "samplers": ["min_p", "temperature"]}'
  [ "$(content content)" = "$(quoted "$tmp/chain_flags")" ] \
    && ok "serve, /completion's samplers [min_p, temperature] over the server's DRY: run --top-k 0 --top-p 1's answer" \
    || fail "serve samplers" "want: $(quoted "$tmp/chain_flags")" "got: $(head -c 300 "$tmp/ans")"
  call POST /completion '{"prompt": "Once upon a time", "n_predict": 2, "samplers": "tk"}'
  sleep 0.2 # the log line follows the answer
  [ "$status" = 200 ] && tail -n 1 "$tmp/smoldry.err" | grep -q "; options not followed: samplers$" \
    && ok "serve, samplers out of order (\"tk\"): answered, and named on the log line" \
    || fail "serve samplers out of order" "$(tail -n 2 "$tmp/smoldry.err")"
  refused "serve, mirostat 3" 400 "mirostat: expected a whole number in 0..2" POST /v1/completions \
    "$(comp ', "mirostat": 3')"
  refused "serve, an empty DRY breaker" 400 "dry_sequence_breakers: expected up to 16 texts of 1 to 39 bytes" \
    POST /v1/completions "$(comp ', "dry_sequence_breakers": [""]')"
  stop smoldry
fi
if start smoldrypar -m "$model" --backend cpu --ctx 512 --parallel 2; then
  python3 "$client" "$port" many /v1/completions "$(comp ', "dry_multiplier": 0.8')" "$(comp "")" >"$tmp/many" 2>&1
  { quoted "$tmp/dry" && quoted "$tmp/plain"; } >"$tmp/want"
  cmp -s "$tmp/many" "$tmp/want" \
    && ok "serve --parallel 2: a request with DRY beside a plain one, each run's answer alone" \
    || fail "serve --parallel DRY" "$(diff "$tmp/want" "$tmp/many")"
  stop smoldrypar
fi
finish
