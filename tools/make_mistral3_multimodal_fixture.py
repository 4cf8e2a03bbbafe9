#!/usr/bin/env python3
"""A tiny multimodal Mistral 3 folder (Mistral3ForConditionalGeneration) for training its text model.

Writes tests/fixtures/models/mistral3_multimodal/:
  config.json, generation_config.json, model.safetensors  as transformers 5.24's save_pretrained
      writes them: model_type mistral3, a text_config of model_type mistral (2 layers, GQA, the
      head untied: tie_word_embeddings false at the top, the level Mistral3ForConditionalGeneration
      ties by), a one-layer pixtral vision_config; weights in the Hub layout (language_model.model.*,
      language_model.lm_head.weight, vision_tower.*, multi_modal_projector.*).
  expected.safetensors  one packed batch of text-only rows (the vision tower is never called),
      each document run alone through the reloaded folder, as the parity fixtures
      (make_model_parity_fixtures.py) hold it:
        input_ids, labels, doc_lengths  I64
        logits F32 [T, V], loss F32 [1]  (Σ shifted cross-entropy / targets)
        grad.<name> F32  the gradient of that loss for every text-model parameter, under the text
                         model's own names (model.layers.0..., lm_head.weight); the vision tower and
                         the projector get none from text rows (checked)

Weights are random (seeded) with the parity fixtures' larger scale, norm weights around 1.
Run: ~/.venv-sft/bin/python tools/make_mistral3_multimodal_fixture.py
(torch 2.15.0, transformers 5.24.0; see tools/requirements.txt.)
"""
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import Mistral3Config, Mistral3ForConditionalGeneration

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "models" / "mistral3_multimodal"
SEED = 28
DOC_LENGTHS = [9, 12, 7]

TEXT = dict(model_type="mistral", vocab_size=256, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
            max_position_embeddings=128, rms_norm_eps=1e-5, sliding_window=None,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=1, eos_token_id=2)
VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
              head_dim=8, image_size=16, patch_size=4)


def randomise(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) * (1.5 / fan_in**0.5))


def text_name(name):
    # In memory transformers 5 holds the text model as model.language_model.*; sft's names are
    # the text model's own.
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name if name == "lm_head.weight" else None


def shifted_ce_sum(logits, labels):
    tgt, lg = labels[1:], logits[:-1]
    keep = tgt != -100
    return torch.nn.functional.cross_entropy(lg[keep], tgt[keep], reduction="sum"), int(keep.sum())


def main():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    config = Mistral3Config(text_config=TEXT, vision_config=VISION, tie_word_embeddings=False,
                            spatial_merge_size=2, image_token_index=10)
    model = Mistral3ForConditionalGeneration(config).float()
    randomise(model, gen)
    if OUT.exists():
        shutil.rmtree(OUT)
    model.save_pretrained(OUT)

    reloaded = Mistral3ForConditionalGeneration.from_pretrained(OUT, dtype=torch.float32).eval()
    assert reloaded.lm_head.weight.data_ptr() != reloaded.model.language_model.embed_tokens.weight.data_ptr()
    T = sum(DOC_LENGTHS)
    ids = torch.randint(3, TEXT["vocab_size"], (T,), generator=gen)
    labels = ids.clone()
    labels[torch.rand(T, generator=gen) < 0.25] = -100
    labels[:3] = -100  # a masked "prompt" at the start
    logits, loss_sum, count, start = [], 0.0, 0, 0
    for n in DOC_LENGTHS:
        lg = reloaded(input_ids=ids[start:start + n][None]).logits[0]
        s, c = shifted_ce_sum(lg, labels[start:start + n])
        loss_sum, count = loss_sum + s, count + c
        logits.append(lg)
        start += n
    loss = loss_sum / count
    loss.backward()

    tensors = {"input_ids": ids, "labels": labels, "doc_lengths": torch.tensor(DOC_LENGTHS),
               "logits": torch.cat(logits).detach().contiguous(), "loss": loss.detach().reshape(1)}
    for name, p in reloaded.named_parameters():
        t = text_name(name)
        if t is None:
            assert p.grad is None or not p.grad.any(), name  # vision tower, projector
            continue
        tensors["grad." + t] = p.grad.detach().contiguous()
    save_file(tensors, OUT / "expected.safetensors")
    size = (OUT / "model.safetensors").stat().st_size
    print(f"{OUT}: {sum(p.numel() for p in model.parameters())} parameters ({size} bytes), "
          f"T={T}, loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
