#!/usr/bin/env python3
"""TRL's SFTTrainer + PEFT with LoRA on the experts (LoraConfig.target_parameters) for 10 steps, for
tests/train/lora_experts_trl_parity_test.cpp to match with sft's Trainer.

The run is tools/make_trainer_moe_golden.py's (its tiny Qwen3-MoE and gpt-oss in tests/fixtures/
trainer_moe{,_gpt_oss}/model, the 16 rows of tests/fixtures/train_cli in file order, padded
micro-batches of 2, 2 accumulation steps, the load-balancing loss, AdamW + warmup, clipping at 1) with
peft_config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0, target_modules=[q_proj, v_proj],
target_parameters=[mlp.experts.gate_up_proj, mlp.experts.down_proj]). Writes tests/fixtures/
lora_experts/trl_<family>/:
  adapter_init/            PEFT's freshly initialised adapter (saved before the first step), its
                           base_model_name_or_path the fixture model's path from the repository root;
  trl_log_history.json     {"settings", "lora", "log_history": loss, aux_loss, grad_norm, ... per step}.

Run: ~/.venv-sft/bin/python tools/make_lora_expert_trl_golden.py [qwen3_moe | gpt_oss]   (CPU, fp32)
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_trainer_moe_golden import DATA, OUT, SETTINGS, SequentialSFTTrainer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LORA = dict(
    r=4,
    lora_alpha=8,
    lora_dropout=0.0,
    target_modules=["q_proj", "v_proj"],
    target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
)


def main():
    family = sys.argv[1] if len(sys.argv) > 1 else "qwen3_moe"
    model_dir = OUT[family] / "model"
    out = REPO / "tests" / "fixtures" / "lora_experts" / f"trl_{family}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, experts_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = load_dataset("json", data_files=str(DATA), split="train")
    config = SFTConfig(
        output_dir="/tmp/sft_lora_experts_trl",
        report_to="none",
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        dataloader_drop_last=False,
        gradient_checkpointing=False,
        **SETTINGS,
    )
    trainer = SequentialSFTTrainer(
        model=model,
        args=config,
        train_dataset=rows,
        processing_class=tokenizer,
        peft_config=LoraConfig(task_type="CAUSAL_LM", **LORA),
    )
    init = out / "adapter_init"
    trainer.model.save_pretrained(init)
    cfg_path = init / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = str(model_dir.relative_to(REPO))
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (init / "README.md").unlink(missing_ok=True)
    trainer.train()
    keys = ("loss", "aux_loss", "grad_norm", "learning_rate", "epoch", "step", "num_tokens",
            "mean_token_accuracy", "entropy")
    history = [{k: e[k] for k in keys if k in e} for e in trainer.state.log_history if "loss" in e]
    (out / "trl_log_history.json").write_text(
        json.dumps({"settings": SETTINGS, "lora": LORA, "log_history": history}, indent=2) + "\n")
    print(json.dumps(history[:2] + history[-1:], indent=2))


if __name__ == "__main__":
    main()
