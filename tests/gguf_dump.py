"""FILE: a GGUF file's metadata and tensors, one a line, for tests to compare: "kv KEY VALUE" in
the file's order (arrays as their length and a hash), then "tensor NAME TYPE NE0,NE1,... SHA256"
in the file's order (TYPE: ggml's number). Written apart from mkc's reader (formats/gguf.c), so
a test of mkc's writer reads its files through another parser. read(path) is the parser."""
import hashlib, struct, sys

SIZES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# bytes a block takes and values it holds, by ggml type
BLOCKS = {0: (4, 1), 1: (2, 1), 30: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32),
          8: (34, 32), 10: (84, 256), 11: (110, 256), 12: (144, 256), 13: (176, 256),
          14: (210, 256), 16: (66, 256), 17: (74, 256), 18: (98, 256), 19: (50, 256),
          20: (18, 32), 21: (110, 256), 22: (82, 256), 23: (136, 256), 29: (56, 256),
          39: (17, 32), 34: (54, 256), 35: (66, 256), 40: (36, 64), 41: (18, 128), 42: (18, 64)}


def read(path):
    """(kvs: [(key, value)], tensors: [(name, type, ne, data bytes, data's byte offset in the
    file)]), in the file's order."""
    buf = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def text():
        nonlocal pos
        n = take("Q")
        pos += n
        return buf[pos - n:pos].decode("utf-8", "replace")

    def value(t):
        if t == 8:
            return text()
        if t == 9:
            inner, n = take("I"), take("Q")
            return [value(inner) for _ in range(n)]
        return take(SIZES[t])

    assert buf[:4] == b"GGUF", path + ": not a GGUF file"
    pos = 4
    take("I")
    n_tensors, n_kv = take("Q"), take("Q")
    kvs, infos, align = [], [], 32
    for _ in range(n_kv):
        key, v = text(), value(take("I"))
        if key == "general.alignment":
            align = v
        kvs.append((key, v))
    for _ in range(n_tensors):
        name = text()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    start = (pos + align - 1) // align * align
    tensors = []
    for name, ne, t, off in infos:
        n = 1
        for d in ne:
            n *= d
        size, per = BLOCKS[t]
        data = buf[start + off:start + off + n // per * size]
        assert len(data) == n // per * size, name + ": data past the end"
        tensors.append((name, t, ne, data, start + off))
    return kvs, tensors


if __name__ == "__main__":
    kvs, tensors = read(sys.argv[1])
    for key, v in kvs:
        if isinstance(v, list):
            v = "[%d] %s" % (len(v), hashlib.sha256(repr(v).encode()).hexdigest()[:16])
        print("kv", key, v)
    for name, t, ne, data, _ in tensors:
        print("tensor", name, t, ",".join(map(str, ne)), hashlib.sha256(data).hexdigest()[:16])
