#!/usr/bin/env python3
"""Goldens for sft.cpp's token-level assistant masks, from transformers' own
apply_chat_template(..., tokenize=True, return_dict=True, return_assistant_tokens_mask=True).

Template: tests/fixtures/chat_templates/chatml_generation.jinja ({% generation %} blocks).
Tokenizers: tiny fixtures (run without ../shared) and real ones from ../shared/assets/tokenizers
when present, each loaded from its tokenizer.json alone (PreTrainedTokenizerFast), so no
model-specific tokenizer class rewrites the pipeline. Conversations: those of
tools/make_chat_template_goldens.py that the template renders, with and without a generation
prompt. Per case: input_ids and the 0/1 assistant mask as a string.

  ~/.venv-sft/bin/python tools/make_chat_mask_goldens.py
writes tests/fixtures/chat_masks/goldens.json.
"""
import json
import os
import sys

from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_chat_template_goldens import CONVERSATIONS, TOOLS_FOR  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "assets", "tokenizers")
TEMPLATE = "chatml_generation.jinja"
TINY = ["tiny_qwen", "tiny_llama2", "tiny_metaspace"]
REAL = ["qwen3", "llama3_1"]


def main():
    with open(os.path.join(ROOT, "tests", "fixtures", "chat_templates", TEMPLATE), encoding="utf-8") as f:
        template = f.read()
    paths = {n: os.path.join(ROOT, "tests", "fixtures", "tokenizers", n, "tokenizer.json") for n in TINY}
    for n in REAL:
        p = os.path.join(SHARED, n, "tokenizer.json")
        if os.path.exists(p):
            paths[n] = p
    cases = []
    for name, messages in CONVERSATIONS.items():
        for agp in (False, True):
            cases.append({"id": name + ("+agp" if agp else ""), "messages": messages,
                          "tools": TOOLS_FOR.get(name), "add_generation_prompt": agp})
    out = {"template": TEMPLATE, "tokenizers": {}, "cases": []}
    for c in cases:
        out["cases"].append({k: v for k, v in c.items() if v is not None})
    for tname, path in paths.items():
        tok = PreTrainedTokenizerFast(tokenizer_file=path)
        raw = Tokenizer.from_file(path)
        results = []
        for c in cases:
            try:
                r = tok.apply_chat_template(c["messages"], tools=c["tools"], chat_template=template, tokenize=True,
                                            return_dict=True, return_assistant_tokens_mask=True,
                                            add_generation_prompt=c["add_generation_prompt"])
                text = tok.apply_chat_template(c["messages"], tools=c["tools"], chat_template=template,
                                               tokenize=False, add_generation_prompt=c["add_generation_prompt"])
            except Exception as e:  # noqa: BLE001 - cases the template cannot render are left out
                results.append({"id": c["id"], "error": type(e).__name__})
                continue
            ids = list(r["input_ids"])
            assert ids == raw.encode(text, add_special_tokens=False).ids, (tname, c["id"])
            mask = "".join(str(m) for m in r["assistant_masks"])
            results.append({"id": c["id"], "input_ids": ids, "assistant_masks": mask})
        out["tokenizers"][tname] = {"shared": tname in REAL, "results": results}
        ok = sum("input_ids" in r for r in results)
        print(f"{tname}: {ok} cases, {len(results) - ok} not rendered", file=sys.stderr)
    path = os.path.join(ROOT, "tests", "fixtures", "chat_masks", "goldens.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
