#!/usr/bin/env python3
"""End-to-end training throughput: `sft train` vs TRL's SFTTrainer on CPU, fp32 and bf16, one script, side by side.

One invocation runs, for one --shape and one --workload, up to four modes, each in its own child process:
  sft-fp32 (`--bf16 false`), sft-bf16 (`--bf16 true`), trl-fp32 (SFTConfig(bf16=False)), trl-bf16
  (SFTConfig(bf16=True, use_cpu=True): accelerate's CPU autocast to bfloat16 with fp32 master weights; the
  worker checks it with a forward hook on the first o_proj (every family has one) and prints the output dtype it saw, which is
  torch.bfloat16 under autocast and torch.float32 otherwise).
Shapes (random init, saved by transformers to --workdir, Qwen3 tokenizer and chat template from
../shared/assets/tokenizers/qwen3, tied embeddings, fp32 weights; Qwen3 unless named):
  103m            8 layers, hidden 512, intermediate 1536, 8 heads / 4 kv heads of 64, vocab 151,936 (103.2M);
  qwen3-0.6b      Qwen/Qwen3-0.6B's config: 28 layers, hidden 1024, intermediate 3072, 16 / 8 heads of 128;
  phi4-mini-103m  Phi-3 (Phi-4-mini's layer: fused projections, 3/4 rotary) at 103m's size, vocab 200,064;
  gemma3-1b-103m  Gemma 3 text (Gemma 3 1B's layer: 5 sliding : 1 full) at 103m's size, vocab 262,144.
Workloads:
  random  2 × 512 pre-tokenized random ids per step (`input_ids` only: labels = input_ids, no padding);
  chat    packed synthetic Capybara-like chat (a seeded `messages` JSONL: 1–5 user/assistant exchanges of
          English-like words, 50–600 template tokens each), `--packing true` (bfd, TRL's default strategy,
          padding-free), max_length 1024, 1 row per step. Both sides tokenize and pack it themselves; the
          script checks that their tokens per step agree and prints both.
Same flags on both sides: rows in dataset order (`--train_sampling_strategy sequential`, so the rows of
every step are known up front; sft's default random order is TRL's too, and the order does not change the
cost of a row), gradient accumulation 1, --warmup + --steps optimizer
steps, lr 1e-4, seed 42, logging every step, no gradient checkpointing (TRL's SFTConfig turns it on by
default; off here), no checkpoints, --threads threads (torch.set_num_threads + OMP/MKL/OpenBLAS variables;
--num_threads for sft).

Per step: TRL's time from a TrainerCallback (on_step_begin → on_step_end: forward, backward, clipping,
optimizer; transformers 5 collates the batch before on_step_begin), sft's from metrics.jsonl (step_time_s,
batch assembly included). The first --warmup steps are dropped; medians of the rest. tokens/s = real tokens
per step / median step time. Model GFLOP/s = FLOPs per step / median step time with sft's formula
(6 · matmul parameters · tokens + causal attention, bench_e2e_lib.step_flops): for sft its metrics.jsonl
(gflops × step_time_s), for TRL the formula on the batches TRL trained (the script prints both per-step
counts; they agree when both saw the same rows). "% peak" divides by --peak_gflops, else by the FP32 FMA
figure of bench_peak_flops at --threads threads. Peak RSS is each child's ru_maxrss (wait4; for sft the
final export, ~2× the parameters, is inside the same process). "saved activations" is sft's own line
"[train] saved activations: N MiB ..." (its first micro-batch). "run wall" is the whole child (load, data
preparation, training, and for sft the final model export).

--lora R: LoRA instead of full fine-tuning on both sides (sft `--use_peft true --lora_r R --lora_alpha 2R
--lora_dropout 0 --lora_target_modules all-linear`; TRL with the same PEFT LoraConfig); the report adds each
side's trainable parameter count. GFLOP/s keep the full fine-tuning formula (6 · matmul params · tokens), so
for LoRA they read as "full-fine-tuning-equivalent" rates.

Run: ~/.venv-sft/bin/python tools/bench_train_e2e.py --sft build/sft --workload chat
     ~/.venv-sft/bin/python tools/bench_train_e2e.py --sft build/sft --shape qwen3-0.6b --workload chat --lora 16
     ~/.venv-sft/bin/python tools/bench_train_e2e.py --modes trl-fp32,trl-bf16   (TRL only)
Numbers are only meaningful on an otherwise idle machine: the load average is printed before and after.
"""

