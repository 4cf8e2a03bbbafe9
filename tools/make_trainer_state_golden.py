#!/usr/bin/env python3
"""Golden trainer_state.json written by transformers' own TrainerState.save_to_json.

Writes tests/fixtures/train/trainer_state.json for a state with a few log entries shaped
as TRL's SFTTrainer logs them. Run: ~/.venv-sft/bin/python tools/make_trainer_state_golden.py
"""

from pathlib import Path

from transformers.trainer_callback import TrainerState

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "train"


def main() -> None:
    state = TrainerState(epoch=0.5, global_step=3, max_steps=6, logging_steps=1, eval_steps=1, save_steps=500,
                         num_train_epochs=1, train_batch_size=8, num_input_tokens_seen=0, total_flos=123456.0)
    state.log_history = [
        {"entropy": 2.25, "epoch": 0.1666, "grad_norm": 1.5, "learning_rate": 2e-05, "loss": 2.5,
         "mean_token_accuracy": 0.125, "num_tokens": 1024.0, "step": 1},
        {"entropy": 2.0, "epoch": 0.3333, "grad_norm": 0.875, "learning_rate": 1.6666666666666667e-05,
         "loss": 1.75, "mean_token_accuracy": 0.25, "num_tokens": 2048.0, "step": 2},
        {"epoch": 0.5, "step": 3, "total_flos": 123456.0, "train_loss": 2.0, "train_runtime": 1.25,
         "train_samples_per_second": 19.2, "train_steps_per_second": 2.4},
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    state.save_to_json(str(OUT / "trainer_state.json"))
    print("wrote", OUT / "trainer_state.json")


if __name__ == "__main__":
    main()
