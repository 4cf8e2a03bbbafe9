#!/usr/bin/env python3
"""The embedded default of `scripts/quickstart.sh`: a task, a tokenizer and a tiny model config.

Writes examples/quickstart/ deterministically (same bytes on every run):
  model/config.json            a tiny Qwen3 (no weights: `sft train --init_from_config` draws them)
  model/generation_config.json greedy, eos = <|im_end|>
  model/tokenizer.json         byte-level BPE trained here with HF `tokenizers`; digits are split
                               into single tokens (Digits pre-tokenizer) so arithmetic is learnable
  model/tokenizer_config.json  eos <|im_end|>, pad <|endoftext|>, a ChatML template whose assistant
                               content sits in {% generation %} blocks (assistant_only_loss)
  data/train.jsonl, data/test.jsonl
                               {"messages": [user "What is 482 + 317?", assistant "799"]};
                               the test questions never occur in train
  train.yaml                   the `sft train --config` of the quickstart (TRL flag names)

The numbers (task size, model size, hyperparameters) were chosen with
tools/quickstart_reference.py, which trains the same recipe with transformers + torch and reports
the held-out exact match; its results are recorded in docs/benchmarks.md.

Run: ~/.venv-sft/bin/python tools/make_quickstart_assets.py
"""

import json
import random
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "examples" / "quickstart"

SEED = 1234
NUM_TRAIN = 25600
NUM_TEST = 500
LOW, HIGH = 10, 99  # 2-digit operands; subtraction keeps the result non-negative
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BPE_VOCAB = 300

# Assistant content and its <|im_end|> are inside {% generation %}: the tokens the model learns.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}\n"
    "    {%- if message.role == 'assistant' -%}\n"
    "        {{- '<|im_start|>assistant\\n' -}}\n"
    "        {%- generation -%}\n"
    "            {{- message.content ~ '<|im_end|>' -}}\n"
    "        {%- endgeneration -%}\n"
    "        {{- '\\n' -}}\n"
    "    {%- else -%}\n"
    "        {{- '<|im_start|>' ~ message.role ~ '\\n' ~ message.content ~ '<|im_end|>\\n' -}}\n"
    "    {%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n"
)

MODEL = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": 128,
}

TRAIN = {
    "learning_rate": 2.0e-3,
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.05,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "num_train_epochs": 4,
    "per_device_train_batch_size": 16,
    "gradient_accumulation_steps": 1,
    "max_length": 64,
    "seed": 42,
}


def question(rng: random.Random):
    a, b = rng.randint(LOW, HIGH), rng.randint(LOW, HIGH)
    if rng.random() < 0.5:
        return f"What is {a} + {b}?", str(a + b)
    a, b = max(a, b), min(a, b)
    return f"What is {a} - {b}?", str(a - b)


def make_data():
    rng = random.Random(SEED)
    seen, test, train = set(), [], []
    while len(test) < NUM_TEST:
        q, a = question(rng)
        if q not in seen:
            seen.add(q)
            test.append((q, a))
    while len(train) < NUM_TRAIN:
        q, a = question(rng)
        if q not in seen:  # no held-out question in train (train repeats are allowed)
            train.append((q, a))
    return train, test


def to_row(q: str, a: str) -> str:
    messages = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return json.dumps({"messages": messages}, ensure_ascii=False)


def render(q: str, a: str) -> str:
    return f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n"


def make_tokenizer(train) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [render(q, a) for q, a in train[:2000]] + ["system", "You are a helpful assistant."]
    tok.train_from_iterator(corpus, trainer=trainer)
    return tok


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> None:
    train, test = make_data()
    tok = make_tokenizer(train)
    ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
    vocab = (tok.get_vocab_size() + 63) // 64 * 64  # padded rows are never produced by the tokenizer

    model_dir = OUT / "model"
    write(model_dir / "tokenizer.json", tok.to_str(pretty=True) + "\n")
    write(
        model_dir / "tokenizer_config.json",
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "model_max_length": MODEL["max_position_embeddings"],
                "chat_template": CHAT_TEMPLATE,
            },
            indent=2,
        )
        + "\n",
    )
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": vocab,
        **MODEL,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "use_sliding_window": False,
        "sliding_window": None,
        "bos_token_id": None,
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "dtype": "float32",
        "use_cache": True,
    }
    write(model_dir / "config.json", json.dumps(config, indent=2) + "\n")
    generation = {"do_sample": False, "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]}
    write(model_dir / "generation_config.json", json.dumps(generation, indent=2) + "\n")

    write(OUT / "data" / "train.jsonl", "".join(to_row(q, a) + "\n" for q, a in train))
    write(OUT / "data" / "test.jsonl", "".join(to_row(q, a) + "\n" for q, a in test))

    t = TRAIN
    yaml = f"""\
# `sft train --config examples/quickstart/train.yaml` (scripts/quickstart.sh): a tiny Qwen3 drawn
# from its config learns 2-digit addition and subtraction. Written by tools/make_quickstart_assets.py;
# the recipe is checked in Python by tools/quickstart_reference.py. Flag names are TRL's.
model_name_or_path: examples/quickstart/model
init_from_config: true
dataset_name: examples/quickstart/data
dataset_train_split: train
dataset_test_split: test
assistant_only_loss: true
packing: false
max_length: {t['max_length']}
bf16: false
gradient_checkpointing: false
learning_rate: {t['learning_rate']}
lr_scheduler_type: {t['lr_scheduler_type']}
warmup_steps: {t['warmup_steps']}
weight_decay: {t['weight_decay']}
max_grad_norm: {t['max_grad_norm']}
num_train_epochs: {t['num_train_epochs']}
per_device_train_batch_size: {t['per_device_train_batch_size']}
gradient_accumulation_steps: {t['gradient_accumulation_steps']}
logging_steps: 100
eval_strategy: "no"
save_strategy: "no"
report_to: none
output_dir: out/quickstart
overwrite_output_dir: true
seed: {t['seed']}
"""
    write(OUT / "train.yaml", yaml)
    print(f"vocab {tok.get_vocab_size()} (config {vocab}), train {len(train)}, test {len(test)}")
    print(tok.encode(render(*test[0])).tokens)


if __name__ == "__main__":
    main()
