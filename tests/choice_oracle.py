"""The oracle of tests/test_choice.sh: llama-perplexity's HellaSwag and
Winogrande scores worked out without mkc's scorer.

  choice_oracle.py hellaswag|winogrande|multiple DATASET TASKS MKC MODEL
      prints the lines `mkc perplexity --hellaswag` (--winogrande,
      --multiple-choice) should print for TASKS tasks of DATASET (0: all),
      then a last line "tolerance T": Winogrande's printed scores may differ
      from these by T.
  choice_oracle.py write-mc FILE
      writes a small --multiple-choice file (llama.cpp's binary layout).

Each candidate text is tokenized by `mkc tokenize`; the tasks are chosen as
llama-perplexity chooses them, with Python's own Mersenne Twister (its
state set to std::mt19937's for seed 1) and libstdc++'s uniform draw or
Winogrande's float scaling; a candidate's token log-probabilities come
from `mkc perplexity --kl-divergence-base` (a plain chunked run, checked
against `mkc run` by test_kld.sh) over the candidate's first `to` tokens
laid twice, so its scored half holds the span. Both go a token a step
(--ubatch 1 --draft-max 0), so the logits are the same sums, and a
log-probability read from the file is within half a level of the run's.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

FLAGS = ["--backend", "cpu", "--ubatch", "1", "--draft-max", "0"]


def mt19937(seed):
    state = [seed]
    for i in range(1, 624):
        state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + i) & 0xFFFFFFFF)
    r = random.Random()
    r.setstate((3, tuple(state + [624]), None))
    return lambda: r.getrandbits(32)


def uniform(draw, hi):  # libstdc++'s uniform_int_distribution<size_t>(0, hi)
    rng = hi + 1
    product = draw() * rng
    low = product & 0xFFFFFFFF
    if low < rng:
        threshold = ((1 << 32) - rng) % rng
        while low < threshold:
            product = draw() * rng
            low = product & 0xFFFFFFFF
    return product >> 32


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def tokens(mkc, model, text):
    out = subprocess.run([mkc, "tokenize", "-m", model, "-p", text, "--ids", "--no-parse-special"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def log_probs(mkc, model, ids, to, tmp):
    """The log-probabilities of ids[j] for j in [to // 2 + 1, to), and the file's largest half
    level: a perplexity run over ids[:to] twice with -c to scores exactly those."""
    path = os.path.join(tmp, "c.kld")
    text = ",".join(map(str, ids[:to] * 2))
    subprocess.run([mkc, "perplexity", "-m", model, "--prompt-ids", text, "-c", str(to),
                    "--kl-divergence-base", path] + FLAGS, capture_output=True, check=True)
    buf = open(path, "rb").read()
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", buf, 8)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    at = 20 + 4 * n_ctx * n_chunk
    lp, half = {}, 0.0
    for r in range(n_ctx - 1 - n_ctx // 2):  # chunk 0's rows
        scale, lo = struct.unpack_from("<ff", buf, at)
        j = n_ctx // 2 + r + 1
        level = struct.unpack_from("<H", buf, at + 8 + 2 * ids[j])[0]
        lp[j] = scale * level + lo
        half = max(half, scale / 2)
        at += nv * 2
    return lp, half


def mean(mkc, model, ids, frm, to, tmp):
    if to <= frm:
        return float("nan"), 0.0
    assert to <= 2 * (frm - 1), "the span is longer than its start: the oracle cannot read it"
    lp, half = log_probs(mkc, model, ids, to, tmp)
    return sum(lp[j] for j in range(frm, to)) / (to - frm), half


def shared(seqs):
    p = 0
    while all(p < len(s) - 1 and s[p] == seqs[0][p] for s in seqs):
        p += 1
    return p


def hellaswag(path, count, mkc, model, tmp):
    lines = open(path).read().split("\n")
    if lines[-1] == "":
        lines.pop()
    tasks = [lines[6 * t:6 * t + 6] for t in range(len(lines) // 6)]
    count = min(count, len(tasks))
    draw = mt19937(1)
    out = ["", "task\tacc_norm\t95% confidence interval"]
    correct = 0
    for i in range(count):
        t = tasks.pop(uniform(draw, len(tasks) - 1))
        seqs = [tokens(mkc, model, t[0] + " " + e) for e in t[2:6]]
        p = shared(seqs)
        scored = [mean(mkc, model, s, p, len(s), tmp) for s in seqs]
        means, half = [m for m, _ in scored], max(h for _, h in scored)
        order = sorted(means, reverse=True)
        assert order[0] - order[1] > 2 * half + 1e-6, "a near tie: the oracle cannot tell the answer"
        correct += means.index(order[0]) == int(t[1])
        n = i + 1
        freq, za = correct / n, 1.95996398454
        z = za * za / n
        cnf = z * math.sqrt(n * (4 * freq * (1 - freq) + z)) / (za + za)
        a, b = (freq + z * 0.5 - cnf) / (1 + z), (freq + z * 0.5 + cnf) / (1 + z)
        out.append("%d\t%3.8f%%\t[%3.4f%%, %3.4f%%]" % (n, freq * 100, a * 100, b * 100))
    out += ["", "tolerance 0"]
    print("\n".join(out))


def split_csv(line):
    commas, quoted = [], False
    for i, ch in enumerate(line):
        if quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch == ",":
            commas.append(i)
            if len(commas) == 4:
                break
    if len(commas) < 4:
        return None
    sentence = line[commas[0] + 1:commas[1]]
    if sentence.startswith('"') and sentence.endswith('"') and len(sentence) >= 2:
        sentence = sentence[1:-1]
    if "_" not in sentence:
        return None
    try:
        answer = int(line[commas[3] + 1:].strip())
    except ValueError:
        return None
    if answer not in (1, 2):
        return None
    first, second = sentence.split("_", 1)
    return first, second, line[commas[1] + 1:commas[2]], line[commas[2] + 1:commas[3]], answer


def winogrande(path, count, mkc, model, tmp):
    tasks = [t for t in map(split_csv, open(path).read().splitlines()) if t]
    if 0 < count < len(tasks):
        tasks = [tasks[i] for i in pick(len(tasks), count)]
    out, correct, tol = [], 0, 0.0
    for i, (first, second, c1, c2, answer) in enumerate(tasks):
        seqs = [tokens(mkc, model, first + c + second) for c in (c1, c2)]
        bases = [len(tokens(mkc, model, first + c)) for c in (c1, c2)]
        p = shared(seqs)
        skip = len(seqs[0]) - p > 3 and len(seqs[1]) - p > 3
        scores = []
        for s, base in zip(seqs, bases):
            frm = max(base if skip else p, p)
            to = len(s) - (1 if len(s) - frm > 1 else 0)
            m, half = mean(mkc, model, s, frm, to, tmp)
            scores.append(m)
            tol = max(tol, half)
        result = 1 if scores[0] > scores[1] else 2
        assert abs(scores[0] - scores[1]) > 2 * tol + 1e-5, "a near tie: the oracle cannot tell"
        correct += result == answer
        out.append("%d\t%.4f\t%10.6f  %10.6f  %d  %d" % (i + 1, 100.0 * correct / (i + 1),
                                                          scores[0], scores[1], result, answer))
    out += ["", "tolerance %.3g" % (tol + 1e-6)]
    print("\n".join(out))


def pick(n, count):  # Winogrande's and --multiple-choice's draws: float scaling of the raw draw
    draw, left, chosen = mt19937(1), list(range(n)), []
    scale = f32(1 / f32(1 + 4294967295.0))
    for i in range(count):
        size = len(left)
        j = min(int(f32(f32(scale * f32(draw())) * size)), size - 1)
        chosen.append(left[j])
        left[j] = left[-1]
        left.pop()
    return chosen


def mc_tasks(path):
    buf = open(path, "rb").read()
    n = struct.unpack_from("<I", buf, 0)[0]
    positions = struct.unpack_from("<%dI" % n, buf, 4)

    def string(at):
        size = struct.unpack_from("<I", buf, at)[0]
        return buf[at + 4:at + 4 + size].decode(), at + 4 + size

    def answers(at):
        k = struct.unpack_from("<I", buf, at)[0]
        at += 4
        out = []
        for _ in range(k):
            a, at = string(at)
            out.append(a)
        return out, list(struct.unpack_from("<%di" % k, buf, at)), at + 4 * k

    tasks = []
    for p in positions:
        q, at = string(p)
        mc1, labels, at = answers(at)
        tasks.append((q, mc1, labels))
    return tasks


def multiple(path, count, mkc, model, tmp):
    tasks = mc_tasks(path)
    if 0 < count < len(tasks):
        tasks = [tasks[i] for i in pick(len(tasks), count)]
    out, correct, n_answers = ["", "task\tacc_norm"], 0, 0
    for i, (q, answers, labels) in enumerate(tasks):
        seqs = [tokens(mkc, model, q + " " + a) for a in answers]
        p = shared(seqs)
        scored = [mean(mkc, model, s, p, len(s), tmp) for s in seqs]
        means, half = [m for m, _ in scored], max(h for _, h in scored)
        order = sorted(means, reverse=True)
        assert len(order) == 1 or order[0] - order[1] > 2 * half + 1e-6, "a near tie: the oracle cannot tell"
        correct += labels[means.index(order[0])] == 1
        n_answers += len(answers)
        out.append("%d\t%.8f" % (i + 1, 100.0 * correct / (i + 1)))
    done = len(tasks)
    p, chance = correct / done, done / n_answers
    out += ["", "Final result: %.4f +/- %.4f" % (100 * p, 100 * math.sqrt(p * (1 - p) / (done - 1))),
            "Random chance: %.4f +/- %.4f" % (100 * chance, 100 * math.sqrt(chance * (1 - chance) / (done - 1)))]
    out.append("tolerance 0")
    print("\n".join(out))


def write_mc(path):
    r = random.Random(4)
    words = "the a man woman dog cat ball house street river tree car book window garden".split()
    verbs = "runs jumps sits looks walks opens reads throws holds finds".split()

    def string(s):
        b = s.encode()
        return struct.pack("<I", len(b)) + b

    def answers(k):
        texts = [" ".join(r.choice(words + verbs) for _ in range(r.randrange(1, 4))) for _ in range(k)]
        right = r.randrange(k)
        return struct.pack("<I", k) + b"".join(map(string, texts)) + struct.pack("<%di" % k, *[int(i == right) for i in range(k)])

    blobs = []
    for t in range(7):
        question = "Question %d: " % t + " ".join(r.choice(words + verbs) for _ in range(14)) + "?"
        blobs.append(string(question) + answers(r.randrange(2, 6)) + answers(2))
    head = 4 + 4 * len(blobs)
    positions, at = [], head
    for b in blobs:
        positions.append(at)
        at += len(b)
    open(path, "wb").write(struct.pack("<I", len(blobs)) + struct.pack("<%dI" % len(blobs), *positions) + b"".join(blobs))


if __name__ == "__main__":
    if sys.argv[1] == "write-mc":
        write_mc(sys.argv[2])
        sys.exit(0)
    kind, path, count, mkc, model = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as tmp:
        {"hellaswag": hellaswag, "winogrande": winogrande, "multiple": multiple}[kind](
            path, int(count), mkc, model, tmp)