import argparse
import json
import os
import platform
import re
import shlex
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_e2e_lib as lib  # noqa: E402


def sft_command(a, sft: str, data: Path, model: Path, out: Path, bf16: bool) -> list[str]:
    return [sft, "train", "--model_name_or_path", str(model), "--dataset_name", str(data),
            "--max_steps", str(a.warmup + a.steps), "--logging_steps", "1",
            "--per_device_train_batch_size", str(a.batch), "--gradient_accumulation_steps", "1",
            "--max_length", str(a.seq), "--learning_rate", "1e-4", "--seed", "42",
            "--bf16", "true" if bf16 else "false", "--gradient_checkpointing", "false",
            "--packing", "true" if a.packing else "false", "--packing_strategy", "bfd",
            "--train_sampling_strategy", "sequential",
            "--save_strategy", "no", "--report_to", "none", "--output_dir", str(out),
            "--overwrite_output_dir", "true", "--num_threads", str(a.threads)] + (
                ["--use_peft", "true", "--lora_r", str(a.lora), "--lora_alpha", str(2 * a.lora),
                 "--lora_dropout", "0", "--lora_target_modules", "all-linear"] if a.lora else [])


def run_sft(a, mode: str, sft: str, data: Path, model: Path, env: dict) -> dict:
    out = Path(a.workdir) / "runs" / mode
    child = lib.run_child(sft_command(a, sft, data, model, out, mode == "sft-bf16"), env, out.parent / f"{mode}.log")
    if child["rc"] != 0:
        raise RuntimeError(f"{mode} failed ({child['rc']}):\n{child['stderr'][-3000:]}")
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    events = [e for e in events if "loss" in e and "step_time_s" in e]
    seen = [int(e["num_tokens"]) for e in events]  # cumulative real tokens
    saved = re.search(r"saved activations:\s*([\d.]+)\s*MiB", child["stdout"] + child["stderr"])
    trainable = re.search(r"\((\d+) trainable: LoRA\)", child["stdout"] + child["stderr"])
    return dict(child, trainable=int(trainable.group(1)) if trainable else None, times=[e["step_time_s"] for e in events],
                tokens=[b - p for p, b in zip([0] + seen[:-1], seen)],
                flops=[e["gflops"] * 1e9 * e["step_time_s"] for e in events],
                saved_mib=float(saved.group(1)) if saved else None)


def run_trl(a, mode: str, data: Path, model: Path, n_matmul: int, env: dict) -> dict:
    logs = Path(a.workdir) / "runs"
    spec = dict(threads=a.threads, workdir=str(logs / mode), max_steps=a.warmup + a.steps, batch=a.batch,
                seq=a.seq, bf16=mode == "trl-bf16", packing=a.packing, model=str(model), data=str(data),
                result=str(logs / f"{mode}.json"), lora_r=a.lora)
    (logs / mode).mkdir(parents=True, exist_ok=True)
    (logs / f"{mode}.spec.json").write_text(json.dumps(spec))
    child = lib.run_child([sys.executable, __file__, "--worker", str(logs / f"{mode}.spec.json")], env,
                          logs / f"{mode}.log")
    if child["rc"] != 0:
        raise RuntimeError(f"{mode} failed ({child['rc']}):\n{child['stderr'][-3000:]}")
    r = json.loads(Path(spec["result"]).read_text())
    if r["matmul_params"] != n_matmul:
        raise RuntimeError(f"{mode}: TRL's model has {r['matmul_params']} matmul parameters, expected {n_matmul}")
    return dict(child, times=r["times"], tokens=[s["tokens"] for s in r["steps"]], probe=r["probe"],
                flops=[lib.step_flops(n_matmul, a.shape, s["docs"]) for s in r["steps"]], saved_mib=None,
                mixed_precision=r["mixed_precision"], trainable=r.get("trainable") if a.lora else None)


def summarise(a, res: dict, peak: float | None) -> dict:
    kept = slice(a.warmup, None)
    times, tokens, flops = res["times"][kept], res["tokens"][kept], res["flops"][kept]
    median = statistics.median(times)
    # Tokens and FLOPs per step as means over the kept steps: packed rows differ slightly in length.
    tok, fl = statistics.fmean(tokens), statistics.fmean(flops)
    return dict(step=median, lo=min(times), hi=max(times), tokens=tok, rate=tok / median,
                gflops=fl / median / 1e9, peak=(fl / median / 1e9 / peak) if peak else None)


def fmt(x, spec: str, none: str = "n/a") -> str:
    return none if x is None else format(x, spec)


