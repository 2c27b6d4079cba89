#!/usr/bin/env bash
# mkc run --batch FILE: the lines decoded together on a slot kernel give, line
# by line and in order, what `mkc run` gives each alone on the plain kernel
# (greedy with drafts; sampled, line i with seed S + i); more lines than
# slots refill the slots as lines finish; the stats line reports the
# aggregate rate and the KV bytes held, which a pool of pages smaller than
# the slots' whole contexts bounds; bad files and flags are refused with
# file:line or usage errors. SmolLM2 (test data) in text when present.
source "$(dirname "$0")/lib.sh"

printf '1,2,3\n5,6,7,8,9,10\n42\n7,7,7,7\n100,101\n3,1,4,1,5,9,2,6\n250,3,250,3,250,3,250,3,250,3,250,3,250,3,250,3,250,3\n' >"$tmp/ids.txt"

# solo_ids OUT ARGS...: each line of ids.txt alone (line i with seed 5 + i when sampling)
solo_ids() {
  local out=$1 i=0
  shift
  : >"$out"
  while read -r line; do
    "$mkc" run --preset "$preset" --random-weights 1 --backend cpu --prompt-ids "$line" "$@" \
      --seed $((5 + i)) >>"$out" 2>>"$tmp/err" || return 1
    i=$((i + 1))
  done <"$tmp/ids.txt"
}

# check_batch NAME SLOTS DRAFTS ARGS...: the batch of $preset (with $pages, --kv-pages N or empty)
# against each line alone with ARGS and the same drafts (a sampled line's draws follow its drafts)
pages=()
preset=tiny
check_batch() {
  local name=$1 slots=$2 drafts=$3
  shift 3
  if "$mkc" run --preset "$preset" --random-weights 1 --backend cpu --batch "$tmp/ids.txt" \
    --slots "$slots" --draft-max "$drafts" --seed 5 "${pages[@]}" "$@" >"$tmp/batch" 2>"$tmp/batch_err" \
    && : >"$tmp/err" && solo_ids "$tmp/solo" --draft-max "$drafts" "$@"; then
    if cmp -s "$tmp/batch" "$tmp/solo"; then
      ok "$name: every line what it gives alone, in order ($(wc -l <"$tmp/batch") lines)"
    else
      fail "$name: every line what it gives alone" "$(diff "$tmp/batch" "$tmp/solo" | head -8)"
    fi
  else
    fail "$name: runs" "$(cat "$tmp/batch_err" "$tmp/err")"
  fi
}

check_batch "7 lines on 3 slots, greedy, 2 drafts each" 3 2 -n 12
stats=$(tail -n 1 "$tmp/batch_err")
case "$stats" in
"mkc: run --batch: 7 prompts on 3 slots ("*"generated 84 tokens in "*"tok/s aggregate"*"at most 3 slots busy"*"KV: at most "*" MiB held of a pool of 0.375 MiB (96 pages of 16 positions; whole caches would be 0.375 MiB)")
  ok "the stats line: prompts, slots, tokens, the aggregate rate, the KV pool" ;;
*) fail "the stats line" "$stats" ;;
esac
check_batch "7 lines on 2 slots, greedy, 7 drafts each" 2 7 -n 20
check_batch "7 lines on 4 slots, sampled (top-k 40: the candidates stage)" 4 0 -n 10 --temp 0.9
check_batch "7 lines on 5 slots, sampled top-p 0.8, no top-k" 5 0 -n 10 --temp 1.1 --top-k 0 --top-p 0.8
check_batch "-n 0: an empty line per prompt" 3 1 -n 0
# context shift: lines past a context of 24 shift in their slots as run --context-shift shifts alone
check_batch "--ctx 24 --context-shift --keep 2: 7 lines on 3 slots, 2 drafts, 40 tokens each" 3 2 \
  -n 40 --ctx 24 --context-shift --keep 2
grep -Eq '^mkc: run --batch: context shifts: [1-9][0-9]* ' "$tmp/batch_err" \
  && ok "... the stats count the shifts ($(tail -n 1 "$tmp/batch_err" | cut -d: -f3-))" \
  || fail "the shifts counted" "$(tail -n 2 "$tmp/batch_err")"
