#!/usr/bin/env python3
"""The training-row order of TRL / transformers / accelerate, for data::Loader to match bit for bit.

Writes tests/fixtures/sampler/:
  generator.json  torch's CPU generator after torch.Generator().manual_seed(seed): its first raw 32-bit
                  draws (random()), 64-bit draws (random64()), and torch.randperm(n, generator=g) for
                  several n and seeds (the whole permutation for n <= 1000, else a digest, see below);
  trainer.json    the rows a real transformers Trainer (as TRL's SFTTrainer uses it: TRL does not
                  override the sampler) hands to the model, step by step, over several epochs, for
                  several dataset sizes, seeds, data_seed set/unset, batch sizes, drop_last and
                  gradient accumulation; and the steps after resuming from a mid-epoch checkpoint;
  sharded.json    what each rank of a W-process run gets: the Trainer's DataLoader passed through
                  accelerate's prepare_data_loader(num_processes=W, process_index=r), the function the
                  Trainer's accelerator.prepare calls.

Run: ~/.venv-sft/bin/python tools/make_sampler_goldens.py   (CPU, about a minute)

What TRL 1.16 + transformers 5.24 + accelerate 1.15 do (read from their sources, confirmed by these
goldens):
- Trainer._get_train_sampler returns RandomSampler(train_dataset) (no generator) for the default
  train_sampling_strategy "random" (group_by_length is that flag's other value, not a separate switch).
- accelerator.prepare -> prepare_data_loader, with use_seedable_sampler True (transformers'
  AcceleratorConfig default) and data_seed = args.data_seed, replaces it with SeedableRandomSampler:
  initial_seed = data_seed if set, else torch.random.initial_seed(), which is args.seed (the Trainer's
  set_seed(args.seed) in __init__; TRL calls set_seed(args.seed) too).
- Each epoch the Trainer calls set_epoch(epoch) and the sampler reseeds its generator with
  manual_seed(initial_seed + epoch), then yields torch.randperm(n, generator=g).tolist(). So an epoch's
  order depends only on (seed, epoch): resuming mid-epoch (skip_first_batches) replays the same order.
- torch's CPU generator is mt19937 seeded with the low 32 bits of the seed; random64() is two draws,
  the first the high word. randperm(n) for n < 2**32 // 20 swaps r[i] with r[i + random() % (n - i)]
  for i = 0 .. n-2; for larger n it runs the "inside-out" Fisher-Yates with random64() % (i + 1).
- One process: BatchSampler(batch_size, drop_last=dataloader_drop_last), the last batch short.
  W processes: BatchSamplerShard (split_batches False, even_batches True): rank r takes batches r, r+W,
  ...; the last round is completed from the start of the epoch's order, so global row position p of a
  step maps to order[p % n].

Digest (for long orders): FNV-1a 64 over each value's 8 little-endian bytes, as 16 hex digits, with
the first and last 16 values.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "sampler"
FULL_LIMIT = 1000  # orders up to this length are stored whole

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("ACCELERATE_USE_CPU", "1")


def fnv1a64(values: list[int]) -> str:
    h = 0xCBF29CE484222325
    for v in values:
        for b in int(v).to_bytes(8, "little"):
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def summary(values: list[int]) -> dict:
    if len(values) <= FULL_LIMIT:
        return {"length": len(values), "values": values}
    return {"length": len(values), "head": values[:16], "tail": values[-16:], "fnv1a64": fnv1a64(values)}


# ---------------------------------------------------------------- generator.json


def generator_goldens() -> dict:
    seeds = [0, 1, 42, 1234, 2**31 - 1, 2**32 - 1, 2**32 + 42, 2**63 + 7]
    streams = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        # int32 random_() is random() % 2**31: the raw 32-bit draws' low 31 bits. (torch.randint
        # with int64 takes random64() even for small ranges, so it cannot show single draws.)
        r32 = torch.empty(16, dtype=torch.int32).random_(generator=g).tolist()
        g = torch.Generator().manual_seed(seed)
        # A range of 2**62 >= 2**32 takes random64() % 2**62: the raw 64-bit draw's low 62 bits.
        r64 = torch.randint(0, 2**62, (8,), generator=g, dtype=torch.int64).tolist()
        streams.append({"seed": seed, "random_mod_2p31": r32, "random64_mod_2p62": r64})
    perms = []
    for n in [1, 2, 3, 7, 100, 1000, 70000, 1_000_003]:
        for seed in [0, 42, 43, 2**32 + 42]:
            g = torch.Generator().manual_seed(seed)
            perms.append({"n": n, "seed": seed, **summary(torch.randperm(n, generator=g).tolist())})
    # Two randperm calls in a row on one generator (as RandomSampler does when it draws the
    # num_samples % n remainder): the second continues the stream.
    g = torch.Generator().manual_seed(5)
    first = torch.randperm(10, generator=g).tolist()
    second = torch.randperm(10, generator=g).tolist()
    return {
        "streams": streams,
        "randperm": perms,
        "randperm_twice": {"n": 10, "seed": 5, "first": first, "second": second},
        "large_threshold": (2**32 - 1) // 20,
    }


def large_randperm_golden() -> dict | None:
    # The inside-out path starts at n = (2**32 - 1) // 20 = 214748364 (1.7 GB of int64); only with
    # SFT_SAMPLER_LARGE=1.
    if os.environ.get("SFT_SAMPLER_LARGE") != "1":
        return None
    n = (2**32 - 1) // 20
    g = torch.Generator().manual_seed(42)
    p = torch.randperm(n, generator=g)
    # A digest that needs no Python loop over 214M values: sum of (i+1) * p[i] mod 2**64.
    idx = torch.arange(1, n + 1, dtype=torch.int64)
    weighted = int((idx * p).sum().item()) & 0xFFFFFFFFFFFFFFFF
    return {"n": n, "seed": 42, "head": p[:16].tolist(), "tail": p[-16:].tolist(), "weighted_sum_mod_2p64": weighted}


# ---------------------------------------------------------------- trainer.json


class Recorder(torch.nn.Module):
    """A model whose forward records the row ids of each micro-batch."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.seen: list[list[int]] = []

    def forward(self, row_id=None, **kwargs):
        self.seen.append(row_id.tolist())
        return {"loss": (self.w * 0.0).sum()}


