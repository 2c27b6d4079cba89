#!/usr/bin/env bash
# Writes the fixtures of ggml's own quantizers and importance matrices that test_quantize_fit
# reads: tests/data/quant_ggml.bin (tools/quant_ggml_fixture.c: random rows in each type, as
# ggml_quantize_chunk encodes them, without and with an importance matrix) and
# tests/data/imatrix_blocks_tiny.gguf and .dat (llama-imatrix, both formats, on `mkc init
# --preset blocks-tiny --seed 2 --type f32` with tools/gguf_add_vocab.py's stand-in vocabulary,
# over tests/data/imatrix_text.txt), and tests/data/imatrix_llamacpp.gguf with standin_vocab.gguf (the
# same vocabulary alone): llama-imatrix on a llama of 64 columns whose RoPE llama.cpp reads as mkc
# does (interleaved; blocks-tiny's is NeoX), over imatrix_text.txt, which test_imatrix_cli.sh
# checks `mkc imatrix` against, and tests/data/imatrix_phi3_llamacpp.gguf of that model with NeoX
# RoPE written as a phi3 file (fused attn_qkv and ffn_up), tests/data/imatrix_moe_llamacpp.gguf
# of moe-tiny (experts), and tests/data/imatrix_combined_llamacpp.gguf and .dat (--in-file), with
# what llama-imatrix printed: tests/data/imatrix_ppl_llamacpp.txt (the im-tiny run's perplexity
# estimates) and tests/data/imatrix_stats_llamacpp.txt (its --show-statistics reports). Its matrices are F32 (with BF16 ones llama.cpp's CPU rounds the
# activations to BF16), its cache F32 and its flash attention off (on, the CPU's softmax leaves
# 1e-3 of difference in the sums; off, 1.3e-6). llama.cpp is the one llama-cpp-python 0.3.36 vendors, built here on
# the CPU by tools/gemma_llamacpp_fixture.sh (WORK: that folder, to reuse the build):
#   pip install gguf   # tools/gguf_add_vocab.py
#   bash tools/quant_ggml_fixture.sh
set -eu
cd "$(dirname "$0")/.."
work=${WORK:-$(mktemp -d)}
# the download, the checksum and the static build, as tools/embed_llamacpp_fixture.sh gets them
[ -f "$work/llama.cpp/build/ggml/src/libggml-base.a" ] ||
  WORK=$work bash tools/gemma_llamacpp_fixture.sh gemma3-tiny >/dev/null
l=$work/llama.cpp
cmake --build "$l/build" --target llama-imatrix -j"$(nproc)" >&2
g++ -O1 -x c tools/quant_ggml_fixture.c -x none -I"$l/ggml/include" \
  "$l/build/ggml/src/libggml-base.a" -lgomp -lpthread -lm -o "$work/quant_ggml_fixture"
"$work/quant_ggml_fixture" tests/data/quant_ggml.bin
build/mkc init --preset blocks-tiny --seed 2 --type f32 -o "$work/bt.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/bt.gguf" "$work/bt-vocab.gguf"
for format in gguf dat; do
  "$l/build/bin/llama-imatrix" -m "$work/bt-vocab.gguf" -f tests/data/imatrix_text.txt -c 64 --chunks 4 -t 2 \
    --output-format $format -o tests/data/imatrix_blocks_tiny.$format >&2
done
python3 tools/gguf_add_vocab.py --vocab-only 300 tests/data/standin_vocab.gguf
cat graphs/llama.lua tests/graphs/im_tiny_preset.lua >"$work/im.lua"
build/mkc init "$work/im.lua" --preset im-tiny --seed 2 --type f32 \
  --vocab tests/data/standin_vocab.gguf -o "$work/imt.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/imt.gguf" "$work/imt-vocab.gguf"
# (its perplexity estimates, on stdout, to tests/data/imatrix_ppl_llamacpp.txt; its logger thread
# has been seen to lose the last lines at exit, hence the check)
"$l/build/bin/llama-imatrix" -m "$work/imt-vocab.gguf" -f tests/data/imatrix_text.txt -c 64 \
  --chunks 4 -t 2 -ctk f32 -ctv f32 -fa off -o tests/data/imatrix_llamacpp.gguf 2>/dev/null |
  grep -E '^\[1\]|^Final estimate' >tests/data/imatrix_ppl_llamacpp.txt
grep -q '^\[1\].*\[4\]' tests/data/imatrix_ppl_llamacpp.txt && grep -q '^Final estimate' tests/data/imatrix_ppl_llamacpp.txt
# phi3's fused matrices: the same model with NeoX RoPE, as a phi3 file (attn_qkv, ffn_up)
cat graphs/llama.lua tests/graphs/im_neox_preset.lua >"$work/imn.lua"
build/mkc init "$work/imn.lua" --preset im-neox --seed 2 --type f32 --arch phi3 \
  --vocab tests/data/standin_vocab.gguf -o "$work/phi3.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/phi3.gguf" "$work/phi3-vocab.gguf"
"$l/build/bin/llama-imatrix" -m "$work/phi3-vocab.gguf" -f tests/data/imatrix_text.txt -c 64 \
  --chunks 2 -t 2 -ctk f32 -ctv f32 -fa off -o tests/data/imatrix_phi3_llamacpp.gguf >&2
# --in-file: the GGUF and the .dat of blocks-tiny combined, in both formats (no model is read, but
# llama-imatrix asks for one)
for format in gguf dat; do
  "$l/build/bin/llama-imatrix" -m "$work/bt-vocab.gguf" --in-file tests/data/imatrix_blocks_tiny.gguf \
    --in-file tests/data/imatrix_blocks_tiny.dat -c 64 --output-format $format \
    -o tests/data/imatrix_combined_llamacpp.$format >&2
done
# experts: moe-tiny (qwen3moe: 8 experts, 3 an input), each expert a slice of the _exps entries
build/mkc init --preset moe-tiny --seed 2 --type f32 --vocab tests/data/standin_vocab.gguf \
  -o "$work/moe.gguf" >&2
python3 tools/gguf_add_vocab.py "$work/moe.gguf" "$work/moe-vocab.gguf"
"$l/build/bin/llama-imatrix" -m "$work/moe-vocab.gguf" -f tests/data/imatrix_text.txt -c 64 \
  --chunks 4 -t 2 -ctk f32 -ctv f32 -fa off -o tests/data/imatrix_moe_llamacpp.gguf >&2
# llama-imatrix's --show-statistics report on three of those, its log's prefixes cut, to
# tests/data/imatrix_stats_llamacpp.txt (its logger thread can lose the last lines at exit: each
# report is taken when two runs in a row print the same and end with the per-layer table, in
# 10 tries)
report() {
  "$l/build/bin/llama-imatrix" -m "$work/imt-vocab.gguf" --in-file "tests/data/$1" --show-statistics 2>&1 >/dev/null |
    sed -E 's/^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+ I //' | sed -n '/^Computing statistics/,$p'
}
for f in imatrix_llamacpp.gguf imatrix_moe_llamacpp.gguf imatrix_blocks_tiny.dat; do
  a=$(report $f) b=$(report $f) tries=2
  until [ "$a" = "$b" ] && [[ $a == *"per layer"*"===="* ]]; do
    [ $tries -lt 10 ] || { echo "llama-imatrix --show-statistics $f: no two runs alike" >&2; exit 1; }
    a=$b b=$(report $f) tries=$((tries + 1))
  done
  printf '\n%s\n\n' "$a"
done >tests/data/imatrix_stats_llamacpp.txt
