#!/usr/bin/env bash
# Every command README.md shows, run as written from the repo root, in order:
# each must exit 0. Commands are the indented code lines that start with
# `make ` or `build/mkc `; a line ending in "# needs a GPU" is skipped (and
# counted) where no GPU answers; `make test` is this suite itself, skipped.
# Interactive commands read an empty stdin. Files the commands write in the
# repo root are removed afterwards.
source "$(dirname "$0")/lib.sh"

# What the repo root held before: only what the commands add is removed.
before=$(ls -A)
cleanup() {
  for f in $(ls -A); do
    grep -qxF -- "$f" <<<"$before" || rm -rf -- "$f"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

gpu=0
"$mkc" run --preset tiny --random-weights 1 -n 1 --backend cuda >/dev/null 2>&1 && gpu=1

n=0
while IFS= read -r line; do
  cmd=${line#    }
  n=$((n + 1))
  name="README command $n: ${cmd:0:90}"
  if [ "$cmd" = "make test" ]; then
    skip "$name (this test suite itself)"
    continue
  fi
  if [[ "$cmd" == *"# needs a GPU" ]] && [ "$gpu" -eq 0 ]; then
    skip "$name (no GPU here)"
    continue
  fi
  bash -c "$cmd" </dev/null >"$tmp/out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    ok "$name"
  else
    fail "$name: exit status $rc" "$(tail -n 5 "$tmp/out")"
  fi
done < <(grep -E '^    (make |build/mkc )' README.md)
[ "$n" -ge 10 ] && ok "README shows $n commands" || fail "README shows $n commands, expected >= 10"
finish