check_batch "--ctx 24 --context-shift: sampled, no drafts" 4 0 -n 30 --ctx 24 --context-shift --temp 0.9
# drafts from a draft pool (exec/draft_slots.c): a draft model that is the target's own weights
# (every draft kept), and self-speculation from the first layer
"$mkc" init --preset tiny --seed 1 -o "$tmp/draft.gguf" >/dev/null 2>&1
check_batch "-md (the target's own weights): 7 lines on 3 slots, 2 drafts" 3 2 -n 16 -md "$tmp/draft.gguf"
grep -Eq 'drafted ([1-9][0-9]*), accepted \1;' "$tmp/batch_err" &&
  grep -Eq '^mkc: run --batch: drafts from draft model .*draft.gguf: [1-9][0-9]* steps of its own slot kernel$' "$tmp/batch_err" &&
  ok "... every draft kept ($(grep -o 'drafted [0-9]*, accepted [0-9]*' "$tmp/batch_err")), the pool's steps reported" ||
  fail "-md on the slots: the drafts" "$(tail -n 2 "$tmp/batch_err")"
check_batch "--draft-layers 1: 7 lines on 4 slots, 3 drafts" 4 3 -n 16 --draft-layers 1
grep -q '^mkc: run --batch: drafts from self-speculation (first 1 of 2 layers): ' "$tmp/batch_err" &&
  ok "... drafted by the first layer's pool" || fail "--draft-layers on the slots" "$(tail -n 2 "$tmp/batch_err")"
# --draft-p-min: a slot's draft ends at its first choice below the floor, the lines the same
drafted() { sed -n 's/.*drafted \([0-9]*\), accepted.*/\1/p' "$tmp/batch_err"; }
all=$(drafted)
check_batch "--draft-layers 1 --draft-p-min 0.15: 7 lines on 4 slots" 4 3 -n 16 --draft-layers 1 --draft-p-min 0.15
some=$(drafted)
[ -n "$all" ] && [ -n "$some" ] && [ "$some" -gt 0 ] && [ "$some" -lt "$all" ] \
  && ok "... fewer drafted ($some, against $all with no floor)" || fail "--draft-p-min on the slots" "$all, then $some"
# --draft-adaptive: each slot's depth follows its own acceptance (exec/depth.h: from 1, +1 when
# more than 80 % of a window of 8 drafts were kept, -1 below 40 %), the lines the same. Drafts of
# the target's own weights are all kept: the depth climbs to --draft-max; prompt lookup's are
# kept on the repeating lines and not on the others: some slots' depths fall to 0 while others
# climb, and fewer are drafted than at a fixed depth
depth() { sed -n 's/^mkc: run --batch: adaptive depth \([0-9]*\.\.[0-9]*\) (each slot its own)$/\1/p' "$tmp/batch_err"; }
check_batch "--draft-adaptive -md (the target's own weights): 7 lines on 3 slots, up to 5 drafts" 3 5 \
  -n 60 -md "$tmp/draft.gguf" --draft-adaptive
[ "$(depth)" = 1..5 ] && grep -Eq 'drafted ([1-9][0-9]*), accepted \1;' "$tmp/batch_err" \
  && ok "... every draft kept: the depth went from 1 to 5 ($(grep -o 'drafted [0-9]*, accepted [0-9]*' "$tmp/batch_err"))" \
  || fail "--draft-adaptive: the depth climbs" "$(tail -n 3 "$tmp/batch_err")"
check_batch "prompt lookup, 5 drafts: 7 lines on 3 slots" 3 5 -n 60
fixed=$(drafted)
check_batch "prompt lookup, --draft-adaptive up to 5: 7 lines on 3 slots" 3 5 -n 60 --draft-adaptive
adaptive=$(drafted)
d=$(depth)
[ "${d%..*}" = 0 ] && [ "${d#*..}" -gt 1 ] && [ -n "$fixed" ] && [ "$adaptive" -lt "$fixed" ] \
  && ok "... depths $d: some fell to 0, some climbed; $adaptive drafted against $fixed at 5" \
  || fail "--draft-adaptive: the depth falls" "depth $(depth), drafted $adaptive against $fixed" "$(tail -n 3 "$tmp/batch_err")"
# sliding windows on pages: a window layer's positions on the slot's pages, its window read
preset=swa-tiny
check_batch "swa-tiny, --draft-layers 1: rings rewound past 3 windows" 3 2 -n 56 --draft-layers 1
check_batch "swa-tiny (windows of 16): 7 lines on 3 slots, 2 drafts, past 3 windows" 3 2 -n 56
preset=tiny
# wide steps: more rows than the decode path's 32 (templates/slots.cuh), on the tiled path
check_batch "7 lines on 8 slots of 1 + 4 drafts: wide steps of up to 40 rows" 8 4 -n 16
check_batch "7 lines on 6 slots of 1 + 5 drafts, sampled: wide steps of up to 36 rows" 6 5 -n 10 --temp 0.9
# 16 slots: a bf16 model's decode matmuls on tensor cores with split-K by default (codegen/main.lua);
# tf32 with split inputs keeps the greedy tokens of the plain kernel's lines alone
check_batch "7 lines on 16 slots (tensor cores, split-K), greedy" 16 0 -n 12
check_batch "7 lines on 16 slots of 1 + 1 draft (tensor cores, split-K), greedy" 16 1 -n 12

