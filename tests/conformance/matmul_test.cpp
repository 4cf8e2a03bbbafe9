// Conformance of ops::matmul on views: f32 × f32 → f32 and bf16 × bf16 → f32 (fp32 accumulation),
// every transpose, overwrite and accumulate, against the f64 CPU product of the same values; the
// linear layer's gradients (matmuls and bias_backward on views) against f64 finite differences.
//
// Tolerances (max |err| / max |ref|):
//   f32:  1e-5  (fp32 accumulation over K ≤ 257: error ≈ √K · 6e-8 relative to the output's scale)
//   bf16: 1e-5  (the operands are exact bf16 values, their products exact in fp32: only the fp32
//                accumulation rounds, as for f32)
#include <gtest/gtest.h>

#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct MatmulCase {
  int64_t M, N, K;
  bool trans_a, trans_b, accumulate;
  std::string name() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
           (trans_a ? " Aᵀ" : "") + (trans_b ? " Bᵀ" : "") + (accumulate ? " +=" : " =");
  }
};

Outputs run_matmul(const MatmulCase& c, const Backend& be, Mode m) {
  const DType out = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  const int64_t ar = c.trans_a ? c.K : c.M, ac = c.trans_a ? c.M : c.K;
  const int64_t br = c.trans_b ? c.N : c.K, bc = c.trans_b ? c.K : c.N;
  const Values a = random_values(static_cast<size_t>(ar * ac), 1, 1.0, m.grid);
  const Values b = random_values(static_cast<size_t>(br * bc), 2, 1.0, m.grid);
  // c is f32 in both tested modes, so its starting values sit on the f32 grid.
  const Values c0 = c.accumulate
                        ? random_values(static_cast<size_t>(c.M * c.N), 3, 1.0, DType::kF32)
                        : Values(static_cast<size_t>(c.M * c.N), kNaN);
  Buffer A(be, m.dtype, ar, ac, a), B(be, m.dtype, br, bc, b), C(be, out, c.M, c.N, c0);
  ops::matmul(C.view(), A.view(), B.view(), c.trans_a, c.trans_b, c.accumulate);
  return {{"c", C.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceMatmul);

TEST_P(ConformanceMatmul, EveryShapeTransposeAndAccumulate) {
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 7, 5},     {6, 1, 3},     {5, 9, 1},
                               {17, 13, 33}, {31, 64, 257}, {128, 96, 80}, {3, 130, 2}};
  for (const auto& s : shapes)
    for (int t = 0; t < 8; ++t) {
      const MatmulCase c{s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, (t & 4) != 0};
      check_conformance(
          backend(), "matmul " + c.name(),
          [&](const Backend& be, Mode m) { return run_matmul(c, be, m); },
          {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
    }
}

// y = x wᵀ + b on views; its backward is the products dx = dy w, dw += dyᵀ x and db += Σ dy.
TEST(ConformanceMatmulReference, LinearGradientsMatchFiniteDifferences) {
  const int64_t N = 3, I = 5, O = 4;
  Values x = random_values(N * I, 10, 1.0, DType::kF64),
         w = random_values(O * I, 11, 1.0, DType::kF64), b = random_values(O, 12, 1.0, DType::kF64),
         R = random_values(N * O, 13, 1.0, DType::kF64);
  Values y(N * O);
  auto f = [&] {
    ops::matmul(host_view(y, N, O), host_view(x, N, I), host_view(w, O, I), false, true, false);
    ops::add_bias(host_view(y, N, O), host_view(b, 1, O));
    return dot(y, R);
  };
  Values dx(N * I, kNaN), dw = random_values(O * I, 14, 1.0, DType::kF64),
                          db = random_values(O, 15, 1.0, DType::kF64);
  const Values dw0 = dw, db0 = db;
  ops::matmul(host_view(dx, N, I), host_view(R, N, O), host_view(w, O, I), false, false, false);
  ops::matmul(host_view(dw, O, I), host_view(R, N, O), host_view(x, N, I), true, false, true);
  ops::bias_backward(host_view(db, 1, O), host_view(R, N, O));
  EXPECT_LE(fd_error(x, f, dx), kFdTolerance);
  EXPECT_LE(fd_error(w, f, gained(dw, dw0)), kFdTolerance);
  EXPECT_LE(fd_error(b, f, gained(db, db0)), kFdTolerance);
}

}  // namespace
}  // namespace sft::conformance
