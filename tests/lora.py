#!/usr/bin/env python3
"""LoRA adapters for tests/test_lora.sh, and the models they stand for, written without mkc.

  lora.py adapter BASE.gguf OUT.gguf SEED NAME... [--arch A] [--alpha X] [--rank R] [--half]
      An adapter (llama.cpp's GGUF layout: general.type adapter, adapter.type lora,
      adapter.lora.alpha, NAME.lora_a [R][cols] in F16, NAME.lora_b [rows][R] in F32) for base
      matrices NAME of BASE. Its entries are multiples of 1/8 from -3/8 to 3/8 (SEED), so that
      every product and sum of the merge is exact in f32. --half: only NAME.lora_a.
  lora.py peft BASE.gguf ADAPTER.gguf DIR [--rslora]
      The same adapter as Hugging Face's PEFT saves it: DIR/adapter_config.json (r, lora_alpha,
      use_rslora) and DIR/adapter_model.safetensors (base_model.model.MODULE.lora_A.weight as
      the GGUF's lora_a, .lora_B.weight its lora_b with the Q/K rows back in HF's order:
      llama.cpp's converter's permutation undone, each head's rows 2i + j to j * head_dim/2 + i).
  lora.py merge BASE.gguf OUT.gguf ADAPTER.gguf:SCALE...
      BASE with each adapter's delta merged, one adapter after the other, as llama.cpp's graph
      adds it: W += SCALE * alpha / R * (B A) (alpha 0: SCALE), the sum in f32 from W's bf16 (a
      Q8_0 matrix dequantized and rounded to bf16 first), rounded to bf16 (nearest, ties to
      even); an adapted matrix is stored BF16, the rest of the file as it was.
"""
import random
import struct
import sys

ALIGN = 32
F32, F16, Q8_0, BF16 = 0, 1, 8, 30