# --stages: the slot kernel built with stage timers gives the same lines, then a table of the decode
# steps' stages (tiny: 15), the steps counted as the stats line's decode steps
if "$mkc" run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 3 --draft-max 2 \
  --seed 5 -n 12 --stages >"$tmp/stages" 2>"$tmp/stages_err" &&
  "$mkc" run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 3 --draft-max 2 \
    --seed 5 -n 12 >"$tmp/plain" 2>/dev/null && cmp -s <(head -n 7 "$tmp/stages") "$tmp/plain" &&
  [ "$(grep -cE '^\| [0-9]+ \| [a-z_]+ \| .* \| [0-9.]+ \| [0-9]+ \| ' "$tmp/stages")" -eq 15 ] &&
  grep -qE '^\| all \| \| \| [0-9.]+ \| [0-9]+ \|' "$tmp/stages" &&
  steps=$(sed -n "s/.*clock over \([0-9]*\) steps.*/\1/p" "$tmp/stages") &&
  [ -n "$steps" ] && [ "$steps" -gt 0 ] && grep -q " tok/s over $steps steps)" "$tmp/stages_err"; then
  ok "--stages: the same 7 lines, then 15 stage rows and a total over the $steps decode steps"
else
  fail "--stages" "$(tail -n 22 "$tmp/stages" "$tmp/stages_err")"
fi

# Paged: the KV bytes held follow the tokens, not the context times the slots. 3 slots of
# up to 18 + 12 positions hold at most 2 pages each: a pool of 6 pages serves them (whole
# caches: 96 pages).
# held KIB: the KV bytes the stats line says were held at most, in KiB
held() { sed -n 's/.*KV: at most \([0-9.]*\) MiB held.*/\1/p' "$tmp/batch_err" | awk '{ printf "%d", $1 * 1024 + 0.5 }'; }
pages=(--kv-pages 6)
check_batch "7 lines on 3 slots in a pool of 6 pages" 3 2 -n 12
short=$(held)
case "$(tail -n 1 "$tmp/batch_err")" in
*"held of a pool of 0.023 MiB (6 pages of 16 positions; whole caches would be 0.375 MiB)")
  [ "$short" -ge 12 ] && [ "$short" -le 24 ] \
    && ok "6 pages: $short KiB held (3 slots, 1 or 2 pages of 4 KiB each) of a 24 KiB pool; whole caches 384 KiB" \
    || fail "6 pages: the bytes held" "$(tail -n 1 "$tmp/batch_err")" ;;
*) fail "6 pages: the pool" "$(tail -n 1 "$tmp/batch_err")" ;;
esac
pages=(--kv-pages 12)
check_batch "the tokens grow: 40 each, 3 slots in a pool of 12 pages" 3 1 -n 40
long=$(held)
[ "$long" -gt "$short" ] && [ "$long" -le 48 ] \
  && ok "40 tokens each: $long KiB held, more than 12 tokens' $short KiB, within the 48 KiB pool" \
  || fail "the bytes held grow with the tokens" "$short KiB, then $long KiB" "$(tail -n 1 "$tmp/batch_err")"
pages=()
expect_error "run --batch --draft-head: refused" \
  "mkc: error: run --batch takes none of --chat, -sys, --chat-template, --reasoning-effort, --reasoning-budget, --json, --rounds, --kernel, --draft-head (drafts: prompt lookup, -md or --draft-layers with --draft-p-min, --draft-max per slot, --draft-adaptive and --draft-min)" -- \
  run --preset tiny --random-weights 1 --batch "$tmp/ids.txt" --draft-max 2 --draft-head
expect_error "run --batch -md without --draft-max" \
  "mkc: error: run --batch: -md drafts K tokens a step: give --draft-max K (1..31)" -- \
  run --preset tiny --random-weights 1 --batch "$tmp/ids.txt" -md "$tmp/draft.gguf"
expect_error "a pool too small" "mkc: error: slot 2 needs a KV page for position 0, and all 2 pages of the pool are held (--kv-pages)" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 3 -n 4 --kv-pages 2

