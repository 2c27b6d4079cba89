#!/usr/bin/env bash
# llama.cpp's -e/--escape (on by default) and -r/--reverse-prompt in run, chat
# and embed, on SmolLM2 (byte-level BPE: the echoed prompt is its bytes). The
# oracle for where a reverse prompt ends generation is a run without it: the
# first of its tokens whose text, added to the ones before, holds the string.
source "$(dirname "$0")/lib.sh"

# The argument checks need no model.
expect_error "-r without a model" \
  "mkc: error: run: -r (a reverse prompt) needs a model with a tokenizer (-m)" \
  -- run --preset tiny --random-weights 1 -n 3 -r x
expect_error "-r with --batch, no model" \
  "mkc: error: run --batch: -r (a reverse prompt) needs the model's tokenizer: -m" \
  -- run --preset tiny --random-weights 1 --batch /dev/null -r x
expect_error "an empty -r" "mkc: error: -r: an empty reverse prompt would end generation at once" \
  -- run --preset tiny --random-weights 1 -n 3 -r ''
expect_error "\\x00 in -p" \
  "mkc: error: -p: 'a\\\\x00b' names the NUL byte (\\x00), which a text cannot hold (--no-escape takes backslashes as written)" \
  -- run --preset tiny --random-weights 1 -n 3 -p 'a\x00b'
expect_error "\\x00 in -r (chat)" \
  "mkc: error: -r: 'stop\\\\x00' names the NUL byte (\\x00), which a text cannot hold (--no-escape takes backslashes as written)" \
  -- chat -m /dev/null -r 'stop\x00'
expect_error "-e and --no-escape" "mkc: error: -e/--escape and --no-escape: give one" \
  -- embed -m /dev/null -p hi -e --no-escape
many=()
for i in $(seq 17); do many+=(-r "r$i"); done
expect_error "17 reverse prompts" "mkc: error: -r: at most 16 reverse prompts, got 'r17' past them" \
  -- run --preset tiny --random-weights 1 -n 3 "${many[@]}"

model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
  finish
  exit
fi

# Escapes: the echo is the prompt as the model read it, byte for byte.
"$mkc" run -m "$model" -p 'A\tB\x41\q\\n\"x\x4g\' -n 1 --backend ref >"$tmp/esc" 2>"$tmp/err"
want=$(printf 'A\tBA\\q\\n"x\\x4g\\')
if [ "$(head -c ${#want} "$tmp/esc")" = "$want" ]; then
  ok "-p: \\t \\xHH \\\\ \\\" become their bytes; \\q, \\x4g and a last backslash stay as written"
else
  fail "-p escapes" "want: $want" "got:  $(cat "$tmp/esc" "$tmp/err")"
fi
printf 'The capital\nof France is' >"$tmp/nl.txt"
"$mkc" run -m "$model" -f "$tmp/nl.txt" -n 4 >"$tmp/file" 2>"$tmp/err"
"$mkc" run -m "$model" -p 'The capital\nof France is' -n 4 >"$tmp/esc" 2>>"$tmp/err"
if [ -s "$tmp/file" ] && cmp -s "$tmp/file" "$tmp/esc"; then
  ok "-p 'The capital\\nof France is' = -f with a newline there (prompt and completion)"
else
  fail "-p with \\n against -f" "$(cat "$tmp/file" "$tmp/esc" "$tmp/err")"
fi
"$mkc" run -m "$model" -p 'The capital\nof France is' -n 1 --no-escape --backend ref >"$tmp/raw" 2>&1
case "$(cat "$tmp/raw")" in
'The capital\nof France is'*) ok "--no-escape: the backslash read as written" ;;
*) fail "--no-escape" "$(cat "$tmp/raw")" ;;
esac
"$mkc" embed -m "$model" -p 'one\ntwo' --backend ref >"$tmp/emb" 2>"$tmp/err"
"$mkc" embed -m "$model" -p 'one\ntwo' --no-escape --backend ref >"$tmp/emb1" 2>>"$tmp/err"
if [ "$(wc -l <"$tmp/emb")" = 2 ] && [ "$(wc -l <"$tmp/emb1")" = 1 ]; then
  ok "embed -p 'one\\ntwo': two texts; with --no-escape one"
else
  fail "embed escapes" "$(head -c 200 "$tmp/emb" "$tmp/emb1" "$tmp/err")"
fi

