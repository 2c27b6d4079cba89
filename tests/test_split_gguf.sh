#!/usr/bin/env bash
# Split models (llama.cpp's gguf-split: PREFIX-00001-of-0000N.gguf ..., cut here by
# tests/gguf_split.py, written apart from mkc): the first file opens the rest, and runs as the
# whole file does; the others, a missing file, a misnamed first one and files that do not belong
# together are refused with one message; mkc quantize reads a split model whole, and with
# --keep-split writes one as it was cut, each file the tensors of IN's file of that number.
source "$(dirname "$0")/lib.sh"
dump() { python3 tests/gguf_dump.py "$1"; }
split() { python3 tests/gguf_split.py "$@"; }

"$mkc" init --preset blocks-tiny --seed 2 -o "$tmp/whole.gguf" >/dev/null 2>&1
split "$tmp/whole.gguf" "$tmp/sp" 8 # 21 tensors: 8, 8, 5
[ -f "$tmp/sp-00003-of-00003.gguf" ] && ok "cut in 3 files" || fail "cut in 3 files" "$(ls "$tmp")"
run() { "$mkc" run -m "$1" --prompt-ids 3,1,4,1,5 -n 8 --backend "${2:-cpu}" 2>"$tmp/err"; }
a=$(run "$tmp/sp-00001-of-00003.gguf")
b=$(run "$tmp/whole.gguf")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "the first file runs as the whole file: $a" \
  || fail "the split model runs" "$a / $b" "$(cat "$tmp/err")"
"$mkc" info -m "$tmp/sp-00001-of-00003.gguf" >"$tmp/info" 2>&1
grep -q "^split: 3 files, $(($(stat -c %s "$tmp"/sp-0000[123]-of-00003.gguf | paste -sd+))) bytes in all" "$tmp/info" \
  && grep -q '^tensors: 21 ' "$tmp/info" && ok "info: 3 files, their bytes, 21 tensors" \
  || fail "info" "$(head -12 "$tmp/info")"

expect_error "the second file" \
  "mkc: error: $tmp/sp-00002-of-00003.gguf: this is file 2 of 3 of a split model: open the first, $tmp/sp-00001-of-00003.gguf" \
  -- run -m "$tmp/sp-00002-of-00003.gguf" --prompt-ids 3 -n 1
cp "$tmp/sp-00001-of-00003.gguf" "$tmp/renamed.gguf"
expect_error "a first file not named PREFIX-00001-of-00003.gguf" \
  "mkc: error: $tmp/renamed.gguf: the first of 3 files of a split model, but not named PREFIX-00001-of-00003.gguf (as llama.cpp's gguf-split names them), so the others cannot be found" \
  -- run -m "$tmp/renamed.gguf" --prompt-ids 3 -n 1
mv "$tmp/sp-00003-of-00003.gguf" "$tmp/third"
expect_error "a file missing" \
  "mkc: error: $tmp/sp-00001-of-00003.gguf: file 3 of 3 of this split model, $tmp/sp-00003-of-00003.gguf: No such file or directory" \
  -- run -m "$tmp/sp-00001-of-00003.gguf" --prompt-ids 3 -n 1
# another model's third file in its place: its split.no is 2, its split.count 4
"$mkc" init --preset tiny --seed 1 -o "$tmp/tiny.gguf" >/dev/null 2>&1
split "$tmp/tiny.gguf" "$tmp/t4" 6 # 20 tensors: 4 files
cp "$tmp/t4-00003-of-00004.gguf" "$tmp/sp-00003-of-00003.gguf"
expect_error "a file of another split" \
  "mkc: error: $tmp/sp-00003-of-00003.gguf: expected file 3 of 3 of a split model (split.no 2, split.count 3), found split.no 2, split.count 4" \
  -- run -m "$tmp/sp-00001-of-00003.gguf" --prompt-ids 3 -n 1