# --logprobs N: after each line's completion, a line naming FILE:LINE, then its tokens'
# log-probabilities on stderr as run prints them. The oracle is each line run alone on the plain
# kernel: the same ids, in the same places, the values within 1e-3 (other slots' rows in a step
# change the order of attention's sums).
# lp_pairs: a --logprobs block as one "id value" pair a line, the token's own, then its top's
lp_pairs() { sed -n 's/^mkc: token //p' | sed -E 's/ "([^"\\]|\\.)*" / /g; s/ logprob / /; s/; top://; s/,/ /g' \
  | awk '{ for (i = 1; i < NF; i += 2) print $i, $(i + 1) }'; }
# logprob_case NAME ARGS...: the batch's blocks against each line alone, with ARGS
logprob_case() {
  local name=$1 i=0 line bad=0
  shift
  if ! "$mkc" run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 3 \
    --seed 5 --logprobs 3 "$@" >"$tmp/lpb" 2>"$tmp/lpb_err"; then
    fail "$name: runs" "$(tail -n 3 "$tmp/lpb_err")"
    return
  fi
  while read -r line; do
    i=$((i + 1))
    "$mkc" run --preset tiny --random-weights 1 --backend cpu --prompt-ids "$line" --seed $((4 + i)) \
      --logprobs 3 "$@" 2>&1 >/dev/null | lp_pairs >"$tmp/lp_solo"
    awk -v h="mkc: run --batch: $tmp/ids.txt:$i: " 'index($0, h) == 1 { on = 1; next }
      /^mkc: run --batch: / { on = 0 } on' "$tmp/lpb_err" | lp_pairs >"$tmp/lp_batch"
    if [ ! -s "$tmp/lp_solo" ] || ! paste -d' ' "$tmp/lp_batch" "$tmp/lp_solo" | awk -v n="$(wc -l <"$tmp/lp_solo")" '
      { if ($1 != $3 || NF != 4 || ($2 - $4) > 1e-3 || ($4 - $2) > 1e-3) bad = 1; rows++ }
      END { exit bad || rows != n || rows == 0 }'; then
      bad=$i
      break
    fi
  done <"$tmp/ids.txt"
  if [ "$bad" = 0 ] && [ "$(grep -c '^mkc: run --batch: .*log-probabilities$' "$tmp/lpb_err")" -eq 7 ]; then
    ok "$name: each of the 7 lines' log-probabilities (its token's and the top 3) are its own alone"
  else
    fail "$name: line $bad's log-probabilities" "$(paste "$tmp/lp_batch" "$tmp/lp_solo" | head -n 6)"
  fi
}
logprob_case "--logprobs 3, 7 lines on 3 slots, greedy, 2 drafts each" -n 8 --draft-max 2
logprob_case "--logprobs 3, sampled" -n 8 --temp 0.9

# refusals
printf '1,2\n\n3\n' >"$tmp/empty.txt"
expect_error "an empty line" "$tmp/empty.txt:2: error: an empty line: each line is a prompt" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/empty.txt" -n 2
printf '1,2\n3,x\n' >"$tmp/bad.txt"
expect_error "a line that is no ids" "mkc: error: $tmp/bad.txt:2: expected comma-separated token ids, got '3,x'" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/bad.txt" -n 2
printf '1,256\n' >"$tmp/vocab.txt"
expect_error "a token outside the vocabulary" "mkc: error: $tmp/vocab.txt:1: token 256 is outside the vocabulary (0..255)" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/vocab.txt" -n 2
expect_error "a file that is not there" "mkc: error: cannot read $tmp/none.txt" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/none.txt" -n 2
expect_error "too many rows" "mkc: error: run --batch: 64 slots of 1 + 8 drafts are more than the 512 rows a step takes; lower --slots or --draft-max" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 64 --draft-max 8
expect_error "rows past --ctx" "mkc: error: run --batch: 8 slots of 1 + 4 drafts make steps of 40 rows, more than the 36 positions of --ctx; lower --slots or --draft-max, or raise --ctx" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 8 --draft-max 4 --ctx 36
expect_error "rows past --ubatch" "mkc: error: run --batch: 8 slots of 1 + 4 drafts are more than the 32 rows a step takes; lower --slots or --draft-max, or raise --ubatch" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 8 --draft-max 4 --ubatch 32
expect_error "--slots without --batch" "mkc: error: run: --slots B, --kv-pages N and --stages go with --batch FILE (bench --stages times one sequence's stages)" -- \
  run --preset tiny --random-weights 1 --backend cpu --prompt-ids 1 -n 2 --slots 2
