// Test-only readers for .wandb files: the chunk framing (CRC-checked, zero-filled block tails
// checked) and a protobuf field walker, to take sft's and the SDK's records apart. Not a
// general reader: the inputs are our own files and committed goldens.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sft::test {

struct WandbChunk {
  uint8_t type;
  size_t offset;
  std::string data;
};

// Chunks after the 7-byte header; records an error in `error` (and stops) on a bad CRC,
// a non-zero block tail or a truncated chunk.
inline std::vector<WandbChunk> read_wandb_chunks(std::string_view file, std::string* error) {
  std::vector<WandbChunk> chunks;
  size_t off = 7;
  while (off < file.size()) {
    const size_t left = 32768 - off % 32768;
    if (left < 7) {
      for (size_t i = 0; i < left && off + i < file.size(); ++i)
        if (file[off + i] != '\0') *error = "non-zero block tail at " + std::to_string(off);
      off += left;
      continue;
    }
    if (off + 7 > file.size()) {
      *error = "truncated chunk header at " + std::to_string(off);
      break;
    }
    auto byte = [&](size_t i) { return static_cast<uint8_t>(file[off + i]); };
    const uint32_t crc =
        byte(0) | byte(1) << 8 | byte(2) << 16 | static_cast<uint32_t>(byte(3)) << 24;
    const size_t length = byte(4) | byte(5) << 8;
    const uint8_t type = byte(6);
    if (off + 7 + length > file.size() || off % 32768 + 7 + length > 32768) {
      *error = "chunk overruns the file or its block at " + std::to_string(off);
      break;
    }
    const std::string data(file.substr(off + 7, length));
    uLong c = crc32(0L, &type, 1);
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    if (c != crc) {
      *error = "bad CRC at " + std::to_string(off);
      break;
    }
    chunks.push_back({type, off, data});
    off += 7 + length;
  }
  return chunks;
}

// Whole records from chunks (FULL, or FIRST MIDDLE* LAST).
inline std::vector<std::string> join_wandb_records(const std::vector<WandbChunk>& chunks,
                                                   std::string* error) {
  std::vector<std::string> records;
  std::string pending;
  bool open = false;
  for (const WandbChunk& c : chunks) {
    const bool starts = c.type == 1 || c.type == 2;
    if (starts == open) *error = "chunk type " + std::to_string(c.type) + " out of order";
    pending += c.data;
    open = c.type == 2 || c.type == 3;
    if (!open) {
      records.push_back(pending);
      pending.clear();
    }
  }
  if (open) *error = "the last record is not closed";
  return records;
}

struct ProtoField {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;  // wire 0 and 1
  std::string bytes;    // wire 2
};

// Top-level fields of a message; empty on a malformed one.
inline std::vector<ProtoField> parse_proto(std::string_view m) {
  std::vector<ProtoField> out;
  size_t i = 0;
  auto read_varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && i < m.size(); shift += 7) {
      const uint8_t b = static_cast<uint8_t>(m[i++]);
      *v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (i < m.size()) {
    uint64_t tag = 0;
    if (!read_varint(&tag)) return {};
    ProtoField f;
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    if (f.wire == 0) {
      if (!read_varint(&f.varint)) return {};
    } else if (f.wire == 1) {
      if (i + 8 > m.size()) return {};
      for (int k = 0; k < 8; ++k)
        f.varint |= static_cast<uint64_t>(static_cast<uint8_t>(m[i + k])) << (8 * k);
      i += 8;
    } else if (f.wire == 2) {
      uint64_t n = 0;
      if (!read_varint(&n) || i + n > m.size()) return {};
      f.bytes = std::string(m.substr(i, n));
      i += n;
    } else {
      return {};
    }
    out.push_back(f);
  }
  return out;
}

// Copies, so that a call on a temporary parse_proto(...) result is safe.
inline std::optional<ProtoField> find_field(const std::vector<ProtoField>& fields,
                                            uint32_t number) {
  for (const ProtoField& f : fields)
    if (f.number == number) return f;
  return std::nullopt;
}

// The record_type of a Record: the field that is not num (1), control (16), uuid (19) or
// _info (200).
inline std::optional<ProtoField> record_body(const std::vector<ProtoField>& fields) {
  for (const ProtoField& f : fields)
    if (f.number != 1 && f.number != 16 && f.number != 19 && f.number != 200) return f;
  return std::nullopt;
}

// Items of a Config/Summary/History record body: (key or joined nested_key, value_json).
inline std::vector<std::pair<std::string, std::string>> record_items(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const ProtoField& f : parse_proto(body)) {
    if (f.number != 1) continue;
    std::string key, value;
    for (const ProtoField& g : parse_proto(f.bytes)) {
      if (g.number == 1) key = g.bytes;
      if (g.number == 2) key += (key.empty() ? "" : ".") + g.bytes;
      if (g.number == 16) value = g.bytes;
    }
    items.emplace_back(key, value);
  }
  return items;
}

}  // namespace sft::test
