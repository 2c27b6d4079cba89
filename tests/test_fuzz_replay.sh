#!/usr/bin/env bash
# The fuzz targets (fuzz/*_fuzz.c) in every `make test`, where CI has no
# clang for libFuzzer: each runs under ASan and UBSan (build/sanitize/fuzz_*,
# fuzz/replay.c for a main) on its seeds and MKC_FUZZ_MUTANTS fixed mutants of
# each, and must neither crash nor break its own checks. Planted bugs show the
# replay catches an overread and a target's failed check, names the input,
# and replays that one input alone.
source "$(dirname "$0")/lib.sh"
mutants=${MKC_FUZZ_MUTANTS:-2000}

for src in fuzz/*_fuzz.c; do
  name=$(basename "$src" _fuzz.c) bin=build/sanitize/fuzz_$(basename "$src" _fuzz.c)
  seeds=$(find "fuzz/corpus/$name" -type f ! -name '.*' | wc -l)
  if [ ! -x "$bin" ]; then
    fail "$name: $bin is built (make test builds it)"
    continue
  fi
  want="$((seeds * (mutants + 1))) inputs ($mutants mutants per file)"
  MKC_FUZZ_MUTANTS=$mutants "$bin" "fuzz/corpus/$name" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  if [ "$rc" -eq 0 ] && [ "$seeds" -gt 0 ] && [ "$(cat "$tmp/$name.out")" = "$want" ]; then
    ok "$name: $seeds seeds and $mutants mutants of each, no crash, no failed check"
  else
    fail "$name: $want, exit 0" "exit $rc, $seeds seeds" "$(cat "$tmp/$name.out")" \
      "$(grep -v '^mkc: error' "$tmp/$name.err" | tail -n 30)"
  fi
done

# The planted target, built with the suite's sanitizers.
plant=$tmp/plant
if ! ${CC:-cc} -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined \
  -fno-sanitize-recover=undefined fuzz/replay.c tests/fuzz_plant.c -o "$plant" 2>"$tmp/cc.err"; then
  fail "the planted target builds" "$(cat "$tmp/cc.err")"
  finish
  exit
fi
printf abcdefgh >"$tmp/seed"

MKC_PLANT=none MKC_FUZZ_MUTANTS=$mutants "$plant" "$tmp/seed" >"$tmp/none.out" 2>&1
[ $? -eq 0 ] && [ "$(cat "$tmp/none.out")" = "$((mutants + 1)) inputs ($mutants mutants per file)" ] \
  && ok "plant off: every mutant runs, exit 0" || fail "plant off" "$(cat "$tmp/none.out")"

# A read one past the input: the buffer is the input's exact size, so ASan sees it.
MKC_PLANT=overread MKC_FUZZ_MUTANTS=$mutants "$plant" "$tmp/seed" >/dev/null 2>"$tmp/over.err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'AddressSanitizer: heap-buffer-overflow' "$tmp/over.err" \
  && grep -q "^fuzz replay: the input was $tmp/seed:0$" "$tmp/over.err"; then
  ok "planted overread: caught by ASan on the first mutant, which is named"
else
  fail "planted overread" "exit $rc" "$(tail -n 20 "$tmp/over.err")"
fi

# A target's own check, reached only by a mutant that writes an edge value into a field.
# (The group's own stderr is dropped: bash reports "Aborted" there.)
{ MKC_PLANT=field MKC_FUZZ_MUTANTS=$mutants "$plant" "$tmp/seed" >/dev/null 2>"$tmp/field.err"; } 2>/dev/null
rc=$?
named=$(sed -n "s|^fuzz replay: the input was \($tmp/seed:[0-9]*\)$|\1|p" "$tmp/field.err")
if [ "$rc" -ne 0 ] && [ -n "$named" ]; then
  ok "planted failed check: the run stops (exit $rc) and names $(basename "$named")"
else
  fail "planted failed check" "exit $rc" "$(tail -n 5 "$tmp/field.err")"
fi
if [ -n "$named" ]; then
  { MKC_PLANT=field MKC_FUZZ_ONLY=$named "$plant" >/dev/null 2>"$tmp/only.err"; } 2>/dev/null
  rc=$?
  MKC_PLANT=field MKC_FUZZ_ONLY=$tmp/seed:$((${named##*:} + 1)) "$plant" >"$tmp/next.out" 2>&1
  [ "$rc" -ne 0 ] && grep -q "the input was $named" "$tmp/only.err" && grep -q '^1 inputs' "$tmp/next.out" \
    && ok "MKC_FUZZ_ONLY replays that mutant alone (and the next one passes)" \
    || fail "MKC_FUZZ_ONLY=$named" "exit $rc" "$(tail -n 3 "$tmp/only.err")" "$(cat "$tmp/next.out")"
fi

MKC_FUZZ_MUTANTS=two "$plant" "$tmp/seed" >/dev/null 2>"$tmp/bad.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "MKC_FUZZ_MUTANTS must be a whole number, not 'two'" "$tmp/bad.err" \
  && ok "a bad MKC_FUZZ_MUTANTS: a message, exit 2" || fail "bad MKC_FUZZ_MUTANTS" "exit $rc" "$(cat "$tmp/bad.err")"
finish
