#!/usr/bin/env bash
# OpenAI's n on mkc serve: a request for n choices gets n answers, choice i
# what a request with n 1 and the seed + i gets, which is what mkc run
# --seed S+i gives (the oracle; run itself is checked against the reference
# elsewhere); indexes 0..n-1, each its own finish_reason, the usage counting
# every choice's tokens; streamed, each chunk names its choice, one usage
# chunk and one [DONE] at the end. On the plain server and on --parallel
# (several such requests at once). A list of prompts: each prompt's n
# answers in turn, as that prompt alone gives them; the usage counts every
# prompt. llama-server's /completion the same with its n_cmpl (or n): an
# object for each answer (a list of them), each counting its own tokens.
# Bad n and lists refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE
args=(--preset tiny --random-weights 5 --backend cpu --draft-max 2)
ids=3,1,4,1,5

# want_choices N SEED TOKENS RUN_ARGS...: run's answers for seeds SEED..SEED+N-1, JSON strings a line each
want_choices() {
  local n=$1 seed=$2 tokens=$3 i
  shift 3
  for ((i = 0; i < n; i++)); do
    "$mkc" run "${args[@]}" --prompt-ids $ids -n "$tokens" --seed $((seed + i)) "$@" 2>/dev/null \
      | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()[:-1]))'
  done
}

# check NAME BODY WANT_FILE TAIL [PATH]: the choices' texts are WANT_FILE's lines, then TAIL
check() {
  python3 "$client" "$port" choices "${5:-/v1/completions}" "$2" >"$tmp/got"
  { cat "$3"; echo "$4"; } >"$tmp/want"
  cmp -s "$tmp/got" "$tmp/want" && ok "$1" || fail "$1" "want: $(cat "$tmp/want")" "got:  $(cat "$tmp/got")"
}

want_choices 3 11 8 --temp 0.9 >"$tmp/three"
# two prompts (ids 3,1,4,1,5 and 9,2,6), n 2 each: prompt k's choice i is run's with seed 11+i
want_choices 2 11 5 --temp 0.9 >"$tmp/list"
ids=9,2,6 want_choices 2 11 5 --temp 0.9 >>"$tmp/list"
want_choices 2 11 6 --temp 0.9 --top-k 20 >"$tmp/two"
"$mkc" run "${args[@]}" --prompt-ids $ids -n 8 2>/dev/null \
  | python3 -c 'import json, sys; t = json.dumps(sys.stdin.read()[:-1]); print(t); print(t)' >"$tmp/greedy"
[ "$(sort -u "$tmp/three" | wc -l)" = 3 ] && ok "run's three seeds give three answers (the oracle tells choices apart)" \
  || fail "three different oracle answers" "$(cat "$tmp/three")"

