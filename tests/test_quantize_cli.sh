#!/usr/bin/env bash
# mkc quantize IN OUT TYPE: each tensor in the type llama-quantize's mix gives it, checked
# against tests/quant_oracle.py (the rules restated apart from runtime/formats/quant_mix.c), with
# and without an importance matrix (--imatrix: llama-imatrix's files in tests/data, and ones
# written here); the data fitted (not init's covering bytes; test_quantize_fit checks the fit's
# error), weighted where the matrix has an entry; the metadata copied with general.file_type and
# general.quantization_version set, the importance matrix recorded; the file read back and run;
# refusals (types that need an importance matrix, a matrix of another model, requantizing
# without --allow-requantize, bad flags and files).
# Files are read through tests/gguf_dump.py, a parser apart from mkc's.
source "$(dirname "$0")/lib.sh"
dump() { python3 tests/gguf_dump.py "$1"; }
oracle() { python3 tests/quant_oracle.py "$@"; }

# bf16 tiny to Q8_0: every matrix Q8_0 (tiny's output is its token_embd, kept Q8_0), the norms
# as they were; the bytes init --type q8_0 writes from the same weights
"$mkc" init --preset tiny --seed 1 -o "$tmp/tiny.gguf" >/dev/null 2>&1
"$mkc" init --preset tiny --seed 1 --type q8_0 -o "$tmp/tiny_init8.gguf" >/dev/null 2>&1
if "$mkc" quantize "$tmp/tiny.gguf" "$tmp/tiny8.gguf" Q8_0 >"$tmp/out" 2>"$tmp/err"; then
  dump "$tmp/tiny8.gguf" | grep '^tensor' | sort >"$tmp/q"
  dump "$tmp/tiny_init8.gguf" | grep '^tensor' | sort >"$tmp/i"
  cmp -s "$tmp/q" "$tmp/i" && [ "$(wc -l <"$tmp/q")" -eq 20 ] \
    && ok "Q8_0: tiny's 20 tensors, each the bytes init --type q8_0 writes (15 Q8_0, 5 norms BF16)" \
    || fail "Q8_0: the tensors init writes" "$(diff "$tmp/q" "$tmp/i" | head -6)"
  dump "$tmp/tiny.gguf" | grep '^kv' | grep -v 'general.file_type' >"$tmp/kv_in"
  dump "$tmp/tiny8.gguf" | grep '^kv' >"$tmp/kv_out"
  if grep -qx 'kv general.file_type 7' "$tmp/kv_out" && grep -qx 'kv general.quantization_version 2' "$tmp/kv_out" \
    && cmp -s "$tmp/kv_in" <(grep -v 'general.file_type\|general.quantization_version' "$tmp/kv_out"); then
    ok "Q8_0: the metadata as it was, in order, general.file_type 7 and general.quantization_version 2 set"
  else
    fail "Q8_0: the metadata" "$(diff "$tmp/kv_in" "$tmp/kv_out" | head -6)"
  fi
  grep -q '^\[  20/  20\] ' "$tmp/err" && grep -q '^mkc: quantize: wrote .*bits a weight' "$tmp/err" \
    && ok "Q8_0: a progress line a tensor and the sizes" || fail "Q8_0: progress" "$(cat "$tmp/err")"
else
  fail "quantize tiny Q8_0" "$(cat "$tmp/err")"
fi

# types_check NAME FILE ARGS...: FILE's tensor types are the oracle's for ARGS (the file
# quantize read, the type, and the flags the oracle knows)
types_check() {
  local name=$1 file=$2
  shift 2
  dump "$file" | awk '$1 == "tensor" { print $2, $3 }' >"$tmp/types"
  oracle "$@" >"$tmp/want" || { fail "$name: the oracle" "$(cat "$tmp/want")"; return; }
  if cmp -s "$tmp/types" "$tmp/want"; then
    ok "$name: each of $(wc -l <"$tmp/want") tensors in the mix's type, in llama.cpp's order"
  else
    fail "$name: the mix's types" "$(diff "$tmp/types" "$tmp/want" | head -8)"
  fi
}

