#!/usr/bin/env python3
"""Goldens for src/data/encode.cpp: the input_ids and labels TRL 1.16's SFTTrainer prepares.

For every case a real trl.SFTTrainer is built (tiny model fixture, real tokenizer from
../shared/assets/tokenizers, SFTConfig with packing=False and max_length=None so rows are
neither truncated nor packed) on a datasets.Dataset of the case's rows; the rows of
trainer.train_dataset are the goldens. Writes tests/fixtures/sft_encode/goldens.json.

Rows are built so that Arrow's struct unification (datasets fills keys missing from a
struct with None) does not change what the template sees: tools are JSON strings (TRL
json.loads them) and tool call arguments are strings, except in the key-order case, whose
rows all share one tools list and one set of argument keys. Keys keep their order (schemas
list "type" before "function", arguments "unit" before "city"): a template that prints them
with tojson shows the file's order, which the C++ row reader must keep too.

Usage: ~/.venv-sft/bin/python tools/make_sft_encode_goldens.py
"""

import json
import os
import tempfile

import datasets
import torch
import transformers
import trl
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer
from trl.data_utils import _tokenize, common_prefix_length, is_conversational

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(os.path.dirname(ROOT), "shared", "assets", "tokenizers")
MODEL = os.path.join(ROOT, "tests", "fixtures", "models", "qwen3")
GEN_TEMPLATE = "tests/fixtures/chat_templates/chatml_generation.jinja"
OUT = os.path.join(ROOT, "tests", "fixtures", "sft_encode", "goldens.json")

TOOLS = json.dumps(
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
)

# Key order that is not alphabetical at every level; the same for every row, so Arrow's
# struct unification adds no keys.
ORDERED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "unit": {"type": "string", "description": "celsius or fahrenheit"},
                    "city": {"type": "string", "description": "the city"},
                },
                "required": ["unit", "city"],
            },
        },
    }
]

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " leading space and trailing space ",
    "line one\nline two\n\nline four",
    "Unicode: café, naïve, 日本語, emoji 🎉",
    "numbers 1234567890 and symbols !@#$%^&*()",
    "tabs\tand\r\nwindows newlines",
    "   ",
    "a" * 40,
    "Code: def f(x):\n    return x * 2\n",
    "mixed CASE Words And-Hyphens_underscores",
]


def user(c):
    return {"role": "user", "content": c}


def assistant(c):
    return {"role": "assistant", "content": c}


def system(c):
    return {"role": "system", "content": c}


CONVERSATIONS = [
    [user("Hi"), assistant("Hello! How can I help?")],
    [system("You are terse."), user("2+2?"), assistant("4")],
    [user("Tell me a joke"), assistant("Why did the chicken cross the road?"),
     user("Why?"), assistant("To get to the other side.")],
    [user("Unicode: café 日本語"), assistant("Ça va 🎉")],
    [user("multi\nline\nquestion"), assistant("multi\nline\nanswer\n")],
    [system("sys"), user("a"), assistant("b"), user("c"), assistant("d"), user("e"), assistant("f")],
    [user("  spaces  "), assistant("  reply with spaces  ")],
    [user("Empty answer"), assistant("")],
    [user("Think first"), {"role": "assistant", "content": "Done.", "reasoning_content": "Let me think."}],
]

