#!/usr/bin/env bash
# -l/--logit-bias (llama.cpp's TOKEN_ID+BIAS; serve's logit_bias in test_serve.sh): the kernel adds
# each bias to its token's logit in the LM head. Checked against the reference executor, which adds
# it to its float64 logits (every preset's kernel on the cpu backend: plain, drafts, rounds, prompt
# chunks, slots), and against oracles outside both: a ban makes the first step choose the unbiased
# runner-up, a large bias forces its token, and the log-probabilities of a biased step are the
# unbiased ones renormalized by hand.
source "$(dirname "$0")/lib.sh"

r() { "$mkc" run --random-weights 1 -n 20 "$@" 2>"$tmp/err"; }

expect_error "-l without a sign" \
  "mkc: error: -l: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (a number, or -inf to ban the token; at most 128 of them), got '5'" \
  -- run --preset tiny --random-weights 1 -n 3 -l 5
expect_error "--logit-bias +inf" \
  "mkc: error: --logit-bias: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (a number, or -inf to ban the token; at most 128 of them), got '5+inf'" \
  -- run --preset tiny --random-weights 1 -n 3 --logit-bias 5+inf
expect_error "-l past the vocabulary" "mkc: error: --logit-bias: token 256 is outside the vocabulary (0..255)" \
  -- run --preset tiny --random-weights 1 -n 3 -l 256+1
many=()
for i in $(seq 0 128); do many+=(-l "$i+1"); done
expect_error "129 biases" \
  "mkc: error: -l: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (a number, or -inf to ban the token; at most 128 of them), got '128+1'" \
  -- run --preset tiny --random-weights 1 -n 3 "${many[@]}"

# The kernel against the reference, each with the same biases: a ban, a push, a token given twice
# (its biases add up), out of order.
bias=(-l 70-inf -l 144+0.4 -l 30-1.5 -l 144+0.35 -l 12+2)
for p in tiny odd qwen3-tiny gemma-tiny; do
  want=$(r --preset $p --prompt-ids 3,1,4,1,5 --backend ref "${bias[@]}")
  plain=$(r --preset $p --prompt-ids 3,1,4,1,5 --backend ref)
  for how in "" "--draft-max 4" "--draft-max 3 --rounds 4"; do
    # shellcheck disable=SC2086 # the drafts' flags, split
    got=$(r --preset $p --prompt-ids 3,1,4,1,5 --backend cpu $how "${bias[@]}")
    if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$want" != "$plain" ]; then
      ok "$p ${how:-one token a step}: kernel = reference with the biases (and not without them)"
    else
      fail "$p ${how:-one token a step}: kernel = reference" "kernel: $got" "ref:    $want" "plain:  $plain" "$(cat "$tmp/err")"
    fi
  done
done
# A prompt of 40 tokens goes in a tiled chunk, whose LM head gives only its last input logits.
long=$(seq -s, 1 40)
got=$(r --preset tiny --prompt-ids "$long" --backend cpu --ubatch 16 "${bias[@]}")
want=$(r --preset tiny --prompt-ids "$long" --backend ref "${bias[@]}")
[ -n "$want" ] && [ "$got" = "$want" ] && ok "tiny, a 40-token prompt in chunks of 16: kernel = reference" \
  || fail "tiny, prompt chunks" "kernel: $got" "ref:    $want"

# Slots: each line of a batch as it runs alone (the same biases on every slot; serve --parallel's
# test gives each request its own), on a kernel of 4 slots with drafts, and on one of 36 slots
# whose steps of more than 32 rows are wide (the tiled LM head, templates/gemm.cuh).
for i in $(seq 36); do echo "$((i % 7 + 1)),$((i * 5 % 11)),$((i % 3))"; done >"$tmp/batch"
: >"$tmp/solo"
while read -r ids; do r --preset tiny -n 12 --prompt-ids "$ids" --backend ref "${bias[@]}" >>"$tmp/solo"; done <"$tmp/batch"
for slots in "--slots 4 --draft-max 4" "--slots 36"; do
  # shellcheck disable=SC2086
  "$mkc" run --preset tiny --random-weights 1 -n 12 --batch "$tmp/batch" --backend cpu $slots "${bias[@]}" \
    >"$tmp/batch.out" 2>"$tmp/err"
  cmp -s "$tmp/batch.out" "$tmp/solo" && ok "run --batch $slots: each of 36 lines = the reference alone, biased" \
    || fail "run --batch $slots with biases" "$(diff "$tmp/solo" "$tmp/batch.out" | head -6)" "$(tail -n 2 "$tmp/err")"
done

