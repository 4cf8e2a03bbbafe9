"""The parity corpus for the tokenizer goldens: >= 10,000 strings by category plus >= 2,000
random strings from a seeded generator mixing all categories. Deterministic (seeded)."""
import random

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "It's a truth universally acknowledged that a single man in possession of a good fortune must be in want of a wife.",
    "We'll see; they'd said they're sure it'll work, but I'm not, and you've been warned.",
    "DON'T SHOUT! He said: \"I'LL BE BACK\" and she'd laugh.",
    "Supervised fine-tuning (SFT) adapts a pretrained language model to follow instructions.",
    "In 1969, Apollo 11 landed on the Moon; 600 million people watched.",
    "Call me at +1 (555) 010-9999 or e-mail jane.doe@example.com before 5:30pm.",
    "Mr. O'Neil's dog's bone isn't there -- it's gone... or is it?",
    "  leading spaces, trailing spaces   ",
    "\tTabbed\tcolumns\tand\nnewlines\r\nwith CRLF\r\n",
]
CODE = [
    "def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
    "const x = await fetch(`https://api.example.com/v1/items?id=${id}&q=foo`);\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }\n",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "if __name__ == '__main__':\n        main()\n\n\n",
    "fn main() { let s: &str = \"héllo\"; println!(\"{s:?}\"); }",
    "    \n        \n    x = [i for i in range(10) if i % 2 == 0]",
    "<div class=\"a\"><p>Hello &amp; welcome</p></div>",
    "$ ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1",
]
JSON = [
    '{"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"x": null, "y": true}}',
    '[{"id":1,"v":3.14159},{"id":2,"v":-2.5e-10}]',
    '{"messages": [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello."}]}',
    '{"unicode": "\\u00e9\\u4e2d", "emoji": "😀", "escaped": "line\\nbreak"}',
]
MARKDOWN = [
    "# Title\n\n## Section 1\n\n- item one\n- item **two**\n  - nested _three_\n\n```python\nx = 1\n```\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n\n1. first\n2. second\n",
    "[link](https://example.com) and ![img](a.png) and `inline code` ~~strike~~",
]
CJK = ["你好，世界！今天天气很好。", "我们在学习机器学习和自然语言处理。", "日本語のテキストです。ひらがなとカタカナ、漢字。",
       "東京タワーは333メートルです。", "한국어 문장입니다. 안녕하세요!", "中文、日本語、한국어が混在する文。"]
ARABIC = ["مرحبا بالعالم", "اللغة العربية جميلة جداً.", "السلام عليكم ورحمة الله ١٢٣"]
HINDI = ["नमस्ते दुनिया", "हिन्दी भाषा भारत में बोली जाती है।", "क्षत्रिय ज्ञान श्री"]
THAI = ["สวัสดีชาวโลก", "ภาษาไทยไม่มีช่องว่างระหว่างคำ", "กรุงเทพมหานคร"]
CYRILLIC = ["Привет, мир!", "Съешь же ещё этих мягких французских булок, да выпей чаю.", "ЁЖИК в тумане"]
OTHER = ["Γειά σου Κόσμε", "שלום עולם", "Tiếng Việt có dấu", "Ελληνικά ΑΒΓ", "Ünïcödé naïve café résumé",
         "Straße ß ẞ", "İstanbul ıi", "ﬁ ﬂ ﬃ ㎏ ① ² ½ Ⅻ", "Ａｂｃ１２３！", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝓜𝓪𝓽𝓱"]
EMOJI = ["😀😃😄", "👍🏻👍🏼👍🏽👍🏾👍🏿", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "👩🏽‍💻 coder", "❤️‍🔥", "🇺🇸🇯🇵🇫🇷",
         "1️⃣ #️⃣", "🧑‍🤝‍🧑", "emoji😀in😀text"]
COMBINING = ["e\u0301", "a\u0300\u0301\u0302", "Z\u0351\u0352\u0353\u0354", "n\u0303o\u0308", "\u0915\u094d\u0937",
             "Ç vs C\u0327", "\u1100\u1161\u11a8", "o\u0338", "\u212b vs \u00c5 vs A\u030a"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|begin_of_text|>",
            "<|eot_id|>", "<|start_header_id|>", "<s>", "</s>", "<unk>", "<pad>", "<bos>", "<eos>", "<start_of_turn>",
            "<end_of_turn>", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|fim_prefix|>", "<0x41>", "<|im_sta",
            "<s", "[INST]", "<mask>", "<|reserved_special_token_5|>", "<tool_response>", "<image_soft_token>"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2009", "\u200b", "\u180e",
          "\u0085", "\u2028", "\v", "\f"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "’s", "don't", "we'll", "they'D"]
BYTE_CHARS = ["Ġ", "Ċ", "ĉ", "Ā", "▁", "▁▁", "Ġhello", "ĠĠ"]

FRAGMENTS = (ENGLISH + CODE + JSON + MARKDOWN + CJK + ARABIC + HINDI + THAI + CYRILLIC + OTHER + EMOJI + COMBINING +
             SPECIALS + SPACES + CONTRACTIONS + BYTE_CHARS)

# Code point ranges the random generator draws single characters from.
RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF), (0x600, 0x6FF),
          (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2190, 0x22FF), (0x3040, 0x30FF),
          (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0x300, 0x36F), (0x9, 0xD)]


