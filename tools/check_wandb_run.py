#!/usr/bin/env python3
"""Read an offline W&B run written by `sft train --report_to wandb` back with the wandb package,
and compare it with the run's metrics.jsonl.

Two independent readers:
  1. wandb-core's own reader: `wandb leet inspect --json FILE` (every record, decoded by the SDK's Go
     service) and `wandb leet inspect --summary --json FILE` (the run's state, config and summary
     as W&B computes them);
  2. the framing parsed here (header, 32 KiB blocks, CRC-32 of type + chunk) and each record
     decoded with the SDK's protobuf classes (wandb.proto.wandb_internal_pb2.Record).
Then: every metrics.jsonl event must be in the history (or the summary, for train_runtime,
train_samples_per_second, train_steps_per_second, train_loss and total_flos) under WandbCallback's
names (eval_x -> eval/x, x -> train/x, plus train/global_step = step) with the same value (exactly:
same float), in the same order; the run must be "finished" with exit code 0; the config must hold the
training arguments; `wandb sync --dry-run` must list the run. Exit status 1 on any difference.

Run: ~/.venv-sft/bin/python tools/check_wandb_run.py --run WANDB_DIR/wandb/latest-run --metrics OUTPUT_DIR/metrics.jsonl
     ~/.venv-sft/bin/python tools/check_wandb_run.py --sft build/sft    (trains the tiny fixture model
                                              for 6 steps with an eval into a temp folder, then checks it)
Needs wandb (tools/requirements.txt).
"""

import argparse
import glob
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WANDB = str(Path(sys.executable).parent / "wandb")
SINGLE = ("train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos")


def records(path: Path) -> list:
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:7] == b":W&B\xe1\xbe\x00", f"bad header {data[:7]!r}"
    out, pending, off = [], b"", 7
    while off < len(data):
        left = 32768 - off % 32768
        if left < 7:
            assert data[off:off + left] == bytes(left), f"non-zero block tail at {off}"
            off += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[off:off + 7])
        chunk = data[off + 7:off + 7 + length]
        assert zlib.crc32(bytes([kind]) + chunk) == crc, f"bad CRC at {off}"
        pending += chunk
        off += 7 + length
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            out.append(rec)
            pending = b""
    assert pending == b"", "the last record is cut"
    return out


def same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def check(run_dir: Path, metrics: Path) -> int:
    problems = []
    files = glob.glob(str(run_dir / "run-*.wandb"))
    if len(files) != 1:
        print(f"{run_dir}: expected one run-*.wandb, found {files}")
        return 1
    wfile = Path(files[0])
    run_id = wfile.stem[len("run-"):]
    if not run_dir.resolve().name.startswith("offline-run-") or not run_dir.resolve().name.endswith(run_id):
        problems.append(f"folder name {run_dir.resolve().name} is not offline-run-<time>-{run_id}")

    # Reader 1: wandb-core.
    inspect = subprocess.run([WANDB, "leet", "inspect", "--json", str(wfile)], capture_output=True, text=True)
    if inspect.returncode != 0:
        problems.append(f"wandb leet inspect failed: {inspect.stderr.strip()}")
    core = [json.loads(line) for line in inspect.stdout.splitlines() if line.strip()]
    summary = json.loads(subprocess.run([WANDB, "leet", "inspect", "--summary", "--json", str(wfile)],
                                        capture_output=True, text=True, check=True).stdout)
    core_history = [r["history"]["item"] for r in core if r["type"] == "history"]

    # Reader 2: our framing + the SDK's protobufs.
    recs = records(wfile)
    history = []
    for rec in recs:
        if rec.WhichOneof("record_type") == "history":
            history.append({(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in rec.history.item})
    if len(history) != len(core_history):
        problems.append(f"{len(history)} history rows here, {len(core_history)} by wandb-core")
    for a, b in zip(history, core_history):
        for k, v in a.items():
            if not same(v, b.get(k)):
                problems.append(f"history {k}: {v} here, {b.get(k)} by wandb-core")

    events = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    rows = iter(history)
    checked = 0
    for e in events:
        expect = {}
        for k, v in e.items():
            if k == "step":
                continue
            if k in SINGLE:
                if not same(summary["summary"].get(k), v):
                    problems.append(f"summary {k}: {summary['summary'].get(k)} != metrics.jsonl {v}")
                checked += 1
                continue
            expect["eval/" + k[5:] if k.startswith("eval_") else "train/" + k] = v
        expect["train/global_step"] = e["step"]
        row = next(rows, None)
        if row is None:
            problems.append(f"no history row for the event at step {e['step']}")
            break
        for k, v in expect.items():
            checked += 1
            if not same(row.get(k), v):
                problems.append(f"step {e['step']} {k}: history {row.get(k)} != metrics.jsonl {v}")
    if next(rows, None) is not None:
        problems.append("more history rows than metrics.jsonl events")
    if summary.get("state") != "finished" or summary.get("exit_code") != 0:
        problems.append(f"run state {summary.get('state')}, exit code {summary.get('exit_code')}")
    config = summary.get("config", {})
    for k in ("learning_rate", "per_device_train_batch_size", "max_steps", "model_name_or_path",
              "model/num_parameters", "hidden_size"):
        if k not in config:
            problems.append(f"config has no {k}")
    dry = subprocess.run([WANDB, "sync", "--dry-run", str(run_dir)], capture_output=True, text=True)
    if "Would sync 1 run" not in dry.stdout + dry.stderr:
        problems.append(f"wandb sync --dry-run: {(dry.stdout + dry.stderr).strip()}")

    print(f"{wfile}: {len(recs)} records, {len(history)} history rows, {checked} values compared with "
          f"{metrics}; run {summary.get('run_id')} '{summary.get('name')}' in project {summary.get('project')}, "
          f"state {summary.get('state')}, {len(config)} config keys")
    for p in problems:
        print("  DIFFERENT: " + p)
    print("ok" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


def run_sft(sft: str, work: Path) -> tuple[Path, Path]:
    out = work / "out"
    env = dict(os.environ, WANDB_DIR=str(work), WANDB_PROJECT="sft-check", WANDB_MODE="offline")
    cmd = [sft, "train", "--model_name_or_path", "tests/fixtures/trl_parity/model",
           "--dataset_name", "tests/fixtures/trl_parity/data.jsonl", "--output_dir", str(out),
           "--max_steps", "6", "--logging_steps", "1", "--per_device_train_batch_size", "2", "--max_length", "128",
           "--learning_rate", "1e-3", "--bf16", "false", "--report_to", "wandb", "--run_name", "check-run",
           "--eval_strategy", "steps", "--eval_steps", "3", "--eval_split_ratio", "0.1", "--save_strategy", "no",
           "--disable_tqdm", "true"]
    subprocess.run(cmd, cwd=REPO, env=env, check=True)
    return work / "wandb" / "latest-run", out / "metrics.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", help="an offline run folder (or wandb/latest-run)")
    parser.add_argument("--metrics", help="the run's output_dir/metrics.jsonl")
    parser.add_argument("--sft", help="the sft binary: train the tiny fixture and check that run")
    args = parser.parse_args()
    if args.sft:
        with tempfile.TemporaryDirectory() as tmp:
            run, metrics = run_sft(str(Path(args.sft).resolve()), Path(tmp))
            return check(run, metrics)
    if not (args.run and args.metrics):
        parser.error("give --run and --metrics, or --sft")
    return check(Path(args.run), Path(args.metrics))


if __name__ == "__main__":
    sys.exit(main())
