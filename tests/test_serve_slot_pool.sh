#!/usr/bin/env bash
# llama-server's slot files on mkc serve --parallel N --slot-save-path DIR:
# POST /slots/N?action=save|restore|erase on the pool's slots (exec/slot_file.h).
# A slot keeps its last request's tokens until another request takes it:
# saved, they are the prompt and the answer but its last token. Restored by
# a new server into any slot, a prompt beginning with them shares their full
# KV pages (cached_tokens) and answers what mkc run answers for the whole
# prompt (the oracle: run, itself checked against the reference elsewhere).
# An erase forgets a slot's tokens: the same prompt then shares nothing. An
# action on a slot still decoding waits for its request to end (llama-server
# defers it): the save holds the whole answer. A request's answer names its
# slot (id_slot), and GET /slots lists an idle slot's last request. Ctrl-C
# while an action waits: the request ends, then the action is answered. Refused: slots outside the pool, a plain server's file.
# Log-probabilities on the pool (OpenAI's logprobs): a request alone gets
# the plain server's list exactly (a slot stepping alone is the plain kernel
# bit for bit); two decoded together, each its own list's tokens and top
# ids, the values within 1e-4 (several slots in a step may sum attention in
# another order: test_slots bounds their logits within 1e-5).
# SmolLM2 when the test data is there: a chat's first turn saved by a
# --parallel server, restored by another; the second turn is mkc chat's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE
dir=$tmp/slots
mkdir -p "$dir"
args=(--preset tiny --random-weights 5 --backend cpu --draft-max 0)
# 60 prompt ids: with an answer of 8 the slot holds 67 positions, 4 full pages of 16
prompt=$(python3 -c 'print(",".join(str((11 * i + 4) % 256) for i in range(60)))')
size() { stat -c %s "$1" 2>/dev/null; }
run_ids() { "$mkc" run "${args[@]}" -n "$2" --prompt-ids "$1" 2>/dev/null; }

if start one "${args[@]}" --parallel 3 --slot-save-path "$dir"; then
  call POST /completion "{\"prompt\": [$prompt], \"n_predict\": 8}"
  answer=$(content tokens | tr -d '[] \n')
  [ "$status" = 200 ] && [ "$(content id_slot)" = 0 ] && [ "$(echo "$answer" | tr ',' ' ' | wc -w)" = 8 ] \
    && ok "a request on an idle pool: slot 0 (id_slot), 8 tokens" || fail "a first request" "$(head -c 300 "$tmp/ans")"
  call POST '/slots/0?action=save' '{"filename": "pool.bin"}'
  [ "$status" = 200 ] && [ "$(get id_slot)" = 0 ] && [ "$(get filename)" = pool.bin ] \
    && [ "$(get n_saved)" = 67 ] && [ "$(get n_written)" = "$(size "$dir/pool.bin")" ] \
    && [ -n "$(get timings save_ms)" ] \
    && ok "save slot 0: its last request's 67 tokens (the answer's last never fed), n_written the file's bytes" \
    || fail "save slot 0" "$(head -c 300 "$tmp/ans")"
  grep -q "mkc: slot 0: 67 tokens saved to $dir/pool.bin" "$tmp/one.err" && ok "save: logged with its slot" \
    || fail "save: logged" "$(tail -n 3 "$tmp/one.err")"
  call GET /slots
  [ "$status" = 200 ] && [ "$(get 0 is_processing)" = False ] && [ "$(get 0 n_prompt_tokens)" = 60 ] \
    && [ "$(get 0 next_token 0 n_decoded)" = 8 ] && [ "$(get 0 params n_predict)" = 8 ] \
    && [ "$(get 0 prompt)" = "$(echo "$prompt" | tr ',' ' ')" ] && [ -n "$(get 0 id_task)" ] \
    && [ -z "$(get 1 id_task)" ] && [ "$(get 1 is_processing)" = False ] \
    && ok "GET /slots: idle slot 0 lists its last request (60 prompt tokens, 8 decoded), slot 1 none" \
    || fail "GET /slots: an idle slot's last request" "$(head -c 600 "$tmp/ans")"
  # the control: the same prompt again shares the kept full pages of its start (48 of 60)
  call POST /v1/completions "{\"prompt\": [$prompt], \"max_tokens\": 2}"
  [ "$(get usage prompt_tokens_details cached_tokens)" = 48 ] \
    && ok "the same prompt again shares the full pages of its start (48 cached)" \
    || fail "the same prompt again" "$(head -c 300 "$tmp/ans")"
  call POST '/slots/0?action=erase'
  [ "$status" = 200 ] && [ "$(get id_slot)" = 0 ] && [ "$(get n_erased)" = 61 ] \
    && ok "erase slot 0: the 61 tokens it held" || fail "erase" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions "{\"prompt\": [$prompt], \"max_tokens\": 2}"
  [ "$(get usage prompt_tokens_details cached_tokens)" = 0 ] \
    && ok "... after the erase the same prompt shares nothing (0 cached)" \
    || fail "erased: 0 cached" "$(head -c 300 "$tmp/ans")"
  refused "slot 3 of 0..2" 400 "Invalid slot ID" POST '/slots/3?action=erase'
  refused "slot -1" 400 "Invalid slot ID" POST '/slots/-1?action=erase'
  refused "slot 1x" 400 "Invalid slot ID" POST '/slots/1x?action=erase'
  refused "restore: no such file" 400 "Unable to restore slot: No such file" \
    POST '/slots/1?action=restore' '{"filename": "none.bin"}'
  # a slot still decoding: its save waits for the request to end, then holds all of it
  long="{\"prompt\": [$prompt], \"n_predict\": 300, \"stream\": true}"
  python3 "$client" "$port" POST /completion "$long" >"$tmp/long" 2>&1 &
  client_pid=$!
  # polled and saved from one process: the save follows the poll within milliseconds
  python3 - "$port" >"$tmp/ans" 2>&1 <<'PY'