# a file that repeats a tensor of another
split "$tmp/whole.gguf" "$tmp/dup" 8
cp "$tmp/dup-00002-of-00003.gguf" "$tmp/x" && cp "$tmp/dup-00001-of-00003.gguf" "$tmp/dup-00002-of-00003.gguf"
python3 - "$tmp/dup-00002-of-00003.gguf" <<'PY'
import struct, sys
# make this copy of the first file claim to be the second: split.no's u16 is the entry after its
# key; the metadata is otherwise the first file's (its tensors repeat the first's)
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
key = b"split.no"
at = b.index(struct.pack("<Q", len(key)) + key) + 8 + len(key) + 4
b[at:at + 2] = struct.pack("<H", 1)
open(p, "wb").write(b)
PY
expect_error "a tensor in two files" \
  "mkc: error: $tmp/dup-00001-of-00003.gguf: tensor 'blk.0.attn_k.weight' is in two files of the split model ($tmp/dup-00001-of-00003.gguf and $tmp/dup-00002-of-00003.gguf)" \
  -- run -m "$tmp/dup-00001-of-00003.gguf" --prompt-ids 3 -n 1
mv "$tmp/third" "$tmp/sp-00003-of-00003.gguf"
# split.tensors.count not what the files hold; a split.no out of range
cp "$tmp/sp-00001-of-00003.gguf" "$tmp/keep"
poke_key() { # FILE KEY PACKED-HEX: the value after KEY's name and type, replaced
  python3 - "$@" <<'PY'
import struct, sys
p, key, value = sys.argv[1], sys.argv[2].encode(), bytes.fromhex(sys.argv[3])
b = bytearray(open(p, "rb").read())
at = b.index(struct.pack("<Q", len(key)) + key) + 8 + len(key) + 4
b[at:at + len(value)] = value
open(p, "wb").write(b)
PY
}
poke_key "$tmp/sp-00001-of-00003.gguf" split.tensors.count 16000000 # 22
expect_error "split.tensors.count not the tensors held" \
  "mkc: error: $tmp/sp-00001-of-00003.gguf: split.tensors.count is 22, but the 3 files hold 21 tensors" \
  -- run -m "$tmp/sp-00001-of-00003.gguf" --prompt-ids 3 -n 1
cp "$tmp/keep" "$tmp/sp-00001-of-00003.gguf"
cp "$tmp/sp-00002-of-00003.gguf" "$tmp/keep2"
poke_key "$tmp/sp-00002-of-00003.gguf" split.no 0900 # 9
expect_error "a file's split.no out of place" \
  "mkc: error: $tmp/sp-00002-of-00003.gguf: expected file 2 of 3 of a split model (split.no 1, split.count 3), found split.no 9, split.count 3" \
  -- run -m "$tmp/sp-00001-of-00003.gguf" --prompt-ids 3 -n 1
cp "$tmp/keep2" "$tmp/sp-00002-of-00003.gguf"
# gguf-split --no-tensor-first-split: the first file the metadata alone; the model as whole
split "$tmp/whole.gguf" "$tmp/nt" 8 --no-tensor-first-split
a=$(run "$tmp/nt-00001-of-00004.gguf")
b=$(run "$tmp/whole.gguf")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "a first file of no tensors (gguf-split --no-tensor-first-split): runs as the whole file" \
  || fail "a first file of no tensors" "$a / $b" "$(cat "$tmp/err")"

# mkc quantize of the split model: one file, the tensors and metadata of quantizing the whole
"$mkc" quantize "$tmp/whole.gguf" "$tmp/whole8.gguf" Q8_0 >/dev/null 2>&1
if "$mkc" quantize "$tmp/sp-00001-of-00003.gguf" "$tmp/one8.gguf" Q8_0 >/dev/null 2>"$tmp/err"; then
  cmp -s <(dump "$tmp/one8.gguf") <(dump "$tmp/whole8.gguf") \
    && ok "quantize: the split model's Q8_0 is the whole file's, metadata and tensors, no split keys" \
    || fail "quantize of a split model" "$(diff <(dump "$tmp/one8.gguf") <(dump "$tmp/whole8.gguf") | head -5)"
