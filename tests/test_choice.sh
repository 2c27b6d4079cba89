#!/usr/bin/env bash
# mkc perplexity --hellaswag / --winogrande (llama-perplexity's multiple-choice scores) against
# tests/choice_oracle.py, which chooses the tasks as llama-perplexity does and scores each
# candidate from a plain perplexity run's log-probabilities (--kl-divergence-base): the HellaSwag
# lines (running accuracy and its interval) exactly, the Winogrande lines with each candidate's
# score to within the file's rounding; a subset of tasks as llama-perplexity draws it; the
# refusals. On random weights with SmolLM2's tokenizer (needs the test data).
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
  skip "--hellaswag/--winogrande: no python3"
  finish
  exit
fi
model=$tmp/t.gguf
if ! tiny_smol "$model"; then
  skip "--hellaswag/--winogrande: no SmolLM2 vocabulary (MKC_TEST_DATA)"
  finish
  exit
fi
# 8 HellaSwag tasks (long contexts, short endings, gold indices at random) and 7 Winogrande lines
# (a header, a quoted sentence with commas, short tails that score from the shared start)
python3 - "$tmp" <<'EOF'
import random, sys
r = random.Random(11)
words = "the a man woman dog cat ball house street river tree car book window garden".split()
verbs = "runs jumps sits looks walks opens reads throws holds finds".split()
lines = []
for t in range(8):
    ctx = "Activity %d: " % t + " ".join(r.choice(words + verbs) for _ in range(18))
    lines += [ctx, str(r.randrange(4))] + [" ".join(r.choice(words + verbs) for _ in range(r.randrange(2, 5))) + "." for _ in range(4)]
open(sys.argv[1] + "/hs.txt", "w").write("\n".join(lines) + "\n")
rows = ["index,sentence,option1,option2,answer",
        "0,The trophy does not fit into the brown suitcase because the _ is too large for it today.,trophy,suitcase,1",
        '1,"The man lifted the boy onto his shoulders, and then, because _ was so strong, walked home.",man,boy,1',
        "2,John could not see the stage with Billy in front of him because _ is so short.,John,Billy,1",
        "3,The city councilmen refused the demonstrators a permit because they said _ feared it.,councilmen,demonstrators,1",
        "4,Sarah was a much better surgeon than Maria so _ won.,Sarah,Maria,2",
        "5,The dog chased the cat up the tall tree in the garden because the _ was angry.,dog,cat,1"]
open(sys.argv[1] + "/wg.csv", "w").write("\n".join(rows) + "\n")
EOF
flags=(-m "$model" --backend cpu --ubatch 1 --draft-max 0 -c 128)

# check NAME KIND TASKS [FLAGS...]: mkc's lines against the oracle's
check() {
  local name=$1 kind=$2 tasks=$3 data
  shift 3
  data=$tmp/hs.txt flag=--$kind
  [ "$kind" = winogrande ] && data=$tmp/wg.csv
  [ "$kind" = multiple ] && data=$tmp/mc.bin flag=--multiple-choice
  "$mkc" perplexity "${flags[@]}" "$flag" -f "$data" "$@" >"$tmp/got" 2>"$tmp/err"
  if ! python3 tests/choice_oracle.py "$kind" "$data" "$tasks" "$mkc" "$model" >"$tmp/want" 2>"$tmp/oracle.err"; then
    fail "$name: the oracle" "$(tail -3 "$tmp/oracle.err")"
    return
  fi
  python3 - "$tmp/got" "$tmp/want" <<'EOF' && ok "$name ($(grep -cP '^\d+\t' "$tmp/got") tasks, $(grep -P '^\d+\t' "$tmp/got" | tail -1 | cut -f2) at the end)" || fail "$name" "$(cat "$tmp/got")" "$(cat "$tmp/want")" "$(tail -3 "$tmp/err")"
import sys
got = open(sys.argv[1]).read().splitlines()
want = open(sys.argv[2]).read().splitlines()
tol = float(want.pop().split()[1])
if len(got) != len(want):
    sys.exit(1)
for g, w in zip(got, want):
    if g == w:
        continue
    gf, wf = g.split(), w.split()
    # Winogrande: the task, accuracy, answer and gold exact, the two scores within tol
    if len(gf) != 6 or len(wf) != 6 or [gf[i] for i in (0, 1, 4, 5)] != [wf[i] for i in (0, 1, 4, 5)]:
        sys.exit(1)
    if any(abs(float(a) - float(b)) > tol for a, b in zip(gf[2:4], wf[2:4])):
        sys.exit(1)
EOF
}
check "--hellaswag: every task, in llama-perplexity's order, each one's answer" hellaswag 8 --hellaswag-tasks 100
check "--hellaswag-tasks 5: the 5 llama-perplexity draws" hellaswag 5 --hellaswag-tasks 5
check "--winogrande: every task in order (the header skipped), the two scores and the answer" winogrande 0
grep -q "wg.csv:1: the sentence has no '_' for a choice: skipped" "$tmp/err" \
  && ok "... the header line warned of" || fail "the header's warning" "$(cat "$tmp/err")"
