#!/usr/bin/env python3
"""LoRA initialisation goldens from TRL's SFTTrainer + PEFT, for sft's LoraModel to match bit for bit
(tests/model/lora_init_test.cpp).

For each configuration in CONFIGS (a seed, a LoraConfig) this builds SFTTrainer exactly as
tools/make_lora_goldens.py does, on the tiny Qwen3 of tests/fixtures/trl_parity/model, and writes
tests/fixtures/lora_init/<name>.safetensors: every adapter's lora_A.weight (fp32) under the key of
PEFT's adapter_model.safetensors ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"),
plus tests/fixtures/lora_init/<name>.json with the seed and the LoraConfig fields used.

How TRL 1.16 + PEFT 0.21 + torch 2.15 draw these numbers (what sft reproduces; checked below by an
independent model of the stream before anything is written):

1. SFTTrainer.__init__ calls transformers.set_seed(seed): torch.manual_seed(seed), so torch's default
   CPU generator is MT19937 seeded with the low 32 bits of the seed (tools/make_sampler_goldens.py).
2. It loads the model with from_pretrained, which draws nothing (every weight comes from the file, the
   tied LM head included), reads the tokenizer and a first dataset row (no draws), then calls
   get_peft_model.
3. PEFT's inject_adapter walks model.named_modules() in order (layer by layer; q_proj, k_proj, v_proj,
   o_proj, then gate_proj, up_proj, down_proj) and, for each targeted projection with in_features I
   and out_features O, LoraLayer.update_layer:
     a. builds lora_A = nn.Linear(I, r, bias=False), whose constructor runs its own
        kaiming_uniform_(a=sqrt(5)) on the (r, I) weight: r*I draws, thrown away;
     b. builds lora_B = nn.Linear(r, O, bias=False): O*r draws, thrown away;
     c. reset_lora_parameters (init_lora_weights=True): kaiming_uniform_(lora_A.weight, a=sqrt(5)),
        r*I draws that are kept, in row-major order, and zeros_(lora_B.weight) (no draws).
   modules_to_save copies (deep copies) draw nothing.
4. kaiming_uniform_(w, a=sqrt(5)) on an (r, I) tensor is w.uniform_(-bound, bound) with, in Python
   doubles, gain = sqrt(2 / (1 + sqrt(5)**2)), bound = sqrt(3) * gain / sqrt(I). torch's CPU
   uniform_ kernel (ATen's uniform_kernel, one element after another, no vectorised path) casts
   from = -bound and to = bound to float and for each element takes one 32-bit draw u and returns
   x * (to - from) + from with x = (u & (2^24 - 1)) * 2^-24 in float
   (at::transformation::uniform_real). The kernel is compiled for AVX2 / AVX-512 with floating
   contraction, so that expression is ONE fused multiply-add (rounded once): the model below checks
   both readings and only the fused one matches.

Run: ~/.venv-sft/bin/python tools/make_lora_init_goldens.py   (CPU, a few seconds)
"""

import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from datasets import load_dataset
from peft import LoraConfig
from safetensors.torch import save_file
from trl import SFTTrainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_trl_train_goldens import COMMON, flags_to_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BASE = "tests/fixtures/trl_parity/model"
OUT = REPO / "tests" / "fixtures" / "lora_init"
ALL7 = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# name: (seed, LoraConfig kwargs). all7_r8_seed42 is the configuration of the LoRA parity goldens
# (tests/fixtures/lora/*/adapter_init hold the same A matrices).
CONFIGS = {
    "all7_r8_seed42": (42, dict(r=8, lora_alpha=16, target_modules=ALL7)),
    "default_r16_seed7": (7, dict(r=16, lora_alpha=32, target_modules=None)),
    "mlp_r3_seed3000000019": (3000000019, dict(r=3, lora_alpha=6, target_modules=["gate_proj", "down_proj"])),
}


