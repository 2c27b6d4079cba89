#!/usr/bin/env bash
# llama-server's slot endpoints on mkc serve. GET /slots: each slot's
# context and state, and its request's figures, options and texts (the
# plain server's last request; --parallel's running ones, seen while they
# decode), ?fail_on_no_slot=1's 503 when every slot is busy; --no-slots.
# Every end-of-generation token, however many, on both kinds of server.
# mkc serve --slot-save-path DIR: llama-server's POST /slots/0?action=save,
# restore and erase. A saved slot restored, in this server after another
# request or in a new one, makes the next request that begins with its
# tokens feed only the rest and answer what mkc run answers for the whole
# prompt (the oracle: run, itself checked against the reference elsewhere);
# the answers carry llama-server's fields; bad requests get llama-server's
# status and message; a file of another model, cut short, or not there is
# refused; a model with sliding windows too; flags that cannot work are
# refused at start.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE
dir=$tmp/slots
mkdir -p "$dir"
args=(--preset tiny --random-weights 5 --backend cpu --draft-max 2)
first='[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]'

# ids JSON: a JSON list of ids as run's comma list
ids() { echo "$1" | tr -d '[] '; }
# run_ids IDS N: what mkc run answers for the prompt IDS, N tokens
run_ids() { "$mkc" run "${args[@]}" -n "$2" --prompt-ids "$1" 2>/dev/null; }
size() { stat -c %s "$1" 2>/dev/null; }

if start one "${args[@]}" --slot-save-path "$dir"; then
  call GET /slots
  [ "$status" = 200 ] && [ "$(content)" = '[{"id": 0, "n_ctx": 512, "speculative": true, "is_processing": false}]' ] \
    && ok "GET /slots before any request: one slot, its context, drafts, idle, no request" \
    || fail "GET /slots, fresh" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions "{\"prompt\": $first, \"max_tokens\": 8}"
  answer=$(get choices 0 tokens | tr -d '[] \n')
  [ "$status" = 200 ] && [ "$(echo "$answer" | tr ',' ' ' | wc -w)" = 8 ] \
    && ok "a first request: 12 prompt tokens, 8 answered" || fail "a first request" "$(head -c 300 "$tmp/ans")"
  text=$(get choices 0 text)
  call GET /slots
  [ "$status" = 200 ] && [ "$(get 0 id_task)" = 2 ] && [ "$(get 0 is_processing)" = False ] \
    && [ "$(get 0 n_prompt_tokens)" = 12 ] && [ "$(get 0 n_prompt_tokens_processed)" = 12 ] \
    && [ "$(get 0 n_prompt_tokens_cache)" = 0 ] && [ "$(get 0 params n_predict)" = 8 ] \
    && [ "$(get 0 params temperature)" = 0 ] && [ "$(get 0 params stream)" = False ] \
    && [ "$(get 0 next_token 0 n_decoded)" = 8 ] && [ "$(get 0 next_token 0 has_next_token)" = False ] \
    && [ "$(get 0 prompt)" = "$(ids "$first" | tr ',' ' ')" ] && [ "$(get 0 generated)" = "$text" ] \
    && ok "GET /slots after a request: its number (2), 12 prompt tokens fed, 8 decoded of n_predict 8, its prompt and text" \
    || fail "GET /slots after a request" "$(head -c 600 "$tmp/ans")"
  call GET '/slots?fail_on_no_slot=1'
  [ "$status" = 200 ] && ok "GET /slots?fail_on_no_slot=1 on an idle server: 200" \
    || fail "fail_on_no_slot, idle" "$(head -c 300 "$tmp/ans")"
  refused "POST /slots" 405 "use GET" POST /slots '{}'
  # the session holds the prompt and the answer but its last token (never fed): 19 tokens
  call POST '/slots/0?action=save' '{"filename": "one.bin"}'
  if [ "$status" = 200 ] && [ "$(get id_slot)" = 0 ] && [ "$(get filename)" = one.bin ] \
    && [ "$(get n_saved)" = 19 ] && [ "$(get n_written)" = "$(size "$dir/one.bin")" ] \
    && python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["timings"]["save_ms"]
