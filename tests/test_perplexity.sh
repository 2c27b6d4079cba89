#!/usr/bin/env bash
# mkc perplexity (llama-perplexity's measure) against the log-probabilities plain runs give:
# two chunks, each a prompt and the greedy run's continuation of it, so that every scored token
# is the one the run chose, and its negative log-likelihood is minus the log-probability the run
# reports for it (--json --logprobs 1). The running estimate after each chunk, the final one and
# its standard error are worked out from those in Python. A text read through the tokenizer
# scores as its token ids do; BOS where the model adds one; the refusals.
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
  skip "perplexity: no python3"
  finish
  exit
fi
p=(--preset tiny --random-weights 1 --backend cpu)
# run's ids and log-probabilities of 61 tokens after each 3-token prompt: two chunks of 64
for prompt in 3,1,4 5,9,2; do
  "$mkc" run "${p[@]}" --prompt-ids "$prompt" -n 61 --json --logprobs 1 --ctx 64 2>/dev/null | grep '"id"'
  echo "--"
done >"$tmp/runs"
python3 - "$tmp/runs" >"$tmp/want" <<'EOF'
import json, math, sys
chunks = open(sys.argv[1]).read().split("--\n")[:2]
prompts, ids, nll, nll2, count, line = [[3, 1, 4], [5, 9, 2]], [], 0.0, 0.0, 0, ""
for k, text in enumerate(chunks):
    toks = [json.loads(l) for l in text.splitlines()]
    ids += prompts[k] + [t["id"] for t in toks]
    # scored: positions 32..62 predict tokens 33..63, the run's tokens 30..60
    for t in toks[30:61]:
        nll, nll2, count = nll - t["logprob"], nll2 + t["logprob"] ** 2, count + 1
    line += "[%d]%.4f," % (k + 1, math.exp(nll / count))
mean = nll / count
err = math.sqrt((nll2 / count - mean * mean) / (count - 1)) * math.exp(mean)
print(",".join(map(str, ids)))
print(line)
print("%.6f %.6f" % (math.exp(mean), err))
EOF
ids=$(sed -n 1p "$tmp/want")
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 >"$tmp/got" 2>"$tmp/err"
python3 - "$tmp/want" "$tmp/got" <<'EOF' && ok "two chunks of 64 (8 a step): the running estimates, PPL and its error as the runs' log-probabilities give them ($(sed -n 2p "$tmp/got"))" || fail "perplexity against the runs" "want: $(sed -n 2,3p "$tmp/want" | tr '\n' ' ')" "got:  $(cat "$tmp/got" | tr '\n' ' ')" "$(tail -2 "$tmp/err")"
import re, sys
want = open(sys.argv[1]).read().splitlines()
got = open(sys.argv[2]).read()
running = [float(x) for x in re.findall(r"\[\d\]([0-9.]+),", got)]
final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", got)
want_running = [float(x) for x in re.findall(r"\[\d\]([0-9.]+),", want[1])]
ppl, err = map(float, want[2].split())
close = lambda a, b: abs(a - b) <= 2e-4 * abs(b) + 1e-4
sys.exit(0 if final and len(running) == 2 and all(map(close, running, want_running))
         and close(float(final.group(1)), ppl) and close(float(final.group(2)), err) else 1)
EOF
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --draft-max 0 >"$tmp/one" 2>/dev/null
[ "$(sed -n 's/.*PPL = \([0-9.]*\).*/\1/p' "$tmp/one")" = "$(sed -n 's/.*PPL = \([0-9.]*\).*/\1/p' "$tmp/got")" ] \
  && ok "--draft-max 0 (a token a step): the same PPL" || fail "--draft-max 0" "$(cat "$tmp/one" "$tmp/got")"
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --chunks 1 >"$tmp/one" 2>/dev/null
[ "$(head -n 1 "$tmp/one")" = "$(head -n 1 "$tmp/got" | cut -d, -f1)," ] && [ "$(grep -o '\[' "$tmp/one" | wc -l)" = 1 ] \
  && ok "--chunks 1: the first chunk's estimate alone" || fail "--chunks 1" "$(cat "$tmp/one")"

