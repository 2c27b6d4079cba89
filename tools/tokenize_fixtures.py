#!/usr/bin/env python3
"""Writes tests/data/tokenize_fixtures.txt: the ids Hugging Face tokenizers
and llama.cpp give for texts with control bytes and ill-formed UTF-8, on the
vocabularies tests/data/fetch.sh caches (SmolLM2's GGUF, llama.cpp's
ggml-vocab-{llama-bpe,qwen2,gpt-2,llama-spm}.gguf).

  pip install gguf transformers==4.46.3 sentencepiece protobuf  # tokenizers 0.20
  python3 tools/tokenize_fixtures.py --data DIR --llama-tokenize BIN \
      > tests/data/tokenize_fixtures.txt

Hugging Face: the byte-level vocabularies become a tokenizers.Tokenizer built
from the GGUF's tokens and merges with the normalizer, pre-tokenizer and
model flags of each model's published tokenizer.json (written out below);
transformers' own GGUF reader gets those wrong for byte-level models (it
gives SmolLM2 the GPT-2 split and <|endoftext|> as the unknown token).
llama-spm goes through transformers' GGUF converter, which builds Llama-2's
tokenizer.json (Prepend and Replace "\u2581", BPE with byte_fallback).
Python strings cannot hold ill-formed UTF-8, so the text each gets is the
bytes decoded with errors="replace": U+FFFD for each maximal subpart, as the
Unicode standard recommends (chapter 3, "U+FFFD Substitution of Maximal
Subparts"). Each build is first checked against llama.cpp's test strings
(the .inp/.out files), whose ids came from the real tokenizer.json files.

llama.cpp: the llama-tokenize tool of the llama.cpp that llama-cpp-python
0.3.36 vendors, fed the raw bytes on stdin (--stdin --no-escape --ids
--no-bos). An input it fails on is recorded as "error".
"""
import argparse
import os
import subprocess
import sys

# Each case: bytes. \x00 is here too: the C test passes it through the API.
CASES = [
    b"a\x04b",
    b"a\x00b",
    b"\x01\x02\x03",
    b"tab\there\x07bell\x1b[31mred\x1b[0m",
    b"del\x7f!",
    b"line\r\nnext\x0bvt\x0cff",
    b"a\x80b",  # a lone continuation byte
    b"\x80\xbf",
    b"a\xc3b",  # a 2-byte sequence cut short
    b"caf\xc3",
    b"a\xe2\x82b",  # 3-byte, cut after 2
    b"a\xe2b",
    b"x\xe2\x82",
    b"a\xf0\x9f\x98b",  # 4-byte, cut after 3
    b"\xf0\x9f\x98",
    b"a\xf0\x9fb",
    b"\xc0\xaf",  # overlong "/"
    b"\xc1\x81x",  # overlong "A"
    b"\xe0\x80\xaf",
    b"\xf0\x80\x80\xaf",
    b"\xed\xa0\x80",  # a surrogate, U+D800
    b"x\xed\xbf\xbfy",
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xf5\x80\x80\x80",
    b"a\xf5b\xf6c\xf7d",
    b"a\xf8b\xf9c\xfad\xfbe\xfcf\xfdg\xfeh\xffi",
    b"\xfe\xff",
    b"Hello \xff world, caf\xc3\xa9 \xe2\x82 ok 123\x80456",
    b"  \x80 spaces\xc3  \xe2\x82\xac euro",
    b"h\xc3\xa9llo \xf0\x9f\x98\x80 \xe4\xb8\x96\xe7\x95\x8c",  # well-formed
    b"'s\xff're 9\x04 9",
]

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")

VOCABS = {  # name: file under --data
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "llama-bpe": "vocab/ggml-vocab-llama-bpe.gguf",
    "qwen2": "vocab/ggml-vocab-qwen2.gguf",
    "gpt-2": "vocab/ggml-vocab-gpt-2.gguf",
    "llama-spm": "vocab/ggml-vocab-llama-spm.gguf",
}


def gguf_strings(reader, key):
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def byte_level(name, path):
    """tokenizer.json as SmolLM2, Llama-3, Qwen2 and GPT-2 publish it."""
    from gguf import GGUFReader
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    reader = GGUFReader(path)
    vocab = {}
    for i, text in enumerate(gguf_strings(reader, "tokenizer.ggml.tokens")):
        vocab.setdefault(text, i)
    merges = [tuple(m.split(" ", 1)) for m in gguf_strings(reader, "tokenizer.ggml.merges")]
    model = models.BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False,
                       byte_fallback=False, ignore_merges=name == "llama-bpe")
    tok = Tokenizer(model)
    no_regex = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if name == "smollm2":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    elif name == "gpt-2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        pattern = LLAMA3 if name == "llama-bpe" else QWEN2
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False), no_regex])
        if name == "qwen2":
            tok.normalizer = normalizers.NFC()
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def sentencepiece(path):
    """transformers' GGUF converter: Llama-2's tokenizer.json."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoTokenizer

    gguf_utils.is_torch_available = lambda: True  # only tensors need torch; the vocabulary does not
    tok = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    return lambda text: tok.backend_tokenizer.encode(text, add_special_tokens=False).ids


def llama_cpp(binary, path, data):
    run = subprocess.run([binary, "-m", path, "--stdin", "--no-escape", "--ids", "--no-bos",
                          "--log-disable"], input=data, capture_output=True)
    out = run.stdout.decode("ascii", "replace").strip().splitlines()
    if run.returncode != 0 or not out or not out[-1].startswith("["):
        return "error"
    ids = out[-1].strip("[]").replace(",", " ").split()
    return " ".join(ids) if ids else "-"


def self_check(data_dir, encoders):
    """Each build against llama.cpp's test strings, whose .out ids came from
    the model's real tokenizer.json (SmolLM2 has none there)."""
    for name, encode in encoders.items():
        path = os.path.join(data_dir, VOCABS[name])
        if not os.path.exists(path + ".inp"):
            continue
        texts = open(path + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
        outs = open(path + ".out", encoding="utf-8").read().strip("\n").split("\n")
        bad = sum(" ".join(map(str, encode(t))) != o.strip() for t, o in zip(texts, outs))
        print("%s: %d of %d test strings differ" % (name, bad, len(outs)), file=sys.stderr)
        if bad:
            sys.exit(1)


def escaped(data):
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else "\\x%02x" % b for b in data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/mkc/testdata"))
    ap.add_argument("--llama-tokenize", required=True)
    args = ap.parse_args()
    paths = {name: os.path.join(args.data, file) for name, file in VOCABS.items()}
    encoders = {name: sentencepiece(path) if name == "llama-spm" else byte_level(name, path)
                for name, path in paths.items()}
    self_check(args.data, encoders)
    import tokenizers
    import transformers

    print("# Made by tools/tokenize_fixtures.py (tokenizers %s, transformers %s, llama-tokenize"
          % (tokenizers.__version__, transformers.__version__))
    print("# of llama-cpp-python 0.3.36's llama.cpp). Tab-separated: vocabulary, text (\\xNN for")
    print("# every byte but printable ASCII and space), Hugging Face ids, llama.cpp ids (- for")
    print("# none, error where llama-tokenize aborted).")
    for name, encode in encoders.items():
        for data in CASES:
            hf = encode(data.decode("utf-8", "replace"))
            hf = " ".join(map(str, hf)) if hf else "-"
            cpp = llama_cpp(args.llama_tokenize, paths[name], data)
            print("\t".join([name, escaped(data), hf, cpp]))


if __name__ == "__main__":
    main()
