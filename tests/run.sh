#!/usr/bin/env bash
# Runs every test program (build/test_*, the sanitizer builds in
# build/sanitize/) and script (tests/test_*.sh) from the repo root, each
# printing "N passed, N failed[, N skipped]" last, and sums them. The tests
# run MKC_TEST_JOBS at a time (default: one per core; each is one process
# that compiles and runs its kernels serially, and they share nothing but the
# kernel cache, whose entries are written atomically). A test's log is
# printed whole when it ends, with how long it took.
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
jobs=${MKC_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in '' | *[!0-9]* | 0)
  echo "tests/run.sh: MKC_TEST_JOBS must be a positive whole number, not '$jobs'" >&2
  exit 2
  ;;
esac

# The slowest first, so the last to start are short (seconds on 2 cores, 2026-11-28, eighth
# session: 875, 388, 263, 251, 220, 156, 137, 126, 93, 71, 62, 58, 56, 55, 51; the rest less).
slow="tests/test_fake_cuda.sh build/test_spec_sampled build/test_nvrtc build/test_slots
  build/test_sync_deletions build/test_prompt build/test_draft_sources build/test_draft_head
  build/test_rounds build/test_wtypes tests/test_cli.sh build/test_model build/test_sampler
  tests/test_model_cli.sh tests/test_serve.sh"
tests=()
if [ -n "${MKC_TESTS:-}" ]; then # a list to run instead of every test, in its order
  slow=$MKC_TESTS
  for t in $slow; do
    [ -e "$t" ] || { echo "tests/run.sh: MKC_TESTS names $t, which is not built or not a test" >&2; exit 2; }
  done
fi
for t in $slow; do [ -e "$t" ] && tests+=("$t"); done
slow=" $(echo $slow) " # one line, for the match below
[ -n "${MKC_TESTS:-}" ] || for t in build/test_* build/sanitize/test_* tests/test_*.sh; do
  case "$t" in *.d) continue ;; esac
  [ -x "$t" ] || [ "${t%.sh}" != "$t" ] || continue
  case "$slow" in *" $t "*) continue ;; esac
  tests+=("$t")
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
passed=0 failed=0 skipped=0 broken=()

# Prints test i's log and adds its summary line to the totals.
report() {
  local t=${tests[$1]} log=$logs/$1 rc line p f s
  rc=$(cat "$log.rc")
  echo "== $t ($(cat "$log.s") s, $(cat "$log.cpu") s CPU)"
  cat "$log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $t: exited with status $rc and no summary line"
    failed=$((failed + 1)) broken+=("$t")
    return
  fi
  read -r p _ f _ s _ <<<"${line//,/}"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $t: exited with status $rc"
    failed=$((failed + 1))
  fi
  if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then broken+=("$t"); fi
}

# Runs test i into its log, with its exit status, seconds and CPU seconds beside it: the CPU
# seconds (user + system of every process the test ran) are its share of the machine, which the
# wall seconds are not when the tests beside it, or its own processes, outnumber the cores.
run_one() {
  local t=${tests[$1]} log=$logs/$1 start=$SECONDS rc
  if [ "${t%.sh}" != "$t" ]; then bash "$t" >"$log" 2>&1; else "$t" >"$log" 2>&1; fi
  rc=$?
  echo $((SECONDS - start)) >"$log.s"
  # times: this subshell's user and system time, then its children's ("0m1.500s 0m0.250s");
  # into a file, since a pipe or $(...) would run it in a new process, which has no children
  times >"$log.times"
  awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
                 printf "%d\n", s + 0.5 }' "$log.times" >"$log.cpu"
  echo "$rc" >"$log.rc"
}

declare -A index_of
running=0
for i in "${!tests[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n -p done_pid
    report "${index_of[$done_pid]}"
    running=$((running - 1))
  fi
  run_one "$i" &
  index_of[$!]=$i
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n -p done_pid
  report "${index_of[$done_pid]}"
  running=$((running - 1))
done

[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
