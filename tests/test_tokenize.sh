#!/usr/bin/env bash
# mkc tokenize against llama.cpp's own tokenizer fixtures (tests/data/fetch.sh: each vocabulary's
# .inp texts and the ids llama.cpp gives them in .out, without BOS or special tokens read), its
# flags (BOS, control tokens, escapes, the count), a Hugging Face folder (a byte-level
# tokenizer.json written here, whose ids are the bytes), and its refusals.
source "$(dirname "$0")/lib.sh"

# A byte-level BPE tokenizer.json with no merges: token b is byte b, 256 is <|endoftext|>.
mkdir -p "$tmp/hf"
python3 - "$tmp/hf/tokenizer.json" <<'PY'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): b for b, c in zip(bs, cs)}
vocab["<|endoftext|>"] = 256
json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": []},
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "decoder": {"type": "ByteLevel"},
           "added_tokens": [{"id": 256, "content": "<|endoftext|>", "special": True}]}, open(sys.argv[1], "w"))
PY
out=$("$mkc" tokenize -m "$tmp/hf" -p 'a b\n<|endoftext|>' --ids 2>&1)
[ "$out" = "[97, 32, 98, 10, 256]" ] && ok "a Hugging Face folder: the bytes' ids, \\n read as a newline, the control token" \
  || fail "tokenize a Hugging Face folder" "$out"
out=$("$mkc" tokenize -m "$tmp/hf" -p 'a\n<|endoftext|>' --ids --no-escape --no-parse-special 2>&1)
[ "$out" = "[97, 92, 110, 60, 124, 101, 110, 100, 111, 102, 116, 101, 120, 116, 124, 62]" ] \
  && ok "--no-escape, --no-parse-special: the backslash and the control token's text as bytes" \
  || fail "tokenize --no-escape --no-parse-special" "$out"
"$mkc" tokenize -m "$tmp/hf" -p $'x\x01\xc3\xa9' >"$tmp/lines" 2>&1
if [ "$(cat "$tmp/lines")" = "$(printf "%6d -> 'x'\n%6d -> '\\\\x01'\n%6d -> '\\\\xc3'\n%6d -> '\\\\xa9'" 120 1 195 169)" ]; then
  ok "each token a line, ID -> 'PIECE', bytes that do not print (a control byte, half of é) as \\xHH"
else
  fail "tokenize's lines" "$(cat "$tmp/lines")"
fi

vocabs=${MKC_TEST_DATA:-}/vocab
if [ -z "${MKC_TEST_DATA:-}" ] || [ ! -f "$vocabs/ggml-vocab-qwen2.gguf" ]; then
  skip "tokenize against llama.cpp's fixtures: no test data (run tests/data/fetch.sh)"
else
  # The first 12 texts of each vocabulary: llama.cpp's ids, each through a file (its bytes as
  # they are), without BOS, control tokens' texts as text (as the fixtures were made).
  for v in llama-spm llama-bpe qwen2 starcoder; do
    python3 - "$vocabs/ggml-vocab-$v.gguf" "$tmp/case" <<'PY' >"$tmp/cases"
import sys
inp = open(sys.argv[1] + ".inp", "rb").read().split(b"\n__ggml_vocab_test__\n")
out = open(sys.argv[1] + ".out").read().split("\n")
for i in range(12):
    open("%s%d" % (sys.argv[2], i), "wb").write(inp[i])
    print("[" + ", ".join(out[i].split()) + "]")
PY
    bad=
    for i in $(seq 0 11); do
      got=$("$mkc" tokenize -m "$vocabs/ggml-vocab-$v.gguf" -f "$tmp/case$i" --ids --no-bos --no-parse-special 2>&1)
      want=$(sed -n "$((i + 1))p" "$tmp/cases")
      [ "$got" = "$want" ] || bad="$bad case $i: want $want, got $got;"
    done
    [ -z "$bad" ] && ok "$v: 12 of llama.cpp's texts, its ids" || fail "tokenize $v" "$bad"
  done
  q=$vocabs/ggml-vocab-qwen2.gguf spm=$vocabs/ggml-vocab-llama-spm.gguf
  [ "$("$mkc" tokenize -m "$spm" -p Hello --ids)" = "[1, 15043]" ] && [ "$("$mkc" tokenize -m "$spm" -p Hello --ids --no-bos)" = "[15043]" ] \
    && ok "llama-spm: BOS where the model adds it, none with --no-bos" || fail "tokenize BOS" "$("$mkc" tokenize -m "$spm" -p Hello --ids)"
  "$mkc" tokenize -m "$q" -p '<|im_start|>hi' --show-count >"$tmp/q"
  [ "$(cat "$tmp/q")" = "$(printf "151644 -> '<|im_start|>'\n  6023 -> 'hi'\nTotal number of tokens: 2")" ] \
    && ok "qwen2: a control token read, the count last" || fail "tokenize qwen2 control token" "$(cat "$tmp/q")"
fi

expect_error "tokenize without -m" "mkc: error: tokenize: -m MODEL is required" -- tokenize -p hi
expect_error "tokenize with -p and -f" "mkc: error: tokenize: give the text as -p TEXT or -f FILE: one" \
  -- tokenize -m "$tmp/hf" -p hi -f "$tmp/hf/tokenizer.json"
"$mkc" init --preset tiny --seed 1 -o "$tmp/tiny.gguf" 2>/dev/null
expect_error "tokenize a model without a tokenizer" "mkc: error: $tmp/tiny.gguf: no tokenizer.ggml.model: the file has no tokenizer" \
  -- tokenize -m "$tmp/tiny.gguf" -p hi
expect_error "tokenize a file that is not there" "mkc: error: $tmp/none.gguf: No such file or directory" \
  -- tokenize -m "$tmp/none.gguf" -p hi
finish
