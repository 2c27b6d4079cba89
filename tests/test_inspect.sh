#!/usr/bin/env bash
# `mkc inspect` from the command line, on the golden kernels: the outline
# against the kernel's own header and stage comments, the JSON report against
# the schema in docs/INSPECT.md, --stage against the file's lines and the
# template's, --diff, --check (presets clean, tests/fails/bad_kernel.cu with
# exactly its planted warnings), and the errors. Skipped where libclang is
# missing (tests/test_inspect.c checks the values against codegen's plan).
source "$(dirname "$0")/lib.sh"

tiny=tests/golden/llama.tiny.cu
"$mkc" inspect "$tiny" --arch none >"$tmp/out" 2>"$tmp/err"
if grep -q "inspect needs libclang" "$tmp/err"; then
  echo "skip inspect CLI tests: $(head -n 1 "$tmp/err")"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi

# libclang missing: says so and how to install it.
MKC_LIBCLANG=/nonexistent/libclang.so "$mkc" inspect "$tiny" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q '^mkc: error: inspect needs libclang: libclang not found: MKC_LIBCLANG=/nonexistent/libclang.so' "$tmp/err" \
  && grep -q 'apt-get install libclang1-19' "$tmp/err"; then
  ok "no libclang: exit 1, names the library and the package to install"
else
  fail "no libclang message" "rc $rc" "$(cat "$tmp/err")"
fi

# The outline of each golden: as many stages, in the order of its stage comments.
for p in tiny odd llama-3.2-1b; do
  k=tests/golden/llama.$p.cu
  if ! "$mkc" inspect "$k" --arch none >"$tmp/$p.txt" 2>"$tmp/err"; then
    fail "inspect $p: exit 0" "$(head -n 20 "$tmp/err" "$tmp/$p.txt")"
    continue
  fi
  want=$(sed -n 's|^  /\* stage \([0-9]*/[0-9]*\): \([a-z_]*\) --.*|\1 \2|p' "$k")
  got=$(sed -n 's|^stage \([0-9]*/[0-9]*\)  \([a-z_]*\)  .*|\1 \2|p' "$tmp/$p.txt")
  planned=$(sed -n 's/^ \* plan: *\([0-9]*\) stages.*/\1/p' "$k")
  if [ -n "$want" ] && [ "$want" == "$got" ] && [ "$(wc -l <<<"$got")" -eq "$planned" ]; then
    ok "inspect $p: $planned stages, in the kernel's order"
  else
    fail "inspect $p: stages" "planned $planned" "$(diff <(echo "$want") <(echo "$got") | head)"
  fi
  grep -q '^metadata and code agree' "$tmp/$p.txt" && ok "inspect $p: metadata and code agree" \
    || fail "inspect $p: agreement" "$(grep -A5 mismatch "$tmp/$p.txt" | head)"
done
grep -q '^  floor .* per step (sum of stage floors; barriers not counted): at most [0-9]* tokens/s$' "$tmp/llama-3.2-1b.txt" \
  && ok "inspect: roofline floor and tokens/s" || fail "roofline line" "$(grep floor "$tmp/llama-3.2-1b.txt" | tail -n 2)"

# JSON against the schema in docs/INSPECT.md, and its totals against its stages.
if command -v python3 >/dev/null; then
  sed -n '/<!-- schema:begin -->/,/<!-- schema:end -->/p' docs/INSPECT.md | sed '1,2d;$d' | sed '$d' >"$tmp/schema.json"
  for p in tiny odd llama-3.2-1b; do
    "$mkc" inspect tests/golden/llama.$p.cu --arch none --json --tokens 3 --pos 100 >"$tmp/$p.json" 2>"$tmp/err"
    if out=$(python3 - "$tmp/schema.json" "$tmp/$p.json" tests/golden/llama.$p.cu <<'EOF' 2>&1
import json, sys
schema, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
kernel = open(sys.argv[3]).read()
def check(v, s, path):
    if "$ref" in s:
        return check(v, schema["$defs"][s["$ref"].split("/")[-1]], path)
    t = s.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "number": (int, float), "integer": int}
    if t and (not isinstance(v, kinds[t]) or (t in ("integer", "number") and isinstance(v, bool))):
        raise SystemExit(f"{path}: expected {t}, got {v!r}")
    if "const" in s and v != s["const"]: raise SystemExit(f"{path}: expected {s['const']!r}, got {v!r}")
    if "enum" in s and v not in s["enum"]: raise SystemExit(f"{path}: {v!r} not in {s['enum']}")
    if "minimum" in s and v < s["minimum"]: raise SystemExit(f"{path}: {v} < {s['minimum']}")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v: raise SystemExit(f"{path}: missing {k}")
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props: check(x, props[k], f"{path}.{k}")
            elif s.get("additionalProperties") is False: raise SystemExit(f"{path}: unexpected {k}")
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v): check(x, s["items"], f"{path}[{i}]")
check(report, schema, "$")
st = report["stages"]
assert len(st) == report["kernel"]["stages"] == kernel.count("  /* stage "), "stage count"
assert [s["index"] for s in st] == list(range(1, len(st) + 1)), "indexes"
for key in ("bytes_read", "bytes_written", "flops"):
    assert report["totals"][key] == sum(s[key] for s in st), key