sys.exit(0 if isinstance(t, (int, float)) and t >= 0 else 1)' "$tmp/body"; then
    ok "save: 19 tokens (prompt and answer but its last), n_written the file's $(size "$dir/one.bin") bytes, timings.save_ms"
  else
    fail "save" "$(head -c 300 "$tmp/ans")" "$(ls -l "$dir")"
  fi
  grep -q "mkc: slot 0: 19 tokens saved to $dir/one.bin" "$tmp/one.err" && ok "save: the log names the tokens and file" \
    || fail "save: logged" "$(tail -n 3 "$tmp/one.err")"
  call POST '/slots/0?action=erase'
  [ "$status" = 200 ] && [ "$(get n_erased)" = 19 ] && [ "$(get id_slot)" = 0 ] \
    && ok "erase: the 19 tokens held (n_erased)" || fail "erase" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions "{\"prompt\": $first, \"max_tokens\": 2}"
  [ "$(get usage prompt_tokens_details cached_tokens)" = 0 ] \
    && ok "... after an erase the same prompt is fed whole (0 cached)" \
    || fail "erased: 0 cached" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions '{"prompt": [7, 7, 7, 7], "max_tokens": 4}' # the cache now holds another prompt
  call POST '/slots/0?action=restore' '{"filename": "one.bin"}'
  [ "$status" = 200 ] && [ "$(get n_restored)" = 19 ] && [ "$(get n_read)" = "$(size "$dir/one.bin")" ] \
    && [ "$(get filename)" = one.bin ] && [ "$(get timings restore_ms)" != "" ] \
    && ok "restore: 19 tokens, n_read the file's bytes, timings.restore_ms" \
    || fail "restore" "$(head -c 300 "$tmp/ans")"
  # the next prompt: the first prompt, its answer, three more ids
  next="$(ids "$first"),$answer,2,7,1"
  want=$(run_ids "$next" 10)
  call POST /v1/completions "{\"prompt\": [$next], \"max_tokens\": 10}"
  [ "$status" = 200 ] && [ -n "$want" ] && [ "$(get choices 0 text)" = "$want" ] \
    && [ "$(get usage prompt_tokens_details cached_tokens)" = 19 ] \
    && ok "restored: a prompt continuing it feeds 4 of 23 tokens (19 cached) and answers what run does" \
    || fail "restored, then a request" "run: $want" "$(head -c 400 "$tmp/ans")"
  # llama-server's refusals
  refused "an unknown action" 400 "Invalid action" POST '/slots/0?action=load' '{"filename": "one.bin"}'
  refused "no action" 400 "Invalid action" POST /slots/0 '{"filename": "one.bin"}'
  refused "slot 1 (one slot)" 400 "Invalid slot ID" POST '/slots/1?action=erase'
  refused "a slot id not a number" 400 "Invalid slot ID" POST '/slots/x?action=erase'
  refused "a GET" 405 "use POST" GET '/slots/0?action=erase'
  refused "no filename" 400 "filename" POST '/slots/0?action=save' '{}'
  refused "a body not JSON" 400 "not a JSON object" POST '/slots/0?action=save' 'one.bin'
  for name in '../one.bin' 'a/b' 'a\\b' '' ' a' 'a ' 'a.' '..' 'a:b' 'a?' 'a\u2215b' 'a\uff0eb' 'a\u0001b'; do
    refused "filename \"$name\"" 400 "Invalid filename" POST '/slots/0?action=save' "{\"filename\": \"$name\"}"
  done
  [ "$(find "$tmp" -name one.bin | wc -l)" = 1 ] && [ "$(ls "$dir")" = one.bin ] \
    && ok "no file written outside DIR, nor for a refused name" || fail "files" "$(find "$tmp" | head)"
  call POST '/slots/0?action=save' '{"filename": "\u00e9t\u00e9 2.bin"}'
  [ "$status" = 200 ] && [ -f "$dir/été 2.bin" ] && ok "a name with a space and accents is a file in DIR" \
    || fail "a name with accents" "$(head -c 300 "$tmp/ans")" "$(ls "$dir")"
  refused "restore: no such file" 400 "Unable to restore slot: No such file" \
    POST '/slots/0?action=restore' '{"filename": "none.bin"}'
  head -c 100 "$dir/one.bin" >"$dir/cut.bin"
  refused "restore: a file cut short" 400 "Unable to restore slot: 100 bytes" \
    POST '/slots/0?action=restore' '{"filename": "cut.bin"}'
  # a refused restore forgets what the session held, as llama-server clears the slot
  call POST /v1/completions "{\"prompt\": [$next], \"max_tokens\": 10}"
  [ "$(get usage prompt_tokens_details cached_tokens)" = 0 ] && [ "$(get choices 0 text)" = "$want" ] \
    && ok "after a refused restore: the prompt fed whole, run's answer" \
    || fail "after a refused restore" "$(head -c 300 "$tmp/ans")"
  stop one
