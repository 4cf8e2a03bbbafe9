#include "train/protobuf_writer.h"

#include <bit>

namespace sft {

void ProtoWriter::raw_varint(uint64_t value) {
  // Little-endian groups of 7 bits, the high bit set on every byte but the last.
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(uint32_t field, uint32_t wire_type) {
  raw_varint((static_cast<uint64_t>(field) << 3) | wire_type);
}

void ProtoWriter::varint(uint32_t field, uint64_t value) {
  tag(field, 0);
  raw_varint(value);
}

void ProtoWriter::fixed64(uint32_t field, uint64_t value) {
  tag(field, 1);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void ProtoWriter::f64(uint32_t field, double value) {
  fixed64(field, std::bit_cast<uint64_t>(value));
}

void ProtoWriter::bytes(uint32_t field, std::string_view value) {
  tag(field, 2);
  raw_varint(value.size());
  out_.append(value);
}

}  // namespace sft
