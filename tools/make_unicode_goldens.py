"""Writes the Unicode coverage goldens with HF `tokenizers` (tools/requirements.txt) as oracle:
every code point HF's regexes know as assigned, through every real tokenizer.

  tests/fixtures/tokenizers/unicode/codepoints.txt  the corpus: inclusive hex ranges
      "first last" of the code points HF assigns (general category not Cn; surrogates and
      private use left out), ascending. Each code point c gives three strings:
      c, "a" + c + "1", c + " " + c.
  tests/fixtures/tokenizers/unicode/<name>.hash  one line per group of GROUP consecutive corpus
      code points: FNV-1a 64 (hex) over, for each code point and each of its three strings,
      the ids of encode(s, add_special_tokens=False) as uint32 little-endian, ended by
      FF FF FF FF.

Tokenizers: the real ones in ../shared/assets/tokenizers (the tiny ones share their code
paths and are covered by the main goldens). Run from the repository root:
  python tools/make_unicode_goldens.py            # write the goldens
  python tools/make_unicode_goldens.py 1FAAF ...  # print HF's ids for these code points
"""
import os
import sys

from tokenizers import Regex, Tokenizer, pre_tokenizers

FIX = "tests/fixtures/tokenizers/unicode"
SHARED = "../shared/assets/tokenizers"
REAL = ["qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"]
GROUP = 32


def fnv1a(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def strings_of(c):
    ch = chr(c)
    return [ch, "a" + ch + "1", ch + " " + ch]


def assigned_code_points():
    """Code points whose general category is not Cn to HF's regex engine, minus Cs and Co."""
    cps = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]
    text = "".join(map(chr, cps))
    split = pre_tokenizers.Split(Regex("[\\p{Cn}\\p{Co}]"), "removed")
    kept = bytearray(len(text))
    for _, (b, e) in split.pre_tokenize_str(text):
        kept[b:e] = b"\x01" * (e - b)
    return [cps[i] for i in range(len(cps)) if kept[i]]


def ranges_of(cps):
    out = []
    for c in cps:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def group_hashes(tok, cps):
    strings = [s for c in cps for s in strings_of(c)]
    encodings = tok.encode_batch(strings, add_special_tokens=False)
    hashes = []
    per_group = 3 * GROUP
    for g in range(0, len(encodings), per_group):
        buf = bytearray()
        for enc in encodings[g:g + per_group]:
            for i in enc.ids:
                buf += i.to_bytes(4, "little")
            buf += b"\xff\xff\xff\xff"
        hashes.append("%016x" % fnv1a(buf))
    return hashes


def tokenizers():
    out = {}
    for n in REAL:
        p = os.path.join(SHARED, n, "tokenizer.json")
        if os.path.exists(p):
            out[n] = Tokenizer.from_file(p)
    return out


def show(code_points):
    for name, tok in tokenizers().items():
        for c in code_points:
            print(name, "U+%04X" % c, [tok.encode(s, add_special_tokens=False).ids for s in strings_of(c)])


def main():
    if len(sys.argv) > 1:
        return show([int(a, 16) for a in sys.argv[1:]])
    cps = assigned_code_points()
    os.makedirs(FIX, exist_ok=True)
    with open(os.path.join(FIX, "codepoints.txt"), "w") as f:
        f.write("# Code points HF tokenizers 0.23 assigns (not Cn, Cs, Co): inclusive hex ranges.\n")
        f.write("# Written by tools/make_unicode_goldens.py; %d code points.\n" % len(cps))
        for a, b in ranges_of(cps):
            f.write("%X %X\n" % (a, b))
    for name, tok in tokenizers().items():
        hashes = group_hashes(tok, cps)
        with open(os.path.join(FIX, name + ".hash"), "w") as f:
            f.write("\n".join(hashes) + "\n")
        print(name, len(cps), "code points,", len(hashes), "groups")


if __name__ == "__main__":
    main()
