#!/usr/bin/env python3
"""Writes tests/fixtures/mixture/: three small conversational datasets in three file formats
(JSON Lines, a JSON array, Parquet), each with one extra column, the `--datasets` mixture of
them (columns + fraction) as TRL 1.16 reads it, and what TRL's get_dataset + SFTTrainer's
_prepare_dataset make of it, for tests/data/mixture_parity_test.cpp.

  mixture.json        the `datasets` list (data_files relative to tests/fixtures/mixture)
  expected_rows.jsonl TRL's prepared rows {input_ids, labels} (assistant_only_loss, max_length 64)
  expected_packed.jsonl  the same mixture packed (bfd, max_length 64): {input_ids, seq_lengths}
  expected.json       rows per entry after `fraction`, and a few take-count cases of TRL's
                      fraction rule (half-way cases included: Python's round is half to even)

The tokenizer + ChatML template are tests/fixtures/prepare/cli/tokenizer (make_prepare_goldens.py).

Run: ~/.venv-sft/bin/python tools/make_mixture_goldens.py
"""
import json
import os
import random
import types

import pyarrow as pa
import pyarrow.parquet as pq
from transformers import AutoTokenizer
from trl import SFTConfig, SFTTrainer
from trl.scripts.utils import DatasetConfig, DatasetMixtureConfig, get_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "mixture")
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "prepare", "cli", "tokenizer")

VOCAB = ["hello", "world", "the", "cat", "sat", "on", "a", "mat", "why?", "because", "ok",
         "numbers", "12", "über", "naïve", "café", "!"]


def conversations(seed, n):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        messages = []
        if i % 3 == 0:
            messages.append({"role": "system", "content": "be brief"})
        for _ in range(1 + i % 2):
            messages.append({"role": "user", "content": " ".join(
                rng.choice(VOCAB) for _ in range(rng.randint(1, 4 + 3 * i)))})
            messages.append({"role": "assistant", "content": " ".join(
                rng.choice(VOCAB) for _ in range(rng.randint(1, 8)))})
        out.append(messages)
    return out


def trl_take_counts(rows, fractions):
    # get_dataset's rule, for the unit cases (the mixture itself goes through get_dataset).
    weights = [f / sum(fractions) for f in fractions]
    total = min(n / w for n, w in zip(rows, weights) if w > 0)
    return [round(w * total) for w in weights]


def main():
    os.makedirs(OUT, exist_ok=True)
    a = [{"id": i, "messages": m} for i, m in enumerate(conversations(1, 12))]
    with open(os.path.join(OUT, "a.jsonl"), "w") as f:
        for r in a:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    b = [{"source": "forum", "messages": m} for m in conversations(2, 10)]
    with open(os.path.join(OUT, "b.json"), "w") as f:
        json.dump(b, f, ensure_ascii=False, indent=1)
    c = [{"messages": m, "lang": "en"} for m in conversations(3, 9)]
    pq.write_table(pa.Table.from_pylist(c), os.path.join(OUT, "c.parquet"))

    mixture = [
        {"path": "json", "data_files": "a.jsonl", "columns": ["messages"], "fraction": 0.5},
        {"path": "json", "data_files": ["b.json"], "columns": ["messages"], "fraction": 0.2},
        {"path": "parquet", "data_files": {"train": "c.parquet"}, "columns": ["messages"],
         "fraction": 0.3},
    ]
    with open(os.path.join(OUT, "mixture.json"), "w") as f:
        json.dump(mixture, f, indent=1)
        f.write("\n")

    cwd = os.getcwd()
    os.chdir(OUT)  # data_files are relative to the working directory, as in `trl sft`
    try:
        dataset = get_dataset(DatasetMixtureConfig(datasets=[DatasetConfig(**m) for m in mixture]))
    finally:
        os.chdir(cwd)
    train = dataset["train"]
    assert train.column_names == ["messages"], train.column_names

    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    fake = types.SimpleNamespace(completion_only_loss=None, chat_template=None,
                                 _is_vision_dataset=False)
    args = SFTConfig(output_dir="/tmp/sft_mixture_goldens", report_to="none", bf16=False,
                     use_cpu=True, max_length=64, assistant_only_loss=True)
    ds = SFTTrainer._prepare_dataset(fake, train, tok, args, False, None, "train")
    with open(os.path.join(OUT, "expected_rows.jsonl"), "w") as f:
        for r in ds:
            row = {"input_ids": r["input_ids"], "labels": list(r["labels"])}
            f.write("{" + ", ".join(f'"{k}": [' + ", ".join(map(str, v)) + "]"
                                    for k, v in row.items()) + "}\n")

    args = SFTConfig(output_dir="/tmp/sft_mixture_goldens", report_to="none", bf16=False,
                     use_cpu=True, max_length=64, packing=True, assistant_only_loss=True)
    packed = SFTTrainer._prepare_dataset(fake, train, tok, args, True, None, "train")
    with open(os.path.join(OUT, "expected_packed.jsonl"), "w") as f:
        for r in packed:
            row = {"input_ids": r["input_ids"], "seq_lengths": r["seq_lengths"]}
            f.write("{" + ", ".join(f'"{k}": [' + ", ".join(map(str, v)) + "]"
                                    for k, v in row.items()) + "}\n")

    cases = [([12, 10, 9], [0.5, 0.2, 0.3]), ([5, 100], [2, 1]), ([3, 3], [1, 1]),
             ([7, 1000, 10], [0.25, 0.5, 0.25]), ([10, 10], [1, 0]), ([1, 4], [0.5, 0.5]),
             ([9, 20], [0.3, 0.7])]
    expected = {
        "mixture_rows": len(train),
        "prepared_rows": len(ds),
        "take_cases": [{"rows": r, "fractions": f, "take": trl_take_counts(r, f)}
                       for r, f in cases],
    }
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f)
        f.write("\n")


if __name__ == "__main__":
    main()