for mode in plain parallel; do
  flags=()
  [ "$mode" = parallel ] && flags=(--parallel 2)
  start "$mode" "${args[@]}" "${flags[@]}" || continue
  check "$mode: n 3, sampled, seed 11: choice i is run --seed 11+i's" \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 8, "n": 3, "temperature": 0.9, "seed": 11}' \
    "$tmp/three" "finishes=length,length,length usage=5+24 done=0 order=0,1,2"
  check "$mode: n 2, greedy: both run's greedy answer" \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 8, "n": 2}' \
    "$tmp/greedy" "finishes=length,length usage=5+16 done=0 order=0,1"
  check "$mode: n 2 streamed with include_usage: each choice's chunks by index, one usage chunk, one [DONE]" \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 6, "n": 2, "temperature": 0.9, "top_k": 20, "seed": 11, "stream": true, "stream_options": {"include_usage": true}}' \
    "$tmp/two" "finishes=length,length usage=5+12 done=1 order=0,1"
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 4, "n": 2, "temperature": 0.9, "seed": 7}'
  [ "$(get id)" != "" ] && [ "$(get choices 0 index)" = 0 ] && [ "$(get choices 1 index)" = 1 ] \
    && [ "$(get choices 1 tokens | tr -d '[],\n' | wc -w)" = 4 ] && [ "$(get usage total_tokens)" = 13 ] \
    && ok "$mode: a whole answer's choices carry their index and tokens; total_tokens 5 + 2 x 4" \
    || fail "$mode: choices' fields" "$(head -c 500 "$tmp/ans")"
  if [ "$mode" = parallel ]; then # two requests of n 3 and n 2 at once, on two slots
    python3 "$client" "$port" choices /v1/completions \
      '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 8, "n": 3, "temperature": 0.9, "seed": 11}' >"$tmp/a" &
    a=$!
    python3 "$client" "$port" choices /v1/completions \
      '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 6, "n": 2, "temperature": 0.9, "top_k": 20, "seed": 11, "stream": true}' >"$tmp/b" &
    wait "$a" $!
    { cat "$tmp/three"; echo "finishes=length,length,length usage=5+24 done=0 order=0,1,2"; } >"$tmp/wa"
    { cat "$tmp/two"; echo "finishes=length,length usage=- done=1 order=0,1"; } >"$tmp/wb"
    cmp -s "$tmp/a" "$tmp/wa" && cmp -s "$tmp/b" "$tmp/wb" \
      && ok "parallel: two requests of n 3 and n 2 at once, each choice run's" \
      || fail "parallel: two at once" "$(cat "$tmp/a" "$tmp/b")"
  fi
  check "$mode: two prompts, n 2: each prompt's choices in turn, run's; the usage counts both prompts" \
    '{"prompt": [[3, 1, 4, 1, 5], [9, 2, 6]], "max_tokens": 5, "n": 2, "temperature": 0.9, "seed": 11}' \
    "$tmp/list" "finishes=length,length,length,length usage=8+20 done=0 order=0,1,2,3"
  check "$mode: the same streamed: chunks by index 0..3, one [DONE]" \
    '{"prompt": [[3, 1, 4, 1, 5], [9, 2, 6]], "max_tokens": 5, "n": 2, "temperature": 0.9, "seed": 11, "stream": true, "stream_options": {"include_usage": true}}' \
    "$tmp/list" "finishes=length,length,length,length usage=8+20 done=1 order=0,1,2,3"
  refused "$mode: a list of a string and ids" 400 "prompt[1]: expected a string, as prompt[0] is" \
    POST /v1/completions '{"prompt": ["a", [1]]}'
  refused "$mode: a list with an empty list" 400 "prompt[1]: expected a non-empty list of token ids" \
    POST /v1/completions '{"prompt": [[1], []]}'
  refused "$mode: a list with a token past the vocabulary" 400 "outside the vocabulary" \
    POST /v1/completions '{"prompt": [[1], [2, 999]]}'
  refused "$mode: 5 prompts, n 16" 400 "prompt and n: at most 64 answers (5 prompts, n 16)" \
    POST /v1/completions '{"prompt": [[1], [2], [3], [4], [5]], "n": 16}'
  long=$(python3 -c 'print(",".join(["7"] * 600))')
  refused "$mode: a list's second prompt past the context" 400 "prompt[1] is 600 tokens but the context holds 512" \
    POST /v1/completions "{\"prompt\": [[1], [$long]]}"
  refused "$mode: n 0" 400 "n: expected a whole number of completions, 1..16" POST /v1/completions \
    '{"prompt": [3], "n": 0}'
  refused "$mode: n 17" 400 "n: expected a whole number of completions, 1..16" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "n": 17}'
  refused "$mode: n 1.5" 400 "n: expected a whole number of completions" POST /v1/completions '{"prompt": [3], "n": 1.5}'
  refused "$mode: n a string" 400 "n: expected a whole number of completions" POST /v1/completions '{"prompt": [3], "n": "2"}'
  # llama-server's own endpoint: n_cmpl (n where it is not given), and lists of prompts; an
  # object for each answer, each with its own counts, a list of them when there are several
  check "$mode: /completion, n_cmpl 3, seed 11: answer i is run --seed 11+i's, a list of three" \
    '{"prompt": [3, 1, 4, 1, 5], "n_predict": 8, "n_cmpl": 3, "n": 5, "temperature": 0.9, "seed": 11}' \
    "$tmp/three" "finishes=limit,limit,limit usage=- done=0 order=0,1,2 counts=5+8,5+8,5+8" /completion
  check "$mode: /completion, two prompts, n 2, streamed: each answer's events by index, each its counts" \
    '{"prompt": [[3, 1, 4, 1, 5], [9, 2, 6]], "n_predict": 5, "n": 2, "temperature": 0.9, "seed": 11, "stream": true}' \
    "$tmp/list" "finishes=limit,limit,limit,limit usage=- done=0 order=0,1,2,3 counts=5+5,5+5,3+5,3+5" /completion
  call POST /completion '{"prompt": [3, 1, 4, 1, 5], "n_predict": 2, "n_cmpl": 1, "n": 2}'
  [ "$(head -c 1 "$tmp/body")" = "{" ] && [ "$(get index)" = 0 ] \
    && ok "$mode: /completion, n_cmpl 1 (n 2 not followed where n_cmpl is given): one object, not a list" \
    || fail "$mode: /completion n_cmpl 1" "$(head -c 300 "$tmp/ans")"
  refused "$mode: /completion, n_cmpl 17" 400 "n_cmpl: expected a whole number of completions, 1..16" \
    POST /completion '{"prompt": [3], "n_cmpl": 17}'
  stop "$mode"
