#!/usr/bin/env python3
"""What `mkc run -i` must print, worked out without it (tests/test_interactive.sh).

The protocol is llama-completion's interactive mode, followed here step by
step: the prompt, then turns. The user's turn prints the prefix, takes the next
input (none left: the run ends) and, unless it is empty, prints the suffix and
adds BOS (--in-prefix-bos), prefix, input and suffix, each tokenized alone by
`mkc tokenize` (the input's control-token spellings as text). The model's turn
is plain `mkc run --prompt-ids HISTORY --json` runs, one per span of the
context: its tokens up to an end-of-generation token (kept in the history,
unprinted, then a newline and the first reverse prompt's tokens), the token
that completes a reverse prompt, or -n tokens; it has no turn when the text just read (the
prompt, an input) ends in a reverse prompt: the user's turn comes again. A full context ends
the run, or
with --context-shift drops the older half of the history after --keep's tokens
(llama.cpp's n_discard), and the next span is a fresh run of what is left.

usage: interactive_oracle.py SPEC.json; SPEC: {"mkc", "model", "ctx", "n",
"prompt", "prefix", "suffix", "bos", "first", "reverse": [...], "shift",
"keep", "args": [...], "inputs": [...]}. Prints the expected stdout, and on stderr the
shifts made.
"""
import json
import subprocess
import sys

EOG_TEXTS = {"<|im_end|>", "<|endoftext|>"}  # SmolLM2's end-of-generation tokens


def main():
    spec = json.load(open(sys.argv[1]))
    mkc, model, ctx, n = spec["mkc"], spec["model"], spec["ctx"], spec["n"]

    def tokenize(text, bos=False, special=True):
        args = [mkc, "tokenize", "-m", model, "--ids", "--no-escape", "-p", text]
        if not bos:
            args.append("--no-bos")
        if not special:
            args.append("--no-parse-special")
        return json.loads(subprocess.check_output(args))

    def run(hist, count):
        args = [mkc, "run", "-m", model, "--backend", "cpu", "--ctx", str(ctx), "--json",
                "--prompt-ids", ",".join(map(str, hist)), "-n", str(count)] + spec.get("args", [])
        lines = subprocess.check_output(args, stderr=subprocess.DEVNULL).decode().splitlines()
        return [json.loads(l) for l in lines if l.startswith('{"id"')]

    shifts = [0]

    def shift(hist):  # exec/context_shift.c's rule, written again
        shifts[0] += 1
        cached = len(hist) - 1
        keep = min(spec.get("keep", 0), cached - 2)
        if keep < 0:
            return None
        left = cached - keep
        discard = min(left // 2, left - 1)
        return hist[:keep] + hist[keep + discard:] if discard >= 1 else None

    hist = tokenize(spec["prompt"], bos=True) if spec["prompt"] else []
    out = spec["prompt"]
    seen = out  # the whole text read, what is not printed too
    reverse = spec.get("reverse", [])
    inputs = list(spec["inputs"])
    user, fresh = spec.get("first", False) or not hist, bool(hist)
    while True:
        if user:
            out += spec.get("prefix", "")
            if not inputs:
                break
            text = inputs.pop(0)
            fresh = bool(text)
            if text:
                out += spec.get("suffix", "")
                seen += spec.get("prefix", "") + text + spec.get("suffix", "")
                if spec.get("bos"):
                    hist += tokenize("", bos=True)
                hist += tokenize(spec.get("prefix", ""))
                hist += tokenize(text, special=False)
                hist += tokenize(spec.get("suffix", ""))
        user = True
        if not hist:
            continue
        # what was just read ends in a reverse prompt: the user's turn again
        if fresh and any(seen.endswith(r) for r in reverse):
            continue
        fresh = False
        # the model's turn, span by span
        got, said, ended, full = 0, "", None, False
        while True:
            while len(hist) > ctx and spec.get("shift"):
                hist = shift(hist)
            room = ctx + 1 - len(hist)
            if room < 1:
                full = True
                break
            want = min(n - got, room) if n >= 0 else room
            for tok in run(hist, want):
                hist.append(tok["id"])
                got += 1
                seen += tok["text"]
                if tok["text"] in EOG_TEXTS:
                    ended = "eog"
                    break
                out += tok["text"]
                said += tok["text"]
                if any(r in said for r in reverse):
                    ended = "reverse"
                    break
            if ended or (n >= 0 and got >= n):
                break
            if not spec.get("shift"):
                full = True
                break
            hist = shift(hist)
            if hist is None:
                full = True
                break
        if full:
            break
        if ended == "eog":
            if reverse:
                hist += tokenize(reverse[0])
                seen += reverse[0]
            out += "\n"
    sys.stdout.write(out + "\n")
    sys.stderr.write("shifts %d\n" % shifts[0])


main()
