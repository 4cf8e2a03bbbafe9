// Conformance of ops::rmsnorm_forward / rmsnorm_backward on views (f32 against the f64 CPU run),
// the forward's bf16 out (x, w, rstd f32), ops::add_rmsnorm_forward (the residual add fused in,
// and its bits against the two ops), and of the f64 backward against f64 central finite
// differences.
//
// Tolerances (max |err| / max |ref|), f32: 1e-5 for out, rstd, dx and dw (dw sums N rows).
#include <gtest/gtest.h>

#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct RmsNormCase {
  int64_t N, C;
  double x_scale, eps;
};

// Forward, then backward of the forward's saved rstd with a random dout; dw starts non-zero
// (it accumulates), dx as NaN (it is overwritten).
Outputs run_rmsnorm(const RmsNormCase& c, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(c.N * c.C);
  const Values x = random_values(n, 1, c.x_scale, m.grid);
  const Values w = random_values(static_cast<size_t>(c.C), 2, 1.0, m.grid);
  const Values dout = random_values(n, 3, 1.0, m.grid);
  const Values dw0 = random_values(static_cast<size_t>(c.C), 4, kAccumulateStart, m.grid);
  Buffer X(be, m.dtype, c.N, c.C, x), W(be, m.dtype, 1, c.C, w), DO(be, m.dtype, c.N, c.C, dout);
  Buffer O(be, m.dtype, c.N, c.C, Values(n, kNaN)), R(be, m.dtype, c.N, 1, Values(c.N, kNaN));
  Buffer DX(be, m.dtype, c.N, c.C, Values(n, kNaN)), DW(be, m.dtype, 1, c.C, dw0);
  ops::rmsnorm_forward(O.view(), R.view(), X.view(), W.view(), c.eps);
  ops::rmsnorm_backward(DX.view(), DW.view(), DO.view(), X.view(), R.view(), W.view());
  return {{"out", O.read()}, {"rstd", R.read()}, {"dx", DX.read()}, {"dw", DW.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceRmsNorm);

TEST_P(ConformanceRmsNorm, ForwardAndBackward) {
  // C = 1 with |x| ≈ 1 is ill-conditioned (dx = w·dout·rstd·eps / (x² + eps) cancels to ~eps),
  // so that case uses |x| ≈ 1e-3, where x² ≈ eps; the last case has mean(x²) ≈ eps too.
  const RmsNormCase cases[] = {{1, 1, 1e-3, 1e-6}, {1, 7, 1.0, 1e-6},    {5, 7, 3.0, 1e-5},
                               {3, 2, 1.0, 1e-6},  {33, 130, 0.1, 1e-6}, {4, 1027, 1.0, 1e-6},
                               {2, 64, 1e-3, 1e-6}};
  for (const RmsNormCase& c : cases)
    check_conformance(
        backend(), "rmsnorm (" + std::to_string(c.N) + ", " + std::to_string(c.C) + ")",
        [&](const Backend& be, Mode m) { return run_rmsnorm(c, be, m); }, {DType::kF32},
        uniform_tolerance(1e-5));
}

// A frozen weight (LoRA's norms): an empty dw, no weight gradient, and dx the same bits as with
// one.
TEST_P(ConformanceRmsNorm, FrozenWeightLeavesDxUnchanged) {
  const RmsNormCase c{33, 130, 1.0, 1e-6};
  const size_t n = static_cast<size_t>(c.N * c.C);
  const Backend& be = backend();
  Buffer X(be, DType::kF32, c.N, c.C, random_values(n, 1, c.x_scale, DType::kF32));
  Buffer W(be, DType::kF32, 1, c.C, random_values(static_cast<size_t>(c.C), 2, 1.0, DType::kF32));
  Buffer DO(be, DType::kF32, c.N, c.C, random_values(n, 3, 1.0, DType::kF32));
  Buffer O(be, DType::kF32, c.N, c.C, Values(n, kNaN)),
      R(be, DType::kF32, c.N, 1, Values(c.N, kNaN));
  Buffer DW(be, DType::kF32, 1, c.C, Values(static_cast<size_t>(c.C), 0.0));
  Buffer trained(be, DType::kF32, c.N, c.C, Values(n, kNaN));
  Buffer frozen(be, DType::kF32, c.N, c.C, Values(n, kNaN));
  ops::rmsnorm_forward(O.view(), R.view(), X.view(), W.view(), c.eps);
  ops::rmsnorm_backward(trained.view(), DW.view(), DO.view(), X.view(), R.view(), W.view());
  ops::rmsnorm_backward(frozen.view(), ops::View{}, DO.view(), X.view(), R.view(), W.view());
  EXPECT_EQ(frozen.read(), trained.read());
}

// The forward with a bf16 out (bf16 compute's ln1 / ln2): x, w and rstd f32 on the bf16 grid,
// out rounded as it is stored. Tolerance: out one bf16 rounding (2⁻⁸ relative), rstd as f32.
Outputs run_rmsnorm_bf16_out(const RmsNormCase& c, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(c.N * c.C);
  const DType f = m.reference() ? DType::kF64 : DType::kF32;
  const DType out = m.reference() ? DType::kF64 : DType::kBF16;
  Buffer X(be, f, c.N, c.C, random_values(n, 1, c.x_scale, m.grid));
  Buffer W(be, f, 1, c.C, random_values(static_cast<size_t>(c.C), 2, 1.0, m.grid));
  Buffer O(be, out, c.N, c.C, Values(n, kNaN)), R(be, f, c.N, 1, Values(c.N, kNaN));
  ops::rmsnorm_forward(O.view(), R.view(), X.view(), W.view(), c.eps);
  return {{"out", O.read()}, {"rstd", R.read()}};
}

TEST_P(ConformanceRmsNorm, Bf16Out) {
  const RmsNormCase cases[] = {{1, 7, 1.0, 1e-6}, {33, 130, 0.1, 1e-6}, {4, 1027, 1.0, 1e-6}};
  for (const RmsNormCase& c : cases)
    check_conformance(
        backend(), "rmsnorm bf16 out (" + std::to_string(c.N) + ", " + std::to_string(c.C) + ")",
        [&](const Backend& be, Mode m) { return run_rmsnorm_bf16_out(c, be, m); }, {DType::kBF16},
        [](DType, const std::string& o) { return o == "out" ? 4e-3 : 1e-5; });
}

// The residual add fused with the norm after it (the decoder layer's x_mid, ln2): sum = a + b,
// out and rstd from sum; out f32, or bf16 as under bf16 compute. Tolerances as above; sum is
// one f32 rounding of the exact sum.
Outputs run_add_rmsnorm(const RmsNormCase& c, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(c.N * c.C);
  const DType f = m.reference() ? DType::kF64 : DType::kF32;
  const DType out = m.reference() ? DType::kF64 : m.dtype;
  Buffer A(be, f, c.N, c.C, random_values(n, 1, c.x_scale, m.grid));
  Buffer B(be, f, c.N, c.C, random_values(n, 2, c.x_scale, m.grid));
  Buffer W(be, f, 1, c.C, random_values(static_cast<size_t>(c.C), 3, 1.0, m.grid));
  Buffer S(be, f, c.N, c.C, Values(n, kNaN)), O(be, out, c.N, c.C, Values(n, kNaN));
  Buffer R(be, f, c.N, 1, Values(c.N, kNaN));
  ops::add_rmsnorm_forward(S.view(), O.view(), R.view(), A.view(), B.view(), W.view(), c.eps);
  return {{"sum", S.read()}, {"out", O.read()}, {"rstd", R.read()}};
}

TEST_P(ConformanceRmsNorm, AddThenNormFused) {
  // 33 rows: two 16-row blocks and a tail in one pool chunk.
  const RmsNormCase cases[] = {{1, 7, 1.0, 1e-6}, {33, 130, 0.1, 1e-6}, {40, 1027, 1.0, 1e-6}};
  for (const RmsNormCase& c : cases)
    check_conformance(
        backend(), "add_rmsnorm (" + std::to_string(c.N) + ", " + std::to_string(c.C) + ")",
        [&](const Backend& be, Mode m) { return run_add_rmsnorm(c, be, m); },
        {DType::kF32, DType::kBF16},
        [](DType dt, const std::string& o) {
          return dt == DType::kBF16 && o == "out" ? 4e-3 : 1e-5;
        });
}

// Fused or not, the same bits: x_mid and ln2 of a layer do not depend on the fusion.
TEST_P(ConformanceRmsNorm, AddThenNormIsTheTwoOpsBitForBit) {
  const int64_t N = 37, C = 96;
  const size_t n = static_cast<size_t>(N * C);
  for (const DType out : {DType::kF32, DType::kBF16}) {
    Buffer A(backend(), DType::kF32, N, C, random_values(n, 4, 1.0, DType::kF32));
    Buffer B(backend(), DType::kF32, N, C, random_values(n, 5, 1.0, DType::kF32));
    Buffer W(backend(), DType::kF32, 1, C,
             random_values(static_cast<size_t>(C), 6, 1.0, DType::kF32));
    Buffer S(backend(), DType::kF32, N, C, Values(n, kNaN)),
        O(backend(), out, N, C, Values(n, kNaN));
    Buffer R(backend(), DType::kF32, N, 1, Values(N, kNaN));
    ops::add_rmsnorm_forward(S.view(), O.view(), R.view(), A.view(), B.view(), W.view(), 1e-6);
    Buffer O2(backend(), out, N, C, Values(n, kNaN)),
        R2(backend(), DType::kF32, N, 1, Values(N, kNaN));
    ops::add(A.view(), B.view());  // a += b: the unfused layer's x_mid
    ops::rmsnorm_forward(O2.view(), R2.view(), A.view(), W.view(), 1e-6);
    EXPECT_TRUE(bit_identical(S.read(), A.read()));
    EXPECT_TRUE(bit_identical(O.read(), O2.read()));
    EXPECT_TRUE(bit_identical(R.read(), R2.read()));
  }
}

void check_rmsnorm_fd(int64_t N, int64_t C) {
  SCOPED_TRACE("rmsnorm fd (" + std::to_string(N) + ", " + std::to_string(C) + ")");
  Values x = random_values(N * C, 5, 1.0, DType::kF64), w = random_values(C, 6, 1.0, DType::kF64);
  const Values R = random_values(N * C, 7, 1.0, DType::kF64);
  Values out(N * C), rstd(N);
  auto f = [&] {
    ops::rmsnorm_forward(host_view(out, N, C), host_view(rstd, N, 1), host_view(x, N, C),
                         host_view(w, 1, C), 1e-6);
    return dot(out, R);
  };
  f();
  const Values dw0 = random_values(C, 8, 1.0, DType::kF64);
  Values dx(N * C, kNaN), dw = dw0, dout = R;
  ops::rmsnorm_backward(host_view(dx, N, C), host_view(dw, 1, C), host_view(dout, N, C),
                        host_view(x, N, C), host_view(rstd, N, 1), host_view(w, 1, C));
  EXPECT_LE(fd_error(x, f, dx), kFdTolerance);
  EXPECT_LE(fd_error(w, f, gained(dw, dw0)), kFdTolerance);
}

TEST(ConformanceRmsNormReference, BackwardMatchesFiniteDifferences) {
  check_rmsnorm_fd(1, 7);
  check_rmsnorm_fd(5, 7);
  check_rmsnorm_fd(3, 2);
}

}  // namespace
}  // namespace sft::conformance