class Gguf:
    """A GGUF's metadata (kept as its bytes, and read), tensor infos and data."""

    def __init__(self, path):
        self.buf = open(path, "rb").read()
        self.pos = 4
        assert self.buf[:4] == b"GGUF"
        self.version = self.take("I")
        n_tensors, n_kv = self.take("Q"), self.take("Q")
        start = self.pos
        self.kv = {}
        for _ in range(n_kv):
            key = self.text()
            self.kv[key] = self.value(self.take("I"))
        self.kv_bytes, self.n_kv = self.buf[start:self.pos], n_kv
        self.tensors = []  # [name, ne, type, offset]
        for _ in range(n_tensors):
            name, dims = self.text(), self.take("I")
            ne = [self.take("Q") for _ in range(dims)]
            self.tensors.append([name, ne, self.take("I"), self.take("Q")])
        self.data = (self.pos + ALIGN - 1) // ALIGN * ALIGN
        ends = sorted(t[3] for t in self.tensors) + [len(self.buf) - self.data]
        self.raw = {t[0]: self.buf[self.data + t[3]:self.data + ends[ends.index(t[3]) + 1]]
                    for t in self.tensors}

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize("<" + fmt)
        return v

    def text(self):
        n = self.take("Q")
        self.pos += n
        return self.buf[self.pos - n:self.pos].decode()

    def value(self, t):
        sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
                 12: "d"}
        if t == 8:
            return self.text()
        if t == 9:
            inner, n = self.take("I"), self.take("Q")
            return [self.value(inner) for _ in range(n)]
        return self.take(sizes[t])

    def info(self, name):
        return next(t for t in self.tensors if t[0] == name)

    def floats(self, name):
        """The matrix as rows of floats, as mkc's loader widens it to bf16."""
        _, ne, typ, _ = self.info(name)
        cols, rows, raw = ne[0], ne[1], self.raw[name]
        if typ == BF16:
            vals = [bf16_float(h) for h in struct.unpack_from("<%dH" % (rows * cols), raw)]
        elif typ == Q8_0:
            vals = []
            for b in range(rows * cols // 32):
                d = struct.unpack_from("<e", raw, 34 * b)[0]
                qs = struct.unpack_from("<32b", raw, 34 * b + 2)
                vals += [bf16_float(bf16(d * q)) for q in qs]
        else:
            raise SystemExit("lora.py: %s: type %d not read here" % (name, typ))
        return [vals[r * cols:(r + 1) * cols] for r in range(rows)]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bf16(x):
    """Nearest bf16 (ties to even) of x rounded to f32 first, as its bits."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 & 0xFFFF


def bf16_float(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def kv_entry(key, fmt_type, value):
    k = key.encode()
    out = struct.pack("<Q", len(k)) + k + struct.pack("<I", fmt_type)
    if fmt_type == 8:
        v = value.encode()
        return out + struct.pack("<Q", len(v)) + v
    return out + struct.pack("<" + {4: "I", 6: "f"}[fmt_type], value)


def write(path, version, kv_bytes, n_kv, tensors):
    """tensors: [(name, ne, type, data bytes)], each at the next aligned offset."""
    out, offset, infos = bytearray(), 0, []
    for name, ne, typ, data in tensors:
        n = name.encode()
        infos.append(struct.pack("<Q", len(n)) + n + struct.pack("<I", len(ne)) +
                     b"".join(struct.pack("<Q", e) for e in ne) + struct.pack("<IQ", typ, offset))
        offset += (len(data) + ALIGN - 1) // ALIGN * ALIGN
    out += b"GGUF" + struct.pack("<IQQ", version, len(tensors), n_kv) + kv_bytes + b"".join(infos)
    out += bytes(-len(out) % ALIGN)
    for _, _, _, data in tensors:
        out += data + bytes(-len(data) % ALIGN)
    open(path, "wb").write(bytes(out))


def adapter(args):
    base, out, seed, names = Gguf(args[0]), args[1], int(args[2]), []
    arch, alpha, rank, half, i = base.kv["general.architecture"], 8.0, 4, False, 3
    while i < len(args):
        if args[i] in ("--arch", "--alpha", "--rank"):
            v = args[i + 1]
            arch, alpha, rank = (v, alpha, rank) if args[i] == "--arch" else \
                (arch, float(v), rank) if args[i] == "--alpha" else (arch, alpha, int(v))
            i += 2
        else:
            half |= args[i] == "--half"
            if args[i] != "--half":
                names.append(args[i])
            i += 1
    rng = random.Random(seed)
    entry = lambda: rng.randint(-3, 3) / 8
    kv = [kv_entry("general.architecture", 8, arch), kv_entry("general.type", 8, "adapter"),
          kv_entry("adapter.type", 8, "lora"), kv_entry("adapter.lora.alpha", 6, alpha)]
    tensors = []
    for name in names:
        ne = base.info(name)[1] if any(t[0] == name for t in base.tensors) else [64, 64]
        cols, rows = ne[0], ne[1]
        a = [entry() for _ in range(rank * cols)]
        b = [entry() for _ in range(rows * rank)]
        tensors.append((name + ".lora_a", [cols, rank], F16, struct.pack("<%de" % len(a), *a)))
        if not half:
            tensors.append((name + ".lora_b", [rank, rows], F32, struct.pack("<%df" % len(b), *b)))
    write(out, 3, b"".join(kv), len(kv), tensors)


def merge(args):
    base, out = Gguf(args[0]), args[1]
    merged = {}
    for spec in args[2:]:
        path, scale = spec.rsplit(":", 1)
        ad = Gguf(path)
        alpha = ad.kv.get("adapter.lora.alpha", 0.0)
        for name, ne, _, _ in ad.tensors:
            if not name.endswith(".lora_a"):
                continue
            target, rank = name[:-len(".lora_a")], ne[1]
            s = f32(float(scale) * alpha / rank if alpha else float(scale))
            a = struct.unpack_from("<%de" % (ne[0] * rank), ad.raw[name])
            bne = ad.info(target + ".lora_b")[1]
            b = struct.unpack_from("<%df" % (bne[0] * bne[1]), ad.raw[target + ".lora_b"])
            w = merged.get(target) or base.floats(target)
            cols = len(w[0])
            for o, row in enumerate(w):
                delta = [sum(b[o * rank + k] * a[k * cols + i] for k in range(rank))
                         for i in range(cols)]
                w[o] = [bf16_float(bf16(f32(row[i] + f32(s * delta[i])))) for i in range(cols)]
            merged[target] = w
    tensors = []
    for name, ne, typ, _ in base.tensors:
        if name in merged:
            vals = [bf16(v) for row in merged[name] for v in row]
            tensors.append((name, ne, BF16, struct.pack("<%dH" % len(vals), *vals)))
        else:
            tensors.append((name, ne, typ, base.raw[name]))
    write(out, base.version, base.kv_bytes, base.n_kv, tensors)


HF = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
      "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
      "ffn_down": "mlp.down_proj"}


def peft(args):
    import json, os
    base, ad, out = Gguf(args[0]), Gguf(args[1]), args[2]
    arch = base.kv["general.architecture"]
    heads = {"attn_q": base.kv[arch + ".attention.head_count"],
             "attn_k": base.kv[arch + ".attention.head_count_kv"]}
    os.makedirs(out, exist_ok=True)
    header, data, rank = {}, b"", 0
    for name, ne, typ, _ in ad.tensors:
        target, part = name.rsplit(".", 1)  # blk.N.attn_q.weight, lora_a
        _, layer, kind, _ = target.split(".")
        module = "base_model.model.model.layers.%s.%s.lora_%s.weight" % (
            layer, HF[kind], "A" if part == "lora_a" else "B")
        raw = ad.raw[name][:ne[0] * ne[1] * (2 if typ == F16 else 4)]
        if part == "lora_b" and kind in heads:  # rows [out][r]: HF's order back
            row, n_rows = ne[0] * 4, ne[1]
            hd = n_rows // heads[kind]
            rows = [raw[k * row:(k + 1) * row] for k in range(n_rows)]
            hf = [None] * n_rows
            for h in range(heads[kind]):
                for i in range(hd // 2):
                    for j in range(2):
                        hf[h * hd + j * hd // 2 + i] = rows[h * hd + 2 * i + j]
            raw = b"".join(hf)
        rank = ne[1] if part == "lora_a" else ne[0]
        header[module] = {"dtype": "F16" if typ == F16 else "F32", "shape": [ne[1], ne[0]],
                          "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(os.path.join(out, "adapter_model.safetensors"), "wb").write(
        struct.pack("<Q", len(text)) + text + data)
    json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": ad.kv["adapter.lora.alpha"],
               "use_rslora": "--rslora" in args, "target_modules": sorted(set(HF.values()))},
              open(os.path.join(out, "adapter_config.json"), "w"))


{"adapter": adapter, "merge": merge, "peft": peft}[sys.argv[1]](sys.argv[2:])
