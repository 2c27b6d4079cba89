#!/usr/bin/env bash
# mkc serve against mkc run: a completion, greedy or sampled with a seed,
# gives the tokens run gives for the same prompt and options (run's own
# tokens are checked against the reference elsewhere), also when the
# server reuses the KV of an earlier request's prefix, and streamed as
# whole; bad requests get their HTTP status and a message, and the server
# goes on; Ctrl-C stops it cleanly. With the test data's SmolLM2: chat in
# its template as run --chat and mkc chat answer, text prompts, stop
# strings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE

# ---- a preset: token ids in and out ----
args=(--preset tiny --random-weights 5 --backend cpu)
if start tiny "${args[@]}" --draft-max 4; then
  call GET /health
  [ "$status" = 200 ] && [ "$(get status)" = ok ] && ok "GET /health" || fail "GET /health" "$(cat "$tmp/ans")"
  call GET /v1/models
  [ "$(get data 0 id)" = tiny ] && [ "$(get data 0 context_length)" = 512 ] && ok "GET /v1/models: tiny, context 512" \
    || fail "GET /v1/models" "$(cat "$tmp/ans")"
  # llama-server's /props: the server's context, slots and options; no template without a tokenizer
  call GET /props
  [ "$status" = 200 ] && [ "$(get default_generation_settings n_ctx)" = 512 ] && [ "$(get total_slots)" = 1 ] \
    && [ "$(get default_generation_settings params temperature)" = 0 ] \
    && [ "$(get default_generation_settings params top_k)" = 40 ] \
    && [ "$(get default_generation_settings params dry_base)" = 1.75 ] \
    && [ "$(get default_generation_settings params speculative.n_max)" = 4 ] \
    && [ "$(get model_alias)" = tiny ] && [ "$(get chat_template)" = "" ] \
    && ok "GET /props: n_ctx 512, 1 slot, greedy with llama.cpp's defaults (top_k 40, dry_base 1.75), drafts 4" \
    || fail "GET /props" "$(head -c 600 "$tmp/ans")"
  refused "POST /apply-template without a tokenizer" 400 "has no tokenizer nor template" POST /apply-template \
    '{"messages": [{"role": "user", "content": "hi"}]}'

  # same_as_run NAME BODY RUN_ARGS...: the completion's text and tokens are run's output
  same_as_run() {
    local name=$1 body=$2
    shift 2
    want=$("$mkc" run "${args[@]}" "$@" 2>/dev/null)
    call POST /v1/completions "$body"
    local text tokens
    text=$(get choices 0 text)
    tokens=$(get choices 0 tokens | tr -d '[],')
    if [ "$status" = 200 ] && [ -n "$want" ] && [ "$text" = "$want" ] && [ "$tokens" = "$want" ]; then
      ok "$name: the tokens mkc run gives ($(echo "$want" | wc -w) tokens)"
    else
      fail "$name = run $*" "run:    $want" "server: $(head -c 400 "$tmp/ans")"
    fi
  }
  same_as_run "greedy, K = 4" '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 24}' \
    --draft-max 4 -n 24 --prompt-ids 3,1,4,1,5
  [ "$(get choices 0 finish_reason)" = length ] && [ "$(get usage prompt_tokens)" = 5 ] \
    && [ "$(get usage completion_tokens)" = 24 ] && ok "finish_reason length, usage 5 + 24 tokens" \
    || fail "finish_reason and usage" "$(cat "$tmp/body")"
  # the next prompt begins with the last one's 5 tokens: they stay in the cache
  same_as_run "greedy, a longer prompt after it" '{"prompt": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 20}' \
    --draft-max 4 -n 20 --prompt-ids 3,1,4,1,5,9,2,6
  cached=$(get usage prompt_tokens_details cached_tokens)
  [ "$cached" = 5 ] && ok "... its first 5 tokens came from the cache" || fail "5 cached tokens" "got $cached"
  same_as_run "sampled, seed 11" \
    '{"prompt": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 20, "temperature": 0.9, "top_k": 20, "seed": 11}' \
    --draft-max 4 -n 20 --prompt-ids 3,1,4,1,5,9,2,6 --temp 0.9 --top-k 20 --seed 11
  cached=$(get usage prompt_tokens_details cached_tokens)
  [ "$cached" = 7 ] && ok "... all its prompt but the last token from the cache" || fail "7 cached tokens" "got $cached"
  same_as_run "sampled, penalties" \
    '{"prompt": [7, 7, 7], "max_tokens": 16, "temperature": 1.5, "min_p": 0.1, "presence_penalty": 0.5, "repeat_penalty": 1.2, "seed": 3}' \
    --draft-max 4 -n 16 --prompt-ids 7,7,7 --temp 1.5 --min-p 0.1 --presence-penalty 0.5 --repeat-penalty 1.2 --seed 3
  # OpenAI's logit_bias: run's -l, greedy and sampled; the next request without it has none
  same_as_run "logit_bias, greedy" \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 24, "logit_bias": {"144": 0.75, "70": -100, "12": 2}}' \
    --draft-max 4 -n 24 --prompt-ids 3,1,4,1,5 -l 144+0.75 -l 70-100 -l 12+2
  same_as_run "logit_bias, sampled" \
    '{"prompt": [7, 7, 7], "max_tokens": 16, "temperature": 1.5, "seed": 3, "logit_bias": {"7": -100, "30": 1.5}}' \
    --draft-max 4 -n 16 --prompt-ids 7,7,7 --temp 1.5 --seed 3 -l 7-100 -l 30+1.5
  same_as_run "greedy after a request with logit_bias: none" '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 24}' \
    --draft-max 4 -n 24 --prompt-ids 3,1,4,1,5
  # llama.cpp's samplers the kernel lacks, on the host over token ids (none has a text)
  same_as_run "DRY and typical, sampled" \
    '{"prompt": [5, 6, 7, 5, 6, 7, 5, 6], "max_tokens": 16, "temperature": 0.9, "seed": 2, "dry_multiplier": 0.8, "dry_allowed_length": 1, "typical_p": 0.8}' \
    --draft-max 4 -n 16 --prompt-ids 5,6,7,5,6,7,5,6 --temp 0.9 --seed 2 --dry-multiplier 0.8 --dry-allowed-length 1 --typical 0.8
  call POST /v1/completions '{"prompt": [3, 1, 4], "max_tokens": 4, "dry_multiplier": 0.8, "dry_sequence_breakers": ["x"]}'
  [ "$status" = 400 ] && grep -q "dry_sequence_breakers: matched on the tokens' texts" "$tmp/ans" \
    && ok "dry_sequence_breakers on a model without a tokenizer: 400, why" \
    || fail "breakers without a tokenizer" "$status $(head -c 300 "$tmp/ans")"

  # log-probabilities: the kernel's, as run --json --logprobs prints them
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 8, "logprobs": 3}'
  "$mkc" run "${args[@]}" --draft-max 4 -n 8 --prompt-ids 3,1,4,1,5 --json --logprobs 3 >"$tmp/run.json" 2>/dev/null
  same=$(python3 "$client" logprobs "$tmp/body" "$tmp/run.json" 2>&1)
  [ "$same" = "same 8" ] && ok "logprobs 3: each token's and its top 3, as run --logprobs 3 ($same tokens)" \
    || fail "logprobs = run --logprobs" "$same" "$(head -c 300 "$tmp/ans")"
  # ... streamed: each chunk lists the tokens whose text it completes; joined, run's
  python3 "$client" "$port" stream /v1/completions \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 8, "logprobs": 3, "stream": true}' "$tmp/joined" >"$tmp/stream"
  same=$(python3 "$client" logprobs "$tmp/joined" "$tmp/run.json" 2>&1)
  chunks=$(grep -o 'logprob chunks=.*' "$tmp/stream")
  [ "$same" = "same 8" ] && [ "$chunks" = "logprob chunks=8 aligned=8" ] \
    && ok "logprobs 3, streamed: a token a chunk, joined run --logprobs 3's ($same tokens, $chunks)" \
    || fail "streamed logprobs = run --logprobs" "$same; $chunks" "$(head -c 300 "$tmp/stream")"
  python3 "$client" "$port" stream /completion \
    '{"prompt": [3, 1, 4, 1, 5], "n_predict": 8, "n_probs": 3, "stream": true}' "$tmp/joined" >"$tmp/stream"
  same=$(python3 "$client" logprobs "$tmp/joined" "$tmp/run.json" 2>&1)
  [ "$same" = "same 8" ] && ok "llama-server's /completion, n_probs 3, streamed: completion_probabilities joined = run's ($same)" \
    || fail "streamed n_probs" "$same" "$(head -c 300 "$tmp/stream")"
  refused "logprobs past 20" 400 "logprobs: expected a whole number in 0..20" POST /v1/completions \
    '{"prompt": [1], "logprobs": 21}'

  # streamed: the same text in pieces, a finish reason, then [DONE]
  python3 "$client" "$port" stream /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 24, "stream": true}' >"$tmp/stream"
  want=$("$mkc" run "${args[@]}" --draft-max 4 -n 24 --prompt-ids 3,1,4,1,5 2>/dev/null)
  if [ "$(head -n 1 "$tmp/stream")" = "$want" ] && grep -q "finish=length events=[0-9]* done=1" "$tmp/stream"; then
    ok "stream: run's tokens, finish_reason length, then [DONE] ($(grep -o 'events=[0-9]*' "$tmp/stream"))"
  else
    fail "stream" "run:    $want" "stream: $(cat "$tmp/stream")"
  fi
  # stream_options.include_usage: every chunk has "usage": null, then one with the usage and no choices
  python3 "$client" "$port" stream /v1/completions \
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 24, "stream": true, "stream_options": {"include_usage": true}}' >"$tmp/stream"
  if [ "$(head -n 1 "$tmp/stream")" = "$want" ] && grep -q "finish=length events=27 done=1 usage=5+24 choices=0 nulls=25" "$tmp/stream"; then
    ok "stream_options.include_usage: a last chunk with usage 5 + 24 and no choices, \"usage\": null before it"
  else
    fail "include_usage" "$(cat "$tmp/stream")"
  fi
  # two clients at once: the second waits its turn; each gets run's tokens for its own prompt
  python3 "$client" "$port" POST /v1/completions '{"prompt": [9, 9, 9], "max_tokens": 30}' >"$tmp/a1" &
  first=$!
  python3 "$client" "$port" POST /v1/completions '{"prompt": [4, 4], "max_tokens": 30, "stream": false}' >"$tmp/a2"
  wait "$first"
  want1=$("$mkc" run "${args[@]}" --draft-max 4 -n 30 --prompt-ids 9,9,9 2>/dev/null)
  want2=$("$mkc" run "${args[@]}" --draft-max 4 -n 30 --prompt-ids 4,4 2>/dev/null)
  got1=$(tail -n 1 "$tmp/a1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
  got2=$(tail -n 1 "$tmp/a2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
  [ "$got1" = "$want1" ] && [ "$got2" = "$want2" ] && ok "two clients at once: each gets run's tokens for its prompt" \
    || fail "two clients at once" "want: $want1 / $want2" "got:  $got1 / $got2"
  python3 "$client" "$port" drop /v1/completions '{"prompt": [1, 2], "max_tokens": 400, "stream": true}' >/dev/null
  call GET /health
  [ "$status" = 200 ] && ok "a client that hangs up mid-stream: the server goes on" || fail "after a dropped stream" "$(cat "$tmp/ans")"
  # a whole answer writes nothing until its end: the hang-up is seen while it decodes
  python3 "$client" "$port" many /v1/completions 'hangup:{"prompt": [1, 2, 3], "max_tokens": 500}' >/dev/null
  call GET /health
  line=$(grep "prompt 3 tokens" "$tmp/tiny.err" | tail -n 1)
  [[ $line == *"stopped: the client went away" ]] && [[ $line != *"generated 500 tokens"* ]] \
    && ok "a client that hangs up before a whole answer: decoding stops (${line#*generated })" \
    || fail "a hang-up before a whole answer" "$line"

  refused "not JSON" 400 "not JSON" POST /v1/completions '{"prompt": [3, 1'
  refused "not an object" 400 "not a JSON object" POST /v1/completions '[1, 2]'
  refused "no prompt" 400 "prompt: expected" POST /v1/completions '{"max_tokens": 3}'
  refused "a token past the vocabulary" 400 "outside the vocabulary (0..255)" POST /v1/completions '{"prompt": [1, 256]}'
  refused "a negative token" 400 "prompt[0]: expected a token id" POST /v1/completions '{"prompt": [-1]}'
  refused "text without a tokenizer" 400 "has no tokenizer" POST /v1/completions '{"prompt": "hello"}'
  refused "chat without a tokenizer" 400 "has no tokenizer" POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}]}'
  refused "stop without a tokenizer" 400 "stop: strings need" POST /v1/completions '{"prompt": [1], "stop": "x"}'
  refused "17 choices" 400 "n: expected a whole number of completions, 1..16" POST /v1/completions '{"prompt": [1], "n": 17}'
  refused "best_of 2" 400 "best_of: one completion is drawn per request (1)" POST /v1/completions \
    '{"prompt": [1], "best_of": 2}'
  refused "echo with logprobs" 400 "echo with logprobs: the prompt's log-probabilities are not computed" \
    POST /v1/completions '{"prompt": [1], "echo": true, "logprobs": 2}'
  # OpenAI's echo: the prompt's ids (as answers spell them), then run's answer; streamed, the
  # prompt is the first chunk
  want=$("$mkc" run "${args[@]}" -n 6 --prompt-ids 3,1,4,1,5 --draft-max 4 2>/dev/null)
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 6, "echo": true}'
  [ "$status" = 200 ] && [ "$(get choices 0 text)" = "3 1 4 1 5 $want" ] && [ "$(get usage completion_tokens)" = 6 ] \
    && ok "echo: the prompt, then the answer (3 1 4 1 5 $want)" || fail "echo" "want: 3 1 4 1 5 $want" "got: $(head -c 300 "$tmp/ans")"
  python3 "$client" "$port" many /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 6, "echo": true, "stream": true}' >"$tmp/many"
  call POST /v1/completions '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 6, "echo": true, "stream": true}'
  first=$(sed -n 's/^data: //p' "$tmp/body" | head -n 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["text"])')
  [ "$(cat "$tmp/many")" = "\"3 1 4 1 5 $want\"" ] && [ "$first" = "3 1 4 1 5 " ] \
    && ok "echo, streamed: the prompt's chunk first, then the answer's" || fail "echo streamed" "$(cat "$tmp/many")" "first: $first"
  refused "logit_bias not an object" 400 "logit_bias: expected an object" POST /v1/completions \
    '{"prompt": [1], "logit_bias": [[5, -100]]}'
  refused "logit_bias: a key that is no token id" 400 'logit_bias: "a5" is no token id' POST /v1/completions \
    '{"prompt": [1], "logit_bias": {"a5": -100}}'
  refused "logit_bias past -100..100" 400 'logit_bias["5"]: expected a number in -100..100' POST /v1/completions \
    '{"prompt": [1], "logit_bias": {"5": -101}}'
  refused "logit_bias past the vocabulary" 400 "logit_bias: token 256 is outside the vocabulary (0..255)" \
    POST /v1/completions '{"prompt": [1], "logit_bias": {"5": 1, "256": 1}}'
  refused "response_format json_object without a tokenizer" 400 "response_format: JSON output needs a model with a tokenizer" POST /v1/completions \
    '{"prompt": [1], "response_format": {"type": "json_object"}}'
  refused "stream_options without a stream" 400 "only with \"stream\": true" POST /v1/completions \
    '{"prompt": [1], "stream_options": {"include_usage": true}}'
  refused "max_tokens 0" 400 "max_tokens: expected a whole number >= 1" POST /v1/completions '{"prompt": [1], "max_tokens": 0}'
  refused "a negative temperature" 400 "temperature: expected" POST /v1/completions '{"prompt": [1], "temperature": -1}'
  refused "top_p past 1" 400 "top_p: expected" POST /v1/completions '{"prompt": [1], "top_p": 2}'
  refused "a fractional top_k" 400 "top_k: expected a whole number" POST /v1/completions '{"prompt": [1], "top_k": 2.5}'
  refused "stream not a boolean" 400 "stream: expected true or false" POST /v1/completions '{"prompt": [1], "stream": "yes"}'
  long=$(seq -s, 1 600 | sed 's/[0-9]*/1/g')
  refused "a prompt past the context" 400 "the prompt is 600 tokens but the context holds 512" \
    POST /v1/completions "{\"prompt\": [$long]}"
  refused "GET of a completion" 405 "use POST" GET /v1/completions
  refused "an unknown path" 404 "no /v1/nothing here" POST /v1/nothing '{}'
  raw "POST without Content-Length" 411 'POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n'
  raw "a chunked body" 501 'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
  raw "a body over 8 MiB" 413 'POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n'
  raw "two Content-Lengths" 400 'POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'
  raw "HTTP/2.0" 505 'GET /health HTTP/2.0\r\n\r\n'
  raw "a malformed request line" 400 'garbage\r\n\r\n'
  raw "a bare-LF request" 200 'GET /health HTTP/1.0\n\n'
  head -c 20000 /dev/zero | tr '\0' a >"$tmp/big"
  raw "a 20 KB header" 431 "GET /health HTTP/1.1\r\nX: $(cat "$tmp/big")\r\n\r\n"
  raw "a request cut short (the client hangs up)" none 'POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{"prompt"'
  call GET /health
  [ "$status" = 200 ] && ok "after every refusal the server still answers" || fail "after the refusals" "$(cat "$tmp/ans")"

  # a browser's page: from this machine it may call (CORS), from elsewhere it is refused
  printf 'OPTIONS /v1/completions HTTP/1.1\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n\r\n' >"$tmp/raw"
  python3 "$client" "$port" head "$tmp/raw" >"$tmp/head"
  grep -q '^HTTP/1.1 204' "$tmp/head" && grep -qx 'Access-Control-Allow-Origin: http://localhost:3000' "$tmp/head" \
    && grep -q '^Access-Control-Allow-Methods: .*POST' "$tmp/head" && ok "CORS preflight from http://localhost:3000: 204, allowed" \
    || fail "CORS preflight" "$(cat "$tmp/head")"
  body='{"prompt": [1], "max_tokens": 2}'
  printf 'POST /v1/completions HTTP/1.1\r\nOrigin: http://127.0.0.1:5173\r\nContent-Length: %d\r\n\r\n%s' ${#body} "$body" >"$tmp/raw"
  python3 "$client" "$port" head "$tmp/raw" >"$tmp/head"
  grep -q '^HTTP/1.1 200' "$tmp/head" && grep -qx 'Access-Control-Allow-Origin: http://127.0.0.1:5173' "$tmp/head" \
    && ok "a page from http://127.0.0.1:5173: answered, its origin allowed" || fail "CORS local page" "$(cat "$tmp/head")"
  printf 'POST /v1/completions HTTP/1.1\r\nOrigin: https://evil.example\r\nContent-Length: %d\r\n\r\n%s' ${#body} "$body" >"$tmp/raw"
  python3 "$client" "$port" raw "$tmp/raw" >"$tmp/ans"
  [ "$(head -n 1 "$tmp/ans")" = 403 ] && grep -q "not this machine's" "$tmp/ans" \
    && ok "a page from https://evil.example: 403, nothing run" || fail "CORS foreign page" "$(cat "$tmp/ans")"

  # ollama's API: what a client asks before anything else, and its error shape
  call GET /api/version
  [ "$(get version)" = "$("$mkc" --version | cut -d' ' -f2)" ] && ok "ollama GET /api/version: mkc's ($(get version))" \
    || fail "ollama /api/version" "$(cat "$tmp/ans")"
  call GET /api/tags
  [ "$(get models 0 name)" = tiny ] && ok "ollama GET /api/tags: tiny" || fail "ollama /api/tags" "$(cat "$tmp/ans")"
  call GET /api/ps
  # tiny's arena: 115328 bf16 weights (its kernel's header), and a KV cache of 65536 bf16 at 512
  [ "$(get models 0 name)" = tiny ] && [ "$(get models 0 size)" = $((115328 * 2 + 65536 * 2)) ] &&
    [ "$(get models 0 size_vram)" = 0 ] && [ "$(get models 0 context_length)" = 512 ] &&
    ok "ollama GET /api/ps: tiny loaded, $(get models 0 size) bytes, none on a GPU" ||
    fail "ollama /api/ps" "$(cat "$tmp/ans")"
  call POST /api/show '{"model": "tiny"}'
  [ "$(get model_info llama.context_length)" = 512 ] && ok "ollama POST /api/show: llama.context_length 512" \
    || fail "ollama /api/show" "$(cat "$tmp/ans")"
  call GET /
  [ "$status" = 200 ] && [ "$(cat "$tmp/body")" = "mkc is running" ] && ok "GET /: mkc is running" || fail "GET /" "$(cat "$tmp/ans")"
  call POST /api/generate '{"model": "tiny"}'
  [ "$(get done_reason)" = load ] && [ "$(get done)" = True ] && ok "ollama generate without a prompt: done, loaded" \
    || fail "ollama load" "$(cat "$tmp/ans")"
  call POST /api/chat '{"messages": [{"role": "user", "content": "hi"}]}'
  [ "$status" = 400 ] && [[ $(get error) == *"has no tokenizer"* ]] && ok "ollama chat without a tokenizer: 400 {\"error\": \"$(get error)\"}" \
    || fail "ollama error shape" "$(cat "$tmp/ans")"
  refused "tokenize without a tokenizer" 400 "tiny has no tokenizer" POST /tokenize '{"content": "a"}'
  call GET /api/chat
  [ "$status" = 405 ] && [ "$(get error)" = "use POST" ] && ok "ollama GET /api/chat: 405" || fail "ollama 405" "$(cat "$tmp/ans")"
  call POST /api/chat '{"messages": [{"role": "user", "content": "hi", "images": ["aGk="]}]}'
  [ "$status" = 400 ] && [[ $(get error) == *"reads text only"* ]] && ok "ollama images: refused" || fail "ollama images" "$(cat "$tmp/ans")"
  call POST /api/generate '{"prompt": "a", "format": "json"}'
  [ "$status" = 400 ] && [[ $(get error) == *"tokenizer"* ]] \
    && ok "ollama format json: refused without a tokenizer ($(get error))" || fail "ollama format" "$(cat "$tmp/ans")"
  call POST /api/generate '{"prompt": "a", "options": {"num_predict": 0}}'
  [ "$status" = 400 ] && [[ $(get error) == *"num_predict"* ]] && ok "ollama num_predict 0: refused" || fail "ollama num_predict" "$(cat "$tmp/ans")"
  stop tiny
fi

# ---- --parallel: requests decoded together on a slot kernel ----
# Each answer is what run gives for its prompt alone (with the same drafts):
# six requests sent before any is read, on 3 slots, so three wait their turn.
if start par "${args[@]}" --parallel 3 --draft-max 2; then
  bodies=('{"prompt": [3, 1, 4, 1, 5], "max_tokens": 60}'
    '{"prompt": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 60, "temperature": 0.9, "top_k": 20, "seed": 11}'
    '{"prompt": [9, 9, 9], "max_tokens": 60, "stream": true}'
    'hangup:{"prompt": [1, 2], "max_tokens": 400}'
    '{"prompt": [7, 7, 7], "max_tokens": 50, "temperature": 1.5, "min_p": 0.1, "presence_penalty": 0.5, "repeat_penalty": 1.2, "seed": 3}'
    '{"prompt": [4, 4], "max_tokens": 60}')
  runs=("-n 60 --prompt-ids 3,1,4,1,5"
    "-n 60 --prompt-ids 3,1,4,1,5,9,2,6 --temp 0.9 --top-k 20 --seed 11"
    "-n 60 --prompt-ids 9,9,9"
    ""
    "-n 50 --prompt-ids 7,7,7 --temp 1.5 --min-p 0.1 --presence-penalty 0.5 --repeat-penalty 1.2 --seed 3"
    "-n 60 --prompt-ids 4,4")
  python3 "$client" "$port" many /v1/completions "${bodies[@]}" >"$tmp/many" 2>&1
  : >"$tmp/want"
  for r in "${runs[@]}"; do
    if [ -z "$r" ]; then echo "(hung up)" >>"$tmp/want"; continue; fi
    # shellcheck disable=SC2086 # the run's flags, split
    echo "\"$("$mkc" run "${args[@]}" --draft-max 2 $r 2>/dev/null)\"" >>"$tmp/want"
  done
  cmp -s "$tmp/many" "$tmp/want" \
    && ok "6 requests at once on 3 slots (greedy, sampled, streamed, penalties, one hung up): each run's tokens" \
    || fail "6 requests at once = run" "$(diff "$tmp/want" "$tmp/many" | head -8)"
  # a prompt whose first 16 tokens (a full KV page) an earlier request left: they are not fed again
  long='3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4'
  call POST /v1/completions "{\"prompt\": [$long], \"max_tokens\": 8}"
  call POST /v1/completions "{\"prompt\": [$long, 6, 2], \"max_tokens\": 12}"
  want=$("$mkc" run "${args[@]}" --draft-max 2 -n 12 --prompt-ids "$(echo "$long, 6, 2" | tr -d ' ')" 2>/dev/null)
  [ "$(get choices 0 text)" = "$want" ] && [ "$(get usage prompt_tokens_details cached_tokens)" = 16 ] \
    && ok "a prompt sharing an earlier one's first page: 16 tokens cached, run's tokens" \
    || fail "a shared first page" "run: $want" "got: $(head -c 400 "$tmp/ans")"
  # each slot its own request's logit_bias (mkc_row_logit_bias through the row map): three at once
  bodies=('{"prompt": [3, 1, 4, 1, 5], "max_tokens": 30, "logit_bias": {"144": 0.75, "70": -100}}'
    '{"prompt": [3, 1, 4, 1, 5], "max_tokens": 30}'
    '{"prompt": [7, 7, 7], "max_tokens": 30, "temperature": 1.5, "seed": 3, "logit_bias": {"7": -100, "30": 1.5}}')
  runs=("-n 30 --prompt-ids 3,1,4,1,5 -l 144+0.75 -l 70-100" "-n 30 --prompt-ids 3,1,4,1,5"
    "-n 30 --prompt-ids 7,7,7 --temp 1.5 --seed 3 -l 7-100 -l 30+1.5")
  python3 "$client" "$port" many /v1/completions "${bodies[@]}" >"$tmp/many" 2>&1
  : >"$tmp/want"
  # shellcheck disable=SC2086 # the run's flags, split
  for r in "${runs[@]}"; do echo "\"$("$mkc" run "${args[@]}" --draft-max 2 $r 2>/dev/null)\"" >>"$tmp/want"; done
  cmp -s "$tmp/many" "$tmp/want" && ok "3 requests at once, two with their own logit_bias: each run's tokens" \
    || fail "3 requests with logit_bias at once = run" "$(diff "$tmp/want" "$tmp/many" | head -8)"
  call POST /v1/completions '{"prompt": [1], "logprobs": 2, "max_tokens": 3}'
  [ "$status" = 200 ] && [ "$(content choices 0 logprobs top_logprobs | python3 -c 'import json, sys
print(sorted({len(t) for t in json.load(sys.stdin)}))')" = "[2]" ] \
    && ok "--parallel: logprobs 2, each token's top 2 (test_serve_slot_pool.sh checks their values)" \
    || fail "--parallel: logprobs" "$(head -c 300 "$tmp/ans")"
  call GET /metrics
  [ "$(metric requests_total)" = 12 ] && [ "$(metric requests_processing)" = 0 ] && [ "$(metric requests_deferred)" = 0 ] \
    && ok "--parallel's /metrics: 12 requests answered (the hung-up one too), none decoding or waiting" \
    || fail "--parallel's /metrics" "$(cat "$tmp/ans")"
  stop par
  grep -q "at most 3 decoded together" "$tmp/par.err" && grep -q "stopped: the client went away" "$tmp/par.err" \
    && ok "--parallel: 3 requests decoded together; the hung-up one left its slot" \
    || fail "--parallel's log" "$(tail -n 12 "$tmp/par.err")"
fi
expect_error "serve --parallel with --rounds" \
  "mkc: error: serve: --parallel drafts by prompt lookup, -md or --draft-layers (--draft-max K): not with --rounds" \
  -- serve --preset tiny --random-weights 1 --parallel 2 --rounds 2
expect_error "serve --parallel 1 (one at a time is the default): named as spelled" \
  "mkc: error: --parallel: expected an integer in 2..64, got '1'" -- serve --preset tiny --random-weights 1 --parallel 1

# ---- API keys: every request but the liveness checks carries one ----
printf '\nfirst-key\r\n\nsecond-key\n' >"$tmp/keys"
if start keyed "${args[@]}" --api-key-file "$tmp/keys" --api-key cli-key -a gpt-4o-mini; then
  refused "no key" 401 "Invalid API Key" GET /v1/models
  type=$(get error type)
  printf 'GET /v1/models HTTP/1.1\r\n\r\n' >"$tmp/raw"
  python3 "$client" "$port" head "$tmp/raw" >"$tmp/head"
  [ "$type" = authentication_error ] && grep -q '^HTTP/1.1 401 Unauthorized' "$tmp/head" \
    && grep -qx 'WWW-Authenticate: Bearer' "$tmp/head" \
    && ok "... 401 Unauthorized, type authentication_error, WWW-Authenticate: Bearer" \
    || fail "401's shape" "type $type" "$(cat "$tmp/head")"
  AUTH="Bearer first-keyX" refused "a wrong key" 401 "Invalid API Key" POST /v1/completions '{"prompt": [1]}'
  call POST /api/generate '{"prompt": "a"}'
  [ "$status" = 401 ] && [[ $(get error) == unauthorized* ]] && ok "ollama's API without a key: 401 {\"error\": \"$(get error)\"}" \
    || fail "ollama 401" "$(cat "$tmp/ans")"
  call GET /health
  [ "$status" = 200 ] && ok "GET /health needs no key" || fail "/health with keys" "$(cat "$tmp/ans")"
  XKEY=second-key call POST /v1/messages '{"max_tokens": 2, "messages": [{"role": "user", "content": "a"}]}'
  [ "$status" = 400 ] && [[ $(get error message) == *"no tokenizer"* ]] \
    && ok "x-api-key (Anthropic's header) with a server key: let in (this model then refuses the text)" \
    || fail "x-api-key" "$(head -c 300 "$tmp/ans")"
  XKEY=second-keyX call POST /v1/messages '{"max_tokens": 2, "messages": [{"role": "user", "content": "a"}]}'
  [ "$status" = 401 ] && [ "$(get type)" = error ] && [ "$(get error type)" = authentication_error ] \
    && ok "/v1/messages with a wrong x-api-key: 401 in Anthropic's shape" || fail "x-api-key wrong" "$(cat "$tmp/ans")"
  for key in first-key second-key cli-key; do
    AUTH="Bearer $key" call POST /v1/completions '{"prompt": [3, 1, 4], "max_tokens": 5}'
    [ "$status" = 200 ] && [ "$(get choices 0 text)" = "$("$mkc" run "${args[@]}" -n 5 --prompt-ids 3,1,4 2>/dev/null)" ] \
      && ok "Bearer $key: answered, run's tokens" || fail "Bearer $key" "$(cat "$tmp/ans")"
  done
  # three answers of 5 tokens to the same 3-token prompt: 3 fed, then 2 of 3 cached twice
  AUTH="Bearer cli-key" call GET /metrics
  if [ "$status" = 200 ] && [ "$(metric requests_total)" = 3 ] && [ "$(metric tokens_predicted_total)" = 15 ] \
    && [ "$(metric prompt_tokens_total)" = 5 ] && [ "$(metric prompt_tokens_cached_total)" = 4 ] \
    && [ "$(metric requests_processing)" = 0 ] && grep -q '^# TYPE mkc_tokens_predicted_total counter$' "$tmp/body"; then
    ok "GET /metrics: 3 requests, 15 tokens predicted, 5 prompt tokens fed and 4 cached (Prometheus text)"
  else
    fail "GET /metrics" "$(cat "$tmp/ans")"
  fi
  refused "GET /metrics without the key" 401 "Invalid API Key" GET /metrics
  # -a/--alias (llama-server's): the name the API gives the model
  AUTH="Bearer cli-key" call GET /v1/models
  models=$(get data 0 id)
  AUTH="Bearer cli-key" call POST /v1/completions '{"prompt": [3], "max_tokens": 1}'
  [ "$models" = gpt-4o-mini ] && [ "$(get model)" = gpt-4o-mini ] && grep -q 'serving gpt-4o-mini ' "$tmp/keyed.err" \
    && ok "-a gpt-4o-mini: the model's name in /v1/models, the answers and the log" \
    || fail "--alias" "models: $models" "$(head -c 300 "$tmp/ans")"
  stop keyed
  grep -q "refused POST /v1/messages: a key that is not the server's" "$tmp/keyed.err" \
    && ok "the log names a wrong x-api-key as a key that is not the server's" \
    || fail "the log of a wrong x-api-key" "$(grep 'refused POST /v1/messages' "$tmp/keyed.err")"
  grep -q "refused POST /v1/completions: a key that is not the server's" "$tmp/keyed.err" \
    && ok "the log names a refused key, not the key" || fail "the log of a refused key" "$(cat "$tmp/keyed.err")"
fi
expect_error "serve: --api-key-file that is not there" "mkc: error: --api-key-file: cannot read $tmp/none" \
  -- serve --preset tiny --random-weights 1 --api-key-file "$tmp/none"
printf '\n\r\n' >"$tmp/nokeys"
expect_error "serve: --api-key-file with no key" "mkc: error: --api-key-file: no key in $tmp/nokeys" \
  -- serve --preset tiny --random-weights 1 --api-key-file "$tmp/nokeys"

# ---- the command line ----
expect_error "serve: no model" "mkc: error: serve: -m MODEL or --preset P is required" -- serve
expect_error "serve: a preset without weights" \
  "mkc: error: serve: --random-weights SEED is required with --preset" -- serve --preset tiny
expect_error "serve: a port past 65535" "mkc: error: --port: expected an integer in 0..65535, got '70000'" \
  -- serve --preset tiny --random-weights 1 --port 70000
# the resolver's words differ where there is no DNS at all: the message's start, and exit 1
"$mkc" serve --preset tiny --random-weights 1 --host no.such.host.invalid >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && [[ $(head -n 1 "$tmp/err") == "mkc: error: --host no.such.host.invalid: "* ]] \
  && ok "serve: an unknown host ($(head -n 1 "$tmp/err"))" || fail "serve: an unknown host" "exit $rc" "$(cat "$tmp/err")"
if start busy "${args[@]}"; then
  expect_error "serve: a port in use" \
    "mkc: error: listening on 127.0.0.1 port $port: Address already in use" \
    -- serve "${args[@]}" --port "$port"
  stop busy TERM # as a service manager stops it
fi

# ---- SmolLM2: text, its chat template, stop strings ----
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
elif start smollm2 -m "$model" --backend cpu; then
  margs=(-m "$model" --backend cpu --no-display-prompt)
  # llama-server's /props and /apply-template: the model's template and tokens, and the prompt
  # its template makes of a conversation (what run --chat shows before its answer)
  call GET /props
  [ "$(get eos_token)" = "<|im_end|>" ] && [ "$(get chat_template_family)" = chatml ] \
    && grep -q 'im_start' "$tmp/body" && [ "$(get total_slots)" = 1 ] \
    && ok "SmolLM2 GET /props: its GGUF template, the chatml family, eos <|im_end|>" \
    || fail "SmolLM2 /props" "$(head -c 600 "$tmp/ans")"
  shown=$("$mkc" run -m "$model" --backend cpu --chat -sys "Be brief." -p "Name a color." -n 1 2>/dev/null)
  reply=$("$mkc" run "${margs[@]}" --chat -sys "Be brief." -p "Name a color." -n 1 2>/dev/null)
  call POST /apply-template '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a color."}]}'
  want=$(printf '%s' "${shown%"$reply"}") # (both without their last newline)
  [ "$status" = 200 ] && [ -n "$reply" ] && [ "$want" != "$shown" ] && [ "$(get prompt)" = "$want" ] \
    && ok "SmolLM2 POST /apply-template: the prompt run --chat shows before its answer" \
    || fail "SmolLM2 /apply-template" "run:    $shown" "server: $(get prompt)"
  # an assistant's message last is the start of the answer (a prefill): ChatML's cue, then its
  # text as it is; the answers of the three chat APIs are run's on that text
  pre="My favourite color is"
  want=$(printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\n')
  want="$want"$'\n'
  call POST /apply-template "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Name a color.\"}, {\"role\": \"assistant\", \"content\": \"$pre\"}]}"
  [ "$status" = 200 ] && [ "$(get prompt)" = "$want$pre" ] \
    && ok "SmolLM2 POST /apply-template, the assistant's message last: the prompt, then its text to go on from" \
    || fail "SmolLM2 /apply-template prefill" "want: $want$pre" "got:  $(get prompt)"
  printf '%s' "$want$pre" >"$tmp/prefill.txt"
  wanted=$("$mkc" run "${margs[@]}" -f "$tmp/prefill.txt" -n 8 2>/dev/null)
  conv="[{\"role\": \"user\", \"content\": \"Name a color.\"}, {\"role\": \"assistant\", \"content\": \"$pre\"}]"
  call POST /v1/messages "{\"max_tokens\": 8, \"system\": \"Be brief.\", \"messages\": $conv}"
  a1=$(get content 0 text)
  call POST /v1/chat/completions "{\"max_tokens\": 8, \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, ${conv#[}}"
  a2=$(get choices 0 message content)
  call POST /api/chat "{\"stream\": false, \"options\": {\"num_predict\": 8}, \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, ${conv#[}}"
  a3=$(get message content)
  [ -n "$wanted" ] && [ "$a1" = "$wanted" ] && [ "$a2" = "$wanted" ] && [ "$a3" = "$wanted" ] \
    && ok "SmolLM2 prefill: Anthropic's, OpenAI's and ollama's chats go on from the assistant's start as run does ($wanted)" \
    || fail "SmolLM2 prefill answers" "run:       $wanted" "anthropic: $a1" "openai:    $a2" "ollama:    $a3"
  refused "SmolLM2: the start of an answer with reasoning" 400 "an assistant's message last is the start of its answer, which it goes on from: it cannot hold reasoning" \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "reasoning_content": "c"}]}'
  refused "SmolLM2: a system message last" 400 "the last message must be the user's, or the assistant's start of its answer" \
    POST /v1/chat/completions '{"messages": [{"role": "system", "content": "a"}]}'
  grep -q "chat template chatml" "$tmp/smollm2.err" && ok "SmolLM2: served with its chatml template" \
    || fail "SmolLM2: its template named" "$(cat "$tmp/smollm2.err")"
  # chat_as_run NAME BODY RUN_ARGS...: the answer is run --chat's
  chat_as_run() {
    local name=$1 body=$2
    shift 2
    want=$("$mkc" run "${margs[@]}" --chat "$@" 2>/dev/null)
    call POST /v1/chat/completions "$body"
    got=$(get choices 0 message content)
    [ "$status" = 200 ] && [ -n "$want" ] && [ "$got" = "$want" ] && ok "SmolLM2 chat, $name: run --chat's answer ($got)" \
      || fail "SmolLM2 chat, $name" "run:    $want" "server: $(head -c 400 "$tmp/ans")"
  }
  chat_as_run "one question" '{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16}' \
    -p "What is the capital of France?" -n 16
  [ "$(get choices 0 finish_reason)" = stop ] && ok "... finish_reason stop (the end-of-turn token)" \
    || fail "finish_reason stop" "$(cat "$tmp/body")"
  answer=$(get choices 0 message content)
  prompt_tokens=$(get usage prompt_tokens)
  # Anthropic's Messages API: the same conversation, its answer's shape
  call POST /v1/messages '{"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "What is the capital of France?"}]}'
  [ "$status" = 200 ] && [ "$(get content 0 text)" = "$answer" ] && [ "$(get content 0 type)" = text ] \
    && [ "$(get type)" = message ] && [ "$(get role)" = assistant ] && [ "$(get stop_reason)" = end_turn ] \
    && [ $(($(get usage input_tokens) + $(get usage cache_read_input_tokens))) = "$prompt_tokens" ] \
    && [ "$(get usage cache_read_input_tokens)" -gt 0 ] && [[ $(get id) == msg_* ]] \
    && ok "Anthropic's /v1/messages: the chat's answer, stop_reason end_turn, $prompt_tokens prompt tokens ($(get usage cache_read_input_tokens) read from the cache)" \
    || fail "/v1/messages" "want: $answer" "got:  $(head -c 400 "$tmp/ans")"
  python3 "$client" "$port" messages /v1/messages \
    '{"model": "m", "max_tokens": 16, "stream": true, "messages": [{"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]}]}' >"$tmp/am"
  [ "$(head -n 1 "$tmp/am")" = "$answer" ] \
    && grep -qx "events=message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop stop=end_turn/None usage=$prompt_tokens+[0-9]* thinking=0 problems=none" "$tmp/am" \
    && ok "/v1/messages streamed (text blocks in): named events in Anthropic's order, the same answer" \
    || fail "/v1/messages stream" "want: $answer" "got:  $(cat "$tmp/am")"
  want=$("$mkc" run "${margs[@]}" --chat -sys "Answer in one word." -p "Name a color." -n 3 2>/dev/null)
  call POST /v1/messages '{"model": "m", "max_tokens": 3, "system": [{"type": "text", "text": "Answer in one word."}], "messages": [{"role": "user", "content": "Name a color."}]}'
  [ "$(get content 0 text)" = "$want" ] && [ "$(get stop_reason)" = max_tokens ] && [ "$(get usage output_tokens)" = 3 ] \
    && ok "/v1/messages with a system field: run --chat -sys's answer, stop_reason max_tokens at 3" \
    || fail "/v1/messages system" "want: $want" "got:  $(head -c 400 "$tmp/ans")"
  stop_at=$(echo "$answer" | awk '{print $NF}' | tr -d '.')
  call POST /v1/messages "{\"model\": \"m\", \"max_tokens\": 16, \"stop_sequences\": [\"$stop_at\"], \"messages\": [{\"role\": \"user\", \"content\": \"What is the capital of France?\"}]}"
  [ "$(get stop_reason)" = stop_sequence ] && [ "$(get stop_sequence)" = "$stop_at" ] \
    && [ "$(get content 0 text)" = "${answer%%"$stop_at"*}" ] \
    && ok "/v1/messages stop_sequences [\"$stop_at\"]: the text before it, stop_reason stop_sequence" \
    || fail "/v1/messages stop_sequences" "$(head -c 400 "$tmp/ans")"
  call POST /v1/messages '{"model": "m", "messages": [{"role": "user", "content": "a"}]}'
  [ "$status" = 400 ] && [ "$(get type)" = error ] && [ "$(get error type)" = invalid_request_error ] \
    && [[ $(get error message) == "max_tokens: required"* ]] \
    && ok "/v1/messages without max_tokens: 400 in Anthropic's error shape ($(get error message))" \
    || fail "/v1/messages error shape" "$(head -c 300 "$tmp/ans")"
  refused "/v1/messages with tools, on chatml (which has none)" 400 "tools: the chatml chat template has no tools" POST /v1/messages \
    '{"max_tokens": 4, "tools": [{"name": "f", "input_schema": {}}], "messages": [{"role": "user", "content": "a"}]}'
  refused "/v1/messages with an image block" 400 "only text, thinking, tool_use and tool_result blocks" POST /v1/messages \
    '{"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}'
  refused "/v1/messages: a template's error names the client's message, not the system's place" 400 \
    "messages[1]: role 'user' where 'assistant' was expected" POST /v1/messages \
    '{"max_tokens": 4, "system": "s", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}'
  refused "/v1/messages with a system role in messages" 400 "system is its own field" POST /v1/messages \
    '{"max_tokens": 4, "messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]}'
  # a second turn, as mkc chat answers it (its conversation keeps the first turn's K/V)
  printf 'What is the capital of France?\nAnd of Italy?\n' | "$mkc" chat -m "$model" --backend cpu -n 16 >"$tmp/chat" 2>/dev/null
  want=$(sed -n 2p "$tmp/chat")
  body=$(python3 -c 'import json,sys; print(json.dumps({"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": sys.argv[1]}, {"role": "user", "content": "And of Italy?"}], "max_tokens": 16}))' "$answer")
  call POST /v1/chat/completions "$body"
  got=$(get choices 0 message content)
  cached=$(get usage prompt_tokens_details cached_tokens)
  [ -n "$want" ] && [ "$got" = "$want" ] && [ "${cached:-0}" -gt 16 ] \
    && ok "SmolLM2 chat, a second turn: mkc chat's answer ($got), $cached prompt tokens from the cache" \
    || fail "SmolLM2 chat, second turn" "chat:   $want" "server: $(head -c 400 "$tmp/ans")"
  # Anthropic's second turn, the first answer's blocks given back (a thinking block among them, as
  # a reasoning model's answer has one; chatml writes no reasoning): mkc chat's second answer, and
  # input_tokens + cache_read_input_tokens = the prompt's tokens (/apply-template, /tokenize)
  printf 'What is the capital of France?\nAnd of Spain?\n' | "$mkc" chat -m "$model" --backend cpu -n 16 >"$tmp/chat2" 2>/dev/null
  want=$(sed -n 2p "$tmp/chat2")
  msgs=$(python3 -c 'import json,sys; print(json.dumps([{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "Easy.", "signature": ""}, {"type": "text", "text": sys.argv[1]}]}, {"role": "user", "content": "And of Spain?"}]))' "$answer")
  call POST /apply-template "{\"messages\": [{\"role\": \"user\", \"content\": \"What is the capital of France?\"}, {\"role\": \"assistant\", \"content\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$answer")}, {\"role\": \"user\", \"content\": \"And of Spain?\"}]}"
  call POST /tokenize "{\"content\": $(content prompt), \"add_special\": true}"
  n_tokens=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tokens"]))' "$tmp/body" 2>/dev/null)
  call POST /v1/messages "{\"max_tokens\": 16, \"messages\": $msgs}"
  total=$(python3 -c 'import json,sys; u = json.load(open(sys.argv[1]))["usage"]; print(u["input_tokens"] + u["cache_read_input_tokens"], u["cache_read_input_tokens"])' "$tmp/body" 2>/dev/null)
  [ "$status" = 200 ] && [ -n "$want" ] && [ "$(get content 0 text)" = "$want" ] \
    && [ "${total% *}" = "$n_tokens" ] && [ "${total#* }" -gt 0 ] \
    && ok "/v1/messages, a second turn with a thinking block given back: mkc chat's answer; input + cache read = the prompt's $n_tokens tokens (cached ${total#* })" \
    || fail "/v1/messages second turn" "want: $want ($n_tokens tokens)" "got:  $(head -c 400 "$tmp/ans") ($total)"
  # count_tokens: the same prompt's length, with no max_tokens and nothing generated
  call POST /v1/messages/count_tokens "{\"messages\": $msgs}"
  [ "$status" = 200 ] && [ "$(get input_tokens)" = "$n_tokens" ] \
    && ok "/v1/messages/count_tokens: the prompt's $n_tokens tokens (/apply-template, /tokenize)" \
    || fail "/v1/messages/count_tokens" "want $n_tokens" "got: $(head -c 300 "$tmp/ans")"
  call GET /v1/messages/count_tokens
  [ "$status" = 405 ] && [ "$(get type)" = error ] && ok "GET /v1/messages/count_tokens: 405 in Anthropic's shape" \
    || fail "count_tokens GET" "$(head -c 300 "$tmp/ans")"
  refused "/v1/messages/count_tokens without messages" 400 "messages: expected a non-empty list" POST /v1/messages/count_tokens '{}'
  call POST /v1/messages '{"max_tokens": 2, "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": [{"role": "user", "content": "Hi"}]}'
  sleep 0.2
  [ "$status" = 200 ] && grep -q "POST /v1/messages: .*; options not followed: thinking$" "$tmp/smollm2.err" \
    && ok "/v1/messages, thinking enabled on a model that does not reason: answered, named on the log line" \
    || fail "Anthropic thinking on chatml" "$(head -c 200 "$tmp/ans")" "$(grep 'POST /v1/messages' "$tmp/smollm2.err" | tail -n 1)"
  chat_as_run "a system message, content as text parts" \
    '{"messages": [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": [{"type": "text", "text": "Name a "}, {"type": "text", "text": "color."}]}], "max_tokens": 12}' \
    -sys "Answer in one word." -p "Name a color." -n 12
  python3 "$client" "$port" stream /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16, "stream": true}' >"$tmp/stream"
  [ "$(head -n 1 "$tmp/stream")" = "$answer" ] && grep -q "finish=stop events=[0-9]* done=1" "$tmp/stream" \
    && ok "SmolLM2 chat streamed: the same answer in pieces" || fail "SmolLM2 chat stream" "want: $answer" "got:  $(cat "$tmp/stream")"
  # a question not asked before: the server feeds the part past its cached prefix as a tiled chunk,
  # whose rows are what run's one chunk gives them; a prompt held whole would be fed again as its
  # last token alone, on the decode path, whose sums differ from the tiles' in the last bits
  call POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "What is the capital of Spain?"}], "max_tokens": 16, "logprobs": true, "top_logprobs": 2}'
  "$mkc" run "${margs[@]}" --chat -p "What is the capital of Spain?" -n 16 --json --logprobs 2 >"$tmp/run.json" 2>/dev/null
  same=$(python3 "$client" logprobs "$tmp/body" "$tmp/run.json" 2>&1)
  [[ $same == "same "* ]] && ok "SmolLM2 chat logprobs: each token's and its top 2, as run --chat --logprobs 2 ($same tokens)" \
    || fail "SmolLM2 chat logprobs = run" "$same" "$(head -c 300 "$tmp/ans")"
  # streamed (another question, for the same reason)
  python3 "$client" "$port" stream /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "What is the capital of Italy?"}], "max_tokens": 16, "logprobs": true, "top_logprobs": 2, "stream": true}' \
    "$tmp/joined" >"$tmp/stream"
  "$mkc" run "${margs[@]}" --chat -p "What is the capital of Italy?" -n 16 --json --logprobs 2 >"$tmp/run.json" 2>/dev/null
  same=$(python3 "$client" logprobs "$tmp/joined" "$tmp/run.json" 2>&1)
  [[ $same == "same "* ]] && ok "SmolLM2 chat logprobs, streamed: the chunks' joined = run --chat --logprobs 2 ($same tokens)" \
    || fail "SmolLM2 streamed chat logprobs = run" "$same" "$(head -c 300 "$tmp/stream")"
  refused "SmolLM2: top_logprobs without logprobs" 400 "top_logprobs: needs" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2}'
  refused "SmolLM2: two user messages in a row" 400 "messages[1]: role 'user' where 'assistant' was expected" \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}'
  refused "SmolLM2: a tool message" 400 "messages[0]: a tool result: the chatml chat template has no tools" \
    POST /v1/chat/completions '{"messages": [{"role": "tool", "content": "a"}]}'
  refused "SmolLM2: tools (chatml has none)" 400 \
    "tools: the chatml chat template has no tools (qwen2.5's, qwen3's, llama3.1's and gpt-oss's have)" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function", "function": {"name": "f"}}]}'
  refused "SmolLM2: a forced call" 400 "tool_choice: \"auto\" or \"none\"" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"}'
  refused "SmolLM2: an image part" 400 "only text parts" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}'
  refused "SmolLM2: a reasoning effort (chatml has none)" 400 \
    "reasoning_effort 'high': the chatml chat template has none to set (gpt-oss's has)" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "reasoning_effort": "high"}'
  refused_ollama() { # NAME PHRASE PATH BODY: a 400 in ollama's shape holding PHRASE
    call POST "$3" "$4"
    [ "$status" = 400 ] && [[ $(get error) == *"$2"* ]] && ok "$1: 400 ($(get error))" || fail "$1" "$(head -c 300 "$tmp/ans")"
  }
  refused_ollama "ollama's generate with a suffix, no FIM markers" "suffix: this model lacks fill-in-the-middle markers (prefix, suffix, middle), so it cannot complete between a prompt and a suffix" \
    /api/generate '{"prompt": "def f(", "suffix": "return x", "stream": false}'
  refused "OpenAI's completion with a suffix, no FIM markers" 400 "suffix: this model lacks fill-in-the-middle markers (prefix, suffix, middle)" POST /v1/completions \
    '{"prompt": "def f(", "suffix": "return x"}'
  refused_ollama "ollama's generate with a Go template" "template: mkc does not render ollama's Go templates" \
    /api/generate '{"prompt": "a", "template": "{{ .Prompt }}", "stream": false}'
  call POST /api/chat '{"messages": [{"role": "user", "content": "a"}], "think": true, "stream": false}'
  [ "$status" = 400 ] && [ "$(get error)" = "think: the chatml chat template does not reason" ] \
    && ok "SmolLM2: ollama's think true refused (chatml does not reason)" || fail "ollama think true" "$(cat "$tmp/ans")"
  refused "SmolLM2: enable_thinking true (chatml does not reason)" 400 \
    "chat_template_kwargs.enable_thinking: the chatml chat template does not reason" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "a"}], "chat_template_kwargs": {"enable_thinking": true}}'
  refused "SmolLM2: a reasoning effort on a completion" 400 \
    "reasoning_effort: the prompt is not put in a chat template (a chat request's is)" POST /v1/completions \
    '{"prompt": "a", "reasoning_effort": "low"}'

  # ollama's chat and generate: a stream of lines by default
  python3 "$client" "$port" ndjson /api/chat \
    '{"model": "m", "messages": [{"role": "user", "content": "What is the capital of France?"}], "options": {"num_predict": 16}}' >"$tmp/nd"
  [ "$(head -n 1 "$tmp/nd")" = "$answer" ] && grep -q "done_reason=stop lines=[0-9]* eval_count=[0-9]* done=True" "$tmp/nd" \
    && ok "ollama /api/chat streamed: run --chat's answer, then done (stop, $(grep -o 'eval_count=[0-9]*' "$tmp/nd"))" \
    || fail "ollama chat stream" "want: $answer" "got:  $(cat "$tmp/nd")"
  call POST /api/generate '{"model": "m", "prompt": "What is the capital of France?", "stream": false, "options": {"num_predict": 16}}'
  [ "$(get response)" = "$answer" ] && [ "$(get done_reason)" = stop ] && ok "ollama /api/generate in the template: run --chat's answer" \
    || fail "ollama generate templated" "want: $answer" "got:  $(head -c 400 "$tmp/ans")"
  get context >"$tmp/context"
  call POST /api/generate "{\"prompt\": \"And of Italy?\", \"stream\": false, \"context\": $(cat "$tmp/context")}"
  want=$(sed -n 2p "$tmp/chat")
  [ -n "$want" ] && [ "$(get response)" = "$want" ] && ok "ollama /api/generate with the context it returned: mkc chat's second answer" \
    || fail "ollama generate context" "want: $want" "got:  $(head -c 400 "$tmp/ans")"
  want=$("$mkc" run "${margs[@]}" -p "Once upon a time" -n 12 --temp 0.9 --seed 21 --top-k 30 --typical 0.7 2>/dev/null)
  call POST /api/generate '{"prompt": "Once upon a time", "raw": true, "stream": false, "options": {"num_predict": 12, "temperature": 0.9, "seed": 21, "top_k": 30, "typical_p": 0.7, "num_ctx": 1000000, "tfs_z": 0.95}}'
  [ "$(get response)" = "$want" ] && [ "$(get done_reason)" = length ] && [ "$(get eval_count)" = 12 ] \
    && ok "ollama /api/generate raw, sampled with options (typical_p on the host): run's text ($want)" \
    || fail "ollama generate raw sampled" "want: $want" "got:  $(head -c 400 "$tmp/ans")"
  sleep 0.2 # the log line follows the answer
  grep -q "POST /api/generate: .*; options not followed: tfs_z, num_ctx$" "$tmp/smollm2.err" \
    && ok "ollama options mkc does not follow: named in the request's log line (num_ctx past the server's context, tfs_z)" \
    || fail "ollama unfollowed options" "$(grep 'POST /api/generate' "$tmp/smollm2.err" | tail -n 2)"
  # ollama's logprobs (true) and top_logprobs: its list of tokens, whole and streamed
  "$mkc" run "${margs[@]}" -p "The sky over the sea" -n 8 --json --logprobs 2 >"$tmp/run.json" 2>/dev/null
  call POST /api/generate '{"prompt": "The sky over the sea", "raw": true, "stream": false, "logprobs": true, "top_logprobs": 2, "options": {"num_predict": 8}}'
  same=$(python3 "$client" logprobs "$tmp/body" "$tmp/run.json" 2>&1)
  [ "$same" = "same 8" ] && ok "ollama /api/generate, logprobs with top_logprobs 2: run --logprobs 2's ($same tokens)" \
    || fail "ollama logprobs = run" "$same" "$(head -c 300 "$tmp/ans")"
  "$mkc" run "${margs[@]}" -p "The river by the town" -n 8 --json --logprobs 2 >"$tmp/run.json" 2>/dev/null
  python3 "$client" "$port" ndjson /api/generate \
    '{"prompt": "The river by the town", "raw": true, "logprobs": true, "top_logprobs": 2, "options": {"num_predict": 8}}' \
    "$tmp/joined" >"$tmp/nd"
  same=$(python3 "$client" logprobs "$tmp/joined" "$tmp/run.json" 2>&1)
  [ "$same" = "same 8" ] && ok "ollama /api/generate streamed with logprobs: the lines' joined = run's ($same tokens)" \
    || fail "ollama streamed logprobs = run" "$same" "$(head -c 300 "$tmp/nd")"

  # llama-server's own /completion: run's text in its answer's shape
  want=$("$mkc" run "${margs[@]}" -p "The capital of France is" -n 10 2>/dev/null)
  call POST /completion '{"prompt": "The capital of France is", "n_predict": 10}'
  [ "$status" = 200 ] && [ "$(get content)" = "$want" ] && [ "$(get stop)" = True ] \
    && [ "$(get stop_type)" = limit ] && [ "$(get tokens_predicted)" = 10 ] \
    && [ "$(get timings predicted_n)" = 10 ] && [ "$(get prompt)" = "The capital of France is" ] \
    && ok "llama-server's /completion: run's text, stop_type limit, tokens_predicted and timings" \
    || fail "/completion" "want: $want" "got:  $(head -c 400 "$tmp/ans")"
  python3 "$client" "$port" stream /completions \
    '{"prompt": "The capital of France is", "n_predict": 10, "stream": true}' >"$tmp/nstream"
  printf '%s\nfinish=limit events=11 done=0\n' "$want" | cmp -s - "$tmp/nstream" \
    && ok "llama-server's /completions streamed: the same text in 10 events and a last one, no [DONE]" \
    || fail "/completions stream" "want: $want" "got:  $(cat "$tmp/nstream")"
  word=$(printf '%s' "$want" | tr -s ' \n' '\n\n' | sed -n 3p) # the answer's second word
  before=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1].split(sys.argv[2])[0]))' "$want" "$word")
  call POST /completion "{\"prompt\": \"The capital of France is\", \"n_predict\": 10, \"stop\": [\"$word\"]}"
  [ -n "$word" ] && [ "$(get stop_type)" = word ] && [ "$(get stopping_word)" = "$word" ] \
    && [ "$(content content)" = "$before" ] \
    && ok "/completion with a stop string: stop_type word, stopping_word '$word', the text before it" \
    || fail "/completion stop ($word)" "$(head -c 400 "$tmp/ans")"
  call POST /v1/completions '{"prompt": "The capital of France is", "max_tokens": 4, "logprobs": 2}'
  get choices 0 logprobs token_logprobs >"$tmp/oai_lp"
  call POST /completion '{"prompt": "The capital of France is", "n_predict": 4, "n_probs": 2, "seed": -1}'
  python3 -c 'import json, sys
