"""FILE: a byte-level tokenizer.json for a 256-token model (tiny) that holds ten end-of-turn
names: bytes 10..255 are ids 0..245, then <|eot_id|> ... <|return|> are ids 246..255, each a
special token, no merges (tests of the end-of-generation list: test_batch.sh, test_serve_slots.sh)."""
import json, sys

bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
names = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
         "<EOT>", "<|eom_id|>", "<end_of_utterance>", "<|return|>"]
vocab = {chr(c): b - 10 for b, c in zip(bs, cs) if b >= 10}
added = [{"id": 246 + i, "content": s, "special": True} for i, s in enumerate(names)]
vocab.update({a["content"]: a["id"] for a in added})
json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": []},
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "decoder": {"type": "ByteLevel"}, "added_tokens": added}, open(sys.argv[1], "w"))
