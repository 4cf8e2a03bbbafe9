#!/usr/bin/env python3
"""The quickstart recipe in Python: proves that examples/quickstart/ is learnable in the time budget.

Trains the model of examples/quickstart/model from its config (transformers' init: weights
N(0, initializer_range), norms 1) on examples/quickstart/data/train.jsonl with the hyperparameters
of examples/quickstart/train.yaml, as TRL's SFTTrainer would with assistant_only_loss: the chat
template renders each conversation, only the tokens inside {% generation %} are scored, the loss is
the mean over those tokens of a batch, AdamW, the transformers LR schedule, global-norm clipping.
Then it greedy-generates an answer to every held-out question (apply_chat_template with
add_generation_prompt) and prints the exact match, the wall time and the CPU time of training.

Options: --threads N (default 2, the quickstart's machine), --limit N (test questions),
--save DIR (save the trained model + tokenizer, e.g. for a CLI test fixture),
--override key=value (train.yaml values or config.json values, for trying recipes).

Run: ~/.venv-sft/bin/python tools/quickstart_reference.py
"""

import argparse
import json
import math
import random
import time
from pathlib import Path

import torch
import yaml
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, get_scheduler

REPO = Path(__file__).resolve().parent.parent
QS = REPO / "examples" / "quickstart"


def read_rows(path: Path):
    return [json.loads(line)["messages"] for line in path.read_text().splitlines() if line.strip()]


def encode(tokenizer, messages, max_length):
    out = tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = out["input_ids"][:max_length], out["assistant_masks"][:max_length]
    return ids, [t if m else -100 for t, m in zip(ids, mask)]


def batches(examples, batch_size, seed, epoch, pad_id):
    order = list(range(len(examples)))
    random.Random(seed * 1000 + epoch).shuffle(order)
    for start in range(0, len(order), batch_size):
        chunk = [examples[i] for i in order[start : start + batch_size]]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.full((len(chunk), width), pad_id)
        labels = torch.full((len(chunk), width), -100)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, (i, l) in enumerate(chunk):
            ids[r, : len(i)] = torch.tensor(i)
            labels[r, : len(l)] = torch.tensor(l)
            attn[r, : len(i)] = 1
        yield ids, labels, attn


@torch.no_grad()
def evaluate(model, tokenizer, rows, eos_id, batch_size=100):
    tokenizer.padding_side = "left"
    correct, failures = 0, []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        prompts = [m[:-1] for m in chunk]
        enc = tokenizer.apply_chat_template(
            prompts, add_generation_prompt=True, tokenize=True, return_dict=True, padding=True, return_tensors="pt"
        )
        out = model.generate(**enc, max_new_tokens=8, do_sample=False, eos_token_id=eos_id,
                             pad_token_id=tokenizer.pad_token_id)
        for m, seq in zip(chunk, out[:, enc["input_ids"].shape[1] :]):
            got = tokenizer.decode(seq, skip_special_tokens=True).strip()
            want = m[-1]["content"].strip()
            correct += got == want
            if got != want and len(failures) < 5:
                failures.append((m[-2]["content"], want, got))
    return correct, failures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--override", action="append", default=[])
    ap.add_argument("--train_limit", type=int, default=0)
    cli = ap.parse_args()
    torch.set_num_threads(cli.threads)

    args = yaml.safe_load((QS / "train.yaml").read_text())
    model_overrides = {}
    for kv in cli.override:
        k, v = kv.split("=", 1)
        v = yaml.safe_load(v)
        if isinstance(v, str):  # YAML 1.1 reads 2e-3 as a string
            try:
                v = float(v)
            except ValueError:
                pass
        if k in args:
            args[k] = v
        else:
            model_overrides[k] = v
    # Overrides go through the constructor, so derived fields (layer_types) follow them.
    config = AutoConfig.from_pretrained(QS / "model", **model_overrides)
    tokenizer = AutoTokenizer.from_pretrained(QS / "model")
    torch.manual_seed(args["seed"])
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    n_params = sum(p.numel() for p in model.parameters())

    rows = read_rows(QS / "data" / "train.jsonl")
    if cli.train_limit:
        rows = rows[: cli.train_limit]
    examples = [encode(tokenizer, m, args["max_length"]) for m in rows]
    bs = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"]
    steps_per_epoch = math.ceil(len(examples) / bs)
    epochs = args["num_train_epochs"]
    total = args.get("max_steps", -1)
    if total is None or total <= 0:
        total = math.ceil(epochs * steps_per_epoch)
    warmup = args.get("warmup_steps", 0)
    warmup = math.ceil(warmup * total) if warmup < 1 else int(warmup)

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.dim() < 2 else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.get("weight_decay", 0.0)}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args["learning_rate"], betas=(0.9, 0.999), eps=1e-8,
    )
    sched = get_scheduler(args["lr_scheduler_type"], opt, num_warmup_steps=warmup, num_training_steps=total)
    print(f"params {n_params}, train rows {len(examples)}, steps {total} (warmup {warmup}), threads {cli.threads}")

    model.train()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    step, epoch, tokens = 0, 0, 0
    while step < total:
        for ids, labels, attn in batches(examples, bs, args["seed"], epoch, tokenizer.pad_token_id):
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.get("max_grad_norm", 1.0))
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            tokens += int(attn.sum())
            step += 1
            if step % args.get("logging_steps", 25) == 0 or step == total:
                print(f"step {step}/{total} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} "
                      f"{time.perf_counter() - wall0:.1f}s", flush=True)
            if step >= total:
                break
        epoch += 1
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    model.eval()
    test = read_rows(QS / "data" / "test.jsonl")
    if cli.limit:
        test = test[: cli.limit]
    eval0 = time.perf_counter()
    correct, failures = evaluate(model, tokenizer, test, config.eos_token_id)
    for q, want, got in failures:
        print(f"  {q!r}: want {want!r}, got {got!r}")
    print(f"train: {wall:.1f} s wall, {cpu:.1f} s CPU, {tokens / wall:.0f} tokens/s; "
          f"eval {time.perf_counter() - eval0:.1f} s")
    print(f"exact_match: {correct / len(test):.3f} ({correct}/{len(test)})")
    if cli.save:
        model.save_pretrained(cli.save)
        tokenizer.save_pretrained(cli.save)
        model.generation_config.save_pretrained(cli.save)


if __name__ == "__main__":
    main()