a = json.load(open(sys.argv[1])); o = json.load(open(sys.argv[2]))
cp = a["completion_probabilities"]
ok = len(cp) == 4 and all(len(t["top_logprobs"]) == 2 for t in cp) and [t["logprob"] for t in cp] == o
sys.exit(0 if ok else 1)' "$tmp/body" "$tmp/oai_lp" \
    && ok "/completion's n_probs 2: completion_probabilities, each with 2 top_logprobs, /v1/completions' logprobs" \
    || fail "/completion n_probs" "$(head -c 400 "$tmp/ans")" "$(cat "$tmp/oai_lp")"
  first=$(get tokens 0)
  want=$("$mkc" run "${margs[@]}" -p "The capital of France is" -n 4 -l "$first-inf" 2>/dev/null)
  call POST /completion "{\"prompt\": \"The capital of France is\", \"n_predict\": 4, \"logit_bias\": [[$first, false]]}"
  [ "$status" = 200 ] && [ "$(get content)" = "$want" ] && [ "$(get tokens 0)" != "$first" ] \
    && ok "/completion's logit_bias [[$first, false]]: the token banned, run -l $first-inf's text" \
    || fail "/completion logit_bias" "want: $want" "got: $(head -c 300 "$tmp/ans")"
  turn='"<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n"'
  call POST /completion "{\"prompt\": $turn, \"n_predict\": 40}"
  n_eos=$(get tokens_predicted)
  [ "$(get stop_type)" = eos ] && [ "$n_eos" -lt 40 ] \
    && ok "/completion of a chat turn: stop_type eos after $n_eos tokens" \
    || fail "/completion eos" "$(head -c 300 "$tmp/ans")"
  call POST /completion "{\"prompt\": $turn, \"n_predict\": 40, \"ignore_eos\": true, \"samplers\": [\"temperature\", \"top_k\"], \"n_indent\": 4}"
  [ "$(get stop_type)" = limit ] && [ "$(get tokens_predicted)" = 40 ] \
    && ok "/completion with ignore_eos: the end-of-generation tokens banned, 40 tokens (limit)" \
    || fail "/completion ignore_eos" "$(head -c 300 "$tmp/ans")"
  sleep 0.2 # the log line follows the answer
  grep -q "POST /completion: .*; options not followed: samplers, n_indent$" "$tmp/smollm2.err" \
    && ok "llama-server's fields mkc does not follow: named on the request's log line (samplers out of order, n_indent)" \
    || fail "/completion unfollowed fields" "$(grep 'POST /completion' "$tmp/smollm2.err" | tail -n 2)"
  refused "/completion with n_predict 0" 400 "n_predict: expected -1 (no bound) or a whole number >= 1" \
    POST /completion '{"prompt": "a", "n_predict": 0}'
  refused "/completion with a logit_bias pair of one" 400 "logit_bias[0]: expected [token id, bias]" \
    POST /completion '{"prompt": "a", "logit_bias": [[5]]}'

  # llama-server's /tokenize and /detokenize: the prompt's tokens, and back
  call POST /tokenize '{"content": "The quick brown fox", "add_special": true}'
  ids=$(get tokens)
  call POST /v1/completions '{"prompt": "The quick brown fox", "max_tokens": 1}'
  n_prompt=$(get usage prompt_tokens)
  call POST /detokenize "{\"tokens\": $ids}"
  [ "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$ids")" = "$n_prompt" ] \
    && [ "$(get content)" = "The quick brown fox" ] \
    && ok "SmolLM2 /tokenize: the completion's $n_prompt prompt tokens ($ids); /detokenize gives the text back" \
    || fail "SmolLM2 tokenize" "tokens $ids, prompt_tokens $n_prompt" "$(cat "$tmp/ans")"
  call POST /tokenize '{"content": "a<|im_start|>b", "with_pieces": true}'
  [ "$(get tokens 1 piece)" = "<|im_start|>" ] && ok "SmolLM2 /tokenize: a special token's text is read as it ($(get tokens 1 id))" \
    || fail "SmolLM2 tokenize special" "$(cat "$tmp/ans")"

  full=$("$mkc" run "${margs[@]}" -p "The quick brown fox" -n 20 2>/dev/null)
  call POST /v1/completions '{"prompt": "The quick brown fox", "max_tokens": 20}'
  [ "$(get choices 0 text)" = "$full" ] && ok "SmolLM2 completion: run's text ($full)" \
    || fail "SmolLM2 completion" "run:    $full" "server: $(head -c 400 "$tmp/ans")"
  call POST /v1/completions '{"prompt": "The quick brown fox", "max_tokens": 20, "stop": ["zzz", "brown"]}'
  want=${full%%brown*}
  [ "$want" != "$full" ] && [ "$(get choices 0 text)" = "$want" ] && [ "$(get choices 0 finish_reason)" = stop ] \
    && ok "SmolLM2 stop string: the text up to it (\"$want\"), finish_reason stop" \
    || fail "SmolLM2 stop string" "want: $want" "got:  $(head -c 400 "$tmp/ans")"
  python3 "$client" "$port" stream /v1/completions \
    '{"prompt": "The quick brown fox", "max_tokens": 20, "stop": "brown", "stream": true}' >"$tmp/stream"
  [ "$(head -n 1 "$tmp/stream")" = "$want" ] && grep -q "finish=stop" "$tmp/stream" \
    && ok "SmolLM2 stop string, streamed: nothing of it goes out" || fail "SmolLM2 stop stream" "want: $want" "got:  $(cat "$tmp/stream")"
  # with logprobs: the text the stop string held back goes out with its tokens' in the last chunk
  call POST /v1/completions '{"prompt": "The quick brown fox", "max_tokens": 20, "stop": "brown", "logprobs": 2}'
  python3 "$client" "$port" stream /v1/completions \
    '{"prompt": "The quick brown fox", "max_tokens": 20, "stop": "brown", "logprobs": 2, "stream": true}' \
    "$tmp/joined" >"$tmp/stream"
  n_lp=$(python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))["choices"][0]["logprobs"]
