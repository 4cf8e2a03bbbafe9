// The bf16 LM head's products on AMX tiles (ops/cpu/lm_head_amx.h) against f64 products of the
// same bf16 values: the bf16 logits X Wᵀ (within half a bf16 ulp of the exact product) and dX
// (=, +=) dZ_b W_b, at sizes that leave partial tiles in every dimension, several column panels
// and K beyond 2048 (C 2100 for the logits, a block of 2100 vocabulary rows for dX). Skipped
// without AMX (the caller never runs them).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/half.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/lm_head_amx.h"
#include "ops/random_bf16.h"

namespace sft::ops {
namespace {

double at(const std::vector<uint16_t>& v, int64_t i) {
  return bf16_to_f32(v[static_cast<size_t>(i)]);
}

TEST(LmHeadAmx, LogitsAreTheProductRoundedToBf16) {
  if (!cpu::use_amx()) GTEST_SKIP() << "no AMX";
  // V 500 at C 2100: two whole column panels of 224 and a partial one; 35 of X's 37 rows stored.
  const int64_t M = 37, rows = 35, C = 2100, V = 500, ldz = V + 5;
  const std::vector<uint16_t> x = random_bf16(M * C, 1), w = random_bf16(V * C, 2);
  const uint16_t untouched = f32_to_bf16(-7.0f);
  std::vector<uint16_t> z(static_cast<size_t>(M * ldz), untouched);
  cpu::lm_head_logits_bf16_amx(z.data(), ldz, cpu::pack_lm_head_rows(x.data(), M, C), rows,
                               w.data(), V, C);
  double worst = 0;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < V; ++n) {
      double ref = 0, scale = 0;
      for (int64_t k = 0; k < C; ++k) {
        ref += at(x, m * C + k) * at(w, n * C + k);
        scale += std::fabs(at(x, m * C + k) * at(w, n * C + k));
      }
      // bf16 keeps 8 bits: half an ulp of the value, plus the fp32 sum's error.
      const double bound = std::fabs(ref) * std::ldexp(1.0, -8) + scale * 1e-5;
      worst = std::max(worst, std::fabs(at(z, m * ldz + n) - ref) / bound);
    }
  EXPECT_LE(worst, 1.0);
  for (int64_t m = 0; m < M; ++m)  // columns past V, and the rows past `rows`, untouched
    for (int64_t n = m < rows ? V : 0; n < ldz; ++n)
      EXPECT_EQ(z[static_cast<size_t>(m * ldz + n)], untouched) << m << ", " << n;
}

TEST(LmHeadAmx, InputGradientSumsTheBlocksProduct) {
  if (!cpu::use_amx()) GTEST_SKIP() << "no AMX";
  const int64_t M = 37, C = 90, nb = 2100, ld_dz = nb + 3;
  const std::vector<uint16_t> dz = random_bf16(M * ld_dz, 3), w = random_bf16(nb * C, 4);
  for (const bool accumulate : {false, true}) {
    std::vector<float> dx(static_cast<size_t>(M * C), 0.5f);
    cpu::lm_head_dx_amx(dx.data(), dz.data(), ld_dz, M, nb, w.data(), C, accumulate);
    double worst = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) {
        double ref = accumulate ? 0.5 : 0.0, scale = 0.5;
        for (int64_t v = 0; v < nb; ++v) {
          ref += at(dz, m * ld_dz + v) * at(w, v * C + c);
          scale += std::fabs(at(dz, m * ld_dz + v) * at(w, v * C + c));
        }
        worst = std::max(worst, std::fabs(dx[static_cast<size_t>(m * C + c)] - ref) / scale);
      }
    EXPECT_LT(worst, 1e-5) << "accumulate " << accumulate;
  }
}

}  // namespace
}  // namespace sft::ops