# --ppl-stride 31 with -c 64: window i is tokens [31i, 31i + 64), and its scored positions, 32
# to 62, are those a plain chunk of 64 scores; so the running estimates are those of a plain
# run over the windows laid one after another (no BOS goes first without a tokenizer)
n_ids=$(echo "$ids" | tr ',' '\n' | wc -l)
windows=$(python3 -c 'import sys; t = sys.argv[1].split(","); n = (len(t) - 64 + 30) // 31; print(",".join(",".join(t[31 * i:31 * i + 64]) for i in range(n)))' "$ids")
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-stride 31 >"$tmp/stride" 2>"$tmp/err"
"$mkc" perplexity "${p[@]}" --prompt-ids "$windows" -c 64 >"$tmp/laid" 2>/dev/null
want_windows=$(((n_ids - 64 + 30) / 31))
[ "$(grep -o '\[' "$tmp/stride" | wc -l)" = "$want_windows" ] && [ "$(head -1 "$tmp/stride")" = "$(head -1 "$tmp/laid")" ] \
  && ok "--ppl-stride 31: $want_windows windows of $n_ids tokens, the estimates of the windows laid end to end" \
  || fail "--ppl-stride 31" "$(head -1 "$tmp/stride")" "$(head -1 "$tmp/laid")" "$(tail -2 "$tmp/err")"
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-stride 10 >"$tmp/s10" 2>/dev/null
[ "$(grep -o '\[' "$tmp/s10" | wc -l)" = $(((n_ids - 64 + 9) / 10)) ] \
  && ok "--ppl-stride 10: $(((n_ids - 64 + 9) / 10)) windows (as many as start before the text's end is passed)" \
  || fail "--ppl-stride 10" "$(cat "$tmp/s10")"
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-stride 31 --ppl-output-type 1 >"$tmp/t1" 2>/dev/null
python3 - "$tmp/t1" "$tmp/stride" <<'EOF' && ok "--ppl-output-type 1 with a stride: a line a window, its start and estimate" || fail "--ppl-output-type 1 with a stride" "$(cat "$tmp/t1")"
import re, sys
lines = [l.split() for l in open(sys.argv[1]) if re.match(r"^ {3,}\d+  \d", l)]
want = re.findall(r"\[\d+\]([0-9.]+),", open(sys.argv[2]).read())
sys.exit(0 if [l[1] for l in lines] == want and [int(l[0]) for l in lines] == [31 * i for i in range(len(want))] else 1)
EOF
"$mkc" perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-output-type 1 >"$tmp/t1" 2>/dev/null
python3 - "$tmp/t1" "$tmp/got" <<'EOF' && ok "--ppl-output-type 1: a line a chunk, its start, estimate, mean NLL (its log) and standard error" || fail "--ppl-output-type 1" "$(cat "$tmp/t1")"
import math, re, sys
lines = [l.split() for l in open(sys.argv[1]) if re.match(r"^ {3,}\d+  \d", l)]
want = re.findall(r"\[\d+\]([0-9.]+),", open(sys.argv[2]).read())
ok = [l[1] for l in lines] == want and [l[0] for l in lines] == ["0", "64"]
ok = ok and all(abs(math.log(float(l[1])) - float(l[2])) < 1e-4 and float(l[3]) > 0 for l in lines)
sys.exit(0 if ok else 1)
EOF

# a text through the tokenizer: the same as its ids (with BOS where the model adds one)
model=$tmp/t.gguf
if tiny_smol "$model"; then
  python3 -c 'import random; r = random.Random(7); w = "the cat sat on a mat with my red hat and ran".split(); print(" ".join(r.choice(w) for _ in range(150)))' >"$tmp/text"
  tids=$("$mkc" tokenize -m "$model" -f "$tmp/text" --ids --no-parse-special | tr -d '[] ')
  "$mkc" perplexity -m "$model" --backend cpu -f "$tmp/text" -c 48 >"$tmp/t1" 2>/dev/null
  "$mkc" perplexity -m "$model" --backend cpu --prompt-ids "$tids" -c 48 >"$tmp/t2" 2>/dev/null
  [ -s "$tmp/t1" ] && cmp -s "$tmp/t1" "$tmp/t2" && ok "-f TEXT: the same estimates as its token ids ($(tail -1 "$tmp/t1"))" \
    || fail "text against ids" "$(cat "$tmp/t1" "$tmp/t2")"
  expect_error "an empty text" \
    "mkc: error: perplexity: the text is 0 tokens; a context of 48 needs 96 at least (two chunks; a smaller -c)" \
    -- perplexity -m "$model" --backend cpu -p "" -c 48
fi

expect_error "a text shorter than two chunks" \
  "mkc: error: perplexity: the text is 128 tokens; a context of 100 needs 200 at least (two chunks; a smaller -c)" \
  -- perplexity "${p[@]}" --prompt-ids "$ids" -c 100
expect_error "-c 2, whose chunks score nothing" \
  "mkc: error: perplexity: -c 2 scores nothing (a chunk's second half but its last token): give 3 at least" \
  -- perplexity "${p[@]}" --prompt-ids "$ids" -c 2
expect_error "--ppl-stride as long as the context" \
  "mkc: error: perplexity: --ppl-stride 64: a window of 64 scores at most 63 tokens" \
  -- perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-stride 64
expect_error "--ppl-stride with --kl-divergence-base" \
  "mkc: error: perplexity: --hellaswag, --winogrande, --multiple-choice, --kl-divergence(-base) and --ppl-stride are different measures: one at a time" \
  -- perplexity "${p[@]}" --prompt-ids "$ids" -c 64 --ppl-stride 8 --kl-divergence-base "$tmp/x.kld"
expect_error "--chunks 0" "mkc: error: perplexity: --chunks N needs N >= 1 (-1: all)" \
  -- perplexity "${p[@]}" --prompt-ids 1,2 --chunks 0
expect_error "a text with no model" "mkc: error: perplexity: a text needs a model with a tokenizer (-m)" \
  -- perplexity --preset tiny --random-weights 1 -p "hello"
finish
