#!/usr/bin/env bash
# mkc chat through a pseudo-terminal (tests/chat_pty.py) on SmolLM2 (ChatML):
# turn 2 processes only its own tokens (counted against a one-shot run of the
# whole conversation) and answers as that one-shot run does, token for token
# (greedy); Ctrl-C stops an answer and the chat goes on with its KV. Also
# run's text-prompt flags: --chat, -f, --ignore-eos, --no-display-prompt,
# the stop reasons, and Ctrl-C ending a run with its stats line.
source "$(dirname "$0")/lib.sh"
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$model" ]; then
  skip "SmolLM2: no test data (tests/data/fetch.sh)"
  finish
  exit
fi
if ! command -v python3 >/dev/null; then
  skip "chat through a pty: no python3"
  finish
  exit
fi
sys="You are a helpful assistant."
m1="What is the capital of France?"
m2="And of Germany?"
m3="Write a long story about a dragon and a knight."
m4="Thanks. What is two plus two?"
python3 tests/chat_pty.py "$mkc" "$model" "$sys" "$m1" "$m2" "$m3" "$m4" >"$tmp/chat.json"
field() { python3 -c "import json,sys; d=json.load(open('$tmp/chat.json')); print($1)"; }
err=$(field "d.get('error', '')")
if [ -n "$err" ]; then
  fail "mkc chat through a pty" "$err"
  finish
  exit
fi
ok "mkc chat: four turns through a pty, /exit"
[ "$(field "d['exit']")" = 0 ] && ok "chat: /exit ends with status 0" || fail "chat: exit status" "$(field "d['exit']")"

# "processed P tokens (C cached, conversation N)", "generated G tokens"
stat() { field "d['turns'][$1][1]" | sed -E "s/.*$2.*/\\1/"; }
p1=$(stat 0 'processed ([0-9]+) tokens') n1=$(stat 0 'conversation ([0-9]+)')
g1=$(stat 0 'generated ([0-9]+) tokens')
p2=$(stat 1 'processed ([0-9]+) tokens') c2=$(stat 1 '\(([0-9]+) cached')
g2=$(stat 1 'generated ([0-9]+) tokens')
a1=$(field "d['turns'][0][0].rstrip('\n')")
a2=$(field "d['turns'][1][0].rstrip('\n')")

# The whole conversation in ChatML as SmolLM2's card writes it, run at once.
printf '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' \
  "$sys" "$m1" "$a1" "$m2" >"$tmp/conv.txt"
"$mkc" run -m "$model" -f "$tmp/conv.txt" --no-display-prompt --draft-max 4 --ctx 512 \
  >"$tmp/one.out" 2>"$tmp/one.err"
whole=$(sed -E -n 's/.*prompt ([0-9]+) tokens.*/\1/p' "$tmp/one.err")
gone=$(sed -E -n 's/.*generated ([0-9]+) tokens.*/\1/p' "$tmp/one.err")
# Turn 1 read p1 tokens and wrote g1 (its end token last, not yet read):
# turn 2's own tokens are the rest of the one-shot prompt, plus that end token.
if [ "$n1" = $((p1 + g1)) ] && [ "$c2" = $((p1 + g1 - 1)) ] && [ "$p2" = $((whole - p1 - g1 + 1)) ]; then
  ok "chat: turn 2 processed only its own $((whole - p1 - g1)) tokens + turn 1's end token ($c2 cached)"
else
  fail "chat: turn 2's tokens" "turn 1: processed $p1, generated $g1; turn 2: processed $p2, cached $c2" \
    "one-shot prompt: $whole tokens"
fi
if [ "$(cat "$tmp/one.out")" = "$a2" ] && [ "$gone" = "$g2" ]; then
  ok "chat: turn 2's answer equals a one-shot run of the conversation ($g2 tokens)"
else
  fail "chat: turn 2 vs one-shot" "chat ($g2 tokens): $a2" "run  ($gone tokens): $(cat "$tmp/one.out")"
fi
s3=$(field "d['turns'][2][1]")
case "$s3" in *"stopped: interrupted (Ctrl-C)"*) ok "chat: Ctrl-C stops the answer" ;;
*) fail "chat: Ctrl-C" "$s3" ;; esac
p4=$(stat 3 'processed ([0-9]+) tokens') c4=$(stat 3 '\(([0-9]+) cached')
n3=$(stat 2 'conversation ([0-9]+)') g3=$(stat 2 'generated ([0-9]+) tokens')
# Turn 3's last token, like every answer's, is the one turn 4 reads first.
if [ -n "$(field "d['turns'][3][0].strip()")" ] && [ "$g3" -gt 0 ] && [ "$c4" = $((n3 - 1)) ]; then
  ok "chat: after Ctrl-C the conversation goes on from the cache ($c4 cached, $p4 processed)"
