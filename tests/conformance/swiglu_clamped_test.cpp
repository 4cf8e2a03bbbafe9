// Conformance of ops::swiglu_clamped_forward / backward on views (gpt-oss's experts:
// h = (clamp(up, ±limit) + 1) · g · σ(alpha · g), g = min(gate, limit)): f32 and the bf16-compute
// forms against the f64 CPU run, with gates and ups on both sides of the limit (and saturated
// sigmoids), and the f64 backward against finite differences away from the kinks, including
// the zero gradient of clamped inputs.
//
// Tolerance (max |err| / max |ref|), f32 and bf16: 1e-5 (an exp, a division and products per
// element, in fp32; bf16 inputs are exact values on the bf16 grid). bf16 outputs: one rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

constexpr double kAlpha = 1.702, kLimit = 1.25;

struct ClampedCase {
  int64_t rows, cols;
  double scale;  // of gate and up: 2.0 puts about half of them past the limit
};

Outputs run_clamped(const ClampedCase& c, const Backend& be, Mode m, bool rounded_outputs = false) {
  const size_t n = static_cast<size_t>(c.rows * c.cols);
  const DType out =
      m.dtype == DType::kBF16 ? (rounded_outputs ? DType::kBF16 : DType::kF32) : m.dtype;
  Values g = random_values(n, 11, c.scale, m.grid);
  const double extreme[] = {-90, -20, 0, 40};  // σ saturated, 0, clamped far above
  for (size_t i = 0; i < 4 && i < g.size(); ++i) g[i] = extreme[i];
  Buffer G(be, m.dtype, c.rows, c.cols, g);
  Buffer U(be, m.dtype, c.rows, c.cols, random_values(n, 12, c.scale, m.grid));
  const DType grad = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;  // dh stays f32
  Buffer DH(be, grad, c.rows, c.cols, random_values(n, 13, 1.0, m.grid));
  Buffer H(be, out, c.rows, c.cols, Values(n, kNaN));
  Buffer DG(be, out, c.rows, c.cols, Values(n, kNaN));
  Buffer DU(be, out, c.rows, c.cols, Values(n, kNaN));
  ops::swiglu_clamped_forward(H.view(), G.view(), U.view(), kAlpha, kLimit);
  ops::swiglu_clamped_backward(DG.view(), DU.view(), DH.view(), G.view(), U.view(), kAlpha, kLimit);
  return {{"h", H.read()}, {"dgate", DG.read()}, {"dup", DU.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceSwiGluClamped);

TEST_P(ConformanceSwiGluClamped, ForwardAndBackward) {
  const ClampedCase cases[] = {{1, 5, 2.0}, {7, 149, 2.0}, {3, 6000, 1.0}};
  for (const ClampedCase& c : cases)
    check_conformance(
        backend(),
        "swiglu_clamped (" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + ")",
        [&](const Backend& be, Mode m) { return run_clamped(c, be, m); },
        {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
}

TEST_P(ConformanceSwiGluClamped, Bf16Outputs) {
  const ClampedCase cases[] = {{7, 149, 2.0}, {3, 6000, 1.0}};
  for (const ClampedCase& c : cases)
    check_conformance(
        backend(),
        "swiglu_clamped bf16 outputs (" + std::to_string(c.rows) + ", " + std::to_string(c.cols) +
            ")",
        [&](const Backend& be, Mode m) { return run_clamped(c, be, m, true); }, {DType::kBF16},
        uniform_tolerance(0, 4e-3));
}

// Finite differences away from the kinks (no input within 0.05 of ±limit), so every clamped
// input's zero gradient and every other one's slope are both checked.
TEST(ConformanceSwiGluClampedReference, BackwardMatchesFiniteDifferences) {
  const int64_t N = 24;
  Values gate = random_values(N, 14, 2.5, DType::kF64), up = random_values(N, 15, 2.5, DType::kF64);
  auto away = [](Values& v) {
    for (double& x : v)
      if (std::abs(std::abs(x) - kLimit) < 0.05) x += 0.2;
  };
  away(gate);
  away(up);
  int clamped_gates = 0, clamped_ups = 0;
  for (int64_t i = 0; i < N; ++i) {
    clamped_gates += gate[i] > kLimit;
    clamped_ups += std::abs(up[i]) > kLimit;
  }
  ASSERT_GE(clamped_gates, 3);
  ASSERT_GE(clamped_ups, 3);
  const Values R = random_values(N, 16, 1.0, DType::kF64);
  Values h(N);
  auto f = [&] {
    ops::swiglu_clamped_forward(host_view(h, 1, N), host_view(gate, 1, N), host_view(up, 1, N),
                                kAlpha, kLimit);
    return dot(h, R);
  };
  Values dg(N, kNaN), du(N, kNaN), dh = R;
  ops::swiglu_clamped_backward(host_view(dg, 1, N), host_view(du, 1, N), host_view(dh, 1, N),
                               host_view(gate, 1, N), host_view(up, 1, N), kAlpha, kLimit);
  EXPECT_LE(fd_error(gate, f, dg), kFdTolerance);
  EXPECT_LE(fd_error(up, f, du), kFdTolerance);
  for (int64_t i = 0; i < N; ++i) {
    if (gate[i] > kLimit) EXPECT_EQ(dg[i], 0.0) << i;
    if (std::abs(up[i]) > kLimit) EXPECT_EQ(du[i], 0.0) << i;
  }
}

// The formula itself at a few points (f64): (u + 1) · g · σ(αg) with the clamps.
TEST(ConformanceSwiGluClampedReference, ClampsAsTransformers) {
  Values gate = {0.5, 3.0, -4.0, 1.25}, up = {-3.0, 0.2, 5.0, -1.25}, h(4);
  ops::swiglu_clamped_forward(host_view(h, 1, 4), host_view(gate, 1, 4), host_view(up, 1, 4),
                              kAlpha, kLimit);
  auto ref = [](double g, double u) {
    g = std::min(g, kLimit);
    u = std::clamp(u, -kLimit, kLimit);
    return (u + 1) * g / (1 + std::exp(-kAlpha * g));
  };
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(h[i], ref(gate[i], up[i])) << i;
}

}  // namespace
}  // namespace sft::conformance
