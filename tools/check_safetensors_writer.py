#!/usr/bin/env python3
"""Check safetensors files (e.g. written by sft.cpp) against JSON expectations,
using the reference `safetensors` Python library to read them.

Usage: check_safetensors_writer.py [--strict] DIR

For every DIR/X.safetensors that has a sibling DIR/X.expected.json (same format
as tests/fixtures/safetensors/all_dtypes.json: "metadata" and "tensors", each
tensor with "name", "dtype", "shape", "values"):
  * the file must load with safetensors.safe_open(framework="pt");
  * tensor names, dtypes and shapes must be exactly the expected ones;
  * __metadata__ must equal "metadata" (a missing "metadata" key means none expected);
  * values must be identical: bitwise for floats, except that any NaN matches
    any NaN; -0.0 and 0.0 are different; integers and booleans exactly.
With --strict, an expectation's optional "hex" (raw tensor bytes) and
"header_json" (the header bytes after the length prefix) must match byte for byte.

Every DIR/*.safetensors.index.json (e.g. model.safetensors.index.json) must load:
each weight_map entry must name a shard file in DIR that contains that tensor.

Prints one line per checked file and "N passed, M failed"; exits 1 on any failure
(and 2 on bad usage).
"""

import json
import math
import struct
import sys
from pathlib import Path

import torch
from safetensors import safe_open

FLOAT_DTYPES = {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"}
INT_DTYPES = {"I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8"}

TORCH_DTYPE_NAMES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float8_e4m3fn: "F8_E4M3",
    torch.float8_e5m2: "F8_E5M2",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
for _name, _code in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")):
    if hasattr(torch, _name):
        TORCH_DTYPE_NAMES[getattr(torch, _name)] = _code


class Mismatch(Exception):
    pass


def read_raw_header(path):
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) != 8:
            raise Mismatch("file shorter than 8 bytes")
        (n,) = struct.unpack("<Q", prefix)
        header_bytes = f.read(n)
        if len(header_bytes) != n:
            raise Mismatch(f"header length {n} runs past the end of the file")
    return n, header_bytes


def expected_float(v):
    if isinstance(v, str):
        table = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}
        if v not in table:
            raise Mismatch(f"bad float string {v!r} in expectation")
        return table[v]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Mismatch(f"bad float value {v!r} in expectation")
    return float(v)


def same_float(want, got):
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return want == got and math.copysign(1.0, want) == math.copysign(1.0, got)


def fmt_float(v):
    if v == 0.0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return repr(v)


def check_values(name, dtype, want_values, tensor):
    flat = tensor.reshape(-1)
    if len(want_values) != flat.numel():
        raise Mismatch(f"{name}: {flat.numel()} elements, expected {len(want_values)} values")
    if dtype in FLOAT_DTYPES:
        # Every listed float dtype converts to float64 exactly, so comparing the
        # float64 values with sign-of-zero and NaN handling is a bitwise check
        # up to the NaN payload.
        got = flat.to(torch.float64).tolist()
        for i, (w, g) in enumerate(zip(want_values, got)):
            wf = expected_float(w)
            if not same_float(wf, g):
                raise Mismatch(f"{name}[{i}]: got {fmt_float(g)}, expected {fmt_float(wf)}")
    elif dtype == "BOOL":
        got = flat.tolist()
        for i, (w, g) in enumerate(zip(want_values, got)):
            if not isinstance(w, bool):
                raise Mismatch(f"{name}[{i}]: expectation {w!r} is not a boolean")
            if bool(g) != w:
                raise Mismatch(f"{name}[{i}]: got {g}, expected {w}")
    elif dtype in INT_DTYPES:
        got = flat.tolist()
        for i, (w, g) in enumerate(zip(want_values, got)):
            if isinstance(w, bool) or not isinstance(w, int):
                raise Mismatch(f"{name}[{i}]: expectation {w!r} is not an integer")
            if int(g) != w:
                raise Mismatch(f"{name}[{i}]: got {g}, expected {w}")
    else:
        raise Mismatch(f"{name}: no value check for dtype {dtype}")


def tensor_bytes(tensor):
    if tensor.numel() == 0:
        return b""
    return tensor.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()


