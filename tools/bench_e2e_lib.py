"""Helpers of tools/bench_train_e2e.py: shapes, synthetic data, the model FLOP formula, the machine peak,
child processes with their own peak RSS, and the TRL worker that runs inside one such child.

Contract: everything here is deterministic for the same arguments (seeded data, seeded model init); nothing
times or prints a result (bench_train_e2e.py does). The FLOP formula is sft's Trainer::step_flops
(src/train/trainer.cpp) restated: 6 · matmul parameters · tokens + 3 · 4 · H · D · L · Σ n(n+1)/2 over the
documents (causal attention QKᵀ and PV, forward + 2 × backward), no recomputation, pads counted as tokens.
"""

import json
import os
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO.parent / "shared" / "assets" / "tokenizers" / "qwen3"
MODES = ("sft-fp32", "sft-bf16", "trl-fp32", "trl-bf16")
# Qwen3 shapes; qwen3-0.6b is Qwen/Qwen3-0.6B's config.json (random weights here).
SHAPES = {
    "103m": dict(vocab_size=151936, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                 num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=4096),
    # A smoke-test shape (the command working end to end, not a measurement).
    "tiny": dict(vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096),
    "qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960),
    # Phi-4-mini's layer (fused qkv_proj / gate_up_proj, RoPE on 3/4 of each head, its 200k vocabulary,
    # tied) at the 103M shape's width and depth: 128M parameters, 102M of them the embedding.
    "phi4-mini-103m": dict(model_type="phi3", vocab_size=200064, hidden_size=512, intermediate_size=1536,
                           num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4,
                           partial_rotary_factor=0.75, max_position_embeddings=4096,
                           original_max_position_embeddings=4096),
    # Gemma 3 1B's layer (four (1 + w) norms, q/k norms, GELU-tanh, five sliding layers of 512 per
    # full one, the sliding layers' own RoPE, √hidden embeddings, its 262k vocabulary, tied) at the
    # 103M shape's width and depth: 159M parameters, 134M of them the embedding.
    "gemma3-1b-103m": dict(model_type="gemma3_text", vocab_size=262144, hidden_size=512,
                           intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                           num_key_value_heads=4, head_dim=64, query_pre_attn_scalar=64,
                           sliding_window=512, max_position_embeddings=4096),
    # The MoE benchmark's smoke test.
    "tiny-moe": dict(model_type="qwen3_moe", vocab_size=151936, hidden_size=64, intermediate_size=128,
                     moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                     max_position_embeddings=4096),
    # A Qwen3-MoE shape of ~1B parameters (Qwen3-30B-A3B's layer, narrowed): 8 experts, top-2 with
    # renormalised weights, every layer sparse; 1.04B parameters in all, 0.47B of them active per token
    # (the tied 152k embedding included).
    "qwen3-moe-1b": dict(model_type="qwen3_moe", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                         moe_intermediate_size=1536, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                         decoder_sparse_step=1, mlp_only_layers=[], num_hidden_layers=20,
                         num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                         max_position_embeddings=4096, rope_theta=1000000.0, rms_norm_eps=1e-6),
}
# Qwen3's settings for the shapes without a model_type; the others take their config class's defaults
# but for these.
QWEN3_DEFAULTS = dict(rope_theta=1000000.0, rms_norm_eps=1e-6)
COMMON = dict(tie_word_embeddings=True, bos_token_id=None, eos_token_id=151645, pad_token_id=151643)
# Per workload: rows per step, tokens per row (the max_length) and whether rows are packed (bfd).
WORKLOADS = {"random": dict(batch=2, seq=512, packing=False), "chat": dict(batch=1, seq=1024, packing=True)}


# ----------------------------------------------------------------------------------------- model and data

def model_config(shape: str):
    from transformers import AutoConfig

    fields = dict(SHAPES[shape])
    model_type = fields.pop("model_type", "qwen3")
    extra = QWEN3_DEFAULTS if model_type == "qwen3" else {}
    return AutoConfig.for_model(model_type, **fields, **extra, **COMMON)


def matmul_params(model) -> float:
    """sft's matmul_params_: every parameter but the input embedding, plus the embedding when it is the
    (tied) LM head; of a mixture's stacked experts only the k of E a token is routed to.
    model.parameters() lists a tied matrix once; LoRA adapters (PEFT) are not counted."""
    config = model.config
    active = getattr(config, "num_experts_per_tok", 0) / max(getattr(config, "num_experts", 0) or 1, 1)
    total = 0.0
    for name, p in model.named_parameters():
        if "lora_" in name:
            continue
        expert = ".experts." in name and name.endswith(("gate_up_proj", "down_proj"))
        total += p.numel() * (active if expert else 1)
    embed = model.get_input_embeddings().weight.numel()
    return total if config.tie_word_embeddings else total - embed