fi

# A new server reads the first one's file: the same answer, 19 tokens cached.
if start two "${args[@]}" --slot-save-path "$dir/"; then
  call POST '/slots/0?action=restore' '{"filename": "one.bin"}'
  [ "$(get n_restored)" = 19 ] && ok "another server restores the file (19 tokens)" \
    || fail "another server restores" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions "{\"prompt\": [$next], \"max_tokens\": 10}"
  [ -n "$want" ] && [ "$(get choices 0 text)" = "$want" ] && [ "$(get usage prompt_tokens_details cached_tokens)" = 19 ] \
    && ok "... and answers what run does, 19 tokens cached" || fail "another server's answer" "$(head -c 300 "$tmp/ans")"
  stop two
fi

# Another model's weights (seed 6): its id differs, the file is refused.
if start other --preset tiny --random-weights 6 --backend cpu --slot-save-path "$dir"; then
  refused "restore: another model's file" 400 "written for another model" \
    POST '/slots/0?action=restore' '{"filename": "one.bin"}'
  stop other
fi

# A sliding window keeps only its last rows (a ring): a session past it (a prompt of 150 ids,
# then 20 tokens) is saved with its windows' first positions; a new server restores it, and a
# prompt continuing it feeds only its new ids and answers what run does for the whole.
swa=(--preset swa-tiny --random-weights 5 --backend cpu --draft-max 2)
long_ids=$(python3 -c 'print(",".join(str((7 * i + 3) % 256) for i in range(150)))')
if start swa "${swa[@]}" --slot-save-path "$dir"; then
  call POST /v1/completions "{\"prompt\": [$long_ids], \"max_tokens\": 20}"
  swa_answer=$(get choices 0 tokens | tr -d '[] \n')
  call POST '/slots/0?action=save' '{"filename": "swa.bin"}'
  [ "$status" = 200 ] && [ "$(get n_saved)" = 169 ] && ok "swa-tiny: a session past its window saved (169 tokens)" \
    || fail "swa-tiny: save" "$(head -c 300 "$tmp/ans")"
  stop swa
fi
if [ -f "$dir/swa.bin" ] && start swa2 "${swa[@]}" --slot-save-path "$dir"; then
  call POST '/slots/0?action=restore' '{"filename": "swa.bin"}'
  restored=$(get n_restored)
  swa_next="$long_ids,$swa_answer,9,9,9"
  want=$("$mkc" run "${swa[@]}" -n 10 --prompt-ids "$swa_next" 2>/dev/null)
  call POST /v1/completions "{\"prompt\": [$swa_next], \"max_tokens\": 10}"
  [ "$restored" = 169 ] && [ -n "$want" ] && [ "$(get choices 0 text)" = "$want" ] \
    && [ "$(get usage prompt_tokens_details cached_tokens)" = 169 ] \
    && ok "swa-tiny: restored by a new server; a prompt continuing it feeds 4 ids and answers what run does" \
    || fail "swa-tiny restored" "restored $restored; run: $want" "$(head -c 300 "$tmp/ans")"
  stop swa2
fi

