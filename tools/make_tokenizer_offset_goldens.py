"""Writes the token-offset parity goldens with HF `tokenizers` (tools/requirements.txt) as oracle.

For a selection of ~450 corpus strings (tests/fixtures/tokenizers/corpus.jsonl) that favours
non-ASCII text, whitespace runs, special-token text and strings NFKC changes, and each tokenizer
(the tiny ones under tests/fixtures/tokenizers/tiny_*/ and the real ones in
../shared/assets/tokenizers, skipped when absent):

  tests/fixtures/tokenizers/offsets/<name>.hash   one line per selected string:
      "<corpus index> <FNV-1a 64 hex>" of ids | offsets with add_special_tokens=False, then the
      same with add_special_tokens=True (uint32 little-endian, each list ended by FF FF FF FF;
      offsets as begin, end pairs)
  tests/fixtures/tokenizers/offsets/<name>.clear.jsonl  the same values in clear for the first
      selected strings, so a failing test shows a readable diff.

Extra strings (tests/fixtures/tokenizers/offsets/extra_strings.jsonl, written here) add the
alignment corner cases the corpus lacks (combining-mark reordering, long compatibility
decompositions, Hangul jamo, multi-character lowercase); their index is len(corpus) + k.

Variants (tests/fixtures/tokenizers/offsets/variants.json, written here): a tiny tokenizer with
its post_processor replaced, so that ByteLevel / RobertaProcessing trim_offsets=true (which no
committed tokenizer uses) is covered; the C++ test applies the same replacement.

HF's Encoding.offsets count characters of the Python str; the goldens convert them to UTF-8
byte offsets (what sft's Tokenizer::encode_with_offsets returns). Run from the repository root:
  ~/.venv-sft/bin/python tools/make_tokenizer_offset_goldens.py
"""
import json
import os
import unicodedata

from tokenizers import Tokenizer

FIX = "tests/fixtures/tokenizers"
SHARED = "../shared/assets/tokenizers"
REAL = ["qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"]
OUT = os.path.join(FIX, "offsets")
MAX_CHARS = 300
INTERESTING = 400
PLAIN = 50
CLEAR = 30
EXTRA = ["\u0301abc", "a\u0301\u0316x", "\u0316\u0301", "x\u0344y", "\uFDFA!", "İİ i̇", "  \u00a0x  ",
         "\u1100\u1161\u11a8 가각", "\u212b\u00c5A\u030a", "\u0F73\u0F75 \u0F81", "ẞß Σσς ΣΑΣ", "ﬁﬂﬃ ㎏①²½Ⅻ",
         "e\u0301\u0301\u0301", "\u0958\u0959", "a\u0308\u0301\u0323b", "\u1E0A\u0323", "q\u0307\u0323",
         "\u00C7\u0301", " \u0301", "\t\u0301 x", "１２３４５６", "  12345  ", "Hello World", "<sep> x <sep>",
         "[mask] y", "a[mask]b", "ǅ ǆ Ǆ", "\u0130\u0307", "ΐ ΰ", "\u3000\u3000x", "\U0001D400\U0001D401", "ｶﾞｷﾞ ﾊﾟ",
         "x\u200by", "a\r\nb", "😀\u0301", "\u0345\u0313\u03b1", "a <mask> b<eos>  c dog", "  Ｈｅｌｌｏ 12345 World x "]
BYTE_LEVEL_TRIM = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
VARIANTS = {
    "tiny_gpt2_trim": {"base": "tiny_gpt2", "post_processor": BYTE_LEVEL_TRIM},
    "tiny_qwen_trim": {"base": "tiny_qwen", "post_processor": dict(BYTE_LEVEL_TRIM, add_prefix_space=False)},
    "tiny_llama3_roberta": {"base": "tiny_llama3", "post_processor": {
        "type": "RobertaProcessing", "sep": ["<|eot_id|>", 1], "cls": ["<|begin_of_text|>", 0],
        "trim_offsets": True, "add_prefix_space": True}},
}


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def interesting(s):
    return (any(ord(c) > 127 for c in s) or "  " in s or "\t" in s or "\n" in s or "<" in s
            or unicodedata.normalize("NFKC", s) != s or s != s.strip())


def select(corpus):
    """Evenly spread picks: INTERESTING strings of the kinds above, PLAIN others."""
    short = [i for i, s in enumerate(corpus) if len(s) <= MAX_CHARS]
    rich = [i for i in short if interesting(corpus[i])]
    plain = [i for i in short if not interesting(corpus[i])]

    def spread(pool, n):
        if len(pool) <= n:
            return pool
        return [pool[k * len(pool) // n] for k in range(n)]

    return sorted(set(spread(rich, INTERESTING) + spread(plain, PLAIN)))


def byte_offsets(s, offsets):
    pos = [0]
    for c in s:
        pos.append(pos[-1] + len(c.encode("utf-8")))
    return [(pos[b], pos[e]) for b, e in offsets]


def record(tok, s):
    out = []
    for special in (False, True):
        enc = tok.encode(s, add_special_tokens=special)
        out.append((enc.ids, byte_offsets(s, enc.offsets)))
    return out


def digest(rec):
    buf = bytearray()
    for ids, offsets in rec:
        for i in ids:
            buf += i.to_bytes(4, "little")
        buf += b"\xff\xff\xff\xff"
        for b, e in offsets:
            buf += b.to_bytes(4, "little") + e.to_bytes(4, "little")
        buf += b"\xff\xff\xff\xff"
    return "%016x" % fnv1a(buf)


def main():
    with open(os.path.join(FIX, "corpus.jsonl"), encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f]
    picks = select(corpus) + [len(corpus) + k for k in range(len(EXTRA))]
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "extra_strings.jsonl"), "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in EXTRA))
    corpus = corpus + EXTRA
    paths = {n: os.path.join(FIX, n, "tokenizer.json") for n in sorted(os.listdir(FIX)) if n.startswith("tiny_")}
    for n in REAL:
        p = os.path.join(SHARED, n, "tokenizer.json")
        if os.path.exists(p):
            paths[n] = p
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "variants.json"), "w") as f:
        json.dump(VARIANTS, f, indent=1)
        f.write("\n")
    for name, v in VARIANTS.items():
        paths[name] = v
    for name, path in paths.items():
        if isinstance(path, dict):
            with open(os.path.join(FIX, path["base"], "tokenizer.json"), encoding="utf-8") as f:
                spec = json.load(f)
            spec["post_processor"] = path["post_processor"]
            tok = Tokenizer.from_str(json.dumps(spec))
        else:
            tok = Tokenizer.from_file(path)
        hashes, clear = [], []
        for k, i in enumerate(picks):
            rec = record(tok, corpus[i])
            hashes.append("%d %s" % (i, digest(rec)))
            if k < CLEAR:
                clear.append(json.dumps({"index": i, "ids": rec[0][0], "offsets": rec[0][1],
                                         "ids_special": rec[1][0], "offsets_special": rec[1][1]}))
        with open(os.path.join(OUT, name + ".hash"), "w") as f:
            f.write("\n".join(hashes) + "\n")
        with open(os.path.join(OUT, name + ".clear.jsonl"), "w") as f:
            f.write("\n".join(clear) + "\n")
        print(name, len(hashes))


if __name__ == "__main__":
    main()
