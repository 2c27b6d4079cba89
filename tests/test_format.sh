#!/usr/bin/env bash
# Constrained JSON output end to end (the choice itself is test_constrain's):
# run --format json and serve's response_format json_object (OpenAI) and
# format "json" (ollama), on the test data's SmolLM2 and the cpu backend.
# Python's json module is the judge: a greedy answer is an object it parses,
# run stops when the object is whole, and the server answers the same text,
# whole and streamed; sampled answers that end whole parse too. With a JSON
# schema (run -j/--json-schema, -jf; OpenAI's json_schema, ollama's format
# as a schema), the Python jsonschema package judges: every answer that
# ends whole validates. Flags and requests that cannot have JSON output are
# refused with their reasons.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE

# ---- refusals that need no model ----
expect_error "run --format yaml" "mkc: error: run: --format 'yaml': json, or a JSON schema ({...})" \
  -- run -m README.md -p hi --format yaml
expect_error "run --format json without a tokenizer" \
  "mkc: error: run: --format (JSON output) needs the model's tokenizer: -m with -p or -f" \
  -- run --preset tiny --random-weights 1 -n 4 --format json
expect_error "run --format json with rounds" \
  "mkc: error: run: --format (JSON output) chooses each token on the host: not with --rounds (a launch's rounds are the kernel's choices)" \
  -- run -m README.md -p hi --format json --rounds 2
expect_error "run -j with a keyword mkc does not follow" \
  "mkc: error: --format: json schema: the schema: \"pattern\" is not offered (mkc follows type, properties, required, items, minItems, maxItems, enum, const, anyOf, oneOf and \$ref)" \
  -- run -m README.md -p hi -j '{"type": "string", "pattern": "a+"}'
expect_error "run -jf a missing file" "mkc: error: --json-schema-file $tmp/none.json: No such file or directory" \
  -- run -m README.md -p hi -jf "$tmp/none.json"

model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2's JSON answers: no test data (tests/data/fetch.sh)"
  finish
  exit
fi
margs=(-m "$model" --backend cpu --no-display-prompt --ctx 512)


# ---- run ----
prompts=("Reply with a JSON object with keys name and age for a cat called Tom aged 3."
  "Give the capital of France as a JSON object with the key capital."
  "Reply in JSON: an object with keys x and y, both numbers.")
for i in 0 1 2; do
  "$mkc" run "${margs[@]}" --chat -p "${prompts[$i]}" --format json -n 100 >"$tmp/run$i" 2>"$tmp/run$i.err"
  if is_object "$tmp/run$i" && grep -q "stopped: the JSON is whole" "$tmp/run$i.err"; then
    ok "run --format json, greedy: \"${prompts[$i]}\": an object json.loads reads, stopped when whole ($(grep -o 'generated [0-9]* tokens' "$tmp/run$i.err"))"
  else
    fail "run --format json: ${prompts[$i]}" "$(cat "$tmp/run$i")" "$(tail -n 2 "$tmp/run$i.err")"
  fi
done
# the same prompt unconstrained: the model's own answer is not a bare object
"$mkc" run "${margs[@]}" --chat -p "${prompts[1]}" -n 40 >"$tmp/free" 2>/dev/null
is_object "$tmp/free" && fail "unconstrained: the same prompt answers other than an object" "$(cat "$tmp/free")" \
  || ok "unconstrained, the same prompt's answer is not an object json.loads reads (the constraint is what made it one)"

# chat: every answer an object, the conversation going on
printf '%s\n%s\n' "${prompts[0]}" "Now the same for a dog called Rex aged 5." |
  "$mkc" chat -m "$model" --backend cpu --ctx 512 --format json -n 100 --verbose >"$tmp/chat" 2>"$tmp/chat.err"
python3 -c 'import json, sys
t, d, objs, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while True:
    while i < len(t) and t[i].isspace(): i += 1
    if i == len(t): break
    v, i = d.raw_decode(t, i); objs.append(v)