b = json.load(open(sys.argv[2]))["choices"][0]["logprobs"]
print(len(a["tokens"]) if a == b and a["tokens"] else "differ: %s / %s" % (a, b))' "$tmp/body" "$tmp/joined" 2>&1)
  [[ $n_lp =~ ^[0-9]+$ ]] && [ "$(head -n 1 "$tmp/stream")" = "$want" ] \
    && ok "SmolLM2 stop string, streamed with logprobs 2: the chunks' joined = the whole answer's ($n_lp tokens, the stop string's too)" \
    || fail "SmolLM2 stop stream logprobs" "$n_lp" "$(cat "$tmp/stream")"
  want=$("$mkc" run -m "$model" --backend cpu --no-display-prompt -p "The capital of France is" -n 6 2>/dev/null)
  call POST /v1/completions '{"prompt": "The capital of France is", "max_tokens": 6, "echo": true}'
  [ "$status" = 200 ] && [ "$(content choices 0 text)" = "$(python3 -c 'import json, sys; print(json.dumps("The capital of France is" + sys.argv[1]))' "$want")" ] \
    && ok "SmolLM2 echo: the prompt as given, then run's answer" || fail "SmolLM2 echo" "want: $want" "got: $(head -c 300 "$tmp/ans")"
  call POST /infill '{"input_prefix": "def f():", "input_suffix": "\n"}'
  [ "$status" = 501 ] \
    && [ "$(get error message)" = "Infill is not supported by this model: it lacks fill-in-the-middle markers: prefix, suffix, middle" ] \
    && ok "SmolLM2 /infill: 501, no FIM markers ($(get error message))" || fail "SmolLM2 /infill refused" "$(head -c 300 "$tmp/ans")"
  stop smollm2
