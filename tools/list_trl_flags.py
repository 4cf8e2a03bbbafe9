#!/usr/bin/env python3
"""Writes tests/fixtures/trl/trl_sft_flags.txt: every field `trl sft` parses, from TRL itself.

`trl sft` builds its parser from (ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig)
(trl/scripts/sft.py); SFTConfig extends transformers' TrainingArguments, so this lists all of those
fields. One line per field: `name<TAB>type<TAB>default<TAB>class`, sorted by name, with a header
naming the versions. tests/train/args_trl_flags_test.cpp parses every name with a sample value and
checks it is implemented, noticed or refused per the table in train/args_trl_flags.cpp, so a TRL
upgrade shows its new fields as a test failure.

Usage: ~/.venv-sft/bin/python tools/list_trl_flags.py [OUT]
"""
import dataclasses
import pathlib
import sys

import transformers
import trl
from trl import DatasetMixtureConfig, ModelConfig, ScriptArguments, SFTConfig


def type_name(t):
    if isinstance(t, type):
        return t.__name__
    return str(t).replace("typing.", "").replace(" ", "")


def default_text(f):
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "<required>"
    text = repr(value)
    return text.replace("\t", " ").replace("\n", " ")


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       pathlib.Path(__file__).resolve().parent.parent /
                       "tests/fixtures/trl/trl_sft_flags.txt")
    rows = {}
    for cls in (ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig):
        for f in dataclasses.fields(cls):
            # HfArgumentParser skips fields with init=False; so does `trl sft`.
            if not f.init:
                continue
            rows.setdefault(f.name, (type_name(f.type), default_text(f), cls.__name__))
    lines = [
        f"# trl {trl.__version__}, transformers {transformers.__version__}: the fields `trl sft` parses",
        "# name\ttype\tdefault\tclass (written by tools/list_trl_flags.py; do not edit)",
    ]
    for name in sorted(rows):
        t, d, c = rows[name]
        lines.append(f"{name}\t{t}\t{d}\t{c}")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(rows)} fields to {out}")


if __name__ == "__main__":
    main()
