#!/usr/bin/env bash
# mkc perplexity --kl-divergence-base FILE / --kl-divergence: llama-perplexity's files of
# log-probabilities, checked by tests/kld_oracle.py, which reads them as llama.cpp lays them out:
# a written file holds the text's tokens and, at every scored position, the log-probabilities
# plain runs report there (run --json --logprobs 20, on greedy chunks as test_perplexity's) to
# within the file's rounding; the statistics of a model against a reference's file (a Q8_0 of
# the same weights, another model, the model itself) are those the oracle works out from the two
# models' files, to within what the rounding allows; the refusals of files that are not such
# files or are another model's, and of the flags.
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
  skip "--kl-divergence: no python3"
  finish
  exit
fi
base=$tmp/base.gguf q8=$tmp/q8.gguf other=$tmp/other.gguf
"$mkc" init --preset tiny --seed 5 -o "$base" >/dev/null 2>&1 \
  && "$mkc" init --preset tiny --seed 5 --type q8_0 -o "$q8" >/dev/null 2>&1 \
  && "$mkc" init --preset tiny --seed 6 -o "$other" >/dev/null 2>&1 || fail "init the models"
# four greedy chunks of 64: a 3-token prompt and the base's 61 tokens after it, a token a step
for prompt in 3,1,4 5,9,2 6,5,3 5,8,9; do
  "$mkc" run -m "$base" --backend cpu --prompt-ids "$prompt" -n 61 --json --logprobs 20 --ctx 64 --ubatch 1 2>/dev/null | grep '"id"'
  echo "--"
done >"$tmp/runs"
ids=$(python3 -c '
import json, sys
out = []
for k, text in enumerate(open(sys.argv[1]).read().split("--\n")[:4]):
    out += [[3, 1, 4], [5, 9, 2], [6, 5, 3], [5, 8, 9]][k] + [json.loads(l)["id"] for l in text.splitlines()]
print(",".join(map(str, out)))' "$tmp/runs")
# a token a step, as the runs go, so that the logits are the same sums
ppl=(perplexity --backend cpu -c 64 --ubatch 1 --draft-max 0)

# the reference's file, and the same run's perplexity without one
"$mkc" "${ppl[@]}" -m "$base" --prompt-ids "$ids" --kl-divergence-base "$tmp/base.kld" >"$tmp/saved" 2>"$tmp/err"
"$mkc" "${ppl[@]}" -m "$base" --prompt-ids "$ids" >"$tmp/plain" 2>/dev/null
[ -s "$tmp/saved" ] && cmp -s "$tmp/saved" "$tmp/plain" \
  && grep -q "the log-probabilities of 124 positions saved to $tmp/base.kld" "$tmp/err" \
  && ok "--kl-divergence-base FILE: the perplexity as without it, and 124 positions saved" \
  || fail "save" "$(cat "$tmp/saved" "$tmp/err")"
python3 tests/kld_oracle.py rows "$tmp/base.kld" "$ids" "$tmp/runs" >"$tmp/rows" \
  && ok "the file: the text's tokens, and each position's log-probabilities as run reports them ($(head -1 "$tmp/rows"))" \
  || fail "the file's rows against run's" "$(cat "$tmp/rows")"
ls "$tmp" | grep -q '\.tmp$' && fail "a temporary file left behind" "$(ls "$tmp")"
"$mkc" "${ppl[@]}" -m "$base" --prompt-ids "$ids" --save-all-logits "$tmp/alias.kld" >/dev/null 2>&1
cmp -s "$tmp/alias.kld" "$tmp/base.kld" && ok "--save-all-logits: the same file" || fail "--save-all-logits"

# report NAME: mkc's closing statistics, NAME VALUE lines as the oracle prints them
report() {
  python3 - "$1" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
def num(label):
    m = re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", t)
    return m.group(1) if m else "missing"
for name, label in [("ppl_q", "Mean PPL(Q)"), ("ppl_base", "Mean PPL(base)"), ("kld_mean", "Mean    KLD"),
                    ("same_top", "Same top p"), ("dp_rms", "RMS Δp"), ("dp_mean", "Mean    Δp"),
                    ("kld_max", "Maximum KLD"), ("kld_median", "Median  KLD"), ("kld_99", "99.0%   KLD"),
                    ("kld_min", "Minimum KLD"), ("dp_median", "Median  Δp"), ("dp_95", "95.0%   Δp")]:
    print(name, num(label))
EOF
}
# compare GOT WANT: each value within what Q's rounding moves it (h, half a level, in every
# log-probability and in their normalization; Δp is a percentage), plus the printed digits'
# rounding; the share of the same top token to its printed digits
compare() {
  python3 - "$1" "$2" <<'EOF'
import sys
got = dict(l.split() for l in open(sys.argv[1]))
want = dict(l.split() for l in open(sys.argv[2]))
h = float(want.pop("half_level"))
bad = []
for name, w in want.items():
    g, w = got.get(name, "missing"), float(w)
    tol = (5e-4 if name == "same_top" else 2 * h * w + 1e-4 if name.startswith("ppl")
           else 2 * h + 1e-6 if name.startswith("kld") else 100 * 2 * h + 1e-3)
    if g == "missing" or abs(float(g) - w) > tol:
        bad.append("%s: %s, want %.6f (within %.2g)" % (name, g, w, tol))
print("; ".join(bad))
sys.exit(1 if bad else 0)
EOF
}
for who in "q8|$q8|a Q8_0 of the same weights" "other|$other|another model" "self|$base|the model itself"; do
  IFS='|' read -r name model what <<<"$who"
  "$mkc" "${ppl[@]}" -m "$model" --prompt-ids "$ids" --kl-divergence-base "$tmp/$name.kld" >/dev/null 2>&1
  "$mkc" "${ppl[@]}" -m "$model" --kl-divergence --kl-divergence-base "$tmp/base.kld" >"$tmp/$name.out" 2>"$tmp/err"
  report "$tmp/$name.out" >"$tmp/$name.got"
  python3 tests/kld_oracle.py stats "$tmp/base.kld" "$tmp/$name.kld" >"$tmp/$name.want"
  if why=$(compare "$tmp/$name.got" "$tmp/$name.want"); then
    ok "--kl-divergence, $what: the oracle's statistics ($(grep -E '^(kld_mean|same_top)' "$tmp/$name.got" | tr '\n' ' '))"
  else
    fail "--kl-divergence, $what" "$why" "$(tail -3 "$tmp/err")"
  fi
done
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ± ' "$tmp/q8.out")" = 4 ] && grep -q "^chunk  *PPL  *ln(PPL(Q)/PPL(base))" "$tmp/q8.out" \
  && ok "a line for each of the 4 chunks under llama-perplexity's head" || fail "the chunk lines" "$(head -8 "$tmp/q8.out")"
q8_top=$(sed -n 's/^same_top //p' "$tmp/q8.got") other_top=$(sed -n 's/^same_top //p' "$tmp/other.got")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 90 > float(sys.argv[2]) else 1)' "$q8_top" "$other_top" \
  && ok "Q8_0 keeps the top token ($q8_top%), another model does not ($other_top%)" \
  || fail "same top p" "$q8_top $other_top"
