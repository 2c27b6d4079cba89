#!/usr/bin/env python3
"""Writes tests/data/pretokenize_fixtures.jsonl: how Hugging Face tokenizers'
Split pre-tokenizer (behavior "isolated", the one byte-level tokenizer.json
files use) cuts random texts with the GPT-2, Llama 3, Qwen2, Tekken and
GPT-4o patterns, one JSON object a line: {"pre": NAME, "text": T, "pieces": [...]}.
test_tokenizer checks runtime/tokenizer/pretokenize.c against every line.

  pip install tokenizers==0.23.3 regex
  python3 tools/pretokenize_fixtures.py > tests/data/pretokenize_fixtures.jsonl

The texts mix ASCII that the patterns treat specially (contractions, spaces,
CR, LF, '/', digits) with characters of each general category that matters
(cased and uncased letters, marks, numbers, spaces, punctuation, symbols,
format characters), drawn from Python's unicodedata so that mkc's tables
(the same Unicode version, tools/gen_unicode_tables.py) agree on them. Each
split is also checked against Python's `regex` module, a second engine."""
import json
import random
import sys
import unicodedata

import regex
from tokenizers import Regex, pre_tokenizers

PATTERNS = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "tekken": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "gpt4o": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
CASES = 400  # per pattern

ASCII = list("aZ bY09 '\"/\n\r\t!?.,-_sStTlLdD") + [" ", "  ", "\n", "/", "\r\n", "'s", "'LL", "'ve"]


def category_samples():
    by_cat = {}
    for cp in range(0x80, 0x30000):
        by_cat.setdefault(unicodedata.category(chr(cp)), []).append(chr(cp))
    out = []
    for cat in ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Zs", "Po", "Sm",
                "So", "Pd", "Cf"]:
        out += random.Random(cat).sample(by_cat[cat], min(40, len(by_cat[cat])))
    return out + ["\u017f", "\u00a0", "\u2028", "\u0085", "\u3000", "\u0130", "\u01c5"]


def isolated(pattern, text):
    """The pieces of text under Split(behavior="isolated"), with `regex`."""
    pieces, at = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > at:
            pieces.append(text[at:m.start()])
        if m.end() > m.start():
            pieces.append(m.group(0))
        at = m.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces


def main():
    extra = category_samples()
    rng = random.Random(2026)
    for name, pattern in PATTERNS.items():
        split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
        for _ in range(CASES):
            n = rng.randint(1, 20)
            text = "".join(rng.choice(ASCII) if rng.random() < 0.6 else rng.choice(extra)
                           for _ in range(n))
            pieces = [p for p, _ in split.pre_tokenize_str(text)]
            if pieces != isolated(pattern, text):
                sys.exit(f"{name}: tokenizers and regex disagree on {text!r}")
            print(json.dumps({"pre": name, "text": text, "pieces": pieces}, ensure_ascii=False))


main()