else
  fail "quantize of a split model" "$(cat "$tmp/err")"
fi
# --keep-split: OUT.gguf's name cut at .gguf, 3 files of the input's tensors each, split keys
if "$mkc" quantize --keep-split "$tmp/sp-00001-of-00003.gguf" "$tmp/ks.gguf" Q8_0 >/dev/null 2>"$tmp/err"; then
  good=1
  for k in 1 2 3; do
    cmp -s <(dump "$tmp/sp-0000$k-of-00003.gguf" | awk '$1 == "tensor" { print $2, $4 }') \
      <(dump "$tmp/ks-0000$k-of-00003.gguf" | awk '$1 == "tensor" { print $2, $4 }') || good=0
    dump "$tmp/ks-0000$k-of-00003.gguf" | grep '^kv split' | tr '\n' ' ' >"$tmp/keys"
    [ "$(cat "$tmp/keys")" = "kv split.no $((k - 1)) kv split.count 3 kv split.tensors.count 21 " ] || good=0
  done
  [ "$good" = 1 ] && ok "--keep-split: 3 files, each the input file's tensors and shapes, split.no, split.count, split.tensors.count" \
    || fail "--keep-split files" "$(cat "$tmp/keys")" "$(ls "$tmp")"
  [ "$(dump "$tmp/ks-00002-of-00003.gguf" | grep -c '^kv')" = 3 ] \
    && ok "--keep-split: the metadata in the first file only" || fail "--keep-split: metadata"
  cmp -s <(for k in 1 2 3; do dump "$tmp/ks-0000$k-of-00003.gguf"; done | grep '^tensor' | sort) \
    <(dump "$tmp/whole8.gguf" | grep '^tensor' | sort) \
    && ok "--keep-split: the tensors the whole file's Q8_0 has, byte for byte" \
    || fail "--keep-split: the tensors"
  a=$(run "$tmp/ks-00001-of-00003.gguf")
  b=$(run "$tmp/whole8.gguf")
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "--keep-split: runs as the whole Q8_0 file: $a" \
    || fail "--keep-split: runs" "$a / $b" "$(cat "$tmp/err")"
else
  fail "quantize --keep-split" "$(cat "$tmp/err")"
fi
# --keep-split of one file: OUT-00001-of-00001.gguf, no split keys, the tensors in the input's
# order (llama-quantize's --keep-split keeps each file's order; without it, by layer)
"$mkc" quantize --keep-split "$tmp/whole.gguf" "$tmp/k1.gguf" Q8_0 >/dev/null 2>&1 \
  && cmp -s <(dump "$tmp/k1-00001-of-00001.gguf" | grep -v '^tensor') <(dump "$tmp/whole8.gguf" | grep -v '^tensor') \
  && cmp -s <(dump "$tmp/k1-00001-of-00001.gguf" | awk '$1 == "tensor" { print $2 }') \
    <(dump "$tmp/whole.gguf" | awk '$1 == "tensor" { print $2 }') \
  && cmp -s <(dump "$tmp/k1-00001-of-00001.gguf" | grep '^tensor' | sort) <(dump "$tmp/whole8.gguf" | grep '^tensor' | sort) \
  && ok "--keep-split of one file: OUT-00001-of-00001.gguf, the whole Q8_0's metadata and tensors, in the input's order" \
  || fail "--keep-split of one file" "$(diff <(dump "$tmp/k1-00001-of-00001.gguf") <(dump "$tmp/whole8.gguf") | head -5)"
