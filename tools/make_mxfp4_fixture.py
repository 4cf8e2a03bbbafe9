#!/usr/bin/env python3
"""Create the MXFP4 fixtures: a tiny gpt-oss folder whose experts are stored as the released
gpt-oss checkpoints store them, and what transformers makes of it.

tests/fixtures/mxfp4/gpt_oss_tiny/ holds:

  config.json        a GptOssConfig (dtype bfloat16) with the released checkpoints'
                     quantization_config {"quant_method": "mxfp4", "modules_to_not_convert": [...]}
  model.safetensors  every tensor bf16 (embeddings, attention, router, norms, the experts'
                     biases), except each layer's experts:
                       mlp.experts.gate_up_proj_blocks  U8 [E, 2I, C/32, 16]
                       mlp.experts.gate_up_proj_scales  U8 [E, 2I, C/32]
                       mlp.experts.down_proj_blocks     U8 [E, C, I/32, 16]
                       mlp.experts.down_proj_scales     U8 [E, C, I/32]
                     random bytes for the blocks (every FP4 code), scales 2^-7 .. 2^-1
  expected.safetensors
    input_ids, labels, doc_lengths  I64   three documents packed into one stream
    logits       F32 [T, V]   each document run alone through transformers, concatenated
    loss         F32 [1]      sum over documents of the shifted cross-entropy / targets
    grad.<name>  F32          d loss / d parameter, every parameter but the embeddings and the
                              LM head (the plain parity fixture gpt_oss_experts_sinks has those;
                              they keep this folder under 200 KB)
    dequantized.model.layers.N.mlp.experts.gate_up_proj  BF16 [E, C, 2I]  what from_pretrained
    dequantized.model.layers.N.mlp.experts.down_proj     BF16 [E, I, C]   holds
    num_parameters  I64 [1]   the dequantized model's num_parameters()
  tokens.json        the same batch in `sft debug forward --tokens` form
  tokenizer.json, tokenizer_config.json  a 64-token BPE, so that `sft train` runs on the folder

tests/fixtures/mxfp4/fp4_table.safetensors: transformers' convert_moe_packed_tensors over every
(code, scale byte) pair, the decoder's whole domain:
  blocks  U8   [1, 256, 1, 16]   row s for scale byte s: byte j holds codes 2j mod 16 (low
                                 nibble) and 2j + 1 mod 16 (high), so each code twice
  scales  U8   [1, 256, 1]       s
  bf16    BF16 [1, 32, 256]      the dequantized result (transposed, as transformers returns it);
                                 dtype=float32 gives the same values (asserted here)

The oracle loads the folder with from_pretrained(quantization_config=Mxfp4Config(dequantize=True))
on the CPU (transformers dequantizes to the dtype of the parameter the values load into), once
with dtype=float32 for logits, loss and gradients, and once with dtype=bfloat16 for the
dequantized weights, which are asserted equal to the float32 load's (FP4 values times a power of
two are exact in both). It also asserts what save_pretrained writes for the dequantized model:
the plain expert tensors (those values, bf16) and a config.json without quantization_config.

tests/fuzz/corpus/mxfp4/: seed files for the mxfp4 fuzz target.

Run: ~/.venv-sft/bin/python tools/make_mxfp4_fixture.py
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GptOssConfig, GptOssForCausalLM, Mxfp4Config, PreTrainedTokenizerFast
from transformers.integrations.mxfp4 import convert_moe_packed_tensors

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_model_parity_fixtures import fresh_rope, randomise, shifted_ce_sum  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "mxfp4"
SEED = 2029
DOC_LENGTHS = [9, 8, 7]
# What openai/gpt-oss-20b's config.json says.
QUANTIZATION_CONFIG = {
    "modules_to_not_convert": [
        "model.layers.*.self_attn",
        "model.layers.*.mlp.router",
        "model.embed_tokens",
        "lm_head",
    ],
    "quant_method": "mxfp4",
}

CONFIG = dict(
    vocab_size=64,
    hidden_size=32,  # C and I are multiples of MXFP4's 32-value blocks
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    num_local_experts=3,  # 3 rather than 4: the folder stays under 200 KB
    num_experts_per_tok=2,
    max_position_embeddings=64,
    sliding_window=6,
    swiglu_limit=7.0,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
    attn_implementation="eager",
    experts_implementation="eager",
)


def table():
    """Every FP4 code under every E8M0 scale byte, through transformers' own decoder."""
    codes = torch.arange(16, dtype=torch.uint8)
    row = (codes[0::2] | (codes[1::2] << 4)).repeat(2)  # 16 bytes: codes 0..15 twice
    blocks = row.repeat(256, 1).reshape(1, 256, 1, 16).contiguous()
    scales = torch.arange(256, dtype=torch.int32).to(torch.uint8).reshape(1, 256, 1)
    bf16 = convert_moe_packed_tensors(blocks.clone(), scales.clone(), dtype=torch.bfloat16)
    f32 = convert_moe_packed_tensors(blocks.clone(), scales.clone(), dtype=torch.float32)
    # A float32 load gives the same values: the products are exact in both dtypes, and the
    # overflows (inf, or 0 times 2^128 = NaN) land alike.
    assert torch.equal(bf16.float().nan_to_num(), f32.nan_to_num()), "bf16 and f32 decodes differ"
    assert torch.equal(bf16.float().isnan(), f32.isnan())
    save_file(
        {"blocks": blocks, "scales": scales, "bf16": bf16.contiguous()},
        OUT / "fp4_table.safetensors",
    )
    print(f"fp4_table: {int((~torch.isfinite(f32)).sum())} of {f32.numel()} entries not finite")


