// Conformance of ops::rope_forward / rope_backward on views (in place on x (T, NH·D) with cos,
// sin (T, R/2), R = D or fewer: partial rotary): f32 against the f64 CPU run, and the f64
// backward against finite differences.
//
// Tolerance (max |err| / max |ref|), f32: 1e-5 (two products and a sum per element).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct RopeCase {
  int64_t T, NH, D;
  int64_t R = 0;  // rotary dims, 0 = D
  int64_t rotary() const { return R > 0 ? R : D; }
};

// The rotary tables of positions 0..T-1 (base 100), scaled by 1.1 as an attention scaling ≠ 1.
void rope_tables(const RopeCase& c, DType grid, Values* cs, Values* sn) {
  const int64_t half = c.rotary() / 2;
  cs->assign(static_cast<size_t>(c.T * half), 0);
  sn->assign(cs->size(), 0);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const double a = double(t + 3) * std::pow(100.0, -double(i) / double(half));
      (*cs)[t * half + i] = round_to(1.1 * std::cos(a), grid);
      (*sn)[t * half + i] = round_to(1.1 * std::sin(a), grid);
    }
}

Outputs run_rope(const RopeCase& c, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(c.T * c.NH * c.D);
  Values cs, sn;
  rope_tables(c, m.grid, &cs, &sn);
  Buffer X(be, m.dtype, c.T, c.NH * c.D, random_values(n, 1, 1.0, m.grid));
  Buffer DX(be, m.dtype, c.T, c.NH * c.D, random_values(n, 2, 1.0, m.grid));
  Buffer COS(be, m.dtype, c.T, c.rotary() / 2, cs), SIN(be, m.dtype, c.T, c.rotary() / 2, sn);
  ops::rope_forward(X.view(), COS.view(), SIN.view(), c.D);
  ops::rope_backward(DX.view(), COS.view(), SIN.view(), c.D);
  return {{"x", X.read()}, {"dx", DX.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceRope);

TEST_P(ConformanceRope, ForwardAndBackward) {
  // The last two are partial rotary (Phi-4-mini: 96 of 128).
  const RopeCase cases[] = {{1, 1, 2},   {5, 3, 8}, {7, 2, 64},   {3, 5, 6},
                            {2, 4, 128}, {9, 1, 2}, {5, 3, 8, 4}, {2, 4, 128, 96}};
  for (const RopeCase& c : cases)
    check_conformance(
        backend(),
        "rope T=" + std::to_string(c.T) + " NH=" + std::to_string(c.NH) +
            " D=" + std::to_string(c.D) + " R=" + std::to_string(c.rotary()),
        [&](const Backend& be, Mode m) { return run_rope(c, be, m); }, {DType::kF32},
        uniform_tolerance(1e-5));
}

TEST(ConformanceRopeReference, BackwardMatchesFiniteDifferences) {
  for (const RopeCase& c : {RopeCase{1, 1, 2}, RopeCase{4, 3, 6}}) {
    const int64_t cols = c.NH * c.D;
    Values x = random_values(c.T * cols, 3, 1.0, DType::kF64), cs, sn;
    const Values R = random_values(x.size(), 4, 1.0, DType::kF64);
    rope_tables(c, DType::kF64, &cs, &sn);
    auto f = [&] {
      Values y = x;
      ops::rope_forward(host_view(y, c.T, cols), host_view(cs, c.T, c.D / 2),
                        host_view(sn, c.T, c.D / 2));
      return dot(y, R);
    };
    Values dx = R;
    ops::rope_backward(host_view(dx, c.T, cols), host_view(cs, c.T, c.D / 2),
                       host_view(sn, c.T, c.D / 2));
    EXPECT_LE(fd_error(x, f, dx), kFdTolerance) << "D=" << c.D;
  }
}

}  // namespace
}  // namespace sft::conformance
