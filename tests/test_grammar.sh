#!/usr/bin/env bash
# Output by a GBNF grammar end to end (the matcher and the trie walk are
# test_gbnf's): run, chat and run --batch with --grammar and --grammar-file
# on the test data's SmolLM2 and the cpu backend. Python's re.fullmatch of a
# regular expression for the same language is the judge of each answer, and
# json.loads of the answers by a JSON grammar, which must also be the answer
# --format json gives (two constraints written apart, one language). Flags
# that cannot go with a grammar, and grammars with mistakes, are refused
# with their reasons and the file's line and column.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
unset MKC_KV_DTYPE

# ---- refusals that need no model ----
printf 'root ::= item+\nitem ::= "a" | thing\n' >"$tmp/undefined.gbnf"
expect_error "--grammar-file with an undefined rule: file:line:col" \
  "$tmp/undefined.gbnf:2:16: error: rule 'thing' is not defined" \
  -- run -m README.md -p hi --grammar-file "$tmp/undefined.gbnf"
expect_error "--grammar with a group left open" "mkc: error: --grammar: 1:10: the ( is not closed" \
  -- run -m README.md -p hi --grammar 'root ::= ("a"'
expect_error "--grammar-file a missing file" \
  "mkc: error: --grammar-file $tmp/none.gbnf: No such file or directory" \
  -- run -m README.md -p hi --grammar-file "$tmp/none.gbnf"
expect_error "--grammar with rounds" \
  "mkc: error: run: --grammar (output by a grammar) chooses each token on the host: not with --rounds (a launch's rounds are the kernel's choices)" \
  -- run -m README.md -p hi --grammar 'root ::= "a"' --rounds 4
expect_error "--grammar and --format json" \
  "mkc: error: run: JSON output (--format, -j, -jf) or a grammar: one of them" \
  -- run -m README.md -p hi --grammar 'root ::= "a"' --format json
expect_error "--grammar and --grammar-file" "mkc: error: chat: --grammar and --grammar-file: one of them" \
  -- chat -m README.md --grammar 'root ::= "a"' --grammar-file "$tmp/undefined.gbnf"
expect_error "--grammar without a tokenizer" \
  "mkc: error: run: --grammar (output by a grammar) needs the model's tokenizer: -m with -p or -f" \
  -- run --preset tiny --random-weights 1 -n 4 --grammar 'root ::= "a"'

model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2's answers by a grammar: no test data (tests/data/fetch.sh)"
  finish
  exit
fi
margs=(-m "$model" --backend cpu --no-display-prompt --ctx 512)

# matches FILE REGEX: FILE's text (less run's closing newline) is one whole match of REGEX.
matches() {
  python3 -c 'import re, sys
t = open(sys.argv[1]).read(); t = t[:-1] if t.endswith("\n") else t
sys.exit(0 if t and re.fullmatch(sys.argv[2], t, re.S) else 1)' "$1" "$2"
}
reason() { grep -o 'stopped: .*' "$1"; }

# ---- run, greedy: each answer a whole sentence of its grammar ----
prompts=("Is Paris the capital of France? Answer yes or no." "List three fruits." "Say hello to Tom."
  "What is 12 plus 30?")
grammars=('root ::= ("yes" | "no") "."' $'root ::= item{3}\nitem ::= "- " [a-zA-Z ]+ "\\n"'
  'root ::= [A-Z] [a-zA-Z ,.!]+' 'root ::= "The answer is " ( "-"? [0-9]{1,4} ) "."')
regexes=('(yes|no)\.' '(- [a-zA-Z ]+\n){3}' '[A-Z][a-zA-Z ,.!]+' 'The answer is -?[0-9]{1,4}\.')
whys=("stopped: the grammar allows nothing more" "stopped: the grammar allows nothing more"
  "stopped: end of generation" "stopped: the grammar allows nothing more")
