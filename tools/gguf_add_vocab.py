#!/usr/bin/env python3
"""SRC DST: copies a GGUF that `mkc init` wrote into one llama.cpp loads: a
stand-in SentencePiece vocabulary of the model's size (<unk>, <s>, </s>,
the 256 byte tokens, then t259...; llama.cpp will not load a file without
one, and the oracle is fed token ids), and vectors (norms) as F32, as
llama.cpp's converter writes them (its CPU backend adds no F32 to BF16).
PATTERN_ARRAY=1 writes sliding_window_pattern as one flag a layer, the other
form llama.cpp reads. --vocab-only N DST writes that vocabulary of N tokens alone, a file `mkc
init --vocab` takes (tests/data/standin_vocab.gguf). Needs gguf-py (pip install gguf)."""
import os, sys, numpy as np
from gguf import GGUFReader, GGUFWriter, GGUFValueType, GGMLQuantizationType


def add_vocab(w, n):
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [f"t{i}" for i in range(259, n)]
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.scores", [0.0] * n)
    w.add_array("tokenizer.ggml.token_type", [2, 3, 3] + [6] * 256 + [1] * (n - 259))
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)


if sys.argv[1] == "--vocab-only":
    w = GGUFWriter(sys.argv[3], "llama")
    add_vocab(w, int(sys.argv[2]))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    sys.exit(0)
src, dst = sys.argv[1], sys.argv[2]
r = GGUFReader(src)
arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
w = GGUFWriter(dst, arch)
for name, f in r.fields.items():
    if name.startswith("GGUF.") or name == "general.architecture": continue
    if name.startswith("tokenizer."): continue  # a vocabulary init copied: add_vocab's replaces it
    t = f.types[0]
    if t == GGUFValueType.STRING: w.add_string(name, bytes(f.parts[-1]).decode())
    elif t == GGUFValueType.UINT32 and name.endswith("sliding_window_pattern") and os.environ.get("PATTERN_ARRAY"):
        p = int(f.parts[-1][0]); nl = int(r.fields[arch + ".block_count"].parts[-1][0])
        w.add_array(name, [bool(l % p < p - 1) for l in range(nl)])
    elif t == GGUFValueType.UINT32: w.add_uint32(name, int(f.parts[-1][0]))
    elif t == GGUFValueType.FLOAT32: w.add_float32(name, float(f.parts[-1][0]))
    else: raise SystemExit(f"type {t} of {name}")
n = int(r.fields[arch + ".vocab_size"].parts[-1][0])  # >= 259: the byte tokens
add_vocab(w, n)
for t in r.tensors:
    data = np.array(t.data)
    vector = len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[1] == 1)
    if vector and t.tensor_type == GGMLQuantizationType.BF16:  # vectors as F32, as the converter writes them
        bits = data.view(np.uint16).astype(np.uint32) << 16
        w.add_tensor(t.name, bits.view(np.float32).reshape(-1))
    else:
        w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
