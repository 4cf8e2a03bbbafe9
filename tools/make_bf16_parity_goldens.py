"""bf16 goldens for the model parity fixtures: transformers under CPU bf16 autocast.

For every fixture in tests/fixtures/parity/ (written by make_model_parity_fixtures.py), loads the
fp32 model with eager attention, runs each document of the fixture's packed batch alone under
torch.autocast("cpu", dtype=torch.bfloat16) — what TRL's `bf16=True` does on a CPU — and writes
expected_bf16.safetensors beside expected.safetensors:
  logits  F32 [T, V]   the LM head's output (bf16 under autocast), widened
  loss    F32 [1]      Σ shifted cross-entropy / number of targets, computed in fp32 as HF's
                       ForCausalLMLoss upcasts the logits
  grad_rel_worst F32 [1]  autocast's own distance from fp32 in the gradients: the worst over the
                       parameters of ‖g_autocast − g_fp32‖ / ‖g_fp32‖ (the gradients of that
                       loss, with and without autocast), which bf16_test.cpp's gradient bound
                       derives from
Run: ~/.venv-sft/bin/python tools/make_bf16_parity_goldens.py [NAME ...]
(names: only those fixtures; the others keep their committed goldens. The mixtures of experts'
fixtures are tools/make_moe_bf16_goldens.py's, which also records the routing.)
(torch 2.15.0, transformers 5.24.0; see tools/requirements.txt.)
"""
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "parity"


def fresh_rope(model):
    # As make_model_parity_fixtures.py: dynamic RoPE keeps state across calls; reset it.
    rope = model.model.rotary_emb
    if getattr(rope, "rope_type", "") == "dynamic":
        rope.register_buffer("inv_freq", rope.original_inv_freq.clone(), persistent=False)
        rope.max_seq_len_cached = rope.original_max_seq_len


def shifted_ce_sum(logits, labels):
    tgt, lg = labels[1:], logits[:-1].float()
    keep = tgt != -100
    if keep.sum() == 0:
        return torch.zeros(()), 0
    return torch.nn.functional.cross_entropy(lg[keep], tgt[keep], reduction="sum"), int(keep.sum())


def batch_loss(model, ids, labels, docs):
    total, count, start = 0.0, 0, 0
    for n in docs:
        fresh_rope(model)
        s, c = shifted_ce_sum(model(input_ids=ids[start:start + n][None]).logits[0],
                              labels[start:start + n])
        total, count, start = total + s, count + c, start + n
    return total / count


def gradients(model, ids, labels, docs, autocast):
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = batch_loss(model, ids, labels, docs)
    loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def grad_rel_worst(model, ids, labels, docs):
    ref = gradients(model, ids, labels, docs, False)
    got = gradients(model, ids, labels, docs, True)
    return max(((got[k] - g).norm() / g.norm().clamp_min(1e-30)).item() for k, g in ref.items())


def main():
    torch.set_num_threads(2)
    only = set(sys.argv[1:])
    for d in sorted(p for p in FIXTURES.iterdir() if (p / "expected.safetensors").exists()):
        if only and d.name not in only:
            continue
        exp = load_file(d / "expected.safetensors")
        ids, labels, docs = exp["input_ids"], exp["labels"], exp["doc_lengths"].tolist()
        model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32,
                                                     attn_implementation="eager").eval()
        if any(type(m).__name__.endswith("TopKRouter") for m in model.modules()):
            continue  # a mixture of experts: tools/make_moe_bf16_goldens.py writes its golden
        logits_all, loss_sum, count, start = [], 0.0, 0, 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            for n in docs:
                fresh_rope(model)
                lg = model(input_ids=ids[start:start + n][None]).logits[0]
                s, c = shifted_ce_sum(lg, labels[start:start + n])
                loss_sum, count = loss_sum + float(s), count + c
                logits_all.append(lg.float())
                start += n
        loss = loss_sum / count
        worst = grad_rel_worst(model, ids, labels, docs)
        save_file({"logits": torch.cat(logits_all).contiguous(),
                   "loss": torch.tensor([loss], dtype=torch.float32),
                   "grad_rel_worst": torch.tensor([worst], dtype=torch.float32)},
                  d / "expected_bf16.safetensors")
        print(f"{d.name}: loss bf16 {loss:.6f} fp32 {exp['loss'].item():.6f}; "
              f"autocast's gradients from fp32 {worst:.4f}")


if __name__ == "__main__":
    main()
