"""TRL's SFTTrainer on the tiny Qwen3 of tests/fixtures/generate_text and the 16-row text set
of tests/fixtures/train_cli: the log_history of a few steps, which tests/train/
trainer_parity_test.cpp compares with sft's Trainer on the same rows in the same order.

The last EVAL_ROWS rows are the eval set (evaluated every eval_steps in batches of 3, the
last one short). The train sampler is made sequential (sft runs with shuffle off for this test), everything
else is TRL's default path: unpacked rows right-padded to the longest of the micro-batch with
the tokenizer's pad token, loss normalised by the trained tokens of the global batch,
AdamW + linear schedule with warmup, clipping at 1.0, fp32 on CPU.

Usage: ~/.venv-sft/bin/python tools/make_trainer_parity_golden.py
"""

import json
import pathlib

import torch
from datasets import load_dataset
from torch.utils.data import SequentialSampler
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests/fixtures/generate_text"
DATA = ROOT / "tests/fixtures/train_cli/train.jsonl"
OUT = ROOT / "tests/fixtures/trainer_parity/trl_log_history.json"

SETTINGS = dict(
    max_steps=5,
    per_device_train_batch_size=2,
    gradient_accumulation_steps=3,
    learning_rate=1e-3,
    warmup_steps=2,
    weight_decay=0.1,
    max_length=32,
    logging_steps=1,
    max_grad_norm=1.0,
    eval_strategy="steps",
    eval_steps=2,
    per_device_eval_batch_size=3,
)
EVAL_ROWS = 4  # the last rows of the file are the eval set, the others train


class SequentialSFTTrainer(SFTTrainer):
    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def main():
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    dataset = load_dataset("json", data_files=str(DATA), split="train")
    n = len(dataset)
    train_rows = dataset.select(range(n - EVAL_ROWS))
    eval_rows = dataset.select(range(n - EVAL_ROWS, n))
    config = SFTConfig(
        output_dir="/tmp/sft_trainer_parity",
        report_to="none",
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        dataloader_drop_last=False,
        gradient_checkpointing=False,
        **SETTINGS,
    )
    trainer = SequentialSFTTrainer(model=model, args=config, train_dataset=train_rows,
                                   eval_dataset=eval_rows,
                                   processing_class=tokenizer)
    trainer.train()
    keys = ("loss", "grad_norm", "learning_rate", "epoch", "step", "num_tokens",
            "mean_token_accuracy", "entropy")
    history = [{k: e[k] for k in keys if k in e} for e in trainer.state.log_history if "loss" in e]
    eval_keys = ("eval_loss", "eval_entropy", "eval_mean_token_accuracy", "eval_num_tokens",
                 "epoch", "step")
    evals = [{k: e[k] for k in eval_keys if k in e}
             for e in trainer.state.log_history if "eval_loss" in e]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"settings": SETTINGS, "eval_rows": EVAL_ROWS, "log_history": history,
                               "eval_history": evals}, indent=2) + "\n")
    print(json.dumps(evals, indent=2))


if __name__ == "__main__":
    main()
