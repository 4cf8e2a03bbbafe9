#!/usr/bin/env python3
"""A tiny multimodal Gemma 3 folder (Gemma3ForConditionalGeneration) for loading its text model.

Writes tests/fixtures/models/gemma3_multimodal/: config.json (model_type gemma3, the text_config of
tests/fixtures/parity/gemma3_sliding_softcap, a one-layer SigLIP vision_config), model.safetensors
as transformers 5.24's save_pretrained writes it (the Hub layout: language_model.model.*,
vision_tower.*, multi_modal_projector.*), generation_config.json. The text weights are the parity
fixture's own; expected.safetensors holds that fixture's packed batch (input_ids, labels,
doc_lengths) with this model's logits and loss from transformers, each document run alone (text-only
rows: the vision tower is never called). Gemma3ForConditionalGeneration applies no final-logit
soft-cap, so these are the text model's logits before its cap (checked against the fixture's).

Run: ~/.venv-sft/bin/python tools/make_gemma3_multimodal_fixture.py
"""
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, Gemma3Config, Gemma3ForConditionalGeneration

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "tests" / "fixtures" / "parity" / "gemma3_sliding_softcap"
OUT = ROOT / "tests" / "fixtures" / "models" / "gemma3_multimodal"


def main() -> None:
    text_config = json.loads((TEXT / "config.json").read_text())
    for key in ("architectures", "transformers_version", "dtype", "_sliding_window_pattern"):
        text_config.pop(key, None)
    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2,
                  image_size=28, patch_size=14)
    config = Gemma3Config(text_config=text_config, vision_config=vision, mm_tokens_per_image=4,
                          image_token_index=255, boi_token_index=253, eoi_token_index=254)
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).eval()
    text = AutoModelForCausalLM.from_pretrained(TEXT, attn_implementation="eager").eval()
    missing, unexpected = model.model.language_model.load_state_dict(text.model.state_dict(), strict=True)
    assert not missing and not unexpected
    if OUT.exists():
        shutil.rmtree(OUT)
    model.save_pretrained(OUT)

    # The golden: the fixture's packed batch, each document run alone through the reloaded
    # folder. Gemma3ForConditionalGeneration applies no final-logit soft-cap (only
    # Gemma3ForCausalLM does), so its logits are the text model's before the cap.
    batch = load_file(TEXT / "expected.safetensors")
    reloaded = AutoModelForCausalLM.from_pretrained(OUT, attn_implementation="eager").eval()
    assert type(reloaded).__name__ == "Gemma3ForConditionalGeneration", type(reloaded)
    ids, labels = batch["input_ids"], batch["labels"]
    logits, loss_sum, count, start = [], 0.0, 0, 0
    with torch.no_grad():
        for n in batch["doc_lengths"].tolist():
            lg = reloaded(input_ids=ids[start:start + n][None]).logits[0]
            tgt, keep = labels[start + 1:start + n], labels[start + 1:start + n] != -100
            loss_sum += torch.nn.functional.cross_entropy(lg[:-1][keep], tgt[keep], reduction="sum").item()
            count += int(keep.sum())
            logits.append(lg)
            start += n
    logits = torch.cat(logits)
    cap = text_config["final_logit_softcapping"]
    capped = cap * torch.tanh(logits / cap)
    assert (capped - batch["logits"]).abs().max() < 1e-5  # the same text model, capped
    save_file({"input_ids": ids, "labels": labels, "doc_lengths": batch["doc_lengths"], "logits": logits,
               "loss": torch.tensor([loss_sum / count])}, OUT / "expected.safetensors")
    print(f"{OUT}: {sum(p.numel() for p in model.parameters())} parameters, loss {loss_sum / count:.6f}")


if __name__ == "__main__":
    main()
