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

# expect_error NAME WANT_FIRST_STDERR_LINE -- ARGS...: exit 1 or 2, no crash, that message.
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
  elif [ -s "$tmp/out" ]; then
    fail "$name: nothing on stdout" "$(head -c 200 "$tmp/out")"
  else
    ok "$name"
  fi
}

finish() {
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}
