"""FILE TENSOR INDEX HEX: writes the bytes HEX into FILE (a GGUF) at byte INDEX of tensor TENSOR's
data, in place: a planted fault (tests/test_llama_flags.sh's --check-tensors)."""
import struct, sys

path, name, index, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
f = open(path, "r+b")
buf = f.read()
pos = 0


def take(fmt):
    global pos
    v = struct.unpack_from("<" + fmt, buf, pos)
    pos += struct.calcsize("<" + fmt)
    return v[0]


def text():
    global pos
    n = take("Q")
    pos += n
    return buf[pos - n:pos].decode()


SIZES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def value(t):
    if t == 8:
        return text()
    if t == 9:
        inner, n = take("I"), take("Q")
        return [value(inner) for _ in range(n)]
    return take(SIZES[t])


assert buf[:4] == b"GGUF"
pos = 4
take("I")
n_tensors, n_kv = take("Q"), take("Q")
align = 32
for _ in range(n_kv):
    key, v = text(), value(take("I"))
    if key == "general.alignment":
        align = v
offsets = {}
for _ in range(n_tensors):
    t = text()
    dims = take("I")
    pos += 8 * dims
    take("I")
    offsets[t] = take("Q")
start = (pos + align - 1) // align * align
f.seek(start + offsets[name] + index)
f.write(data)
