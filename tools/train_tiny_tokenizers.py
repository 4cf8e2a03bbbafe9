"""Trains the small tokenizers committed under tests/fixtures/tokenizers/ with HF `tokenizers`.

Each one copies a model family's pipeline (normalizer, pre-tokenizer, model options, post-
processor, decoder) so that the C++ suite covers every code path on a fresh clone without
../shared. Run from the repository root:  python tools/train_tiny_tokenizers.py
"""
import json
import os
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_corpus import build_corpus  # noqa: E402

OUT = "tests/fixtures/tokenizers"
QWEN_RE = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3_RE = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def training_text():
    corpus = build_corpus()
    return [s[:300] for s in corpus[:4000]]


def train(tok, vocab_size, specials, **kw):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False, **kw)
    tok.train_from_iterator(training_text(), trainer)
    return tok


def edit(tok, fn):
    """Applies fn to the serialized JSON and reloads (for options trainers cannot set)."""
    data = json.loads(tok.to_str())
    fn(data)
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


def add_byte_fallback(data):
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for b in range(256):
        name = "<0x%02X>" % b
        if name not in vocab:
            vocab[name] = next_id
            next_id += 1
    data["model"]["byte_fallback"] = True
    data["model"]["fuse_unk"] = True
    # Added tokens after the vocab must keep ids of their own.
    for t in data["added_tokens"]:
        if t["content"] not in vocab:
            t["id"] = next_id
            next_id += 1


def merges_as_strings(data):
    data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]]


def tiny_qwen():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_RE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, 700, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.add_tokens([AddedToken("<think>", normalized=False), AddedToken("</think>", normalized=False)])
    return tok


def tiny_llama3():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, 700, ["<|begin_of_text|>", "<|eot_id|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                                      special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])])

    def opts(d):
        d["model"]["ignore_merges"] = True
        merges_as_strings(d)
    return edit(tok, opts)


def tiny_gpt2():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    train(tok, 600, ["<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False), AddedToken("<eos>", rstrip=True)])
    tok.add_tokens([AddedToken("dog", single_word=True, normalized=False), AddedToken(" world", normalized=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    return tok


def sentencepiece_decoder(strip):
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if strip:
        steps.append(decoders.Strip(content=" ", left=1, right=0))
    return decoders.Sequence(steps)


def tiny_llama2():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = sentencepiece_decoder(strip=True)
    train(tok, 500, ["<unk>", "<s>", "</s>"], limit_alphabet=120)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return edit(tok, add_byte_fallback)


def tiny_gemma():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    tok.decoder = sentencepiece_decoder(strip=False)
    train(tok, 500, ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"], limit_alphabet=150)
    tok.add_tokens([AddedToken("▁▁", normalized=False), AddedToken("\n\n", normalized=False)])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos>:1 $B:1", special_tokens=[("<bos>", tok.token_to_id("<bos>"))])

    def opts(d):
        add_byte_fallback(d)
        merges_as_strings(d)
    return edit(tok, opts)


def tiny_metaspace():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(), normalizers.Strip(left=True, right=True), normalizers.Lowercase(),
        normalizers.Replace(Regex(r"\d{4,}"), "0000")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    train(tok, 600, ["<unk>", "<sep>"], limit_alphabet=200)
    tok.add_special_tokens([AddedToken("<sep>", lstrip=True, rstrip=True), AddedToken("[mask]", single_word=True)])
    tok.add_tokens([AddedToken("Hello World", normalized=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="$A <sep>", pair="$A <sep> $B:1 <sep>:1", special_tokens=[("<sep>", tok.token_to_id("<sep>"))])
    return tok


def tiny_wordish():
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="contiguous")])
    train(tok, 700, ["[UNK]", "[CLS]", "[SEP]"], continuing_subword_prefix="##", end_of_word_suffix="</w>",
          limit_alphabet=150)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    return tok


def tiny_splits():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Replace("\t", "  "),
                                           normalizers.Strip(left=False, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex("[aeiou]"), behavior="merged_with_next"),
        pre_tokenizers.Split("-", behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"\d"), behavior="removed"),
        pre_tokenizers.Split(Regex(r"[A-Z]+"), behavior="isolated", invert=True),
        pre_tokenizers.Split(Regex(r"[.,]"), behavior="merged_with_previous"),
        pre_tokenizers.Digits(individual_digits=False)])
    tok.decoder = decoders.Sequence([decoders.Replace(Regex(r"\s+"), " "), decoders.Strip(content="x", left=0, right=1)])
    train(tok, 500, ["<unk>", "<s>", "</s>"], limit_alphabet=200)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    return tok


TINY = {"tiny_qwen": tiny_qwen, "tiny_llama3": tiny_llama3, "tiny_gpt2": tiny_gpt2, "tiny_llama2": tiny_llama2,
        "tiny_gemma": tiny_gemma, "tiny_metaspace": tiny_metaspace, "tiny_wordish": tiny_wordish,
        "tiny_splits": tiny_splits}

if __name__ == "__main__":
    for name, make in TINY.items():
        tok = make()
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        text = json.dumps(json.loads(tok.to_str()), ensure_ascii=False, indent=1)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(name, tok.get_vocab_size(), len(text))
