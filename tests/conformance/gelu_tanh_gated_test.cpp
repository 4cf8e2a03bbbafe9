// Conformance of ops::gelu_tanh_gated_forward / _backward on views (h = gelu_tanh(gate) · up,
// Gemma's gelu_pytorch_tanh): f32 against the f64 CPU run, including saturated gates (|g| up to
// 90, where x³ is large and tanh is ±1), and the f64 backward against finite differences; and
// the bf16-compute forms (gate and up saved in bf16, h and the gradients fp32, or bf16).
//
// Tolerance (max |err| / max |ref|), f32 and bf16: 1e-5 (a tanh and products per element, in
// fp32; bf16 inputs are exact values on the bf16 grid, so they add no error).
#include <gtest/gtest.h>

#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct GeluTanhGatedCase {
  int64_t rows, cols;
  double gate_scale;
  bool extremes;  // the first gates are ±20, ±90, 0
};

Values gates(const GeluTanhGatedCase& c, DType grid) {
  Values g = random_values(static_cast<size_t>(c.rows * c.cols), 1, c.gate_scale, grid);
  const double extreme[] = {20, -20, 90, -90, 0};
  if (c.extremes)
    for (size_t i = 0; i < 5 && i < g.size(); ++i) g[i] = extreme[i];
  return g;
}

// With rounded_outputs (bf16 compute only), h, dgate and dup are bf16: rounded as stored.
Outputs run_gelu_tanh_gated(const GeluTanhGatedCase& c, const Backend& be, Mode m,
                            bool rounded_outputs = false) {
  const size_t n = static_cast<size_t>(c.rows * c.cols);
  const DType out =
      m.dtype == DType::kBF16 ? (rounded_outputs ? DType::kBF16 : DType::kF32) : m.dtype;
  Buffer G(be, m.dtype, c.rows, c.cols, gates(c, m.grid));
  Buffer U(be, m.dtype, c.rows, c.cols, random_values(n, 2, 1.0, m.grid));
  const DType grad = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;  // dh stays f32
  Buffer DH(be, grad, c.rows, c.cols, random_values(n, 3, 1.0, m.grid));
  Buffer H(be, out, c.rows, c.cols, Values(n, kNaN));
  Buffer DG(be, out, c.rows, c.cols, Values(n, kNaN));
  Buffer DU(be, out, c.rows, c.cols, Values(n, kNaN));
  ops::gelu_tanh_gated_forward(H.view(), G.view(), U.view());
  ops::gelu_tanh_gated_backward(DG.view(), DU.view(), DH.view(), G.view(), U.view());
  return {{"h", H.read()}, {"dgate", DG.read()}, {"dup", DU.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceGeluTanhGated);

TEST_P(ConformanceGeluTanhGated, ForwardAndBackward) {
  const GeluTanhGatedCase cases[] = {
      {1, 1, 1.0, false}, {1, 11, 2.0, true}, {7, 149, 4.0, true}, {3, 6000, 2.0, false}};
  for (const GeluTanhGatedCase& c : cases)
    check_conformance(
        backend(),
        "gelu_tanh_gated (" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + ")",
        [&](const Backend& be, Mode m) { return run_gelu_tanh_gated(c, be, m); },
        {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
}

// bf16 h, dgate, dup (what bf16 compute saves and feeds the bf16 matmuls): one bf16 rounding
// (2⁻⁸ relative) on top of the f32 error.
TEST_P(ConformanceGeluTanhGated, Bf16Outputs) {
  const GeluTanhGatedCase cases[] = {
      {1, 11, 2.0, true}, {7, 149, 4.0, true}, {3, 6000, 2.0, false}};
  for (const GeluTanhGatedCase& c : cases)
    check_conformance(
        backend(),
        "gelu_tanh_gated bf16 outputs (" + std::to_string(c.rows) + ", " + std::to_string(c.cols) +
            ")",
        [&](const Backend& be, Mode m) { return run_gelu_tanh_gated(c, be, m, true); },
        {DType::kBF16}, uniform_tolerance(0, 4e-3));
}

TEST(ConformanceGeluTanhGatedReference, BackwardMatchesFiniteDifferences) {
  const int64_t N = 13;
  Values gate = random_values(N, 4, 3.0, DType::kF64), up = random_values(N, 5, 1.0, DType::kF64);
  const Values R = random_values(N, 6, 1.0, DType::kF64);
  Values h(N);
  auto f = [&] {
    ops::gelu_tanh_gated_forward(host_view(h, 1, N), host_view(gate, 1, N), host_view(up, 1, N));
    return dot(h, R);
  };
  Values dg(N, kNaN), du(N, kNaN), dh = R;
  ops::gelu_tanh_gated_backward(host_view(dg, 1, N), host_view(du, 1, N), host_view(dh, 1, N),
                                host_view(gate, 1, N), host_view(up, 1, N));
  EXPECT_LE(fd_error(gate, f, dg), kFdTolerance);
  EXPECT_LE(fd_error(up, f, du), kFdTolerance);
}

}  // namespace
}  // namespace sft::conformance