else
  fail "chat: turn after Ctrl-C" "$(field "d['turns'][3]")"
fi

# A history that leaves less than -n tokens of the context loses its oldest turns, whole, down to
# half the context; the system message stays. The oracle: the kept turns in ChatML, run at once.
qs=("What is the capital of France?" "And of Germany?" "And of Spain?" "And of Italy?" "And of Peru?")
printf '%s\n' "${qs[@]}" | "$mkc" chat -m "$model" -sys "$sys" -n 16 --ctx 128 --verbose >"$tmp/fit.out" 2>"$tmp/fit.err"
rc=$?
mapfile -t as <"$tmp/fit.out"
note=$(grep -c 'leaves too little of the context (128) for an answer: its 6 oldest messages are left out' "$tmp/fit.err")
printf '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' \
  "$sys" "${qs[3]}" "${as[3]}" "${qs[4]}" >"$tmp/kept.txt"
"$mkc" run -m "$model" -f "$tmp/kept.txt" --no-display-prompt -n 16 --ctx 128 >"$tmp/kept.out" 2>"$tmp/kept.err"
whole=$(sed -E -n 's/.*prompt ([0-9]+) tokens.*/\1/p' "$tmp/kept.err")
t5=$(grep 'mkc: turn 5:' "$tmp/fit.err")
p5=$(sed -E -n 's/.*processed ([0-9]+) tokens \(([0-9]+) cached.*/\1+\2/p' <<<"$t5")
if [ "$rc" = 0 ] && [ "${#as[@]}" = 5 ] && [ "$note" = 1 ] && [ "$(cat "$tmp/kept.out")" = "${as[4]}" ] &&
  [ -n "$p5" ] && [ $((p5)) = "$whole" ]; then
  ok "chat: a history past the context less -n drops its 6 oldest messages; the next answer is run's on the kept turns ($whole tokens, $p5)"
else
  fail "chat: dropping the oldest turns" "exit $rc, ${#as[@]} answers, note $note" "want: $(cat "$tmp/kept.out") ($whole tokens)" \
    "got:  ${as[4]:-} ($p5)" "$(grep -v '^mkc: turn [1-4]:' "$tmp/fit.err")"
fi
printf 'Hi\n%s\n' "$(printf 'word %.0s' $(seq 100))" | "$mkc" chat -m "$model" -n 4 --ctx 64 >/dev/null 2>"$tmp/big.err"
rc=$?
grep -qx "mkc: error: the latest turn ([0-9]* tokens, with any system message) does not fit the context (64): start a new chat, with a larger --ctx" "$tmp/big.err" &&
  [ "$rc" = 1 ] && ok "chat: a turn that alone overflows the context ends the chat (status 1)" ||
  fail "chat: a turn too long" "exit $rc" "$(cat "$tmp/big.err")"

# A message over several lines: a line ending in \ goes on (the newline kept), or ollama's
# """ ... """ (a closing line of its own keeps the last newline); each is one turn that reads
# the tokens run --chat reads for the same text, and answers as it does
for form in backslash quotes quotes-alone; do
  text='Name two colours\nand two animals.'
  [ $form = quotes-alone ] && text="$text\\n" # (the pipeline below runs in a subshell)
  case $form in
  backslash) printf 'Name two colours\\\nand two animals.\n' ;;
  quotes) printf '"""Name two colours\nand two animals."""\n' ;;
  quotes-alone) printf '"""Name two colours\nand two animals.\n"""\n' ;;
  esac | "$mkc" chat -m "$model" -n 16 --ctx 256 --verbose >"$tmp/ml.out" 2>"$tmp/ml.err"
  "$mkc" run -m "$model" --chat -p "$text" -n 16 --ctx 256 --no-display-prompt >"$tmp/ml.want" 2>"$tmp/ml.werr"
  read_n=$(sed -E -n 's/^mkc: turn 1: processed ([0-9]+) tokens.*/\1/p' "$tmp/ml.err")
  want_n=$(sed -E -n 's/.*prompt ([0-9]+) tokens.*/\1/p' "$tmp/ml.werr")
  if [ "$(cat "$tmp/ml.out")" = "$(cat "$tmp/ml.want")" ] && [ -s "$tmp/ml.want" ] && [ -n "$read_n" ] \
    && [ "$read_n" = "$want_n" ] && ! grep -q '^mkc: turn 2' "$tmp/ml.err"; then
    ok "chat: a message over two lines ($form) is one turn of run --chat's $want_n tokens, and its answer"
  else
    fail "chat: a message over two lines ($form)" "want: $want_n tokens, $(cat "$tmp/ml.want")" \
      "got:  $read_n tokens, $(cat "$tmp/ml.out")"
  fi
