#!/usr/bin/env python3
"""Dataset preparation benchmark: TRL 1.16 (SFTTrainer._prepare_dataset, dataset_num_proc=2,
packing off) vs `sft prepare` (cold token cache), same data, same machine, same run.

The data: synthetic conversations with Capybara-like shape (1-6 user/assistant exchanges,
sometimes a system prompt, lengths log-normal so most rows are a few hundred to ~2k tokens
with a long tail), generated deterministically into /tmp. Tokenizer and chat template:
Qwen3's (../shared/assets/tokenizers/qwen3). Only preparation is timed on both sides: for TRL
load_dataset("json") (fresh datasets cache, so nothing is reused) + _prepare_dataset; for sft
the whole `sft prepare` process (it reads the JSONL itself). Also checks that both produced
the same rows (input_ids and labels).

Usage: ~/.venv-sft/bin/python tools/bench_data_prep.py --sft build/sft [--rows 100000]
       [--repeats 1] [--max_length 1024]
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER = os.path.join(ROOT, "..", "shared", "assets", "tokenizers", "qwen3")

SYLLABLES = ["ka", "lo", "mi", "ten", "ra", "shu", "vel", "on", "di", "pra", "ex", "an",
             "tor", "is", "que", "mon", "gr", "al", "ber", "st", "ing", "the", "ion", "re"]
PUNCT = [".", ",", "?", "!", ":", ";", "\n", " -", "()", "`x`", "1", "42", "3.14"]


def words(rng, n):
    out = []
    for i in range(n):
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice([1, 1, 2, 2, 3, 4])))
        if rng.random() < 0.08:
            w = w.capitalize()
        out.append(w)
        if rng.random() < 0.1:
            out.append(rng.choice(PUNCT))
    return " ".join(out)


def make_row(rng):
    # Capybara-like: multi-turn; total length skewed (median ~1k tokens, tail past 4k).
    turns = min(6, 1 + int(rng.expovariate(0.7)))
    messages = []
    if rng.random() < 0.2:
        messages.append({"role": "system", "content": words(rng, rng.randint(5, 40))})
    for _ in range(turns):
        messages.append({"role": "user", "content": words(rng, int(rng.lognormvariate(3.6, 0.8)))})
        messages.append({"role": "assistant",
                         "content": words(rng, int(rng.lognormvariate(5.2, 0.6)))})
    return {"messages": messages}


def generate(path, rows):
    if os.path.exists(path):
        return
    rng = random.Random(20261129)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for _ in range(rows):
            f.write(json.dumps(make_row(rng), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def run_trl(data, max_length):
    os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="sft_bench_hfds_")
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    args = SFTConfig(output_dir="/tmp/sft_bench_trl_out", report_to="none", bf16=False,
                     use_cpu=True, dataset_num_proc=2, packing=False, max_length=max_length)
    fake = types.SimpleNamespace(completion_only_loss=None, chat_template=None,
                                 _is_vision_dataset=False)
    t0 = time.perf_counter()
    ds = load_dataset("json", data_files=data, split="train")
    t1 = time.perf_counter()
    ds = SFTTrainer._prepare_dataset(fake, ds, tok, args, False, None, "train")
    t2 = time.perf_counter()
    shutil.rmtree(os.environ["HF_DATASETS_CACHE"], ignore_errors=True)
    return t1 - t0, t2 - t1, ds


def run_sft(sft, data, max_length, dump):
    cache = tempfile.mkdtemp(prefix="sft_bench_cache_")
    cmd = [sft, "prepare", "--model_name_or_path", TOKENIZER, "--dataset_name", data,
           "--max_length", str(max_length), "--cache_dir", cache, "--disable_tqdm", "true"]
    if dump:
        cmd += ["--dump", dump]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    t = time.perf_counter() - t0
    shutil.rmtree(cache, ignore_errors=True)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sft", default=os.path.join(ROOT, "build", "sft"))
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--max_length", type=int, default=1024)
    a = ap.parse_args()
    data = f"/tmp/sft_bench_prep_{a.rows}.jsonl"
    generate(data, a.rows)
    print(f"data: {data} ({a.rows} rows, {os.path.getsize(data) / 1e6:.1f} MB), cores: "
          f"{os.cpu_count()}, load average before: {os.getloadavg()}")
    trl_load, trl_prep, sft_times = [], [], []
    dump = "/tmp/sft_bench_prep_dump.jsonl"
    for r in range(a.repeats):
        sft_times.append(run_sft(a.sft, data, a.max_length, dump if r == 0 else None))
        load, prep, ds = run_trl(data, a.max_length)
        trl_load.append(load)
        trl_prep.append(prep)
        print(f"run {r}: sft prepare {sft_times[-1]:.2f} s; TRL load_dataset {load:.2f} s + "
              f"_prepare_dataset {prep:.2f} s; load average {os.getloadavg()}")
    # Same rows on both sides?
    mismatches, n = 0, 0
    with open(dump) as f:
        for i, line in enumerate(f):
            row = json.loads(line)
            if row["input_ids"] != ds[i]["input_ids"] or row["labels"] != ds[i]["labels"]:
                mismatches += 1
            n += 1
    print(f"rows: sft {n}, TRL {len(ds)}; rows that differ: {mismatches}")
    tokens = sum(len(x) for x in ds["input_ids"])
    s, tl, tp = (statistics.median(x) for x in (sft_times, trl_load, trl_prep))
    print(f"median sft prepare: {s:.2f} s ({a.rows / s:,.0f} rows/s, {tokens / s / 1e6:.2f} M training tokens/s)")
    print(f"median TRL: {tl + tp:.2f} s (load_dataset {tl:.2f} + _prepare_dataset {tp:.2f})")
    print(f"speedup: {(tl + tp) / s:.2f}x (TRL load+prepare), {tp / s:.2f}x (_prepare_dataset only)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
