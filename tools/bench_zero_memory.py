#!/usr/bin/env python3
"""Per-rank peak memory and step time of `sft train` under ZeRO stages, several ranks on one host.

For one --shape (tools/bench_e2e_lib.py's Qwen3 shapes, plus qwen3-1.7b: Qwen/Qwen3-1.7B's config) it writes
a model folder holding only config.json and the Qwen3 tokenizer (weights from `--init_from_config`, so no
checkpoint is written or read) and pre-tokenized random rows (bench_e2e_lib.write_random_rows), then runs,
for each stage of --stages, `mpirun --oversubscribe -np N sft train ... --zero_stage S` with each rank under
`/usr/bin/time -f %M`: every rank's own peak RSS (VmHWM, KiB), whatever it held at its worst moment (load,
steps, the final export on rank 0). Step time is rank 0's median `step_time_s` over the steps after the
first (metrics.jsonl), and beside it rank 0's median seconds inside collectives (comm_time_s: waiting for
the other ranks included); the optimizer state per rank is sft's start line.

Memory figures hold on a busy machine; step times do not (interleave stages and say so). Stdlib only.

Run: python3 tools/bench_zero_memory.py --sft build/sft --shape 103m --np 4 --stages 1,3
     python3 tools/bench_zero_memory.py --sft build/sft --shape 103m --np 2 --stages 1,3,1,3 --steps 6
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_e2e_lib as lib  # noqa: E402

SHAPES = dict(lib.SHAPES)
SHAPES["qwen3-1.7b"] = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                            num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                            max_position_embeddings=40960)


def write_model(shape: str, model_dir: Path) -> None:
    config = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_act="silu", rms_norm_eps=1e-6,
                  rope_theta=1000000.0, tie_word_embeddings=True, attention_bias=False, dtype="float32",
                  initializer_range=0.02, bos_token_id=151643, eos_token_id=151645, **SHAPES[shape])
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(config, indent=2))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (lib.TOKENIZER / name).exists():
            shutil.copy(lib.TOKENIZER / name, model_dir / name)


def run(a, stage: int, index: int, model: Path, data: Path) -> dict:
    out = Path(a.workdir) / f"z{stage}_np{a.np}_{index}"
    shutil.rmtree(out, ignore_errors=True)
    train = [a.sft, "train", "--model_name_or_path", str(model), "--init_from_config", "true",
             "--dataset_name", str(data), "--max_length", str(a.seq), "--per_device_train_batch_size", "1",
             "--max_steps", str(a.steps), "--logging_steps", "1", "--learning_rate", "1e-4",
             "--bf16", "true" if a.bf16 else "false", "--gradient_checkpointing", "false",
             "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true",
             "--num_threads", "1", "--zero_stage", str(stage), "--output_dir", str(out)]
    # Each rank under /usr/bin/time: its own VmHWM (KiB), into a file named after its rank.
    rss_dir = Path(a.workdir) / f"rss_z{stage}_{index}"
    shutil.rmtree(rss_dir, ignore_errors=True)
    rss_dir.mkdir(parents=True)
    rank_cmd = (f"exec /usr/bin/time -o '{rss_dir}'/$OMPI_COMM_WORLD_RANK -f %M "
                + " ".join(f"'{x}'" for x in train))
    cmd = ["mpirun", "--oversubscribe", "-np", str(a.np), "sh", "-c", rank_cmd]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"stage {stage} failed (exit {proc.returncode}):\n{log[-4000:]}")
    rss = {int(f.name): int(f.read_text().split()[-1]) * 1024 for f in rss_dir.iterdir()}
    state = re.search(r"optimizer state (\d+) bytes per rank", log)
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    times = [s["step_time_s"] for s in steps if "step_time_s" in s][1:]
    return dict(stage=stage, rss=rss, state=int(state.group(1)) if state else None,
                step_s=statistics.median(times) if times else float("nan"),
                comm=[s.get("comm_time_s", 0) for s in steps][1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sft", default="build/sft")
    p.add_argument("--shape", default="103m", choices=sorted(SHAPES))
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--stages", default="1,3", help="comma-separated, run in this order (repeat to interleave)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seq", type=int, default=256, help="tokens per row (one row per rank and step)")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--workdir", default="/tmp/sft_bench_zero")
    a = p.parse_args()
    work = Path(a.workdir)
    model, data = work / f"model_{a.shape}", work / f"rows_{a.seq}.jsonl"
    write_model(a.shape, model)
    if not data.exists():
        work.mkdir(parents=True, exist_ok=True)
        lib.write_random_rows(data, 64, a.seq)
    load = os.getloadavg()[0]
    print(f"shape {a.shape}, np {a.np}, {a.seq} tokens per rank and step, {'bf16' if a.bf16 else 'fp32'}, "
          f"{a.steps} steps; load average {load:.1f} (step times are only meaningful on an idle machine)")
    print("| stage | optimizer state per rank | peak RSS per rank (rank 0 … n-1) | max | step time (median) "
          "| rank 0 in collectives (median) |")
    print("|---|---|---|---|---|---|")
    step_s = {}
    for i, stage in enumerate(int(s) for s in a.stages.split(",")):
        r = run(a, stage, i, model, data)
        step_s.setdefault(stage, []).append(r["step_s"])
        ranks = ", ".join(f"{r['rss'][k] / 2**30:.3f}" for k in sorted(r["rss"]))
        print(f"| ZeRO-{stage} | {r['state']:,} B | {ranks} GiB | {max(r['rss'].values()) / 2**30:.3f} GiB | "
              f"{r['step_s']:.3f} s | {statistics.median(r['comm']) if r['comm'] else float('nan'):.3f} s |",
              flush=True)
    # The stages' step times against the first stage's, each a median over its runs in this invocation.
    first = next(iter(step_s))
    for stage, times in step_s.items():
        if stage != first:
            ratio = statistics.median(times) / statistics.median(step_s[first])
            print(f"ZeRO-{stage} / ZeRO-{first} step time: {ratio:.3f}x (medians of {len(times)} and "
                  f"{len(step_s[first])} runs)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
