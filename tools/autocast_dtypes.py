#!/usr/bin/env python3
"""Which dtype each module of a model reads and returns under CPU bf16 autocast (TRL's --bf16).

  ~/.venv-sft/bin/python tools/autocast_dtypes.py MODEL_DIR [--layers N]

Runs one short sequence through the fp32 model under torch.autocast("cpu", dtype=torch.bfloat16)
with a forward hook on every module of the first N decoder layers (default 1) and the modules
outside the layers, and prints "module  in [dtypes]  out dtype" in call order. Where a module
returns bf16 autocast has rounded its output; where it reads bf16 and returns it (a norm of a
projection's output) the module itself rounds. sft's bf16 path rounds at those points where it
matters (docs/architecture.md, "Numerics"; LayerPlan::qk_norm_output_rounded was found this way).
"""
import argparse
import re

import torch
from transformers import AutoConfig, AutoModelForCausalLM
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--layers", type=int, default=1)
    args = ap.parse_args()
    arch = (AutoConfig.from_pretrained(args.model).architectures or [None])[0]
    cls = (getattr(transformers, arch, None) if arch else None) or AutoModelForCausalLM
    model = cls.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager").eval()

    def hook(name):
        def show(module, inputs, output):
            ins = [str(t.dtype).replace("torch.", "") for t in inputs if torch.is_tensor(t)]
            out = output[0] if isinstance(output, tuple) else output
            kind = str(out.dtype).replace("torch.", "") if torch.is_tensor(out) else type(out).__name__
            print(f"{name or '(model)':50s} in {ins}  out {kind}")
        return show

    for name, module in model.named_modules():
        m = re.search(r"layers\.(\d+)", name)
        if m and int(m.group(1)) >= args.layers:
            continue
        module.register_forward_hook(hook(name))
    vocab = model.config.get_text_config().vocab_size
    ids = torch.arange(3, 3 + 8)[None] % vocab
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=ids)


if __name__ == "__main__":
    main()
