#!/usr/bin/env bash
# Bad graphs must fail cleanly: for each tests/fails/*.lua, `mkc gen` exits 1
# (not 0, not a crash), the first line of stderr is the file's `-- expect:`
# line exactly, and no kernel file is written. Each file starts with
#   -- preset: NAME
#   -- expect: tests/fails/FILE.lua:LINE: error: MESSAGE
# Run from anywhere; paths are relative to the repository root.
source "$(dirname "$0")/lib.sh"

MKC=${MKC:-$mkc} # overridable, to test this script itself
MIN_FILES=10

if [ ! -x "$MKC" ]; then
  fail "$MKC: not built (run make)"
  finish
  exit 1
fi

files=(tests/fails/*.lua)
[ -e "${files[0]}" ] || files=()
if [ "${#files[@]}" -ge "$MIN_FILES" ]; then
  ok "tests/fails: ${#files[@]} bad graphs (at least $MIN_FILES)"
else
  fail "tests/fails: ${#files[@]} bad graphs, expected at least $MIN_FILES"
fi

run_timeout=()
command -v timeout >/dev/null && run_timeout=(timeout 60)

for f in "${files[@]}"; do
  preset=$(sed -n 's/^-- preset: //p' "$f" | head -n 1)
  expect=$(sed -n 's/^-- expect: //p' "$f" | head -n 1)
  if [ -z "$preset" ] || [ -z "$expect" ]; then
    fail "$f: headers" "expected '-- preset: NAME' and '-- expect: MESSAGE' lines"
    continue
  fi

  out="$tmp/out.cu"
  rm -f "$out"
  "${run_timeout[@]}" "$MKC" gen "$f" --preset "$preset" -o "$out" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?

  # (a) exit status 1: not success, not a signal, not a timeout
  if [ "$rc" -eq 1 ]; then
    ok "$f: exit status 1"
  elif [ "$rc" -gt 128 ]; then
    fail "$f: exit status" "expected: 1" "actual:   $rc (killed by signal $((rc - 128)))"
  elif [ "$rc" -eq 124 ] && [ "${#run_timeout[@]}" -gt 0 ]; then
    fail "$f: exit status" "expected: 1" "actual:   timed out after 60 s"
  else
    fail "$f: exit status" "expected: 1" "actual:   $rc"
  fi

  # (b) the first line of stderr is the expected message
  actual=$(head -n 1 "$tmp/stderr")
  if [ "$actual" == "$expect" ]; then
    ok "$f: message"
  else
    fail "$f: message" "expected: $expect" "actual:   $actual"
  fi

  # (c) nothing written
  if [ ! -s "$out" ]; then
    ok "$f: no output file"
  else
    fail "$f: no output file" "expected: no $out (or an empty one)" "actual:   $(wc -c <"$out") bytes written"
  fi
done

finish
