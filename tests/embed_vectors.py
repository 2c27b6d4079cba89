"""Vectors for tests/test_embed.sh, on the standard library alone. A vector
file has one vector a line: a JSON array (mkc embed's) or numbers separated by
spaces (the llama.cpp fixture's, after its first two words).

  embed_vectors.py close A B TOL    max |a - b| over max |b|, line by line: prints the worst;
                                    exit 1 past TOL or when the shapes differ
  embed_vectors.py norms FILE       each vector's euclidean norm and length
  embed_vectors.py answer FILE      a server's answer (ollama's "embeddings" or "embedding",
                                    OpenAI's "data", base64 decoded) as a vector file
"""
import base64
import json
import math
import struct
import sys


def vectors(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        if line.startswith("["):
            out.append([float(x) for x in json.loads(line)])
        else:
            words = line.split()
            out.append([float(x) for x in (words[2:] if not words[0][0] in "-0123456789" else words)])
    return out


def main():
    cmd = sys.argv[1]
    if cmd == "close":
        a, b, tol = vectors(sys.argv[2]), vectors(sys.argv[3]), float(sys.argv[4])
        if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)) or not a:
            print("shapes differ: %s against %s" % ([len(x) for x in a], [len(y) for y in b]))
            sys.exit(1)
        worst = max(max(abs(p - q) for p, q in zip(x, y)) / max(abs(q) for q in y)
                    for x, y in zip(a, b))
        print("%.3g" % worst)
        sys.exit(0 if worst <= tol else 1)
    if cmd == "norms":
        for v in vectors(sys.argv[2]):
            print("%.6f %d" % (math.sqrt(sum(x * x for x in v)), len(v)))
        return
    if cmd == "answer":
        o = json.load(open(sys.argv[2]))
        if "embeddings" in o:
            rows = o["embeddings"]
        elif "embedding" in o:
            rows = [o["embedding"]] if o["embedding"] else []
        else:
            rows = []
            for d in sorted(o["data"], key=lambda d: d["index"]):
                e = d["embedding"]
                if isinstance(e, str):
                    raw = base64.b64decode(e)
                    e = list(struct.unpack("<%df" % (len(raw) // 4), raw))
                rows.append(e)
        for r in rows:
            print(json.dumps(r))
        return
    sys.exit("unknown command " + cmd)


main()