for i in "${!prompts[@]}"; do
  "$mkc" run "${margs[@]}" --chat -p "${prompts[$i]}" --grammar "${grammars[$i]}" -n 60 >"$tmp/g$i" 2>"$tmp/g$i.err"
  if matches "$tmp/g$i" "${regexes[$i]}" && [ "$(reason "$tmp/g$i.err")" = "${whys[$i]}" ]; then
    ok "run --grammar, greedy: \"${prompts[$i]}\": '$(head -c 50 "$tmp/g$i" | tr '\n' '/')' matches /${regexes[$i]}/, ${whys[$i]}"
  else
    fail "run --grammar: ${prompts[$i]}" "$(cat "$tmp/g$i")" "$(tail -n 1 "$tmp/g$i.err")"
  fi
done
# the grammar is what made the answers so
"$mkc" run "${margs[@]}" --chat -p "Is Paris the capital of France? Answer yes or no." -n 20 >"$tmp/free" 2>/dev/null
matches "$tmp/free" '(yes|no)\.' && fail "unconstrained: the same prompt answers other than yes. or no." "$(cat "$tmp/free")" \
  || ok "unconstrained, the same prompt's answer is not 'yes.' or 'no.' (the grammar is what made it one)"

# --ignore-eos: no end token is offered, so generation runs to -n inside the grammar
"$mkc" run "${margs[@]}" --chat -p "Say hello to Tom." --grammar 'root ::= [A-Z] [a-zA-Z ,.!]+' -n 30 \
  --ignore-eos >"$tmp/noeos" 2>"$tmp/noeos.err"
matches "$tmp/noeos" '[A-Z][a-zA-Z ,.!]+' && [ "$(reason "$tmp/noeos.err")" = "stopped: -n reached" ] \
  && grep -q 'generated 30 tokens' "$tmp/noeos.err" \
  && ok "--ignore-eos: 30 tokens, all inside the grammar, past where the end token came" \
  || fail "--ignore-eos" "$(cat "$tmp/noeos")" "$(tail -n 1 "$tmp/noeos.err")"

# sampled, with drafts on two seeds (verified by speculative sampling on the host): every answer
# matches
bad=0
for seed in 1 2 3 4; do
  drafts=()
  [ $((seed % 2)) = 0 ] && drafts=(--draft-max 3)
  "$mkc" run "${margs[@]}" --chat -p "List three fruits." --grammar-file <(printf 'root ::= item{3}\nitem ::= "- " [a-zA-Z ]{1,30} "\\n"\n') \
    -n 120 --temp 1.0 --seed $seed "${drafts[@]}" >"$tmp/s$seed" 2>"$tmp/s$seed.err"
  matches "$tmp/s$seed" '(- [a-zA-Z ]{1,30}\n){3}' || bad=$((bad + 1))
done
[ "$bad" -eq 0 ] && ok "run --grammar-file --temp 1.0, 4 seeds (two with --draft-max 3): every answer is three list lines" \
  || fail "sampled" "$bad answers off the grammar" "$(cat "$tmp/s1")"

# ---- a JSON grammar: json.loads reads it, and it is --format json's answer ----
json_gbnf="$(dirname "$0")/grammars/json.gbnf"
p="Give the capital of France as a JSON object with the key capital."
"$mkc" run "${margs[@]}" --chat -p "$p" --grammar-file "$json_gbnf" -n 60 >"$tmp/j" 2>"$tmp/j.err"
"$mkc" run "${margs[@]}" --chat -p "$p" --format json -n 60 >"$tmp/jf" 2>/dev/null
is_object "$tmp/j" && [ "$(reason "$tmp/j.err")" = "stopped: the grammar allows nothing more" ] && cmp -s "$tmp/j" "$tmp/jf" \
  && ok "--grammar-file json.gbnf: an object json.loads reads, whole, and --format json's answer byte for byte" \
  || fail "json.gbnf" "$(cat "$tmp/j")" "$(cat "$tmp/jf")" "$(tail -n 1 "$tmp/j.err")"