done

# --context-shift: an answer of 80 tokens in a context of 64 goes on past it, as run --chat's does
# with the same flags; the next turn keeps only the system message and its own (the shifted
# answer overflows the context), and reads them anew: the cache's rows past --keep 2 hold the
# shortened history, not the system message, so its answer is a fresh chat's
m="Write a long story about a dragon and a knight."
flags=(-n 80 --ctx 64 --context-shift --keep 2)
"$mkc" run -m "$model" --chat -sys "$sys" -p "$m" "${flags[@]}" --no-display-prompt >"$tmp/shift.want" 2>"$tmp/shift.werr"
"$mkc" run -m "$model" --chat -sys "$sys" -p "Thanks." "${flags[@]}" --no-display-prompt >"$tmp/shift2.want" 2>/dev/null
printf '%s\nThanks.\n' "$m" | "$mkc" chat -m "$model" -sys "$sys" "${flags[@]}" --verbose >"$tmp/shift.out" 2>"$tmp/shift.err"
rc=$?
if [ "$rc" = 0 ] && cat "$tmp/shift.want" "$tmp/shift2.want" | cmp -s - "$tmp/shift.out" && [ -s "$tmp/shift2.want" ] \
  && grep -q 'shifted [1-9] times' "$tmp/shift.werr" && grep -q '^mkc: turn 1: .*generated 80 tokens' "$tmp/shift.err" \
  && grep -q '^mkc: turn 2: processed [0-9]* tokens (0 cached' "$tmp/shift.err"; then
  ok "chat --context-shift: 80 tokens past a context of 64, run --chat --context-shift's; turn 2 reads anew, a fresh chat's answer"
else
  fail "chat --context-shift" "exit $rc" "want: $(head -c 200 "$tmp/shift.want") / $(head -c 100 "$tmp/shift2.want")" \
    "got:  $(head -c 300 "$tmp/shift.out")" "$(cat "$tmp/shift.err")"
fi

