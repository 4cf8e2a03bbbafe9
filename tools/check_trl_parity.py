#!/usr/bin/env python3
"""Compare `sft train` with TRL's SFTTrainer step by step, for people (ctest runs the same check as
tests/cli/train_trl_parity.cmake, without Python).

For each configuration golden in tests/fixtures/trl_parity/ (tools/make_trl_train_goldens.py) this runs
`sft train` with the golden's flags (or reads an existing run with --runs), then prints per step the sft
and TRL values of loss, grad_norm and learning_rate with their relative differences, the relative
differences of entropy, mean_token_accuracy, num_tokens and epoch, and for every key the first step over
its tolerance (the same tolerances as the ctest: 1e-4 relative for loss, grad_norm, learning_rate and
entropy; 1e-6 for epoch, num_tokens and mean_token_accuracy). Exit status 1 when anything is over.

Run: python3 tools/check_trl_parity.py --sft build/sft [--configs bfd_gas4 ...] [--work /tmp/parity]
     python3 tools/check_trl_parity.py --runs /tmp/parity      (folders <work>/<config>/metrics.jsonl)
Needs only the Python standard library.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "trl_parity"
TOLERANCE = {"loss": 1e-4, "grad_norm": 1e-4, "learning_rate": 1e-4, "entropy": 1e-4,
             "epoch": 1e-6, "num_tokens": 1e-6, "mean_token_accuracy": 1e-6}


def rel(a: float, b: float) -> float:
    big = max(abs(a), abs(b))
    return 0.0 if big == 0 else abs(a - b) / big


def read_metrics(path: Path) -> dict[int, dict]:
    steps = {}
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if "loss" in event and "step" in event:
            steps[int(event["step"])] = event
    return steps


def compare(config: str, golden: dict, got: dict[int, dict]) -> int:
    print(f"\n== {config}: {' '.join(golden['flags'])}")
    print(f"{'step':>4} {'loss sft':>12} {'loss trl':>12} {'rel':>8} {'gnorm sft':>11} {'gnorm trl':>11} {'rel':>8} "
          f"{'lr rel':>8} {'ent rel':>8} {'acc rel':>8} {'tok rel':>8} {'ep rel':>8}")
    first_bad, worst = {}, {}
    for want in golden["steps"]:
        step = want["step"]
        have = got.get(step)
        if have is None:
            print(f"{step:>4} missing from metrics.jsonl")
            first_bad.setdefault("step", step)
            continue
        r = {}
        for key, tol in TOLERANCE.items():
            if key not in have:
                r[key] = float("inf")
            else:
                r[key] = rel(float(have[key]), float(want[key]))
            worst[key] = max(worst.get(key, 0.0), r[key])
            if r[key] > tol:
                first_bad.setdefault(key, step)
        print(f"{step:>4} {have.get('loss', float('nan')):>12.7f} {want['loss']:>12.7f} {r['loss']:>8.1e} "
              f"{have.get('grad_norm', float('nan')):>11.6f} {want['grad_norm']:>11.6f} {r['grad_norm']:>8.1e} "
              f"{r['learning_rate']:>8.1e} {r['entropy']:>8.1e} {r['mean_token_accuracy']:>8.1e} "
              f"{r['num_tokens']:>8.1e} {r['epoch']:>8.1e}")
    print("worst relative difference: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    if first_bad:
        print("OVER TOLERANCE, first step: " + ", ".join(f"{k} at step {s}" for k, s in first_bad.items()))
    else:
        print("ok")
    return len(first_bad)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sft", help="the sft binary (runs `sft train` for each configuration)")
    parser.add_argument("--runs", help="compare existing runs: <runs>/<config>/metrics.jsonl")
    parser.add_argument("--work", default="/tmp/sft_trl_parity", help="output folders for --sft runs")
    parser.add_argument("--configs", nargs="*", help="configuration names (default: every golden)")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="more flags for `sft train` (e.g. --num_threads 2), after everything else")
    args = parser.parse_args()
    if bool(args.sft) == bool(args.runs):
        parser.error("give exactly one of --sft and --runs")
    configs = args.configs or sorted(p.stem for p in FIXTURES.glob("*.json"))
    failures = 0
    for config in configs:
        golden = json.loads((FIXTURES / f"{config}.json").read_text())
        if args.sft:
            out = Path(args.work) / config
            cmd = [args.sft, "train", *golden["flags"], "--output_dir", str(out), "--overwrite_output_dir", "true",
                   *args.extra]
            done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"\n== {config}: sft train failed ({done.returncode})\n{done.stderr[-3000:]}")
                failures += 1
                continue
        else:
            out = Path(args.runs) / config
        failures += compare(config, golden, read_metrics(out / "metrics.jsonl"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