class TorchMt19937:
    """torch's CPU generator after manual_seed(seed): the reference MT19937, 32-bit outputs."""

    def __init__(self, seed: int) -> None:
        self.state = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            prev = self.state[-1]
            self.state.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
        self.index = 624

    def next(self) -> int:
        if self.index == 624:
            s = self.state
            for k in range(624):
                y = (s[k] & 0x80000000) | (s[(k + 1) % 624] & 0x7FFFFFFF)
                s[k] = s[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)

    def skip(self, n: int) -> None:
        for _ in range(n):
            self.next()


def model_kaiming_uniform(gen: TorchMt19937, rows: int, cols: int, fused: bool) -> np.ndarray:
    """kaiming_uniform_(a=sqrt(5)) of a (rows, cols) float tensor, as point 4 of the docstring reads it."""
    gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))
    bound = math.sqrt(3.0) * (gain / math.sqrt(cols))
    lo, hi = np.float32(-bound), np.float32(bound)
    span = np.float32(hi - lo)
    out = np.empty(rows * cols, np.float32)
    for k in range(rows * cols):
        x = np.float32((gen.next() & 0xFFFFFF) * 2.0**-24)
        if fused:  # x * span is exact in long double (48 bits); one rounding to float
            out[k] = np.float32(np.longdouble(x) * np.longdouble(span) + np.longdouble(lo))
        else:
            out[k] = np.float32(np.float32(x * span) + lo)
    return out.reshape(rows, cols)


def adapter_key(param_name: str) -> str:
    """PEFT's in-model name ("...q_proj.lora_A.default.weight") → its adapter file key."""
    return param_name.replace(".lora_A.default.", ".lora_A.")


def trainer_lora_a(seed: int, lora: dict) -> dict[str, tuple[torch.Tensor, int]]:
    """The A matrices SFTTrainer starts from, in PEFT's creation order, with each module's out_features."""
    flags = list(COMMON)
    flags[flags.index("--seed") + 1] = str(seed)
    with tempfile.TemporaryDirectory() as tmp:
        args, script = flags_to_config(flags, tmp)
        dataset = load_dataset("json", data_files=str(REPO / script["dataset_name"]), split="train")
        peft_config = LoraConfig(lora_dropout=0.0, task_type="CAUSAL_LM", **lora)
        trainer = SFTTrainer(model=str(REPO / BASE), args=args, train_dataset=dataset, peft_config=peft_config)
        out = {}
        for name, module in trainer.model.named_modules():
            if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
                a = module.lora_A["default"].weight.detach().clone().contiguous()
                out[adapter_key(name + ".lora_A.default.weight")] = (a, module.lora_B["default"].weight.shape[0])
        return out


def check_stream_model(name: str, seed: int, adapters: dict) -> None:
    """Point 3 and 4 of the docstring, element for element, against what the trainer holds."""
    for fused in (True, False):
        gen = TorchMt19937(seed)
        mismatches = 0
        for key, (a, out_features) in adapters.items():
            r, cols = a.shape
            gen.skip(r * cols)  # lora_A's nn.Linear constructor
            gen.skip(out_features * r)  # lora_B's
            want = model_kaiming_uniform(gen, r, cols, fused)
            mismatches += int((want.view(np.uint32) != a.numpy().view(np.uint32)).sum())
        total = sum(a.numel() for a, _ in adapters.values())
        print(f"{name}: {'fused' if fused else 'unfused'} model of the stream: {mismatches} of {total} differ",
              file=sys.stderr)
        if fused:
            assert mismatches == 0, f"{name}: the documented stream does not reproduce TRL's A matrices"


def main() -> None:
    torch.set_num_threads(1)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    for name, (seed, lora) in CONFIGS.items():
        adapters = trainer_lora_a(seed, lora)
        check_stream_model(name, seed, adapters)
        save_file({k: a for k, (a, _) in adapters.items()}, str(OUT / f"{name}.safetensors"))
        meta = {"config": name, "seed": seed, "base_model": BASE, "lora": lora,
                "adapters": list(adapters.keys())}
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
