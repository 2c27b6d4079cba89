"""IN PREFIX N [--no-tensor-first-split]: cuts the GGUF file IN into files of at most N tensors
each, as llama.cpp's gguf-split --split-max-tensors N does: PREFIX-00001-of-0000K.gguf, ..., the
first with IN's metadata (with the flag, alone: gguf-split's flag of that name), each with
split.no (u16), split.tensors.count (i32) and split.count (u16; last, as gguf-split sets it again
once it knows the count), the tensors in IN's order, their data 32-byte aligned. Written apart
from mkc, for tests of its reader and of mkc gguf-split."""
import struct, sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gguf_dump import read

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def raw_kvs(buf):
    """The metadata entries as the bytes they are in buf, in order."""
    pos = 24

    def skip_value(t):
        nonlocal pos
        if t == 8:
            pos += 8 + struct.unpack_from("<Q", buf, pos)[0]
        elif t == 9:
            inner, n = struct.unpack_from("<IQ", buf, pos)
            pos += 12
            for _ in range(n):
                skip_value(inner)
        else:
            pos += SCALAR[t]

    n_kv = struct.unpack_from("<Q", buf, 16)[0]
    out = []
    for _ in range(n_kv):
        start = pos
        pos += 8 + struct.unpack_from("<Q", buf, pos)[0]
        t = struct.unpack_from("<I", buf, pos)[0]
        pos += 4
        skip_value(t)
        out.append(buf[start:pos])
    return out


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def main(path, prefix, per, empty_first):
    buf = open(path, "rb").read()
    kvs = raw_kvs(buf)
    _, tensors = read(path)
    groups = ([[]] if empty_first else []) + [tensors[i:i + per] for i in range(0, len(tensors), per)]
    for no, group in enumerate(groups):
        meta = (kvs if no == 0 else []) + [
            s("split.no") + struct.pack("<IH", 2, no),
            s("split.tensors.count") + struct.pack("<Ii", 5, len(tensors)),
            s("split.count") + struct.pack("<IH", 2, len(groups))]
        infos, data = b"", b""
        for name, t, ne, payload, _ in group:
            data += b"\0" * (-len(data) % 32)
            infos += s(name) + struct.pack("<I", len(ne)) + b"".join(
                struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, len(data))
            data += payload
        head = b"GGUF" + struct.pack("<IQQ", 3, len(group), len(meta)) + b"".join(meta) + infos
        head += b"\0" * (-len(head) % 32)
        with open("%s-%05d-of-%05d.gguf" % (prefix, no + 1, len(groups)), "wb") as f:
            f.write(head + data)


main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "--no-tensor-first-split" in sys.argv[4:])