sys.exit(0 if len(objs) == 2 and all(isinstance(o, dict) for o in objs) else 1)' "$tmp/chat" 2>/dev/null \
  && [ "$(grep -c "stopped: the JSON is whole" "$tmp/chat.err")" = 2 ] \
  && ok "chat --format json: two turns, each answer an object json.loads reads, each stopped when whole" \
  || fail "chat --format json" "$(cat "$tmp/chat")" "$(tail -n 2 "$tmp/chat.err")"

# sampled: whichever answers end whole are objects (seeds chosen here, the cpu's rounding may
# move where each ends)
whole=0 bad=0
for seed in 4 6 7; do
  "$mkc" run "${margs[@]}" --chat -p "Describe a fictional city as a JSON object." --format json -n 100 \
    --temp 0.8 --seed $seed >"$tmp/s$seed" 2>"$tmp/s$seed.err"
  if grep -q "stopped: the JSON is whole" "$tmp/s$seed.err"; then
    whole=$((whole + 1))
    is_object "$tmp/s$seed" || bad=$((bad + 1))
  fi
done
[ "$whole" -ge 1 ] && [ "$bad" -eq 0 ] \
  && ok "run --format json --temp 0.8, 3 seeds: the $whole answers that ended whole are objects json.loads reads" \
  || fail "sampled JSON" "$whole whole, $bad of them not objects" "$(cat "$tmp/s4")"

# ---- schemas ----
cat >"$tmp/cat.json" <<'SCHEMA'
{"type": "object",
 "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                "colour": {"enum": ["black", "white", "ginger"]},
                "toys": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "vaccinated": {"type": "boolean"}},
 "required": ["name", "age", "colour", "toys"]}
SCHEMA
# validates SCHEMA FILE: FILE (less run's closing newline) is JSON the schema validates.
validates() {
  python3 -c 'import json, sys, jsonschema
t = open(sys.argv[2]).read(); t = t[:-1] if t.endswith("\n") else t
jsonschema.validate(json.loads(t), json.load(open(sys.argv[1])))' "$1" "$2" 2>/dev/null
}
if ! python3 -c 'import jsonschema' 2>/dev/null; then
  skip "JSON schemas: Python's jsonschema package is missing (.ci/install-deps installs python3-jsonschema)"
else
  "$mkc" run "${margs[@]}" --chat -p "Describe a cat as JSON." -jf "$tmp/cat.json" -n 120 >"$tmp/cat" 2>"$tmp/cat.err"
  validates "$tmp/cat.json" "$tmp/cat" && grep -q "stopped: the JSON is whole" "$tmp/cat.err" \
    && ok "run -jf, greedy: jsonschema validates the answer (properties in order, an enum, a list of at most 3), stopped when whole" \
    || fail "run -jf" "$(cat "$tmp/cat")" "$(tail -n 1 "$tmp/cat.err")"
  "$mkc" run "${margs[@]}" --chat -p "Describe a cat as JSON." -j "$(cat "$tmp/cat.json")" -n 120 >"$tmp/cat2" 2>/dev/null
  cmp -s "$tmp/cat" "$tmp/cat2" && ok "run -j SCHEMA: the same answer as -jf FILE" || fail "run -j" "$(cat "$tmp/cat2")"
  whole=0 bad=0
  for seed in 1 2 3; do
    "$mkc" run "${margs[@]}" --chat -p "Describe a cat as JSON." -jf "$tmp/cat.json" -n 150 --temp 0.9 --seed $seed \
      >"$tmp/c$seed" 2>"$tmp/c$seed.err"
    if grep -q "stopped: the JSON is whole" "$tmp/c$seed.err"; then
      whole=$((whole + 1))
      validates "$tmp/cat.json" "$tmp/c$seed" || bad=$((bad + 1))
    fi
  done
  [ "$whole" -ge 1 ] && [ "$bad" -eq 0 ] \
    && ok "run -jf --temp 0.9, 3 seeds: the $whole answers that ended whole validate" \
    || fail "sampled schema" "$whole whole, $bad not valid" "$(cat "$tmp/c1")"
fi

