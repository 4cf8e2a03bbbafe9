#!/usr/bin/env python3
"""Compare an `sft debug forward` dump with transformers on the same model and tokens.

  sft debug forward --model DIR --tokens TOKENS.json --out dump.safetensors [--backward]
  ~/.venv-sft/bin/python tools/check_debug_dump.py --model DIR --tokens TOKENS.json --dump dump.safetensors

transformers runs in float32, each document of doc_lengths alone (what a packed batch means),
with labels defaulting to input_ids as in sft. Prints max |Δlogit| relative to max |logit|,
|Δloss| and, when the dump has gradients, the worst per-tensor relative error ‖Δg‖/‖g‖; exits
non-zero when issue 5's tolerances (1e-4, 1e-5, 1e-4) are exceeded.
"""

import argparse
import json
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--dump", required=True)
    args = ap.parse_args()
    spec = json.load(open(args.tokens))
    ids = torch.tensor(spec["input_ids"])
    labels = torch.tensor(spec.get("labels", spec["input_ids"]))
    docs = spec.get("doc_lengths", [len(ids)])
    dump = load_file(args.dump)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager")
    model.zero_grad()
    logits, loss_sum, count, start = [], 0.0, 0, 0
    for n in docs:
        lg = model(input_ids=ids[start : start + n][None]).logits[0]
        tgt = labels[start + 1 : start + n]
        keep = tgt != -100
        loss_sum = loss_sum + torch.nn.functional.cross_entropy(lg[:-1][keep], tgt[keep], reduction="sum")
        count += int(keep.sum())
        logits.append(lg)
        start += n
    loss = loss_sum / count
    ok = True
    ref = torch.cat(logits).detach()
    dl = (dump["logits"] - ref).abs().max().item() / ref.abs().max().item()
    dloss = abs(dump["loss"].item() - loss.item())
    print(f"max|Δlogit|/max|logit| {dl:.3g}   |Δloss| {dloss:.3g}")
    ok &= dl <= 1e-4 and dloss <= 1e-5
    if any(k.startswith("grad.") for k in dump):
        loss.backward()
        worst, name = 0.0, ""
        for pname, p in model.named_parameters():
            g = dump["grad." + pname]
            rel = ((g - p.grad).norm() / p.grad.norm().clamp_min(1e-30)).item()
            if rel > worst:
                worst, name = rel, pname
        print(f"worst gradient relative error {worst:.3g} ({name})")
        ok &= worst <= 1e-4
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