def make_model(shape: str, model_dir: Path) -> int:
    """Writes a seeded random-init fp32 model with the Qwen3 tokenizer (and its chat template) once;
    returns its matmul parameter count."""
    import torch
    from transformers import AutoModelForCausalLM

    config = model_config(shape)
    if not (model_dir / "model.safetensors").exists():
        shutil.rmtree(model_dir, ignore_errors=True)
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(model_dir)
        for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
            if (TOKENIZER / name).exists():
                shutil.copy(TOKENIZER / name, model_dir / name)
    with torch.device("meta"):
        return matmul_params(AutoModelForCausalLM.from_config(config))


def write_random_rows(path: Path, rows: int, seq: int) -> None:
    """Pre-tokenized rows of exactly `seq` random ids (`input_ids` only: labels = input_ids, no padding)."""
    rng = random.Random(0)
    with path.open("w") as f:
        for _ in range(rows):
            f.write(json.dumps({"input_ids": [rng.randrange(151643) for _ in range(seq)]}) + "\n")


# Common English words: rendered text tokenizes like prose (mostly one token per word plus punctuation).
WORDS = ("the of and to in is was for that with as on by at from his her they this which are be or an "
         "had not but were have one all their there been has when who will more no if out so said what up "
         "its about into than them can only other new some could time these two may then do first any my "
         "now such like our over man me even most made after also did many before must through back years "
         "where much your way well down should because each just those people how too little state good "
         "very make world still own see men work long get here between both life being under never day same "
         "another know while last might us great old year off come since against go came right used take "
         "three small large house water number system program question during without again place around "
         "however home school every group often country important until form children general light always "
         "river garden market letter window morning evening simple answer reason problem example explain "
         "consider different possible between together usually quickly carefully really").split()
QUESTION_OPENERS = ("Can you explain", "What is", "How do I", "Why does", "Could you describe", "Tell me about")


def _sentence(rng: random.Random, words: int, question: bool) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    if question:
        return f"{rng.choice(QUESTION_OPENERS)} {body}?"
    return body[0].upper() + body[1:] + rng.choice((".", ".", ".", "!", ";"))


def _message(rng: random.Random, words: int, role: str) -> str:
    parts, left = [], max(3, words)
    while left > 0:
        n = min(left, rng.randint(5, 20))
        parts.append(_sentence(rng, n, question=(role == "user" and not parts)))
        left -= n
    paragraphs = [" ".join(parts[i:i + 3]) for i in range(0, len(parts), 3)]
    return "\n\n".join(paragraphs)


def _conversation(rng: random.Random) -> list[dict]:
    """Capybara-like: 1–5 user/assistant exchanges, short questions, longer answers."""
    pairs = rng.choice((1, 1, 2, 2, 3, 4, 5))
    budget = rng.randint(40, 480)  # words; the template and punctuation add ~25%
    out = []
    for _ in range(pairs):
        share = budget / pairs
        user = max(4, int(share * rng.uniform(0.1, 0.35)))
        out.append({"role": "user", "content": _message(rng, user, "user")})
        out.append({"role": "assistant", "content": _message(rng, max(4, int(share) - user), "assistant")})
    return out


def chat_token_count(tokenizer, messages: list[dict]) -> int:
    ids = tokenizer.apply_chat_template(messages, tokenize=True)
    if hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


