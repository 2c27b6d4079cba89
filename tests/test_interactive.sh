#!/usr/bin/env bash
# mkc run -i/-if (llama-completion's interactive mode) on random weights that
# read and write SmolLM2's tokens: each run's whole stdout against what
# tests/interactive_oracle.py works out with plain `mkc run --prompt-ids` and
# `mkc tokenize` (the prompt; each reply up to -n tokens, a reverse prompt or
# an end-of-generation token, after which the first reverse prompt is read
# unprinted; --in-prefix and --in-suffix printed and read around each input;
# an empty line giving the model the turn; a full context ending the run or,
# with --context-shift, shifted as run shifts); how lines join into one
# input; --in-prefix-bos; the refusals.
source "$(dirname "$0")/lib.sh"
model=$tmp/t.gguf
tiny_smol "$model" || {
  finish
  exit
}

# check NAME SPEC_JSON ARGS...: mkc run -i ARGS with the spec's inputs on stdin (one a line)
# against the oracle's stdout for the spec; sets out and err
check() {
  local name=$1 spec=$2
  shift 2
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(mkc=sys.argv[2], model=sys.argv[3]); print(json.dumps(d))' \
    "$spec" "$mkc" "$model" >"$tmp/spec.json"
  python3 tests/interactive_oracle.py "$tmp/spec.json" >"$tmp/want" 2>"$tmp/oracle_err" \
    || { fail "$name: the oracle" "$(tail -3 "$tmp/oracle_err")"; return; }
  python3 -c 'import json,sys; [print(i) for i in json.load(open(sys.argv[1]))["inputs"]]' "$tmp/spec.json" \
    | "$mkc" run -m "$model" --backend cpu "$@" >"$tmp/got" 2>"$tmp/got_err"
  local rc=$?
  if [ "$rc" -eq 0 ] && cmp -s "$tmp/got" "$tmp/want"; then
    ok "$name"
  else
    fail "$name" "exit $rc" "want: $(head -c 600 "$tmp/want" | cat -A | head -5)" \
      "got:  $(head -c 600 "$tmp/got" | cat -A | head -5)" "$(tail -2 "$tmp/got_err")"
  fi
}

P="Once upon a time"
base='"ctx": 256, "n": 5, "prompt": "Once upon a time", "prefix": "User: ", "suffix": "\nBot:"'
check "-i -n 5: three replies of 5 tokens around two inputs, prefix and suffix printed" \
  "{$base, \"inputs\": [\"Hello there\", \"How are you\"]}" \
  --ctx 256 -p "$P" -i -n 5 --in-prefix "User: " --in-suffix '\nBot:' --verbose-prompt
if grep -q '^mkc: the input: 8 tokens$' "$tmp/got_err" && grep -q "^ 19556 -> 'Hello'$" "$tmp/got_err" \
  && grep -q 'interactive: 3 replies; prompt 4 tokens' "$tmp/got_err" \
  && grep -q 'ended: the end of input$' "$tmp/got_err"; then
  ok "--verbose-prompt lists each input's tokens; the stats line counts the replies"
else
  fail "--verbose-prompt and the stats line" "$(cat "$tmp/got_err")"
fi
check "-i with --draft-max 4: the same text" \
  "{$base, \"inputs\": [\"Hello there\", \"How are you\"]}" \
  --ctx 256 -p "$P" -i -n 5 --in-prefix "User: " --in-suffix '\nBot:' --draft-max 4
check "-if: the user writes first, after the prompt" \
  "{$base, \"first\": true, \"inputs\": [\"Hello there\", \"How are you\"]}" \
  --ctx 256 -p "$P" -if -n 5 --in-prefix "User: " --in-suffix '\nBot:'
check "an empty line gives the model the turn again (no suffix, no tokens)" \
  "{$base, \"inputs\": [\"Hello\", \"\", \"Bye\"]}" \
  --ctx 256 -p "$P" -i -n 5 --in-prefix "User: " --in-suffix '\nBot:'
check "-if with no prompt: the first input starts the text" \
  '{"ctx": 256, "n": 4, "prompt": "", "prefix": "> ", "first": true, "inputs": ["Tell me", "More"]}' \
  --ctx 256 -if -n 4 --in-prefix "> "

