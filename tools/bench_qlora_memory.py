#!/usr/bin/env python3
"""QLoRA on one machine: peak memory and tokens/s of `sft train --load_in_4bit` at Qwen3 1.7B / 4B / 8B shapes,
and of TRL + PEFT + bitsandbytes on the CPU where it fits, each in its own child process.

The run (issue 30's measurement): random weights from the shape's config.json (`--init_from_config`: the 4-bit
base is drawn and quantized a tensor at a time, so the fp32 model never exists), NF4 with bitsandbytes' block
of 64, LoRA r 16 / alpha 32 / dropout 0 on all linear layers, bf16 compute, gradient checkpointing, one packed
row of 1024 tokens per step (the seeded Capybara-like chat of bench_e2e_lib, bfd packing), --warmup + --steps
optimizer steps. Both sides load the weights in --dtype (bfloat16 by default: transformers then holds the
embedding, LM head and norms in bf16 next to the 4-bit weights, bnb_4bit_compute_dtype bf16, and sft holds the
frozen embedding and LM head in bf16 as well, model/frozen_base.h; float32 is TRL's own default, where both keep
an fp32 embedding). Peak RSS is each child's own ru_maxrss (wait4): everything the process held at its peak
(weights, adapters, AdamW moments, activations, the allocator's slack), loading included; the final adapter
save is inside it.

TRL's side needs weights on disk: the script saves a seeded random bf16 model of the shape once (`--trl`;
creating it needs the bf16 model in memory, so the 8B shape is left out unless named in --trl_shapes), then
runs SFTTrainer with BitsAndBytesConfig(load_in_4bit, nf4, compute dtype = --dtype), the same LoraConfig,
gradient checkpointing, bf16, use_cpu. tokens/s = real tokens per step / median step time (sft: metrics.jsonl's
step_time_s; TRL: a callback's on_step_begin → on_step_end).

Shapes (Qwen/Qwen3-*'s config.json, random weights): qwen3-1.7b (28 layers, hidden 2048, 2.03B parameters,
tied), qwen3-4b (36 layers, hidden 2560, 4.02B, tied), qwen3-8b (36 layers, hidden 4096, 8.19B, untied).

Run: ~/.venv-sft/bin/python tools/bench_qlora_memory.py --sft build/sft --shapes qwen3-1.7b,qwen3-4b,qwen3-8b \
         --trl_shapes qwen3-1.7b
Only the memory figures are meaningful on a busy machine; tokens/s need an idle one (the load average is
printed before and after). --sft_before OTHER_SFT runs a second sft binary (say, main's build before a change) on
each shape right before --sft, for an A/B in one invocation; --profile runs sft with SFT_PROFILE=1 and prints the
top rows of its op-time table (ops/profile.h: which kernels the step spends its time in).
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_e2e_lib as lib  # noqa: E402

SHAPES = {
    "qwen3-1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, tie_word_embeddings=True),
    "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, tie_word_embeddings=True),
    "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, tie_word_embeddings=False),
}
QWEN3 = dict(vocab_size=151936, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0,
             rms_norm_eps=1e-6, bos_token_id=None, eos_token_id=151645, pad_token_id=151643)
LORA = dict(r=16, alpha=32)
SEQ = 1024


def shape_config(shape: str):
    from transformers import AutoConfig

    return AutoConfig.for_model("qwen3", **SHAPES[shape], **QWEN3)


def write_config_dir(shape: str, folder: Path) -> int:
    """config.json and the Qwen3 tokenizer files (no weights: sft draws them); returns the parameter count."""
    import torch
    from transformers import AutoModelForCausalLM

    config = shape_config(shape)
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (lib.TOKENIZER / name).exists():
            (folder / name).write_bytes((lib.TOKENIZER / name).read_bytes())
    with torch.device("meta"):
        return sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())


def write_bf16_model(shape: str, folder: Path, config_dir: Path) -> None:
    """A seeded random bf16 model of the shape (TRL loads weights from disk), written once."""
    import torch
    from transformers import AutoModelForCausalLM

    if (folder / "config.json").exists():
        return
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(shape_config(shape), dtype=torch.bfloat16)
    model.save_pretrained(folder)
    del model
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (config_dir / name).exists():
            (folder / name).write_bytes((config_dir / name).read_bytes())


def sft_command(a, binary: str, folder: Path, data: Path, out: Path) -> list[str]:
    return [binary, "train", "--model_name_or_path", str(folder), "--init_from_config", "true",
            "--dataset_name", str(data), "--dtype", a.dtype, "--load_in_4bit", "true", "--bnb_4bit_quant_type", "nf4",
            "--use_peft", "true", "--lora_r", str(LORA["r"]), "--lora_alpha", str(LORA["alpha"]),
            "--lora_dropout", "0", "--lora_target_modules", "all-linear", "--bf16", "true",
            "--gradient_checkpointing", "true", "--packing", "true", "--packing_strategy", "bfd",
            "--max_length", str(SEQ), "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "1",
            "--max_steps", str(a.warmup + a.steps), "--logging_steps", "1", "--learning_rate", "1e-4",
            "--seed", "42", "--train_sampling_strategy", "sequential", "--save_strategy", "no",
            "--report_to", "none", "--output_dir", str(out), "--overwrite_output_dir", "true",
            "--num_threads", str(a.threads)]


def run_sft(a, binary: str, tag: str, shape: str, folder: Path, data: Path, env: dict) -> dict:
    out = Path(a.workdir) / "runs" / f"{tag}-{shape}"
    if a.profile:
        env = dict(env, SFT_PROFILE="1")
    command = sft_command(a, binary, folder, data, out) + (a.sft_args.split() if tag == "sft" else [])
    child = lib.run_child(command, env, out.parent / f"{tag}-{shape}.log")
    if child["rc"] != 0:
        raise RuntimeError(f"sft {shape} failed ({child['rc']}):\n{child['stderr'][-3000:]}")
    start = child["stderr"].find("op time (SFT_PROFILE)")
    if a.profile and start >= 0:
        print("\n".join(child["stderr"][start:].splitlines()[:12]), flush=True)
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    events = [e for e in events if "loss" in e and "step_time_s" in e]
    seen = [int(e["num_tokens"]) for e in events]
    return dict(child, times=[e["step_time_s"] for e in events],
                tokens=[b - p for p, b in zip([0] + seen[:-1], seen)])


def trl_worker(spec: dict) -> None:
    """Inside its own process: TRL + PEFT + bitsandbytes QLoRA on the CPU, step times and tokens to JSON."""
    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(spec["threads"])
    times, tokens = [], []

    class Timer(TrainerCallback):
        start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter() - self.start)

    class Recording(SFTTrainer):
        def training_step(self, model, inputs, num_items_in_batch=None):
            tokens.append(int(inputs["position_ids"].size(1)) if "position_ids" in inputs
                          else int(inputs["input_ids"].numel()))
            return super().training_step(model, inputs, num_items_in_batch)

    dtype = getattr(torch, spec["dtype"])
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
    model = AutoModelForCausalLM.from_pretrained(spec["model"], quantization_config=quant, dtype=dtype)
    config = SFTConfig(output_dir=str(Path(spec["workdir"]) / "trl_out"), use_cpu=True, disable_tqdm=True,
                       max_steps=spec["max_steps"], logging_steps=1, per_device_train_batch_size=1,
                       gradient_accumulation_steps=1, max_length=SEQ, learning_rate=1e-4, seed=42, bf16=True,
                       gradient_checkpointing=True, save_strategy="no", report_to=[], packing=True,
                       packing_strategy="bfd", train_sampling_strategy="sequential")
    peft_config = LoraConfig(r=LORA["r"], lora_alpha=LORA["alpha"], lora_dropout=0.0, target_modules="all-linear",
                             task_type="CAUSAL_LM")
    trainer = Recording(model=model, args=config, callbacks=[Timer()], peft_config=peft_config,
                        train_dataset=load_dataset("json", data_files=spec["data"], split="train"))
    trainer.train()
    Path(spec["result"]).write_text(json.dumps(dict(times=times, tokens=tokens)))


def run_trl(a, shape: str, model: Path, data: Path, env: dict) -> dict:
    logs = Path(a.workdir) / "runs"
    spec = dict(threads=a.threads, workdir=str(logs / f"trl-{shape}"), max_steps=a.warmup + a.steps, dtype=a.dtype,
                model=str(model), data=str(data), result=str(logs / f"trl-{shape}.json"))
    (logs / f"trl-{shape}").mkdir(parents=True, exist_ok=True)
    (logs / f"trl-{shape}.spec.json").write_text(json.dumps(spec))
    child = lib.run_child([sys.executable, __file__, "--worker", str(logs / f"trl-{shape}.spec.json")], env,
                          logs / f"trl-{shape}.log")
    if child["rc"] != 0:
        raise RuntimeError(f"TRL {shape} failed ({child['rc']}):\n{child['stderr'][-3000:]}")
    r = json.loads(Path(spec["result"]).read_text())
    return dict(child, times=r["times"], tokens=r["tokens"])


def rate(a, r: dict) -> float:
    kept_t, kept_n = r["times"][a.warmup:], r["tokens"][a.warmup:]
    return statistics.fmean(kept_n) / statistics.median(kept_t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sft", default=str(lib.REPO / "build" / "sft"))
    ap.add_argument("--sft_before", default="", help="a second sft binary, run on each shape right before --sft (A/B)")
    ap.add_argument("--profile", action="store_true", help="SFT_PROFILE=1 for sft; print its op-time table's top")
    ap.add_argument("--shapes", default="qwen3-1.7b,qwen3-4b,qwen3-8b")
    ap.add_argument("--trl_shapes", default="", help="shapes to run TRL + PEFT + bitsandbytes on too")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
                    help="the dtype both sides load the weights in (TRL's --dtype)")
    ap.add_argument("--sft_args", default="",
                    help="more sft flags for --sft (not --sft_before), e.g. '--gradient_checkpointing_keep_mlp true'")
    ap.add_argument("--workdir", default="/tmp/sft_bench_qlora")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        trl_worker(json.loads(Path(a.worker).read_text()))
        return 0
    shapes = [s for s in a.shapes.split(",") if s]
    trl_shapes = [s for s in a.trl_shapes.split(",") if s]
    for s in shapes + trl_shapes:
        if s not in SHAPES:
            ap.error(f"unknown shape {s}: one of {', '.join(SHAPES)}")
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS=str(a.threads), SFT_CACHE_DIR=str(work / "sft_cache"))
    print(f"QLoRA nf4, r {LORA['r']} all-linear, bf16, weights loaded in {a.dtype}, gradient checkpointing, "
          f"1 × {SEQ} packed tokens, "
          f"{a.warmup} warm-up + {a.steps} timed steps, {a.threads} threads; load average {os.getloadavg()[0]:.1f}")
    rows = []
    for shape in dict.fromkeys(shapes + trl_shapes):
        folder = work / f"config-{shape}"
        params = write_config_dir(shape, folder)
        data = work / "data.jsonl"
        if not data.exists():  # ~10% spare: bfd fills 1024-token rows of 50–600-token documents
            lib.write_chat_rows(data, folder, int(1.1 * SEQ * (a.warmup + a.steps + 1)))
        sides = []
        if shape in shapes and a.sft_before:
            sides.append(("sft (before)", lambda: run_sft(a, a.sft_before, "sft_before", shape, folder, data, env)))
        if shape in shapes:
            sides.append(("sft", lambda: run_sft(a, a.sft, "sft", shape, folder, data, env)))
        if shape in trl_shapes:
            model = work / f"bf16-{shape}"
            write_bf16_model(shape, model, folder)
            sides.append(("TRL + PEFT + bnb", lambda: run_trl(a, shape, model, data, env)))
        for side, run in sides:
            try:
                r = run()
            except RuntimeError as e:
                print(e)
                return 1
            rows.append((shape, params, side, r["maxrss_mib"] / 1024, rate(a, r), r["wall"]))
            print(f"{shape} {side}: peak RSS {rows[-1][3]:.2f} GiB, {rows[-1][4]:.1f} tokens/s, "
                  f"run wall {r['wall']:.0f} s", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}\n")
    print("| shape | parameters | side | peak RSS | tokens/s | run wall |\n|---|---|---|---|---|---|")
    for shape, params, side, rss, tps, wall in rows:
        print(f"| {shape} | {params / 1e9:.2f}B | {side} | {rss:.2f} GiB | {tps:.1f} | {wall:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