# mkc gguf-split: the same files as gguf_split.py, byte for byte (both as llama-gguf-split lays
# them out), with and without --no-tensor-first-split
"$mkc" gguf-split --split-max-tensors 8 "$tmp/whole.gguf" "$tmp/gs" 2>"$tmp/err" \
  && cmp -s "$tmp/gs-00001-of-00003.gguf" "$tmp/sp-00001-of-00003.gguf" \
  && cmp -s "$tmp/gs-00002-of-00003.gguf" "$tmp/sp-00002-of-00003.gguf" \
  && cmp -s "$tmp/gs-00003-of-00003.gguf" "$tmp/sp-00003-of-00003.gguf" \
  && ok "gguf-split --split-max-tensors 8: gguf_split.py's 3 files, byte for byte" \
  || fail "gguf-split --split-max-tensors 8" "$(cat "$tmp/err")"
"$mkc" gguf-split --no-tensor-first-split --split-max-tensors 8 "$tmp/whole.gguf" "$tmp/gn" 2>"$tmp/err" \
  && cmp -s "$tmp/gn-00001-of-00004.gguf" "$tmp/nt-00001-of-00004.gguf" \
  && cmp -s "$tmp/gn-00004-of-00004.gguf" "$tmp/nt-00004-of-00004.gguf" \
  && ok "gguf-split --no-tensor-first-split: gguf_split.py's 4 files" \
  || fail "gguf-split --no-tensor-first-split" "$(cat "$tmp/err")"
