"""FILE TENSOR INDEX HEX: writes the bytes HEX into FILE (a GGUF) at byte INDEX of tensor TENSOR's
data, in place: a planted fault (tests/test_llama_flags.sh's --check-tensors). The file is read
by gguf_dump.py's parser."""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gguf_dump import read

path, name, index, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
start = {t[0]: t[4] for t in read(path)[1]}[name]
with open(path, "r+b") as f:
    f.seek(start + index)
    f.write(data)
