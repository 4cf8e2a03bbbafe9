#!/usr/bin/env python3
"""A tiny Qwen3 model with a real tokenizer and chat template, and transformers' greedy outputs.

Writes tests/fixtures/generate_text/:
  model files (save_pretrained, float32, vocab = the tiny_qwen fixture tokenizer's 702 ids),
  tokenizer.json (tests/fixtures/tokenizers/tiny_qwen), tokenizer_config.json (ChatML template
  from tests/fixtures/chat_templates/chatml.jinja, eos <|im_end|>), messages.json, and
  expected.json: for a plain prompt and for a conversation, the prompt ids transformers feeds
  to generate(), the greedy new ids (max_new_tokens 24), and their decode with
  skip_special_tokens=True — what `sft generate --prompt/--messages` must print.

Run: ~/.venv-sft/bin/python tools/make_generate_text_fixture.py
"""

import json
import shutil
from pathlib import Path

import torch
from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "generate_text"
PROMPT = "Hello world, the answer is"
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2 + 3?"}]
MAX_NEW = 24


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    shutil.copy(REPO / "tests/fixtures/tokenizers/tiny_qwen/tokenizer.json", OUT / "tokenizer.json")
    template = (REPO / "tests/fixtures/chat_templates/chatml.jinja").read_text()
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "bos_token": None, "chat_template": template, "model_max_length": 256}
    (OUT / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (OUT / "messages.json").write_text(json.dumps(MESSAGES, indent=2) + "\n")
    tokenizer = AutoTokenizer.from_pretrained(OUT)

    torch.manual_seed(7)
    model = Qwen3ForCausalLM(Qwen3Config(
        vocab_size=702, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=2, pad_token_id=0)).eval()
    with torch.no_grad():  # larger weights than HF's 0.02 init, so greedy output varies instead of repeating
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(6.0)
    model.generation_config = GenerationConfig(do_sample=False, eos_token_id=2, pad_token_id=0, bos_token_id=None)
    model.save_pretrained(OUT)

    expected = {}
    cases = {
        "prompt": tokenizer(PROMPT)["input_ids"],
        "messages": tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True,
                                                  return_dict=True)["input_ids"],
    }
    for name, ids in cases.items():
        out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW, do_sample=False)[0, len(ids):].tolist()
        expected[name] = {"prompt_ids": ids, "new_ids": out,
                          "text": tokenizer.decode(out, skip_special_tokens=True)}
    expected["prompt"]["prompt"] = PROMPT
    expected["max_new_tokens"] = MAX_NEW
    (OUT / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(expected, ensure_ascii=False)[:600])


if __name__ == "__main__":
    main()
