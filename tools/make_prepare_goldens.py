#!/usr/bin/env python3
"""Writes tests/fixtures/prepare/: a small tokenized dataset and what TRL 1.16's
SFTTrainer._prepare_dataset makes of it (truncation + dropping of fully masked rows, or
packing), for tests/data/prepare_rows_test.cpp; and cli/: a tiny tokenizer folder (tiny_qwen
+ a ChatML template with generation blocks), a conversational JSONL and TRL's rows for it
(assistant_only_loss, max_length 40; and bfd packing to 64, with what packing cut:
expected_packed_audit.json) for tests/cli/prepare_cli.cmake.

The dataset is already tokenized (input_ids + labels), so TRL skips tokenization and runs
exactly the steps sft.cpp's prepare_rows does after encoding. _prepare_dataset is called
unbound with the few attributes it reads, so no model is needed.

Run: ~/.venv-sft/bin/python tools/make_prepare_goldens.py
"""
import json
import os
import random
import shutil
import types

from datasets import Dataset
from transformers import AutoTokenizer
from trl import SFTConfig, SFTTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "prepare")
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "tiny_qwen")


def make_rows():
    rng = random.Random(1234)
    rows = []
    for i in range(1100):  # > 1 map batch of 1000, so TRL's per-batch packing shows
        n = rng.choice([0, 1, 2, 5, 9, 15, 16, 17, 20, 31, 40, 47]) if i % 7 else rng.randint(0, 60)
        ids = [rng.randint(3, 999) for _ in range(n)]
        prompt = rng.randint(0, n)  # the first `prompt` tokens are not trained
        if i % 11 == 0:
            prompt = n  # nothing trained at all
        labels = [-100 if j < prompt else t for j, t in enumerate(ids)]
        rows.append({"input_ids": ids, "labels": labels})
    return rows


def prepare(rows, **config):
    args = SFTConfig(output_dir="/tmp/sft_prepare_goldens", report_to="none", bf16=False, use_cpu=True,
                     **config)
    fake = types.SimpleNamespace(completion_only_loss=None, chat_template=None,
                                 _is_vision_dataset=False)
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    ds = SFTTrainer._prepare_dataset(fake, Dataset.from_list(rows), tok, args, args.packing, None,
                                     "train")
    out = {"input_ids": list(ds["input_ids"]), "labels": list(ds["labels"])}
    if "seq_lengths" in ds.column_names:
        out["seq_lengths"] = list(ds["seq_lengths"])
    return out


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")


def make_cli_fixture():
    out = os.path.join(OUT, "cli")
    tok_dir = os.path.join(out, "tokenizer")
    os.makedirs(tok_dir, exist_ok=True)
    shutil.copy(os.path.join(TOKENIZER, "tokenizer.json"), tok_dir)
    with open(os.path.join(ROOT, "tests", "fixtures", "chat_templates", "chatml_generation.jinja")) as f:
        template = f.read()
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                   "chat_template": template, "tokenizer_class": "PreTrainedTokenizerFast"}, f,
                  indent=1)
    rng = random.Random(7)
    vocab = ["hello", "world", "the", "cat", "sat", "on", "a", "mat", "why?", "because", "ok",
             "numbers", "12", "über", "naïve", "café", "!"]
    rows = []
    for i in range(12):
        messages = []
        if i % 4 == 0:
            messages.append({"role": "system", "content": "be brief"})
        for _ in range(1 + i % 3):
            messages.append({"role": "user", "content": " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6 + 3 * i)))})
            messages.append({"role": "assistant", "content": " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 8)))})
        rows.append({"messages": messages})
    write_jsonl(os.path.join(out, "chat.jsonl"), rows)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    fake = types.SimpleNamespace(completion_only_loss=None, chat_template=None,
                                 _is_vision_dataset=False)
    for name, config in {"expected_dump.jsonl": dict(max_length=40, assistant_only_loss=True),
                         "expected_packed.jsonl": dict(max_length=64, packing=True,
                                                       assistant_only_loss=True)}.items():
        args = SFTConfig(output_dir="/tmp/sft_prepare_goldens", report_to="none", bf16=False,
                         use_cpu=True, **config)
        ds = SFTTrainer._prepare_dataset(fake, Dataset.from_list(rows), tok, args, args.packing,
                                         None, "train")
        dumped = []
        for r in ds:
            row = {"input_ids": r["input_ids"], "labels": list(r["labels"])}
            if args.packing:
                # As the padding-free collator: positions restart per document, whose first
                # label is -100.
                row["position_ids"] = [p for n in r["seq_lengths"] for p in range(n)]
                at = 0
                for n in r["seq_lengths"]:
                    row["labels"][at] = -100
                    at += n
                row["doc_lengths"] = r["seq_lengths"]
            dumped.append(row)
        with open(os.path.join(out, name), "w") as f:
            for r in dumped:
                f.write("{" + ", ".join(f'"{k}": [' + ", ".join(map(str, v)) + "]" for k, v in r.items()) + "}\n")
    # What TRL's packing cuts (the audit's "truncated rows" line): the tokenized rows before
    # packing (no max_length, nothing cut) against TRL's packed rows.
    args = SFTConfig(output_dir="/tmp/sft_prepare_goldens", report_to="none", bf16=False,
                     use_cpu=True, max_length=None, assistant_only_loss=True)
    whole = SFTTrainer._prepare_dataset(fake, Dataset.from_list(rows), tok, args, False, None, "train")
    args = SFTConfig(output_dir="/tmp/sft_prepare_goldens", report_to="none", bf16=False,
                     use_cpu=True, max_length=64, packing=True, assistant_only_loss=True)
    packed = SFTTrainer._prepare_dataset(fake, Dataset.from_list(rows), tok, args, True, None, "train")
    lengths = [len(r) for r in whole["input_ids"]]
    audit = {"max_length": 64, "tokens": sum(lengths),
             "packed_tokens": sum(len(r) for r in packed["input_ids"]),
             "rows_truncated": sum(n > 64 for n in lengths)}
    audit["tokens_truncated"] = audit["tokens"] - audit["packed_tokens"]
    with open(os.path.join(out, "expected_packed_audit.json"), "w") as f:
        json.dump(audit, f, indent=1)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    make_cli_fixture()
    rows = make_rows()
    with open(os.path.join(OUT, "tokenized.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    cases = {
        "keep_start_16": dict(max_length=16, truncation_mode="keep_start"),
        "keep_end_16": dict(max_length=16, truncation_mode="keep_end"),
        "no_max_length": dict(max_length=None),
        "bfd_32": dict(max_length=32, packing=True, packing_strategy="bfd"),
        "bfd_split_32_proc2": dict(max_length=32, packing=True, packing_strategy="bfd_split",
                                   dataset_num_proc=2),
        "wrapped_24": dict(max_length=24, packing=True, packing_strategy="wrapped"),
    }
    goldens = {name: dict(config=config, **prepare(rows, **config)) for name, config in cases.items()}
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump(goldens, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