# -r: the reply ends at the token completing the text of the first reply's third token
third=$("$mkc" run -m "$model" --backend cpu --ctx 256 -p "$P" -n 3 --json 2>/dev/null \
  | python3 -c 'import json,sys; print([json.loads(l)["text"] for l in sys.stdin if l.startswith("{\"id\"")][2].strip())')
if [ -n "$third" ]; then
  check "-r '$third': each reply ends at the token completing it (then the user's turn)" \
    "{$base, \"n\": 8, \"reverse\": [\"$third\"], \"inputs\": [\"Hello there\", \"How are you\"]}" \
    --ctx 256 -p "$P" -i -n 8 -r "$third" --in-prefix "User: " --in-suffix '\nBot:'
else
  fail "-r: the first reply's third token has no text to end at"
fi
# a prompt that ends in the reverse prompt: the user's turn first; an empty line then gives the
# model the turn all the same
check "a prompt ending in -r's text: the user writes first" \
  '{"ctx": 256, "n": 5, "prompt": "Once upon a time\nUser:", "reverse": ["User:"], "inputs": [" Hello", "Bye"]}' \
  --ctx 256 -p "Once upon a time\nUser:" -i -n 5 -r "User:"
check "... and an empty line there gives the model the turn" \
  '{"ctx": 256, "n": 5, "prompt": "Once upon a time\nUser:", "reverse": ["User:"], "inputs": ["", "Bye"]}' \
  --ctx 256 -p "Once upon a time\nUser:" -i -n 5 -r "User:"
# an end-of-generation token (<|im_end|>, its logit raised): kept, unprinted, a newline, then -r's
# first text read unprinted before the input
check "an end-of-generation token ends a reply; the first -r follows it unprinted" \
  "{$base, \"n\": 12, \"reverse\": [\"User:\"], \"args\": [\"-l\", \"2+1.5\"], \"inputs\": [\"Hello there\", \"How are you\"]}" \
  --ctx 256 -p "$P" -i -n 12 -r "User:" -l 2+1.5 --in-prefix "User: " --in-suffix '\nBot:'
grep -c '' "$tmp/want" | grep -qv '^1$' && ok "... (the oracle's text has the newline after the end token)" \
  || fail "the end-of-generation case: the oracle's replies never ended on the token" "$(cat "$tmp/want")"

# a full context: the run ends (said on stderr), status 0; --context-shift goes on
check "--ctx 32 -n 40: the first reply fills the context and the run ends" \
  '{"ctx": 32, "n": 40, "prompt": "Once upon a time", "inputs": ["Hello"]}' \
  --ctx 32 -p "$P" -i -n 40
grep -q 'ended: the context is full$' "$tmp/got_err" && grep -q '^mkc: the context is full (32 tokens)' "$tmp/got_err" \
  && ok "... the stats say so" || fail "full context: stderr" "$(cat "$tmp/got_err")"
check "--ctx 32 --context-shift -n 40: replies shift as run does, an input past the context too" \
  '{"ctx": 32, "n": 40, "shift": true, "prompt": "Once upon a time", "prefix": "User: ", "suffix": "\nBot:", "inputs": ["Hello there", "Bye"]}' \
  --ctx 32 -p "$P" -i -n 40 --context-shift --in-prefix "User: " --in-suffix '\nBot:'
shifts=$(sed -n 's/^shifts //p' "$tmp/oracle_err")
[ "$shifts" -gt 1 ] && grep -Eq "shifted $shifts times; ended: the end of input\$" "$tmp/got_err" \
  && ok "... the stats count the $shifts shifts, those before a reply's first token too" \
  || fail "shifts: stderr" "oracle: $shifts" "$(cat "$tmp/got_err")"
check "--context-shift --keep 2: the first two tokens stay" \
  '{"ctx": 32, "n": 40, "shift": true, "keep": 2, "prompt": "Once upon a time", "inputs": ["Hello there"]}' \
  --ctx 32 -p "$P" -i -n 40 --context-shift --keep 2