p="Describe a cat called Tom, aged 3, as JSON."
"$mkc" run "${margs[@]}" --chat -p "$p" --grammar-file "$json_gbnf" -n 40 >"$tmp/k" 2>/dev/null
"$mkc" run "${margs[@]}" --chat -p "$p" --format json -n 40 >"$tmp/kf" 2>/dev/null
cmp -s "$tmp/k" "$tmp/kf" && [ "$(wc -c <"$tmp/k")" -gt 40 ] \
  && ok "--grammar-file json.gbnf, 40 tokens of a longer object: --format json's answer byte for byte" \
  || fail "json.gbnf, 40 tokens" "$(cat "$tmp/k")" "$(cat "$tmp/kf")"

# drafts, greedy: verified on the host, the same answer in fewer steps (prompt lookup finds the
# object's repeats)
for how in "--grammar-file $json_gbnf" "--format json"; do
  # shellcheck disable=SC2086
  "$mkc" run "${margs[@]}" --chat -p "$p" $how -n 80 >"$tmp/nd" 2>/dev/null
  # shellcheck disable=SC2086
  "$mkc" run "${margs[@]}" --chat -p "$p" $how -n 80 --draft-max 4 >"$tmp/d" 2>"$tmp/d.err"
  tps=$(grep -o '[0-9.]* tokens/step' "$tmp/d.err" | cut -d' ' -f1)
  cmp -s "$tmp/nd" "$tmp/d" && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1.2 else 1)" "$tps" \
    && ok "${how%% *} --draft-max 4: the answer without drafts, $tps tokens a step" \
    || fail "${how%% *} --draft-max 4" "$(cat "$tmp/d")" "$(cat "$tmp/nd")" "$(tail -n 1 "$tmp/d.err")"
done

# ---- chat: every answer by the grammar, the conversation going on ----
printf '%s\n%s\n' "Is the sky blue? Answer yes or no." "Is grass red? Answer yes or no." |
  "$mkc" chat -m "$model" --backend cpu --ctx 512 --grammar 'root ::= ("Yes" | "No") ", " [a-z ]+ "."' -n 40 \
  --verbose >"$tmp/chat" 2>"$tmp/chat.err"
python3 -c 'import re, sys
answers = [l for l in open(sys.argv[1]).read().split("\n") if l.strip()]
sys.exit(0 if len(answers) == 2 and all(re.fullmatch(r"(Yes|No), [a-z ]+\.", a) for a in answers) else 1)' "$tmp/chat" \
  && [ "$(grep -c "stopped: the grammar allows nothing more" "$tmp/chat.err")" = 2 ] \
  && ok "chat --grammar: two turns, each answer a whole sentence of the grammar" \
  || fail "chat --grammar" "$(cat "$tmp/chat")" "$(tail -n 2 "$tmp/chat.err")"

# ---- run --batch: each line's answer is the one it gets alone ----
printf '%s\n' "The colour of the sky is" "The best animal is the" "One, two," >"$tmp/lines"
g='root ::= " " [a-z]+ ("," | ".")'
"$mkc" run "${margs[@]}" --batch "$tmp/lines" --grammar "$g" -n 10 >"$tmp/batch" 2>"$tmp/batch.err"
alone=""
while IFS= read -r line; do
  alone+="$("$mkc" run "${margs[@]}" -p "$line" --grammar "$g" -n 10 2>/dev/null)"$'\n'
done <"$tmp/lines"
[ "$(cat "$tmp/batch")"$'\n' = "$alone" ] && python3 -c 'import re, sys
sys.exit(0 if all(re.fullmatch(r" [a-z]+[,.]", l) for l in open(sys.argv[1]).read().split("\n")[:3]) else 1)' "$tmp/batch" \
  && ok "run --batch --grammar: 3 lines, each the answer run gives it alone, each matching" \
  || fail "run --batch --grammar" "$(cat "$tmp/batch")" "alone: $alone" "$(tail -n 1 "$tmp/batch.err")"