fi

# ---- /infill: random weights with StarCoder's tokenizer (mkc init --vocab; FIM markers 1, 3, 2) ----
# The oracle lays out the prompt as llama-server's format_prompt_infill does, in Python, from
# each part's tokens (POST /tokenize): no repository markers in StarCoder's vocabulary, so each
# extra chunk follows a snippet line; a context of 256 makes a batch of 128, so the prefix keeps
# its last 96 tokens, the suffix its first 32 - 2 - the prompt's, the chunks their last
# 256 - 128 - 2 * 8; the answer must be run's on those ids.
vocab=${MKC_TEST_DATA:-}/vocab/ggml-vocab-starcoder.gguf
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$vocab" ] && "$mkc" init --preset tiny --seed 4 --vocab "$vocab" -o "$tmp/sc.gguf" 2>"$tmp/err" \
  && start fim -m "$tmp/sc.gguf" --backend cpu --ctx 256; then
  python3 - "$port" >"$tmp/infill.json" <<'PY'
import http.client, json, sys
port = int(sys.argv[1])
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", path, body=json.dumps(body))
    return json.loads(c.getresponse().read())
tok = lambda s: post("/tokenize", {"content": s, "add_special": False})["tokens"]
req = {"input_prefix": "import sys\n" + "x = x + 1\n" * 40 + "def main(",
       "input_suffix": "):\n    pass\n" + "y = 2\n" * 30,
       "input_extra": [{"filename": "a.py", "text": "A = 1\n" * 30}, {"text": "B = [1, 2]\n" * 20}],
       "prompt": "argv", "n_predict": 8}
