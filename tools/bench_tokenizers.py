"""Side-by-side tokenizer benchmark: HF `tokenizers` vs sft's C++ tokenizer on the same corpus.

Builds a ~10 MB mixed corpus (seeded: prose, code, JSON, CJK, Arabic, emoji, whitespace and
digit runs... from tools/tokenizer_corpus.py), then measures, for the Qwen3 tokenizer:
  - load time of tokenizer.json (median of 5),
  - single-thread encode throughput: HF `encode_batch` with RAYON_NUM_THREADS=1 and HF
    `encode` in a Python loop; sft `encode()` in a loop (bench_tokenizer, median of 3),
  - sft batch encode over 1, 2, 4 threads.
Run from the repository root after building with -DSFT_BUILD_BENCH=ON:
  python tools/bench_tokenizers.py [--tokenizer PATH] [--mb 10]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # must precede the import: HF's pool reads it once
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_corpus import build_corpus, random_string  # noqa: E402


def make_corpus(mb, path):
    rng = random.Random(7)
    texts = [s for s in build_corpus() if len(s) < 5000]
    size = sum(len(s.encode()) for s in texts)
    while size < mb * 1e6:
        s = random_string(rng, rng.randint(20, 2000))
        texts.append(s)
        size += len(s.encode())
    rng.shuffle(texts)
    with open(path, "w", encoding="utf-8") as f:
        for s in texts:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    return texts, size


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", default="../shared/assets/tokenizers/qwen3")
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--bench", default="build/bench/bench_tokenizer")
    args = ap.parse_args()
    path = os.path.join(args.tokenizer, "tokenizer.json") if os.path.isdir(args.tokenizer) else args.tokenizer
    corpus_path = "build/bench_tokenizer_corpus.jsonl"
    texts, size = make_corpus(args.mb, corpus_path)
    print(f"corpus: {len(texts)} strings, {size / 1e6:.1f} MB")

    hf_load = median_time(lambda: Tokenizer.from_file(path), 5)
    tok = Tokenizer.from_file(path)
    tok.encode_batch(texts[:2000], add_special_tokens=False)  # warm
    hf_batch = median_time(lambda: tok.encode_batch(texts, add_special_tokens=False), 3)
    hf_loop = median_time(lambda: [tok.encode(s, add_special_tokens=False) for s in texts], 3)

    env = dict(os.environ, SFT_BENCH_TOKENIZER=path, SFT_BENCH_CORPUS=corpus_path)
    out = subprocess.run([args.bench, "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], env=env, check=True, capture_output=True, text=True).stdout
    ours = {b["run_name"]: b for b in json.loads(out)["benchmarks"] if b.get("aggregate_name") == "median"}
    load = ours["BM_Load/real_time"]["real_time"] / 1e3
    single = ours["BM_EncodeSingleThread/real_time"]["real_time"] / 1e3

    def mbs(t):
        return size / 1e6 / t

    print(f"load tokenizer.json          HF {hf_load * 1e3:7.1f} ms   sft {load * 1e3:7.1f} ms")
    print(f"encode, 1 thread             HF encode_batch {mbs(hf_batch):6.2f} MB/s   HF encode loop {mbs(hf_loop):6.2f} MB/s"
          f"   sft {mbs(single):6.2f} MB/s")
    print(f"sft / HF (1 thread)          {hf_batch / single:.2f}x vs encode_batch, {hf_loop / single:.2f}x vs encode loop")
    for n in (1, 2, 4):
        t = ours[f"BM_EncodeBatch/{n}/real_time"]["real_time"] / 1e3
        print(f"sft encode_batch, {n} threads  {mbs(t):6.2f} MB/s  ({single / t:.2f}x of 1-thread encode)")


if __name__ == "__main__":
    main()