# --prompt-cache: the first run saves the prompt's rows, the second reads them and writes the same
pc=(--ctx 256 -p "$P" -i -n 5 --prompt-cache "$tmp/pc")
printf 'Hello\n' | "$mkc" run -m "$model" --backend cpu "${pc[@]}" >"$tmp/pc1" 2>"$tmp/pc1_err"
printf 'Hello\n' | "$mkc" run -m "$model" --backend cpu "${pc[@]}" >"$tmp/pc2" 2>"$tmp/pc2_err"
fed() { sed -E -n 's/.*; fed ([0-9]+) tokens.*/\1/p' "$1"; }
if [ -s "$tmp/pc" ] && [ -s "$tmp/pc1" ] && cmp -s "$tmp/pc1" "$tmp/pc2" \
  && grep -q 'prompt 4 tokens (0 from --prompt-cache)' "$tmp/pc1_err" \
  && grep -q 'prompt 4 tokens (3 from --prompt-cache)' "$tmp/pc2_err" \
  && [ "$(fed "$tmp/pc2_err")" = $(($(fed "$tmp/pc1_err") - 3)) ]; then
  ok "--prompt-cache: a second run reads the prompt's rows (3 fewer fed) and writes the same text"
else
  fail "--prompt-cache" "$(cat "$tmp/pc1_err" "$tmp/pc2_err")" "$(cat -A "$tmp/pc1" "$tmp/pc2")"
fi

# input lines: a line ending in \ goes on; with -mli, lines go on until one ending in /
input_tokens() { sed -n '/^mkc: the input/,$p' "$tmp/err" | sed -n '2,$p' | grep -E '^ +[0-9]+ ->' | awk '{print $1}' | tr '\n' ' '; }
want=$("$mkc" tokenize -m "$model" --ids --no-bos --no-parse-special --no-escape -p "$(printf 'one\ntwo')" | tr -d '[],')
printf 'one\\\ntwo\n' | "$mkc" run -m "$model" --backend cpu --ctx 256 -p "$P" -i -n 1 --verbose-prompt >/dev/null 2>"$tmp/err"
[ "$(input_tokens | xargs)" = "$(echo $want | xargs)" ] && ok "a line ending in \\ joins the next: one input 'one\\ntwo'" \
  || fail "\\ continuation" "want $want" "got $(input_tokens)"
printf 'one\ntwo/\n' | "$mkc" run -m "$model" --backend cpu --ctx 256 -p "$P" -i -n 1 -mli --verbose-prompt >/dev/null 2>"$tmp/err"
[ "$(input_tokens | xargs)" = "$(echo $want | xargs)" ] && ok "-mli: lines join until one ending in /" \
  || fail "-mli" "want $want" "got $(input_tokens)"
printf '<|im_start|>x\\ty\n' | "$mkc" run -m "$model" --backend cpu --ctx 256 -p "$P" -i -n 1 --verbose-prompt \
  --in-prefix-bos --in-prefix '<|im_start|>' >/dev/null 2>"$tmp/err"
want=$(printf '1 1 %s' "$("$mkc" tokenize -m "$model" --ids --no-bos --no-parse-special --no-escape -p "$(printf '<|im_start|>x\ty')" | tr -d '[],')")
[ "$(input_tokens | xargs)" = "$(echo $want | xargs)" ] \
  && ok "--in-prefix-bos: BOS, the prefix's control token, the input's spelling as text and its \\t escape" \
  || fail "--in-prefix-bos" "want $want" "got $(input_tokens)"

expect_error "--in-prefix without -i" \
  "mkc: error: run: --in-prefix, --in-suffix, --in-prefix-bos and -mli shape what the user writes: they go with -i or -if" \
  -- run -m "$model" -p "$P" --in-prefix "x"
expect_error "-i without a model" "mkc: error: run -i: the user writes text: -m MODEL (a tokenizer)" \
  -- run --preset tiny --random-weights 1 -i
expect_error "-i --chat" \
  "mkc: error: run -i writes text in turn with the user: none of --prompt-ids, --batch, --json, --logprobs, --format, --grammar, --kernel, or --chat, -sys, --chat-template, --reasoning-* (a chat template's turns: mkc chat)" \
  -- run -m "$model" -p "$P" -i --chat
expect_error "-cnv on run" \
  "mkc: error: -cnv: a conversation is mkc's chat command (mkc chat -m MODEL); run answers one prompt (--chat: with the chat template; -i: the user writes in turn with the model, as text)" \
  -- run -m "$model" -p "$P" -cnv
finish