def report(a, results: dict, stats: dict, peak: float | None, peak_src: str, n_matmul: int, load: tuple) -> None:
    print("\ntokens per step (all steps, warm-up included):")
    for mode, r in results.items():
        print(f"  {mode:>8}: {r['tokens']}")
    lists = {tuple(r["tokens"]) for r in results.values()}
    print("  -> every mode trained the same tokens per step" if len(lists) == 1 else
          "  -> MISMATCH: the modes did not train the same rows; the comparison is not like for like")
    sft_f = next((r["flops"] for m, r in results.items() if m.startswith("sft")), None)
    trl_f = next((r["flops"] for m, r in results.items() if m.startswith("trl")), None)
    if sft_f and trl_f and len(sft_f) == len(trl_f):
        worst = max(abs(s - t) / t for s, t in zip(sft_f, trl_f))
        print(f"  FLOPs per step, sft's metrics.jsonl vs the formula on TRL's batches: max relative difference "
              f"{worst:.2e}")
    for mode, r in results.items():
        if "probe" in r:
            print(f"  {mode}: accelerate mixed_precision={r['mixed_precision']}; first o_proj computed "
                  f"{r['probe'].get('output_dtype')} (autocast {r['probe'].get('autocast')}, "
                  f"{r['probe'].get('autocast_dtype')}; weights {r['probe'].get('weight_dtype')})")
            want = "torch.bfloat16" if mode == "trl-bf16" else "torch.float32"
            if r["probe"].get("output_dtype") != want:
                print(f"  WARNING: {mode} did not compute in {want}; its row is not the mode it names")

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    s = lib.SHAPES[a.shape]
    what = (f"{a.batch} × {a.seq} random ids" if a.workload == "random" else
            f"packed chat (bfd), {a.batch} × ≤ {a.seq}")
    print(f"\n### {a.shape} ({n_matmul / 1e6:.1f}M matmul parameters, {s['num_hidden_layers']} layers, hidden "
          f"{s['hidden_size']}), {what}, {a.threads} threads\n")
    print(f"Machine: {cpu}, {os.cpu_count()} CPUs; FP32 FMA peak {fmt(peak, '.0f')} GFLOP/s ({peak_src}); "
          f"load average {load[0]:.1f} before, {load[1]:.1f} after. Median of {a.steps} step(s) after "
          f"{a.warmup} warm-up.\n")
    print("| mode | step (s) median [min–max] | tokens/step | tokens/s | model GFLOP/s | % of peak | "
          "peak RSS (MiB) | saved activations (MiB) | run wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode, st in stats.items():
        r = results[mode]
        print(f"| {mode} | {st['step']:.3f} [{st['lo']:.3f}–{st['hi']:.3f}] | {st['tokens']:.0f} | "
              f"{st['rate']:.1f} | {st['gflops']:.1f} | {fmt(st['peak'] and 100 * st['peak'], '.1f')} | "
              f"{r['maxrss_mib']:.0f} | {fmt(r['saved_mib'], '.0f', '—')} | {r['wall']:.1f} |")
    rate = {m: st["rate"] for m, st in stats.items()}
    def best(side: str):  # (tokens/s, mode) of the side's fastest mode, or None
        return max(((v, m) for m, v in rate.items() if m.startswith(side)), default=None)

    lines = []
    if best("sft") and best("trl"):
        (sv, sm), (tv, tm) = best("sft"), best("trl")
        lines.append(f"sft fastest ({sm}) / TRL fastest ({tm}): **{sv / tv:.2f}×** tokens/s")
    for x in ("fp32", "bf16"):
        if f"sft-{x}" in rate and f"trl-{x}" in rate:
            lines.append(f"sft {x} / TRL {x}: **{rate[f'sft-{x}'] / rate[f'trl-{x}']:.2f}×**")
    if lines:
        print("\n" + "; ".join(lines) + ".")
    print("\nReproduce:\n```bash\n~/.venv-sft/bin/python tools/bench_train_e2e.py " + shlex.join(sys.argv[1:]) +
          "\n```")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sft", help="the sft binary (default: build/sft when it exists; else sft modes are skipped)")
    ap.add_argument("--modes", default=",".join(lib.MODES), help="comma-separated subset of " + ",".join(lib.MODES))
    ap.add_argument("--shape", choices=sorted(lib.SHAPES), default="103m")
    ap.add_argument("--workload", choices=sorted(lib.WORKLOADS), default="random")
    ap.add_argument("--seq", type=int, help="tokens per row / max_length (default: 512 random, 1024 chat)")
    ap.add_argument("--batch", type=int, help="rows per step (default: 2 random, 1 chat)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default="/tmp/sft_bench_e2e")
    ap.add_argument("--peak_gflops", type=float, help="machine peak (default: measured by --peak_bench)")
    ap.add_argument("--peak_bench", help="bench_peak_flops binary (default: next to --sft, else "
                    "/work/main/build/bench/bench_peak_flops)")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank on all linear layers (0: full fine-tuning)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        lib.trl_worker(json.loads(Path(a.worker).read_text()))
        return 0
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not modes or any(m not in lib.MODES for m in modes):
        ap.error(f"--modes takes a comma-separated subset of {','.join(lib.MODES)}")
    wl = lib.WORKLOADS[a.workload]
    a.seq, a.batch, a.packing = a.seq or wl["seq"], a.batch or wl["batch"], wl["packing"]
    sft = a.sft or (str(lib.REPO / "build" / "sft") if (lib.REPO / "build" / "sft").exists() else None)

    work = Path(a.workdir) / (f"{a.shape}-{a.workload}" + (f"-lora{a.lora}" if a.lora else ""))
    work.mkdir(parents=True, exist_ok=True)
    a.workdir = str(work)
    model = Path(a.workdir).parent / f"model-{a.shape}"
    n_matmul = lib.make_model(a.shape, model)
    data = work / "data.jsonl"
    if a.workload == "random":
        lib.write_random_rows(data, a.batch * (a.warmup + a.steps), a.seq)
        print(f"data: {a.batch * (a.warmup + a.steps)} rows of {a.seq} random ids")
    else:
        # ~10% spare: bfd fills rows of 50–600-token documents almost completely.
        count, lengths = lib.write_chat_rows(data, model, int(1.1 * a.seq * a.batch * (a.warmup + a.steps + 1)))
        print(f"data: {count} conversations, {sum(lengths)} tokens (each {min(lengths)}–{max(lengths)}, "
              f"median {statistics.median(lengths):.0f})")

    if a.peak_gflops:
        peak, peak_src = a.peak_gflops, "--peak_gflops"
    else:
        bench = Path(a.peak_bench) if a.peak_bench else (
            Path(sft).resolve().parent / "bench" / "bench_peak_flops" if sft else Path("/nonexistent"))
        if not bench.exists():
            bench = Path("/work/main/build/bench/bench_peak_flops")
        peak, peak_src = lib.measure_peak(bench, a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
               OPENBLAS_NUM_THREADS=str(a.threads), SFT_CACHE_DIR=str(work / "sft_cache"))
    load_before = os.getloadavg()[0]
    print(f"{a.shape}, {a.workload}: {a.batch} × {a.seq}{' packed (bfd)' if a.packing else ''}, {a.warmup} "
          f"warm-up + {a.steps} timed steps, {a.threads} threads, modes {','.join(modes)}; peak "
          f"{fmt(peak, '.0f')} GFLOP/s ({peak_src}); load average {load_before:.1f}")

    results = {}
    for mode in modes:
        if mode.startswith("sft") and not sft:
            cmd = sft_command(a, "build/sft", data, model, work / "runs" / mode, mode == "sft-bf16")
            print(f"{mode}: no sft binary (--sft); command:\n  {shlex.join(cmd)}")
            continue
        try:
            results[mode] = (run_sft(a, mode, sft, data, model, env) if mode.startswith("sft")
                             else run_trl(a, mode, data, model, n_matmul, env))
        except RuntimeError as e:
            print(e)
            return 1
        r = results[mode]
        if len(r["times"]) != a.warmup + a.steps:
            print(f"{mode}: {len(r['times'])} steps timed, expected {a.warmup + a.steps}")
            return 1
        st = summarise(a, r, peak)
        print(f"{mode:>8}: step {st['step']:.3f} s median ({st['lo']:.3f}–{st['hi']:.3f}), "
              f"{st['rate']:.1f} tokens/s, {st['gflops']:.1f} GFLOP/s, peak RSS {r['maxrss_mib']:.0f} MiB, "
              f"run wall {r['wall']:.1f} s" + (f", trainable {r['trainable']:,}" if r.get("trainable") else ""))
    if not results:
        return 0
    stats = {m: summarise(a, r, peak) for m, r in results.items()}
    report(a, results, stats, peak, peak_src, n_matmul, (load_before, os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
