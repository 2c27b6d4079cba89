#!/usr/bin/env python3
"""Hugging Face transformers' greedy continuation of a prompt of token ids on
a model folder, in float32 with eager attention: each step's id and
log-probability, and the runner-up's (the format tests/data/gemma3_*.txt and
tools/llamacpp_greedy.c share).

    python3 tools/hf_greedy.py DIR STEPS ID...
"""
import sys

import torch
import transformers


def main():
    folder, steps = sys.argv[1], int(sys.argv[2])
    ids = [int(x) for x in sys.argv[3:]]
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    print(f"{type(model).__name__}, transformers {transformers.__version__}", file=sys.stderr)
    with torch.no_grad():
        for _ in range(steps):
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1)
            first, second = torch.topk(logp, 2).indices.tolist()
            print(f"{first} {logp[first].item():.6f} {second} {logp[second].item():.6f}")
            ids.append(first)


if __name__ == "__main__":
    main()
