#!/usr/bin/env bash
# Runs every test program (build/test_*, the sanitizer builds in
# build/sanitize/) and script (tests/test_*.sh) from the
# repo root, each printing "N passed, N failed[, N skipped]" last, and sums them.
set -u
cd "$(dirname "$0")/.."
export MKC_CACHE_DIR="$PWD/build/test-cache"
rm -rf "$MKC_CACHE_DIR"
# The tests choose the KV cache type themselves (golden kernels and byte counts are bf16's).
unset MKC_KV_DTYPE
# The real model and tokenizer vocabularies (fetched once, then cached).
if data=$(bash tests/data/fetch.sh); then
  export MKC_TEST_DATA="$data"
else
  echo "note: no test data: the tests that need a real model or vocabulary are skipped"
  export MKC_TEST_DATA=
fi
passed=0 failed=0 skipped=0 broken=()
for t in build/test_* build/sanitize/test_* tests/test_*.sh; do
  case "$t" in *.d) continue ;; esac
  [ -x "$t" ] || [ "${t%.sh}" != "$t" ] || continue
  echo "== $t"
  log=$(mktemp)
  if [ "${t%.sh}" != "$t" ]; then bash "$t" >"$log" 2>&1; else "$t" >"$log" 2>&1; fi
  rc=$?
  cat "$log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
  rm -f "$log"
  if [ -z "$line" ]; then
    echo "FAIL $t: exited with status $rc and no summary line"
    failed=$((failed + 1)) broken+=("$t")
    continue
  fi
  read -r p _ f _ s _ <<<"${line//,/}"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $t: exited with status $rc"
    failed=$((failed + 1))
  fi
  [ "$f" -gt 0 ] || [ "$rc" -ne 0 ] && broken+=("$t")
done
[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
