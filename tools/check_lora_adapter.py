#!/usr/bin/env python3
"""Checks that what `sft train --use_peft` and `sft merge` write is what PEFT reads.

1. Trains a LoRA adapter with sft (tests/fixtures/lora/<config>'s flags, default all7_bfd_gas1, 20 steps);
2. loads it with PeftModel.from_pretrained on the fixture base and compares its logits on fixed tokens with
   the logits `sft debug forward --model <adapter folder>` computes (max |diff| must be <= 1e-5);
3. runs `sft merge --adapter <folder> --output_dir <merged>` and compares transformers' logits of the merged
   folder with PEFT's merge_and_unload() logits (<= 1e-5).

With --experts qwen3_moe (or gpt_oss) step 1 instead trains LoRA on the experts of the tiny mixture of experts in
tests/fixtures/trainer_moe{,_gpt_oss}/model (--lora_target_parameters mlp.experts.gate_up_proj mlp.experts.down_proj
beside q_proj and v_proj, PEFT's target_parameters) on tests/fixtures/train_cli.

Run: ~/.venv-sft/bin/python tools/check_lora_adapter.py [--sft build/sft] [--config all7_bfd_gas1 | --experts qwen3_moe]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "tests/fixtures/trl_parity/model"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sft", default=str(REPO / "build/sft"))
    ap.add_argument("--config", default="all7_bfd_gas1")
    ap.add_argument("--experts", choices=["qwen3_moe", "gpt_oss"])
    a = ap.parse_args()
    base_dir = BASE
    if a.experts:
        base_dir = REPO / ("tests/fixtures/trainer_moe" + ("_gpt_oss" if a.experts == "gpt_oss" else "") + "/model")
        flags = ["--model_name_or_path", str(base_dir), "--dataset_name", "tests/fixtures/train_cli/train.jsonl",
                 "--max_steps", "20", "--learning_rate", "0.01", "--max_length", "32", "--report_to", "none",
                 "--bf16", "false", "--use_peft", "true", "--lora_r", "4", "--lora_alpha", "8", "--lora_dropout", "0",
                 "--lora_target_modules", "q_proj", "v_proj", "--lora_target_parameters",
                 "mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    else:
        flags = json.loads((REPO / f"tests/fixtures/lora/{a.config}.json").read_text())["flags"]
    ids = [(i * 37 + 5) % 702 for i in range(40)]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        out, merged_dir = Path(tmp) / "adapter", Path(tmp) / "merged"
        subprocess.run([a.sft, "train", *flags, "--output_dir", str(out)], cwd=REPO, check=True,
                       capture_output=True)
        tokens = Path(tmp) / "tokens.json"
        tokens.write_text(json.dumps({"input_ids": ids}))
        dump = Path(tmp) / "dump.safetensors"
        subprocess.run([a.sft, "debug", "forward", "--model", str(out), "--tokens", str(tokens), "--out", str(dump)],
                       cwd=REPO, check=True, capture_output=True)
        sft_logits = load_file(str(dump))["logits"]

        base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32, experts_implementation="eager")
        peft_model = PeftModel.from_pretrained(base, str(out)).eval()
        with torch.no_grad():
            peft_logits = peft_model(torch.tensor([ids])).logits[0]
        d = float((peft_logits - sft_logits).abs().max())
        print(f"adapter: PeftModel.from_pretrained logits vs sft's: max |diff| {d:.3e}")
        ok &= d <= 1e-5

        subprocess.run([a.sft, "merge", "--adapter", str(out), "--output_dir", str(merged_dir)], cwd=REPO,
                       check=True, capture_output=True)
        with torch.no_grad():
            peft_merged = peft_model.merge_and_unload()(torch.tensor([ids])).logits[0]
            ours = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32,
                                                        experts_implementation="eager").eval()
            merged_logits = ours(torch.tensor([ids])).logits[0]
        d2 = float((peft_merged - merged_logits).abs().max())
        print(f"merge: transformers on `sft merge` output vs PEFT merge_and_unload(): max |diff| {d2:.3e}")
        ok &= d2 <= 1e-5
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
