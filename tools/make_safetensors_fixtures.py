#!/usr/bin/env python3
"""Write the safetensors dtype fixture used by the C++ reader/writer tests.

Outputs (relative to the repository root, found from this script's location):

  tests/fixtures/safetensors/all_dtypes.safetensors
      written by the reference `safetensors` Python library (torch front end);
  tests/fixtures/safetensors/all_dtypes.json
      what the file is expected to contain:
      {
        "note": "...",
        "safetensors_version": "...",   # library version that wrote the file
        "torch_version": "...",
        "metadata": {...},               # the __metadata__ map
        "header_len": N,                 # the little-endian u64 at offset 0
        "header_json": "...",            # the N header bytes, verbatim (incl. padding)
        "tensors": [                     # in the order of their data in the file
          {"name", "dtype", "shape",
           "data_offsets": [begin, end], # relative to the start of the data section
           "values": [...],              # flat, row-major
           "hex": "..."}                 # raw bytes as stored, lowercase hex
        ]
      }

Float values are JSON numbers (each is exactly representable in its dtype, so
the shortest float64 repr round-trips), except the special values, which are
the strings "nan", "inf", "-inf" and "-0.0". Integers are JSON integers and
booleans are JSON true/false.

Run: ~/.venv-sft/bin/python tools/make_safetensors_fixtures.py
"""

import json
import math
import struct
from pathlib import Path

import safetensors
import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "fixtures" / "safetensors"

METADATA = {"format": "pt", "note": "sft.cpp fixture"}

INF = math.inf
NAN = math.nan

# (smallest positive subnormal, largest finite, has_inf) for each float dtype.
# The subnormals are exact powers of two, so the float64 literals are exact.
FLOAT_LIMITS = {
    "F64": (torch.float64, 2.0**-1074, 1.7976931348623157e308, True),
    "F32": (torch.float32, 2.0**-149, 3.4028234663852886e38, True),
    "F16": (torch.float16, 2.0**-24, 65504.0, True),
    "BF16": (torch.bfloat16, 2.0**-133, 3.3895313892515355e38, True),
    "F8_E4M3": (torch.float8_e4m3fn, 2.0**-9, 448.0, False),
    "F8_E5M2": (torch.float8_e5m2, 2.0**-16, 57344.0, True),
}

INT_TYPES = {
    "I64": (torch.int64, -(2**63), 2**63 - 1),
    "I32": (torch.int32, -(2**31), 2**31 - 1),
    "I16": (torch.int16, -(2**15), 2**15 - 1),
    "I8": (torch.int8, -(2**7), 2**7 - 1),
    "U8": (torch.uint8, 0, 2**8 - 1),
}


def float_values(smallest_sub, largest, has_inf):
    vals = [0.0, -0.0, 1.0, -2.5, smallest_sub, -smallest_sub, largest, -largest]
    if has_inf:
        vals += [INF, -INF]
    vals.append(NAN)
    return vals


def make_float_tensor(values, dtype):
    """Build a tensor of `dtype` holding exactly `values` (checked)."""
    t = torch.tensor(values, dtype=torch.float64).to(dtype)
    back = t.to(torch.float64).reshape(-1).tolist()
    flat = torch.tensor(values, dtype=torch.float64).reshape(-1).tolist()
    for want, got in zip(flat, back):
        if math.isnan(want):
            assert math.isnan(got), (dtype, want, got)
        else:
            assert want == got and math.copysign(1.0, want) == math.copysign(1.0, got), (dtype, want, got)
    return t


def build_tensors():
    tensors = {}
    for name, (dtype, sub, big, has_inf) in FLOAT_LIMITS.items():
        tensors[name.lower()] = make_float_tensor(float_values(sub, big, has_inf), dtype)
    for name, (dtype, lo, hi) in INT_TYPES.items():
        vals = [lo, hi, 0, 1] + ([-1] if lo < 0 else [128])
        tensors[name.lower()] = torch.tensor(vals, dtype=dtype)
    tensors["bool"] = torch.tensor([True, False, True], dtype=torch.bool)
    # Shape edge cases.
    tensors["matrix_f32"] = make_float_tensor([[1.0, 2.0, 3.0], [-4.0, 0.5, -0.25]], torch.float32)
    tensors["empty_f32"] = torch.zeros((0,), dtype=torch.float32)
    tensors["scalar_f64"] = make_float_tensor(3.25, torch.float64)
    assert tensors["scalar_f64"].shape == ()
    return tensors


def json_value(v, is_float):
    if isinstance(v, bool):
        return v
    if not is_float:
        return int(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return v


FLOAT_DTYPES = {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"}


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    st_path = OUT_DIR / "all_dtypes.safetensors"
    tensors = build_tensors()
    # The library serialises __metadata__ from a Rust HashMap, so the order of
    # its keys changes from one save_file call to the next. To keep the fixture
    # byte-for-byte reproducible, save until the keys come out sorted.
    for _attempt in range(1000):
        save_file(tensors, str(st_path), metadata=METADATA)
        raw = st_path.read_bytes()
        (header_len,) = struct.unpack("<Q", raw[:8])
        header_bytes = raw[8 : 8 + header_len]
        header_json = header_bytes.decode("utf-8")
        header = json.loads(header_json)  # dicts keep the file's key order
        if list(header.get("__metadata__", {})) == sorted(METADATA):
            break
    else:
        raise SystemExit("could not get a sorted __metadata__ order from safetensors")
    data = raw[8 + header_len :]

    metadata = header.pop("__metadata__", {})
    assert metadata == METADATA, metadata

    entries = sorted(header.items(), key=lambda kv: (kv[1]["data_offsets"][0], kv[1]["data_offsets"][1], kv[0]))
    out_tensors = []
    for name, info in entries:
        begin, end = info["data_offsets"]
        dtype = info["dtype"]
        src = tensors[name]
        assert list(src.shape) == info["shape"], (name, src.shape, info["shape"])
        is_float = dtype in FLOAT_DTYPES
        if is_float:
            flat = src.to(torch.float64).reshape(-1).tolist()
        else:
            flat = src.reshape(-1).tolist()
        stored = data[begin:end]
        expect_bytes = src.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes() if src.numel() else b""
        assert stored == expect_bytes, name
        out_tensors.append(
            {
                "name": name,
                "dtype": dtype,
                "shape": info["shape"],
                "data_offsets": [begin, end],
                "values": [json_value(v, is_float) for v in flat],
                "hex": stored.hex(),
            }
        )
    assert len(out_tensors) == len(tensors)
    assert out_tensors[-1]["data_offsets"][1] == len(data), "trailing bytes after the last tensor"

    doc = {
        "note": (
            "Written by tools/make_safetensors_fixtures.py. The safetensors library orders "
            "__metadata__ keys arbitrarily (Rust HashMap); this file was saved with them sorted. "
            "Tensors are listed in data order (the library sorts by dtype, then name)."
        ),
        "safetensors_version": safetensors.__version__,
        "torch_version": torch.__version__.split("+")[0],
        "metadata": metadata,
        "header_len": header_len,
        "header_json": header_json,
        "tensors": out_tensors,
    }
    json_path = OUT_DIR / "all_dtypes.json"
    json_path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {st_path.relative_to(REPO)} ({len(raw)} bytes, header {header_len} bytes)")
    print(f"wrote {json_path.relative_to(REPO)} ({len(out_tensors)} tensors)")


if __name__ == "__main__":
    main()
