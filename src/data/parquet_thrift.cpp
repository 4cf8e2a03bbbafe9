#include "data/parquet_thrift.h"

#include <cstring>

namespace sft::data {

namespace {
// Deeper than any Parquet metadata (FileMetaData → RowGroup → ColumnChunk → ColumnMetaData →
// Statistics is 5); the cap keeps hostile inputs from exhausting the stack.
constexpr int kMaxDepth = 48;

int64_t unzigzag(uint64_t n) {
  return static_cast<int64_t>(n >> 1) ^ -static_cast<int64_t>(n & 1);
}
}  // namespace

void fail_parquet(const std::string& file, std::string_view place, std::string_view problem) {
  std::string message = file;
  if (!place.empty()) message.append(": ").append(place);
  message.append(": ").append(problem);
  throw ParquetError(message);
}

ThriftReader::ThriftReader(std::span<const uint8_t> bytes, std::string file, std::string what)
    : bytes_(bytes), file_(std::move(file)), what_(std::move(what)) {}

void ThriftReader::fail(std::string_view problem) const {
  fail_parquet(file_, what_,
               std::string(problem) + " at byte " + std::to_string(pos_) + " of the Thrift data");
}

uint8_t ThriftReader::read_byte() {
  if (pos_ >= bytes_.size()) fail("truncated metadata");
  return bytes_[pos_++];
}

uint64_t ThriftReader::read_varint() {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = read_byte();
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return result;
  }
  fail("varint longer than 10 bytes");
}

void ThriftReader::begin_struct() {
  if (depth_ >= kMaxDepth) fail("metadata nested too deeply");
  saved_ids_[depth_++] = last_field_id_;
  last_field_id_ = 0;
}

void ThriftReader::end_struct() {
  last_field_id_ = saved_ids_[--depth_];
}

ThriftReader::FieldHeader ThriftReader::next_field() {
  uint8_t b = read_byte();
  auto type = static_cast<ThriftType>(b & 0x0f);
  if (type == ThriftType::kStop) return {type, 0};
  if (static_cast<uint8_t>(type) > static_cast<uint8_t>(ThriftType::kStruct))
    fail("unknown Thrift field type " + std::to_string(b & 0x0f));
  int delta = b >> 4;
  int64_t id = delta != 0 ? last_field_id_ + delta : unzigzag(read_varint());
  if (id < INT16_MIN || id > INT16_MAX) fail("field id out of range");
  last_field_id_ = static_cast<int16_t>(id);
  return {type, last_field_id_};
}

bool ThriftReader::read_bool(const FieldHeader& f) {
  if (f.type != ThriftType::kBoolTrue && f.type != ThriftType::kBoolFalse)
    fail("field " + std::to_string(f.id) + " should be a bool");
  return f.type == ThriftType::kBoolTrue;
}

int32_t ThriftReader::read_i32() {
  int64_t v = unzigzag(read_varint());
  if (v < INT32_MIN || v > INT32_MAX) fail("i32 out of range");
  return static_cast<int32_t>(v);
}

int64_t ThriftReader::read_i64() {
  return unzigzag(read_varint());
}

double ThriftReader::read_double() {
  if (bytes_.size() - pos_ < 8) fail("truncated double");
  double d;
  std::memcpy(&d, bytes_.data() + pos_, 8);
  pos_ += 8;
  return d;
}

std::span<const uint8_t> ThriftReader::read_binary() {
  uint64_t n = read_varint();
  if (n > bytes_.size() - pos_) fail("string length " + std::to_string(n) + " past the end");
  auto out = bytes_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::string ThriftReader::read_string() {
  auto b = read_binary();
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::pair<ThriftType, uint32_t> ThriftReader::read_list_header() {
  uint8_t b = read_byte();
  uint64_t n = b >> 4;
  if (n == 15) n = read_varint();
  // Every element takes at least one byte (bools in lists too), so a count larger than the
  // bytes left is a lie; checking it here bounds every allocation a caller makes.
  if (n > bytes_.size() - pos_) fail("list of " + std::to_string(n) + " elements past the end");
  return {static_cast<ThriftType>(b & 0x0f), static_cast<uint32_t>(n)};
}

void ThriftReader::expect(const FieldHeader& f, ThriftType type, std::string_view field_name) {
  bool ok = f.type == type || (type == ThriftType::kBoolTrue && f.type == ThriftType::kBoolFalse);
  if (!ok) fail("field '" + std::string(field_name) + "' has the wrong Thrift type");
}

void ThriftReader::skip(ThriftType type) {
  skip_depth(type, 0);
}

void ThriftReader::skip_depth(ThriftType type, int depth) {
  if (depth > kMaxDepth) fail("metadata nested too deeply");
  switch (type) {
    case ThriftType::kBoolTrue:
    case ThriftType::kBoolFalse:
      return;
    case ThriftType::kByte:
      read_byte();
      return;
    case ThriftType::kI16:
    case ThriftType::kI32:
    case ThriftType::kI64:
      read_varint();
      return;
    case ThriftType::kDouble:
      read_double();
      return;
    case ThriftType::kBinary:
      read_binary();
      return;
    case ThriftType::kList:
    case ThriftType::kSet: {
      auto [elem, n] = read_list_header();
      for (uint32_t i = 0; i < n; ++i) {
        // Bools inside a list are one byte each, not folded into a header.
        if (elem == ThriftType::kBoolTrue || elem == ThriftType::kBoolFalse) {
          read_byte();
        } else {
          skip_depth(elem, depth + 1);
        }
      }
      return;
    }
    case ThriftType::kMap: {
      uint64_t n = read_varint();
      if (n == 0) return;
      if (n > bytes_.size() - pos_) fail("map past the end");
      uint8_t kv = read_byte();
      for (uint64_t i = 0; i < n; ++i) {
        skip_depth(static_cast<ThriftType>(kv >> 4), depth + 1);
        skip_depth(static_cast<ThriftType>(kv & 0x0f), depth + 1);
      }
      return;
    }
    case ThriftType::kStruct: {
      begin_struct();
      for (FieldHeader f = next_field(); f.type != ThriftType::kStop; f = next_field())
        skip_depth(f.type, depth + 1);
      end_struct();
      return;
    }
    default:
      fail("unknown Thrift type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace sft::data