# ---- serve ----
# openai_answers NAME WANT BODY: the chat's answer to BODY is WANT (a JSON string), finish_reason stop.
openai_answers() {
  call POST /v1/chat/completions "$3"
  [ "$status" = 200 ] && [ "$(content choices 0 message content)" = "$2" ] && [ "$(get choices 0 finish_reason)" = stop ] \
    && ok "$1" || fail "$1" "want: $2" "got:  $(head -c 600 "$tmp/ans")"
}
if start smolfmt -m "$model" --backend cpu --ctx 512; then
  want=$(quoted "$tmp/run0")
  openai_answers "serve, response_format json_object: run --format json's object, finish_reason stop" "$want" \
    "{\"messages\": [{\"role\": \"user\", \"content\": \"${prompts[0]}\"}], \"response_format\": {\"type\": \"json_object\"}, \"max_tokens\": 100}"
  python3 "$client" "$port" ndjson /api/chat "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"${prompts[0]}\"}], \"format\": \"json\", \"options\": {\"num_predict\": 100}}" >"$tmp/nd"
  got=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read().rsplit("\n", 2)[0]))' "$tmp/nd")
  [ "$got" = "$want" ] && grep -q "done_reason=stop" "$tmp/nd" \
    && ok "serve, ollama's format \"json\" streamed: the same object, done_reason stop" \
    || fail "ollama format json" "want: $want" "got:  $(head -c 600 "$tmp/nd")"
  if python3 -c 'import jsonschema' 2>/dev/null; then
    sch=$(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$tmp/cat.json")
    want=$(quoted "$tmp/cat")
    ask="{\"role\": \"user\", \"content\": \"Describe a cat as JSON.\"}"
    openai_answers "serve, OpenAI's json_schema: run -jf's answer, finish_reason stop" "$want" \
      "{\"messages\": [$ask], \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"cat\", \"strict\": true, \"schema\": $sch}}, \"max_tokens\": 120}"
    call POST /api/chat "{\"model\": \"m\", \"messages\": [$ask], \"format\": $sch, \"stream\": false, \"options\": {\"num_predict\": 120}}"
    [ "$(content message content)" = "$want" ] && [ "$(get done_reason)" = stop ] \
      && ok "serve, ollama's format as a schema: the same answer, done_reason stop" \
      || fail "ollama format schema" "want: $want" "got:  $(head -c 600 "$tmp/ans")"
  fi
  # ollama_refused NAME PHRASE BODY: POST /api/chat answers 400 {"error": "...PHRASE..."}
  ollama_refused() {
    call POST /api/chat "$3"
    [ "$status" = 400 ] && [[ $(get error) == *"$2"* ]] && ok "$1: 400 ($(get error))" \
      || fail "$1: 400 with \"$2\"" "got: $(head -c 300 "$tmp/ans")"
  }
  ollama_refused "ollama's format, a schema with a keyword mkc does not follow" 'format: json schema: the schema: "minimum" is not offered' \
    '{"model": "m", "messages": [{"role": "user", "content": "hi"}], "format": {"type": "integer", "minimum": 1}}'
  ollama_refused "ollama's format \"yaml\"" 'format: "json" or a JSON schema' \
    '{"model": "m", "messages": [{"role": "user", "content": "hi"}], "format": "yaml"}'
  refused "OpenAI's json_schema without a schema" 400 "response_format: json_schema.schema: expected a JSON schema" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}'
  refused "OpenAI's response_format of another type" 400 "response_format: {\"type\": \"text\"}, {\"type\": \"json_object\"} or" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}'
  stop smolfmt
fi
# a template whose models reason first: refused unless reasoning is off
if start smolq3 -m "$model" --backend cpu --ctx 512 --chat-template qwen3; then
  refused "qwen3's template, reasoning on" 400 "this model reasons before it answers, and its reasoning is not JSON (chat_template_kwargs.enable_thinking false turns it off)" \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}}'
  call POST /api/chat "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"${prompts[0]}\"}], \"format\": \"json\", \"think\": false, \"stream\": false, \"options\": {\"num_predict\": 100}}"
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(0 if isinstance(json.loads(a["message"]["content"]), dict) and a["done_reason"] == "stop" else 1)' "$tmp/body" 2>/dev/null \
    && ok "qwen3's template with \"think\": false: an object json.loads reads, done_reason stop" \
    || fail "qwen3 think false" "$(head -c 600 "$tmp/ans")"
  stop smolq3
