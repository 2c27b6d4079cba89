#!/usr/bin/env python3
"""Writes tests/data/quant_fixtures.txt: blocks of random bytes of each block
type mkc reads (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, F16 and BF16 words, then
Q5_K, Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M,
then MXFP4) with the floats gguf-py's own dequantizer gives for them, an oracle for
mkc_dequant_f32 that shares no code with it (read by tests/test_quant_fixtures.c).

  python3 -m venv /tmp/gguf-env && /tmp/gguf-env/bin/pip install gguf==0.19.0 numpy
  /tmp/gguf-env/bin/python tools/gen_quant_fixtures.py > tests/data/quant_fixtures.txt

Run by hand; the committed file was made with gguf 0.19.0 and numpy 2.4.6
(the header of the output names them). Every byte of a block is random
(numpy's default_rng, seed 20240611) except its f16 scale fields (d; also m
for Q4_1 and Q5_1, dmin for Q2_K, Q4_K and Q5_K), which random bytes would too often make
infinite or NaN: those are set to finite values of moderate size, positive
in the first blocks, negative in one block and zero in another. The F16 and
BF16 lines are random words, NaN, infinities and subnormals included.

Each line: TYPE, the block's bytes in hex, then the expected floats as the
hex of their IEEE bits (8 digits each, so they compare bit for bit).
"""
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

SEED = 20240611
# name: (block bytes, offsets of the f16 scale fields)
LAYOUT = {
    "Q8_0": (34, [0]),
    "Q4_0": (18, [0]),
    "Q4_1": (20, [0, 2]),  # d, m
    "Q4_K": (144, [0, 2]),  # d, dmin
    "Q6_K": (210, [208]),  # d (the int8 sub-scales stay random)
}
# Types added later, written after the lines above so that those stay as they were.
LATER = {
    "Q5_K": (176, [0, 2]),  # d, dmin
    "Q5_0": (22, [0]),
    "Q5_1": (24, [0, 2]),  # d, m
    "Q2_K": (84, [80, 82]),  # d, dmin
    "Q3_K": (110, [108]),  # d
    "IQ4_NL": (18, [0]),
    "IQ4_XS": (136, [0]),  # d (the scale bits stay random)
    # the grid types: indices, signs and 4-bit scales random
    "IQ2_XXS": (66, [0]),
    "IQ2_XS": (74, [0]),
    "IQ2_S": (82, [0]),
    "IQ3_XXS": (98, [0]),
    "IQ3_S": (110, [0]),
    "IQ1_S": (50, [0]),
    "IQ1_M": (56, ["nibbles"]),  # d in the top nibbles of the 4 u16 scale words at 48
}
# Added 2026-12-01 after all the lines above: MXFP4 (gpt-oss's experts), whose scale is a byte e
# (2^(e - 128)): from 100..150, then 1 and 0 (subnormal scales), the nibbles random.
LATEST = {"MXFP4": (17, ["e8m0"])}
BLOCKS = 5  # per type: three random-scale blocks, then one with d < 0, one with d = 0


def main():
    rng = np.random.default_rng(SEED)
    out = sys.stdout
    out.write("# made by tools/gen_quant_fixtures.py (gguf %s, numpy %s, seed %d): TYPE BLOCK-HEX "
              "EXPECTED-FLOAT-BITS...\n" % (gguf_version(), np.__version__, SEED))
    blocks(out, rng, LAYOUT)
    # F16 and BF16: 4 lines of 16 random words, and the special values.
    special = [0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
               0x7c01, 0xfe3f, 0x3c00, 0xbc00, 0x3555, 0x03ff]
    for name, qtype in (("F16", T.F16), ("BF16", T.BF16)):
        for line in range(5):
            words = (np.array(special, dtype=np.uint16) if line == 0
                     else rng.integers(0, 65536, size=16, dtype=np.uint16))
            block = words.astype("<u2").view(np.uint8)
            write(out, name, block, dequantize(block.reshape(1, -1), qtype))
    blocks(out, rng, LATER)
    blocks(out, rng, LATEST)


def blocks(out, rng, layout):
    for name, (size, scales) in layout.items():
        qtype = T[name]
        for b in range(BLOCKS):
            block = rng.integers(0, 256, size=size, dtype=np.uint8)
            for k, off in enumerate(scales):
                v = rng.uniform(1e-3, 2.0) * (1 if rng.random() < 0.75 else -1)
                if b == BLOCKS - 2 and k == 0:
                    v = -abs(v)  # a negative d
                if b == BLOCKS - 1 and k == 0:
                    v = 0.0  # d = 0: Q4_1 and the K types still give their offsets
                h = np.array([v], dtype=np.float16).view(np.uint8)
                if off == "e8m0":  # MXFP4's scale byte
                    block[0] = 1 if b == BLOCKS - 2 else 0 if b == BLOCKS - 1 else rng.integers(100, 151)
                elif off == "nibbles":  # IQ1_M: d's nibble w in the top of scale word w
                    bits = int(h[0]) | int(h[1]) << 8
                    for w in range(4):
                        hi = 48 + 2 * w + 1
                        block[hi] = (block[hi] & 0x0F) | (((bits >> 4 * w) & 0xF) << 4)
                else:
                    block[off:off + 2] = h
            write(out, name, block, dequantize(block.reshape(1, -1), qtype))


def gguf_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:
        return "unknown"


def write(out, name, block, values):
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    bits = values.view(np.uint32)
    out.write("%s %s %s\n" % (name, block.tobytes().hex(), " ".join("%08x" % v for v in bits)))


if __name__ == "__main__":
    main()