n_ctx, n_batch, n_predict = 256, 128, 8
extra = []
for chunk in req["input_extra"]:
    extra += tok("\n\n--- snippet ---\n\n") + tok(chunk["text"])
prefix, suffix, prompt = tok(req["input_prefix"]), tok(req["input_suffix"]), tok(req["prompt"])
n_prefix = min(len(prefix), 3 * (n_batch // 4))
n_suffix = min(len(suffix), max(0, n_batch // 4 - (2 + len(prompt))))
n_extra = min(max(0, n_ctx - n_batch - 2 * n_predict), len(extra))
ids = extra[len(extra) - n_extra:] + [1] + prefix[len(prefix) - n_prefix:] + prompt + [3] + suffix[:n_suffix] + [2]
assert len(prefix) > n_prefix and len(suffix) > n_suffix > 0 and len(extra) > n_extra, "every part is cut"
print(json.dumps({"request": req, "ids": ids, "answer": post("/infill", req)}))
PY
  want_ids=$(python3 -c 'import json, sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$tmp/infill.json" 2>/dev/null)
  n_want=$(echo "$want_ids" | tr ',' '\n' | grep -c .)
  "$mkc" run -m "$tmp/sc.gguf" --backend cpu --ctx 256 --prompt-ids "$want_ids" -n 8 2>/dev/null >"$tmp/run_ids"
  got=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["answer"]
print(" ".join(map(str, a["tokens"])), a["tokens_evaluated"], a["stop_type"])' "$tmp/infill.json" 2>&1)
  [ -n "$want_ids" ] && [ "$got" = "$(cat "$tmp/run_ids") $n_want limit" ] \
    && ok "/infill: prefix, prompt, suffix and two files cut and laid out as llama-server does ($n_want tokens); run's answer on them" \
    || fail "/infill layout" "want: $(cat "$tmp/run_ids") $n_want limit" "got:  $got" "$(head -c 300 "$tmp/infill.json")"
  # suffix_ids [spm]: the ids of the completion below's prompt and suffix around the markers
  # (<pre> prompt <suf> suffix <mid>; spm: <suf> suffix <pre> prompt <mid>), by /tokenize
  suffix_ids() {
    python3 - "$port" "${1:-psm}" <<'PY'
import http.client, json, sys
def tok(s):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=300)
    c.request("POST", "/tokenize", body=json.dumps({"content": s, "add_special": False}))
    return json.loads(c.getresponse().read())["tokens"]
pre, suf = [1] + tok("def add(a, b):\n    return "), [3] + tok("\n\nprint(add(1, 2))\n")
print(",".join(map(str, (suf + pre if sys.argv[2] == "spm" else pre + suf) + [2])))
PY
  }
  # a completion's suffix (OpenAI's, ollama's): the prompt as the prefix, nothing cut
  ids=$(suffix_ids)
  want=$("$mkc" run -m "$tmp/sc.gguf" --backend cpu --ctx 256 --prompt-ids "$ids" -n 6 --json 2>/dev/null | grep -o '"id":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
  call POST /v1/completions '{"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n", "max_tokens": 6}'
  [ "$status" = 200 ] && [ "$(get choices 0 tokens | tr -d '[],' | tr '\n' ' ')" = "$want" ] \
    && [ "$(get usage prompt_tokens)" = "$(echo "$ids" | tr ',' '\n' | grep -c .)" ] \
    && ok "OpenAI's completion with a suffix: <pre> prompt <suf> suffix <mid>, run's answer on them ($want)" \
    || fail "/v1/completions suffix" "want: $want" "got: $(head -c 300 "$tmp/ans")"
  python3 "$client" "$port" ndjson /api/generate '{"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n", "options": {"num_predict": 6}, "stream": true}' >"$tmp/nd"
  call POST /detokenize "{\"tokens\": [$(echo $want | tr ' ' ',')]}"
  get content >"$tmp/run_text"
  python3 -c 'import sys; a, b = open(sys.argv[1]).read(), open(sys.argv[2]).read()
sys.exit(0 if a.rsplit("\ndone_reason=", 1)[0] == b[:-1] and b[:-1] else 1)' "$tmp/nd" "$tmp/run_text" \
    && ok "ollama's generate with a suffix: the same filled-in text, streamed" \
    || fail "ollama suffix" "want: $(cat "$tmp/run_text")" "got: $(head -c 300 "$tmp/nd")"
  refused "/infill without input_suffix" 400 "input_suffix: expected a string (required)" POST /infill '{"input_prefix": "a"}'
  refused "/infill with a chunk without text" 400 "input_extra[0].text: expected a string (required)" POST /infill \
    '{"input_prefix": "a", "input_suffix": "b", "input_extra": [{"filename": "x.py"}]}'
  stop fim
  # --spm-infill (llama-server's): suffix first, <suf> suffix <pre> prompt <mid>; run's answer
  if start spm -m "$tmp/sc.gguf" --backend cpu --ctx 256 --spm-infill; then
    ids=$(suffix_ids spm)
    want=$("$mkc" run -m "$tmp/sc.gguf" --backend cpu --ctx 256 --prompt-ids "$ids" -n 6 --json 2>/dev/null | grep -o '"id":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
    call POST /v1/completions '{"prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n", "max_tokens": 6}'
    [ "$status" = 200 ] && [ -n "$want" ] && [ "$(get choices 0 tokens | tr -d '[],' | tr '\n' ' ')" = "$want" ] \
      && ok "--spm-infill: <suf> suffix <pre> prompt <mid>, run's answer on them ($want)" \
      || fail "--spm-infill" "want: $want" "got: $(head -c 300 "$tmp/ans")"
    stop spm
  fi
fi
# Tools: SmolLM2 served in Qwen2.5's template. The prompt of a chat with a tool, a call and its
# result is the one jinja2 renders from Qwen2.5-7B-Instruct's template (counted in tokens by
# /tokenize); /api/show says the model takes tools.
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ] && start smolqwen -m "$model" --backend cpu --chat-template qwen2.5; then
  call POST /v1/chat/completions '{"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}], "max_tokens": 2}'
  n_prompt=$(get usage prompt_tokens)
  finish=$(get choices 0 finish_reason)
  call POST /tokenize '{"add_special": true, "content": "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather in a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n21 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"}'
  want=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tokens"]))' "$tmp/body" 2>/dev/null)
  [ -n "$n_prompt" ] && [ "$n_prompt" = "$want" ] && [ "$finish" = length ] \
    && ok "tools (qwen2.5): the prompt is jinja2's rendering with the tool, the call and its result ($n_prompt tokens)" \
    || fail "tools prompt" "prompt_tokens $n_prompt, jinja2's rendering $want tokens, finish $finish"
  # the same conversation in Anthropic's blocks: the same prompt
  anth='"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"}]}], "tools": [{"name": "get_weather", "description": "Weather in a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}], "max_tokens": 2'
  call POST /v1/messages "{$anth}"
  got=$(($(get usage input_tokens) + $(get usage cache_read_input_tokens)))
  [ "$status" = 200 ] && [ "$got" = "$want" ] && [ "$(get stop_reason)" = max_tokens ] \
    && ok "tools (qwen2.5), Anthropic's tool_use and tool_result blocks: jinja2's rendering too ($got tokens)" \
    || fail "Anthropic tools prompt" "input tokens $got, jinja2's rendering $want" "$(head -c 300 "$tmp/ans")"
  call POST /v1/messages/count_tokens "{$anth}"
  [ "$(get input_tokens)" = "$want" ] && ok "tools (qwen2.5), Anthropic's count_tokens: jinja2's rendering's $want tokens" \
    || fail "Anthropic count_tokens with tools" "want $want" "$(head -c 300 "$tmp/ans")"
  python3 "$client" "$port" messages /v1/messages "{$anth, \"stream\": true}" >"$tmp/anth"
  grep -q "events=message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop stop=max_tokens/None usage=$want+2 thinking=0 problems=none" "$tmp/anth" \
    && ok "tools (qwen2.5), Anthropic's, streamed: the event protocol kept" || fail "Anthropic tools stream" "$(cat "$tmp/anth")"
  call POST /api/show '{"model": "m"}'
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["capabilities"] == ["completion", "tools"] else 1)' "$tmp/body" \
    && ok "tools (qwen2.5): /api/show's capabilities: completion, tools" || fail "api/show capabilities" "$(cat "$tmp/body")"
  stop smolqwen
fi
# qwen3 reasons first: the start of an answer only with its reasoning off (the empty think block
# Qwen3's template writes for enable_thinking false, then the start)
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ] && start smolq3 -m "$model" --backend cpu --chat-template qwen3; then
  conv='[{"role": "user", "content": "a"}, {"role": "assistant", "content": "The answer"}]'
  refused "qwen3: the start of an answer while it reasons" 400 \
    "the start of an answer cannot be given while the model reasons first (chat_template_kwargs.enable_thinking false turns it off)" \
    POST /v1/chat/completions "{\"messages\": $conv}"
  call POST /apply-template "{\"messages\": $conv, \"chat_template_kwargs\": {\"enable_thinking\": false}}"
  [ "$status" = 200 ] && [ "$(get prompt)" = "$(printf '<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nThe answer')" ] \
    && ok "qwen3, enable_thinking false: the empty think block, then the start of the answer" \
    || fail "qwen3 prefill" "$(head -c 300 "$tmp/ans")"
  call POST /api/chat "{\"messages\": $conv, \"stream\": false}"
  [ "$status" = 400 ] && [[ $(get error) == *'("think": false turns it off)' ]] \
    && ok "qwen3 on ollama's chat: the same refusal, naming think" || fail "qwen3 ollama prefill" "$(head -c 300 "$tmp/ans")"
  # Anthropic's thinking disabled turns qwen3's reasoning off: the empty think block's tokens are
  # counted, and the start of an answer is taken; enabled (with a budget) is its default
  refused "qwen3 on Anthropic's messages: the refusal names thinking disabled" 400 '"thinking": {"type": "disabled"} turns it off' \
    POST /v1/messages "{\"max_tokens\": 2, \"messages\": $conv}"
  call POST /v1/messages/count_tokens '{"messages": [{"role": "user", "content": "a"}]}'
  on=$(get input_tokens)
  call POST /v1/messages/count_tokens '{"messages": [{"role": "user", "content": "a"}], "thinking": {"type": "enabled", "budget_tokens": 1024}}'
  on2=$(get input_tokens)
  call POST /v1/messages/count_tokens '{"messages": [{"role": "user", "content": "a"}], "thinking": {"type": "disabled"}}'
  off=$(get input_tokens)
  call POST /tokenize '{"content": "<think>\n\n</think>\n\n"}'
  block=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["tokens"]))' "$tmp/body")
  call POST /v1/messages "{\"max_tokens\": 2, \"thinking\": {\"type\": \"disabled\"}, \"messages\": $conv}"
  [ -n "$on" ] && [ "$on" = "$on2" ] && [ "$off" = $((on + block)) ] && [ "$status" = 200 ] \
    && ok "qwen3, Anthropic's thinking: disabled writes the empty think block ($on + $block tokens) and takes the start of an answer; enabled is the default" \
    || fail "qwen3 Anthropic thinking" "default $on, enabled $on2, disabled $off, block $block" "$(head -c 300 "$tmp/ans")"
  sleep 0.2
  grep -q 'POST /v1/messages: .*stopped: [^;]*$' "$tmp/smolq3.err" \
    && ok "qwen3, Anthropic's thinking disabled: followed, so not named on the log line" \
    || fail "qwen3 thinking log" "$(grep 'POST /v1/messages' "$tmp/smolq3.err" | tail -n 1)"
  stop smolq3
fi
# --parallel: a chat, a completion cut by a stop string, a streamed chat, at once, on 2 slots
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ] && start smolpar -m "$model" --backend cpu --ctx 64 --draft-max 2 --parallel 2; then
  margs=(-m "$model" --backend cpu --no-display-prompt --ctx 64 --draft-max 2)
  q='{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16'
  python3 "$client" "$port" many /v1/chat/completions "$q}" "$q, \"stream\": true}" >"$tmp/many" 2>&1
  python3 "$client" "$port" many /v1/completions '{"prompt": "The quick brown fox", "max_tokens": 20, "stop": "brown"}' \
    '{"prompt": "The quick brown fox", "max_tokens": 20}' >>"$tmp/many" 2>&1
  chat=$("$mkc" run "${margs[@]}" --chat -p "What is the capital of France?" -n 16 2>/dev/null)
  full=$("$mkc" run "${margs[@]}" -p "The quick brown fox" -n 20 2>/dev/null)
  python3 -c 'import json, sys; [print(json.dumps(a)) for a in sys.argv[1:]]' "$chat" "$chat" "${full%%brown*}" "$full" >"$tmp/want"
  cmp -s "$tmp/many" "$tmp/want" && ok "SmolLM2 --parallel 2: chats (whole, streamed) and completions (one cut by a stop string) at once: run's text" \
    || fail "SmolLM2 --parallel" "$(diff "$tmp/want" "$tmp/many")"
  # ollama's truncate: a chat longer than the 64-token context loses its oldest turns, whole,
  # until its prompt leaves num_predict (8) tokens; the system message stays. The oracle: each
  # cut at a user message rendered in ChatML (as SmolLM2's card writes it) and counted by
  # POST /tokenize; the first that fits 56 tokens is the one run answers.
  python3 - "$tmp/long.json" <<'PY'