import http.client, json, sys, time
port = int(sys.argv[1])
def ask(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body)
    r = c.getresponse()
    return r.status, r.read().decode()
for _ in range(400):  # early in its answer: the save comes long before its end
    s = json.loads(ask("GET", "/slots")[1])[0]
    if s["is_processing"] and s["next_token"][0]["n_decoded"] < 100:
        status, body = ask("POST", "/slots/0?action=save", json.dumps({"filename": "long.bin"}))
        print(status)
        print(body)
        break
    time.sleep(0.02)
else:
    print("never busy")
PY
  tail -n +2 "$tmp/ans" >"$tmp/body"
  status=$(head -n 1 "$tmp/ans")
  busy=$([ "$status" = "never busy" ] || echo 1)
  wait "$client_pid"
  [ -n "$busy" ] && [ "$status" = 200 ] && [ "$(get n_saved)" = 359 ] && [ "$(get id_slot)" = 0 ] \
    && grep -q "mkc: slot 0: the save waits for its request to end" "$tmp/one.err" \
    && grep -Eq '"id_slot": ?0' "$tmp/long" && ! grep -Eq '"id_slot": ?[1-9]' "$tmp/long" \
    && ok "a save of a slot decoding waits for its request's end: 359 tokens (60 + 300 - 1)" \
    || fail "a save of a busy slot" "busy: $busy" "$(head -c 300 "$tmp/ans")" "$(tail -n 3 "$tmp/one.err")"
  stop one
fi

# Ctrl-C while an erase waits for its slot: the request ends with what it has, then the erase is
# answered (with the connection's CORS header, as every answer) on what the slot held
if start four "${args[@]}" --parallel 3 --slot-save-path "$dir"; then
  python3 "$client" "$port" POST /completion "$long" >"$tmp/long4" 2>&1 &
  client_pid=$!
  python3 - "$port" >"$tmp/erase4" 2>&1 <<'PY' &
import http.client, json, sys, time
port = int(sys.argv[1])
def ask(method, path, headers={}):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, None, headers)
    r = c.getresponse()
    return r.status, r.getheader("Access-Control-Allow-Origin"), r.read().decode()
for _ in range(400):
    s = json.loads(ask("GET", "/slots")[2])[0]
    if s["is_processing"] and s["next_token"][0]["n_decoded"] < 100:
        print(*ask("POST", "/slots/0?action=erase", {"Origin": "http://localhost:5173"}), sep="\n")
        break
    time.sleep(0.02)
else:
    print("never busy")