# Without --slot-save-path: llama-server's 501.
if start plain "${args[@]}"; then
  refused "no --slot-save-path" 501 "Start it with \`--slot-save-path\`" POST '/slots/0?action=save' \
    '{"filename": "one.bin"}'
  [ "$(get error type)" = not_supported_error ] && ok "... its type not_supported_error" \
    || fail "not_supported_error" "$(head -c 300 "$tmp/ans")"
  stop plain
fi

# --parallel 2, idle: two idle slots; then two answers decoding: both busy, their requests'
# figures and texts so far, and fail_on_no_slot's 503 (llama-server's unavailable_error).
if start par "${args[@]}" --parallel 2; then
  call GET '/slots?fail_on_no_slot=1'
  [ "$status" = 200 ] && [ "$(content 0 is_processing)" = false ] && [ "$(content 1 is_processing)" = false ] \
    && [ "$(content 1 id)" = 1 ] && [ "$(content 2)" = "" ] \
    && ok "--parallel 2, idle: two idle slots, fail_on_no_slot 200" || fail "--parallel idle slots" "$(head -c 300 "$tmp/ans")"
  stop par
fi
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$model" ] && start smolpar -m "$model" --backend cpu --parallel 2 --ctx 512; then
  long='{"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": true, "stream": true}'
  python3 "$client" "$port" many /v1/completions "$long" "$long" >"$tmp/two" 2>&1 &
  client_pid=$!
  busy=
  for _ in $(seq 200); do
    call GET /slots
    [ "$(get 0 is_processing)" = True ] && [ "$(get 1 is_processing)" = True ] \
      && [ "$(get 1 next_token 0 n_decoded)" -gt 0 ] 2>/dev/null && busy=1 && break
    sleep 0.1
  done
  cp "$tmp/body" "$tmp/busy.json"
  call GET '/slots?fail_on_no_slot=1'
  if [ -n "$busy" ] && [ "$status" = 503 ] && [ "$(get error message)" = "no slot available" ] \
    && [ "$(get error type)" = unavailable_error ]; then
    ok "--parallel 2, both decoding: GET /slots?fail_on_no_slot=1 is 503 unavailable_error"
  else
    fail "--parallel 2, busy: fail_on_no_slot" "busy: $busy" "$(head -c 300 "$tmp/ans")"
  fi
  cp "$tmp/busy.json" "$tmp/body"
  n=$(get 0 next_token 0 n_decoded)
  [ -n "$busy" ] && [ "$(get 0 prompt)" = "Once upon a time" ] && [ "$(get 0 params n_predict)" = 400 ] \
    && [ "$(get 0 params stream)" = True ] && [ "$(get 0 next_token 0 n_remain)" = $((400 - n)) ] \
    && [ "$(get 0 next_token 0 has_next_token)" = True ] && [ -n "$(get 0 generated)" ] \
    && [ "$(get 0 n_prompt_tokens)" = "$(get 1 n_prompt_tokens)" ] \
    && ok "--parallel 2, busy: each slot's prompt, n_predict 400, $n decoded and $((400 - n)) to go, its text so far" \
    || fail "--parallel 2, busy slots" "$(head -c 800 "$tmp/busy.json")"
  kill "$client_pid" 2>/dev/null # the answers' clients hang up: their slots are let go
  wait "$client_pid" 2>/dev/null
  stop smolpar
fi

