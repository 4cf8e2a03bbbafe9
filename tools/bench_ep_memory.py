#!/usr/bin/env python3
"""Expert parallelism's memory: each rank's peak RSS of `mpirun -np N sft train` with and without --ep_size.

The run (issue 29's per-rank memory): random weights drawn from a config.json (`--init_from_config`) of
tools/bench_e2e_lib.py's qwen3-moe-1b layer (hidden 1024, 8 experts of intermediate 1536, top-2, 16 / 8 heads
of 128) with --layers decoder layers and the 702-token vocabulary of tests/fixtures/trainer_moe (so that the
experts, not a 152k embedding, are most of the model: what expert parallelism splits), fp32, --steps optimizer
steps of one 64-token row per rank, no checkpoint. Each rank runs under GNU time, whose %M is that rank's own
peak RSS (loading, the AdamW moments and activations included; rank 0's also the final export, which reads the
whole model); the EP runs also print the largest resident bytes of rank 0's parameter, gradient and moment
arenas after a step (sft's own mincore count).

Stdlib only (no torch): run it with any python3.
Run: python3 tools/bench_ep_memory.py --sft build/sft [--sft_before /path/to/older/sft] [--layers 4]
Memory figures are valid on a busy machine; check `free -g` first (the run without EP holds ~2.9 GB per rank
at 4 layers).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "trainer_moe" / "model"
DATA = REPO / "tests" / "fixtures" / "train_cli" / "train.jsonl"
# bench_e2e_lib.SHAPES["qwen3-moe-1b"]'s layer (that module imports transformers; this script does not).
LAYER = dict(hidden_size=1024, intermediate_size=3072, moe_intermediate_size=1536, num_local_experts=8,
             num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
             num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096,
             rms_norm_eps=1e-6, initializer_range=0.02,
             rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"})


def write_model(folder: Path, layers: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURE / name, folder / name)
    config = json.loads((FIXTURE / "config.json").read_text())
    config.update(LAYER, num_hidden_layers=layers)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def run(sft: str, np: int, ep: int, model: Path, out: Path, steps: int) -> dict:
    # Each rank under GNU time, its line naming the rank (OpenMPI's OMPI_COMM_WORLD_RANK).
    timed = 'exec /usr/bin/time -f "rank $OMPI_COMM_WORLD_RANK peak-rss-kib %M" "$@"'
    cmd = ["mpirun", "--oversubscribe", "-np", str(np), "sh", "-c", timed, "sh", sft, "train",
           "--model_name_or_path", str(model), "--init_from_config", "true", "--dataset_name", str(DATA),
           "--max_length", "64", "--per_device_train_batch_size", "1", "--max_steps", str(steps),
           "--save_strategy", "no", "--bf16", "false", "--num_threads", "1", "--disable_tqdm", "true",
           "--logging_steps", "1", "--output_dir", str(out), "--overwrite_output_dir", "true"]
    if ep > 1:
        cmd += ["--ep_size", str(ep)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    text = p.stdout + p.stderr
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}\nexit {p.returncode}\n{text[-4000:]}")
    by_rank = sorted((int(r), int(k)) for r, k in re.findall(r"rank (\d+) peak-rss-kib (\d+)", text))
    rss = [k / 1024 for _, k in by_rank]
    arenas = re.search(r"arenas held at most (\d+) resident bytes of (\d+)", text)
    return dict(rss=rss, arenas=(int(arenas[1]), int(arenas[2])) if arenas else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft", default=str(REPO / "build" / "sft"))
    ap.add_argument("--sft_before", help="another sft binary, run with --ep_size too (e.g. main's)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--ep_size", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--work", default="/tmp/sft_bench_ep_memory")
    a = ap.parse_args()
    work = Path(a.work)
    model = work / "model"
    write_model(model, a.layers)
    runs = [("no EP", a.sft, 1), (f"--ep_size {a.ep_size}", a.sft, a.ep_size)]
    if a.sft_before:
        runs.append((f"--ep_size {a.ep_size}, {a.sft_before}", a.sft_before, a.ep_size))
    print(f"qwen3-moe-1b layer x {a.layers}, vocab 702, fp32, mpirun -np {a.np}, {a.steps} steps")
    print("| run | peak RSS per rank, rank 0 (writes the export) first (MiB) "
          "| rank 0's arenas resident after a step (MiB of MiB) |")
    print("|---|---|---|")
    for i, (name, sft, ep) in enumerate(runs):
        r = run(sft, a.np, ep, model, work / f"out{i}", a.steps)
        arenas = f"{r['arenas'][0] / 2**20:.0f} of {r['arenas'][1] / 2**20:.0f}" if r["arenas"] else "—"
        print(f"| {name} | {' / '.join(f'{m:.0f}' for m in r['rss'])} | {arenas} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
