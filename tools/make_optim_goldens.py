#!/usr/bin/env python3
"""Goldens for src/optim: torch.optim.AdamW steps, clip_grad_norm_, and transformers' schedules.

Writes tests/fixtures/optim/:
  adamw.safetensors   params0 (P,), grads.<k> (P,) and params.<k> (P,) after step k (k = 1..5),
                      run by torch.optim.AdamW (CPU, fp32, default foreach/fused choice) with two
                      param groups: [0, 200) with weight decay, [200, 257) without; per-step lr in
                      the metadata ("lrs": comma-separated) — set on the param groups before each step.
  clip.safetensors    grads (P,), clipped (P,) after clip_grad_norm_(max_norm); metadata "norm", "max_norm".
  schedules.json      [{"type", "warmup_steps", "training_steps", "kwargs", "base_lr", "lrs": [lr at step 0..N]}]
                      from transformers.get_scheduler, the lr each optimizer step uses.

Run: ~/.venv-sft/bin/python tools/make_optim_goldens.py
"""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import get_scheduler

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "optim"
P, SPLIT, STEPS = 257, 200, 5


def adamw() -> None:
    g = torch.Generator().manual_seed(0)
    params = torch.randn(P, generator=g)
    decayed = torch.nn.Parameter(params[:SPLIT].clone())
    plain = torch.nn.Parameter(params[SPLIT:].clone())
    opt = torch.optim.AdamW(
        [{"params": [decayed], "weight_decay": 0.1}, {"params": [plain], "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    tensors = {"params0": params.clone()}
    lrs = [1e-3, 8e-4, 2e-3, 5e-4, 1e-3]
    for k in range(1, STEPS + 1):
        grad = torch.randn(P, generator=g) * (10.0 ** (k - 3))  # spans small and large gradients
        decayed.grad, plain.grad = grad[:SPLIT].clone(), grad[SPLIT:].clone()
        for group in opt.param_groups:
            group["lr"] = lrs[k - 1]
        opt.step()
        tensors[f"grads.{k}"] = grad
        tensors[f"params.{k}"] = torch.cat([decayed.detach(), plain.detach()])
    save_file(tensors, OUT / "adamw.safetensors",
              metadata={"lrs": ",".join(repr(x) for x in lrs), "weight_decay": "0.1", "split": str(SPLIT)})


def clip() -> None:
    g = torch.Generator().manual_seed(1)
    grads = torch.randn(P, generator=g) * 3.0
    p = torch.nn.Parameter(torch.zeros(P))
    p.grad = grads.clone()
    norm = torch.nn.utils.clip_grad_norm_([p], max_norm=1.0)
    save_file({"grads": grads, "clipped": p.grad.clone()}, OUT / "clip.safetensors",
              metadata={"norm": repr(float(norm)), "max_norm": "1.0"})


def schedules() -> None:
    cases = [
        ("linear", 3, 20, {}), ("linear", 0, 7, {}), ("cosine", 4, 25, {}), ("cosine", 2, 15, {"num_cycles": 1.5}),
        ("cosine_with_min_lr", 3, 20, {"min_lr": 1e-5}), ("cosine_with_min_lr", 0, 10, {"min_lr_rate": 0.1}),
        ("constant", 0, 10, {}), ("constant_with_warmup", 5, 12, {}),
        ("warmup_stable_decay", 3, 20, {"num_decay_steps": 6}),
        ("warmup_stable_decay", 4, 24, {"num_decay_steps": 8, "warmup_type": "cosine", "decay_type": "1-sqrt",
                                        "min_lr_ratio": 0.05}),
        ("warmup_stable_decay", 2, 16, {"num_decay_steps": 5, "warmup_type": "1-sqrt", "decay_type": "linear"}),
        ("inverse_sqrt", 4, 20, {}), ("inverse_sqrt", 0, 12, {}), ("inverse_sqrt", 3, 15, {"timescale": 7}),
    ]
    out = []
    for kind, warmup, total, kwargs in cases:
        base_lr = 2e-4
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
        sched = get_scheduler(kind, opt, num_warmup_steps=warmup, num_training_steps=total,
                              scheduler_specific_kwargs=dict(kwargs))
        lrs = []
        for _ in range(total + 3):  # a few steps past the end, where schedules floor
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        out.append({"type": kind, "warmup_steps": warmup, "training_steps": total, "kwargs": kwargs,
                    "base_lr": base_lr, "lrs": lrs})
    (OUT / "schedules.json").write_text(json.dumps(out, indent=1) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    adamw()
    clip()
    schedules()
    print("wrote", sorted(p.name for p in OUT.iterdir()))


if __name__ == "__main__":
    main()
