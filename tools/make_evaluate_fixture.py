#!/usr/bin/env python3
"""A tiny quickstart-task model and transformers' greedy answers, for `sft evaluate`'s CLI test.

Trains a smaller model than the quickstart's (so the files stay small and the score lands
between 0 and 1, exercising matches and mismatches) with tools/quickstart_reference.py on the
quickstart data, and writes tests/fixtures/evaluate/:
  model files (save_pretrained, float32), tokenizer files, generation_config.json,
  test.jsonl       the first ROWS rows of examples/quickstart/data/test.jsonl
  expected.json    per row the greedy answer transformers generates (apply_chat_template with
                   add_generation_prompt, greedy, eos <|im_end|>, decoded without special
                   tokens, stripped), the reference, and the exact-match count

Run: ~/.venv-sft/bin/python tools/make_evaluate_fixture.py
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "evaluate"
ROWS = 60
MAX_NEW = 8
OVERRIDES = [
    "hidden_size=64", "intermediate_size=192", "num_hidden_layers=2", "num_attention_heads=4",
    "num_key_value_heads=2", "head_dim=16", "num_train_epochs=1", "per_device_train_batch_size=16",
    "learning_rate=2.0e-3",
]


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    cmd = [sys.executable, str(REPO / "tools" / "quickstart_reference.py"), "--threads", "1", "--save", str(OUT), "--limit", str(ROWS)]
    for o in OVERRIDES:
        cmd += ["--override", o]
    subprocess.run(cmd, check=True)

    rows = (REPO / "examples/quickstart/data/test.jsonl").read_text().splitlines()[:ROWS]
    (OUT / "test.jsonl").write_text("".join(r + "\n" for r in rows))
    tokenizer = AutoTokenizer.from_pretrained(OUT)
    model = AutoModelForCausalLM.from_pretrained(OUT, dtype=torch.float32).eval()
    eos = model.generation_config.eos_token_id
    answers, correct = [], 0
    with torch.no_grad():
        for line in rows:
            messages = json.loads(line)["messages"]
            ids = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True, tokenize=True,
                                                return_dict=True)["input_ids"]
            out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW, do_sample=False, eos_token_id=eos)
            got = tokenizer.decode(out[0, len(ids):], skip_special_tokens=True).strip()
            want = messages[-1]["content"].strip()
            correct += got == want
            answers.append({"question": messages[-2]["content"], "want": want, "got": got})
    expected = {"rows": ROWS, "max_new_tokens": MAX_NEW, "correct": correct, "answers": answers}
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"exact match {correct}/{ROWS}; files:", sorted(p.name for p in OUT.iterdir()))


if __name__ == "__main__":
    main()