for s in st:
    assert s["bytes_read"] == sum(b["bytes"] for b in s["buffers"] if b["access"] == "read")
    T, P = report["step"]["tokens"], report["step"]["pos"]
    for b in s["buffers"]:
        q = b["per_step"]
        assert b["bytes"] == q["c"] + q["t"] * T + q["ctx"] * (P + T) + q["att"] * (T * P + T * (T + 1) // 2)
assert report["mismatches"] == [] and report["step"] == {"tokens": 3, "pos": 100, "blocks": 132}
print(len(st), "stages")
EOF
    ); then
      ok "json $p: valid against docs/INSPECT.md's schema; totals, quantities and step agree ($out)"
    else
      fail "json $p" "$out"
    fi
  done
else
  skip "json schema: no python3 to validate with"
fi

# --stage: the file's own lines, the graph node's line, the template's line.
"$mkc" inspect "$tiny" --arch none --stage 3 >"$tmp/stage" 2>"$tmp/err"
range=$(sed -n '1s/^stage 3\/15: attention (.*:\([0-9]*\)-\([0-9]*\))$/\1,\2/p' "$tmp/stage")
tline=$(grep -n '^MKC_DEVICE[A-Z_]* void mkc_attention(' templates/attention.cuh | cut -d: -f1)
gline=$(grep -n 'local a = g.attention' graphs/llama.lua | cut -d: -f1)
# each shown line is the file's line of its number, a layer loop's with the pass's values in place
# of lay_i[j] / lay_w[j] (docs/INSPECT.md, "The layer loop")
same_lines() { # KERNEL STAGE_OUTPUT
  python3 - "$1" "$2" <<'PY'
import re, sys
src = open(sys.argv[1]).read().split("\n")
shown = [l for l in open(sys.argv[2]).read().split("\n") if re.match(r"^ *[0-9]+ \| ", l)]
ok = len(shown) > 3
for l in shown:
    n, text = l.split(" | ", 1)
    line = src[int(n) - 1]
    pattern = re.sub(r"lay_[iw]\\\[[0-9]+\\\]", "-?[0-9]+", re.escape(line))
    ok = ok and (line == text or ("lay_" in line and re.fullmatch(pattern, text) is not None))
sys.exit(0 if ok else 1)
PY
}
if [ -n "$range" ] && same_lines "$tiny" "$tmp/stage" \
  && grep -q "calls mkc_attention  (templates/attention.cuh:$tline)$" "$tmp/stage" \
  && grep -q "graph node #13 attention layer 0 (line $gline)  (graphs/llama.lua:$gline)$" "$tmp/stage"; then
  ok "--stage 3: lines $range of the file, templates/attention.cuh:$tline, graphs/llama.lua:$gline"
else
  fail "--stage 3" "range '$range' template line $tline" "$(head -n 5 "$tmp/stage")"
fi
"$mkc" inspect "$tiny" --arch none --stage blk.1.ffn_up.weight | head -n 1 | grep -q '^stage 10/15: gate_up_swiglu ' \
  && ok "--stage by node name: blk.1.ffn_up.weight is stage 10" || fail "--stage by node name"
"$mkc" inspect "$tiny" --arch none --stage nothing_like_this >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "no stage is 'nothing_like_this'" "$tmp/err" && ok "--stage with no match: exit 1" \
  || fail "--stage with no match" "$(cat "$tmp/err")"