PY
  erase_pid=$!
  for _ in $(seq 200); do grep -q "slot 0: the erase waits" "$tmp/four.err" && break; sleep 0.05; done
  stop four
  wait "$erase_pid" "$client_pid"
  n=$(sed -n 3p "$tmp/erase4" | python3 -c 'import json, sys; print(json.load(sys.stdin)["n_erased"])' 2>/dev/null)
  [ "$(sed -n 1p "$tmp/erase4")" = 200 ] && [ "$(sed -n 2p "$tmp/erase4")" = http://localhost:5173 ] \
    && [ "${n:-0}" -ge 60 ] && [ "$n" -lt 359 ] && grep -q "mkc: slot 0: $n tokens erased" "$tmp/four.err" \
    && ok "Ctrl-C while an erase waits: the request ends, then the erase answers 200 ($n tokens, before the answer's end), its CORS header with it" \
    || fail "an erase waiting at Ctrl-C" "$(cat "$tmp/erase4")" "$(tail -n 4 "$tmp/four.err")"
fi

# A new server (another pool) restores the file into slot 2; a prompt continuing it shares its
# 4 full pages, whichever slot it runs in, and answers what run does.
next="$prompt,$(echo "$answer" | cut -d, -f1-7),2,7,1"
want=$(run_ids "$next" 10)
if start two "${args[@]}" --parallel 3 --slot-save-path "$dir/"; then
  call POST '/slots/2?action=restore' '{"filename": "pool.bin"}'
  [ "$status" = 200 ] && [ "$(get id_slot)" = 2 ] && [ "$(get n_restored)" = 67 ] \
    && [ "$(get n_read)" = "$(size "$dir/pool.bin")" ] && [ -n "$(get timings restore_ms)" ] \
    && ok "another pool restores the file into slot 2: 67 tokens, n_read the file's bytes" \
    || fail "restore into slot 2" "$(head -c 300 "$tmp/ans")"
  call POST /v1/completions "{\"prompt\": [$next], \"max_tokens\": 10}"
  [ "$status" = 200 ] && [ -n "$want" ] && [ "$(get choices 0 text)" = "$want" ] \
    && [ "$(get usage prompt_tokens_details cached_tokens)" = 64 ] \
    && ok "restored: a prompt continuing it shares 64 positions (4 full pages) and answers what run does" \
    || fail "restored, then a request" "run: $want" "$(head -c 400 "$tmp/ans")"
  stop two
fi

# The plain server's file: another kernel's rows, refused; and the pool's, by the plain server.
if start plain "${args[@]}" --slot-save-path "$dir"; then
  call POST /completion "{\"prompt\": [$prompt], \"n_predict\": 4}"
  call POST '/slots/0?action=save' '{"filename": "plain.bin"}'
  refused "the plain server: a pool's file" 400 "written for another model or kernel" \
    POST '/slots/0?action=restore' '{"filename": "pool.bin"}'
  stop plain
fi
if [ -f "$dir/plain.bin" ] && start three "${args[@]}" --parallel 3 --slot-save-path "$dir"; then
  refused "a pool: the plain server's file" 400 "written for another model or kernel" \
    POST '/slots/0?action=restore' '{"filename": "plain.bin"}'
  stop three
fi

# Log-probabilities: the plain server's answers are the oracle
lp_a=$(python3 -c 'print(",".join(str((13 * i + 2) % 256) for i in range(20)))')
lp_b=$(python3 -c 'print(",".join(str((29 * i + 7) % 256) for i in range(9)))')
lp_body() { echo "{\"prompt\": [$1], \"max_tokens\": 6, \"logprobs\": 3}"; }
lp_args=(--preset tiny --random-weights 5 --backend cpu --draft-max 2)
if start plainlp "${lp_args[@]}"; then
  call POST /v1/completions "$(lp_body "$lp_a")" && cp "$tmp/body" "$tmp/plain_a.json"
  call POST /v1/completions "$(lp_body "$lp_b")" && cp "$tmp/body" "$tmp/plain_b.json"
  stop plainlp
fi
# same_lp GOT WANT TOL: the same tokens and top ids, every value within TOL (0: equal)
same_lp() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
got, want = (json.load(open(f))["choices"][0]["logprobs"] for f in sys.argv[1:3])
tol = float(sys.argv[3])
ok = got["tokens"] == want["tokens"] and len(got["token_logprobs"]) == 6
ok = ok and all(a.keys() == b.keys() for a, b in zip(got["top_logprobs"], want["top_logprobs"]))
vals = lambda l: [v for t in l["top_logprobs"] for v in t.values()] + l["token_logprobs"]
d = max(abs(a - b) for a, b in zip(vals(got), vals(want)))
print("%.3g" % d)
sys.exit(0 if ok and (d <= tol if tol else got == want) else 1)
PY
}
if [ -f "$tmp/plain_b.json" ] && start poollp "${lp_args[@]}" --parallel 2; then
  call POST /v1/completions "$(lp_body "$lp_a")"
  [ "$status" = 200 ] && same_lp "$tmp/body" "$tmp/plain_a.json" 0 >/dev/null \
    && ok "--parallel, a request alone: logprobs 3 the plain server's exactly" \
    || fail "--parallel logprobs alone" "$(head -c 400 "$tmp/ans")" "plain: $(head -c 400 "$tmp/plain_a.json")"
  python3 - "$port" "$(lp_body "$lp_a")" "$(lp_body "$lp_b")" "$tmp" <<'PY'