# Oracles outside mkc's two executors. The unbiased first step's two most likely tokens (the
# kernel's log-probabilities): banning the first makes the second the choice.
"$mkc" run --preset tiny --random-weights 1 -n 1 --prompt-ids 3,1 --backend cpu --logprobs 2 --json >"$tmp/lp" 2>"$tmp/err"
read -r first second < <(python3 -c "
import json, sys
d = json.loads(open(sys.argv[1]).readline()); print(d['top'][0]['id'], d['top'][1]['id'])" "$tmp/lp")
got=$("$mkc" run --preset tiny --random-weights 1 -n 1 --prompt-ids 3,1 --backend cpu -l "$first-inf" 2>/dev/null)
[ -n "$second" ] && [ "$got" = "$second" ] && ok "banning the first choice ($first) gives the runner-up ($second)" \
  || fail "a ban gives the runner-up" "first $first, second $second, got $got"
got=$("$mkc" run --preset tiny --random-weights 1 -n 12 --prompt-ids 3,1 --backend cpu --draft-max 4 -l 201+1000 2>/dev/null)
[ "$got" = "$(printf '201 %.0s' $(seq 12) | sed 's/ $//')" ] && ok "a bias of +1000 on 201: every token is 201, drafts on" \
  || fail "a large bias" "$got"
# Sampled: a banned token never comes, in 400 draws at temperature 2 over the whole vocabulary.
got=$("$mkc" run --preset tiny --random-weights 1 -n 400 --prompt-ids 3,1 --backend cpu --temp 2 --top-k 0 \
  --top-p 1 --min-p 0 --seed 5 --draft-max 4 -l 70-inf -l 144-inf --ctx 512 2>/dev/null)
n=$(echo "$got" | wc -w)
if [ "$n" = 400 ] && ! echo " $got " | grep -qE ' (70|144) '; then
  ok "sampled, 400 tokens at temperature 2: the two banned tokens never come ($(echo "$got" | tr ' ' '\n' | sort -u | wc -l) distinct)"
else
  fail "sampled with bans" "$n tokens: $got"
fi
# The biased step's log-probabilities are the unbiased ones with b added to token x's and all
# renormalized: lp'(y) = lp(y) + b [y = x] - log(1 + p(x) (e^b - 1)).
"$mkc" run --preset tiny --random-weights 1 -n 1 --prompt-ids 3,1 --backend cpu --logprobs 20 --json >"$tmp/lp" 2>"$tmp/err"
x=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['top'][3]['id'])" "$tmp/lp")
"$mkc" run --preset tiny --random-weights 1 -n 1 --prompt-ids 3,1 --backend cpu --logprobs 20 --json -l "$x+1.7" \
  >"$tmp/lpb" 2>>"$tmp/err"
if python3 - "$tmp/lp" "$tmp/lpb" "$x" 1.7 <<'PY'; then
import json, math, sys
a = {e["id"]: e["logprob"] for e in json.loads(open(sys.argv[1]).readline())["top"]}
b = {e["id"]: e["logprob"] for e in json.loads(open(sys.argv[2]).readline())["top"]}
x, bias = int(sys.argv[3]), float(sys.argv[4])
norm = math.log(1 + math.exp(a[x]) * (math.exp(bias) - 1))
common = [y for y in a if y in b]
assert x in common and len(common) >= 10, common
for y in common:
    want = a[y] + (bias if y == x else 0) - norm
    assert abs(b[y] - want) < 2e-4, (y, b[y], want)
PY
  ok "the log-probabilities with +1.7 on token $x: the unbiased ones, renormalized by hand (within 2e-4)"
else
  fail "biased log-probabilities" "$(head -c 300 "$tmp/lpb")" "$(cat "$tmp/err")"
fi

# bench -l: every test runs with the table (its cost on a GPU: tests/gpu/shapes.sh's bias128-t1).
"$mkc" bench --preset tiny --random-weights 1 -p 8 -n 8 --backend cpu -l 201+1000 -l 5-inf >"$tmp/bench" 2>"$tmp/err"
if grep -q '^Every test with 2 logit biases (-l)\.$' "$tmp/bench" && grep -q '| tg8 sampled |' "$tmp/bench"; then
  ok "bench -l: the tests run with the biases, and say so"
else
  fail "bench -l" "$(cat "$tmp/bench" "$tmp/err")"
fi
expect_error "bench -l past the vocabulary" "mkc: error: --logit-bias: token 500 is outside the vocabulary (0..255)" \
  -- bench --preset tiny --random-weights 1 -p 8 -n 8 --backend cpu -l 500+1

finish
