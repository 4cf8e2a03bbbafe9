#!/usr/bin/env python3
"""Where one steady training step of `sft train` goes: SFT_PROFILE's per-op table (src/ops/profile.h) of a
run of --warmup + --steps steps with SFT_PROFILE_SKIP=--warmup (the table leaves out the first forward passes,
so the first step's one-off costs drop out: first touch of the gradients and optimizer state, oneDNN's JIT
compiles), divided by --steps. Prints every op per step and the split into groups: the MoE router,
permutation, combine and grouped GEMMs, attention, the dense projections' matmuls, the LM head, the optimizer
and the rest.

With several --sft binaries (a baseline and a change) the runs interleave (A B A B with --repeat 2), so a
drifting machine moves both alike; the tables print side by side (with --repeat, each op's median).

The runs are tools/bench_train_e2e.py's sft command (same shape, workload, data and flags; it must have run
once with the same --workdir, which writes the model and the data):
  ~/.venv-sft/bin/python tools/profile_step_split.py --sft /work/main/build/sft --sft build/sft \\
      --shape qwen3-moe-1b --workload chat --workdir /tmp/moe_bench
The runs go one at a time (the qwen3-moe-1b shape: ~20 GiB peak); each waits for --need_gib of available
memory and is retried when the kernel kills it (another job took the memory).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_e2e_lib as lib  # noqa: E402
import bench_train_e2e as e2e  # noqa: E402

# Group of an op name (the table's first word); the first matching prefix wins.
GROUPS = (
    ("moe router", ("moe_router", "matmul BF16 M=8 ", "matmul BF16 M=1024 N=8 ", "matmul BF16 M=1024 N=1024 K=8")),
    ("moe permute", ("moe_permute",)),
    ("moe combine", ("moe_combine",)),
    ("moe grouped GEMMs", ("grouped_matmul",)),
    ("attention", ("attention", "rope")),
    ("lm head", ("lm_head",)),
    ("dense matmuls", ("matmul",)),
    ("optimizer", ("adamw", "sum_of_squares", "scale")),
    ("casts", ("cast",)),
)
ROW = re.compile(r"^\s+[\d.]+%\s+([\d.]+) s\s+(\d+) calls\s+(.+)$")


def parse(stderr: str) -> dict:
    ops = {}
    for line in stderr.splitlines():
        m = ROW.match(line)
        if m:
            ops[m.group(3).strip()] = (float(m.group(1)), int(m.group(2)))
    if not ops:
        raise RuntimeError("no SFT_PROFILE table in the run's output:\n" + stderr[-2000:])
    return ops


def group_of(op: str) -> str:
    for name, prefixes in GROUPS:
        if op.startswith(prefixes):
            return name
    return "rest"


def available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return float("inf")


def wait_for_memory(need: float, tag: str) -> None:
    """On a shared machine another job's memory would get this run killed: wait until it fits."""
    waited = 0
    while available_gib() < need:
        if waited % 300 == 0:
            print(f"  {tag}: waiting for {need:.0f} GiB of free memory ({available_gib():.1f} available)", flush=True)
        time.sleep(10)
        waited += 10


def run(a, sft: str, tag: str) -> tuple:
    for attempt in range(a.tries):
        wait_for_memory(a.need_gib, tag)
        try:
            return run_once(a, sft, tag)
        except MemoryError as e:
            print(f"  {tag}: {e}; again", flush=True)
    raise RuntimeError(f"{tag}: killed {a.tries} times (SIGKILL: out of memory?)")


