#!/usr/bin/env python3
"""Per-step LoRA training goldens from TRL's SFTTrainer + PEFT, for `sft train --use_peft` to match
(tests/cli/train_lora_parity.cmake).

Uses the tiny Qwen3 and the 41 chat rows of tests/fixtures/trl_parity/ (tools/make_trl_train_goldens.py
made them) and writes tests/fixtures/lora/:
  <config>/adapter_init/   PEFT's freshly initialised adapter (save_pretrained before the first step:
                           A Kaiming-uniform, B zero), base_model_name_or_path rewritten to the fixture
                           model's path relative to the repository root, so
                           `sft train --model_name_or_path tests/fixtures/lora/<config>/adapter_init`
                           starts from exactly the weights TRL started from;
  <config>.json            {"config", "lora" (the LoraConfig fields used), "flags" (the `sft train`
                           flags, output_dir left out), "steps": [{"step", "loss", "grad_norm",
                           "learning_rate", "epoch", "num_tokens", "mean_token_accuracy", "entropy"}]}
                           exactly as the Trainer handed them to its callbacks;
  peft_adapter_config.json the adapter_config.json PEFT 0.21 writes (field set reference for export);
  merge/                   an adapter with non-zero A and B (all seven projections, r 4, alpha 8, rsLoRA
                           off, modules_to_save ["norm"]), tokens.json, and expected.safetensors: PEFT's
                           logits of the adapted model ("logits") and of merge_and_unload() ("merged_logits")
                           plus every merged weight ("merged.<HF name>"), for tests/model/lora_test.cpp.

What differs from full fine-tuning (make_trl_train_goldens.py's docstring has the rest): only the
adapters (and modules_to_save copies) have gradients, so grad_norm is the norm over them; AdamW keeps
state for them only. A LoRA projection computes y = x Wᵀ + (dropout(x) Aᵀ) Bᵀ · scale with scale =
lora_alpha / r (lora_alpha / sqrt(r) with use_rslora). modules_to_save trains a copy of the named
modules (suffix match on module paths at a dot boundary) in full.

Run: ~/.venv-sft/bin/python tools/make_lora_goldens.py   (CPU, fp32, a minute or two)
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import TrainerCallback
from trl import SFTTrainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_trl_train_goldens import COMMON, flags_to_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BASE = "tests/fixtures/trl_parity/model"
SMOLLM3_BASE = "tests/fixtures/trl_parity/smollm3_model"  # PEFT has no default targets for these two
OLMO2_BASE = "tests/fixtures/trl_parity/olmo2_model"
GRANITE_BASE = "tests/fixtures/trl_parity/granite_model"
PHI3_BASE = "tests/fixtures/trl_parity/phi3_model"
GEMMA3_BASE = "tests/fixtures/trl_parity/gemma3_model"
OUT = REPO / "tests" / "fixtures" / "lora"
ALL7 = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

NOPACK1 = ["--gradient_accumulation_steps", "1"]
NOPACK4 = ["--gradient_accumulation_steps", "4"]
BFD1 = ["--gradient_accumulation_steps", "1", "--packing", "--packing_strategy", "bfd"]
BFD4 = ["--gradient_accumulation_steps", "4", "--packing", "--packing_strategy", "bfd"]

# name: (LoraConfig kwargs, trainer flags[, base model: BASE when absent])
CONFIGS = {
    "all7_nopack_gas1": (dict(r=8, lora_alpha=16, target_modules=ALL7), NOPACK1),
    "all7_nopack_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), NOPACK4),
    "all7_bfd_gas1": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD1),
    "all7_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD4),
    "default_nopack_gas1": (dict(r=8, lora_alpha=16, target_modules=None), NOPACK1),
    "rslora_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7, use_rslora=True), BFD4),
    "save_norm_bfd_gas1": (dict(r=8, lora_alpha=16, target_modules=ALL7, modules_to_save=["norm"]), BFD1),
    "smollm3_all7_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD4, SMOLLM3_BASE),
    "olmo2_all7_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD4, OLMO2_BASE),
    "granite_all7_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD4, GRANITE_BASE),
    # Phi-3: its unfused projections (sft has no LoRA on the fused qkv_proj / gate_up_proj yet).
    "phi3_o_down_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=["o_proj", "down_proj"]), BFD4, PHI3_BASE),
    # PEFT wraps Phi-3's fused qkv_proj and gate_up_proj as one Linear each: one lora_A (r, C) and one lora_B
    # (rows of q + k + v, or of gate + up, by r). "all-linear" adds o_proj and down_proj.
    "phi3_fused_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=["qkv_proj", "gate_up_proj"]), BFD4, PHI3_BASE),
    "phi3_all_linear_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules="all-linear"), BFD4, PHI3_BASE),
    # Gemma 3 text: every projection, and PEFT's default targets for gemma3_text (q_proj, v_proj).
    "gemma3_all7_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=ALL7), BFD4, GEMMA3_BASE),
    "gemma3_default_bfd_gas4": (dict(r=8, lora_alpha=16, target_modules=None), BFD4, GEMMA3_BASE),
}


class Recorder(TrainerCallback):
    def __init__(self) -> None:
        self.steps = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            keys = ("loss", "grad_norm", "learning_rate", "epoch", "num_tokens", "mean_token_accuracy", "entropy")
            self.steps.append({"step": state.global_step, **{k: logs[k] for k in keys if k in logs}})


def sft_lora_flags(lora: dict) -> list[str]:
    """The `sft train` ModelConfig flags for this LoraConfig (lists comma-separated, as sft's parser takes
    them; `trl sft` takes them space-separated)."""
    flags = ["--use_peft", "true", "--lora_r", str(lora["r"]), "--lora_alpha", str(lora["lora_alpha"]),
             "--lora_dropout", "0"]
    if lora.get("target_modules"):
        t = lora["target_modules"]
        flags += ["--lora_target_modules", t if isinstance(t, str) else ",".join(t)]
    if lora.get("use_rslora"):
        flags += ["--use_rslora", "true"]
    if lora.get("modules_to_save"):
        flags += ["--lora_modules_to_save", ",".join(lora["modules_to_save"])]
    return flags


def run(name: str, lora: dict, extra: list[str], base: str = BASE) -> dict:
    flags = [f if f != BASE else base for f in COMMON] + extra
    folder = OUT / name
    init = folder / "adapter_init"
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        args, script = flags_to_config(flags, tmp)
        dataset = load_dataset("json", data_files=str(REPO / script["dataset_name"]), split="train")
        recorder = Recorder()
        peft_config = LoraConfig(lora_dropout=0.0, task_type="CAUSAL_LM", **lora)
        trainer = SFTTrainer(model=str(REPO / base), args=args, train_dataset=dataset, callbacks=[recorder],
                             peft_config=peft_config)
        trainer.model.save_pretrained(init)
        trainer.train()
    cfg_path = init / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = base  # (PEFT wrote the absolute path SFTTrainer was given)
    if base == BASE:
        (OUT / "peft_adapter_config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (init / "README.md").unlink(missing_ok=True)
    assert len(recorder.steps) == 20, recorder.steps
    sft_flags = [f if f != base else str(init.relative_to(REPO)) for f in flags] + sft_lora_flags(lora)
    return {"config": name, "lora": lora, "flags": sft_flags, "steps": recorder.steps}


def make_merge_golden() -> None:
    from peft import get_peft_model
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM

    folder = OUT / "merge"
    shutil.rmtree(folder, ignore_errors=True)
    torch.manual_seed(7)
    base = AutoModelForCausalLM.from_pretrained(REPO / BASE, dtype=torch.float32)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=ALL7, modules_to_save=["norm"],
                        task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
            elif "modules_to_save" in name:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder / "adapter")
    cfg_path = folder / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = BASE
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (folder / "adapter" / "README.md").unlink(missing_ok=True)
    ids = torch.tensor([[(i * 37 + 5) % 702 for i in range(24)]])
    (folder / "tokens.json").write_text(json.dumps({"input_ids": ids[0].tolist()}) + "\n")
    model.eval()
    with torch.no_grad():
        logits = model(ids).logits[0].contiguous()
        merged = model.merge_and_unload()
        merged_logits = merged(ids).logits[0].contiguous()
    tensors = {"logits": logits, "merged_logits": merged_logits}
    for name, p in merged.state_dict().items():
        if name != "lm_head.weight":  # tied to the embedding
            tensors["merged." + name] = p.contiguous()
    save_file(tensors, str(folder / "expected.safetensors"))
    print(f"merge: max |logits - merged| {float((logits - merged_logits).abs().max()):.2e}", file=sys.stderr)


def main() -> None:
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    only = sys.argv[1:]
    if not only or "merge" in only:
        make_merge_golden()
    for name, (lora, extra, *base) in CONFIGS.items():
        if only and name not in only:
            continue
        golden = run(name, lora, extra, *base)
        (OUT / f"{name}.json").write_text(json.dumps(golden, indent=1) + "\n")
        first, last = golden["steps"][0], golden["steps"][-1]
        print(f"{name}: loss {first['loss']:.6f} -> {last['loss']:.6f}, grad_norm {first['grad_norm']:.4f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
