// Element types of tensors, spelled as safetensors spells them (F32, BF16, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sft {

enum class DType : uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3,  // float8_e4m3fn: no infinities, one NaN pattern per sign
  kF8E5M2,
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kBool,
};

// Bytes per element.
size_t dtype_size(DType dtype);
// The safetensors name: "F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "I64", ..., "BOOL".
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; nullopt for names we do not know.
std::optional<DType> parse_dtype(std::string_view name);
bool dtype_is_float(DType dtype);

// C++ type ↔ DType for typed access to tensor data.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::kI16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kI8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

}  // namespace sft