# blocks-tiny (256 columns, 2 layers, 1 KV head for 4): Q4_K_M's Q6_K layers (the last of 2),
# its output Q6_K; init's file of the same types (its --tensor-type) has the same shapes, and
# other bytes in every matrix (its covering scales, not the fit)
"$mkc" init --preset blocks-tiny --seed 2 -o "$tmp/blocks.gguf" >/dev/null 2>&1
if "$mkc" quantize "$tmp/blocks.gguf" "$tmp/blocks_km.gguf" q4_k_m >"$tmp/out" 2>"$tmp/err"; then
  types_check "Q4_K_M on blocks-tiny" "$tmp/blocks_km.gguf" "$tmp/blocks.gguf" Q4_K_M
  "$mkc" init --preset blocks-tiny --seed 2 --type q4_k --tensor-type blk.1.attn_v.weight=q6_k \
    --tensor-type blk.1.ffn_down.weight=q6_k --tensor-type output.weight=q6_k -o "$tmp/blocks_init.gguf" \
    >/dev/null 2>&1
  dump "$tmp/blocks_km.gguf" | grep '^tensor' | sort >"$tmp/q"
  dump "$tmp/blocks_init.gguf" | grep '^tensor' | sort >"$tmp/i"
  same_shapes=$(cmp -s <(cut -d' ' -f1-4 "$tmp/q") <(cut -d' ' -f1-4 "$tmp/i") && echo 1)
  other=$(paste -d' ' "$tmp/q" "$tmp/i" | awk '$3 != 30 && $5 != $10' | wc -l)
  [ "$same_shapes" = 1 ] && [ "$other" -eq 16 ] \
    && ok "Q4_K_M on blocks-tiny: init's types and shapes; each of the 16 matrices fitted, not init's bytes" \
    || fail "Q4_K_M on blocks-tiny: the bytes" "same shapes: $same_shapes, matrices unlike init's: $other" \
      "$(paste -d' ' "$tmp/q" "$tmp/i" | head -4)"
  a=$("$mkc" run -m "$tmp/blocks_km.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend cpu 2>"$tmp/err_a")
  b=$("$mkc" run -m "$tmp/blocks_km.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend ref 2>"$tmp/err_b")
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "Q4_K_M on blocks-tiny: runs, the reference's tokens ($a)" \
    || fail "Q4_K_M on blocks-tiny: runs" "$a / $b" "$(tail -n 2 "$tmp/err_a")"
else
  fail "quantize blocks-tiny Q4_K_M" "$(cat "$tmp/err")"
fi
for t in Q3_K_M Q4_K_S Q5_K_M Q2_K IQ4_XS; do
  if "$mkc" quantize --dry-run "$tmp/blocks.gguf" "$tmp/dry.gguf" "$t" >/dev/null 2>"$tmp/err" \
    && "$mkc" quantize "$tmp/blocks.gguf" "$tmp/blocks_t.gguf" "$t" >/dev/null 2>&1; then
    types_check "$t on blocks-tiny" "$tmp/blocks_t.gguf" "$tmp/blocks.gguf" "$t"
  else
    fail "quantize blocks-tiny $t" "$(cat "$tmp/err")"
  fi
done
# the ternary, 1- and 2-bit mixes (token_embd Q4_K, output Q6_K; the matrices ggml's own bytes,
# test_quantize_fit): each runs on the cpu backend as on the reference
for t in TQ1_0 TQ2_0 Q1_0 Q2_0; do
  if "$mkc" quantize "$tmp/blocks.gguf" "$tmp/blocks_t.gguf" "$t" >/dev/null 2>"$tmp/err"; then
    types_check "$t on blocks-tiny" "$tmp/blocks_t.gguf" "$tmp/blocks.gguf" "$t"
    a=$("$mkc" run -m "$tmp/blocks_t.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend cpu 2>"$tmp/err_a")
    b=$("$mkc" run -m "$tmp/blocks_t.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend ref 2>/dev/null)
    [ -n "$a" ] && [ "$a" = "$b" ] && ok "$t on blocks-tiny: runs, the reference's tokens ($a)" \
      || fail "$t on blocks-tiny: runs" "$a / $b" "$(tail -n 2 "$tmp/err_a")"
  else
    fail "quantize blocks-tiny $t" "$(cat "$tmp/err")"
  fi
done
# tiny's 64 and 192 columns: TQ1_0 falls back to Q4_0 as llama.cpp's; Q1_0 (128) has no fallback
if "$mkc" quantize "$tmp/tiny.gguf" "$tmp/tiny_tq.gguf" TQ1_0 >/dev/null 2>"$tmp/err"; then
  types_check "TQ1_0 on tiny (Q4_0 where rows are not whole 256s)" "$tmp/tiny_tq.gguf" "$tmp/tiny.gguf" TQ1_0
else
  fail "quantize tiny TQ1_0" "$(cat "$tmp/err")"
fi
expect_error "Q1_0 on rows of 64" \
  "mkc: error: quantize: blk.0.attn_k.weight: its 64 columns are not whole blocks of Q1_0, and llama.cpp's quantize has no type to fall back to" \
  -- quantize "$tmp/tiny.gguf" "$tmp/x.gguf" Q1_0
# MXFP4_MOE: the experts (3 dimensions) MXFP4, every other matrix Q8_0
"$mkc" init --preset moe-tiny --seed 3 -o "$tmp/moe.gguf" >/dev/null 2>&1
if "$mkc" quantize "$tmp/moe.gguf" "$tmp/moe_mx.gguf" MXFP4_MOE >/dev/null 2>"$tmp/err"; then
  types_check "MXFP4_MOE on moe-tiny" "$tmp/moe_mx.gguf" "$tmp/moe.gguf" MXFP4_MOE
  grep -c ' 39$' "$tmp/types" | grep -qx '[1-9][0-9]*' && ok "MXFP4_MOE: some tensors MXFP4" \
    || fail "MXFP4_MOE: no MXFP4 tensor" "$(cat "$tmp/types")"
else
  fail "quantize moe-tiny MXFP4_MOE" "$(cat "$tmp/err")"
fi
# --prune-layers 0 of blocks-tiny's 2: blk.1's tensors as blk.0's (the bytes quantizing the whole
# gives blk.1), block_count 1, the rest as they were; it runs, the reference's tokens
"$mkc" quantize "$tmp/blocks.gguf" "$tmp/b8.gguf" Q8_0 >/dev/null 2>&1
if "$mkc" quantize --prune-layers 0 "$tmp/blocks.gguf" "$tmp/pruned.gguf" Q8_0 >/dev/null 2>"$tmp/err"; then
  want=$(dump "$tmp/b8.gguf" | awk '$1 == "tensor" && $2 !~ /^blk\.0\./ { sub(/^blk\.1\./, "blk.0.", $2); print }' | sort)
  got=$(dump "$tmp/pruned.gguf" | grep '^tensor' | sort)
  [ "$got" = "$want" ] && dump "$tmp/pruned.gguf" | grep -qx 'kv llama.block_count 1' \
    && ok "--prune-layers 0: blk.1 as blk.0, byte for byte, block_count 1" \
    || fail "--prune-layers 0" "$(diff <(echo "$got") <(echo "$want") | head -4)"
  a=$("$mkc" run -m "$tmp/pruned.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend cpu 2>/dev/null)
  b=$("$mkc" run -m "$tmp/pruned.gguf" --prompt-ids 3,1,4,1,5 -n 8 --backend ref 2>/dev/null)
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "--prune-layers 0: one layer runs, the reference's tokens ($a)" \
    || fail "--prune-layers 0: runs" "$a / $b"
else
  fail "quantize --prune-layers 0" "$(cat "$tmp/err")"
fi
# --prune-layers 1,3 of 5 layers (COPY: the bytes as they were): blk.2 as blk.1, blk.4 as blk.2 (a
# shift of 2), block_count 3; with --keep-split on the model cut in 3 files, the same tensors
cat graphs/llama.lua tests/data/test_presets.lua >"$tmp/deep.lua"
"$mkc" init "$tmp/deep.lua" --preset deep --seed 4 -o "$tmp/deep.gguf" >/dev/null 2>&1
if "$mkc" quantize --prune-layers 3,1 "$tmp/deep.gguf" "$tmp/deep_p.gguf" COPY >/dev/null 2>"$tmp/err"; then
  want=$(dump "$tmp/deep.gguf" | awk '$1 == "tensor" && $2 !~ /^blk\.[13]\./ {
    if ($2 ~ /^blk\.2\./) sub(/^blk\.2\./, "blk.1.", $2); else if ($2 ~ /^blk\.4\./) sub(/^blk\.4\./, "blk.2.", $2); print }' | sort)
  got=$(dump "$tmp/deep_p.gguf" | grep '^tensor' | sort)
  [ "$got" = "$want" ] && dump "$tmp/deep_p.gguf" | grep -qx 'kv llama.block_count 3' \
    && ok "--prune-layers 3,1 of 5: blk.2 as blk.1 and blk.4 as blk.2, byte for byte, block_count 3" \
    || fail "--prune-layers 3,1" "$(diff <(echo "$got") <(echo "$want") | head -4)"
  python3 tests/gguf_split.py "$tmp/deep.gguf" "$tmp/dsp" 20 # 48 tensors: 20, 20, 8
  "$mkc" quantize --keep-split --prune-layers 1,3 "$tmp/dsp-00001-of-00003.gguf" "$tmp/dks" COPY >/dev/null 2>&1
  cmp -s <(for k in 1 2 3; do dump "$tmp/dks-0000$k-of-00003.gguf"; done | grep '^tensor' | sort) <(echo "$got") \
    && ok "--prune-layers with --keep-split: the same tensors over the 3 files" \
    || fail "--prune-layers with --keep-split" "$(ls "$tmp" | grep dks)"
else
  fail "quantize --prune-layers 3,1" "$(cat "$tmp/err")"
fi
# --prune-layers with --imatrix: the matrix's entries by the names before (blk.1's for the new
# blk.0); --pure Q4_K, so each matrix's type is the same pruned or not
im=tests/data/imatrix_blocks_tiny.gguf
"$mkc" quantize --pure --imatrix "$im" "$tmp/blocks.gguf" "$tmp/bi.gguf" Q4_K_M >/dev/null 2>&1
"$mkc" quantize --pure "$tmp/blocks.gguf" "$tmp/bn.gguf" Q4_K_M >/dev/null 2>&1
"$mkc" quantize --pure --imatrix "$im" --prune-layers 0 "$tmp/blocks.gguf" "$tmp/bip.gguf" Q4_K_M >/dev/null 2>&1
want=$(dump "$tmp/bi.gguf" | awk '$1 == "tensor" && $2 ~ /^blk\.1\./ { sub(/^blk\.1\./, "blk.0.", $2); print }' | sort)
unweighted=$(dump "$tmp/bn.gguf" | awk '$1 == "tensor" && $2 ~ /^blk\.1\.attn_q/ { print $5 }')
[ -n "$want" ] && [ "$(dump "$tmp/bip.gguf" | grep '^tensor blk\.0\.' | sort)" = "$want" ] \
  && [ "$unweighted" != "$(dump "$tmp/bi.gguf" | awk '$2 ~ /^blk\.1\.attn_q/ { print $5 }')" ] \
  && ok "--prune-layers 0 with --imatrix: the new blk.0 weighted by the old blk.1's entries (the bytes of the unpruned blk.1)" \
  || fail "--prune-layers with --imatrix"
expect_error "--prune-layers past the last layer" \
  "mkc: error: quantize: --prune-layers: layer 2: the model has 2 (0 to 1)" \
  -- quantize --prune-layers 1,2 "$tmp/blocks.gguf" "$tmp/x.gguf" Q8_0
expect_error "--prune-layers of every layer" \
  "mkc: error: quantize: --prune-layers: every one of the 2 layers" \
  -- quantize --prune-layers 1,0,1 "$tmp/blocks.gguf" "$tmp/x.gguf" Q8_0
expect_error "--prune-layers with a word" \
  "mkc: error: quantize: --prune-layers: expected layer numbers 0, 1, ... separated by commas, got '1,x'" \
  -- quantize --prune-layers 1,x "$tmp/blocks.gguf" "$tmp/x.gguf" Q8_0
# --max-buffer-size 1 (MiB): ffn_gate's 768 rows and ffn_down's 256 read and encoded in two slabs
# each; the same bytes as at once
"$mkc" quantize --max-buffer-size 1 "$tmp/blocks.gguf" "$tmp/slabs.gguf" Q4_K_M >/dev/null 2>&1 \
  && "$mkc" quantize "$tmp/blocks.gguf" "$tmp/at_once.gguf" Q4_K_M >/dev/null 2>&1 \
  && cmp -s "$tmp/slabs.gguf" "$tmp/at_once.gguf" \
  && ok "--max-buffer-size 1: in slabs of rows, the same file byte for byte" \
  || fail "--max-buffer-size 1: the same file"
expect_error "--max-buffer-size 0" \
  "mkc: error: quantize: --max-buffer-size: expected MiB, 1 or more, got '0'" \
  -- quantize --max-buffer-size 0 "$tmp/blocks.gguf" "$tmp/x.gguf" Q8_0
# a tensor of no rows (ne[1] 0, patched in): written as it is, no division by its rows
python3 - "$tmp/blocks.gguf" "$tmp/zero.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"blk.0.attn_k.weight"
at = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name) + 4  # ne[0], then ne[1]
b[at + 8:at + 16] = struct.pack("<Q", 0)
open(sys.argv[2], "wb").write(b)
PY
"$mkc" quantize "$tmp/zero.gguf" "$tmp/zero8.gguf" Q8_0 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -le 1 ] && { [ "$rc" -eq 1 ] || dump "$tmp/zero8.gguf" | grep -q '^tensor blk.0.attn_k.weight .* 256,0 '; } \
  && ok "a tensor of no rows: no crash (status $rc)" || fail "a tensor of no rows" "status $rc" "$(cat "$tmp/err")"
# COPY: every tensor as it was; general.file_type llama.cpp's guess (BF16's 32, + 1024: guessed)
if "$mkc" quantize "$tmp/blocks.gguf" "$tmp/copy.gguf" COPY >/dev/null 2>"$tmp/err"; then
  cmp -s <(dump "$tmp/copy.gguf" | grep '^tensor' | sort) <(dump "$tmp/blocks.gguf" | grep '^tensor' | sort) \
    && dump "$tmp/copy.gguf" | grep -qx 'kv general.file_type 1056' \
    && ok "COPY: every tensor as it was, general.file_type 1056 (BF16, guessed)" \
    || fail "COPY" "$(dump "$tmp/copy.gguf" | grep file_type)"
else
  fail "quantize COPY" "$(cat "$tmp/err")"
fi
# IN TYPE: OUT is IN's folder's ggml-model-TYPE.gguf; TYPE by llama.cpp's number (7: Q8_0)
mkdir -p "$tmp/in" && cp "$tmp/blocks.gguf" "$tmp/in/m.gguf"
"$mkc" quantize "$tmp/in/m.gguf" 7 2 >/dev/null 2>"$tmp/err" \
  && cmp -s <(dump "$tmp/in/ggml-model-Q8_0.gguf") <(dump "$tmp/b8.gguf") \
  && ok "IN 7 2: IN's folder's ggml-model-Q8_0.gguf, Q8_0's file (7 is Q8_0's number; 2 threads)" \
  || fail "IN TYPE" "$(cat "$tmp/err")" "$(ls "$tmp/in")"
[ ! -e "$tmp/dry.gguf" ] && ok "--dry-run writes no file" || fail "--dry-run wrote $tmp/dry.gguf"
# --pure, --output-tensor-type, --token-embedding-type, --tensor-type, --leave-output-tensor
flags=(--pure --token-embedding-type q8_0 --tensor-type 'attn_(q|k)\.=q5_k' --output-tensor-type f16)
if "$mkc" quantize "${flags[@]}" "$tmp/blocks.gguf" "$tmp/blocks_f.gguf" Q4_K_M >/dev/null 2>"$tmp/err"; then
  types_check "--pure and the type flags" "$tmp/blocks_f.gguf" "$tmp/blocks.gguf" Q4_K_M "${flags[@]}"
else
  fail "quantize with flags" "$(cat "$tmp/err")"
fi
# --tensor-type-file: the same items as --tensor-type, spaces and newlines between; --override-kv
printf 'attn_q=q8_0 ffn_up=q5_0\n\n  attn_output=q6_k\n' >"$tmp/tt.txt"
if "$mkc" quantize --tensor-type-file "$tmp/tt.txt" --override-kv general.name=str:renamed \
  "$tmp/blocks.gguf" "$tmp/blocks_tt.gguf" Q4_K_M >/dev/null 2>"$tmp/err"; then
  types_check "--tensor-type-file" "$tmp/blocks_tt.gguf" "$tmp/blocks.gguf" Q4_K_M \
    --tensor-type attn_q=q8_0 --tensor-type ffn_up=q5_0 --tensor-type attn_output=q6_k
  dump "$tmp/blocks_tt.gguf" | grep -x 'kv general.name renamed' >/dev/null \
    && ok "--override-kv general.name=str:renamed: in the output" \
    || fail "--override-kv" "$(dump "$tmp/blocks_tt.gguf" | grep general.name)"
else
  fail "--tensor-type-file" "$(cat "$tmp/err")"
fi
"$mkc" quantize --leave-output-tensor "$tmp/blocks.gguf" "$tmp/blocks_l.gguf" Q4_K_M >/dev/null 2>&1 \
  && types_check "--leave-output-tensor" "$tmp/blocks_l.gguf" "$tmp/blocks.gguf" Q4_K_M --leave-output-tensor \
  || fail "--leave-output-tensor"

# --imatrix: llama-imatrix's files for blocks-tiny (tools/quant_ggml_fixture.sh), GGUF and .dat.
# Q4_K_M weighted: the oracle's types; the 14 matrices with an entry other bytes than unweighted,
# token_embd and output (no entry) the same bytes, said so; both formats the same bytes; the
# metadata llama-quantize records
im=tests/data/imatrix_blocks_tiny
"$mkc" quantize --imatrix "$im.gguf" "$tmp/blocks.gguf" "$tmp/blocks_im.gguf" q4_k_m >/dev/null 2>"$tmp/err_g"
"$mkc" quantize --imatrix "$im.dat" "$tmp/blocks.gguf" "$tmp/blocks_id.gguf" q4_k_m >/dev/null 2>"$tmp/err_d"
if [ -s "$tmp/blocks_im.gguf" ] && [ -s "$tmp/blocks_id.gguf" ]; then
  types_check "Q4_K_M with --imatrix" "$tmp/blocks_im.gguf" "$tmp/blocks.gguf" Q4_K_M --imatrix
  dump "$tmp/blocks_im.gguf" | grep '^tensor' | sort >"$tmp/w"
  other=$(paste -d' ' "$tmp/w" "$tmp/q" | awk '$2 ~ /^blk/ && $3 != 30 && $5 != $10' | wc -l)
  same=$(paste -d' ' "$tmp/w" "$tmp/q" | awk '$2 !~ /^blk/ && $5 == $10' | wc -l)
  [ "$other" -eq 14 ] && [ "$same" -eq 3 ] \
    && grep -q '^mkc: quantize: output.weight: no importance matrix entry; unweighted$' "$tmp/err_g" \
    && ok "--imatrix: the 14 matrices with an entry weighted; output, token_embd (said) and the norm as unweighted" \
    || fail "--imatrix: weighted matrices" "other: $other, same: $same" "$(head -n 4 "$tmp/err_g")"
  cmp -s <(dump "$tmp/blocks_im.gguf" | grep '^tensor') <(dump "$tmp/blocks_id.gguf" | grep '^tensor') \
    && ok "--imatrix: the GGUF and the .dat, the same bytes" || fail "--imatrix: the two formats' bytes"
  dump "$tmp/blocks_im.gguf" | grep '^kv quantize.imatrix' >"$tmp/kv"
  printf '%s\n' "kv quantize.imatrix.file $im.gguf" "kv quantize.imatrix.dataset tests/data/imatrix_text.txt" \
    "kv quantize.imatrix.entries_count 14" "kv quantize.imatrix.chunks_count 4" >"$tmp/kv_want"
  cmp -s "$tmp/kv" "$tmp/kv_want" && ok "--imatrix: file, dataset, entries and chunks in the metadata" \
    || fail "--imatrix: the metadata" "$(diff "$tmp/kv" "$tmp/kv_want")"
  grep -q "^mkc: quantize: $im.gguf: 14 importance matrix entries (14 kept) from tests/data/imatrix_text.txt, 4 chunks$" "$tmp/err_g" \
    && ok "--imatrix: what it read is said" || fail "--imatrix: what it read" "$(head -n 2 "$tmp/err_g")"
else
  fail "quantize --imatrix" "$(tail -n 3 "$tmp/err_g")" "$(tail -n 3 "$tmp/err_d")"
fi
# the mixes an importance matrix changes or allows, on 8 layers of 256 columns (the first
# eighth's rules) with an importance matrix written here in the .dat format (its entries' means
# 1 + column / 256); Q4_0 and IQ4_XS also without one
cat graphs/llama.lua tests/graphs/mix8_preset.lua >"$tmp/mix.lua"
"$mkc" init "$tmp/mix.lua" --preset mix8 --seed 3 -o "$tmp/mix8.gguf" >/dev/null 2>&1
python3 - "$tmp/mix8.dat" <<'PY'
import struct, sys
names = [f"blk.{l}.{m}.weight" for l in range(8)
         for m in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<i", len(names)))
    for n in names:
        f.write(struct.pack("<i", len(n)) + n.encode() + struct.pack("<ii", 1, 256))
        f.write(struct.pack("<256f", *[1 + c / 256 for c in range(256)]))
PY
for t in IQ2_XXS IQ2_M IQ1_S IQ3_XXS IQ3_XS Q2_K_S Q4_0 IQ4_XS; do
  if "$mkc" quantize --imatrix "$tmp/mix8.dat" "$tmp/mix8.gguf" "$tmp/mix8_q.gguf" "$t" >/dev/null 2>"$tmp/err"; then
    types_check "$t with --imatrix, 8 layers" "$tmp/mix8_q.gguf" "$tmp/mix8.gguf" "$t" --imatrix
  else
    fail "quantize 8 layers $t --imatrix" "$(tail -n 2 "$tmp/err")"
  fi
done
for t in Q4_0 IQ4_XS; do
  "$mkc" quantize "$tmp/mix8.gguf" "$tmp/mix8_q.gguf" "$t" >/dev/null 2>&1 \
    && types_check "$t without, 8 layers" "$tmp/mix8_q.gguf" "$tmp/mix8.gguf" "$t" \
    || fail "quantize 8 layers $t"
done

# experts: an entry of columns by experts gives each expert its own part. Expert 1 of
# blk.0.ffn_gate_exps weighted unevenly, the others by 1s: only expert 1's bytes move off the
# unweighted file's
"$mkc" init --preset mixtral-tiny --seed 1 -o "$tmp/moe.gguf" >/dev/null 2>&1
python3 - "$tmp/moe.dat" <<'PY'
import struct, sys
v = [1.0] * 64 + [1000.0 if c % 5 == 0 else 0.001 for c in range(64)] + [1.0] * 128
n = b"blk.0.ffn_gate_exps.weight"
open(sys.argv[1], "wb").write(struct.pack("<ii", 1, len(n)) + n + struct.pack("<ii", 1, 256)
                              + struct.pack("<256f", *v))
PY
"$mkc" quantize --imatrix "$tmp/moe.dat" "$tmp/moe.gguf" "$tmp/moe_w.gguf" Q4_0 >/dev/null 2>&1
"$mkc" quantize "$tmp/moe.gguf" "$tmp/moe_u.gguf" Q4_0 >/dev/null 2>&1
same=$(python3 - "$tmp/moe_w.gguf" "$tmp/moe_u.gguf" <<'PY'
import sys
sys.path.insert(0, "tests")
from gguf_dump import read
a, b = ({t[0]: t[3] for t in read(p)[1]} for p in sys.argv[1:])
name = "blk.0.ffn_gate_exps.weight"
per = len(a[name]) // 4
print(" ".join(str(a[name][i * per:(i + 1) * per] == b[name][i * per:(i + 1) * per]) for i in range(4)))
PY
)
[ "$same" = "True False True True" ] && ok "--imatrix with experts: each expert its own part of the entry" \
  || fail "--imatrix with experts" "experts like the unweighted file's: $same"

# SmolLM2 (test data, Q4_1): 30 layers of 576 columns, a tied output: requantized to Q4_K_M,
# most matrices fall back (Q4_K to Q5_0, Q6_K to Q8_0) and ffn_down (1536 columns) keeps Q4_K
# and Q6_K; it answers as a model
model=${MKC_TEST_DATA:-}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -n "${MKC_TEST_DATA:-}" ] && [ -f "$model" ]; then
  expect_error "requantizing without --allow-requantize" \
    "mkc: error: quantize: blk.0.attn_k.weight is Q4_1 already: quantizing it again adds error (--allow-requantize does it all the same)" \
    -- quantize "$model" "$tmp/smol.gguf" Q4_K_M
  if "$mkc" quantize --allow-requantize "$model" "$tmp/smol.gguf" Q4_K_M 2 >/dev/null 2>"$tmp/err"; then
    types_check "SmolLM2 Q4_1 -> Q4_K_M" "$tmp/smol.gguf" "$model" Q4_K_M
    grep -q '^mkc: quantize: blk.0.attn_v.weight: 576 columns are not whole blocks of Q6_K; Q8_0 instead$' "$tmp/err" \
      && ok "SmolLM2: a fallback is said" || fail "SmolLM2: the fallback line" "$(head -n 5 "$tmp/err")"
    out=$("$mkc" run -m "$tmp/smol.gguf" -p "The capital of France is" -n 4 --backend cpu 2>"$tmp/err")
    [[ $out == *Paris* ]] && ok "SmolLM2 Q4_K_M: 'The capital of France is' ->$out" \
      || fail "SmolLM2 Q4_K_M answers" "$out" "$(tail -n 2 "$tmp/err")"
  else
    fail "quantize SmolLM2" "$(tail -n 3 "$tmp/err")"
  fi
else
  skip "SmolLM2 requantized: no test data"
fi

# refusals
ftypes="Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q2_K_S, Q3_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K, Q4_K_S, Q4_K_M, Q5_K, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, IQ3_S, IQ3_M, IQ3_XS, IQ3_XXS, IQ2_M, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_M, IQ1_S, TQ1_0, TQ2_0, Q1_0, Q2_0, MXFP4_MOE, F16, BF16, F32, COPY"
types="F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0"
expect_error "a type llama-quantize does not make" \
  "mkc: error: quantize: 'Q7_K' is not a type llama-quantize makes ($ftypes)" -- quantize "$tmp/tiny.gguf" "$tmp/x.gguf" Q7_K
expect_error "a mix that needs an importance matrix" \
  "mkc: error: quantize: IQ2_XS needs an importance matrix: --imatrix FILE (llama-imatrix writes one)" \
  -- quantize "$tmp/blocks.gguf" "$tmp/x.gguf" IQ2_XS
expect_error "a matrix given a type that needs one" \
  "mkc: error: quantize: blk.0.attn_q.weight in IQ2_XXS, a very low-bit type, needs an importance matrix, and no --imatrix was given" \
  -- quantize --tensor-type 'attn_q=iq2_xxs' "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "a matrix the importance matrix leaves out" \
  "mkc: error: quantize: blk.0.attn_q.weight in IQ2_XXS, a very low-bit type, needs an importance matrix, and the --imatrix file has no entry for it" \
  -- quantize --imatrix "$im.gguf" --exclude-weights attn_q "$tmp/blocks.gguf" "$tmp/x.gguf" IQ2_XXS
expect_error "another model's importance matrix" \
  "mkc: error: quantize: blk.0.attn_k.weight: the importance matrix has 256 values, and the tensor 64 columns (by experts): the matrix is another model's" \
  -- quantize --imatrix "$im.dat" "$tmp/tiny.gguf" "$tmp/x.gguf" Q4_0
printf 'not an imatrix' >"$tmp/bad.dat"
expect_error "not an importance matrix" \
  "mkc: error: $tmp/bad.dat: not an importance matrix (neither GGUF nor llama-imatrix's .dat): 544501614 entries cannot fit in 14 bytes" \
  -- quantize --imatrix "$tmp/bad.dat" "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--include-weights with --exclude-weights" \
  "mkc: error: quantize: --include-weights and --exclude-weights cannot be used together" \
  -- quantize --imatrix "$im.dat" --include-weights ffn --exclude-weights attn "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--include-weights without --imatrix" \
  "mkc: error: quantize: --include-weights: without --imatrix there are no entries to choose from" \
  -- quantize --include-weights ffn "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--tensor-type without a type" \
  "mkc: error: quantize: --tensor-type: expected PATTERN=TYPE, got 'attn_q'" \
  -- quantize --tensor-type attn_q "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--tensor-type, not a type" \
  "mkc: error: quantize: --tensor-type: 'q9' is not a tensor type ($types)" \
  -- quantize --tensor-type attn_q=q9 "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--tensor-type, not a regular expression" \
  "mkc: error: quantize: --tensor-type: 'attn_(q' is not a regular expression" \
  -- quantize --tensor-type 'attn_(q=q8_0' "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "a flag's type that the rows do not fit" \
  "mkc: error: quantize: token_embd.weight: its 64 columns are not whole blocks of Q4_K, the type a flag gives it" \
  -- quantize --token-embedding-type q4_k "$tmp/tiny.gguf" "$tmp/x.gguf" Q8_0
printf 'attn_q=q8_0 attn_k\n' >"$tmp/tt_bad.txt"
expect_error "--tensor-type-file, an item without a type" \
  "mkc: error: quantize: --tensor-type-file: expected PATTERN=TYPE, got 'attn_k'" \
  -- quantize --tensor-type-file "$tmp/tt_bad.txt" "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--tensor-type-file, no such file" \
  "mkc: error: $tmp/none.txt: --tensor-type-file: No such file or directory" \
  -- quantize --tensor-type-file "$tmp/none.txt" "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "--override-kv without a type" \
  "mkc: error: --override-kv: general.name: expected the type int:, float:, bool: or str:, got 'renamed'" \
  -- quantize --override-kv general.name=renamed "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M
expect_error "THREADS out of range" "mkc: error: quantize: THREADS: expected 1 to 32, got '0'" \
  -- quantize "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M 0
expect_error "IN alone" "mkc: error: quantize: IN.gguf and TYPE are required" \
  -- quantize "$tmp/blocks.gguf"
expect_error "IN and OUT, no TYPE" "mkc: error: quantize: IN.gguf, OUT.gguf and TYPE are required" \
  -- quantize "$tmp/blocks.gguf" "$tmp/x.gguf"
expect_error "one argument too many" "mkc: error: quantize: one argument too many: '3' (IN [OUT] TYPE [THREADS])" \
  -- quantize "$tmp/blocks.gguf" "$tmp/x.gguf" Q4_K_M 2 3
printf 'not a gguf file at all' >"$tmp/bad.gguf"
expect_error "not a GGUF file" \
  "mkc: error: $tmp/bad.gguf: not a GGUF file: magic 6e 6f 74 20, expected 47 47 55 46 (\"GGUF\")" -- quantize "$tmp/bad.gguf" "$tmp/x.gguf" Q4_K_M
[ ! -e "$tmp/x.gguf" ] && ok "no refusal leaves a file" || fail "a refusal left $tmp/x.gguf"
"$mkc" quantize --help >"$tmp/help" 2>&1 && grep -q '^usage: mkc quantize ' "$tmp/help" \
  && ok "--help" || fail "--help" "$(head -n 3 "$tmp/help")"

finish
