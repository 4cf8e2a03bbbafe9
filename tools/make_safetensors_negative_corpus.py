#!/usr/bin/env python3
"""Write the safetensors negative corpus: one small broken file (or folder) per validation rule.

Each entry breaks exactly one rule of the safetensors format (as the reference
implementation, huggingface/safetensors, enforces it) and nothing else, so the C++ test
can check that every rule gives its own error. MANIFEST.json maps each file or folder to the
error code name sft must report (SafetensorsErrc in src/io/safetensors.h).

Standard library only. Run: python3 tools/make_safetensors_negative_corpus.py
"""

import json
import shutil
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "safetensors_bad"


def header_bytes(header: str | bytes) -> bytes:
    raw = header.encode() if isinstance(header, str) else header
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw


def st_file(header, data: bytes = b"") -> bytes:
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    return header_bytes(header) + data


def valid(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """A correct file from {name: (dtype, shape, data)} in insertion order."""
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    return st_file(header, data)


F32x2 = struct.pack("<2f", 1.0, 2.0)
ENTRY = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}

FILES = {
    "file_too_small": b"\x05\x00\x00",
    "header_too_large": struct.pack("<Q", 100_000_001) + b"{}" + b" " * 6,
    "header_out_of_bounds": struct.pack("<Q", 4096) + b'{"__metadata__":{}}',
    "invalid_utf8": st_file(b'{"t\xff":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', F32x2),
    "invalid_json": st_file('{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}', F32x2),
    "header_not_object": st_file("[1,2,3]"),
    "duplicate_name": st_file('{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                              '"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', F32x2 + F32x2),
    "invalid_metadata": st_file({"__metadata__": {"format": "pt", "step": 3}, "t": ENTRY}, F32x2),
    "invalid_tensor_entry": st_file({"t": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}}, F32x2),
    "unknown_dtype": st_file({"t": {"dtype": "F12", "shape": [2], "data_offsets": [0, 8]}}, F32x2),
    "shape_overflow": st_file({"t": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, F32x2),
    "invalid_offsets": st_file({"t": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, F32x2),
    "size_mismatch": st_file({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, F32x2),
    "hole_in_data": st_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}}, F32x2 * 2 + b"\0" * 4),
    "overlapping_data": st_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, F32x2 + b"\0" * 4),
    "data_past_end": st_file({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, F32x2),
    "trailing_data": st_file({"t": ENTRY}, F32x2 + b"\0" * 8),
}

GOOD_A = valid({"a": ("F32", [2], F32x2)})
GOOD_B = valid({"b": ("F32", [2], F32x2)})
GOOD_AB = valid({"a": ("F32", [2], F32x2), "b": ("F32", [2], F32x2)})


def index(weight_map) -> str:
    return json.dumps({"metadata": {"total_size": 16}, "weight_map": weight_map}, indent=2)


# Sharded-checkpoint folders: {folder: {file name: content}}
DIRS = {
    "invalid_index": {"model.safetensors.index.json": json.dumps({"metadata": {}}),
                      "model-00001-of-00001.safetensors": GOOD_A},
    "missing_shard": {"model.safetensors.index.json": index({"a": "model-00001-of-00002.safetensors",
                                                             "b": "model-00002-of-00002.safetensors"}),
                      "model-00001-of-00002.safetensors": GOOD_A},
    "tensor_not_in_shard": {"model.safetensors.index.json": index({"a": "model-00001-of-00002.safetensors",
                                                                   "b": "model-00002-of-00002.safetensors",
                                                                   "c": "model-00002-of-00002.safetensors"}),
                            "model-00001-of-00002.safetensors": GOOD_A,
                            "model-00002-of-00002.safetensors": GOOD_B},
    "tensor_not_in_index": {"model.safetensors.index.json": index({"a": "model-00001-of-00001.safetensors"}),
                            "model-00001-of-00001.safetensors": GOOD_AB},
    "tensor_in_two_shards": {"model.safetensors.index.json": index({"a": "model-00001-of-00002.safetensors",
                                                                    "b": "model-00002-of-00002.safetensors"}),
                             "model-00001-of-00002.safetensors": GOOD_AB,
                             "model-00002-of-00002.safetensors": GOOD_B},
    "no_weights": {"config.json": json.dumps({"model_type": "llama"})},
}


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    manifest = {"files": {}, "dirs": {}}
    for rule, content in FILES.items():
        name = f"{rule}.safetensors"
        (OUT / name).write_bytes(content)
        manifest["files"][name] = rule
    for rule, files in DIRS.items():
        folder = OUT / f"dir_{rule}"
        folder.mkdir()
        for name, content in files.items():
            (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        manifest["dirs"][folder.name] = rule
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(FILES)} files and {len(DIRS)} folders to {OUT}")


if __name__ == "__main__":
    main()