# SmolLM2 (its GGUF's id in the file): a chat's first turn saved; a new server restores it, and
# the second turn is mkc chat's second answer with the first turn's tokens from the file.
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
elif start smol -m "$model" --backend cpu --slot-save-path "$dir"; then
  q1='{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16}'
  call POST /v1/chat/completions "$q1"
  first_answer=$(get choices 0 message content)
  call POST '/slots/0?action=save' '{"filename": "smol.bin"}'
  saved=$(get n_saved)
  stop smol
  printf 'What is the capital of France?\nAnd of Italy?\n' | "$mkc" chat -m "$model" --backend cpu -n 16 >"$tmp/chat" 2>/dev/null
  want=$(sed -n 2p "$tmp/chat")
  if [ -n "$first_answer" ] && [ "${saved:-0}" -gt 16 ] && start smol2 -m "$model" --backend cpu --slot-save-path "$dir"; then
    call POST '/slots/0?action=restore' '{"filename": "smol.bin"}'
    restored=$(get n_restored)
    body=$(python3 -c 'import json,sys; print(json.dumps({"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": sys.argv[1]}, {"role": "user", "content": "And of Italy?"}], "max_tokens": 16}))' "$first_answer")
    call POST /v1/chat/completions "$body"
    got=$(get choices 0 message content)
    cached=$(get usage prompt_tokens_details cached_tokens)
    [ "$restored" = "$saved" ] && [ -n "$want" ] && [ "$got" = "$want" ] && [ "${cached:-0}" -gt 16 ] \
      && [ "$cached" -le "$saved" ] \
      && ok "SmolLM2: a chat's first turn saved ($saved tokens), restored by a new server; the second turn is mkc chat's ($got), $cached tokens from the file" \
      || fail "SmolLM2 restored chat" "saved $saved, restored $restored, cached $cached" "chat:   $want" "server: $(head -c 400 "$tmp/ans")"
    stop smol2
  else
    fail "SmolLM2: a first turn and its save" "answer: $first_answer" "saved: $saved"
  fi
fi

# llama-server's --no-slots: GET /slots refused (501, not_supported_error), /props's endpoint_slots
# false; its flags that ask for nothing mkc does otherwise taken with a note each
if start noslots "${args[@]}" --no-slots -cb --metrics -kvu --jinja --threads-http 4 --no-context-shift; then
  refused "--no-slots: GET /slots" 501 "does not support slots endpoint" GET /slots
  [ "$(get error type)" = not_supported_error ] && ok "... its type not_supported_error" \
    || fail "--no-slots: not_supported_error" "$(head -c 300 "$tmp/ans")"
  call GET /props
  [ "$(content endpoint_slots)" = false ] && [ "$(content endpoint_props)" = false ] \
    && ok "--no-slots: /props's endpoint_slots false (endpoint_props false: no POST /props)" \
    || fail "--no-slots: /props" "$(head -c 300 "$tmp/ans")"
  n=$(grep -c "^mkc: note: .*: not followed (llama.cpp's flag): " "$tmp/noslots.err")
  [ "$n" = 5 ] && grep -q "^mkc: note: --threads-http 4: not followed (llama.cpp's flag): mkc's server reads" "$tmp/noslots.err" \
    && ok "llama-server's -cb, --metrics, -kvu, --jinja, --threads-http 4: a note each" \
    || fail "llama-server's flags' notes" "$n notes" "$(cat "$tmp/noslots.err")"
  stop noslots
fi
# llama-server's -to/--timeout: a request that has not arrived whole after 1 s gets 408 (the
# default, 30 s, would still be waiting)
if start timeout "${args[@]}" -to 1; then
  got=$(python3 - "$port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"POST /completion HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
t = time.time()
print(s.recv(200).split(b"\r\n")[0].decode(), round(time.time() - t))
PY
)
  case "$got" in "HTTP/1.1 408 "*" "[1-4]) ok "-to 1: a request not whole after 1 s gets 408 ($got s)" ;;
  *) fail "-to 1" "$got" ;; esac
  stop timeout
fi
if start withslots "${args[@]}"; then
  call GET /props
  [ "$(content endpoint_slots)" = true ] && [ "$(content endpoint_props)" = false ] \
    && ok "/props: endpoint_slots true, endpoint_props false" || fail "/props endpoints" "$(head -c 300 "$tmp/ans")"
  stop withslots
fi
expect_error "serve: --context-shift and --no-context-shift" \
  "mkc: error: serve: --context-shift or --no-context-shift: one" -- serve "${args[@]}" --context-shift --no-context-shift
expect_error "run takes no llama-server flag" "mkc: error: unknown option '--metrics'" \
  -- run --preset tiny --random-weights 1 --metrics