def write_chat_rows(path: Path, model_dir: Path, min_tokens: int) -> tuple[int, list[int]]:
    """Seeded synthetic Capybara (`messages` column): conversations of 50–600 template tokens, drawn until
    they hold at least `min_tokens` tokens. Returns (conversations, their token counts)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    rng = random.Random(0)
    lengths = []
    with path.open("w") as f:
        while sum(lengths) < min_tokens:
            messages = _conversation(rng)
            n = chat_token_count(tokenizer, messages)
            if 50 <= n <= 600:  # rejection keeps the stated range exact
                lengths.append(n)
                f.write(json.dumps({"messages": messages}) + "\n")
    return len(lengths), lengths


# ----------------------------------------------------------------------------------------- FLOPs and peak

def step_flops(n_matmul: int, shape: str, docs: list[int]) -> float:
    s = SHAPES[shape]
    head_dim = s.get("head_dim", s["hidden_size"] // s["num_attention_heads"])
    attention = sum(n * (n + 1) / 2 for n in docs)
    return (6.0 * n_matmul * sum(docs) +
            12.0 * s["num_attention_heads"] * head_dim * s["num_hidden_layers"] * attention)


def _at_threads(name: str, threads: int) -> bool:
    """google-benchmark names carry the thread count as an argument (BM_X/2/real_time) or as threads:2."""
    return any(part in (str(threads), f"threads:{threads}") for part in name.split("/")[1:])


def measure_peak(binary: Path, threads: int) -> tuple[float | None, str]:
    """The FP32 FMA register-only peak at `threads` threads from bench_peak_flops (google-benchmark JSON):
    a benchmark with the thread count as its argument (BM_PeakFmaF32/T) or threads:T, else the older
    all-threads one when T is the core count, else the one-thread figure (× T, said so). Returns (GFLOP/s or
    None, which benchmark it came from, plus the bf16 figures at T threads for context)."""
    if not binary.exists():
        return None, f"{binary} not found"
    done = subprocess.run([str(binary), "--benchmark_format=json"], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"{binary} failed ({done.returncode})"
    every = [e for e in json.loads(done.stdout).get("benchmarks", []) if "FLOP/s" in e]
    low_precision = re.compile(r"bf16|bfloat|dpbf|amx|f16|int8", re.I)
    entries = [e for e in every if not low_precision.search(e["name"])]
    others = ", ".join(f"{e['name'].split('/')[0]} {e['FLOP/s'] / 1e9:.0f}" for e in every
                       if low_precision.search(e["name"]) and _at_threads(e["name"], threads))
    note = f"; bf16 peaks: {others} GFLOP/s" if others else ""
    by = lambda pred: next((e for e in entries if pred(e["name"])), None)  # noqa: E731
    exact = by(lambda n: _at_threads(n, threads))
    if exact is None and threads == os.cpu_count():
        exact = by(lambda n: "allthreads" in n.lower())
    if exact is None and threads == 1:
        exact = by(lambda n: "onethread" in n.lower())
    if exact is not None:
        return exact["FLOP/s"] / 1e9, exact["name"] + note
    one = by(lambda n: "onethread" in n.lower() or _at_threads(n, 1))
    if one is not None:
        return one["FLOP/s"] / 1e9 * threads, f"{one['name']} x {threads} (no {threads}-thread figure){note}"
    return None, "no FP32 FMA figure in its output"


# ----------------------------------------------------------------------------------------- child processes

def run_child(cmd: list[str], env: dict, log_dir: Path) -> dict:
    """Runs one mode in its own process; stdout/stderr go to log_dir. Peak RSS is that child's own
    ru_maxrss from wait4 (RUSAGE_CHILDREN would be the maximum over every child so far)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    t0 = time.perf_counter()
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return dict(rc=proc.returncode, wall=time.perf_counter() - t0, maxrss_mib=usage.ru_maxrss / 1024,
                stdout=out_path.read_text(errors="replace"), stderr=err_path.read_text(errors="replace"))


def trl_worker(spec: dict) -> None:
    """Inside its own process: TRL's SFTTrainer with the shared flags; writes step times, tokens and
    document lengths per step, and the dtype actually computed in, as JSON to spec["result"]."""
    import torch
    from datasets import load_dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(spec["threads"])
    times, steps, probe = [], [], {}

    class Timer(TrainerCallback):
        start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter() - self.start)

    class Recording(SFTTrainer):
        def training_step(self, model, inputs, num_items_in_batch=None):
            ids = inputs["input_ids"]
            if "cu_seq_lens_q" in inputs:  # padding-free (packed) batch: documents from the boundaries
                docs = inputs["cu_seq_lens_q"].diff().tolist()
                real = int(inputs["position_ids"].size(1))
            else:  # padded rows: sft counts a row's pads into its last document
                docs = [int(ids.size(1))] * int(ids.size(0))
                real = int(inputs["attention_mask"].sum()) if "attention_mask" in inputs else int(ids.numel())
            steps.append(dict(tokens=real, docs=docs, targets=int((inputs["labels"][:, 1:] != -100).sum())))
            return super().training_step(model, inputs, num_items_in_batch)

    config = SFTConfig(output_dir=str(Path(spec["workdir"]) / "trl_out"), use_cpu=True, disable_tqdm=True,
                       max_steps=spec["max_steps"], logging_steps=1, per_device_train_batch_size=spec["batch"],
                       gradient_accumulation_steps=1, max_length=spec["seq"], learning_rate=1e-4, seed=42,
                       bf16=spec["bf16"], gradient_checkpointing=False, save_strategy="no", report_to=[],
                       packing=spec["packing"], packing_strategy="bfd", train_sampling_strategy="sequential")
    peft_config = None
    if spec.get("lora_r"):  # --lora: TRL + PEFT with the same adapters as sft's --use_peft
        from peft import LoraConfig

        peft_config = LoraConfig(r=spec["lora_r"], lora_alpha=2 * spec["lora_r"], lora_dropout=0.0,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = Recording(model=spec["model"], args=config, callbacks=[Timer()], peft_config=peft_config,
                        train_dataset=load_dataset("json", data_files=spec["data"], split="train"))
    base = trainer.model.get_base_model() if peft_config else trainer.model

    def hook(module, args, output):  # what a projection really computes in (o_proj: every family has one)
        if not probe:
            probe.update(output_dtype=str(output.dtype), autocast=torch.is_autocast_enabled("cpu"),
                         autocast_dtype=str(torch.get_autocast_dtype("cpu")), weight_dtype=str(module.weight.dtype))

    handle = base.model.layers[0].self_attn.o_proj.register_forward_hook(hook)
    trainer.train()
    handle.remove()
    Path(spec["result"]).write_text(json.dumps(dict(
        times=times, steps=steps, probe=probe, matmul_params=matmul_params(base),
        trainable=sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        mixed_precision=str(trainer.accelerator.mixed_precision))))