"$mkc" "${ppl[@]}" -m "$q8" --kl-divergence --kl-divergence-base "$tmp/base.kld" --chunks 2 >"$tmp/two" 2>/dev/null
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ ± ' "$tmp/two")" = 2 ] && diff <(grep -E '^ +[12] ' "$tmp/two") <(grep -E '^ +[12] ' "$tmp/q8.out") >/dev/null \
  && ! grep -q "KL divergence statistics" "$tmp/two" \
  && ok "--chunks 2: the first two lines, and no statistics under 100 positions" || fail "--chunks 2" "$(cat "$tmp/two")"

# a text through the tokenizer: its tokens as tokenized in the file (BOS first, not the chunks')
model=$tmp/t.gguf
if tiny_smol "$model"; then
  python3 -c 'import random; r = random.Random(3); w = "one two three four five six".split(); print(" ".join(r.choice(w) for _ in range(120)))' >"$tmp/text"
  "$mkc" perplexity -m "$model" --backend cpu -f "$tmp/text" -c 40 --kl-divergence-base "$tmp/t.kld" >/dev/null 2>&1
  tids=$("$mkc" tokenize -m "$model" -f "$tmp/text" --ids --no-parse-special | tr -d '[] ')
  python3 - "$tmp/t.kld" "$tids" <<'EOF' && ok "-f TEXT: the file's tokens are the text's (BOS first), in whole chunks" || fail "-f TEXT's tokens"