def digits(rng):
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))


def random_string(rng, max_len):
    parts = []
    total = 0
    while total < max_len:
        k = rng.random()
        if k < 0.45:
            s = rng.choice(FRAGMENTS)
        elif k < 0.65:
            lo, hi = rng.choice(RANGES)
            s = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 12)))
        elif k < 0.75:
            s = digits(rng)
        elif k < 0.9:
            s = rng.choice(SPACES) * rng.randint(1, 8)
        else:
            s = rng.choice(SPECIALS)
        parts.append(s)
        total += len(s)
    return "".join(parts)[:max_len]


def build_corpus(seed=20241129):
    rng = random.Random(seed)
    out = []
    # Every fragment alone, and with leading/trailing whitespace.
    for f in FRAGMENTS:
        out += [f, " " + f, f + " ", "  " + f + "\n", f.upper(), f.lower()]
    # Categories combined in sentence-like ways.
    groups = [ENGLISH, CODE, JSON, MARKDOWN, CJK, ARABIC, HINDI, THAI, CYRILLIC, OTHER, EMOJI, COMBINING]
    while len(out) < 6000:
        g = rng.choice(groups)
        s = rng.choice(g)
        r = rng.random()
        if r < 0.3:
            s = s + rng.choice(SPACES) + rng.choice(rng.choice(groups))
        elif r < 0.5:
            s = rng.choice(SPECIALS) + s + rng.choice(SPECIALS)
        elif r < 0.6:
            s = s.replace(" ", rng.choice(SPACES) * rng.randint(1, 5))
        elif r < 0.7:
            s = digits(rng) + " " + s + rng.choice(CONTRACTIONS)
        elif r < 0.8:
            i = rng.randint(0, len(s))
            s = s[:i] + rng.choice(SPECIALS) + s[i:]
        out.append(s)
    # Digit runs, whitespace runs, contractions.
    for n in range(1, 60):
        out.append("9" * n)
        out.append(" " * n)
        out.append("\n" * (n % 7 + 1) + " " * n + "x")
        out.append("x" + "\t" * (n % 9 + 1) + " " * n)
    for c in CONTRACTIONS:
        for w in ["it", "IT", "we", "they", "you"]:
            out.append(w + c)
            out.append(w + c + " " + w)
    # Short random strings until 10,000 before the seeded random section.
    while len(out) < 10000:
        out.append(random_string(rng, rng.randint(1, 200)))
    # >= 2,000 random strings mixing everything, lengths up to a few thousand characters.
    for _ in range(2000):
        out.append(random_string(rng, int(rng.paretovariate(1.2) * 20)))
    # Long strings: 1 to 100k characters.
    for n in [1, 10, 100, 1000, 10000, 30000, 100000]:
        out.append(random_string(rng, n))
    out.append("a" * 20000)
    out.append(" " * 5000 + "end")
    out.append("\n" * 3000)
    out.append(("Hello world " * 1500).strip())
    return out
