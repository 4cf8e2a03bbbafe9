#!/usr/bin/env python3
"""Goldens for sft.cpp's chat templates, rendered by transformers' own apply_chat_template.

Templates: every tokenizer in ../shared/assets/tokenizers that has one, plus the family
templates committed in tests/fixtures/chat_templates/*.jinja (rendered with the Llama 2
tokenizer's special tokens: <s>, </s>, <unk>). Conversations × flag variants below; where
Python raises, the golden records the exception class and message.
For templates with {% generation %}, the spans come from transformers' render_jinja_template
(return_assistant_tokens_mask=True), in characters of the rendered text.

  ~/.venv-sft/bin/python tools/make_chat_template_goldens.py
writes tests/fixtures/chat_templates/goldens.json.
"""
import json
import os
import sys

from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "assets", "tokenizers")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "chat_templates")

WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                               "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
TIME_TOOL = {"type": "function", "function": {"name": "get_time", "description": "Current time in a zone",
             "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}


def u(c):
    return {"role": "user", "content": c}


def a(c, **kw):
    return {"role": "assistant", "content": c, **kw}


def s(c):
    return {"role": "system", "content": c}


def call(name, args, as_string=False):
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}


CONVERSATIONS = {
    "single_user": [u("Hello!")],
    "user_assistant": [u("Hi"), a("Hello, how can I help?")],
    "system_user_assistant": [s("You are terse."), u("What is 2+2?"), a("4")],
    "multi_turn_system": [s("Be helpful."), u("Name a color."), a("Blue."), u("Another?"), a("Green."), u("One more"), a("Red.")],
    "multi_turn_no_system": [u("Q1"), a("A1"), u("Q2"), a("A2")],
    "non_ascii": [s("Répondez en français."), u("日本語で答えて 🙂 — ¿qué tal?"), a("Très bien ! 元気です。😀")],
    "empty_assistant": [u("Say nothing"), a("")],
    "empty_user": [u(""), a("You sent an empty message.")],
    "tool_call_object": [s("Use tools."), u("Weather in Paris?"),
                         a("", tool_calls=[call("get_weather", {"city": "Paris", "unit": "c"})]),
                         {"role": "tool", "content": "{\"temp\": 21}", "name": "get_weather"},
                         a("It is 21°C in Paris.")],
    "tool_call_string_args": [u("Time in Tokyo?"),
                              a(None, tool_calls=[call("get_time", {"zone": "Asia/Tokyo"}, as_string=True)]),
                              {"role": "tool", "content": "09:00"}, a("It is 9 am.")],
    "two_tool_calls": [u("Weather and time in Oslo?"),
                       a("Checking both.", tool_calls=[call("get_weather", {"city": "Oslo"}), call("get_time", {"zone": "Europe/Oslo"})]),
                       {"role": "tool", "content": "-3"}, {"role": "tool", "content": "14:02"},
                       a("-3 degrees, 14:02.")],
    "reasoning_content": [u("Is 17 prime?"), a("Yes, 17 is prime.", reasoning_content="Check divisors 2,3: none.")],
    "think_in_content": [u("Is 9 prime?"), a("<think>\n9 = 3*3\n</think>\n\nNo, 9 = 3 × 3.")],
    "thinking_field": [u("1+1?"), a("2", thinking="trivial addition")],
    "reasoning_multi_turn": [u("First?"), a("One.", reasoning_content="r1"), u("Second?"), a("Two.", reasoning_content="r2")],
    "list_parts": [u([{"type": "text", "text": "Describe this image."}, {"type": "image"}]), a([{"type": "text", "text": "A cat."}])],
    "list_parts_system": [{"role": "system", "content": [{"type": "text", "text": "You see images."}]}, u([{"type": "text", "text": "Hi there"}])],
    "whitespace": [s("  spaced system  \n"), u("\n  leading and trailing  \n"), a("  answer with spaces \n\n")],
    "tricky_text": [u("Print {{ x }} and {% raw %} and \\n and 'quotes' \"dq\""), a("Sure: {{ x }} 'q' \"dq\" \\ backslash")],
    "long_10_turns": [s("sys")] + [m for i in range(5) for m in (u(f"question {i}"), a(f"answer {i}"))],
    "consecutive_users": [u("one"), u("two"), a("three")],
    "system_only": [s("Only a system prompt.")],
    "ends_with_user_after_tools": [u("Weather?"), a("", tool_calls=[call("get_weather", {"city": "Rome"})]),
                                   {"role": "tool", "content": "sunny"}, a("Sunny."), u("Thanks!")],
    "assistant_first": [a("I speak first."), u("ok")],
}

TOOLS_FOR = {"tool_call_object": [WEATHER_TOOL], "tool_call_string_args": [TIME_TOOL],
             "two_tool_calls": [WEATHER_TOOL, TIME_TOOL], "ends_with_user_after_tools": [WEATHER_TOOL]}


def cases():
    out = []
    for name, messages in CONVERSATIONS.items():
        tools = TOOLS_FOR.get(name)
        out.append({"id": f"{name}", "messages": messages, "tools": tools})
        out.append({"id": f"{name}+agp", "messages": messages, "tools": tools, "add_generation_prompt": True})
        if messages[-1]["role"] == "assistant" and isinstance(messages[-1].get("content"), str) and messages[-1]["content"]:
            out.append({"id": f"{name}+continue", "messages": messages, "tools": tools, "continue_final_message": True})
        if name in ("single_user", "reasoning_content", "think_in_content", "multi_turn_no_system"):
            for flag in (True, False):
                out.append({"id": f"{name}+agp+thinking_{flag}", "messages": messages, "tools": tools,
                            "add_generation_prompt": True, "kwargs": {"enable_thinking": flag}})
    out.append({"id": "single_user+tools_unused", "messages": CONVERSATIONS["single_user"], "tools": [WEATHER_TOOL, TIME_TOOL],
                "add_generation_prompt": True})
    out.append({"id": "empty_conversation", "messages": []})
    return out


def error_of(e):
    return {"class": type(e).__name__, "message": str(e)}


def main():
    templates = []
    for name in sorted(os.listdir(SHARED)) if os.path.isdir(SHARED) else []:
        tok = AutoTokenizer.from_pretrained(os.path.join(SHARED, name))
        if tok.chat_template is None:
            continue
        templates.append({"name": name, "shared": name, "tok": tok, "source": tok.chat_template})
    base = AutoTokenizer.from_pretrained(os.path.join(SHARED, "llama2"))
    for fname in sorted(os.listdir(FIXTURES)):
        if fname.endswith(".jinja"):
            with open(os.path.join(FIXTURES, fname), encoding="utf-8") as f:
                src = f.read()
            templates.append({"name": fname[:-6], "fixture": fname, "tok": base, "source": src})

    all_cases = cases()
    out = {"cases": all_cases, "templates": []}
    for t in templates:
        tok = t["tok"]
        special = {k: v for k, v in tok.special_tokens_map.items() if k in ("bos_token", "eos_token", "pad_token", "unk_token")}
        entry = {"name": t["name"], "special_tokens": special, "results": []}
        if "shared" in t:
            entry["shared"] = t["shared"]
        else:
            entry["fixture"] = t["fixture"]
        for c in all_cases:
            kwargs = dict(c.get("kwargs", {}))
            r = {"id": c["id"]}
            try:
                r["text"] = tok.apply_chat_template(
                    c["messages"], tools=c.get("tools"), tokenize=False, chat_template=t["source"],
                    add_generation_prompt=c.get("add_generation_prompt", False),
                    continue_final_message=c.get("continue_final_message", False), **kwargs)
            except Exception as e:  # noqa: BLE001 - the golden records what Python raises
                r["error"] = error_of(e)
            if "{% generation" in t["source"] or "{%- generation" in t["source"]:
                if "text" in r and not c.get("continue_final_message"):
                    rendered, spans = render_jinja_template(
                        [c["messages"]], tools=c.get("tools"), chat_template=t["source"],
                        return_assistant_tokens_mask=True,
                        add_generation_prompt=c.get("add_generation_prompt", False),
                        **{**tok.special_tokens_map, **kwargs})
                    assert rendered[0] == r["text"]
                    r["generation_spans"] = [list(x) for x in spans[0]]
            entry["results"].append(r)
        out["templates"].append(entry)
        n_ok = sum("text" in r for r in entry["results"])
        print(f"{t['name']}: {n_ok} rendered, {len(entry['results']) - n_ok} raised", file=sys.stderr)
    # The CLI end-to-end test: one conversation and transformers' rendering with chatml.jinja.
    chatml = next(t for t in templates if t["name"] == "chatml")
    cli_messages = CONVERSATIONS["non_ascii"]
    with open(os.path.join(FIXTURES, "cli_messages.json"), "w", encoding="utf-8") as f:
        json.dump(cli_messages, f, ensure_ascii=False)
    with open(os.path.join(FIXTURES, "cli_expected_chatml.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(chatml["tok"].apply_chat_template(cli_messages, tokenize=False, chat_template=chatml["source"],
                                                  add_generation_prompt=True))
    path = os.path.join(FIXTURES, "goldens.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(out['templates'])} templates x {len(all_cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