# --split-max-size 1M: no file's tensor data past 1,000,000 bytes (each padded to 32); it runs
"$mkc" gguf-split --split-max-size 1M "$tmp/whole.gguf" "$tmp/gm" 2>"$tmp/err"
n=$(ls "$tmp"/gm-*-of-*.gguf 2>/dev/null | wc -l)
big=$(for f in "$tmp"/gm-*.gguf; do python3 -c '
import sys; sys.path.insert(0, "tests"); from gguf_dump import read
print(sum((len(t[3]) + 31) // 32 * 32 for t in read(sys.argv[1])[1]))' "$f"; done | awk '$1 > 1000000' | wc -l)
a=$(run "$tmp/gm-00001-of-0000$n.gguf")
[ "$n" -eq 4 ] && [ "$big" -eq 0 ] && [ "$a" = "$(run "$tmp/whole.gguf")" ] \
  && ok "gguf-split --split-max-size 1M: 4 files, none past 1 MB of tensors, the whole file's tokens" \
  || fail "gguf-split --split-max-size 1M" "$n files, $big too big, $a" "$(cat "$tmp/err")"
"$mkc" gguf-split --dry-run --split-max-size 1M "$tmp/whole.gguf" "$tmp/dry" >"$tmp/out" 2>&1
[ "$(head -1 "$tmp/out")" = "n_split: 4" ] && ! ls "$tmp"/dry-* >/dev/null 2>&1 \
  && ok "gguf-split --dry-run: the plan, no file" || fail "gguf-split --dry-run" "$(cat "$tmp/out")"
# ... each file as llama-gguf-split prints it: its tensors, and its metadata (to the first tensor's
# aligned offset) plus their bytes unpadded, in 10^6 bytes, read off gguf_split.py's files of the
# same plan (8 tensors a file: 0, 1 and 1 M)
"$mkc" gguf-split --dry-run --split-max-tensors 8 "$tmp/whole.gguf" "$tmp/dry" >"$tmp/out" 2>&1
for f in "$tmp"/sp-*.gguf; do python3 -c '
import sys; sys.path.insert(0, "tests"); from gguf_dump import read
ts = read(sys.argv[1])[1]; k = sys.argv[1].rsplit("-", 3)[-3]
print("split %s: n_tensors = %d, total_size = %dM" % (k, len(ts), (ts[0][4] + sum(len(t[3]) for t in ts)) // 10**6))' "$f"; done >"$tmp/want"
tail -n +2 "$tmp/out" | cmp -s - "$tmp/want" && [ "$(wc -l <"$tmp/want")" -eq 3 ] \
  && ok "gguf-split --dry-run: each file's tensors and total size in M, as llama-gguf-split prints them" \
  || fail "gguf-split --dry-run's sizes" "$(cat "$tmp/out")" "want:" "$(cat "$tmp/want")"
# --merge: the whole file's tensors in its order, its metadata, then split.no 0 and
# split.tensors.count 21 as they were and split.count 0 (not a split model again); it runs
"$mkc" gguf-split --merge "$tmp/gs-00001-of-00003.gguf" "$tmp/merged.gguf" 2>"$tmp/err"
cmp -s <(dump "$tmp/merged.gguf" | grep '^tensor') <(dump "$tmp/whole.gguf" | grep '^tensor') \
  && cmp -s <(dump "$tmp/merged.gguf" | grep '^kv' | grep -v '^kv split\.') <(dump "$tmp/whole.gguf" | grep '^kv') \
  && [ "$(dump "$tmp/merged.gguf" | grep '^kv split\.' | tr '\n' ' ')" = "kv split.no 0 kv split.tensors.count 21 kv split.count 0 " ] \
  && [ "$(run "$tmp/merged.gguf")" = "$(run "$tmp/whole.gguf")" ] \
  && ok "gguf-split --merge: the whole file's tensors and metadata, split.count 0; it runs" \
  || fail "gguf-split --merge" "$(dump "$tmp/merged.gguf" | grep '^kv split')" "$(cat "$tmp/err")"
"$mkc" gguf-split --merge --delete-splits "$tmp/gn-00001-of-00004.gguf" "$tmp/merged2.gguf" 2>"$tmp/err" \
  && ! ls "$tmp"/gn-* >/dev/null 2>&1 && cmp -s <(dump "$tmp/merged2.gguf" | grep '^tensor') <(dump "$tmp/whole.gguf" | grep '^tensor') \
  && ok "gguf-split --merge --delete-splits: merged, the 4 files gone" \
  || fail "gguf-split --merge --delete-splits" "$(ls "$tmp" | grep gn)" "$(cat "$tmp/err")"
expect_error "gguf-split --merge of a file that is not split" \
  "mkc: error: $tmp/whole.gguf: not the first file of a split model (no split.count of 1 or more)" \
  -- gguf-split --merge "$tmp/whole.gguf" "$tmp/x.gguf"
expect_error "gguf-split --merge onto a file (here the first input, with --delete-splits)" \
  "mkc: error: gguf-split: $tmp/gs-00001-of-00003.gguf already exists" \
  -- gguf-split --merge --delete-splits "$tmp/gs-00001-of-00003.gguf" "$tmp/gs-00001-of-00003.gguf"
[ -f "$tmp/gs-00002-of-00003.gguf" ] && ok "... and the split files are all still there" \
  || fail "the split files after a refused merge"
# a model of fewer tensors than the limit: one file, split.count 1, which --merge takes
"$mkc" gguf-split "$tmp/whole.gguf" "$tmp/one" 2>/dev/null \
  && "$mkc" gguf-split --merge "$tmp/one-00001-of-00001.gguf" "$tmp/one.gguf" 2>"$tmp/err" \
  && cmp -s <(dump "$tmp/one.gguf" | grep '^tensor') <(dump "$tmp/whole.gguf" | grep '^tensor') \
  && ok "gguf-split of 21 tensors (limit 128): one file; --merge takes it back" \
  || fail "a split of one file" "$(cat "$tmp/err")"
expect_error "gguf-split --split and --merge" "mkc: error: gguf-split: --split or --merge, not both" \
  -- gguf-split --split --merge "$tmp/whole.gguf" "$tmp/x"
expect_error "gguf-split --split-max-size in kilobytes" \
  "mkc: error: gguf-split: --split-max-size: expected N followed by M or G (megabytes or gigabytes), got '500K'" \
  -- gguf-split --split-max-size 500K "$tmp/whole.gguf" "$tmp/x"
finish
