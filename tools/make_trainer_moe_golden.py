"""TRL's SFTTrainer on a tiny random Qwen3-MoE (tests/fixtures/trainer_moe/model: 4 experts, 2
per token, renormalised, the tokenizer of tests/fixtures/generate_text) and the 16 text rows of
tests/fixtures/train_cli: the log_history of 10 steps, which tests/train/trainer_moe_parity_test.cpp
compares with sft's Trainer on the same rows in the same order (loss, aux_loss, grad_norm).
With the argument gpt_oss, the same for a tiny random gpt-oss (tests/fixtures/trainer_moe_gpt_oss:
4 experts, 2 per token, router and expert biases, the clamped SwiGLU with a limit the
projections cross, attention sinks and biases, sliding and full layers).

TRL 1.16 turns the router's load-balancing loss on for every config with output_router_logits
(router_aux_loss_coef from the config, 0.02 here so that it shows in the loss): the loss is the
cross-entropy plus coef · aux_loss / accumulation steps per micro-batch, and aux_loss is logged.
The rows are unpacked and right-padded per micro-batch (the attention mask then keeps the
padding out of the aux loss), the sampler sequential, fp32 on CPU, AdamW + linear schedule with
warmup, clipping at 1.0, as tools/make_trainer_parity_golden.py.

Usage: ~/.venv-sft/bin/python tools/make_trainer_moe_golden.py [qwen3_moe | gpt_oss]
"""

import json
import pathlib
import shutil
import sys

import torch
from datasets import load_dataset
from torch.utils.data import SequentialSampler
from transformers import (
    AutoTokenizer,
    GptOssConfig,
    GptOssForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)
from trl import SFTConfig, SFTTrainer

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests/fixtures/generate_text"
DATA = ROOT / "tests/fixtures/train_cli/train.jsonl"
OUT = {"qwen3_moe": ROOT / "tests/fixtures/trainer_moe",
       "gpt_oss": ROOT / "tests/fixtures/trainer_moe_gpt_oss"}

SETTINGS = dict(
    max_steps=10,
    per_device_train_batch_size=2,
    gradient_accumulation_steps=2,
    learning_rate=3e-3,
    warmup_steps=2,
    weight_decay=0.1,
    max_length=32,
    logging_steps=1,
    max_grad_norm=1.0,
)


class SequentialSFTTrainer(SFTTrainer):
    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def qwen3_moe_config():
    return Qwen3MoeForCausalLM, Qwen3MoeConfig(
        vocab_size=702,
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        norm_topk_prob=True,
        router_aux_loss_coef=0.02,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        eos_token_id=2,
        pad_token_id=0,
        initializer_range=0.1,  # routing far from uniform
        experts_implementation="eager",
    )


def gpt_oss_config():
    return GptOssForCausalLM, GptOssConfig(
        vocab_size=702,
        hidden_size=64,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        swiglu_limit=0.6,  # gate and up (std ≈ 0.8 at this init) cross it on both sides
        router_aux_loss_coef=0.02,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        eos_token_id=2,
        pad_token_id=0,
        initializer_range=0.1,
        experts_implementation="eager",
    )


CONFIGS = {"qwen3_moe": qwen3_moe_config, "gpt_oss": gpt_oss_config}


def make_model(path, family):
    torch.manual_seed(2029)
    model_cls, config = CONFIGS[family]()
    model = model_cls(config).float()
    if path.exists():
        shutil.rmtree(path)
    model.save_pretrained(path, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / name, path / name)


def main():
    family = sys.argv[1] if len(sys.argv) > 1 else "qwen3_moe"
    out = OUT[family]
    model_dir = out / "model"
    make_model(model_dir, family)
    torch.manual_seed(0)
    model_cls = CONFIGS[family]()[0]
    model = model_cls.from_pretrained(model_dir, dtype=torch.float32,
                                      experts_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = load_dataset("json", data_files=str(DATA), split="train")
    config = SFTConfig(
        output_dir="/tmp/sft_trainer_moe",
        report_to="none",
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        dataloader_drop_last=False,
        gradient_checkpointing=False,
        **SETTINGS,
    )
    trainer = SequentialSFTTrainer(model=model, args=config, train_dataset=rows,
                                   processing_class=tokenizer)
    trainer.train()
    keys = ("loss", "aux_loss", "grad_norm", "learning_rate", "epoch", "step", "num_tokens",
            "mean_token_accuracy", "entropy")
    history = [{k: e[k] for k in keys if k in e} for e in trainer.state.log_history if "loss" in e]
    (out / "trl_log_history.json").write_text(
        json.dumps({"settings": SETTINGS, "log_history": history}, indent=2) + "\n")
    print(json.dumps(history[:3], indent=2))


if __name__ == "__main__":
    main()