done

# SmolLM2's chat: n 2 sampled, each choice run --chat --seed S+i's, a whole answer and a stream.
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
elif start smol -m "$model" --backend cpu; then
  : >"$tmp/chat"
  for i in 0 1; do
    "$mkc" run -m "$model" --backend cpu --no-display-prompt --chat -p "Name a fruit." -n 12 --temp 1.0 --seed $((21 + i)) 2>/dev/null \
      | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()[:-1]))' >>"$tmp/chat"
  done
  body='{"messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 12, "n": 2, "temperature": 1.0, "seed": 21'
  python3 "$client" "$port" choices /v1/chat/completions "$body}" >"$tmp/got"
  python3 "$client" "$port" choices /v1/chat/completions "$body, \"stream\": true}" >"$tmp/got2"
  # a list of two texts, greedy: each run's text for it
  : >"$tmp/texts"
  for p in "The capital of France is" "Once upon a time"; do
    "$mkc" run -m "$model" --backend cpu --no-display-prompt -p "$p" -n 8 2>/dev/null \
      | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()[:-1]))' >>"$tmp/texts"
  done
  python3 "$client" "$port" choices /v1/completions \
    '{"prompt": ["The capital of France is", "Once upon a time"], "max_tokens": 8}' >"$tmp/got3"
  [ "$(sort -u "$tmp/texts" | wc -l)" = 2 ] && cmp -s <(head -n 2 "$tmp/got3") "$tmp/texts" \
    && ok "SmolLM2: a list of two texts, each answer run's for it" \
    || fail "SmolLM2 list of texts" "run: $(cat "$tmp/texts")" "got: $(cat "$tmp/got3")"
  [ "$(sort -u "$tmp/chat" | wc -l)" = 2 ] && cmp -s <(head -n 2 "$tmp/got") "$tmp/chat" \
    && cmp -s <(head -n 2 "$tmp/got2") "$tmp/chat" \
    && ok "SmolLM2 chat, n 2 sampled: each choice run --chat --seed 21+i's, whole and streamed" \
    || fail "SmolLM2 chat n 2" "run: $(cat "$tmp/chat")" "got: $(cat "$tmp/got")" "streamed: $(cat "$tmp/got2")"
  stop smol
fi
finish