def run_once(a, sft: str, tag: str) -> tuple:
    args = argparse.Namespace(**vars(a))
    args.warmup, args.steps = a.warmup + a.steps, 0
    out = Path(a.workdir) / (f"profile-{a.layers}l" if a.layers else "profile") / tag
    cmd = e2e.sft_command(args, sft, Path(a.workdir) / "data.jsonl", Path(a.model), out, a.bf16)
    env = dict(os.environ, SFT_PROFILE="cpu" if a.cpu_clock else "1", SFT_PROFILE_SKIP=str(a.warmup), OMP_NUM_THREADS=str(a.threads),
               SFT_CACHE_DIR=str(Path(a.workdir) / "sft_cache"))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode == -9:
        raise MemoryError("killed by SIGKILL (the kernel's OOM killer?)")
    if p.returncode != 0:
        raise RuntimeError(f"{tag} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return parse(p.stderr), [e["step_time_s"] for e in events if "step_time_s" in e]


def per_step(runs: list, steps: int) -> dict:
    """Each op's seconds per step: the median over the runs (one run: its value)."""
    ops = set().union(*runs)
    return {op: (statistics.median(r.get(op, (0.0, 0))[0] for r in runs) / steps,
                 max(r.get(op, (0.0, 0))[1] for r in runs) // steps) for op in ops}


def make_fewer_layers(shape: str, layers: int, workdir: Path) -> str:
    """The shape with only `layers` decoder layers (seeded random init, as bench_e2e_lib.make_model): every
    layer's ops and the LM head keep their cost, the model its memory minus the other layers'."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    model_dir = workdir / f"model-{shape}-{layers}l"
    if not (model_dir / "model.safetensors").exists():
        config = lib.model_config(shape)
        config.num_hidden_layers = layers
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(model_dir)
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            if (lib.TOKENIZER / name).exists():
                shutil.copy(lib.TOKENIZER / name, model_dir / name)
    return str(model_dir)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sft", action="append", required=True, help="an sft binary (repeat to compare)")
    ap.add_argument("--shape", choices=sorted(lib.SHAPES), default="qwen3-moe-1b")
    ap.add_argument("--workload", choices=sorted(lib.WORKLOADS), default="chat")
    ap.add_argument("--workdir", default="/tmp/sft_bench_e2e", help="bench_train_e2e.py's --workdir")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", type=int, default=1, help="1: --bf16 true (default), 0: fp32")
    ap.add_argument("--need_gib", type=float, default=21.0,
                    help="wait before each run until this much memory is available (qwen3-moe-1b: ~20 GiB peak)")
    ap.add_argument("--cpu_clock", action="store_true",
                    help="SFT_PROFILE=cpu: the main thread's CPU time per op (use with --threads 1 on a loaded machine)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per binary (medians per op)")
    ap.add_argument("--layers", type=int, default=0,
                    help="a copy of the shape with this many decoder layers (less memory; 0: the shape's own)")
    ap.add_argument("--tries", type=int, default=10, help="runs of one configuration before giving up on OOM kills")
    a = ap.parse_args()
    wl = lib.WORKLOADS[a.workload]
    a.seq, a.batch, a.packing, a.lora = wl["seq"], wl["batch"], wl["packing"], 0
    a.model = str(Path(a.workdir) / f"model-{a.shape}")
    if a.layers:
        a.model = make_fewer_layers(a.shape, a.layers, Path(a.workdir))
    a.workdir = str(Path(a.workdir) / f"{a.shape}-{a.workload}")
    if not (Path(a.workdir) / "data.jsonl").exists():
        ap.error(f"no {a.workdir}/data.jsonl: run tools/bench_train_e2e.py with this --workdir first")
    print(f"{a.shape}{f' with {a.layers} layers' if a.layers else ''}, {a.workload}, bf16={bool(a.bf16)}, {a.threads} threads: op seconds per step, steps "
          f"{a.warmup + 1}..{a.warmup + a.steps} (load average {os.getloadavg()[0]:.1f})")
    results = [[] for _ in a.sft]
    for r in range(a.repeat):
        for i, sft in enumerate(a.sft):
            results[i].append(run(a, sft, f"{i}-{r}"))
    tables = [per_step([ops for ops, _ in res], a.steps) for res in results]
    for i, res in enumerate(results):
        times = [t for _, ts in res for t in ts[a.warmup:]]
        print(f"[{i}] step_time_s of steps {a.warmup + 1}..{a.warmup + a.steps}: " + ", ".join(f"{t:.3f}" for t in times))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    heads = " | ".join(f"[{i}] s/step" for i in range(len(tables)))
    print("\nbinaries: " + "; ".join(f"[{i}] {s}" for i, s in enumerate(a.sft)))
    print(f"\n| group | {heads} |\n|---|" + "---|" * len(tables))
    groups = [g for g, _ in GROUPS] + ["rest"]
    totals = [sum(t for t, _ in tab.values()) for tab in tables]
    for g in groups + ["all ops"]:
        cells = []
        for tab, total in zip(tables, totals):
            s = total if g == "all ops" else sum(t for op, (t, _) in tab.items() if group_of(op) == g)
            cells.append(f"{s:.3f} ({100 * s / total:.0f}%)")
        print(f"| {g} | " + " | ".join(cells) + " |")
    ops = sorted(set().union(*tables), key=lambda op: -tables[0].get(op, (0.0, 0))[0])
    print(f"\n| op | calls/step | {heads} |\n|---|---|" + "---|" * len(tables))
    for op in ops:
        calls = next(tab[op][1] for tab in tables if op in tab)
        print(f"| {op} | {calls} | " + " | ".join(f"{tab.get(op, (0.0, 0))[0]:.4f}" for tab in tables) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
