#!/usr/bin/env python3
"""Check an sft HF export with transformers: it loads, and its logits are sft's.

  check_export.py EXPORT_DIR --logits SFT_LOGITS.safetensors [--tol 1e-5]
  check_export.py EXPORT_DIR --sft build/sft [--tol 1e-5]

SFT_LOGITS.safetensors holds input_ids (I64 [T]) and logits (F32 [T, V]) computed by sft on
the in-memory model that was exported (tests/train/export_test.cpp writes such a file next to
each fixture export: build/tests/output/export_fixture_<name>/). With --sft instead, the
script runs `sft debug forward` on the export itself.

Checks, each printed as OK or FAIL (exit status 1 on any FAIL):
  1. The class config.json's architectures names (as TRL loads a model; AutoModelForCausalLM
     without one) .from_pretrained(EXPORT_DIR, dtype=float32) loads with no missing or
     unexpected weights, and its logits match sft's: max |difference| <= tol * max(1, max
     |logit|) (fp32 sums in another order differ by ~1e-6 relative, so a fixed absolute
     tolerance would depend on the logits' scale).
  2. config.json and generation_config.json equal what transformers' save_pretrained writes
     for the loaded model (same keys and values), i.e. transformers reads and would write the
     same files.
  3. When the folder has a tokenizer: AutoTokenizer loads it, and its eos/pad ids agree with
     config.json / generation_config.json (TRL's --eos_token rule: the eos id is listed).

Run with the reference venv: ~/.venv-sft/bin/python tools/check_export.py ...
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

failures = 0


def report(ok, what):
    global failures
    print(("OK    " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1


def sft_logits(args, export_dir, work):
    if args.logits:
        d = load_file(args.logits)
        return d["input_ids"], d["logits"]
    config = json.loads((export_dir / "config.json").read_text())
    vocab = config.get("text_config", config)["vocab_size"]  # a multimodal config nests it
    ids = [(t * 7919 + 13) % vocab for t in range(16)]
    tokens = work / "tokens.json"
    tokens.write_text(json.dumps({"input_ids": ids}))
    out = work / "logits.safetensors"
    subprocess.run([args.sft, "debug", "forward", "--model", str(export_dir), "--tokens",
                    str(tokens), "--out", str(out)], check=True)
    return torch.tensor(ids, dtype=torch.int64), load_file(str(out))["logits"]


def model_class(export_dir):
    # As TRL's create_model_from_path: the class config.json's architectures names (a multimodal
    # Mistral3ForConditionalGeneration has no AutoModelForCausalLM entry), else the auto class.
    arch = (json.loads((export_dir / "config.json").read_text()).get("architectures") or [None])[0]
    return (getattr(transformers, arch, None) if arch else None) or AutoModelForCausalLM


def check_logits(args, export_dir, work):
    model, info = model_class(export_dir).from_pretrained(export_dir, dtype=torch.float32,
                                                          output_loading_info=True)
    clean = not any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    report(clean, f"transformers loads the weights ({info})")
    ids, ours = sft_logits(args, export_dir, work)
    with torch.no_grad():
        theirs = model(ids.unsqueeze(0)).logits[0].float()
    diff = (theirs - ours).abs().max().item()
    scale = theirs.abs().max().item()
    limit = args.tol * max(1.0, scale)
    report(diff <= limit,
           f"logits: max |transformers - sft| = {diff:.3g} (limit {limit:.3g} = {args.tol} x "
           f"max(1, max |logit| {scale:.3g}), {tuple(ours.shape)})")
    return model


def comparable(d):
    # transformers_version is ours by construction; _name_or_path is never written.
    return {k: v for k, v in d.items() if k not in ("transformers_version",)}


def check_json(model, export_dir, work):
    resaved = work / "resaved"
    model.config.save_pretrained(resaved)
    model.generation_config.save_pretrained(resaved)
    for name in ("config.json", "generation_config.json"):
        ours = json.loads((export_dir / name).read_text())
        theirs = json.loads((resaved / name).read_text())
        # dtype follows the loaded model (float32 here), not the file.
        ours.pop("dtype", None)
        theirs.pop("dtype", None)
        a, b = comparable(ours), comparable(theirs)
        if name == "config.json" and "text_config" in theirs and "use_cache" not in theirs:
            # A multimodal config has no use_cache field: the Trainer's config.use_cache = False
            # is saved at the top (TRL's folder says it, and so does ours), but from_pretrained
            # does not keep it for the re-save.
            a.pop("use_cache", None)
        diffs = sorted(k for k in set(a) | set(b) if a.get(k, "<absent>") != b.get(k, "<absent>"))
        report(not diffs, f"{name} as transformers re-saves it" +
               ("" if not diffs else ": " + "; ".join(
                   f"{k}: ours {a.get(k, '<absent>')!r} theirs {b.get(k, '<absent>')!r}"
                   for k in diffs)))


def check_tokenizer(export_dir):
    if not (export_dir / "tokenizer.json").exists():
        print("-     no tokenizer in the folder")
        return
    tok = AutoTokenizer.from_pretrained(export_dir)
    config = json.loads((export_dir / "config.json").read_text())
    gen = json.loads((export_dir / "generation_config.json").read_text())
    gen_eos = gen.get("eos_token_id")
    gen_eos = gen_eos if isinstance(gen_eos, list) else [gen_eos]
    # A multimodal config keeps the text model's eos in text_config unless the top level sets one.
    eos = config.get("eos_token_id", config.get("text_config", {}).get("eos_token_id"))
    report(eos == tok.eos_token_id and tok.eos_token_id in gen_eos,
           f"eos {tok.eos_token!r} = id {tok.eos_token_id}: config {eos}, "
           f"generation {gen.get('eos_token_id')}")
    if tok.pad_token is not None:
        report(config.get("pad_token_id") == tok.pad_token_id == gen.get("pad_token_id"),
               f"pad {tok.pad_token!r} = id {tok.pad_token_id}: config "
               f"{config.get('pad_token_id')}, generation {gen.get('pad_token_id')}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("export_dir")
    p.add_argument("--logits", help="sft's logits (input_ids, logits) for the exported model")
    p.add_argument("--sft", help="the sft binary: run `sft debug forward` on the export instead")
    p.add_argument("--tol", type=float, default=1e-5)
    args = p.parse_args()
    if not args.logits and not args.sft:
        p.error("give --logits FILE or --sft BINARY")
    export_dir = Path(args.export_dir)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = check_logits(args, export_dir, work)
        check_json(model, export_dir, work)
        check_tokenizer(export_dir)
    print("all checks passed" if failures == 0 else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
