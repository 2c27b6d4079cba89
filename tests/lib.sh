# Shared by the shell tests: sourced, not run. From the repo root, with
# $mkc, a scratch $tmp removed on exit, counters, one line per check, and the
# closing "N passed, N failed, N skipped" line (finish).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
mkc=build/mkc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; for l in "$@"; do echo "     | $l"; done; failed=$((failed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }

# expect_error NAME WANT_FIRST_STDERR_LINE -- ARGS...: exit 1 or 2, no crash, that message, and
# no other error line after it (one fault, one message).
expect_error() {
  local name=$1 want=$2
  shift 3
  "$mkc" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? got
  got=$(head -n 1 "$tmp/err")
  if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
    fail "$name: exit status 1 or 2" "got $rc" "$(cat "$tmp/err")"
  elif [ "$got" != "$want" ]; then
    fail "$name: message" "want: $want" "got:  $got"
  elif [ "$(grep -c '^mkc: error' "$tmp/err")" -gt 1 ]; then
    fail "$name: one error message" "$(cat "$tmp/err")"
  elif [ -s "$tmp/out" ]; then
    fail "$name: nothing on stdout" "$(head -c 200 "$tmp/out")"
  else
    ok "$name"
  fi
}

# changed_while_open NAME HOOK FILE CHANGE -- ARGS...: mkc ARGS with HOOK (an
# MKC_TEST_PAUSE_* of util/mapped.h) holding it while CHANGE (a shell command)
# changes FILE, which mkc has open: one message, "truncated or changed while
# reading", exit 1, nothing on stdout, never a signal such as SIGBUS (135).
changed_while_open() {
  local name=$1 hook=$2 file=$3 change=$4 before after rc
  shift 5
  rm -f "$tmp/pause" && mkfifo "$tmp/pause"
  before=$(wc -c <"$file")
  env "$hook=$tmp/pause" "$mkc" "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  # Opening the FIFO returns once mkc waits on it; the change is made, and
  # closing it lets mkc go on. A mkc that never gets there fails the test.
  if ! timeout 60 bash -c 'exec 3>"$1"; eval "$2"; exec 3>&-' - "$tmp/pause" "$change"; then
    kill "$pid" 2>/dev/null
    wait "$pid"
    fail "$name: mkc reached the $hook hook" "$(cat "$tmp/err")"
    return
  fi
  wait "$pid"
  rc=$?
  after=$(wc -c <"$file")
  local want="mkc: error: $file: truncated or changed while reading ($before bytes when opened, $after now)"
  if [ "$rc" -ne 1 ]; then
    fail "$name: exit status 1" "got $rc" "$(cat "$tmp/err")"
  elif [ "$(grep '^mkc: error' "$tmp/err")" != "$want" ] || [ -s "$tmp/out" ]; then
    fail "$name: message" "want: $want" "got:  $(cat "$tmp/err" "$tmp/out")"
  else
    ok "$name"
  fi
}

# expect_greedy NAME FIXTURE MODEL [MIN]: the cpu kernel's greedy run of MODEL on FIXTURE's prompt
# against another engine's (tests/data/gemma*_*.txt: "prompt IDS", then each step's id and
# log-probability and the runner-up's), one check. Each log-probability within 0.01. Rounding that
# differs between the two can flip a near-tie, after which they continue differently: where they
# first differ, the kernel's token must be the other's runner-up, less than 0.01 behind, and at
# least MIN (default: every) steps must agree before it. GREEDY_FLAGS: more flags for mkc run.
expect_greedy() {
  local name=$1 fixture=$2 model=$3 steps prompt agree
  steps=$(grep -c '^[0-9]' "$fixture")
  agree="all $steps"
  [ -z "${4:-}" ] || agree="at least $4 of $steps"
  prompt=$(sed -n 's/^prompt //p' "$fixture" | tr ' ' ',')
  # shellcheck disable=SC2086
  "$mkc" run -m "$model" --prompt-ids "$prompt" -n "$steps" --backend cpu --logprobs 1 ${GREEDY_FLAGS:-} 2>&1 \
    >/dev/null | sed -n 's/^mkc: token \([0-9]*\) .* logprob \([-0-9.]*\);.*/\1 \2/p' >"$tmp/greedy.lp"
  paste -d' ' <(grep '^[0-9]' "$fixture") "$tmp/greedy.lp" >"$tmp/greedy"
  if awk -v min="${4:-$steps}" '
    done { next }
    NF != 6 { bad = 1; done = 1; next }
    $1 != $5 { if ($5 != $3 || $2 - $4 >= 0.01) bad = 1; done = 1; next }
    { d = $2 - $6; if (d < 0) d = -d; if (d >= 0.01) bad = 1; same++ }
    END { exit !(!bad && same >= min) }' "$tmp/greedy"; then
    ok "$name: the greedy tokens and log-probabilities of $fixture ($agree steps agree, within 0.01)"
  else
    fail "$name: the greedy tokens and log-probabilities of $fixture" "$(head -30 "$tmp/greedy")"
  fi
}

# preset_edit PRESET SEARCH REPLACE OUT: graphs/llama.lua with the first SEARCH in PRESET's
# table made REPLACE (both as they are, not patterns), as OUT (a preset a file cannot carry, for
# init's refusals); a failed check where PRESET's table has no SEARCH.
preset_edit() {
  awk -v p="preset \"$1\"" -v from="$2" -v to="$3" '
    index($0, p) == 1 { g = 1 }
    g && !done && (i = index($0, from)) { $0 = substr($0, 1, i - 1) to substr($0, i + length(from)); done = 1 }
    g && /^}/ { g = 0 }
    { print }
    END { exit !done }' graphs/llama.lua >"$4" || fail "preset_edit: preset $1 has no '$2'"
}

# expect_sha NAME FILE FIXTURE: FILE is the file FIXTURE's "sha256 HEX [NAME]" line pins (the
# one the other engine read), one check.
expect_sha() {
  local want
  want=$(sed -n 's/^sha256 \([0-9a-f]*\).*/\1/p' "$3")
  if [ -n "$want" ] && [ "$(sha256sum <"$2" | cut -d' ' -f1)" = "$want" ]; then
    ok "$1 (sha256 ${want:0:12}...)"
  else
    fail "$1" "want ${want:-a sha256 line in $3}"
  fi
}

# start NAME ARGS...: mkc serve ARGS on a port the system picks; sets port and pid.
start() {
  local name=$1
  shift
  : >"$tmp/$name.err" # there before the server's shell opens it: the loop below reads it
  "$mkc" serve "$@" --port 0 >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  port=
  for _ in $(seq 600); do
    port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\);.*|\1|p' "$tmp/$name.err")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  fail "$name: the server starts" "$(cat "$tmp/$name.err")"
  return 1
}

# tiny_smol MODEL: random weights of preset tiny (seed 3) that read and write SmolLM2's tokens
# (mkc init --vocab) written to MODEL; else 1 after a skip (no test data or python3) or a fail.
tiny_smol() {
  local vocab=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
  if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$vocab" ] || ! command -v python3 >/dev/null; then
    skip "random weights with SmolLM2's tokens: no test data (tests/data/fetch.sh) or no python3"
    return 1
  fi
  "$mkc" init --preset tiny --seed 3 --vocab "$vocab" -o "$1" >/dev/null 2>"$tmp/err" && return 0
  fail "init --vocab" "$(cat "$tmp/err")"
  return 1
}

finish() {
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}
