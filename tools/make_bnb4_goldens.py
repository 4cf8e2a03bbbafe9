#!/usr/bin/env python3
"""Goldens for bitsandbytes' blockwise 4-bit format (tests/ops/bnb_quant_test.cpp).

bitsandbytes (tools/requirements.txt) quantizes random weights on the CPU exactly as
transformers does when it loads a model with load_in_4bit (Params4bit → quantize_4bit,
blocksize 64): NF4 and FP4, with and without nested statistics (absmax minus its mean,
quantized 8-bit in blocks of 256 with the signed dynamic map). Each case stores the input,
the packed bytes, the absmax (or the nested pieces) and bitsandbytes' dequantized weight.
Shapes include a tail block (numel not a multiple of 64) and an odd element count.

It also saves the tiny Qwen3 fixture (tests/fixtures/models/qwen3) loaded by transformers with
a BitsAndBytesConfig, as save_pretrained writes a 4-bit model (model/quant4_weight.h reads
it): qwen3_nf4_nested/ and qwen3_fp4/, each with reference.safetensors holding every 4-bit
weight dequantized.

Usage: ~/.venv-sft/bin/python tools/make_bnb4_goldens.py [out_dir=tests/fixtures/bnb4]
"""
import os
import sys

import torch
import bitsandbytes.functional as F
from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

CASES = [  # name, shape, quant type, nested, input scale
    ("nf4_plain", (48, 64), "nf4", False, 0.05),
    ("fp4_plain", (48, 64), "fp4", False, 0.05),
    ("nf4_nested", (64, 80), "nf4", True, 0.02),  # 80 blocks of 64: two nested blocks, a tail
    ("fp4_nested", (64, 80), "fp4", True, 0.02),
    ("nf4_tail", (7, 13), "nf4", False, 1.0),  # 91 elements: a tail block, an odd count
    ("fp4_tail", (7, 13), "fp4", True, 1.0),
    ("nf4_nested_large", (128, 256), "nf4", True, 0.02),  # 512 blocks: two nested blocks
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/bnb4"
    torch.manual_seed(0)
    tensors = {}
    for name, shape, quant_type, nested, scale in CASES:
        w = torch.randn(shape) * scale
        w[0, 0] = 0.0  # exact zero, and a value on a code boundary below
        w[0, 1] = w[0, 2] if w.shape[1] > 2 else w[0, 1]
        packed, state = F.quantize_4bit(
            w, blocksize=64, quant_type=quant_type, compress_statistics=nested
        )
        tensors[f"{name}.input"] = w.contiguous()
        tensors[f"{name}.packed"] = packed.reshape(-1).contiguous()
        if nested:
            tensors[f"{name}.absmax"] = state.absmax.contiguous()  # uint8 codes
            tensors[f"{name}.offset"] = state.offset.reshape(1).float()
            tensors[f"{name}.nested_absmax"] = state.state2.absmax.contiguous()
            tensors[f"{name}.nested_quant_map"] = state.state2.code.contiguous()
        else:
            tensors[f"{name}.absmax"] = state.absmax.contiguous()
        tensors[f"{name}.quant_map"] = state.code.contiguous()
        # The format's dequantization as bitsandbytes' CUDA kernel and its default backend
        # compute it (code[q] × absmax of the element's block). Its native CPU kernel blocks
        # each row on its own, which differs when a row is not a multiple of the blocksize
        # (80 or 13 columns here), so it is not the reference.
        absmax = state.absmax
        if nested:
            absmax = F.dequantize_blockwise(state.absmax, state.state2) + state.offset
        tensors[f"{name}.dequantized"] = _dequantize_4bit_compute(
            packed.reshape(-1), absmax, state.code, 64, w.shape, torch.float32
        ).contiguous()
    # The signed dynamic map the nested statistics use, before the CPU kernel sets its first
    # entry to -1 (tests/ops compare both).
    tensors["dynamic_map"] = F.create_dynamic_map(signed=True)
    save_file(tensors, f"{out_dir}/bnb4.safetensors")
    print("wrote", f"{out_dir}/bnb4.safetensors", len(tensors), "tensors")
    save_quantized_model(out_dir, "qwen3_nf4_nested", "nf4", True)
    save_quantized_model(out_dir, "qwen3_fp4", "fp4", False)


def save_quantized_model(out_dir, name, quant_type, nested):
    config = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=quant_type,
        bnb_4bit_use_double_quant=nested,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    model = AutoModelForCausalLM.from_pretrained(
        "tests/fixtures/models/qwen3", quantization_config=config, device_map="cpu"
    )
    model.save_pretrained(f"{out_dir}/{name}")
    os.remove(f"{out_dir}/{name}/generation_config.json")  # not read by the tests
    reference = {}
    for module_name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        state = getattr(weight, "quant_state", None)
        if state is None:
            continue
        absmax = state.absmax
        if state.nested:
            absmax = F.dequantize_blockwise(state.absmax, state.state2) + state.offset
        reference[f"{module_name}.weight"] = _dequantize_4bit_compute(
            weight.data.reshape(-1), absmax, state.code, state.blocksize, state.shape, torch.float32
        ).contiguous()
    save_file(reference, f"{out_dir}/{name}/reference.safetensors")
    print("wrote", f"{out_dir}/{name}", len(reference), "4-bit weights")


if __name__ == "__main__":
    main()