def collate(features):
    return {"row_id": torch.tensor([f["row_id"] for f in features], dtype=torch.int64)}


def run_trainer(case: dict, output_dir: str, resume: str | None = None, save_steps: int | None = None):
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments

    ds = Dataset.from_dict({"row_id": list(range(case["num_rows"]))})
    args = TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=case["batch_size"],
        gradient_accumulation_steps=case.get("gas", 1),
        num_train_epochs=case["epochs"],
        seed=case["seed"],
        data_seed=case["data_seed"],
        dataloader_drop_last=case["drop_last"],
        remove_unused_columns=False,
        report_to=[],
        logging_strategy="no",
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        save_only_model=False,
        disable_tqdm=True,
        use_cpu=True,
        learning_rate=1e-3,
    )
    model = Recorder()
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collate)
    trainer.train(resume_from_checkpoint=resume)
    return model.seen


def trainer_case(case: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        seen = run_trainer(case, tmp)
    bs, n = case["batch_size"], case["num_rows"]
    per_epoch = n // bs if case["drop_last"] else (n + bs - 1) // bs
    assert len(seen) == per_epoch * case["epochs"], (case, len(seen))
    out = dict(case)
    out["steps_per_epoch"] = per_epoch
    out["epoch_rows"] = []
    for e in range(case["epochs"]):
        batches = seen[e * per_epoch : (e + 1) * per_epoch]
        assert all(len(b) == bs for b in batches[:-1])
        rows = [r for b in batches for r in b]
        out["epoch_rows"].append(summary(rows))
    out["last_batch_size"] = len(seen[-1])
    return out


def resume_case(case: dict, at_step: int) -> dict:
    """Train, checkpoint at `at_step` (micro-batch count = optimizer steps x gas), resume from it."""
    with tempfile.TemporaryDirectory() as tmp:
        full = run_trainer(case, tmp + "/a")
        run_trainer(case, tmp + "/b", save_steps=at_step)
        ckpt = f"{tmp}/b/checkpoint-{at_step}"
        assert os.path.isdir(ckpt), os.listdir(tmp + "/b")
        resumed = run_trainer(case, tmp + "/c", resume=ckpt)
        shutil.rmtree(tmp, ignore_errors=True)
    gas = case.get("gas", 1)
    done = at_step * gas
    assert resumed == full[done:], "resume does not continue the uninterrupted run"
    out = dict(case)
    out["resume_after_optimizer_steps"] = at_step
    out["micro_batches_before"] = done
    out["resumed_batches"] = resumed
    return out


def trainer_goldens() -> dict:
    cases = []
    for n, bs in [(1, 1), (1, 4), (7, 2), (7, 8), (100, 8), (100, 3), (1000, 16)]:
        for seed, data_seed in [(42, None), (7, None), (42, 1234)]:
            cases.append({"num_rows": n, "batch_size": bs, "epochs": 3, "seed": seed,
                          "data_seed": data_seed, "drop_last": False})
    cases.append({"num_rows": 100, "batch_size": 8, "epochs": 3, "seed": 42, "data_seed": None, "drop_last": True})
    cases.append({"num_rows": 100, "batch_size": 4, "gas": 3, "epochs": 2, "seed": 3, "data_seed": None,
                  "drop_last": False})
    cases.append({"num_rows": 70000, "batch_size": 256, "epochs": 3, "seed": 42, "data_seed": None, "drop_last": False})
    cases.append({"num_rows": 70000, "batch_size": 256, "epochs": 2, "seed": 0, "data_seed": 99, "drop_last": False})
    out = [trainer_case(c) for c in cases]
    resumes = [
        resume_case({"num_rows": 100, "batch_size": 8, "epochs": 3, "seed": 42, "data_seed": None,
                     "drop_last": False}, 17),  # epoch 1, step 4 of 13
        resume_case({"num_rows": 100, "batch_size": 4, "gas": 3, "epochs": 2, "seed": 3, "data_seed": 5,
                     "drop_last": False}, 5),  # micro-batch 15 of 25 in epoch 0
    ]
    return {"cases": out, "resume": resumes}


# ---------------------------------------------------------------- sharded.json


def sharded_goldens() -> dict:
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import DataLoader, RandomSampler

    cases = []
    for n, bs, world, drop_last, seed, data_seed in [
        (100, 8, 2, False, 42, None), (100, 8, 4, False, 42, 1234), (7, 2, 4, False, 42, None),
        (3, 2, 4, False, 9, None), (100, 8, 3, True, 42, None), (1000, 16, 8, False, 1, None),
    ]:
        ranks = []
        for r in range(world):
            torch.manual_seed(seed)  # what the Trainer's set_seed(args.seed) leaves as initial_seed()
            ds = list(range(n))
            dl = DataLoader(ds, batch_size=bs, sampler=RandomSampler(ds), drop_last=drop_last)
            dl = prepare_data_loader(dl, num_processes=world, process_index=r, put_on_device=False,
                                     use_seedable_sampler=True, data_seed=data_seed)
            epochs = []
            for e in range(3):
                dl.set_epoch(e)
                epochs.append([b.tolist() for b in dl])
            ranks.append(epochs)
        cases.append({"num_rows": n, "batch_size": bs, "world_size": world, "drop_last": drop_last,
                      "seed": seed, "data_seed": data_seed, "ranks": ranks})
    return {"cases": cases}


def dump(name: str, obj) -> None:
    path = OUT / name
    path.write_text(json.dumps(obj, separators=(",", ":")) + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    gen = generator_goldens()
    large = large_randperm_golden()
    if large:
        gen["large_randperm"] = large
    elif (OUT / "generator.json").exists():  # keep a large golden made earlier
        old = json.loads((OUT / "generator.json").read_text())
        if "large_randperm" in old:
            gen["large_randperm"] = old["large_randperm"]
    dump("generator.json", gen)
    dump("sharded.json", sharded_goldens())
    dump("trainer.json", trainer_goldens())


if __name__ == "__main__":
    main()