import json, sys
turns = [("What is the capital of France?", "The capital of France is Paris."),
         ("And of Germany?", "The capital of Germany is Berlin."),
         ("And of Spain?", "The capital of Spain is Madrid.")]
msgs = [{"role": "system", "content": "You are a helpful assistant."}]
for q, a in turns: msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
msgs.append({"role": "user", "content": "And of Italy?"})
json.dump(msgs, open(sys.argv[1], "w"))
PY
  cut=""
  for first in 1 3 5 7; do
    python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); f = int(sys.argv[2]); kept = m[:1] + m[f:]
sys.stdout.write("".join("<|im_start|>%s\n%s<|im_end|>\n" % (x["role"], x["content"]) for x in kept) + "<|im_start|>assistant\n")' \
      "$tmp/long.json" $first >"$tmp/cut$first.txt"
    call POST /tokenize "{\"content\": $(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' "$tmp/cut$first.txt"), \"add_special\": true}"
    n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["tokens"]))' "$tmp/body")
    [ "$first" = 1 ] && whole=$n
    [ -z "$cut" ] && [ "$n" -le 56 ] && cut=$first kept=$n
  done
  call POST /api/chat "{\"messages\": $(cat "$tmp/long.json"), \"stream\": false, \"options\": {\"num_predict\": 8}}"
  want=$("$mkc" run "${margs[@]}" -f "$tmp/cut$cut.txt" -n 8 2>/dev/null)
  sleep 0.2 # the log line follows the answer
  if [ "$whole" -gt 64 ] && [ "$cut" -gt 1 ] && [ "$status" = 200 ] && [ "$(get prompt_eval_count)" = "$kept" ] &&
    [ "$(get message content)" = "$want" ] &&
    grep -q "POST /api/chat: .*; the $((cut - 1)) oldest messages left out to fit the context$" "$tmp/smolpar.err"; then
    ok "ollama /api/chat, truncate: $whole tokens cut at messages[$cut] to $kept; run's answer on the kept turns"
  else
    fail "ollama chat truncate" "whole $whole, cut $cut ($kept tokens)" "want: $want" "got: $(head -c 300 "$tmp/ans")" \
      "$(grep 'POST /api/chat' "$tmp/smolpar.err" | tail -n 1)"
  fi
  # Anthropic's count_tokens counts a prompt longer than the context too (no truncate there)
  call POST /v1/messages/count_tokens "$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); print(json.dumps({"system": m[0]["content"], "messages": m[1:]}))' "$tmp/long.json")"
  [ "$status" = 200 ] && [ "$(get input_tokens)" = "$whole" ] \
    && ok "Anthropic's count_tokens: a chat longer than the context, counted ($whole tokens)" \
    || fail "count_tokens past the context" "want $whole" "$(head -c 300 "$tmp/ans")"
  call POST /api/chat "{\"messages\": $(cat "$tmp/long.json"), \"truncate\": false, \"stream\": false}"
  [ "$status" = 400 ] && [[ $(get error) == "the prompt is $whole tokens but the context holds 64 "* ]] \
    && ok "SmolLM2: ollama's truncate false: 400 ($(get error))" || fail "ollama truncate false" "$(head -c 300 "$tmp/ans")"
  refused "SmolLM2: a chat too long on /v1/chat/completions (llama-server's answer)" 400 \
    "the prompt is $whole tokens but the context holds 64" POST /v1/chat/completions "{\"messages\": $(cat "$tmp/long.json")}"
  long=$(python3 -c 'print(" ".join(["hello"] * 80))')
  call POST /api/chat "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"}, {\"role\": \"user\", \"content\": \"$long\"}], \"stream\": false}"
  [ "$status" = 400 ] && [[ $(get error) == *", and its last turn alone (with the system's messages) is "* ]] \
    && ok "SmolLM2: ollama's truncate, the last turn alone too long: 400 ($(get error))" \
    || fail "ollama truncate, last turn too long" "$(head -c 300 "$tmp/ans")"
  call POST /api/chat '{"messages": [{"role": "user", "content": "Hi"}], "stream": false, "shift": true, "options": {"num_predict": 2, "num_ctx": 64}}'
  sleep 0.2
  [ "$status" = 200 ] && grep 'POST /api/chat' "$tmp/smolpar.err" | tail -n 1 | grep -vq "options not followed" \
    && ok "ollama's shift true and num_ctx 64 (the server's) on --parallel: followed, none named" \
    || fail "ollama shift" "$(head -c 300 "$tmp/ans")" "$(grep 'POST /api/chat' "$tmp/smolpar.err" | tail -n 1)"
  stop smolpar
fi

# Context shift on a 48-token context: ollama's requests shift unless they say "shift": false;
# the others as --context-shift says. Each answer is run --context-shift's (tested against the
# reference span by span in test_cli.sh); the count and the reason say where it ended.
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ] && start smolshift -m "$model" --backend cpu --ctx 48 --draft-max 2 --context-shift; then
  fruit="The list of fruits: apple, banana,"
  sargs=(-m "$model" --backend cpu --no-display-prompt --ctx 48 --draft-max 2 -p "$fruit")
  "$mkc" run "${sargs[@]}" -n 100 --context-shift --keep 4 >"$tmp/keep4" 2>/dev/null
  "$mkc" run "${sargs[@]}" -n 100 --context-shift >"$tmp/keep0" 2>/dev/null
  "$mkc" run "${sargs[@]}" >"$tmp/unshifted" 2>/dev/null
  call POST /api/generate "{\"prompt\": \"$fruit\", \"raw\": true, \"stream\": false, \"options\": {\"num_predict\": 100}}"
  [ "$status" = 200 ] && [ "$(content response)" = "$(quoted "$tmp/keep4")" ] && [ "$(get eval_count)" = 100 ] \
    && [ "$(get done_reason)" = length ] && grep -q "POST /api/generate: .*generated 100 tokens.*; context shifted [2-9] times" "$tmp/smolshift.err" \
    && ok "ollama /api/generate, num_predict 100 past a context of 48: shifted (num_keep 4, its default), run --context-shift --keep 4's text" \
    || fail "ollama generate shifted" "want: $(cat "$tmp/keep4")" "got: $(head -c 400 "$tmp/ans")" "$(grep 'POST /api/generate' "$tmp/smolshift.err" | tail -n 1)"
  call POST /api/generate "{\"prompt\": \"$fruit\", \"raw\": true, \"stream\": false, \"shift\": false, \"options\": {\"num_predict\": 100}}"
  [ "$status" = 200 ] && [ "$(content response)" = "$(quoted "$tmp/unshifted")" ] && [ "$(get eval_count)" = 40 ] \
    && [ "$(get done_reason)" = length ] \
    && ok "ollama /api/generate, shift false: ends at the full context (40 tokens), run's text" \
    || fail "ollama generate shift false" "want: $(cat "$tmp/unshifted")" "got: $(head -c 400 "$tmp/ans")"
  call POST /completion "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"n_keep\": 4}"
  [ "$status" = 200 ] && [ "$(content content)" = "$(quoted "$tmp/keep4")" ] && [ "$(get tokens_predicted)" = 100 ] \
    && [ "$(get truncated)" = True ] && [ "$(get stop_type)" = limit ] \
    && ok "llama-server /completion, n_keep 4, --context-shift: run's text, truncated true" \
    || fail "/completion shifted" "want: $(cat "$tmp/keep4")" "got: $(head -c 400 "$tmp/ans")"
  python3 "$client" "$port" many /v1/completions "{\"prompt\": \"$fruit\", \"max_tokens\": 100, \"stream\": true}" >"$tmp/many"
  [ "$(cat "$tmp/many")" = "$(quoted "$tmp/keep0")" ] \
    && ok "OpenAI /v1/completions streamed, n_keep 0 (llama-server's default): run --context-shift's text" \
    || fail "/v1/completions shifted" "want: $(cat "$tmp/keep0")" "got: $(head -c 400 "$tmp/many")"
  # ollama's num_ctx 32 on this context of 48: the answer shifts at 32, as run --ctx 32 does (and
  # not as run --ctx 48 does)
  "$mkc" run "${sargs[@]/48/32}" -n 60 --context-shift --keep 4 >"$tmp/ctx32" 2>/dev/null
  "$mkc" run "${sargs[@]}" -n 60 --context-shift --keep 4 >"$tmp/ctx48" 2>/dev/null # tells them apart
  call POST /api/generate "{\"prompt\": \"$fruit\", \"raw\": true, \"stream\": false, \"options\": {\"num_predict\": 60, \"num_ctx\": 32}}"
  sleep 0.2
  [ "$status" = 200 ] && [ "$(content response)" = "$(quoted "$tmp/ctx32")" ] \
    && ! cmp -s "$tmp/ctx32" "$tmp/ctx48" \
    && grep 'POST /api/generate' "$tmp/smolshift.err" | tail -n 1 | grep -q "context shifted [2-9] times" \
    && ! grep 'POST /api/generate' "$tmp/smolshift.err" | tail -n 1 | grep -q "not followed" \
    && ok "ollama num_ctx 32 on a context of 48: shifted at 32, run --ctx 32 --context-shift's text" \
    || fail "ollama num_ctx 32" "want: $(cat "$tmp/ctx32")" "got: $(head -c 400 "$tmp/ans")" "$(grep 'POST /api/generate' "$tmp/smolshift.err" | tail -n 1)"
  call POST /api/generate "{\"prompt\": \"$(python3 -c 'print(" ".join(["apple"] * 40))')\", \"raw\": true, \"stream\": false, \"options\": {\"num_ctx\": 32}}"
  [ "$status" = 400 ] && [[ $(get error) == "the prompt is "*" tokens but the request's num_ctx is 32" ]] \
    && ok "ollama num_ctx 32, a longer prompt: 400 ($(get error))" || fail "num_ctx prompt too long" "$(head -c 300 "$tmp/ans")"
  # llama-server's n_discard 10: each shift drops 10 tokens after the kept 4, so after the first
  # span (up to the 48-row context) one every 10 tokens: the shifts counted from the prompt's size
  call POST /completion "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"n_keep\": 4, \"n_discard\": 10}"
  cp "$tmp/body" "$tmp/discard.json"
  sleep 0.2
  p=$(get tokens_evaluated)
  want_shifts=$(python3 -c 'import sys; p = int(sys.argv[1]); rest = 100 - (48 + 1 - p); print(-(-rest // 10))' "${p:-0}")
  got_shifts=$(grep 'POST /completion' "$tmp/smolshift.err" | tail -n 1 | sed -n 's/.*context shifted \([0-9]*\) times.*/\1/p')
  [ "$status" = 200 ] && [ "$(get tokens_predicted)" = 100 ] && [ -n "$got_shifts" ] && [ "$got_shifts" = "$want_shifts" ] \
    && ok "llama-server's n_discard 10: $got_shifts shifts for 100 tokens after a $p-token prompt, one every 10" \
    || fail "n_discard" "shifts $got_shifts, want $want_shifts (prompt $p)" "$(head -c 300 "$tmp/ans")"
  refused "n_discard below 0" 400 "n_discard: expected a whole number >= 0" POST /completion \
    "{\"prompt\": \"$fruit\", \"n_discard\": -1}"
  refused "n_keep below -1" 400 "n_keep: expected -1 (the whole prompt) or a whole number >= 0" POST /completion \
    "{\"prompt\": \"$fruit\", \"n_keep\": -2}"
  call POST /api/generate "{\"prompt\": \"$fruit\", \"options\": {\"num_keep\": \"4\"}}"
  [ "$status" = 400 ] && [ "$(get error)" = "num_keep: expected -1 (the whole prompt) or a whole number >= 0" ] \
    && ok "ollama's num_keep not a number: 400 ($(get error))" || fail "ollama num_keep refused" "$(head -c 300 "$tmp/ans")"
  stop smolshift