# --diff: itself, then another draft width.
"$mkc" inspect --diff "$tiny" "$tiny" --arch none >"$tmp/diff" 2>&1
[ $? -eq 0 ] && grep -q '^no change: 15 stages' "$tmp/diff" && ok "--diff with itself: no change, exit 0" \
  || fail "--diff with itself" "$(cat "$tmp/diff")"
"$mkc" gen graphs/llama.lua --preset tiny --draft-max 2 -o "$tmp/k2.cu" 2>/dev/null
"$mkc" inspect --diff "$tiny" "$tmp/k2.cu" --arch none >"$tmp/diff" 2>&1
rc=$?
# qkv_rope's per-input region (inv_rms: a float per input, padded) shrinks with T
if [ "$rc" -eq 1 ] && grep -q '^~ stage 2 -> 2 qkv_rope: .*smem inv_rms 0+32 -> 0+16;' "$tmp/diff" && ! grep -q '^~ stage 1 ' "$tmp/diff" \
  && grep -q '^  draft_max                  4 -> 2$' "$tmp/diff"; then
  ok "--diff --draft-max 4 vs 2: exit 1, draft_max and the changed stages named, embed unchanged"
else
  fail "--diff draft-max" "rc $rc" "$(head -n 8 "$tmp/diff")"
fi

# --check: every preset clean; the planted kernel fails with exactly its warnings.
for p in tiny odd llama-3.2-1b; do
  "$mkc" inspect --check tests/golden/llama.$p.cu >"$tmp/out" 2>&1 && ok "--check $p: no warnings" \
    || fail "--check $p" "$(head -n 12 "$tmp/out")"
done
# slot kernels (gen --slots, paged or not, wide steps): clean, and their metadata and code agree
for pages in "" "--kv-pages 20" "--kv-pages 20 --step-rows 24"; do
  # shellcheck disable=SC2086
  "$mkc" gen graphs/llama.lua --preset tiny --draft-max 7 --slots 3 $pages -o "$tmp/slots.cu" 2>/dev/null
  if "$mkc" inspect --check "$tmp/slots.cu" >"$tmp/out" 2>&1 && "$mkc" inspect "$tmp/slots.cu" >"$tmp/rep" 2>&1 \
    && grep -q '^metadata and code agree' "$tmp/rep"; then
    ok "a slot kernel ${pages:-(whole caches)}: no warnings, metadata and code agree"
  else
    fail "a slot kernel ${pages:-(whole caches)}" "$(head -n 12 "$tmp/out")" "$(tail -n 6 "$tmp/rep")"
  fi
done
# experts (moe-tiny, a slot kernel of it in wide steps): clean, metadata and code agree
for flags in "--draft-max 4" "--draft-max 4 --slots 3 --kv-pages 20 --step-rows 15"; do
  # shellcheck disable=SC2086
  "$mkc" gen graphs/llama.lua --preset moe-tiny $flags -o "$tmp/moe.cu" 2>/dev/null
  if "$mkc" inspect --check "$tmp/moe.cu" >"$tmp/out" 2>&1 && "$mkc" inspect "$tmp/moe.cu" --arch none >"$tmp/rep" 2>&1 \
    && grep -q '^metadata and code agree' "$tmp/rep" && grep -q '^stage 6/[0-9]*  moe_up' "$tmp/rep"; then
    ok "moe-tiny ($flags): no warnings, metadata and code agree"
  else
    fail "moe-tiny ($flags)" "$(head -n 12 "$tmp/out")" "$(grep -A4 MISMATCH "$tmp/rep" | head)"
  fi
done
# gpt-oss (gptoss-tiny): the sinks, the output projection's and router's biases and the experts'
# are read where the metadata says (a kernel whose calls did not name them disagreed)
"$mkc" gen graphs/llama.lua --preset gptoss-tiny --draft-max 4 -o "$tmp/oss.cu" 2>/dev/null
if "$mkc" inspect --check "$tmp/oss.cu" >"$tmp/out" 2>&1 && "$mkc" inspect "$tmp/oss.cu" --arch none >"$tmp/rep" 2>&1 \
  && grep -q '^metadata and code agree' "$tmp/rep" && grep -q 'attn_sinks' "$tmp/rep"; then
  ok "gptoss-tiny: no warnings, metadata and code agree (sinks and biases read)"
else
  fail "gptoss-tiny" "$(head -n 12 "$tmp/out")" "$(grep -A4 'MISMATCH\|no call reads' "$tmp/rep" | head)"
