#!/usr/bin/env python3
"""Create the tiny, randomly initialised Hugging Face model fixtures.

Every model is built with transformers' own config/model classes, seeded with
torch.manual_seed, and written with save_pretrained(safe_serialization=True):

  tests/fixtures/models/llama/          float32, llama3 RoPE scaling, untied
  tests/fixtures/models/mistral/        bfloat16, sliding_window 16, untied
  tests/fixtures/models/qwen2/          float16, q/k/v bias, tied embeddings
  tests/fixtures/models/qwen3/          float32, head_dim 32 != hidden/heads, tied
  tests/fixtures/models/qwen3_sharded/  qwen3 architecture, untied, >= 3 shards + index
  tests/fixtures/models/qwen3_bf16/     qwen3 architecture, untied, bfloat16

and tests/fixtures/models/expected.json, keyed by fixture name, describing
what was written. Tensor facts are read
back from the safetensors files with the `safetensors` library, not taken
from the in-memory model:
  model_type, num_parameters, num_parameters_exclude_embeddings,
  transformers_version, torch_dtype (as written in config.json), files,
  tensors: [{name, dtype, shape, file, fnv1a64, sum_f64, first}] sorted by name,
where fnv1a64 is the FNV-1a 64-bit hash of the tensor's bytes exactly as stored
(16 lowercase hex digits), sum_f64 is math.fsum of the elements as float64 and
first holds up to the first 4 elements as float64.

Run: ~/.venv-sft/bin/python tools/make_model_fixtures.py
"""

import json
import math
import shutil
import struct
from pathlib import Path

import safetensors
import torch
import transformers
from safetensors import safe_open
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

REPO = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO / "tests" / "fixtures" / "models"

MAX_FIXTURE_BYTES = 1024 * 1024

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = 0xFFFFFFFFFFFFFFFF

SAFETENSORS_DTYPE = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}

# Sizes shared by all test fixtures.
SMALL = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    bos_token_id=1,
    eos_token_id=2,
)


def fnv1a64(data: bytes) -> str:
    h = FNV_OFFSET
    for b in data:
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return f"{h:016x}"


def fixture_specs():
    """(name, output dir, config/model classes, config kwargs, save dtype, save kwargs)."""
    return [
        (
            "llama",
            MODELS_DIR / "llama",
            LlamaConfig,
            LlamaForCausalLM,
            dict(
                SMALL,
                tie_word_embeddings=False,
                # transformers >= 5 takes RoPE settings as `rope_parameters`
                # (rope_theta lives inside it); `rope_scaling` is only accepted
                # as a legacy alias.
                rope_parameters={
                    "rope_type": "llama3",
                    "rope_theta": 500000.0,
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 64,
                },
            ),
            torch.float32,
            {},
        ),
        (
            "mistral",
            MODELS_DIR / "mistral",
            MistralConfig,
            MistralForCausalLM,
            dict(SMALL, tie_word_embeddings=False, sliding_window=16),
            torch.bfloat16,
            {},
        ),
        (
            "qwen2",
            MODELS_DIR / "qwen2",
            Qwen2Config,
            Qwen2ForCausalLM,
            dict(SMALL, tie_word_embeddings=True),
            torch.float16,
            {},
        ),
        (
            "qwen3",
            MODELS_DIR / "qwen3",
            Qwen3Config,
            Qwen3ForCausalLM,
            dict(SMALL, head_dim=32, tie_word_embeddings=True),
            torch.float32,
            {},
        ),
        (
            "qwen3_sharded",
            MODELS_DIR / "qwen3_sharded",
            Qwen3Config,
            Qwen3ForCausalLM,
            dict(SMALL, head_dim=32, tie_word_embeddings=False),
            torch.float32,
            {"max_shard_size": "100KB"},
        ),
        (
            "qwen3_bf16",
            MODELS_DIR / "qwen3_bf16",
            Qwen3Config,
            Qwen3ForCausalLM,
            dict(SMALL, vocab_size=512, head_dim=16, tie_word_embeddings=False),
            torch.bfloat16,
            {},
        ),
    ]


def tensor_float64_list(t: torch.Tensor):
    return t.reshape(-1).to(torch.float64).tolist()