fi

# The same on --parallel 2: answers decoded together shift each in its slot, and each is
# run --context-shift's text (the slots emit what a session emits: test_sched).
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ] && start smolshiftpar -m "$model" --backend cpu --ctx 48 --draft-max 2 --context-shift --parallel 2; then
  python3 "$client" "$port" many /completion "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"n_keep\": 4}" \
    "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"stream\": true}" \
    "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"n_keep\": 4, \"stream\": true}" >"$tmp/many"
  printf '%s\n%s\n%s\n' "$(quoted "$tmp/keep4")" "$(quoted "$tmp/keep0")" "$(quoted "$tmp/keep4")" >"$tmp/want"
  stop smolshiftpar
  cmp -s "$tmp/many" "$tmp/want" && [ "$(grep -c 'POST /completion: .*generated 100 tokens.*; context shifted [2-9] times' "$tmp/smolshiftpar.err")" = 3 ] \
    && grep -q "at most 2 decoded together" "$tmp/smolshiftpar.err" \
    && ok "--parallel 2: three /completion answers past a context of 48, two at once, each shifted, each run --context-shift's text (n_keep 4, 0, 4)" \
    || fail "--parallel shifted" "want: $(cat "$tmp/want")" "got:  $(cat "$tmp/many")" "$(grep 'POST /completion' "$tmp/smolshiftpar.err")"
  if start smolshiftpar2 -m "$model" --backend cpu --ctx 48 --draft-max 2 --context-shift --parallel 2; then
    call POST /api/generate "{\"prompt\": \"$fruit\", \"raw\": true, \"stream\": false, \"options\": {\"num_predict\": 60, \"num_ctx\": 32}}"
    [ "$status" = 200 ] && [ "$(content response)" = "$(quoted "$tmp/ctx32")" ] \
      && ok "--parallel 2: ollama num_ctx 32 shifts in its slot at 32: run --ctx 32 --context-shift's text" \
      || fail "--parallel num_ctx 32" "want: $(cat "$tmp/ctx32")" "got: $(head -c 400 "$tmp/ans")"
    call POST /completion "{\"prompt\": \"$fruit\", \"n_predict\": 100, \"n_keep\": 4, \"n_discard\": 10}"
    [ "$status" = 200 ] && [ "$(get content)" = "$(python3 "$client" get "$tmp/discard.json" content)" ] \
      && ok "--parallel 2: n_discard 10 shifts in its slot as the plain server does: the same text" \
      || fail "--parallel n_discard" "plain: $(python3 "$client" get "$tmp/discard.json" content)" "got: $(head -c 300 "$tmp/ans")"
    stop smolshiftpar2
  fi
fi
finish