fi
bad=tests/fails/bad_kernel.cu
"$mkc" inspect --check "$bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && diff <(sed -n 's/^ \* expect: //p' "$bad" | sort) <(grep ': warning: ' "$tmp/out" | sort) >"$tmp/d" \
  && grep -q "^mkc: inspect --check: $bad: 7 warnings$" "$tmp/err"; then
  ok "--check $bad: exit 1, exactly its 7 planted warnings at file:line:col"
else
  fail "--check $bad" "rc $rc" "$(cat "$tmp/d" "$tmp/err")"
fi

# Errors: not CUDA, CUDA but not mkc, an mkc kernel from before inspect, a tampered one.
printf 'int main( {\n' >"$tmp/broken.cu"
"$mkc" inspect "$tmp/broken.cu" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && head -n 1 "$tmp/err" | grep -Eq "^$tmp/broken.cu:1:[0-9]+: error: " && [ ! -s "$tmp/out" ] \
  && ok "a file that does not parse: clang's error at file:line, exit 1" || fail "broken file" "rc $rc" "$(head -n 3 "$tmp/err")"
printf '__global__ void k(float *x) { x[0] = 1.0f; }\n' >"$tmp/plain.cu"
"$mkc" inspect "$tmp/plain.cu" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(head -n 1 "$tmp/err")" == "$tmp/plain.cu:1: error: not an mkc kernel: no __global__ mkc_step is defined (1 other)" ] \
  && ok "a CUDA file that is not an mkc kernel: file:1: error" || fail "plain CUDA" "$(cat "$tmp/err")"
"$mkc" inspect README.md >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && head -n 1 "$tmp/err" | grep -Eq '^README.md:[0-9]+:[0-9]+: error: ' && ok "README.md: clang's errors, exit 1" \
  || fail "README.md" "$(head -n 3 "$tmp/err")"
grep -v '^ \*          and writes\| \* inspect: format' "$tiny" >"$tmp/old.cu"
"$mkc" inspect "$tmp/old.cu" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "^$tmp/old.cu:1: error: not an mkc kernel: the header has no \" \* inspect: format N\" line" "$tmp/err" \
  && ok "a kernel without inspect metadata: says to regenerate it" || fail "old kernel" "$(cat "$tmp/err")"
sed '/stage 4\/15/,/stage 5\/15/s/flops: 8192\*t/flops: 8191*t/' "$tiny" >"$tmp/tampered.cu"
"$mkc" inspect "$tmp/tampered.cu" --arch none >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q '^  MISMATCH flops: metadata 8191\*t, code 8192\*t$' "$tmp/out" \
  && grep -q "1 mismatch between the codegen metadata and the code" "$tmp/err" \
  && ok "a tampered comment: the mismatch is shown under its stage, exit 1" || fail "tampered" "$(cat "$tmp/err")"
"$mkc" inspect "$tiny" --gpu b300 >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q '^mkc: error: --gpu b300: unknown GPU (known: h100 h100-pcie h200 a100' "$tmp/err" \
  && ok "--gpu unknown: lists the known GPUs" || fail "--gpu unknown" "$(cat "$tmp/err")"

# Resources through NVRTC when it is there; a clear line when it is not.
"$mkc" inspect "$tiny" --arch sm_90 >"$tmp/out" 2>"$tmp/err"
# the dynamic smem ptxas is given is the plan's (the memory line's "smem N B per block")
smem=$(sed -n 's/^memory .*; smem \([0-9]*\) B per block$/\1/p' "$tmp/out")
if [ -n "$smem" ] && grep -Eq "^resources  sm_90 \(NVRTC [0-9.]+, ptxas\): [1-9][0-9]* registers, spills [0-9]+ B stored / [0-9]+ B loaded, stack [0-9]+ B, smem [0-9]+ B static \+ $smem B dynamic, [0-9]+ barriers?" "$tmp/out"; then
  ok "--arch sm_90: registers, spills, stack, smem and barriers from ptxas"
elif grep -q '^resources  unavailable: .*nvrtc' "$tmp/out"; then
  skip "--arch sm_90: no libnvrtc here ($(grep '^resources' "$tmp/out"))"
else
  fail "--arch sm_90" "$(grep '^resources' "$tmp/out")" "$(head -n 5 "$tmp/err")"
fi

finish
