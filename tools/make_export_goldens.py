#!/usr/bin/env python3
"""Goldens for the HF export's JSON files: what TRL's SFTTrainer + transformers' save_pretrained
write for --eos_token / --pad_token.

Source (written to tests/fixtures/export/source/): the qwen3 fixture's config.json with
vocab_size 702 (the tiny_qwen tokenizer's) and eos_token_id 0, its generation_config.json with
eos_token_id 0, and two tokenizer_config.json variants for tests/fixtures/tokenizers/tiny_qwen:
  with_pad.json     eos "<|endoftext|>" (0), pad "<|endoftext|>" (0)
  without_pad.json  eos "<|endoftext|>" (0), no pad token

For each case, the steps of TRL 1.16's SFTTrainer.__init__ (sft_trainer.py: `if args.eos_token
is not None:` and the pad token of the default collator) run on a transformers model built
from that config, then model.save_pretrained writes the goldens
tests/fixtures/export/<case>/{config.json, generation_config.json} (config.json with
transformers' Trainer's use_cache = TrainingArguments.use_cache, False):
  eos_im_end         with_pad,    --eos_token "<|im_end|>"
  eos_im_end_no_pad  without_pad, --eos_token "<|im_end|>"   (pad falls back to the new eos)
  no_eos             with_pad,    no --eos_token
  eos_no_gen_config  with_pad,    --eos_token "<|im_end|>", the source without
                     generation_config.json (transformers derives it from config.json on load)

Run: ~/.venv-sft/bin/python tools/make_export_goldens.py
"""

import json
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig
from trl import SFTConfig

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/export"
TOKENIZER = ROOT / "tests/fixtures/tokenizers/tiny_qwen/tokenizer.json"

TOKENIZER_CONFIGS = {
    "with_pad": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                 "model_max_length": 512, "tokenizer_class": "Qwen2Tokenizer"},
    # No tokenizer_class: Qwen2Tokenizer would default pad_token to "<|endoftext|>".
    "without_pad": {"eos_token": "<|endoftext|>", "model_max_length": 512},
}
CASES = [("eos_im_end", "with_pad", "<|im_end|>", True),
         ("eos_im_end_no_pad", "without_pad", "<|im_end|>", True),
         ("no_eos", "with_pad", None, True),
         ("eos_no_gen_config", "with_pad", "<|im_end|>", False)]


def write_source():
    src = OUT / "source"
    src.mkdir(parents=True, exist_ok=True)
    config = json.loads((ROOT / "tests/fixtures/models/qwen3/config.json").read_text())
    config["vocab_size"] = 702
    config["eos_token_id"] = 0
    (src / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    gen = json.loads((ROOT / "tests/fixtures/models/qwen3/generation_config.json").read_text())
    gen["eos_token_id"] = 0
    (src / "generation_config.json").write_text(json.dumps(gen, indent=2, sort_keys=True) + "\n")
    for name, tc in TOKENIZER_CONFIGS.items():
        (src / f"{name}.json").write_text(json.dumps(tc, indent=2, sort_keys=True) + "\n")
    return src


def run_case(src, case, tokenizer_config, eos_token, with_generation_config, work):
    tok_dir = work / f"tok_{case}"
    tok_dir.mkdir()
    shutil.copy(TOKENIZER, tok_dir / "tokenizer.json")
    shutil.copy(src / f"{tokenizer_config}.json", tok_dir / "tokenizer_config.json")
    tok = AutoTokenizer.from_pretrained(tok_dir)

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src), dtype=torch.float32)
    # Without a file, the model keeps what transformers derived from config.json at init.
    if with_generation_config:
        model.generation_config = GenerationConfig.from_pretrained(src)

    # TRL 1.16 SFTTrainer.__init__, eos_token then the default collator's pad token.
    if eos_token is not None:
        assert eos_token in tok.get_vocab()
        tok.eos_token = eos_token
        model.config.get_text_config().eos_token_id = tok.eos_token_id
        ids = model.generation_config.eos_token_id
        ids = [] if ids is None else ([ids] if isinstance(ids, int) else ids)
        if tok.eos_token_id not in ids:
            model.generation_config.eos_token_id = [tok.eos_token_id, *ids]
    pad_token = tok.pad_token or tok.eos_token
    tok.pad_token = pad_token
    model.config.get_text_config().pad_token_id = tok.pad_token_id
    model.generation_config.pad_token_id = tok.pad_token_id

    # transformers 5.24 Trainer.__init__, "11. Finalize": the config takes TrainingArguments'
    # use_cache (False by default), so the saved config.json has use_cache false.
    model.config.use_cache = SFTConfig(output_dir=str(work / "trl_out"), bf16=False).use_cache

    saved = work / case
    model.save_pretrained(saved)
    dest = OUT / case
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "generation_config.json"):
        shutil.copy(saved / name, dest / name)
    print(f"{case}: eos {tok.eos_token_id}, pad {tok.pad_token_id}")


def main():
    src = write_source()
    with tempfile.TemporaryDirectory() as tmp:
        for case, tokenizer_config, eos, with_generation_config in CASES:
            run_case(src, case, tokenizer_config, eos, with_generation_config, Path(tmp))


if __name__ == "__main__":
    main()