# --prompt-cache: a chat's first turn leaves its prompt's rows; the next chat with the same
# system message reads as many as its first turn shares (the common start of the two prompts,
# counted by tokenize on their ChatML), and answers as a fresh chat does
rm -f "$tmp/chat.cache"
printf 'What is the capital of France?\n' | "$mkc" chat -m "$model" -sys "$sys" -n 8 --ctx 256 --prompt-cache "$tmp/chat.cache" >/dev/null 2>&1
printf 'And of Germany?\n' | "$mkc" chat -m "$model" -sys "$sys" -n 8 --ctx 256 --prompt-cache "$tmp/chat.cache" --verbose >"$tmp/pc.out" 2>"$tmp/pc.err"
"$mkc" run -m "$model" --chat -sys "$sys" -p "And of Germany?" -n 8 --ctx 256 --no-display-prompt >"$tmp/pc.want" 2>/dev/null
chatml() { printf '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$sys" "$1"; }
"$mkc" tokenize -m "$model" -p "$(chatml 'What is the capital of France?')" --ids --no-escape >"$tmp/t1"
"$mkc" tokenize -m "$model" -p "$(chatml 'And of Germany?')" --ids --no-escape >"$tmp/t2"
shared=$(python3 -c 'import sys, json
a, b = (json.load(open(f)) for f in sys.argv[1:])
n = 0
while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
print(n)' "$tmp/t1" "$tmp/t2")
if grep -q "^mkc: turn 1: processed [0-9]* tokens ($shared cached," "$tmp/pc.err" && cmp -s "$tmp/pc.out" "$tmp/pc.want" && [ "$shared" -gt 5 ]; then
  ok "chat --prompt-cache: the next chat's first turn reads the $shared tokens the two prompts share, and answers as run --chat"
else
  fail "chat --prompt-cache" "shared $shared" "$(grep 'turn 1' "$tmp/pc.err")" "want: $(cat "$tmp/pc.want")" "got:  $(cat "$tmp/pc.out")"
fi

# /clear starts the conversation over (the system message stays): the next answer is a first
# turn's, as run --chat gives it, and the tokens the session holds that begin its prompt (the
# system message's and more: the two first turns' common start, counted above) are not fed
# again; /? lists the commands and is no turn
printf 'What is the capital of France?\n/?\n/clear\nAnd of Germany?\n' |
  "$mkc" chat -m "$model" -sys "$sys" -n 16 --ctx 256 --verbose >"$tmp/clear.out" 2>"$tmp/clear.err"
"$mkc" run -m "$model" --chat -sys "$sys" -p "And of Germany?" -n 16 --ctx 256 --no-display-prompt >"$tmp/fresh.out" 2>/dev/null
if [ "$(sed -n 2p "$tmp/clear.out")" = "$(cat "$tmp/fresh.out")" ] && grep -q '^  /clear ' "$tmp/clear.err" &&
  grep -qx 'mkc: the conversation is cleared (its system message stays)' "$tmp/clear.err" &&
  grep -q "^mkc: turn 2: processed [0-9]* tokens ($shared cached, " "$tmp/clear.err" && ! grep -q '^mkc: turn 3' "$tmp/clear.err"; then
  ok "chat: /clear starts over (the next answer is run --chat's, $(wc -l <"$tmp/fresh.out") line; the $shared tokens its prompt shares with the session's, not fed again); /? lists the commands"
else
  fail "chat: /clear" "want: $(cat "$tmp/fresh.out")" "got:  $(sed -n 2p "$tmp/clear.out")" "$(cat "$tmp/clear.err")"
fi

# run: flags of llama.cpp users
# -sp/--special: control tokens printed, the closing <|im_end|> too, after the same answer
"$mkc" run -m "$model" --chat -p "Say hi" -n 40 --no-display-prompt >"$tmp/plain" 2>/dev/null
"$mkc" run -m "$model" --chat -p "Say hi" -n 40 --no-display-prompt -sp >"$tmp/sp" 2>"$tmp/sp.err"
if [ "$(cat "$tmp/sp")" = "$(cat "$tmp/plain")<|im_end|>" ] && grep -q 'stopped: end of generation' "$tmp/sp.err"; then
  ok "run -sp: the answer, then the <|im_end|> that ended it"
else
  fail "run -sp" "plain: $(cat "$tmp/plain")" "-sp:   $(cat "$tmp/sp")"
fi
# --verbose-prompt: the prompt's tokens on stderr, as tokenize lists them
"$mkc" run -m "$model" -p "The capital of France is" -n 1 --verbose-prompt >/dev/null 2>"$tmp/vp.err"
"$mkc" tokenize -m "$model" -p "The capital of France is" >"$tmp/tok" 2>/dev/null
if grep -q '^mkc: the prompt: 5 tokens$' "$tmp/vp.err" && grep -E "^ *[0-9]+ -> '" "$tmp/vp.err" | cmp -s - "$tmp/tok" \
  && [ -s "$tmp/tok" ]; then
  ok "run --verbose-prompt: the prompt's 5 tokens, tokenize's lines"
else
  fail "run --verbose-prompt" "$(cat "$tmp/vp.err")" "$(cat "$tmp/tok")"
fi
"$mkc" run -m "$model" -p "The capital of France is" -n 6 --no-display-prompt >"$tmp/a" 2>"$tmp/a.err"
"$mkc" run -m "$model" -p "The capital of France is" -n 6 >"$tmp/b" 2>"$tmp/b.err"
if [ "The capital of France is$(cat "$tmp/a")" = "$(cat "$tmp/b")" ] && grep -q 'stopped: -n reached$' "$tmp/a.err"; then
  ok "run: --no-display-prompt prints the completion alone; stats say '-n reached'"
else
  fail "run: --no-display-prompt" "$(cat "$tmp/a")" "$(cat "$tmp/b")" "$(cat "$tmp/a.err")"
fi
printf 'The capital of France is' >"$tmp/p.txt"
"$mkc" run -m "$model" -f "$tmp/p.txt" -n 6 >"$tmp/c" 2>/dev/null
cmp -s "$tmp/b" "$tmp/c" && ok "run: -f FILE equals -p TEXT" || fail "run: -f FILE" "$(cat "$tmp/c")"
"$mkc" run -m "$model" --chat -p "$m1" -sys "$sys" --no-display-prompt --ctx 256 >"$tmp/d" 2>"$tmp/d.err"
[ "$(cat "$tmp/d")" = "$a1" ] && grep -q 'stopped: end of generation$' "$tmp/d.err" &&
  ok "run --chat -sys: the chat's first answer; stats say 'end of generation'" ||
  fail "run --chat" "want: $a1" "got:  $(cat "$tmp/d")" "$(tail -n 1 "$tmp/d.err")"
"$mkc" run -m "$model" --chat -p "$m1" -sys "$sys" --ignore-eos -n 20 --ctx 256 >/dev/null 2>"$tmp/e.err"
grep -q 'generated 20 tokens.*stopped: -n reached$' "$tmp/e.err" &&
  ok "run --ignore-eos: generates past the end of generation" || fail "run --ignore-eos" "$(cat "$tmp/e.err")"
"$mkc" run -m "$model" -p "Once upon a time" --ignore-eos --ctx 8 >/dev/null 2>"$tmp/f.err"
grep -q 'stopped: context full (use --ctx)$' "$tmp/f.err" && ok "run: stats say 'context full'" ||
  fail "run: context full" "$(cat "$tmp/f.err")"
# Ctrl-C during run: the line ends, the stats line follows, status 130.
"$mkc" run -m "$model" -p "Once upon a time" --ignore-eos -n 4000 >"$tmp/g" 2>"$tmp/g.err" &
pid=$!
for _ in $(seq 600); do [ "$(wc -c <"$tmp/g")" -gt 40 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
if [ "$rc" = 130 ] && grep -q 'stopped: interrupted (Ctrl-C)$' "$tmp/g.err" && [ "$(tail -c 1 "$tmp/g" | od -An -c | tr -d ' ')" = '\n' ]; then
  ok "run: Ctrl-C ends the line, prints the stats, exits 130"
else
  fail "run: Ctrl-C" "status $rc" "$(tail -c 80 "$tmp/g")" "$(cat "$tmp/g.err")"
fi
# info and run agree on the context: SmolLM2's 8192 capped at 4096.
"$mkc" info -m "$model" | grep -qxF 'context: 4096 positions (trained on 8192, capped at 4096: raise it with --ctx 8192)' &&
  grep -q '; context 4096 (capped from 8192: --ctx 8192); ' "$tmp/b.err" &&
  ok "info and run: context 4096, capped from 8192, raised with --ctx" ||
  fail "info and run: context" "$("$mkc" info -m "$model" | grep context)" "$(cat "$tmp/b.err")"
expect_error "run: --chat needs a text prompt" \
  "mkc: error: run: --chat, -sys, --chat-template, --reasoning-effort and --reasoning-budget need a text prompt (-p or -f)" -- \
  run -m "$model" --chat --prompt-ids 1,2
expect_error "run: a reasoning effort for chatml" \
  "mkc: error: --reasoning-effort high: the chatml chat template has none to set (gpt-oss's has)" -- \
  run -m "$model" --reasoning-effort high -p "Hi" -n 1
expect_error "chat: a reasoning effort for chatml" \
  "mkc: error: --reasoning-effort low: the chatml chat template has none to set (gpt-oss's has)" -- \
  chat -m "$model" --reasoning-effort low
expect_error "serve: a reasoning effort for chatml" \
  "mkc: error: --reasoning-effort medium: the chatml chat template has none to set (gpt-oss's has)" -- \
  serve -m "$model" --reasoning-effort medium --port 0
expect_error "chat: no reasoning for chatml" \
  "mkc: error: --reasoning-budget 0: the chatml chat template has no way to turn reasoning off (qwen3's has)" -- \
  chat -m "$model" --reasoning-budget 0
expect_error "run: a reasoning budget llama.cpp does not take either" \
  "mkc: error: --reasoning-budget: expected -1 (unrestricted) or 0 (no reasoning), got '100'" -- \
  run -m "$model" --reasoning-budget 100 -p "Hi"
expect_error "run: -f of a missing file" "mkc: error: -f $tmp/none.txt: No such file or directory" -- \
  run -m "$model" -f "$tmp/none.txt"
finish
