// Normal(0, scale) values rounded to bf16, as raw bits, from a seeded std::mt19937: the AMX
// kernels' tests draw their operands with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/half.h"

namespace sft::ops {

inline std::vector<uint16_t> random_bf16(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = f32_to_bf16(d(rng));
  return v;
}

}  // namespace sft::ops
