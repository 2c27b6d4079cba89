"""The oracle of tests/test_kld.sh: llama-perplexity's files of
log-probabilities read as its source lays them out, without mkc's code.

  kld_oracle.py rows FILE IDS RUNS
      FILE's header and tokens are IDS (comma-separated, every chunk's), and
      each row of each chunk holds the log-probabilities that `mkc run --json
      --logprobs 20` gave for the same position (RUNS: each chunk's run, its
      JSON lines, chunks split by "--" lines; each chunk is a 3-token prompt
      and the run's continuation): the 20 within half a level (the file's
      rounding) and FLOAT, the top one at the top level, the padding zero.
      Both runs go a token a step (--ubatch 1, and --draft-max 0 for
      perplexity), so their logits are the same sums. FLOAT: the float
      rounding of the row's own arithmetic (an ulp of numbers near 5 is
      4.8e-7).
  kld_oracle.py stats BASE Q
      llama-perplexity's statistics of a model whose log-probabilities are
      Q's against the reference's in BASE (two files of one text), worked out
      from the two files: Q's decoded log-probabilities stand in for its
      logits (a softmax does not see the constant between them), so each
      value carries at most half a level of Q's rounding. Prints NAME VALUE
      lines.
"""
import json
import math
import struct
import sys


FLOAT = 1e-6


def read(path):
    buf = open(path, "rb").read()
    assert buf[:8] == b"_logits_", "no _logits_ at the start"
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", buf, 8)
    tokens = list(struct.unpack_from("<%di" % (n_ctx * n_chunk), buf, 20))
    nv = 2 * ((n_vocab + 1) // 2) + 4
    rows_per_chunk = n_ctx - 1 - n_ctx // 2
    at = 20 + 4 * n_ctx * n_chunk
    assert len(buf) == at + n_chunk * rows_per_chunk * nv * 2, "size"
    rows = []
    for r in range(n_chunk * rows_per_chunk):
        scale, lo = struct.unpack_from("<ff", buf, at)
        levels = struct.unpack_from("<%dH" % (nv - 4), buf, at + 8)
        rows.append((scale, lo, levels[:n_vocab], levels[n_vocab:]))
        at += nv * 2
    return n_ctx, n_vocab, n_chunk, tokens, rows


def log_probs(row):
    scale, lo, levels, _ = row
    return [scale * q + lo for q in levels]


def check_rows(path, ids, runs):
    n_ctx, n_vocab, n_chunk, tokens, rows = read(path)
    want_ids = [int(x) for x in ids.split(",")]
    fails = []
    if tokens != want_ids[: n_ctx * n_chunk] or n_ctx * n_chunk != len(want_ids):
        fails.append("tokens: %d of them, not the text's %d" % (len(tokens), len(want_ids)))
    per_chunk = n_ctx - 1 - n_ctx // 2
    chunks = [c for c in open(runs).read().split("--\n") if c.strip()]
    worst = 0.0
    for k, text in enumerate(chunks[:n_chunk]):
        steps = [json.loads(l) for l in text.splitlines() if '"top"' in l]
        for r in range(per_chunk):
            pos = n_ctx // 2 + r  # the row's logits are those after position pos
            step = steps[pos - 2]  # the run's token at pos + 1 came from the logits after pos
            row = rows[k * per_chunk + r]
            scale, lo, levels, pad = row
            lp = log_probs(row)
            if max(levels) != 65535 or any(pad):
                fails.append("chunk %d row %d: top level %d, padding %s" % (k + 1, r, max(levels), pad))
            for t in step["top"]:
                err = abs(lp[t["id"]] - t["logprob"])
                worst = max(worst, err - scale / 2)
                if err > scale / 2 + FLOAT:
                    fails.append("chunk %d row %d token %d: %.7f in the file, %.7f from run"
                                 % (k + 1, r, t["id"], lp[t["id"]], t["logprob"]))
    print("worst difference: %.2g past half a level" % worst)
    for f in fails[:5]:
        print(f)
    return 1 if fails else 0


def percentile(v, fraction):
    if fraction <= 0:
        return v[0]
    if fraction >= 1:
        return v[-1]
    p = fraction * (len(v) - 1)
    i = int(p)
    p -= i
    return (1 - p) * v[i] + p * v[min(i + 1, len(v) - 1)]


def median(v):
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2] + v[n // 2 - 1])


def stats(base_path, q_path):
    n_ctx, n_vocab, n_chunk, tokens, base = read(base_path)
    _, _, _, q_tokens, q = read(q_path)
    assert tokens == q_tokens, "two texts"
    per_chunk = n_ctx - 1 - n_ctx // 2
    nll, nll_base, klds, p_diffs, same = [], [], [], [], 0
    for i, (rb, rq) in enumerate(zip(base, q)):
        k, r = divmod(i, per_chunk)
        tok = tokens[k * n_ctx + n_ctx // 2 + r + 1]
        lb, lq = log_probs(rb), log_probs(rq)
        norm = math.log(sum(math.exp(x) for x in lq))  # Q's rows sum to 1 up to rounding
        lq = [x - norm for x in lq]
        nll.append(-lq[tok])
        nll_base.append(-lb[tok])
        klds.append(sum(math.exp(b) * (b - a) for a, b in zip(lq, lb) if b > -16))
        p_diffs.append(math.exp(lq[tok]) - math.exp(lb[tok]))
        same += max(range(n_vocab), key=lambda j: lq[j]) == max(range(n_vocab), key=lambda j: lb[j])
    n = len(nll)
    mean = lambda v: sum(v) / n
    out = {
        "ppl_q": math.exp(mean(nll)),
        "ppl_base": math.exp(mean(nll_base)),
        "kld_mean": mean(klds),
        "same_top": 100.0 * same / n,
        "dp_rms": 100.0 * math.sqrt(mean([d * d for d in p_diffs])),
        "dp_mean": 100.0 * mean(p_diffs),
    }
    out["half_level"] = max(r[0] for r in q) / 2  # the most Q's rounding moves a log-probability
    klds.sort()
    p_diffs.sort()
    out.update({"kld_max": klds[-1], "kld_median": median(klds), "kld_99": percentile(klds, 0.99),
                "kld_min": klds[0], "dp_median": 100.0 * median(p_diffs),
                "dp_95": 100.0 * percentile(p_diffs, 0.95)})
    for name, v in out.items():
        print(name, repr(v))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "rows":
        sys.exit(check_rows(*sys.argv[2:5]))
    sys.exit(stats(*sys.argv[2:4]))
