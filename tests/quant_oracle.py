"""FILE FTYPE [FLAGS...]: the ggml type each tensor of the GGUF FILE gets from llama-quantize
FTYPE with FLAGS (--pure, --leave-output-tensor, --output-tensor-type T, --token-embedding-type
T, --tensor-type REGEX=T, --imatrix: an importance matrix was given), one "NAME TYPE" a line in
llama.cpp's order (by layer, then name).
The rules of llama.cpp's src/llama-quant.cpp for the mixes tests/test_quantize_cli.sh asks for,
written apart from mkc's runtime/formats/quant_mix.c, which they check."""
import re, sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gguf_dump import read

T = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "q2_k": 10,
     "q3_k": 11, "q4_k": 12, "q5_k": 13, "q6_k": 14, "iq2_xxs": 16, "iq2_xs": 17, "iq3_xxs": 18,
     "iq1_s": 19, "iq4_nl": 20, "iq3_s": 21, "iq2_s": 22, "iq4_xs": 23, "iq1_m": 29, "bf16": 30,
     "tq1_0": 34, "tq2_0": 35, "mxfp4": 39, "q1_0": 41, "q2_0": 42}
BLOCK = {0: 1, 1: 1, 30: 1, 2: 32, 3: 32, 6: 32, 7: 32, 8: 32, 20: 32, 39: 32, 41: 128,
         42: 64}  # the rest: 256
BASE = {"Q8_0": "q8_0", "Q2_K": "q2_k", "Q3_K_M": "q3_k", "Q4_K_S": "q4_k", "Q4_K_M": "q4_k",
        "Q5_K_M": "q5_k", "IQ4_XS": "iq4_xs", "Q4_0": "q4_0", "Q2_K_S": "q2_k", "IQ3_XS": "iq3_s",
        "IQ3_XXS": "iq3_xxs", "IQ2_M": "iq2_s", "IQ2_S": "iq2_xs", "IQ2_XS": "iq2_xs",
        "IQ2_XXS": "iq2_xxs", "IQ1_M": "iq1_m", "IQ1_S": "iq1_s", "TQ1_0": "tq1_0",
        "TQ2_0": "tq2_0", "Q1_0": "q1_0", "Q2_0": "q2_0", "MXFP4_MOE": "mxfp4"}
LOWEST = ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M")  # their own branch
KEEP = ["_norm.weight", "ffn_gate_inp.weight"]  # the kinds kept that these models have

path, ftype, flags = sys.argv[1], sys.argv[2].upper(), sys.argv[3:]
opt = {"pure": False, "leave": False, "out": None, "embd": None, "tt": [], "imatrix": False}
i = 0
while i < len(flags):
    f = flags[i]
    if f == "--pure":
        opt["pure"] = True
    elif f == "--leave-output-tensor":
        opt["leave"] = True
    elif f == "--imatrix":
        opt["imatrix"] = True
    else:
        i += 1
        if f == "--output-tensor-type":
            opt["out"] = T[flags[i]]
        elif f == "--token-embedding-type":
            opt["embd"] = T[flags[i]]
        elif f == "--tensor-type":
            pat, typ = flags[i].rsplit("=", 1)
            opt["tt"].append((re.compile(pat), T[typ]))
        else:
            sys.exit("quant_oracle: unknown flag " + f)
    i += 1

kvs, tensors = read(path)
meta = dict(kvs)
arch = meta["general.architecture"]
n_layer = meta[arch + ".block_count"]
heads = meta[arch + ".attention.head_count"]
gqa = heads // meta.get(arch + ".attention.head_count_kv", heads)
names = [t[0] for t in tensors]
tied = "output.weight" not in names


def layer(name):
    m = re.match(r"blk\.(\d+)\.", name)
    return int(m.group(1)) if m else -1


def block(t):
    return BLOCK.get(t, 256)