# Every end-of-generation token of a tokenizer with ten of them (tests/eog_tokenizer.py), the
# plain server's and the slots' alike: the tenth, pushed first, ends the answer at once; with
# ignore_eos it is banned (llama-server bans every one), the bias notwithstanding. (Until
# 2026-12-06 the servers kept the first 8: the slots went on past the 9th and 10th, and
# ignore_eos banned 8.)
"$mkc" init --preset tiny --seed 1 -o "$tmp/eog" >/dev/null 2>&1
python3 tests/eog_tokenizer.py "$tmp/eog/tokenizer.json"
for mode in plain parallel; do
  flags=(-m "$tmp/eog" --backend cpu)
  [ "$mode" = parallel ] && flags+=(--parallel 2)
  start "eog_$mode" "${flags[@]}" || continue
  call POST /completion '{"prompt": "ab", "n_predict": 4, "logit_bias": [[255, 100]]}'
  [ "$status" = 200 ] && [ "$(content stop_type)" = '"eos"' ] && [ "$(content tokens_predicted)" = 0 ] \
    && ok "$mode server: the tenth end-of-generation token ends the answer at once (stop_type eos)" \
    || fail "$mode server: the tenth end-of-generation token" "$(head -c 300 "$tmp/ans")"
  call POST /completion '{"prompt": "ab", "n_predict": 4, "logit_bias": [[255, 100]], "ignore_eos": true}'
  toks=$(content tokens)
  [ "$status" = 200 ] && [ "$(content stop_type)" = '"limit"' ] \
    && python3 -c 'import json, sys; t = json.loads(sys.argv[1]); sys.exit(len(t) != 4 or max(t) > 245)' "$toks" \
    && ok "$mode server: ignore_eos bans all ten, the tenth's bias notwithstanding: 4 tokens $toks" \
    || fail "$mode server: ignore_eos bans all ten" "$(head -c 300 "$tmp/ans")"
  stop "eog_$mode"
done

# --parallel with a draft model (exec/draft_slots.c: a slot kernel of the draft's own, as many
# slots), llama-server's --draft-p-min and --draft-adaptive (each slot's depth its own): two
# requests at once give run's tokens; the draft is the target's own weights
"$mkc" init --preset tiny --seed 5 -o "$tmp/draft.gguf" >/dev/null 2>&1
if start md "${args[@]}" --parallel 2 -md "$tmp/draft.gguf" --draft-p-min 0.12 --draft-adaptive; then
  python3 "$client" "$port" POST /v1/completions '{"prompt": [7, 7, 7, 7], "max_tokens": 12}' \
    >"$tmp/beside" 2>&1 &
  beside=$!
  call POST /v1/completions "{\"prompt\": $first, \"max_tokens\": 12}"
  got=$(get choices 0 tokens | tr -d '[] \n')
  wait "$beside"
  tail -n +2 "$tmp/beside" >"$tmp/beside.json"
  got2=$(python3 "$client" get "$tmp/beside.json" choices 0 tokens | tr -d '[] \n')
  want=$("$mkc" run "${args[@]}" -n 12 --prompt-ids "$(ids "$first")" 2>/dev/null)
  want2=$("$mkc" run "${args[@]}" -n 12 --prompt-ids 7,7,7,7 2>/dev/null)
  [ "$status" = 200 ] && [ -n "$got" ] && [ "$got" = "$(echo $want | tr ' ' ',')" ] &&
    [ "$got2" = "$(echo $want2 | tr ' ' ',')" ] &&
    ok "--parallel -md --draft-p-min --draft-adaptive: two requests together, each run's 12 tokens ($got)" ||
    fail "--parallel -md" "got $got / $got2" "want $want / $want2" "$(head -c 300 "$tmp/ans")"
  stop md
fi

expect_error "--slot-save-path: not a directory" "mkc: error: --slot-save-path $dir/one.bin: not a directory" \
  -- serve "${args[@]}" --slot-save-path "$dir/one.bin"
expect_error "--slot-save-path: missing" "mkc: error: --slot-save-path $tmp/none: not a directory" \
  -- serve "${args[@]}" --slot-save-path "$tmp/none"
finish
