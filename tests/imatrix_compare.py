"""A B [--dat D] [--tol T]: `mkc imatrix`'s GGUF A against llama-imatrix's B
(tests/data/imatrix_llamacpp.gguf), or against another mkc run's, both read through
tests/gguf_dump.py: the same matrices, the same counts, every sum within TOL relative (float
against double arithmetic: llama-imatrix 1.3e-6 from mkc's reference on the fixture, 2.6e-6 from
mkc's kernel), the same chunk count and size. --tol T: another bound, for a caller that says
why. With --dat D: mkc's .dat of the same run holds each matrix's mean square times its calls (a
call a chunk; an expert's slice its mean by its own count). Prints one line per finding, "ok"
last."""
import struct, sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gguf_dump import read

TOL = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 1e-5


def matrices(path):
    kvs, tensors = read(path)
    out = {}
    for name, typ, ne, data, _ in tensors:
        if typ != 0:
            sys.exit(f"{path}: {name} is type {typ}, not F32")
        vals = struct.unpack(f"<{len(data) // 4}f", data)
        base, part = name.rsplit(".", 1)
        out.setdefault(base, {})[part] = vals
    return dict(kvs), out


ka, a = matrices(sys.argv[1])
kb, b = matrices(sys.argv[2])
bad = []
if sorted(a) != sorted(b):
    bad.append(f"matrices: {sorted(a)} against {sorted(b)}")
for key in ("imatrix.chunk_count", "imatrix.chunk_size"):
    if ka.get(key) != kb.get(key):
        bad.append(f"{key}: {ka.get(key)} against {kb.get(key)}")
worst = 0.0
for name in sorted(set(a) & set(b)):
    if a[name]["counts"] != b[name]["counts"]:
        bad.append(f"{name}: counts {a[name]['counts']} against {b[name]['counts']}")
    for x, y in zip(a[name]["in_sum2"], b[name]["in_sum2"]):
        worst = max(worst, abs(x - y) / abs(y) if y else 0.0 if x == 0 else float("inf"))
if worst > TOL:
    bad.append(f"a sum {worst:.3g} off the other's, relative (at most {TOL})")
if "--dat" in sys.argv:
    buf = open(sys.argv[sys.argv.index("--dat") + 1], "rb").read()
    pos = 0

    def take(fmt):
        global pos
        v = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return v

    chunk = ka["imatrix.chunk_size"]
    for _ in range(take("i")[0]):
        n = take("i")[0]
        name = buf[pos:pos + n].decode()
        pos += n
        calls, nval = take("ii")
        vals = take(f"{nval}f")
        # each slice (an expert) by its own count; the calls are the most counted slice's chunks,
        # and a slice that met no input holds the calls
        counts = a[name]["counts"]
        cols = len(a[name]["in_sum2"]) // len(counts)
        want = [s / counts[i // cols] * calls if counts[i // cols] else calls
                for i, s in enumerate(a[name]["in_sum2"])]
        if calls != -(-int(max(counts)) // chunk) or len(vals) != len(want) \
                or any(abs(v - w) > 1e-6 * abs(w) for v, w in zip(vals, want)):
            bad.append(f".dat {name}: {calls} calls, values {vals[:2]} against {want[:2]}")
    chunks, n = take("ii")
    if chunks != ka["imatrix.chunk_count"] or buf[pos:pos + n].decode() != ka["imatrix.datasets"][0]:
        bad.append(f".dat tail: {chunks} chunks, dataset {buf[pos:pos + n]!r}")
    if pos + n != len(buf):
        bad.append(f".dat: {len(buf) - pos - n} bytes after the dataset")
print("\n".join(bad) if bad else f"ok {len(a)} matrices, the largest difference {worst:.2g}")
