// A minimal protocol-buffer encoder: the wire format (varints, 64-bit fixed, length-delimited
// fields) for the few messages sft writes by hand (W&B's Record). Fields are appended in the
// order they are called; zero and empty values are written only when asked (proto3 leaves
// them out, so callers skip them). No schema, no parsing: the message definitions live in
// the files that use this (train/wandb_records.cpp names the .proto they follow).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sft {

class ProtoWriter {
 public:
  // Wire type 0: int32/int64/uint64/bool/enum (negative int64 as its two's complement).
  void varint(uint32_t field, uint64_t value);
  void boolean(uint32_t field, bool value) { varint(field, value ? 1 : 0); }
  // Wire type 1.
  void fixed64(uint32_t field, uint64_t value);
  void f64(uint32_t field, double value);
  // Wire type 2: string, bytes, or an embedded message's bytes.
  void bytes(uint32_t field, std::string_view value);
  void message(uint32_t field, const ProtoWriter& m) { bytes(field, m.data()); }

  const std::string& data() const { return out_; }
  bool empty() const { return out_.empty(); }

 private:
  void tag(uint32_t field, uint32_t wire_type);
  void raw_varint(uint64_t value);
  std::string out_;
};

}  // namespace sft