TOOL_CONVERSATIONS = [
    [user("Weather in Paris?"),
     {"role": "assistant", "content": "",
      "tool_calls": [{"type": "function",
                      "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
     {"role": "tool", "content": "sunny, 21C"},
     assistant("It is sunny and 21C in Paris.")],
    [system("Use tools."), user("Weather in Oslo?"),
     {"role": "assistant", "content": "",
      "tool_calls": [{"type": "function",
                      "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
     {"role": "tool", "content": "snow"},
     assistant("Snow in Oslo.")],
]

PROMPT_COMPLETIONS = [
    ("The capital of France is", " Paris."),
    ("2 + 2 =", " 4"),
    ("Translate to French: cat ->", " chat"),
    ("Once upon a time", ", there was a fox."),
    ("Unicode prompt café", " 日本語 🎉"),
    ("No space at boundary", "joined"),
    ("Question: why?\nAnswer:", " because.\n"),
    ("Ends with newline\n", "Next line"),
    ("Already ends with eos", " done"),
    ("", "empty prompt"),
    ("The answer is ", "the end"),  # " the" is one token: the prompt is not a prefix
    ("Split in the mid", "dle of a word"),
]

PC_MESSAGES = [
    ([user("Hi")], [assistant("Hello!")]),
    ([system("Be brief."), user("Capital of Italy?")], [assistant("Rome.")]),
    ([user("Joke?"), assistant("Knock knock."), user("Who's there?")], [assistant("Boo.")]),
    ([user("Unicode café")], [assistant("日本語 🎉")]),
    ([user("multi\nline")], [assistant("answer\n\n")]),
    ([user("Count")], [assistant("1 2 3")]),
]


def text_rows(eos, leading_space=True):
    rows = [{"text": t} for t in TEXTS if leading_space or not t[:1].isspace()]
    rows.append({"text": "already has eos" + eos})
    return rows


def messages_rows(tools):
    rows = [{"messages": m} for m in CONVERSATIONS]
    if tools:
        rows = [{"messages": m, "tools": None} for m in CONVERSATIONS]
        rows += [{"messages": m, "tools": TOOLS} for m in TOOL_CONVERSATIONS]
    return rows


def key_order_rows():
    def call(unit, city):
        return {"role": "assistant", "content": "",
                "tool_calls": [{"type": "function",
                                "function": {"name": "get_weather",
                                             "arguments": {"unit": unit, "city": city}}}]}

    convs = [
        [user("Weather in Paris?"), call("celsius", "Paris"), {"role": "tool", "content": "21C"},
         assistant("21C in Paris.")],
        [system("Use tools."), user("Weather in Austin?"), call("fahrenheit", "Austin"),
         {"role": "tool", "content": "90F"}, assistant("90F.")],
    ]
    return [{"messages": m, "tools": ORDERED_TOOLS} for m in convs]


def sharegpt_rows():
    def conv(m):
        return [{"from": x["role"], "value": x["content"]} for x in m]

    return [{"conversations": conv(m)} for m in CONVERSATIONS]


def pc_rows(eos):
    rows = [{"prompt": p, "completion": c} for p, c in PROMPT_COMPLETIONS]
    rows.append({"prompt": "completion already has eos", "completion": " yes" + eos})
    return rows


def pc_message_rows():
    return [{"prompt": p, "completion": c} for p, c in PC_MESSAGES]


def kwargs_rows():
    return [{"messages": m, "chat_template_kwargs": {"enable_thinking": False}}
            for m in CONVERSATIONS[:5]]


def tokenized_rows(with_labels):
    rows = [{"input_ids": [1, 2, 3, 4]}, {"input_ids": [151643]}, {"input_ids": list(range(100, 130))}]
    if with_labels:
        for r in rows:
            r["labels"] = [-100] + r["input_ids"][1:]
    return rows


def bos_rows(bos):
    return [{"text": bos + "Text that brings its own BOS"}, {"text": "No BOS in the text"},
            {"text": bos}]


def run_case(model, tokenizer_name, rows, chat_template=None, **config):
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(ASSETS, tokenizer_name))
    with tempfile.TemporaryDirectory() as tmp:
        args = SFTConfig(
            output_dir=tmp,
            packing=False,
            max_length=None,
            dataset_num_proc=None,
            report_to=[],
            use_cpu=True,
            bf16=False,
            chat_template_path=os.path.join(ROOT, chat_template) if chat_template else None,
            **config,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_list(rows),
                             processing_class=tokenizer)
        prepared = trainer.train_dataset
        out = []
        for r in prepared:
            res = {"input_ids": list(r["input_ids"]), "labels": list(r["labels"])}
            if "prompt" in r:
                res["prompt_not_prefix"] = prompt_not_prefix(trainer, r)
            out.append(res)
        return out


def prompt_not_prefix(trainer, r):
    """TRL's own test in tokenize_fn: the tokenized prompt is not a prefix of prompt+completion."""
    tok = trainer.processing_class
    if is_conversational(r):
        tools = json.loads(r["tools"]) if isinstance(r.get("tools"), str) else r.get("tools")
        kwargs = {"chat_template": trainer.chat_template, "tools": tools,
                  **(r.get("chat_template_kwargs") or {})}
        prompt = _tokenize(tok, r["prompt"], add_generation_prompt=True, **kwargs)["input_ids"]
        full = _tokenize(tok, r["prompt"] + r["completion"], **kwargs)["input_ids"]
    else:
        prompt = _tokenize(tok, r["prompt"])["input_ids"]
        full = _tokenize(tok, r["prompt"] + r["completion"])["input_ids"]
    return common_prefix_length(prompt, full) < len(prompt)


def main():
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(MODEL)
    qwen_eos = AutoTokenizer.from_pretrained(os.path.join(ASSETS, "qwen3")).eos_token
    llama = AutoTokenizer.from_pretrained(os.path.join(ASSETS, "llama3_1"))
    cases = [
        # (name, tokenizer, chat template file, SFTConfig options, rows)
        ("text_qwen3", "qwen3", None, {}, text_rows(qwen_eos)),
        ("text_llama3_1", "llama3_1", None, {}, text_rows(llama.eos_token)),
        ("text_double_bos_llama3_1", "llama3_1", None, {}, bos_rows(llama.bos_token)),
        ("text_eos_override_qwen3", "qwen3", None, {"eos_token": "<|endoftext|>"},
         text_rows("<|endoftext|>")),
        # transformers 5's LlamaTokenizer rebuilds llama 2's pre-tokenizer (no prefix space
        # before a leading space), unlike its tokenizer.json: texts starting with whitespace
        # are left out (a text::Tokenizer matter, not an encoding rule).
        ("text_llama2", "llama2", None, {}, text_rows("</s>", leading_space=False)),
        ("text_double_bos_llama2", "llama2", None, {}, bos_rows("<s>")),
        ("messages_qwen3", "qwen3", None, {}, messages_rows(tools=True)),
        ("messages_llama3_1", "llama3_1", None, {}, messages_rows(tools=False)),
        ("messages_tools_key_order_qwen3", "qwen3", None, {}, key_order_rows()),
        ("messages_assistant_only_qwen3", "qwen3", GEN_TEMPLATE, {"assistant_only_loss": True},
         messages_rows(tools=True)),
        ("messages_assistant_only_llama3_1", "llama3_1", GEN_TEMPLATE,
         {"assistant_only_loss": True}, messages_rows(tools=False)),
        ("messages_eos_override_qwen3", "qwen3", None, {"eos_token": "<|endoftext|>"},
         messages_rows(tools=False)),
        ("messages_kwargs_qwen3", "qwen3", None, {}, kwargs_rows()),
        # zephyr's template ends assistant turns with eos_token: the override must reach it
        ("messages_zephyr_eos_override_llama3_1", "llama3_1",
         "tests/fixtures/chat_templates/zephyr.jinja", {"eos_token": "<|end_of_text|>"},
         messages_rows(tools=False)),
        ("messages_zephyr_llama3_1", "llama3_1", "tests/fixtures/chat_templates/zephyr.jinja", {},
         messages_rows(tools=False)),
        ("sharegpt_qwen3", "qwen3", None, {}, sharegpt_rows()),
        ("prompt_completion_qwen3", "qwen3", None, {}, pc_rows(qwen_eos)),
        ("prompt_completion_full_loss_qwen3", "qwen3", None, {"completion_only_loss": False},
         pc_rows(qwen_eos)),
        ("prompt_completion_llama3_1", "llama3_1", None, {}, pc_rows(llama.eos_token)),
        ("prompt_completion_eos_override_qwen3", "qwen3", None, {"eos_token": "<|endoftext|>"},
         pc_rows("<|endoftext|>")),
        ("prompt_completion_llama2", "llama2", None, {}, pc_rows("</s>")),
        ("text_gemma3", "gemma3", None, {}, text_rows("<end_of_turn>")),
        ("messages_gemma3", "gemma3", None, {}, messages_rows(tools=False)),
        ("prompt_completion_gemma3", "gemma3", None, {}, pc_rows("<end_of_turn>")),
        ("pc_messages_gemma3", "gemma3", None, {}, pc_message_rows()),
        ("text_deepseek_v3", "deepseek_v3", None, {}, text_rows("<｜end▁of▁sentence｜>")),
        ("messages_deepseek_v3", "deepseek_v3", None, {}, messages_rows(tools=False)),
        ("tokenized_qwen3", "qwen3", None, {}, tokenized_rows(with_labels=False)),
        ("tokenized_labels_qwen3", "qwen3", None, {}, tokenized_rows(with_labels=True)),
        ("pc_messages_qwen3", "qwen3", None, {}, pc_message_rows()),
        ("pc_messages_full_loss_qwen3", "qwen3", None, {"completion_only_loss": False},
         pc_message_rows()),
        ("pc_messages_llama3_1", "llama3_1", None, {}, pc_message_rows()),
        ("pc_messages_assistant_only_qwen3", "qwen3", GEN_TEMPLATE,
         {"assistant_only_loss": True}, pc_message_rows()),
        ("pc_messages_assistant_only_full_loss_qwen3", "qwen3", GEN_TEMPLATE,
         {"assistant_only_loss": True, "completion_only_loss": False}, pc_message_rows()),
    ]
    out = {
        "generator": "tools/make_sft_encode_goldens.py",
        "versions": {"trl": trl.__version__, "transformers": transformers.__version__,
                     "datasets": datasets.__version__},
        "cases": [],
    }
    for name, tok, template, config, rows in cases:
        results = run_case(model, tok, rows, template, **config)
        assert len(results) == len(rows), name
        out["cases"].append({
            "name": name,
            "tokenizer": tok,
            "chat_template": template,
            "options": config,
            "rows": [{"row": row, **res} for row, res in zip(rows, results)],
        })
        print(f"{name}: {len(rows)} rows")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
