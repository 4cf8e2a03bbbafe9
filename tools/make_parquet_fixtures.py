#!/usr/bin/env python3
"""Writes the Parquet fixtures for tests/data/parquet_reader_test.cpp with pyarrow.

Each dataset is written once per (codec, dictionary on/off, data page v1/v2) with small pages
and row groups so that every decoding path is exercised; the expected rows go next to them as
JSONL (what pyarrow reads back, as JSON), and the C++ test compares row by row.

Usage: ~/.venv-sft/bin/python tools/make_parquet_fixtures.py [out_dir]
(default tests/fixtures/parquet; deterministic: same files every run for a given pyarrow).
"""
import json
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/parquet")
CODECS = ["none", "snappy", "gzip", "zstd"]
WORDS = ["the", "sky", "is", "blue", "Grüße", "日本語", "emoji 🙂", "", "a\nb", "tab\t", "quote\"",
         "42", "x" * 40]


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def capybara_table():
    rng = random.Random(1)
    sources = ["Airoboros", "EverythingLM", "GPT4LLM", "Know-Logic", None]
    rows = []
    for i in range(37):
        turns = rng.randint(1, 3)
        messages = []
        for _ in range(turns):
            messages.append({"content": sentence(rng, rng.randint(0, 12)), "role": "user"})
            messages.append({"content": sentence(rng, rng.randint(1, 30)), "role": "assistant"})
        rows.append({"source": sources[i % len(sources)], "messages": messages})
    schema = pa.schema([
        ("source", pa.string()),
        ("messages", pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def gsm8k_table():
    rng = random.Random(2)
    rows = [{"question": sentence(rng, rng.randint(3, 20)) + "?",
             "answer": sentence(rng, rng.randint(3, 25)) + f"\n#### {rng.randint(0, 999)}"}
            for _ in range(29)]
    schema = pa.schema([("question", pa.string()), ("answer", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def types_table():
    """Every scalar type we support, nulls at every nesting level, lists and structs."""
    rng = random.Random(3)
    rows = []
    for i in range(23):
        def maybe(v):
            return None if rng.random() < 0.2 else v
        rows.append({
            "i32": maybe(rng.randint(-2**31, 2**31 - 1)),
            "i64": maybe(rng.randint(-2**63, 2**63 - 1)),
            "i8": maybe(rng.randint(-128, 127)),
            "u32": maybe(rng.randint(0, 2**32 - 1)),
            "f32": maybe(rng.choice([0.5, -1.25, 3.0, 1e-3 * 0 + 0.125])),
            "f64": maybe(rng.random() * 1e6 - 5e5),
            "flag": maybe(rng.random() < 0.5),
            "req": i,
            "text": maybe(sentence(rng, rng.randint(0, 4))),
            "ints": maybe([maybe(rng.randint(0, 9)) for _ in range(rng.randint(0, 4))]),
            "nested": maybe({"a": maybe(rng.randint(0, 5)),
                             "b": maybe({"c": maybe(sentence(rng, 2)),
                                         "d": maybe([sentence(rng, 1) for _ in range(rng.randint(0, 2))])})}),
            "tool_calls": maybe([maybe({"name": maybe(sentence(rng, 1)), "args": maybe([rng.random() < 0.5])})
                                 for _ in range(rng.randint(0, 3))]),
            "lol": maybe([maybe([rng.randint(0, 3) for _ in range(rng.randint(0, 2))])
                          for _ in range(rng.randint(0, 3))]),
        })
    schema = pa.schema([
        ("i32", pa.int32()), ("i64", pa.int64()), ("i8", pa.int8()), ("u32", pa.uint32()),
        ("f32", pa.float32()), ("f64", pa.float64()), ("flag", pa.bool_()),
        pa.field("req", pa.int64(), nullable=False), ("text", pa.string()),
        ("ints", pa.list_(pa.int64())),
        ("nested", pa.struct([("a", pa.int32()),
                              ("b", pa.struct([("c", pa.string()), ("d", pa.list_(pa.string()))]))])),
        ("tool_calls", pa.list_(pa.struct([("name", pa.string()), ("args", pa.list_(pa.bool_()))]))),
        ("lol", pa.list_(pa.list_(pa.int16()))),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def write_expected(table, path):
    with open(path, "w", encoding="utf-8") as f:
        for row in table.to_pylist():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tables = {"capybara": capybara_table(), "gsm8k": gsm8k_table(), "types": types_table()}
    for name, table in tables.items():
        write_expected(table, OUT / f"{name}.expected.jsonl")
        for codec in CODECS:
            for dictionary in (True, False):
                for page_version in ("1.0", "2.0"):
                    enc = "dict" if dictionary else "plain"
                    v = page_version[0]
                    path = OUT / f"{name}_{codec}_{enc}_v{v}.parquet"
                    pq.write_table(table, path, compression=codec, use_dictionary=dictionary,
                                   data_page_version=page_version, row_group_size=10,
                                   data_page_size=512, write_batch_size=7,
                                   write_statistics=(codec == "zstd"))
                    back = pq.read_table(path)
                    assert back.equals(table), path
    # A Hub-layout dataset, two train shards and one test file.
    gsm = tables["gsm8k"]
    hub = OUT / "hub_gsm8k" / "main"  # openai/gsm8k: {config}/{split}-*.parquet
    hub.mkdir(parents=True, exist_ok=True)
    pq.write_table(gsm.slice(0, 12), hub / "train-00000-of-00002.parquet", compression="snappy")
    pq.write_table(gsm.slice(12, 10), hub / "train-00001-of-00002.parquet", compression="zstd")
    pq.write_table(gsm.slice(22), hub / "test-00000-of-00001.parquet")
    # A second file whose schema differs (an extra column): reading both must fail clearly.
    other = gsm.slice(0, 3).append_column("extra", pa.array([1, 2, 3], pa.int64()))
    pq.write_table(other, OUT / "gsm8k_other_schema.parquet")
    write_fuzz_seeds(tables["gsm8k"])
    print("wrote", OUT)


def write_fuzz_seeds(gsm):
    """Seeds for the Parquet fuzz target: small (under its 4 KiB max_len), nested, nulls."""
    seeds = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "corpus" / "parquet"
    seeds.mkdir(parents=True, exist_ok=True)
    msg = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))
    t = pa.table({"messages": pa.array([[{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": None}], None, []], msg),
                  "flag": pa.array([True, None, False]), "f": pa.array([1.5, None, 2.0], pa.float32())})
    for v in ("1.0", "2.0"):
        for c in ("none", "zstd"):
            pq.write_table(t, seeds / f"nested_{c}_v{v[0]}.parquet", compression=c, data_page_version=v)
    pq.write_table(gsm.slice(0, 12), seeds / "gsm8k_gzip_dict_v1.parquet", compression="gzip", row_group_size=10,
                   data_page_size=512, write_batch_size=7, write_statistics=False)
    pq.write_table(gsm.slice(0, 12), seeds / "gsm8k_snappy_dict_v2.parquet", compression="snappy", row_group_size=10,
                   data_page_size=512, write_batch_size=7, data_page_version="2.0",
                   write_statistics=False)


if __name__ == "__main__":
    main()
