#!/usr/bin/env python3
"""Compares the perplexity estimates two runs printed (llama-imatrix's and llama-perplexity's
lines: "[1]296.8105,[2]...," and "Final estimate: PPL = X +/- E"): the same chunks, each
estimate, the final one and its error within a relative TOL (default 1e-4). Prints "ok" or "off",
the largest relative difference, and both lists."""
import re
import sys


def numbers(path):
    text = open(path).read()
    chunks = re.findall(r"\[(\d+)\]([0-9.]+),", text)
    final = re.findall(r"PPL = ([0-9.]+) \+/- ([0-9.]+)", text)
    return [int(i) for i, _ in chunks], [float(v) for _, v in chunks] + [float(v) for v in (final[-1] if final else ())]


tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
(ia, a), (ib, b) = numbers(sys.argv[1]), numbers(sys.argv[2])
worst = max((abs(x - y) / y for x, y in zip(a, b)), default=float("inf"))
same = ia == ib and ia == list(range(1, len(ia) + 1)) and len(a) == len(b) == len(ia) + 2
print("ok" if same and worst <= tol else "off", "%.1e" % worst, a, b)