# Reverse prompts. The oracle: the tokens of a run without -r, as JSON lines.
p="The capital of France is"
"$mkc" run -m "$model" -p "$p" -n 24 --json --backend ref >"$tmp/all.json" 2>"$tmp/err"
# where R first shows in the text of the tokens so far: that token's number (1-based)
first_hit() {
  python3 - "$tmp/all.json" "$1" <<'PY'
import json, sys
text = ""
for n, line in enumerate(open(sys.argv[1]), 1):
    d = json.loads(line)
    if "stats" in d:
        break
    text += d["text"]
    if sys.argv[2] in text:
        print(n)
        break
PY
}
# rev NAME R FLAGS...: the run with -r R stops at the oracle's token, prints the text up to it
rev() {
  local name=$1 r=$2 n
  shift 2
  n=$(first_hit "$r")
  "$mkc" run -m "$model" -p "$p" -n 24 -r "$r" --json "$@" >"$tmp/r.json" 2>"$tmp/err"
  local got
  got=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['stats']['generated'])" "$tmp/r.json" 2>/dev/null)
  if [ -n "$n" ] && [ "$got" = "$n" ] && cmp -s <(head -n "$n" "$tmp/all.json") <(head -n "$n" "$tmp/r.json") &&
    grep -qF "\"stopped\":\"reverse prompt \\\"$r\\\"\"" "$tmp/r.json"; then
    ok "-r '$r' ($name): ends at token $n, the one that completes it"
  else
    fail "-r '$r' ($name)" "oracle: token ${n:-none}; got ${got:-nothing}" "$(tail -n 2 "$tmp/r.json")" "$(cat "$tmp/err")"
  fi
}
rev "between tokens, reference" "The answer" --backend ref
rev "inside a token, reference" "Par" --backend ref
rev "spanning tokens, cpu kernel, drafts" "-01-" --draft-max 4 --ctx 512
rev "spanning tokens, cpu kernel, 4 rounds a launch" "-01-" --draft-max 4 --ctx 512 --rounds 4
rev "the second of two, cpu kernel" "answer is" -r "nowhere in the text" --ctx 512
# Text mode prints what it generated, the reverse prompt last.
"$mkc" run -m "$model" -p "$p" -n 24 -r "The answer" --no-display-prompt --backend ref >"$tmp/t" 2>"$tmp/err"
if [ "$(cat "$tmp/t")" = "$(printf ' Paris.\n\nThe answer')" ] &&
  grep -q 'stopped: reverse prompt "The answer"$' "$tmp/err"; then
  ok "-r in text mode: the completion up to and with the reverse prompt; the stats line says why"
else
  fail "-r in text mode" "$(cat "$tmp/t" "$tmp/err")"
fi
# A control token's text: with --ignore-eos SmolLM2 goes on past <|im_end|> to <|im_start|>, which
# no end of generation stops at, so only -r does.
q="What is the capital of France?"
"$mkc" run -m "$model" --chat -p "$q" -n 16 --ignore-eos --json --backend ref >"$tmp/all.json" 2>"$tmp/err"
im=$(python3 -c "
import json, sys
for n, l in enumerate(open(sys.argv[1]), 1):
    if json.loads(l).get('id') == 1: print(n); break" "$tmp/all.json")
"$mkc" run -m "$model" --chat -p "$q" -n 16 --ignore-eos -r '<|im_start|>' --json --backend ref \
  >"$tmp/r.json" 2>"$tmp/err"
if [ -n "$im" ] && grep -q "\"generated\":$im," "$tmp/r.json"; then
  ok "-r '<|im_start|>': ends at that control token (token $im)"
else
  fail "-r '<|im_start|>'" "want ${im:-a <|im_start|> in 16 tokens}" "$(tail -n 1 "$tmp/r.json")"
fi

# run --batch: each line ends at its reverse prompt as it does alone (lines on a slot kernel, their
# completions one a line with newlines as \n); the stats count the tokens up to it.
# The last line's drafts are all accepted: its string ends inside a step of 5 tokens.
printf 'The capital of France is\nOnce upon a time\nThe capital of Germany is\n%s\n' \
  "1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2" >"$tmp/lines"
rs=(-r "The answer" -r " a " -r "Berlin" -r "4, 5, 6, 1")
"$mkc" run -m "$model" --batch "$tmp/lines" -n 24 "${rs[@]}" --draft-max 4 >"$tmp/batch" 2>"$tmp/err"
: >"$tmp/solo"
total=0
while read -r line; do
  "$mkc" run -m "$model" -p "$line" -n 24 "${rs[@]}" --no-display-prompt --json --backend ref >"$tmp/j" 2>/dev/null
  python3 -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
print(''.join(json.loads(l)['text'] for l in lines[:-1]).replace('\\\\', '\\\\\\\\').replace('\\n', '\\\\n'))" "$tmp/j" >>"$tmp/solo"
  total=$((total + $(tail -n 1 "$tmp/j" | sed -E 's/.*"generated":([0-9]+).*/\1/')))
done <"$tmp/lines"
if cmp -s "$tmp/batch" "$tmp/solo" && grep -q "generated $total tokens" "$tmp/err"; then
  ok "run --batch -r: each line ends where it ends alone (the reference's), $total tokens counted"
else
  fail "run --batch -r" "$(diff "$tmp/solo" "$tmp/batch")" "want $total tokens: $(tail -n 1 "$tmp/err")"
fi

# chat: an answer ends at the reverse prompt and the chat goes on.
printf 'What is the capital of France?\nThanks.\n/exit\n' |
  "$mkc" chat -m "$model" -r 'Paris' --verbose --backend ref >"$tmp/chat" 2>"$tmp/chat.err"
rc=$?
if [ "$rc" = 0 ] && [ "$(head -n 1 "$tmp/chat")" = "The capital of France is Paris" ] &&
  grep -q '^mkc: turn 1: .*stopped: reverse prompt "Paris"$' "$tmp/chat.err" &&
  grep -q '^mkc: turn 2: ' "$tmp/chat.err"; then
  ok "chat -r: the answer ends at the reverse prompt, and a second turn follows"
else
  fail "chat -r" "exit $rc" "$(cat "$tmp/chat" "$tmp/chat.err")"
fi

finish
