// Conformance of the optimizer's view ops, which exist in f32 only (no f64 kernel to compare
// with): adamw_update against AdamW's element update written out in f64 in this file,
// sum_of_squares against an f64 sum, scale bit-exact against the f32 product.
//
// Tolerances (max |err| / max |ref|): adamw_update 1e-6 for exp_avg and exp_avg_sq, 1e-4 for the
// parameter's change p_new − p_old (the new p is rounded to f32 at |p|, ~1e3 × the change);
// sum_of_squares 1e-12 (f32 squares summed in double); scale exact.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

// The scalars optim/adamw.h derives for lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay
// 0.01 at step 3 (torch: bias corrections, step size lr / bc1, lerp weight 1 − β1).
ops::AdamWScalars scalars(bool decay) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, wd = 0.01, step = 3;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  return {float(-lr / bc1), float(std::sqrt(bc2)), 1e-8f, float(1 - b1), float(b2),
          float(1 - b2),    float(1 - lr * wd),    decay};
}

SFT_CONFORMANCE_SUITE(ConformanceOptimizer);

TEST_P(ConformanceOptimizer, AdamWUpdate) {
  {
    const Backend& be = backend();
    for (int64_t n : {1, 7, 40000})
      for (bool decay : {false, true}) {
        SCOPED_TRACE(std::string(be.name) + " n=" + std::to_string(n) + (decay ? " decay" : ""));
        const ops::AdamWScalars k = scalars(decay);
        const Values p0 = random_values(n, 1, 1.0, DType::kF32);
        const Values g = random_values(n, 2, 1.0, DType::kF32);
        const Values m0 = random_values(n, 3, 0.1, DType::kF32);
        Values v0 = random_values(n, 4, 0.01, DType::kF32);
        for (double& x : v0) x = round_to(x * x, DType::kF32);
        Buffer P(be, DType::kF32, 1, n, p0), G(be, DType::kF32, 1, n, g),
            M(be, DType::kF32, 1, n, m0), V(be, DType::kF32, 1, n, v0);
        ops::adamw_update(P.view(), G.view(), M.view(), V.view(), k);
        Values dp(n), m(n), v(n), dp_got = gained(P.read(), p0);
        for (int64_t i = 0; i < n; ++i) {
          const double p = decay ? p0[i] * k.decay_factor : p0[i];
          m[i] = m0[i] + k.lerp_weight * (g[i] - m0[i]);
          v[i] = v0[i] * k.beta2 + k.one_minus_beta2 * g[i] * g[i];
          dp[i] = p + k.neg_step_size * m[i] / (std::sqrt(v[i]) / k.bc2_sqrt + k.eps) - p0[i];
        }
        EXPECT_LE(relative_error(M.read(), m), 1e-6) << "exp_avg";
        EXPECT_LE(relative_error(V.read(), v), 1e-6) << "exp_avg_sq";
        EXPECT_LE(relative_error(dp_got, dp), 1e-4) << "param change";
      }
  }
}

TEST_P(ConformanceOptimizer, SumOfSquaresAndScale) {
  {
    const Backend& be = backend();
    for (int64_t n : {1, 13, 70000}) {
      SCOPED_TRACE(std::string(be.name) + " n=" + std::to_string(n));
      const Values x = random_values(n, 5, 3.0, DType::kF32);
      Buffer X(be, DType::kF32, 1, n, x);
      double want = 0;
      for (double e : x) want += e * e;
      EXPECT_LE(std::abs(ops::sum_of_squares(X.view()) - want), 1e-12 * want);
      ops::scale(X.view(), 0.37f);
      const Values got = X.read();
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], double(float(x[i]) * 0.37f)) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace sft::conformance