fi
# --parallel: JSON requests decoded together, beside one that is not, each what run gives alone
# (greedy; sampled with its seed; free): 3 requests on 2 slots, one waits
if start smolparfmt -m "$model" --backend cpu --ctx 512 --parallel 2; then
  chat_body() { # chat_body PROMPT MORE: a chat request of one user message
    printf '{"messages": [{"role": "user", "content": "%s"}], %s}' "$1" "$2"
  }
  python3 "$client" "$port" many /v1/chat/completions \
    "$(chat_body "${prompts[0]}" '"response_format": {"type": "json_object"}, "max_tokens": 100')" \
    "$(chat_body "${prompts[1]}" '"max_tokens": 40')" \
    "$(chat_body "Describe a fictional city as a JSON object." '"response_format": {"type": "json_object"}, "max_tokens": 100, "temperature": 0.8, "seed": 4')" \
    >"$tmp/many" 2>&1
  { quoted "$tmp/run0" && quoted "$tmp/free" && quoted "$tmp/s4"; } >"$tmp/want"
  cmp -s "$tmp/many" "$tmp/want" \
    && ok "serve --parallel 2: two JSON requests (greedy; sampled, seed 4) and a free one at once: each run's answer alone" \
    || fail "serve --parallel 2, JSON output" "$(diff "$tmp/want" "$tmp/many")"
  grep -q "stopped: the JSON is whole" "$tmp/smolparfmt.err" \
    && ok "serve --parallel: the log says a JSON answer stopped when whole" \
    || fail "serve --parallel's log" "$(tail -n 4 "$tmp/smolparfmt.err")"
  stop smolparfmt
fi

# run --batch --format: each line's JSON as run --format gives that line alone (line i: seed 3 + i)
printf '%s\n' "A cat as a JSON object:" "The planets as JSON:" "JSON for a book with title and pages:" >"$tmp/lines"
for how in greedy sampled; do
  sargs=()
  [ "$how" = sampled ] && sargs=(--temp 0.8)
  "$mkc" run -m "$model" --backend cpu --ctx 512 --batch "$tmp/lines" --slots 2 --format json -n 24 \
    --seed 3 "${sargs[@]}" >"$tmp/batch" 2>"$tmp/batch.err"
  : >"$tmp/solo"
  i=0
  while read -r line; do # run ends each with a newline; the batch escapes newlines and backslashes
    "$mkc" run "${margs[@]}" -p "$line" --format json -n 24 --seed $((3 + i)) "${sargs[@]}" 2>/dev/null |
      perl -0777 -pe 's/\n\z//; s/\\/\\\\/g; s/\n/\\n/g' >>"$tmp/solo" && echo >>"$tmp/solo"
    i=$((i + 1))
  done <"$tmp/lines"
  if cmp -s "$tmp/batch" "$tmp/solo" && [ "$(wc -l <"$tmp/batch")" -eq 3 ]; then
    ok "run --batch --format json, $how, 3 lines on 2 slots: each line run --format's answer alone"
  else
    fail "run --batch --format json, $how" "$(cat "$tmp/batch" "$tmp/batch.err")" "$(cat "$tmp/solo")"
  fi
done
expect_error "run --batch --format without a model's tokenizer" \
  "mkc: error: run --batch: --format (JSON output) needs the model's tokenizer: -m, and text on the file's lines" \
  -- run --preset tiny --random-weights 1 --batch "$tmp/lines" --format json
expect_error "run --batch --format with drafts" \
  "mkc: error: run --batch: --format (JSON output) chooses each token on the host, one a step on the slots: drop --draft-max" \
  -- run -m "$model" --batch "$tmp/lines" --format json --draft-max 2
finish