def check_file(st_path, exp_path, strict):
    expected = json.loads(exp_path.read_text(encoding="utf-8"))
    header_len, header_bytes = read_raw_header(st_path)
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Mismatch(f"header is not valid UTF-8 JSON: {e}")
    if strict and "header_json" in expected:
        if header_bytes != expected["header_json"].encode("utf-8"):
            raise Mismatch(
                f"header bytes differ (got {header_len} bytes, expected "
                f"{len(expected['header_json'].encode('utf-8'))}):\n  got:      {header_bytes!r}\n"
                f"  expected: {expected['header_json']!r}"
            )

    want_meta = expected.get("metadata") or None
    with safe_open(str(st_path), framework="pt") as f:
        got_meta = f.metadata() or None
        if got_meta != want_meta:
            raise Mismatch(f"metadata {got_meta!r}, expected {want_meta!r}")

        want_tensors = expected["tensors"]
        want_names = [t["name"] for t in want_tensors]
        if len(set(want_names)) != len(want_names):
            raise Mismatch("duplicate tensor names in expectation")
        got_names = set(f.keys())
        missing = sorted(set(want_names) - got_names)
        extra = sorted(got_names - set(want_names))
        if missing or extra:
            raise Mismatch(f"tensor names differ: missing {missing}, unexpected {extra}")

        for t in want_tensors:
            name, dtype, shape = t["name"], t["dtype"], list(t["shape"])
            info = header.get(name)
            if not isinstance(info, dict):
                raise Mismatch(f"{name}: not in the raw header")
            if info.get("dtype") != dtype:
                raise Mismatch(f"{name}: dtype {info.get('dtype')}, expected {dtype}")
            if info.get("shape") != shape:
                raise Mismatch(f"{name}: shape {info.get('shape')}, expected {shape}")
            tensor = f.get_tensor(name)
            lib_dtype = TORCH_DTYPE_NAMES.get(tensor.dtype)
            if lib_dtype != dtype:
                raise Mismatch(f"{name}: library loaded dtype {tensor.dtype}, expected {dtype}")
            if list(tensor.shape) != shape:
                raise Mismatch(f"{name}: library loaded shape {list(tensor.shape)}, expected {shape}")
            if "values" in t:
                check_values(name, dtype, t["values"], tensor)
            if strict and "hex" in t:
                got_hex = tensor_bytes(tensor).hex()
                if got_hex != t["hex"]:
                    raise Mismatch(f"{name}: raw bytes {got_hex}, expected {t['hex']}")
    return f"{len(want_tensors)} tensors"


def check_index(index_path):
    index = json.loads(index_path.read_text(encoding="utf-8"))
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise Mismatch("no weight_map (or it is empty)")
    by_shard = {}
    for tensor_name, shard in weight_map.items():
        by_shard.setdefault(shard, []).append(tensor_name)
    total_bytes = 0
    for shard, names in sorted(by_shard.items()):
        shard_path = index_path.parent / shard
        if "/" in shard or not shard_path.is_file():
            raise Mismatch(f"shard {shard!r} not found next to the index")
        with safe_open(str(shard_path), framework="pt") as f:
            keys = set(f.keys())
            for name in names:
                if name not in keys:
                    raise Mismatch(f"{name}: not in shard {shard}")
                t = f.get_tensor(name)
                total_bytes += t.numel() * t.element_size()
    declared = (index.get("metadata") or {}).get("total_size")
    note = ""
    if declared is not None and declared != total_bytes:
        note = f" (metadata.total_size {declared} != {total_bytes} bytes of tensors)"
    return f"{len(weight_map)} tensors in {len(by_shard)} shards{note}"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    if len(args) != 1 or any(fl != "--strict" for fl in flags):
        print(next(l for l in __doc__.splitlines() if l.startswith("Usage:")), file=sys.stderr)
        return 2
    strict = "--strict" in flags
    directory = Path(args[0])
    if not directory.is_dir():
        print(f"not a directory: {directory}", file=sys.stderr)
        return 2

    passed = failed = 0
    jobs = []
    for st_path in sorted(directory.glob("*.safetensors")):
        exp_path = st_path.with_name(st_path.name[: -len(".safetensors")] + ".expected.json")
        if exp_path.is_file():
            jobs.append((st_path, lambda s=st_path, e=exp_path: check_file(s, e, strict)))
    for index_path in sorted(directory.glob("*.safetensors.index.json")):
        jobs.append((index_path, lambda p=index_path: check_index(p)))

    for path, job in jobs:
        try:
            detail = job()
        except Mismatch as e:
            failed += 1
            print(f"FAIL {path.name}: {e}")
        except Exception as e:  # the library refusing the file is a failure too
            failed += 1
            print(f"FAIL {path.name}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {path.name}: {detail}")
    print(f"{passed} passed, {failed} failed")
    if passed + failed == 0:
        print("nothing to check (no X.safetensors with X.expected.json, no *.safetensors.index.json)")
        return 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
