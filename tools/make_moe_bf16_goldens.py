"""bf16 goldens for the mixture-of-experts parity fixtures: transformers under CPU bf16 autocast.

A router's top-k is discontinuous: where two experts' scores nearly tie, a bf16 rounding anywhere
before it (autocast's, or ours at other points) can pick the other expert, and that token's
output then moves by far more than a rounding. So beside what make_bf16_parity_goldens.py writes
for a dense fixture (the logits and loss under autocast), this records which experts autocast's
routers chose, letting tests/model/moe_bf16_test.cpp compare the tokens both sides routed alike,
and how far autocast's own gradients are from the fp32 ones (the bound sft's bf16 gradients are
held to). For every fixture with experts in tests/fixtures/parity/, expected_bf16.safetensors:
  logits             F32 [T, V]  the LM head's output under autocast, widened
  loss               F32 [1]     Σ shifted cross-entropy / number of targets (fp32, as HF's loss)
  experts.<l>        I64 [T, k]  decoder layer l's routed experts per token, highest weight first
  grad_error.<name>  F64 [1]     ‖g_autocast − g_fp32‖ / ‖g_fp32‖ of that parameter's gradient of
                                 the loss above (no load-balancing term), the fp32 gradient being
                                 expected.safetensors' grad.<name>
Each document of the packed batch runs alone (eager attention), as make_bf16_parity_goldens.py.
Run: ~/.venv-sft/bin/python tools/make_moe_bf16_goldens.py [NAME ...]
(torch 2.15.0, transformers 5.24.0; see tools/requirements.txt.)
"""
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_bf16_parity_goldens import FIXTURES, fresh_rope, shifted_ce_sum  # noqa: E402


def routers(model):
    """(layer index, router module) of every layer with experts: transformers 5.24's *TopKRouter
    modules return (logits, scores, indices)."""
    found = []
    for l, layer in enumerate(model.model.layers):
        for module in layer.modules():
            if type(module).__name__.endswith("TopKRouter"):
                found.append((l, module))
    return found


def main():
    torch.set_num_threads(2)
    only = set(sys.argv[1:])
    for d in sorted(p for p in FIXTURES.iterdir() if (p / "expected.safetensors").exists()):
        if only and d.name not in only:
            continue
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
        found = routers(model)
        if not found:
            continue
        exp = load_file(d / "expected.safetensors")
        ids, labels, docs = exp["input_ids"], exp["labels"], exp["doc_lengths"].tolist()
        chosen = {l: [] for l, _ in found}
        hooks = [m.register_forward_hook(lambda _m, _a, out, l=l: chosen[l].append(out[2].detach()))
                 for l, m in found]
        model.zero_grad()
        logits_all, loss_sum, count, start = [], 0.0, 0, 0
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for n in docs:
                fresh_rope(model)
                lg = model(input_ids=ids[start:start + n][None]).logits[0]
                s, c = shifted_ce_sum(lg, labels[start:start + n])
                loss_sum, count = loss_sum + s, count + c
                logits_all.append(lg.detach().float())
                start += n
        loss = loss_sum / count
        loss.backward()
        for h in hooks:
            h.remove()
        out = {"logits": torch.cat(logits_all).contiguous(), "loss": loss.detach().reshape(1).float()}
        for l, parts in chosen.items():
            out[f"experts.{l}"] = torch.cat(parts).to(torch.int64).contiguous()
        for name, p in model.named_parameters():
            ref = exp["grad." + name].double()
            err = (p.grad.double() - ref).norm() / ref.norm().clamp_min(1e-30)
            out["grad_error." + name] = err.reshape(1)
        save_file(out, d / "expected_bf16.safetensors")
        worst = max(float(v) for k, v in out.items() if k.startswith("grad_error."))
        print(f"{d.name}: loss bf16 {loss.item():.6f} fp32 {exp['loss'].item():.6f}; "
              f"{len(found)} routed layers; worst autocast gradient error {worst:.3g}")


if __name__ == "__main__":
    main()
