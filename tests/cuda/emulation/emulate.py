#!/usr/bin/env python3
"""Rewrites a src/ops/cuda/*.cu file into plain C++ for the emulated run (see cuda_runtime.h):
every launch `kernel<<<grid, block>>>(args);` becomes `::emu::launch(grid, block, sync,
[&] { kernel(args); });`, where sync says whether that kernel's body synchronizes its block
(__syncthreads, or block_sum, which does). Usage: emulate.py IN.cu OUT.cpp"""
import re
import sys


def matching(text, open_at, open_ch, close_ch):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
    raise SystemExit(f"unbalanced {open_ch} at {open_at}")


def syncing_kernels(text):
    names = set()
    for m in re.finditer(r"__global__\s+void\s+(\w+)\s*\(", text):
        body_open = text.index("{", m.end())
        body = text[body_open:matching(text, body_open, "{", "}") + 1]
        if "__syncthreads" in body or "block_sum(" in body:
            names.add(m.group(1))
    return names


def main():
    source, target = sys.argv[1], sys.argv[2]
    text = open(source).read()
    sync = syncing_kernels(text)
    out, at = [], 0
    while True:
        launch = text.find("<<<", at)
        if launch < 0:
            break
        start = launch
        while start > 0 and re.match(r"[\w:<>]", text[start - 1]):
            start -= 1
        kernel = text[start:launch]
        config_end = text.index(">>>", launch)
        config = text[launch + 3:config_end]
        args_open = text.index("(", config_end)
        args_close = matching(text, args_open, "(", ")")
        args = text[args_open + 1:args_close]
        name = re.sub(r"<.*", "", kernel.split("::")[-1])
        flag = "true" if name in sync else "false"
        out.append(text[at:start])
        out.append(f"::emu::launch({config}, {flag}, [&] {{ {kernel}({args}); }})")
        at = args_close + 1
    out.append(text[at:])
    open(target, "w").write("".join(out))


if __name__ == "__main__":
    main()
