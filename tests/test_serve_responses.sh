#!/usr/bin/env bash
# OpenAI's Responses API on mkc serve (POST /v1/responses), random weights that read and write
# SmolLM2's tokens, served in Qwen2.5's template (tools): each response against the same
# server's /v1/chat/completions answer to the chat request it stands for (its text, prompt
# tokens, why it ended), whole and streamed (the event protocol checked by serve_client.py);
# input items (developer, typed and easy messages, a function call and its output, an
# assistant's reply) and Responses-shaped tools counted as the equivalent chat request
# (/v1/responses/input_tokens against /v1/chat/completions/input_tokens and a chat's usage);
# text.format; the refusals.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
model=$tmp/t.gguf
tiny_smol "$model" || {
  finish
  exit
}
start resp -m "$model" --backend cpu --ctx 512 --chat-template qwen2.5 || { finish; exit; }

# same NAME RESPONSES_BODY CHAT_BODY: the response's message text, status and usage against the
# chat's content, finish_reason and usage
same() {
  local name=$1
  call POST /v1/chat/completions "$3"
  local text finish prompt n
  text=$(content choices 0 message content) finish=$(get choices 0 finish_reason)
  prompt=$(get usage prompt_tokens) n=$(get usage completion_tokens)
  call POST /v1/responses "$2"
  local status_want=completed
  [ "$finish" = length ] && status_want=incomplete
  if [ "$status" = 200 ] && [ "$(content output 0 content 0 text)" = "$text" ] \
    && [ "$(get output 0 type)" = message ] && [ "$(get output 0 role)" = assistant ] \
    && [ "$(get status)" = "$status_want" ] && [ "$(get object)" = response ] \
    && [ "$(get usage input_tokens)" = "$prompt" ] && [ "$(get usage output_tokens)" = "$n" ] \
    && [[ $(get id) == resp_* ]] && [[ $(get output 0 id) == msg_* ]]; then
    ok "$name: the chat's text $text, $status_want, $prompt + $n tokens"
  else
    fail "$name" "chat: $text ($finish, $prompt + $n)" "got:  $(head -c 500 "$tmp/ans")"
  fi
}

same "input and instructions, max_output_tokens 6" \
  '{"model": "m", "input": "Hello there", "instructions": "Be brief.", "max_output_tokens": 6}' \
  '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}], "max_tokens": 6}'
[ "$(get incomplete_details reason)" = max_output_tokens ] \
  && ok "... incomplete_details.reason max_output_tokens" || fail "incomplete_details" "$(cat "$tmp/body")"
text6=$(content output 0 content 0 text)
# an end-of-turn token first (<|im_end|>, id 2, biased): completed, its message empty
same "an end-of-turn token: completed, the message empty" \
  '{"input": "Hello there", "max_output_tokens": 6, "logit_bias": {"2": 100}}' \
  '{"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 6, "logit_bias": {"2": 100}}'
[ "$(get incomplete_details)" = None ] && ok "... incomplete_details null" || fail "completed: incomplete_details" "$(cat "$tmp/body")"

python3 "$client" "$port" responses /v1/responses \
  '{"input": "Hello there", "instructions": "Be brief.", "max_output_tokens": 6, "stream": true}' >"$tmp/s"
prompt=$(sed -n 's/.*usage=\([0-9]*\)+.*/\1/p' "$tmp/s")
[ "$(head -n 1 "$tmp/s")" = "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]))' "$text6")" ] \
  && grep -qx "events=created,in_progress,output_item.added,content_part.added,output_text.delta,output_text.done,content_part.done,output_item.done,incomplete status=incomplete usage=$prompt+6 items=message problems=none" "$tmp/s" \
  && ok "streamed: named, numbered events in the protocol's order, the same text, response.incomplete" \
  || fail "stream" "want: $text6" "got:  $(cat "$tmp/s")"
python3 "$client" "$port" responses /v1/responses \
  '{"input": "Hello there", "max_output_tokens": 6, "logit_bias": {"2": 100}, "stream": true}' >"$tmp/s"
grep -qx "events=created,in_progress,output_item.added,content_part.added,output_text.done,content_part.done,output_item.done,completed status=completed usage=[0-9]*+0 items=message problems=none" "$tmp/s" \
  && ok "streamed, an empty reply: its message item all the same, response.completed" \
  || fail "empty stream" "$(cat "$tmp/s")"

# input items and Responses-shaped tools: the prompt of the equivalent chat request
tool='{"type": "function", "name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}'
items='[{"role": "developer", "content": "Be brief."},
  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in "}, {"type": "input_text", "text": "Paris?"}]},
  {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
  {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 21 C."}]},
  {"role": "user", "content": "Thanks"}]'
msgs='[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
  {"role": "assistant", "content": "It is 21 C."}, {"role": "user", "content": "Thanks"}]'
