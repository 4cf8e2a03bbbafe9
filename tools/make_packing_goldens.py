#!/usr/bin/env python3
"""Writes tests/fixtures/packing/goldens.json: what TRL's pack_dataset (and its padding-free
collator) make of synthetic tokenized rows, for tests/data/pack_test.cpp.

Rows are synthetic so the golden stays small: row i has lengths[i] tokens,
input_ids[i][j] = i * 10000 + j and labels[i][j] = -100 if (i + j) % 4 == 0 else input_ids[i][j].
Each packed row is then described by its segments [row, start, length] (recovered from the ids),
plus TRL's seq_lengths. Large cases use 2100 rows, so TRL's map batches of 1000 rows show.
A small case also stores the collated batch (input_ids, labels, position_ids) in full.

Usage: ~/.venv-sft/bin/python tools/make_packing_goldens.py [out.json]
"""
import json
import random
import sys
from pathlib import Path

import datasets
import trl
from trl import pack_dataset
from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/packing/goldens.json")


def make_rows(lengths):
    ids = [[i * 10000 + j for j in range(n)] for i, n in enumerate(lengths)]
    labels = [[-100 if (i + j) % 4 == 0 else i * 10000 + j for j in range(n)] for i, n in enumerate(lengths)]
    return datasets.Dataset.from_dict({"input_ids": ids, "labels": labels})


def segments(packed_ids):
    out = []
    for tok in packed_ids:
        row, j = divmod(tok, 10000)
        if out and out[-1][0] == row and out[-1][1] + out[-1][2] == j:
            out[-1][2] += 1
        else:
            out.append([row, j, 1])
    return out


def check_labels(packed):
    for ids, labels in zip(packed["input_ids"], packed["labels"]):
        for tok, lab in zip(ids, labels):
            row, j = divmod(tok, 10000)
            assert lab == (-100 if (row + j) % 4 == 0 else tok)


def main():
    rng = random.Random(6)
    # Mostly short rows, some long ones (over every max_length below), a few empty ones.
    lengths = []
    for _ in range(2100):
        r = rng.random()
        lengths.append(0 if r < 0.01 else rng.randint(1, 40) if r < 0.7 else rng.randint(41, 300))
    ds = make_rows(lengths)
    cases = []
    for strategy in ("bfd", "bfd_split", "wrapped"):
        for max_length in (64, 257):
            packed = pack_dataset(ds, max_length, strategy)[:]
            check_labels(packed)
            case = {"strategy": strategy, "max_length": max_length,
                    "rows": [segments(ids) for ids in packed["input_ids"]]}
            if "seq_lengths" in packed:
                case["seq_lengths"] = list(packed["seq_lengths"])
            cases.append(case)
    # dataset_num_proc = 3: datasets shards the rows contiguously and maps each shard apart.
    packed = pack_dataset(ds, 64, "bfd", {"num_proc": 3})[:]
    cases.append({"strategy": "bfd", "max_length": 64, "map_num_proc": 3,
                  "rows": [segments(ids) for ids in packed["input_ids"]],
                  "seq_lengths": list(packed["seq_lengths"])})
    small_lengths = [5, 0, 12, 3, 9, 1, 7, 20, 2]
    small = pack_dataset(make_rows(small_lengths), 10, "bfd")
    collator = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)
    collated = []
    for example in small:
        batch = collator([example])
        collated.append({k: batch[k][0].tolist() for k in ("input_ids", "labels", "position_ids")})
    golden = {
        "generator": f"tools/make_packing_goldens.py with trl {trl.__version__}, datasets {datasets.__version__}",
        "lengths": lengths,
        "cases": cases,
        "small": {"lengths": small_lengths, "max_length": 10, "strategy": "bfd",
                  "seq_lengths": list(small[:]["seq_lengths"]), "collated": collated},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    print("wrote", OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
