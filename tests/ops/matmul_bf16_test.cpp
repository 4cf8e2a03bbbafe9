// ops::matmul_bf16 (oneDNN) against an fp64 loop over the same bf16 values: every transpose,
// padded strides, accumulate, odd and degenerate sizes (1 and 0); reruns bit-identical; C is
// not read without accumulate; repeated shapes reuse one cached primitive. The ctests
// ops.matmul_isa_* rerun these with ONEDNN_MAX_CPU_ISA=AVX2 (no AVX-512: the widening path) and
// AVX512_CORE_BF16 (no AMX).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/ops.h"

namespace sft::ops {
namespace {

struct Case {
  bool ta, tb, acc;
  int64_t M, N, K, pad;
};

std::vector<uint16_t> random_bf16(size_t n, Rng& rng) {
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = f32_to_bf16(rng.normal());
  return v;
}

void check(const Case& t) {
  Rng rng(23, static_cast<uint64_t>(t.M * 1000003 + t.N * 1009 + t.K * 7 + t.ta * 4 + t.tb * 2 +
                                    t.acc));
  const int64_t ra = t.ta ? t.K : t.M, ca = t.ta ? t.M : t.K;
  const int64_t rb = t.tb ? t.N : t.K, cb = t.tb ? t.K : t.N;
  const int64_t lda = ca + t.pad, ldb = cb + t.pad, ldc = t.N + t.pad;
  // +1 keeps the buffers non-empty for zero sizes, so data() is never null.
  const std::vector<uint16_t> a = random_bf16(static_cast<size_t>(ra * lda + 1), rng);
  const std::vector<uint16_t> b = random_bf16(static_cast<size_t>(rb * ldb + 1), rng);
  std::vector<float> c(static_cast<size_t>(t.M * ldc + 1));
  for (float& x : c) x = t.acc ? rng.normal() : std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> before = c;

  std::vector<float> again = c;
  matmul_bf16(c.data(), a.data(), b.data(), t.M, t.N, t.K, t.ta, t.tb, t.acc, lda, ldb, ldc);
  matmul_bf16(again.data(), a.data(), b.data(), t.M, t.N, t.K, t.ta, t.tb, t.acc, lda, ldb, ldc);

  for (int64_t i = 0; i < t.M; ++i) {
    for (int64_t j = 0; j < t.N; ++j) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < t.K; ++k) {
        const double p = double(bf16_to_f32(t.ta ? a[k * lda + i] : a[i * lda + k])) *
                         double(bf16_to_f32(t.tb ? b[j * ldb + k] : b[k * ldb + j]));
        s += p;
        mag += std::fabs(p);
      }
      const double c0 = t.acc ? double(before[i * ldc + j]) : 0.0;
      // fp32 accumulation of K products (any order, pairwise or blocked): |err| ≤ K·u·Σ|ab|.
      const double tol = (double(t.K) + 2) * 6e-8 * (mag + std::fabs(c0)) + 1e-30;
      ASSERT_NEAR(c[i * ldc + j], c0 + s, tol)
          << "ta " << t.ta << " tb " << t.tb << " acc " << t.acc << " " << t.M << "x" << t.N << "x"
          << t.K << " at " << i << "," << j;
    }
    for (int64_t j = t.N; j < ldc; ++j)  // padding columns untouched
      ASSERT_EQ(std::bit_cast<uint32_t>(c[i * ldc + j]),
                std::bit_cast<uint32_t>(before[i * ldc + j]));
  }
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(c[i]), std::bit_cast<uint32_t>(again[i])) << "rerun " << i;
}

TEST(MatmulBf16, MatchesFp64ForEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        check({ta, tb, acc, 70, 90, 80, 3});
        check({ta, tb, acc, 37, 29, 41, 0});
        check({ta, tb, acc, 1, 1, 1, 0});
        check({ta, tb, acc, 1, 33, 17, 5});
        check({ta, tb, acc, 19, 1, 64, 2});
        check({ta, tb, acc, 130, 66, 1, 1});
      }
}

TEST(MatmulBf16, LargeInnerDimension) {
  // Long K exercises the kernels' K blocking (and AMX tile K steps of 32).
  check({false, true, false, 64, 48, 1537, 0});
  check({true, false, true, 48, 64, 1025, 0});
}

TEST(MatmulBf16, DegenerateSizes) {
  for (bool acc : {false, true}) {
    check({false, false, acc, 0, 5, 3, 0});
    check({false, false, acc, 4, 0, 3, 0});
    check({false, true, acc, 4, 5, 0, 2});  // K = 0: C zeroed, or kept when accumulating
  }
}

TEST(MatmulBf16, RepeatedShapesReuseOnePrimitive) {
  std::vector<uint16_t> a(12 * 20, f32_to_bf16(1.0f)), b(20 * 8, f32_to_bf16(0.5f));
  std::vector<float> c(12 * 8);
  matmul_bf16(c.data(), a.data(), b.data(), 12, 8, 20, false, false, false);
  const size_t cached = onednn::cached_primitives();
  for (int r = 0; r < 3; ++r)
    matmul_bf16(c.data(), a.data(), b.data(), 12, 8, 20, false, false, false);
  EXPECT_EQ(onednn::cached_primitives(), cached);
  for (float x : c) EXPECT_EQ(x, 10.0f);
}

}  // namespace
}  // namespace sft::ops
