#!/usr/bin/env python3
"""Each GEMM shape's rate inside a training step against the same shape alone.

(On a machine whose speed drifts between runs, prefer build/bench/bench_gemm_in_step: it runs the
step and the shapes alone interleaved in one process and pairs them round by round.)

Inputs: the per-op table that `SFT_PROFILE=1 sft train ...` prints after training (its lines
"matmul BF16 M=… N=… K=… [ta] [tb]" hold calls and seconds per shape), and the JSON of
bench/gemm_shapes_bench.cpp on the same machine (`--benchmark_format=json`). The pass is told by
the transposes, as ops::Linear calls them: B transposed = forward, none = dx, A transposed = dW.
Prints, per shape, GFLOP/s in the step, alone, and in-step / alone (the compute-backends issue
asks for ≥ 0.85). When the bench JSON also holds the "/cold" variants (operands evicted from the
caches before each call, as they are in a step), their rate and in-step / cold are printed too. The first step also pays oneDNN's kernel generation (once per shape), so pass
--minus with the table of a shorter run of the same command: the difference is the steady steps.

Run:
  SFT_PROFILE=1 build/sft train ... --max_steps 6 > step.txt 2>&1
  SFT_PROFILE=1 build/sft train ... --max_steps 2 > warmup.txt 2>&1
  build/bench/bench_gemm_shapes --benchmark_filter='0.6B/.*/onednn_bf16' \
      --benchmark_repetitions=3 --benchmark_format=json > alone.json
  python3 tools/gemm_in_step.py --profile step.txt --minus warmup.txt --bench alone.json
"""
import argparse
import json
import re
import statistics
import sys

LINE = re.compile(r"^\s*[0-9.]+%\s+([0-9.]+) s\s+(\d+) calls\s+matmul (\w+) M=(\d+) N=(\d+) K=(\d+)(.*)$")
NAME = re.compile(r"^([^/]+)/([^/]+)/(fwd|dx|dw)/(\w+)/(\d+)x(\d+)x(\d+)(/cold)?")


def step_times(path, dtype):
    out = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        m = LINE.match(line)
        if not m or m.group(3) != dtype:
            continue
        seconds, calls = float(m.group(1)), int(m.group(2))
        M, N, K = int(m.group(4)), int(m.group(5)), int(m.group(6))
        flags = m.group(7).split()
        pass_ = "dw" if "ta" in flags else "fwd" if "tb" in flags else "dx"
        out[(pass_, M, N, K)] = (calls, seconds)
    return out


def step_rates(path, minus, dtype):
    total = step_times(path, dtype)
    base = step_times(minus, dtype) if minus else {}
    out = {}
    for key, (calls, seconds) in total.items():
        c0, s0 = base.get(key, (0, 0.0))
        if calls > c0 and seconds > s0:
            _, M, N, K = key
            out[key] = (calls - c0, seconds - s0, 2.0 * M * N * K * (calls - c0) / (seconds - s0) * 1e-9)
    return out


def alone_rates(path, library, cold):
    runs = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b["name"])
        if not m or m.group(4) != library or "GFLOP/s" not in b or bool(m.group(8)) != cold:
            continue
        key = (m.group(3), int(m.group(5)), int(m.group(6)), int(m.group(7)))
        runs.setdefault(key, []).append((b["GFLOP/s"], f"{m.group(2)}/{m.group(3)}"))
    return {k: (statistics.median(r for r, _ in v), v[0][1]) for k, v in runs.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, help="output of SFT_PROFILE=1 sft train")
    ap.add_argument("--minus", help="the same command's table over fewer steps (subtracted)")
    ap.add_argument("--bench", required=True, help="bench_gemm_shapes --benchmark_format=json output")
    ap.add_argument("--dtype", default="BF16", help="matmul dtype in the profile (BF16, F32)")
    ap.add_argument("--library", default="onednn_bf16", help="bench library column to compare with")
    a = ap.parse_args()
    step = step_rates(a.profile, a.minus, a.dtype)
    alone, cold = alone_rates(a.bench, a.library, False), alone_rates(a.bench, a.library, True)
    if not step:
        sys.exit(f"{a.profile}: no 'matmul {a.dtype}' lines (was it run with SFT_PROFILE=1?)")
    if cold:
        print("| GEMM | M × N × K | calls | in step GFLOP/s | alone | in step / alone "
              "| alone, cold caches | in step / cold |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| GEMM | M × N × K | calls | in step GFLOP/s | alone GFLOP/s | in step / alone |")
        print("|---|---|---|---|---|---|")
    for key in sorted(step, key=lambda k: -step[k][1]):
        calls, _, rate = step[key]
        shape = f"{key[1]} × {key[2]} × {key[3]}"
        if key in alone:
            base, label = alone[key]
            row = f"| {label} | {shape} | {calls} | {rate:.0f} | {base:.0f} | {rate / base:.2f} |"
            if cold:
                c = cold.get(key, (None, None))[0]
                row += f" {c:.0f} | {rate / c:.2f} |" if c else " — | — |"
            print(row)
        else:  # not a projection shape of the bench (LoRA adapters, other models)
            print(f"| {key[0]} | {shape} | {calls} | {rate:.0f} | — | — |" + (" — | — |" if cold else ""))


if __name__ == "__main__":
    main()
