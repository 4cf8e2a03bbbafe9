#!/usr/bin/env python3
"""LoRA on the experts of a mixture of experts, as PEFT 0.21 adapts them through `target_parameters`
(peft/tuners/lora/layer.py ParamWrapper), for tests/model/lora_experts_test.cpp.

For each tiny MoE parity fixture (tests/fixtures/parity/<fixture>, made by make_model_parity_fixtures.py:
qwen3_moe, gpt-oss, OLMoE, Mixtral, GraniteMoe) this applies LoraConfig(r=4, lora_alpha=8, lora_dropout=0,
target_modules=["q_proj", "v_proj"], target_parameters=[<moe module>.experts.gate_up_proj,
<moe module>.experts.down_proj]) after torch.manual_seed(SEED),
and writes tests/fixtures/lora_experts/<fixture>/:

  init.safetensors       PEFT's freshly initialised adapter (A Kaiming-uniform, B zero) under the keys
                         of adapter_model.safetensors: sft's LoraModel must draw the same numbers;
  adapter/               save_pretrained of the adapter after every lora_B (and lora_A) got random values
                         (so the experts' delta is not zero): adapter_config.json, adapter_model.safetensors;
  expected.safetensors   on the fixture's packed batch (each document alone, as the parity fixtures):
                         "logits" (T, V), "loss" (the shifted cross-entropy summed over documents / the
                         number of targets), "grad.<adapter key>" for every adapter tensor, and
                         "merged_logits" of merge_and_unload() on the same batch.

What PEFT does with a 3-D parameter (E, d1, d2): lora_A = nn.Linear(in, r·E) and lora_B = nn.Linear(r·E,
out), with (in, out) = (d2, d1) unless the experts class says is_transposed (gpt-oss: (E, in, out));
expert e's delta is scale · B_e A_e with A_e = rows [e·r, (e+1)·r) of A and B_e = the columns j·E + e of B
(B reshaped (out, r, E)); the delta joins the weight (W + delta) for the experts' forward. Two targets on
one module nest: the first wrapped (gate_up_proj, registered first) saves as "experts.base_layer.lora_A".

Run: ~/.venv-sft/bin/python tools/make_lora_expert_goldens.py   (CPU, fp32, seconds)
"""

import json
import shutil
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "lora_experts"
# fixture: the experts' parameter names as transformers 5 holds them (GraniteMoe's module is block_sparse_moe).
FIXTURES = {
    "qwen3_moe_topk_norm": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
    "gpt_oss_experts_sinks": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
    "olmoe_experts": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
    "mixtral_experts_sliding": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
    "granitemoe_multipliers": ["block_sparse_moe.experts.gate_up_proj", "block_sparse_moe.experts.down_proj"],
}
SEED = 11
R, ALPHA = 4, 8
TARGET_MODULES = ["q_proj", "v_proj"]


def shifted_ce_sum(logits, labels):
    tgt, lg = labels[1:], logits[:-1]
    keep = tgt != -100
    return torch.nn.functional.cross_entropy(lg[keep], tgt[keep], reduction="sum"), int(keep.sum())


def packed_forward(model, ids, labels, doc_lengths):
    logits_all, loss_sum, count, start = [], 0.0, 0, 0
    for n in doc_lengths:
        lg = model(input_ids=ids[start : start + n][None]).logits[0]
        s, c = shifted_ce_sum(lg, labels[start : start + n])
        loss_sum, count = loss_sum + s, count + c
        logits_all.append(lg)
        start += n
    return torch.cat(logits_all), loss_sum / count


def adapter_state(model):
    # The keys save_pretrained writes: "base_model.model.<module>.lora_A.weight" (adapter name dropped).
    out = {}
    for name, p in model.named_parameters():
        if "lora_" in name:
            out[name.replace(".default", "")] = p
    return out


def make(fixture, target_parameters):
    src = REPO / "tests" / "fixtures" / "parity" / fixture
    expected = load_file(str(src / "expected.safetensors"))
    ids, labels = expected["input_ids"], expected["labels"]
    doc_lengths = expected["doc_lengths"].tolist()
    base = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, experts_implementation="eager")
    base.eval()

    torch.manual_seed(SEED)
    config = LoraConfig(
        r=R,
        lora_alpha=ALPHA,
        lora_dropout=0.0,
        target_modules=TARGET_MODULES,
        target_parameters=target_parameters,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, config)
    state = adapter_state(model)
    dir_ = OUT / fixture
    if dir_.exists():
        shutil.rmtree(dir_)
    dir_.mkdir(parents=True)
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(dir_ / "init.safetensors"))

    # Non-zero B (and A moved off its init) so every delta and gradient is exercised.
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for k, p in state.items():
            p.copy_(torch.randn(p.shape, generator=gen) * (0.3 if "lora_B" in k else 0.5) / p.shape[-1] ** 0.5)

    model.save_pretrained(dir_ / "adapter")
    cfg_path = dir_ / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = f"tests/fixtures/parity/{fixture}"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (dir_ / "adapter" / "README.md").unlink(missing_ok=True)

    model.zero_grad()
    logits, loss = packed_forward(model, ids, labels, doc_lengths)
    loss.backward()
    tensors = {"logits": logits.detach().contiguous(), "loss": loss.detach().reshape(1)}
    for k, p in state.items():
        tensors["grad." + k] = p.grad.detach().contiguous()
    with torch.no_grad():
        merged = model.merge_and_unload()
        merged_logits, _ = packed_forward(merged, ids, labels, doc_lengths)
    tensors["merged_logits"] = merged_logits.contiguous()
    save_file(tensors, str(dir_ / "expected.safetensors"))
    print(fixture, f"loss={loss.item():.6f}", {k: tuple(v.shape) for k, v in state.items() if ".0." in k})


def main():
    for f, targets in FIXTURES.items():
        make(f, targets)


if __name__ == "__main__":
    main()