# ---- serve: llama-server's "grammar" field ----
jstr() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
"$mkc" run "${margs[@]}" -p "The colour of the sky is" --grammar "$g" -n 10 >"$tmp/c0" 2>/dev/null
chat_req="{\"messages\": [{\"role\": \"user\", \"content\": \"${prompts[1]}\"}], \"grammar\": $(jstr "${grammars[1]}"), \"max_tokens\": 60}"
comp_req="{\"prompt\": \"The colour of the sky is\", \"grammar\": $(jstr "$g"), \"max_tokens\": 10}"
if start smolgbnf -m "$model" --backend cpu --ctx 512; then
  call POST /v1/chat/completions "$chat_req"
  [ "$status" = 200 ] && [ "$(content choices 0 message content)" = "$(quoted "$tmp/g1")" ] \
    && [ "$(get choices 0 finish_reason)" = stop ] \
    && ok "serve, a chat request's grammar: run --grammar's answer, finish_reason stop" \
    || fail "serve chat grammar" "want: $(quoted "$tmp/g1")" "got: $(head -c 400 "$tmp/ans")"
  call POST /v1/completions "$comp_req"
  [ "$status" = 200 ] && [ "$(content choices 0 text)" = "$(quoted "$tmp/c0")" ] \
    && ok "serve, a completion's grammar: run -p --grammar's answer" \
    || fail "serve completion grammar" "want: $(quoted "$tmp/c0")" "got: $(head -c 400 "$tmp/ans")"
  grep -q "stopped: the grammar allows nothing more" "$tmp/smolgbnf.err" \
    && ok "serve: the log says the answer stopped where the grammar allows nothing more" \
    || fail "serve's log" "$(tail -n 3 "$tmp/smolgbnf.err")"
  refused "serve, a grammar with a mistake" 400 "grammar: 1:10: the ( is not closed" POST /v1/chat/completions \
    '{"messages": [{"role": "user", "content": "hi"}], "grammar": "root ::= (\"a\""}'
  refused "serve, a grammar that is not text" 400 "grammar: expected GBNF text (a string)" POST /v1/completions \
    '{"prompt": "hi", "grammar": 7}'
  refused "serve, a grammar and response_format json_object" 400 "grammar and response_format (JSON output): one of them" \
    POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}}'
  # llama-server's json_schema field: the answer response_format's json_schema gives
  sch='{"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"]}'
  ask="{\"role\": \"user\", \"content\": \"Give the capital of France as JSON.\"}"
  call POST /v1/chat/completions "{\"messages\": [$ask], \"json_schema\": $sch, \"max_tokens\": 40}"
  a1=$(content choices 0 message content)
  call POST /v1/chat/completions "{\"messages\": [$ask], \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": $sch}}, \"max_tokens\": 40}"
  a2=$(content choices 0 message content)
  [ -n "$a1" ] && [ "$a1" = "$a2" ] && python3 -c 'import json, sys; d = json.loads(json.loads(sys.argv[1])); sys.exit(0 if isinstance(d.get("capital"), str) else 1)' "$a1" \
    && ok "serve, llama-server's json_schema field: response_format json_schema's answer, an object with a string capital" \
    || fail "serve json_schema" "$a1" "$a2"
  refused "serve, json_schema and response_format json_object" 400 "json_schema and response_format (JSON output): one of them" \
    POST /v1/chat/completions "{\"messages\": [$ask], \"json_schema\": $sch, \"response_format\": {\"type\": \"json_object\"}}"
  refused "serve, grammar and json_schema" 400 "grammar and json_schema: one of them" \
    POST /v1/completions "{\"prompt\": \"hi\", \"json_schema\": $sch, \"grammar\": \"root ::= \\\"a\\\"\"}"
  stop smolgbnf
fi
# --parallel: a grammar's request beside a free one, each what it gets alone
if start smolgbnfpar -m "$model" --backend cpu --ctx 512 --parallel 2; then
  python3 "$client" "$port" many /v1/chat/completions "$chat_req" \
    "{\"messages\": [{\"role\": \"user\", \"content\": \"${prompts[0]}\"}], \"max_tokens\": 20}" >"$tmp/many" 2>&1
  { quoted "$tmp/g1" && quoted "$tmp/free"; } >"$tmp/want"
  cmp -s "$tmp/many" "$tmp/want" \
    && ok "serve --parallel 2: a grammar's request and a free one at once, each run's answer alone" \
    || fail "serve --parallel grammar" "$(diff "$tmp/want" "$tmp/many")"
  stop smolgbnfpar
fi

finish