def more(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


n_v = sum(1 for n in names if "attn_v.weight" in n)
seen = {"v": 0, "down": 0, "gate": 0, "up": 0}
im = opt["imatrix"]
experts = meta.get(arch + ".expert_count", 0)
out = []
for name, cur, ne, *_ in sorted(tensors, key=lambda t: (layer(t[0]), t[0])):
    dims = len(ne)
    while dims > 1 and ne[dims - 1] == 1:
        dims -= 1
    cols = ne[0]
    quant = (dims >= 2 and name.endswith("weight") and not any(k in name for k in KEEP)
             and not (opt["leave"] and name == "output.weight"))
    if not quant:
        out.append((name, cur))
        continue
    is_out = name == "output.weight"
    is_embd = name == "token_embd.weight"
    if opt["embd"] is not None and is_embd:
        out.append((name, opt["embd"]))
        continue
    if opt["out"] is not None and is_out:
        out.append((name, opt["out"]))
        continue
    t = T[BASE[ftype]]
    manual = [ty for pat, ty in opt["tt"] if pat.search(name)]
    if manual:
        t = manual[0]
    elif not opt["pure"]:
        if is_out or (tied and is_embd):
            if ftype == "MXFP4_MOE":
                t = T["q8_0"]
            elif cols % block(t):
                t = T["q8_0"]
            elif ftype in LOWEST or ftype == "IQ3_XXS":
                t = T["q5_k"]
            elif t != T["q8_0"]:
                t = T["q6_k"]
        elif ftype == "MXFP4_MOE":  # experts (3 dimensions) MXFP4, the rest Q8_0
            t = T["mxfp4"] if dims > 2 else T["q8_0"]
        elif is_embd:
            if ftype in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
                t = T["q2_k"]
            elif ftype in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
                t = T["iq3_s"]
            elif ftype in ("TQ1_0", "TQ2_0", "Q2_0"):
                t = T["q4_k"]
        elif ftype in LOWEST:
            s_or_m = ftype in ("IQ2_S", "IQ2_M")
            if "attn_v.weight" in name:
                seen["v"] += 1
                t = T["q4_k"] if gqa >= 4 or experts >= 4 else T["iq3_s"] if s_or_m else T["q2_k"]
            elif "ffn_down" in name:
                i = seen["down"]
                seen["down"] += 1
                if i < n_layer // 8:
                    t = T["iq3_s"] if s_or_m else T["q2_k"]
            elif "attn_output.weight" in name:
                if ftype in ("IQ1_S", "IQ1_M"):
                    t = T["iq2_xxs"]
                elif s_or_m:
                    t = T["iq3_s"]
        elif "attn_v.weight" in name:
            i = seen["v"]
            seen["v"] += 1
            if ftype == "Q2_K":
                t = T["q4_k"] if gqa >= 4 else T["q3_k"]
            elif ftype == "Q2_K_S" and gqa >= 4:
                t = T["q4_k"]
            elif ftype == "IQ3_XXS":
                t = T["q4_k"] if gqa >= 4 else T["iq3_xxs"] if im else T["iq3_s"]
            elif ftype == "IQ3_XS" and gqa >= 4:
                t = T["q4_k"]
            elif ftype == "Q3_K_M":
                t = T["q5_k"] if i < 2 else T["q4_k"]
            elif ftype == "IQ4_XS" and gqa >= 4:
                t = T["q5_k"]
            elif ftype in ("Q4_K_M", "Q5_K_M") and more(i, n_v):
                t = T["q6_k"]
            elif ftype == "Q4_K_S" and i < 4:
                t = T["q5_k"]
        elif "ffn_down" in name:
            i = seen["down"]
            seen["down"] += 1
            if ftype == "Q2_K":
                t = T["q3_k"]
            elif ftype == "Q2_K_S":
                t = T["q4_k"] if i < n_layer // 8 else t
            elif ftype == "IQ3_XXS" and not im:
                t = T["q4_k"] if i < n_layer // 8 else T["q3_k"]
            elif ftype == "Q3_K_M":
                t = T["q5_k"] if i < n_layer // 16 else T["q4_k"]
            elif ftype == "Q4_K_M":
                t = T["q6_k"] if more(i, n_layer) else t
            elif ftype == "IQ4_XS" and i < n_layer // 8 and not im:
                t = T["q5_k"]
            elif ftype == "Q5_K_M" and more(i, n_layer):
                t = T["q6_k"]
            elif ftype == "Q4_K_S" and i < n_layer // 8:
                t = T["q5_k"]
            elif ftype == "Q4_0" and im and i < n_layer // 8:
                t = T["q4_1"]
        elif "attn_output.weight" in name:
            if ftype == "Q2_K":
                t = T["q3_k"]
            elif ftype == "IQ3_XXS":
                t = T["iq3_s"]
            elif ftype == "Q3_K_M":
                t = T["q4_k"]
        elif "attn_k.weight" in name or "attn_q.weight" in name:
            if ftype == "IQ3_XS":
                t = T["iq3_xxs"]
            elif ftype == "IQ3_XXS":
                t = T["iq2_s"]
        elif "ffn_gate" in name or "ffn_up" in name:
            kind = "gate" if "ffn_gate" in name else "up"
            i = seen[kind]
            seen[kind] += 1
            if ftype == "IQ3_XS" and n_layer // 8 <= i < 7 * n_layer // 8:
                t = T["iq3_xxs"]
    if cols % block(t) and block(t) <= 32:  # no smaller block to fall back to
        t = T["f16"]
    elif cols % block(t):
        fb = {T["q2_k"]: "q4_0", T["q3_k"]: "q4_0", T["q4_k"]: "q5_0", T["q5_k"]: "q5_1",
              T["q6_k"]: "q8_0", T["iq4_xs"]: "iq4_nl", T["iq2_xxs"]: "iq4_nl",
              T["iq2_xs"]: "iq4_nl", T["iq2_s"]: "iq4_nl", T["iq3_xxs"]: "iq4_nl",
              T["iq3_s"]: "iq4_nl", T["iq1_s"]: "iq4_nl", T["iq1_m"]: "iq4_nl",
              T["tq1_0"]: "q4_0", T["tq2_0"]: "q4_0", T["q2_0"]: "q4_0"}[t]
        t = T[fb] if cols % block(T[fb]) == 0 else T["f16"]
    out.append((name, t))
for name, t in out:
    print(name, t)