check "--winogrande-tasks 3: the 3 llama-perplexity draws" winogrande 3 --winogrande-tasks 3
python3 tests/choice_oracle.py write-mc "$tmp/mc.bin"
check "--multiple-choice: every task of a binary file (2 to 5 answers), the final result and chance" multiple 0
check "--multiple-choice-tasks 4: the 4 llama-perplexity draws" multiple 4 --multiple-choice-tasks 4
head -c 200 "$tmp/mc.bin" >"$tmp/mc_cut.bin"
"$mkc" perplexity -m "$model" --backend cpu --multiple-choice -f "$tmp/mc_cut.bin" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && grep -qE "^mkc: error: $tmp/mc_cut.bin: (task [0-9]+: cut short|task [0-9]+'s position [0-9]+ is past the end of its 200 bytes)$" "$tmp/err" \
  && ok "--multiple-choice: a file cut short refused" || fail "a multiple-choice file cut short" "exit $rc" "$(cat "$tmp/err")"

expect_error "--hellaswag without a dataset" \
  "mkc: error: perplexity: --hellaswag, --winogrande and --multiple-choice read their tasks from -f FILE: give it" \
  -- perplexity -m "$model" --backend cpu --hellaswag
expect_error "--hellaswag with --winogrande" \
  "mkc: error: perplexity: --hellaswag, --winogrande, --multiple-choice, --kl-divergence(-base) and --ppl-stride are different measures: one at a time" \
  -- perplexity -m "$model" --backend cpu --hellaswag --winogrande -f "$tmp/hs.txt"
head -n 5 "$tmp/hs.txt" >"$tmp/cut.txt"
expect_error "a HellaSwag file cut short" \
  "mkc: error: $tmp/cut.txt: 5 lines, not a whole number of tasks (6 lines each: the context, the gold ending's index, 4 endings)" \
  -- perplexity -m "$model" --backend cpu --hellaswag -f "$tmp/cut.txt"
head -n 6 "$tmp/hs.txt" >"$tmp/one.txt"
n_task=0 # the longest candidate's tokens, which the message names
for e in 3 4 5 6; do
  k=$("$mkc" tokenize -m "$model" -p "$(head -1 "$tmp/hs.txt") $(sed -n ${e}p "$tmp/hs.txt")" --ids --no-parse-special | tr -cd ',' | wc -c)
  [ "$((k + 1))" -gt "$n_task" ] && n_task=$((k + 1))
done
"$mkc" perplexity -m "$model" --backend cpu --hellaswag -f "$tmp/one.txt" -c 8 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && [ "$(grep '^mkc: error' "$tmp/err")" = "mkc: error: $tmp/one.txt:1: a task of $n_task tokens, past the context of 8 (-c)" ] \
  && ok "a task past the context: refused, naming its line" || fail "a task past the context" "exit $rc" "$(cat "$tmp/err")"
expect_error "a model without a tokenizer" \
  "mkc: error: perplexity: a text needs a model with a tokenizer (-m)" \
  -- perplexity --preset tiny --random-weights 1 --backend cpu --winogrande -f "$tmp/wg.csv"
finish
