#!/usr/bin/env python3
"""End-to-end training throughput: `sft train` vs TRL's SFTTrainer on CPU, one script, side by side.

Both train the same Qwen3-shaped model (random init, saved by transformers to --workdir: 8 layers,
hidden 512, intermediate 1536, 8 heads / 4 kv heads of 64, vocab 151,936 with the Qwen3 tokenizer from
../shared/assets/tokenizers/qwen3, tied embeddings: 103.2M parameters, fp32) on the same synthetic data:
pre-tokenized rows of exactly --seq tokens (random ids; `input_ids` only, so labels = input_ids, no
padding and no packing needed: every row is a full sequence), with the same flags: batch --batch,
gradient accumulation 1, --warmup + --steps optimizer steps, lr 1e-4, logging every step, fp32
(--bf16 false), no gradient checkpointing (TRL's SFTConfig turns it on by default; both off here),
no checkpoints. Each side runs in its own process with --threads threads
(torch.set_num_threads + OMP/MKL/OpenBLAS variables for TRL, --num_threads for sft).

Per-step wall time: TRL from a TrainerCallback (on_step_begin → on_step_end: data collation, forward,
backward, clipping, optimizer), sft from metrics.jsonl's step_time_s. The first --warmup steps are dropped;
tokens/s = tokens per step / median step time. "run wall" is the whole command (load, data preparation,
training, and for sft the final model export).

Run: ~/.venv-sft/bin/python tools/bench_train_e2e.py --sft build/sft
     ~/.venv-sft/bin/python tools/bench_train_e2e.py            (TRL only; prints the sft command)
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO.parent / "shared" / "assets" / "tokenizers" / "qwen3"
SHAPE = dict(vocab_size=151936, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, head_dim=64)


def common_flags(a, data: Path, model: Path) -> list[str]:
    return ["--model_name_or_path", str(model), "--dataset_name", str(data),
            "--max_steps", str(a.warmup + a.steps), "--logging_steps", "1",
            "--per_device_train_batch_size", str(a.batch), "--gradient_accumulation_steps", "1",
            "--max_length", str(a.seq), "--learning_rate", "1e-4", "--seed", "42", "--bf16", "false",
            "--gradient_checkpointing", "false",
            "--save_strategy", "no", "--report_to", "none"]


def make_inputs(a) -> tuple[Path, Path]:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    work = Path(a.workdir)
    model_dir, data = work / "model", work / "data.jsonl"
    if not (model_dir / "model.safetensors").exists():
        shutil.rmtree(model_dir, ignore_errors=True)
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(Qwen3Config(**SHAPE, tie_word_embeddings=True, max_position_embeddings=4096,
                                             rope_theta=1000000.0, bos_token_id=None, eos_token_id=151645,
                                             pad_token_id=151643))
        model.save_pretrained(model_dir)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(TOKENIZER / name, model_dir / name)
    rng = random.Random(0)
    rows = a.batch * (a.warmup + a.steps)
    with data.open("w") as f:
        for _ in range(rows):
            f.write(json.dumps({"input_ids": [rng.randrange(151643) for _ in range(a.seq)]}) + "\n")
    return model_dir, data


def trl_worker(a) -> None:
    """Runs in its own process: TRL's SFTTrainer with the common flags; prints step times as JSON."""
    import torch
    from datasets import load_dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(a.threads)
    model_dir, data = Path(a.workdir) / "model", Path(a.workdir) / "data.jsonl"

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    config = SFTConfig(output_dir=str(Path(a.workdir) / "trl_out"), use_cpu=True, disable_tqdm=True,
                       max_steps=a.warmup + a.steps, logging_steps=1, per_device_train_batch_size=a.batch,
                       gradient_accumulation_steps=1, max_length=a.seq, learning_rate=1e-4, seed=42, bf16=False,
                       gradient_checkpointing=False, save_strategy="no",
                       report_to=[])
    timer = Timer()
    trainer = SFTTrainer(model=str(model_dir), args=config,
                         train_dataset=load_dataset("json", data_files=str(data), split="train"), callbacks=[timer])
    trainer.train()
    print("STEP_TIMES " + json.dumps(timer.times))


def summarise(name: str, times: list[float], a, wall: float) -> float:
    kept = times[a.warmup:]
    tokens = a.batch * a.seq
    median = statistics.median(kept)
    print(f"{name:>5}: step {median:.3f} s median over {len(kept)} steps (min {min(kept):.3f}, max {max(kept):.3f}), "
          f"{tokens / median:.1f} tokens/s; run wall {wall:.1f} s")
    return tokens / median


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sft", help="the sft binary (omit to run only the TRL half)")
    ap.add_argument("--workdir", default="/tmp/sft_bench_e2e")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=["trl"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "trl":
        trl_worker(a)
        return 0

    Path(a.workdir).mkdir(parents=True, exist_ok=True)
    model_dir, data = make_inputs(a)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS=str(a.threads))
    print(f"model {model_dir} ({SHAPE}), {a.batch} x {a.seq} tokens per step, {a.warmup} warm-up + {a.steps} "
          f"timed steps, {a.threads} threads; load average {os.getloadavg()[0]:.1f}")
    sft_cmd = [a.sft or "build/sft", "train", *common_flags(a, data, model_dir), "--output_dir",
               str(Path(a.workdir) / "sft_out"), "--overwrite_output_dir", "true", "--num_threads", str(a.threads)]

    rates = {}
    if a.sft:
        t0 = time.perf_counter()
        done = subprocess.run(sft_cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            print(f"sft train failed ({done.returncode}):\n{done.stderr[-3000:]}")
            return 1
        events = [json.loads(line) for line in (Path(a.workdir) / "sft_out" / "metrics.jsonl").read_text().splitlines()]
        times = [e["step_time_s"] for e in events if "loss" in e and "step_time_s" in e]
        rates["sft"] = summarise("sft", times, a, wall)
    else:
        print("sft half not run; command:\n  " + " ".join(sft_cmd))

    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--worker", "trl", "--workdir", a.workdir, "--seq", str(a.seq),
                           "--batch", str(a.batch), "--steps", str(a.steps), "--warmup", str(a.warmup),
                           "--threads", str(a.threads)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        print(f"TRL failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return 1
    times = json.loads(done.stdout.split("STEP_TIMES ", 1)[1].splitlines()[0])
    rates["trl"] = summarise("trl", times, a, wall)
    if "sft" in rates:
        print(f"ratio sft / TRL: {rates['sft'] / rates['trl']:.2f}x tokens/s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