import struct, sys
buf = open(sys.argv[1], "rb").read()
n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", buf, 8)
toks = list(struct.unpack_from("<%di" % (n_ctx * n_chunk), buf, 20))
want = [int(x) for x in sys.argv[2].split(",")]
sys.exit(0 if n_ctx == 40 and n_chunk == len(want) // 40 and toks == want[:n_ctx * n_chunk] else 1)
EOF
  "$mkc" perplexity -m "$model" --backend cpu --kl-divergence --kl-divergence-base "$tmp/t.kld" >"$tmp/t.out" 2>/dev/null
  [ "$(grep -cE ' 100\.000 ±  0\.000 %$' "$tmp/t.out")" = 3 ] && ok "... and the model against its own file: the same top token throughout" \
    || fail "the model against its own file" "$(cat "$tmp/t.out")"
fi

# refusals
kl=(perplexity -m "$q8" --backend cpu --kl-divergence)
expect_error "--kl-divergence without a file" \
  "mkc: error: perplexity: --kl-divergence compares with the log-probabilities of --kl-divergence-base FILE: give it" \
  -- "${kl[@]}"
expect_error "--kl-divergence with a text" \
  "mkc: error: perplexity: --kl-divergence reads its text from --kl-divergence-base's file: give no -f, -p or --prompt-ids" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/base.kld" --prompt-ids 1,2,3
expect_error "a file that is not there" "mkc: error: $tmp/none.kld: cannot open: No such file or directory" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/none.kld"
expect_error "a model file for the log-probabilities" \
  "mkc: error: $base: not a file of log-probabilities (no \"_logits_\" at its start)" \
  -- "${kl[@]}" --kl-divergence-base "$base"
size=$(wc -c <"$tmp/base.kld")
head -c $((size - 2)) "$tmp/base.kld" >"$tmp/cut.kld"
expect_error "a file cut short" \
  "mkc: error: $tmp/cut.kld: $((size - 2)) bytes, where 4 chunks of 64 tokens with a vocabulary of 256 make $size" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/cut.kld"
# poke OFFSET VALUE IN OUT: IN with the i32 at OFFSET replaced
poke() { python3 -c 'import struct, sys; b = bytearray(open(sys.argv[3], "rb").read()); struct.pack_into("<i", b, int(sys.argv[1]), int(sys.argv[2])); open(sys.argv[4], "wb").write(b)' "$@"; }
poke 20 256 "$tmp/base.kld" "$tmp/tok.kld"
expect_error "a token outside the vocabulary" \
  "mkc: error: $tmp/tok.kld: token 256 at position 0 is outside the vocabulary (0..255)" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/tok.kld"
"$mkc" init --preset odd --seed 1 -o "$tmp/odd.gguf" >/dev/null 2>&1
odd_vocab=$("$mkc" info -m "$tmp/odd.gguf" 2>/dev/null | sed -n 's/.*vocab[^0-9]*\([0-9]*\).*/\1/p' | head -1)
expect_error "another vocabulary's file" \
  "mkc: error: $tmp/base.kld: log-probabilities over 256 tokens, where the model has ${odd_vocab:-?}: another vocabulary's" \
  -- perplexity -m "$tmp/odd.gguf" --backend cpu --kl-divergence --kl-divergence-base "$tmp/base.kld"
expect_error "-c smaller than the file's chunks" \
  "mkc: error: $tmp/base.kld: chunks of 64 tokens, where the model's context is 32 (-c)" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/base.kld" -c 32
poke 8 2 "$tmp/base.kld" "$tmp/ctx2.kld"
expect_error "chunks of 2 tokens" "mkc: error: $tmp/ctx2.kld: a context of 2 tokens, which scores nothing (3 at least)" \
  -- "${kl[@]}" --kl-divergence-base "$tmp/ctx2.kld"
mkdir -p "$tmp/ro" && chmod 555 "$tmp/ro"
if [ ! -w "$tmp/ro" ]; then
  expect_error "a file that cannot be written" "mkc: error: $tmp/ro/x.kld: cannot write: Permission denied" \
    -- "${ppl[@]}" -m "$base" --prompt-ids "$ids" --kl-divergence-base "$tmp/ro/x.kld"
else
  skip "a file that cannot be written: this user writes a read-only folder (root)"
fi
# Ctrl-C while saving (at MKC_TEST_PAUSE_AFTER_CHUNK: the first chunk scored): the run ends
# after the chunk, 130, and neither the file nor its temporary is left
mkdir -p "$tmp/int" && rm -f "$tmp/pause" && mkfifo "$tmp/pause"
MKC_TEST_PAUSE_AFTER_CHUNK=$tmp/pause "$mkc" "${ppl[@]}" -m "$base" --prompt-ids "$ids" \
  --kl-divergence-base "$tmp/int/i.kld" >"$tmp/out" 2>"$tmp/err" &
pid=$!
timeout 60 bash -c 'exec 3>"$1"; kill -INT "$2"; exec 3>&-' - "$tmp/pause" "$pid" || kill "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] && [ -z "$(ls -A "$tmp/int")" ] && grep -q "interrupted after 1 chunks: $tmp/int/i.kld not written" "$tmp/err" \
  && ok "Ctrl-C while saving: exit 130 after the chunk, no file and no temporary left" \
  || fail "Ctrl-C while saving" "exit $rc" "$(ls -A "$tmp/int")" "$(tail -2 "$tmp/err")"
finish