expect_error "--batch with -p" "mkc: error: run --batch: the prompts are the file's lines; drop -p, -f and --prompt-ids" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --prompt-ids 1
expect_error "--slots 1" "mkc: error: --slots: expected an integer in 2..64, got '1'" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/ids.txt" --slots 1
expect_error "gen --slots 65" "mkc: error: --slots: expected an integer in 2..64, got '65'" -- \
  gen graphs/llama.lua --preset tiny --slots 65 -o "$tmp/k.cu"

# a prompt past the context
seq -s, 1 40 >"$tmp/long.txt"
expect_error "a prompt past the context" "$tmp/long.txt:1: error: a prompt of 40 tokens; the context holds 32 (--ctx)" -- \
  run --preset tiny --random-weights 1 --backend cpu --batch "$tmp/long.txt" --ctx 32 -n 2

# Three lines with the same first 40 tokens on 2 slots: the second waits until the first's first
# 2 pages are full and shares them (32 positions); the third, on refill, shares them too.
common=$(seq -s, 11 50)
printf '%s,1,2,3\n%s,4,5\n%s,6\n' "$common" "$common" "$common" >"$tmp/ids.txt"
check_batch "3 lines with a 40-token common prefix on 2 slots" 2 1 -n 6
grep -q "prompt positions shared: 64;" "$tmp/batch_err" \
  && ok "the second and third lines share 32 positions (2 pages) each" \
  || fail "prefix sharing in the stats" "$(tail -n 1 "$tmp/batch_err")"

# Every end-of-generation token ends a line, however many the tokenizer has: a tiny folder whose
# tokenizer.json holds ten end-of-turn names (tests/eog_tokenizer.py: ids 246..255), each pushed
# first by a logit bias; the line is what `mkc run` gives alone, which stops at once.
# (Until 2026-12-06 the slots were given the first 8: the 9th and 10th did not stop a line.)
"$mkc" init --preset tiny --seed 1 -o "$tmp/eog" >/dev/null 2>&1
python3 tests/eog_tokenizer.py "$tmp/eog/tokenizer.json"
printf 'ab\ncd\n' >"$tmp/eog.txt"
for id in 246 254 255; do
  if "$mkc" run -m "$tmp/eog" --batch "$tmp/eog.txt" -n 4 --slots 2 --logit-bias "$id+100" \
    --backend cpu >"$tmp/batch" 2>"$tmp/err" && grep -q 'generated 0 tokens' "$tmp/err" \
    && "$mkc" run -m "$tmp/eog" -p ab -n 4 --logit-bias "$id+100" --no-display-prompt --backend cpu \
      >"$tmp/solo" 2>>"$tmp/err" && grep -q 'stopped: end of generation' "$tmp/err" \
    && [ "$(od -An -c "$tmp/batch")" = "$(printf '\n\n' | od -An -c)" ] && [ -z "$(cat "$tmp/solo")" ]; then
    ok "end-of-generation token $id (number $((id - 245)) of the 10) ends each line at once, as run alone"
  else
    fail "end-of-generation token $id ends a batch line" "$(od -c "$tmp/batch" | head -3)" "$(tail -n 2 "$tmp/err")"
  fi
done

smol=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$smol" ]; then
  skip "SmolLM2-135M-Instruct text batch: no test data (run tests/data/fetch.sh)"
else
  printf 'The capital of France is\nOne, two, three,\n' >"$tmp/text.txt"
  if "$mkc" run -m "$smol" --batch "$tmp/text.txt" -n 6 --ctx 64 --draft-max 2 --slots 2 \
    --backend cpu >"$tmp/batch" 2>"$tmp/err"; then
    : >"$tmp/solo"
    # each completion alone (run ends it with a newline), its newlines and backslashes escaped
    # as --batch prints them
    while read -r line; do
      "$mkc" run -m "$smol" -p "$line" -n 6 --ctx 64 --no-display-prompt --backend cpu \
        2>>"$tmp/err" | perl -0777 -pe 's/\n\z//; s/\\/\\\\/g; s/\n/\\n/g' >>"$tmp/solo" && echo >>"$tmp/solo"
    done <"$tmp/text.txt"
    if cmp -s "$tmp/batch" "$tmp/solo"; then
      ok "SmolLM2 text, 2 lines on 2 slots with drafts: each line's completion alone ($(tr '\n' '|' <"$tmp/batch"))"
    else
      fail "SmolLM2 text batch = each alone" "$(cat "$tmp/batch")" "$(cat "$tmp/solo")"
    fi
  else
    fail "SmolLM2 text batch runs" "$(cat "$tmp/err")"
  fi
fi

finish