def fuzz_seeds():
    """Small files for the mxfp4 fuzz target (tests/fuzz/fuzz_mxfp4.cpp): a valid pair with every
    scale byte, scales of the wrong shape, blocks of the wrong dtype."""
    seeds = REPO / "tests" / "fuzz" / "corpus" / "mxfp4"
    seeds.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    blocks = torch.randint(0, 256, (2, 4, 2, 16), generator=gen, dtype=torch.int32).to(torch.uint8)
    scales = torch.arange(0, 256, 16, dtype=torch.int32).to(torch.uint8).reshape(2, 4, 2)
    name = "model.layers.0.mlp.experts.gate_up_proj"
    for file, pair in (
        ("valid.safetensors", (blocks, scales)),
        ("scales_shape.safetensors", (blocks, scales.reshape(2, 8, 1))),
        ("blocks_dtype.safetensors", (blocks.to(torch.int8), scales)),
    ):
        save_file({name + "_blocks": pair[0].contiguous(), name + "_scales": pair[1].contiguous()},
                  seeds / file)


def experts_mxfp4(E, rows, cols, gen):
    blocks = torch.randint(0, 256, (E, rows, cols // 32, 16), generator=gen, dtype=torch.int32)
    scales = torch.randint(127 - 7, 127, (E, rows, cols // 32), generator=gen, dtype=torch.int32)
    return blocks.to(torch.uint8).contiguous(), scales.to(torch.uint8).contiguous()


def write_folder(dir_, gen):
    torch.manual_seed(SEED)
    config = GptOssConfig(**CONFIG)
    model = GptOssForCausalLM(config).float()
    randomise(model, gen)
    model.to(torch.bfloat16).save_pretrained(dir_, safe_serialization=True)
    weights = load_file(dir_ / "model.safetensors")
    E, C, I = config.num_local_experts, config.hidden_size, config.intermediate_size
    for name in list(weights):
        for proj, rows, cols in (("gate_up_proj", 2 * I, C), ("down_proj", C, I)):
            if name.endswith("mlp.experts." + proj):
                del weights[name]
                pair = experts_mxfp4(E, rows, cols, gen)
                weights[name + "_blocks"], weights[name + "_scales"] = pair
    save_file(weights, dir_ / "model.safetensors", metadata={"format": "pt"})
    cfg = json.loads((dir_ / "config.json").read_text())
    cfg["quantization_config"] = QUANTIZATION_CONFIG
    (dir_ / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return config


def write_tokenizer(dir_):
    """A 64-token BPE (the model's vocabulary) trained on tests/fixtures/train_cli, so that
    `sft train` runs on the folder (tests/cli/train_mxfp4.cmake)."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<pad>", "<s>", "</s>", "[UNK]"]  # pad, bos, eos ids 0, 1, 2 as the config
    trainer = trainers.BpeTrainer(vocab_size=CONFIG["vocab_size"], special_tokens=specials)
    rows = (REPO / "tests" / "fixtures" / "train_cli" / "train.jsonl").read_text().splitlines()
    tok.train_from_iterator([json.loads(r)["text"] for r in rows], trainer)
    assert tok.get_vocab_size() == CONFIG["vocab_size"]
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="[UNK]"
    ).save_pretrained(dir_)


def load(dir_, dtype):
    model = GptOssForCausalLM.from_pretrained(
        dir_, quantization_config=Mxfp4Config(dequantize=True), dtype=dtype, device_map="cpu"
    )
    assert getattr(model.config, "quantization_config", None) is None  # removed when dequantized
    return model.eval()


def check_save(model, stored, dequantized):
    """What sft's export mirrors: save_pretrained of the dequantized model writes plain experts
    (the bf16 values it holds, under the stacks' own names) and no quantization_config."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        cfg = json.loads((Path(tmp) / "config.json").read_text())
        assert "quantization_config" not in cfg, cfg
        saved = load_file(Path(tmp) / "model.safetensors")
    plain = {n.removesuffix("_blocks") for n in stored if not n.endswith("_scales")}
    assert set(saved) == plain, set(saved) ^ plain
    for key, w in dequantized.items():
        assert torch.equal(saved[key.removeprefix("dequantized.")], w), key


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    table()
    fuzz_seeds()
    dir_ = OUT / "gpt_oss_tiny"
    if dir_.exists():
        shutil.rmtree(dir_)
    gen = torch.Generator().manual_seed(SEED)
    config = write_folder(dir_, gen)
    write_tokenizer(dir_)

    tensors = {}
    as_bf16 = load(dir_, torch.bfloat16)
    model = load(dir_, torch.float32)
    for l, layer in enumerate(as_bf16.model.layers):
        for proj in ("gate_up_proj", "down_proj"):
            w = getattr(layer.mlp.experts, proj).detach()
            assert w.dtype == torch.bfloat16
            assert torch.equal(w.float(), getattr(model.model.layers[l].mlp.experts, proj).detach())
            tensors[f"dequantized.model.layers.{l}.mlp.experts.{proj}"] = w.contiguous()
    # The same dequantization by hand from the bytes on disk, as a cross-check of the golden.
    stored = load_file(dir_ / "model.safetensors")
    for key, w in tensors.items():
        name = key.removeprefix("dequantized.")
        ref = convert_moe_packed_tensors(stored[name + "_blocks"], stored[name + "_scales"])
        assert torch.equal(ref, w), name
    check_save(as_bf16, stored, tensors)
    tensors["num_parameters"] = torch.tensor([model.num_parameters()], dtype=torch.int64)

    T, V = sum(DOC_LENGTHS), config.vocab_size
    ids = torch.randint(3, V, (T,), generator=gen)
    labels = ids.clone()
    labels[torch.rand(T, generator=gen) < 0.25] = -100
    labels[:3] = -100
    model.zero_grad()
    logits_all, loss_sum, count, start = [], 0.0, 0, 0
    for n in DOC_LENGTHS:
        fresh_rope(model)
        lg = model(input_ids=ids[start : start + n][None]).logits[0]
        s, c = shifted_ce_sum(lg, labels[start : start + n])
        loss_sum, count = loss_sum + s, count + c
        logits_all.append(lg)
        start += n
    loss = loss_sum / count
    loss.backward()
    tensors.update(
        {
            "input_ids": ids.to(torch.int64),
            "labels": labels.to(torch.int64),
            "doc_lengths": torch.tensor(DOC_LENGTHS, dtype=torch.int64),
            "logits": torch.cat(logits_all).detach().float().contiguous(),
            "loss": loss.detach().reshape(1).float(),
        }
    )
    for pname, p in model.named_parameters():
        if pname not in ("model.embed_tokens.weight", "lm_head.weight"):
            tensors["grad." + pname] = p.grad.detach().float().contiguous()
    save_file(tensors, dir_ / "expected.safetensors")
    (dir_ / "tokens.json").write_text(
        json.dumps(
            {"input_ids": ids.tolist(), "labels": labels.tolist(), "doc_lengths": DOC_LENGTHS}
        )
        + "\n"
    )
    size = sum(f.stat().st_size for f in dir_.iterdir())
    print(f"gpt_oss_tiny: T={T} loss={loss.item():.6f}, {size} bytes")


if __name__ == "__main__":
    main()
