#!/usr/bin/env python3
"""Per-step QLoRA training goldens from TRL's SFTTrainer + PEFT + bitsandbytes on the CPU, for
`sft train --load_in_4bit --use_peft` to match (tests/cli/train_qlora_parity.cmake).

The same tiny Qwen3 and chat rows as tools/make_lora_goldens.py (tests/fixtures/trl_parity/), loaded
as `trl sft --load_in_4bit` loads it: AutoModelForCausalLM.from_pretrained with TRL's
get_quantization_config (BitsAndBytesConfig: load_in_4bit, bnb_4bit_compute_dtype = --dtype (float32),
bnb_4bit_quant_type, bnb_4bit_use_double_quant = --use_bnb_nested_quant), device_map cpu. transformers
quantizes every nn.Linear of the decoder layers (Params4bit → bitsandbytes.functional.quantize_4bit,
blocks of 64); the embedding (and the tied LM head) stay fp32. Training runs 10 steps with gradient
checkpointing on (prepare_model_for_kbit_training is TRL's path for a quantized model).

Writes tests/fixtures/qlora/:
  <config>/adapter_init/  PEFT's initial adapter as TRL trains it (see below), base_model_name_or_path
                          rewritten to the fixture model's path relative to the repository root;
  <config>.json           {"config", "quant", "lora", "flags" (`sft train` flags, output_dir left out),
                          "adapter_dtype", "steps": [{"step", "loss", "grad_norm", "learning_rate", ...}]}.

Adapter dtype. For a quantized model TRL 1.16 casts the trainable parameters (lora_A, lora_B) to bf16
after get_peft_model (sft_trainer.py, "QLoRA ... converted to bf16"), and PEFT's Linear4bit then runs the
LoRA branch in bf16 (x cast to lora_A's dtype). sft keeps fp32 adapters, so:
  - "*_trl" goldens are TRL exactly as it runs (bf16 adapters, bf16 AdamW updates): sft is compared
    within 1e-3 relative on the loss (the bf16 adapters' rounding is the difference);
  - "*_fp32" goldens undo that cast (the adapters back to fp32 before the optimizer exists, so the
    LoRA branch and AdamW run in fp32, over the same 4-bit base): sft is compared tightly there.
Both start from the same adapter (PEFT's initialisation rounded to bf16 by TRL's cast).

Run: ~/.venv-sft/bin/python tools/make_qlora_goldens.py [config ...]   (CPU, a minute)
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, TrainerCallback
from trl import SFTTrainer
from trl.trainer.utils import get_quantization_config
from trl import ModelConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_trl_train_goldens import COMMON, flags_to_config  # noqa: E402
from make_lora_goldens import ALL7, Recorder, sft_lora_flags  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BASE = "tests/fixtures/trl_parity/model"
OUT = REPO / "tests" / "fixtures" / "qlora"
STEPS = 10

BFD1 = ["--gradient_accumulation_steps", "1", "--packing", "--packing_strategy", "bfd"]
NOPACK2 = ["--gradient_accumulation_steps", "2"]

# name: (quant flags, LoraConfig kwargs, trainer flags, adapters in fp32)
CONFIGS = {
    "nf4_nested_bfd_gas1_fp32": (["--bnb_4bit_quant_type", "nf4", "--use_bnb_nested_quant", "true"],
                                 dict(r=8, lora_alpha=16, target_modules=ALL7), BFD1, True),
    "nf4_nested_bfd_gas1_trl": (["--bnb_4bit_quant_type", "nf4", "--use_bnb_nested_quant", "true"],
                                dict(r=8, lora_alpha=16, target_modules=ALL7), BFD1, False),
    "nf4_bfd_gas1_fp32": (["--bnb_4bit_quant_type", "nf4"],
                          dict(r=8, lora_alpha=16, target_modules=ALL7), BFD1, True),
    "fp4_nopack_gas2_fp32": (["--bnb_4bit_quant_type", "fp4"],
                             dict(r=8, lora_alpha=16, target_modules=ALL7), NOPACK2, True),
}


def quant_config(quant_flags: list[str]):
    kwargs = {"load_in_4bit": True, "dtype": "float32"}
    for i in range(0, len(quant_flags), 2):
        name, value = quant_flags[i][2:], quant_flags[i + 1]
        kwargs[name] = value == "true" if value in ("true", "false") else value
    return get_quantization_config(ModelConfig(**kwargs))


def run(name: str, quant_flags: list[str], lora: dict, extra: list[str], fp32_adapters: bool) -> dict:
    flags = [f if f != "20" else str(STEPS) for f in COMMON] + extra + ["--gradient_checkpointing", "true"]
    folder = OUT / name
    init = folder / "adapter_init"
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        args, script = flags_to_config(flags, tmp)
        dataset = load_dataset("json", data_files=str(REPO / script["dataset_name"]), split="train")
        model = AutoModelForCausalLM.from_pretrained(
            str(REPO / BASE), quantization_config=quant_config(quant_flags), device_map="cpu", dtype=torch.float32
        )
        recorder = Recorder()
        peft_config = LoraConfig(lora_dropout=0.0, task_type="CAUSAL_LM", **lora)
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, callbacks=[recorder],
                             peft_config=peft_config)
        trainable = [(n, p) for n, p in trainer.model.named_parameters() if p.requires_grad]
        assert trainable and all(p.dtype == torch.bfloat16 for _, p in trainable), "TRL's bf16 cast changed"
        if fp32_adapters:
            for _, p in trainable:
                p.data = p.data.to(torch.float32)
        trainer.model.save_pretrained(init)
        trainer.train()
    cfg_path = init / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = BASE
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (init / "README.md").unlink(missing_ok=True)
    assert len(recorder.steps) == STEPS, recorder.steps
    sft_flags = [f if f != BASE else str(init.relative_to(REPO)) for f in flags]
    sft_flags += ["--load_in_4bit", "true"] + quant_flags + sft_lora_flags(lora)
    return {"config": name, "quant": quant_flags, "lora": lora, "flags": sft_flags,
            "adapter_dtype": "float32" if fp32_adapters else "bfloat16", "steps": recorder.steps}


def make_merge_golden() -> None:
    """merge/: an adapter (r 4, alpha 8, all seven projections, random B) on the pre-quantized NF4 folder
    tests/fixtures/bnb4/qwen3_nf4_nested, and expected.safetensors holding what `sft merge` must write: each
    adapted weight dequantized as bitsandbytes does (dequantize_4bit, fp32) plus PEFT's get_delta_weight
    (B A · scale), every other tensor as stored. (PEFT's own merge_and_unload on a 4-bit model quantizes the
    sum again; sft merge writes the dequantized fp32 / bf16 model instead.)"""
    import bitsandbytes.functional as F
    from peft import get_peft_model
    from safetensors.torch import save_file

    base_dir = "tests/fixtures/bnb4/qwen3_nf4_nested"
    folder = OUT / "merge"
    shutil.rmtree(folder, ignore_errors=True)
    torch.manual_seed(11)
    base = AutoModelForCausalLM.from_pretrained(str(REPO / base_dir), device_map="cpu", dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=ALL7,
                                            task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    model.save_pretrained(folder / "adapter")
    cfg_path = folder / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = base_dir
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (folder / "adapter" / "README.md").unlink(missing_ok=True)
    expected = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if not hasattr(module, "get_delta_weight") or "default" not in getattr(module, "lora_A", {}):
                continue
            w = module.base_layer.weight
            dense = F.dequantize_4bit(w.data, w.quant_state).to(torch.float32)
            key = name.replace("base_model.model.", "") + ".weight"
            expected["merged." + key] = (dense + module.get_delta_weight("default").float()).contiguous()
        expected["merged.model.embed_tokens.weight"] = base.model.embed_tokens.weight.detach().float().contiguous()
    save_file(expected, str(folder / "expected.safetensors"))
    print(f"merge: {len(expected)} tensors", file=sys.stderr)


def main() -> None:
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    only = sys.argv[1:]
    if not only or "merge" in only:
        make_merge_golden()
    for name, (quant_flags, lora, extra, fp32_adapters) in CONFIGS.items():
        if only and name not in only:
            continue
        golden = run(name, quant_flags, lora, extra, fp32_adapters)
        (OUT / f"{name}.json").write_text(json.dumps(golden, indent=1) + "\n")
        first, last = golden["steps"][0], golden["steps"][-1]
        print(f"{name}: loss {first['loss']:.6f} -> {last['loss']:.6f}, grad_norm {first['grad_norm']:.4f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
