"""Writes the tokenizer parity goldens with HF `tokenizers` (tools/requirements.txt) as oracle.

  tests/fixtures/tokenizers/corpus.jsonl        one JSON string per line (tools/tokenizer_corpus.py)
  tests/fixtures/tokenizers/golden/<name>.hash  one line per corpus string: FNV-1a 64 (hex) of
      ids(add_special_tokens=False) | ids(True) | ids(True, encode_special_tokens=True)
      | decode(ids(True), skip_special_tokens=False) | decode(ids(True), skip_special_tokens=True)
      (ids as uint32 little-endian, each list ended by FF FF FF FF; strings as UTF-8 ended by FE)
  tests/fixtures/tokenizers/golden/<name>.ids.jsonl  the same values in clear for the first
      strings, so a failing test can show a readable diff.

Tokenizers: the tiny ones under tests/fixtures/tokenizers/tiny_*/ and the real ones in
../shared/assets/tokenizers (skipped when absent). Run from the repository root:
  python tools/make_tokenizer_goldens.py
"""
import json
import os
import sys

from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_corpus import build_corpus  # noqa: E402

FIX = "tests/fixtures/tokenizers"
SHARED = "../shared/assets/tokenizers"
REAL = ["qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"]
CLEAR = 100


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def record(tok, s):
    plain = tok.encode(s, add_special_tokens=False).ids
    special = tok.encode(s, add_special_tokens=True).ids
    tok.encode_special_tokens = True
    split = tok.encode(s, add_special_tokens=True).ids
    tok.encode_special_tokens = False
    dec = tok.decode(special, skip_special_tokens=False)
    dec_skip = tok.decode(special, skip_special_tokens=True)
    return plain, special, split, dec, dec_skip


def digest(rec):
    buf = bytearray()
    for ids in rec[:3]:
        for i in ids:
            buf += i.to_bytes(4, "little")
        buf += b"\xff\xff\xff\xff"
    for s in rec[3:]:
        buf += s.encode("utf-8") + b"\xfe"
    return "%016x" % fnv1a(buf)


def main():
    corpus = build_corpus()
    with open(os.path.join(FIX, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for s in corpus:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    paths = {n: os.path.join(FIX, n, "tokenizer.json") for n in sorted(os.listdir(FIX)) if n.startswith("tiny_")}
    for n in REAL:
        p = os.path.join(SHARED, n, "tokenizer.json")
        if os.path.exists(p):
            paths[n] = p
    os.makedirs(os.path.join(FIX, "golden"), exist_ok=True)
    for name, path in paths.items():
        tok = Tokenizer.from_file(path)
        hashes, clear = [], []
        for i, s in enumerate(corpus):
            rec = record(tok, s)
            hashes.append(digest(rec))
            if i < CLEAR:
                clear.append(json.dumps({"ids": rec[0], "ids_special": rec[1], "ids_split_special": rec[2],
                                         "decode": rec[3], "decode_skip": rec[4]}, ensure_ascii=False))
        with open(os.path.join(FIX, "golden", name + ".hash"), "w") as f:
            f.write("\n".join(hashes) + "\n")
        with open(os.path.join(FIX, "golden", name + ".ids.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(clear) + "\n")
        print(name, len(hashes))


if __name__ == "__main__":
    main()
