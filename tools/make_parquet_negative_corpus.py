#!/usr/bin/env python3
"""Writes tests/fixtures/parquet_bad/: one small broken or unsupported Parquet file per error
the reader must give, and MANIFEST.json mapping each file to a phrase its error must contain
(tests/data/parquet_negative_test.cpp). The files also seed the Parquet fuzz target.

Run: ~/.venv-sft/bin/python tools/make_parquet_negative_corpus.py
"""
import decimal
import io
import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "parquet_bad"


def write(table, **kwargs) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **kwargs)
    return buf.getvalue()


def small(n=6):
    return pa.table({"text": [f"row {i} " * (i + 1) for i in range(n)], "n": list(range(n))})


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    good = write(small(), compression="none", use_dictionary=False)
    footer_len = struct.unpack("<I", good[-8:-4])[0]
    footer_start = len(good) - 8 - footer_len
    snappy = write(small(), compression="snappy", use_dictionary=False)
    cases = {}

    def add(name, data, phrase):
        (OUT / name).write_bytes(data)
        cases[name] = phrase

    add("too_small.parquet", b"PAR1PAR1", "too small to be a Parquet file")
    add("bad_start_magic.parquet", b"XXXX" + good[4:], "does not start with the Parquet magic")
    add("truncated.parquet", good[:-20], "does not end with the Parquet magic")
    add("encrypted_footer.parquet", good[:-4] + b"PARE", "encrypted Parquet files are not supported")
    add("footer_length_too_big.parquet", good[:-8] + struct.pack("<I", len(good)) + b"PAR1",
        "is larger than the file")
    garbage = good[:footer_start] + b"\x0f" * footer_len + good[-8:]
    add("footer_garbage.parquet", garbage, "unknown Thrift field type")
    add("footer_truncated_thrift.parquet",
        good[:footer_start] + good[footer_start:footer_start + 10] + good[-4 - 4:-8] +
        struct.pack("<I", 10) + b"PAR1", "past the end")
    # Flip the last bytes of the first column chunk: the gzip trailer's CRC of the page data.
    gz = write(small(), compression="gzip", use_dictionary=False)
    col = pq.ParquetFile(io.BytesIO(gz)).metadata.row_group(0).column(0)
    end = col.data_page_offset + col.total_compressed_size
    corrupt = bytearray(gz)
    for i in range(end - 4, end):
        corrupt[i] ^= 0x5A
    add("corrupt_page.parquet", bytes(corrupt), "column 'text': corrupt GZIP data")
    add("codec_lz4.parquet", write(small(), compression="lz4"), "compression codec LZ4_RAW is not supported")
    add("codec_brotli.parquet", write(small(), compression="brotli"), "compression codec BROTLI is not supported")
    add("delta_encoding.parquet",
        write(small(), use_dictionary=False, column_encoding={"n": "DELTA_BINARY_PACKED", "text": "PLAIN"}),
        "value encoding DELTA_BINARY_PACKED is not supported")
    add("map_column.parquet",
        write(pa.table({"m": pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int64()))})),
        "column 'm': MAP columns are not supported")
    add("timestamp_column.parquet",
        write(pa.table({"t": pa.array([0, 1], pa.timestamp("ms"))})),
        "column 't': TIMESTAMP columns are not supported")
    add("binary_column.parquet", write(pa.table({"b": pa.array([b"\x00\x01"], pa.binary())})),
        "column 'b': binary columns")
    add("decimal_column.parquet",
        write(pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal128(10, 2))})),
        "column 'd': FIXED_LEN_BYTE_ARRAY columns (DECIMAL) are not supported")
    (OUT / "MANIFEST.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    print("wrote", len(cases), "files to", OUT)


if __name__ == "__main__":
    main()