call POST /v1/chat/completions "{\"messages\": $msgs, \"tools\": [{\"type\": \"function\", \"function\": ${tool/\"type\": \"function\", /}}], \"max_tokens\": 2}"
chat_prompt=$(get usage prompt_tokens)
call POST /v1/chat/completions/input_tokens "{\"messages\": $msgs, \"tools\": [{\"type\": \"function\", \"function\": ${tool/\"type\": \"function\", /}}]}"
chat_count=$(get input_tokens) chat_object=$(get object)
call POST /v1/responses/input_tokens "{\"input\": $items, \"tools\": [$tool, {\"type\": \"web_search\"}]}"
resp_count=$(get input_tokens)
[ -n "$chat_prompt" ] && [ "$chat_count" = "$chat_prompt" ] && [ "$chat_object" = response.input_tokens ] \
  && ok "/v1/chat/completions/input_tokens: the chat's prompt tokens ($chat_prompt), object response.input_tokens" \
  || fail "chat input_tokens" "chat prompt $chat_prompt, counted $chat_count ($chat_object)"
[ "$resp_count" = "$chat_prompt" ] && [ "$(get object)" = response.input_tokens ] \
  && ok "/v1/responses/input_tokens: items and a function tool as the chat request's prompt ($resp_count); web_search left out" \
  || fail "responses input_tokens" "chat $chat_prompt, responses $resp_count" "$(cat "$tmp/body")"
same "items with a tool call and its result, tools" \
  "{\"input\": $items, \"tools\": [$tool], \"max_output_tokens\": 2}" \
  "{\"messages\": $msgs, \"tools\": [{\"type\": \"function\", \"function\": ${tool/\"type\": \"function\", /}}], \"max_tokens\": 2}"

# text.format as response_format
same "text.format json_object: the chat's JSON answer" \
  '{"input": "Give me an object", "max_output_tokens": 12, "text": {"format": {"type": "json_object"}}}' \
  '{"messages": [{"role": "user", "content": "Give me an object"}], "max_tokens": 12, "response_format": {"type": "json_object"}}'
same "text.format json_schema: the chat's answer to the schema" \
  '{"input": "Name", "max_output_tokens": 12, "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}}' \
  '{"messages": [{"role": "user", "content": "Name"}], "max_tokens": 12, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}}'
call POST /v1/responses '{"input": "Hi", "max_output_tokens": 1, "store": true, "metadata": {"k": "v"}}'
sleep 0.2
[ "$status" = 200 ] && grep 'POST /v1/responses' "$tmp/resp.err" | tail -n 1 | grep -q 'store, metadata' \
  && ok "store and metadata: answered, named on the log line as not followed" \
  || fail "store noted" "$(grep 'POST /v1/responses' "$tmp/resp.err" | tail -n 1)"

refused "previous_response_id" 400 "previous_response_id: mkc stores no responses" POST /v1/responses \
  '{"input": "a", "previous_response_id": "resp_1"}'
refused "no input" 400 "input: expected a string or a non-empty list of items" POST /v1/responses '{"instructions": "a"}'
refused "an image" 400 "input[0].content[1]: this model reads text only" POST /v1/responses \
  '{"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}]}]}'
refused "an item_reference" 400 "input[0]: item_reference: mkc stores no items" POST /v1/responses \
  '{"input": [{"type": "item_reference", "id": "msg_1"}]}'
refused "an item of no kind" 400 "input[1]: expected a message, function_call, function_call_output or reasoning item" \
  POST /v1/responses '{"input": [{"role": "user", "content": "a"}, {"type": "web_search_call"}]}'
refused "a function_call without call_id" 400 "input[1]: a function_call has string \"name\", \"arguments\" and \"call_id\"" \
  POST /v1/responses '{"input": [{"role": "user", "content": "a"}, {"type": "function_call", "name": "f", "arguments": "{}"}]}'
refused "text.format of another type" 400 "text.format: {\"type\": \"text\"}" POST /v1/responses \
  '{"input": "a", "text": {"format": {"type": "xml"}}}'
refused "GET" 405 "use POST" GET /v1/responses
refused "a stored response asked for" 404 "mkc stores no responses" GET /v1/responses/resp_1
refused "... or deleted" 404 "mkc stores no responses" DELETE /v1/responses/resp_1
stop resp

# on the slots (--parallel 2): two responses at once, one streamed, each the plain server's text
if start par -m "$model" --backend cpu --ctx 512 --chat-template qwen2.5 --parallel 2; then
  q='{"input": "Hello there", "instructions": "Be brief.", "max_output_tokens": 6'
  python3 "$client" "$port" many /v1/responses "$q}" "$q, \"stream\": true}" >"$tmp/many" 2>&1
  python3 -c 'import json, sys; [print(json.dumps(json.loads(sys.argv[1]))) for _ in range(2)]' "$text6" >"$tmp/want"
  cmp -s "$tmp/many" "$tmp/want" && ok "--parallel 2: a response and a streamed one at once, the plain server's text" \
    || fail "--parallel responses" "want: $(cat "$tmp/want")" "got:  $(cat "$tmp/many")"
  stop par
fi
finish
