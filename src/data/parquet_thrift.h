// A reader for the Thrift compact protocol, as far as Parquet metadata needs it.
//
// Parquet's footer and page headers are Thrift structs in the compact encoding: field
// headers with delta-coded ids, zigzag varints, length-prefixed binaries and lists. This
// reader decodes from a bounded byte span and never trusts a length: every read is checked
// against the end of the buffer, nesting depth is capped, and a malformed input raises
// ParquetError ("[parquet] <file>: <place>: ...") instead of reading out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/error.h"

namespace sft::data {

// Every problem found while reading a Parquet file (the message names file and place).
class ParquetError : public Error {
 public:
  explicit ParquetError(std::string_view message) : Error("parquet", message) {}
};

// Throws ParquetError "<file>: <place>: <problem>".
[[noreturn]] void fail_parquet(const std::string& file, std::string_view place,
                               std::string_view problem);

// Compact-protocol wire types (the low nibble of a field header).
enum class ThriftType : uint8_t {
  kStop = 0,
  kBoolTrue = 1,
  kBoolFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class ThriftReader {
 public:
  // `file` and `what` ("footer", "page header of column 'x'") only name the place in errors.
  ThriftReader(std::span<const uint8_t> bytes, std::string file, std::string what);

  struct FieldHeader {
    ThriftType type;
    int16_t id;
  };

  // Struct traversal: begin_struct, then next_field until type == kStop, then end_struct.
  void begin_struct();
  FieldHeader next_field();
  void end_struct();

  bool read_bool(const FieldHeader& f);  // bools live in the field header's type
  int32_t read_i32();
  int64_t read_i64();
  double read_double();
  std::string read_string();
  std::span<const uint8_t> read_binary();
  // List header: element type and count (checked against the bytes left).
  std::pair<ThriftType, uint32_t> read_list_header();
  void skip(ThriftType type);

  // Checks that a field has the wire type the schema expects.
  void expect(const FieldHeader& f, ThriftType type, std::string_view field_name);

  size_t position() const { return pos_; }
  [[noreturn]] void fail(std::string_view problem) const;

 private:
  uint64_t read_varint();
  uint8_t read_byte();
  void skip_depth(ThriftType type, int depth);

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  std::string file_;
  std::string what_;
  int16_t last_field_id_ = 0;
  int16_t saved_ids_[64] = {};
  int depth_ = 0;
};

}  // namespace sft::data
