// exp for softmax rows on the CPU: arguments at or below ~0 (scores minus a running max or a
// log-sum-exp), shared by the tiled attention and the fused LM head.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace sft::ops::cpu {

// exp(x) for x ≤ ~0 (scores minus a running max or minus the log-sum-exp). float: Cody–Waite
// range reduction and a degree-6 polynomial (max error ≈ 2 ulp), written without calls or
// branches so clang vectorises the row loops around it; libm's expf is scalar and would cost
// as much as both tile matmuls. double: std::exp, bit-for-bit what the eager reference uses.
inline float exp_score(float x_in) {
  // NaN in, NaN out: the arithmetic runs on 0 instead, so the integer conversion below stays
  // defined, and the NaN is returned at the end (a select: the loops still vectorise).
  float x = x_in != x_in ? 0.0f : x_in;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so n · kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  x = x < -87.0f ? -87.0f : x;  // exp(−87) ≈ 1.6e-38: still a normal float, negligible in a sum
  x = x > 88.0f ? 88.0f : x;
  constexpr float kRound =
      12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer (SSE2 has no roundps)
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float e = p * std::bit_cast<float>(bits);
  return x_in != x_in ? x_in : e;
}
inline double exp_score(double x) {
  return std::exp(x);
}

}  // namespace sft::ops::cpu
