#!/usr/bin/env python3
"""Writes templates/iq_grids.cuh: the grids of ggml's IQ2_XXS, IQ2_XS, IQ2_S,
IQ3_XXS, IQ3_S, IQ1_S and IQ1_M blocks, the format's own lookup tables (a grid index names 8
or 4 magnitudes), as C arrays that the kernel's decoders (templates/weights.cuh)
and the reference's readers (runtime/formats/dequant.c) both include.

  python3 -m venv /tmp/gguf-env && /tmp/gguf-env/bin/pip install gguf==0.19.0 numpy
  /tmp/gguf-env/bin/python tools/gen_iq_grids.py > templates/iq_grids.cuh

The values come from gguf-py (gguf.quants: each class's grid, unpacked by its
init_grid), so the tables and the fixtures of tests/data/quant_fixtures.txt
share a source but no code with mkc. Each entry is one word: element j of the
group is byte j (little-endian), as ggml lays its grids out.
"""
import numpy as np
from gguf import quants

# C name, gguf-py class, bytes per entry, the kernel's MKC_W_USES_* that need it
GRIDS = [
    ("mkc_iq2xxs_grid", quants.IQ2_XXS, 8, "IQ2_XXS"),
    ("mkc_iq2xs_grid", quants.IQ2_XS, 8, "IQ2_XS"),
    ("mkc_iq2s_grid", quants.IQ2_S, 8, "IQ2_S"),
    ("mkc_iq3xxs_grid", quants.IQ3_XXS, 4, "IQ3_XXS"),
    ("mkc_iq3s_grid", quants.IQ3_S, 4, "IQ3_S"),
    # IQ1_S and IQ1_M share one grid of -1, 0, 1, kept as 0, 1, 2 (value + 1: bytes
    # never negative, so the kernel can shift a word's bytes all at once)
    ("mkc_iq1s_grid", quants.IQ1_S, 8, "IQ1_S IQ1_M"),
]


def version():
    try:
        from importlib.metadata import version as v
        return "gguf %s" % v("gguf")
    except Exception:
        return "gguf (version unknown)"


def main():
    print("/* The grids of ggml's IQ1, IQ2 and IQ3 blocks: entry i's element j is byte j (IQ1's: byte")
    print(" * j minus 1). Written by tools/gen_iq_grids.py from %s; do not edit. A kernel gets" % version())
    print(" * the tables of the types its matrices use (MKC_W_USES_*); runtime/formats/dequant.c")
    print(" * defines MKC_IQ_ALL for all of them. MKC_TABLE is the preludes' qualifier for a table. */")
    for name, cls, size, use in GRIDS:
        cls.init_grid()
        grid = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
        if grid.min() < 0:
            grid = grid + 1  # IQ1: -1, 0, 1 as 0, 1, 2
        assert grid.shape[1] == size and np.all(grid == np.round(grid)) and grid.max() < 256
        ctype = "unsigned long long" if size == 8 else "unsigned"
        suffix = "ull" if size == 8 else "u"
        words = []
        for row in grid.astype(np.uint64):
            w = 0
            for j, v in enumerate(row):
                w |= int(v) << (8 * j)
            words.append("0x%0*x%s" % (2 * size, w, suffix))
        print("#if defined(MKC_IQ_ALL) || " + " || ".join("defined(MKC_W_USES_%s)" % u for u in use.split()))
        print("MKC_TABLE %s %s[%d] = {" % (ctype, name, len(words)))
        per = 4 if size == 8 else 7  # as clang-format (make format) lays them out
        for i in range(0, len(words), per):
            print("    " + ", ".join(words[i:i + per]) + ",")
        print("};")
        print("#endif")


if __name__ == "__main__":
    main()