import http.client, sys, threading
port, bodies, out = int(sys.argv[1]), sys.argv[2:4], sys.argv[4]
def ask(i):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/completions", bodies[i], {"Content-Type": "application/json"})
    open("%s/together_%d.json" % (out, i), "wb").write(c.getresponse().read())
ts = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
PY
  da=$(same_lp "$tmp/together_0.json" "$tmp/plain_a.json" 1e-4) && db=$(same_lp "$tmp/together_1.json" "$tmp/plain_b.json" 1e-4) \
    && ok "--parallel, two requests together: each its plain answer's tokens and top ids, values $da and $db apart" \
    || fail "--parallel logprobs together" "$(head -c 300 "$tmp/together_0.json")" "$(head -c 300 "$tmp/together_1.json")"
  stop poollp
  grep -q "at most 2 decoded together" "$tmp/poollp.err" && ok "... and they were decoded together (2 at most)" \
    || fail "decoded together" "$(tail -n 2 "$tmp/poollp.err")"
fi

# SmolLM2: a chat's first turn saved by a --parallel server; another restores it, and the second
# turn is mkc chat's second answer, the first turn's full pages from the file.
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
smol=(-m "$model" --backend cpu --parallel 2 --ctx 512 --slot-save-path "$dir")
if [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
elif start smol "${smol[@]}"; then
  q1='{"messages": [{"role": "user", "content": "What is the capital of France? Answer in a sentence, then name a museum there."}], "max_tokens": 24}'
  call POST /v1/chat/completions "$q1"
  first_answer=$(get choices 0 message content)
  call POST '/slots/0?action=save' '{"filename": "smol.bin"}'
  saved=$(get n_saved)
  stop smol
  printf 'What is the capital of France? Answer in a sentence, then name a museum there.\nAnd of Italy?\n' |
    "$mkc" chat -m "$model" --backend cpu -n 24 >"$tmp/chat" 2>/dev/null
  want=$(sed -n 2p "$tmp/chat")
  if [ -n "$first_answer" ] && [ "${saved:-0}" -gt 32 ] && start smol2 "${smol[@]}"; then
    call POST '/slots/1?action=restore' '{"filename": "smol.bin"}'
    restored=$(get n_restored)
    body=$(python3 -c 'import json,sys; print(json.dumps({"messages": [{"role": "user", "content": "What is the capital of France? Answer in a sentence, then name a museum there."}, {"role": "assistant", "content": sys.argv[1]}, {"role": "user", "content": "And of Italy?"}], "max_tokens": 24}))' "$first_answer")
    call POST /v1/chat/completions "$body"
    got=$(get choices 0 message content)
    cached=$(get usage prompt_tokens_details cached_tokens)
    [ "$restored" = "$saved" ] && [ -n "$want" ] && [ "$got" = "$want" ] && [ "${cached:-0}" -ge 32 ] \
      && [ "$cached" -le "$saved" ] && [ $((cached % 16)) = 0 ] \
      && ok "SmolLM2, --parallel: a chat's first turn saved ($saved tokens), restored by another pool; the second turn is mkc chat's ($got), $cached positions shared from the file" \
      || fail "SmolLM2 --parallel restored chat" "saved $saved, restored $restored, cached $cached" "chat:   $want" "server: $(head -c 400 "$tmp/ans")"
    stop smol2
  else
    fail "SmolLM2 --parallel: a first turn and its save" "answer: $first_answer" "saved: $saved"
  fi
fi
finish