def describe_saved_tensors(out_dir: Path):
    """Read every tensor back from the .safetensors file(s) in out_dir."""
    files = sorted(p.name for p in out_dir.glob("*.safetensors"))
    index_path = out_dir / "model.safetensors.index.json"
    if index_path.exists():
        index = json.loads(index_path.read_text())
        assert sorted(set(index["weight_map"].values())) == files, "index and shard files disagree"
    else:
        assert files == ["model.safetensors"], files

    entries = []
    for fname in files:
        path = out_dir / fname
        raw = path.read_bytes()
        (hlen,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + hlen])
        data = raw[8 + hlen :]
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                dtype = SAFETENSORS_DTYPE[t.dtype]
                info = header[name]
                assert info["dtype"] == dtype and info["shape"] == list(t.shape), name
                begin, end = info["data_offsets"]
                stored = data[begin:end]
                # Cross-check: the library's tensor bytes are the file's bytes.
                lib_bytes = t.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()
                assert lib_bytes == stored, name
                values = tensor_float64_list(t)
                entries.append(
                    {
                        "name": name,
                        "dtype": dtype,
                        "shape": list(t.shape),
                        "file": fname,
                        "fnv1a64": fnv1a64(stored),
                        "sum_f64": math.fsum(values),
                        "first": values[:4],
                    }
                )
    entries.sort(key=lambda e: e["name"])
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names), "a tensor is stored twice"
    return files, entries


def perturb_constant_parameters(model):
    """transformers initialises RMSNorm weights to exactly 1 and Linear biases to
    exactly 0. A loader that swaps or skips such tensors would go unnoticed, so
    give them small seeded random values as well (deterministic: runs after
    torch.manual_seed, in parameter order)."""
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if pname.endswith(".bias"):
                param.copy_(0.02 * torch.randn_like(param))
            elif "norm" in pname and param.dim() == 1:
                param.add_(0.1 * torch.randn_like(param))


def make_fixture(name, out_dir, config_cls, model_cls, cfg_kwargs, dtype, save_kwargs):
    torch.manual_seed(0)
    config = config_cls(**cfg_kwargs)
    model = model_cls(config).eval()
    perturb_constant_parameters(model)
    num_parameters = model.num_parameters()
    num_parameters_excl = model.num_parameters(exclude_embeddings=True)
    if dtype != torch.float32:
        model = model.to(dtype)

    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    model.save_pretrained(str(out_dir), safe_serialization=True, **save_kwargs)
    for p in out_dir.iterdir():
        p.chmod(0o644)  # save_pretrained leaves the .safetensors files 0600

    files, tensors = describe_saved_tensors(out_dir)
    written_config = json.loads((out_dir / "config.json").read_text())
    total = sum(p.stat().st_size for p in out_dir.iterdir())
    assert total < MAX_FIXTURE_BYTES, f"{name}: {total} bytes"
    if name == "qwen3_sharded":
        assert len(files) >= 3 and (out_dir / "model.safetensors.index.json").exists(), files

    record = {
        "model_type": written_config["model_type"],
        "num_parameters": num_parameters,
        "num_parameters_exclude_embeddings": num_parameters_excl,
        "transformers_version": written_config.get("transformers_version", transformers.__version__),
        "torch_dtype": written_config.get("dtype", written_config.get("torch_dtype")),
        "files": files,
        "tensors": tensors,
    }
    print(
        f"{name:14s} {str(out_dir.relative_to(REPO)):34s} {len(files)} file(s) {len(tensors):3d} tensors "
        f"{num_parameters:7d} params ({num_parameters_excl} excl. embeddings) {total / 1024:.0f} KiB"
    )
    return record


def dump_expected(doc):
    """JSON with one line per tensor entry, so diffs stay readable."""
    lines = ["{"]
    items = list(doc.items())
    for i, (key, rec) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        if key.startswith("_") or "tensors" not in rec:
            lines.append(f" {json.dumps(key)}: {json.dumps(rec)}{comma}")
            continue
        lines.append(f" {json.dumps(key)}: {{")
        for field, value in rec.items():
            if field == "tensors":
                continue
            lines.append(f"  {json.dumps(field)}: {json.dumps(value)},")
        lines.append('  "tensors": [')
        for j, t in enumerate(rec["tensors"]):
            tcomma = "," if j + 1 < len(rec["tensors"]) else ""
            lines.append(f"   {json.dumps(t)}{tcomma}")
        lines.append("  ]")
        lines.append(f" }}{comma}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == doc
    return text


def main():
    transformers.utils.logging.disable_progress_bar()
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    expected = {}
    for spec in fixture_specs():
        expected[spec[0]] = make_fixture(*spec)
    out = MODELS_DIR / "expected.json"
    doc = {
        "_generator": {
            "script": "tools/make_model_fixtures.py",
            "torch": torch.__version__.split("+")[0],
            "transformers": transformers.__version__,
            "safetensors": safetensors.__version__,
        },
        **expected,
    }
    out.write_text(dump_expected(doc))
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
