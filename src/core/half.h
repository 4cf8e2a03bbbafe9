// Exact conversions between f32 and the narrow float formats (bf16, f16, f8).
//
// f32 → narrow rounds to nearest, ties to even, as PyTorch's .to() does; overflow
// goes to infinity; NaN stays NaN (quieted, sign kept); infinities stay infinities.
// narrow → f32 is exact. Header-only and branch-light so loops over tensors vectorise.
#pragma once

#include <bit>
#include <cstdint>

namespace sft {

using bf16_bits = uint16_t;
using f16_bits = uint16_t;

inline float bf16_to_f32(bf16_bits h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

inline bf16_bits f32_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<bf16_bits>((bits >> 16) |
                                  0x0040u);  // NaN: keep sign and payload top, force quiet
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even;
  // a carry into the exponent correctly produces the next binade or infinity.
  uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<bf16_bits>((bits + 0x7fffu + lsb) >> 16);
}

inline float f16_to_f32(f16_bits h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: value = mantissa * 2^-24, exact in f32.
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline f16_bits f32_to_f16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<f16_bits>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<f16_bits>(sign | 0x7c00u);  // rounds past 65504 → inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in f16: scale so the f16 ulp (2^-24) becomes 1 and
    // let the FPU round to nearest-even; the sum is exact because of the magic constant.
    float scaled = std::bit_cast<float>(abs) + 0.5f;  // 0.5 = 2^-1: ulp of f32 at 0.5 is 2^-24
    return static_cast<f16_bits>(sign | (std::bit_cast<uint32_t>(scaled) - 0x3f000000u));
  }
  uint32_t lsb = (abs >> 13) & 1u;
  uint32_t rounded = abs + 0xfffu + lsb;  // ties to even on the 13 dropped bits
  return static_cast<f16_bits>(sign | ((rounded - 0x38000000u) >> 13));
}

// float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN; max finite 448.
inline float f8e4m3_to_f32(uint8_t v) {
  uint32_t sign = uint32_t{v & 0x80u} << 24;
  uint32_t exponent = (v >> 3) & 0xfu;
  uint32_t mantissa = v & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exponent == 0) {
    float magnitude = static_cast<float>(mantissa) * 0x1p-9f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 120) << 23) | (mantissa << 20));
}

// float8_e5m2: the top byte of an f16.
inline float f8e5m2_to_f32(uint8_t v) {
  return f16_to_f32(static_cast<f16_bits>(v << 8));
}

}  // namespace sft
