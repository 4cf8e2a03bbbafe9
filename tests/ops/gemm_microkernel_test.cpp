// ops/cpu/gemm_microkernel.h: the projection / LM-head GEMM against an fp64 product for every
// layout (A and B stored or transposed), accumulate or not, strided operands, and every
// remainder of its blocking: rows of the 6-row register block (M 1..13), columns of the 16-lane
// vectors and 64-column panels (N 1..130), and K across its 256-step slices (0, 1, 129, 255..257,
// 600); exact on small integers, within (K + slices + 1) · 2⁻²⁴ of Σ|terms| on normal values;
// nothing outside C's block written. Bit-identical on the pool and on one thread, and each
// element independent of the call's M, N and offset (the order rests on K alone). Then through
// ops::matmul under SFT_MATMUL_F32=microkernel (the path the step takes when chosen).
// Skipped where the CPU (or SFT_CPU_ISA=generic) rules AVX-512 out.
#include "ops/cpu/gemm_microkernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.h"
#include "ops/cpu/cpu_features.h"
#include "ops/ops.h"

namespace sft::ops::cpu::gemm_microkernel {
namespace {

constexpr float kGuard = -12345.0f;  // what C's padding columns hold before and after

struct Problem {
  int64_t M, N, K;
  bool ta, tb, accumulate;
  // Strides wider than the blocks, so reads or writes past a block's edge are seen.
  int64_t lda() const { return (ta ? M : K) + 3; }
  int64_t ldb() const { return (tb ? K : N) + 5; }
  int64_t ldc() const { return N + 7; }
  std::string name() const {
    return "M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) +
           (ta ? " Aᵀ" : " A") + (tb ? " Bᵀ" : " B") + (accumulate ? " +=" : " =");
  }
};

struct Operands {
  std::vector<float> a, b, c;
  float a_at(const Problem& p, int64_t m, int64_t k) const {
    return a[static_cast<size_t>(p.ta ? k * p.lda() + m : m * p.lda() + k)];
  }
  float b_at(const Problem& p, int64_t k, int64_t n) const {
    return b[static_cast<size_t>(p.tb ? n * p.ldb() + k : k * p.ldb() + n)];
  }
};

// Values: small integers (products and sums exact in fp32) or normals.
Operands make(const Problem& p, bool integers, uint64_t stream) {
  Rng rng(17, stream);
  auto value = [&] {
    const double x = rng.normal();
    return integers ? static_cast<float>(std::round(x * 3)) : static_cast<float>(x);
  };
  Operands o{std::vector<float>(static_cast<size_t>((p.ta ? p.K : p.M) * p.lda())),
             std::vector<float>(static_cast<size_t>((p.tb ? p.N : p.K) * p.ldb())),
             std::vector<float>(static_cast<size_t>(p.M * p.ldc()), kGuard)};
  for (float& x : o.a) x = value();
  for (float& x : o.b) x = value();
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) o.c[static_cast<size_t>(m * p.ldc() + n)] = value();
  return o;
}

Gemm gemm_of(const Problem& p, Operands& o) {
  return {.c = o.c.data(),
          .ldc = p.ldc(),
          .a = o.a.data(),
          .lda = p.lda(),
          .a_transposed = p.ta,
          .b = o.b.data(),
          .ldb = p.ldb(),
          .b_transposed = p.tb,
          .M = p.M,
          .N = p.N,
          .K = p.K,
          .accumulate = p.accumulate};
}

void expect_matches_reference(const Problem& p, bool integers) {
  SCOPED_TRACE(p.name() + (integers ? " integers" : " normals"));
  Operands o = make(p, integers, static_cast<uint64_t>(p.M * 100000 + p.N * 100 + p.K));
  const Operands before = o;
  gemm(gemm_of(p, o), Threads::kPool);
  int bad = 0;
  for (int64_t m = 0; m < p.M && bad < 5; ++m)
    for (int64_t n = 0; n < p.ldc() && bad < 5; ++n) {
      const float got = o.c[static_cast<size_t>(m * p.ldc() + n)];
      if (n >= p.N) {
        bad += got != kGuard;
        EXPECT_EQ(got, kGuard) << "padding (" << m << ", " << n << ") written";
        continue;
      }
      const double c0 = p.accumulate ? before.c[static_cast<size_t>(m * p.ldc() + n)] : 0.0;
      double want = c0, magnitude = std::abs(c0);
      for (int64_t k = 0; k < p.K; ++k) {
        const double t = double(before.a_at(p, m, k)) * double(before.b_at(p, k, n));
        want += t;
        magnitude += std::abs(t);
      }
      // One rounding per fused multiply-add and one per slice of 256 joining C.
      const double roundings = static_cast<double>(p.K + p.K / 256 + 2);
      const double tol = integers ? 0.0 : roundings * 0x1p-24 * magnitude;
      const bool ok = std::abs(double(got) - want) <= tol;
      bad += !ok;
      EXPECT_TRUE(ok) << "C(" << m << ", " << n << ") = " << got << ", want " << want;
    }
}

class GemmMicrokernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!use_avx512()) GTEST_SKIP() << "no AVX-512 here (or SFT_CPU_ISA=generic)";
  }
};

TEST_F(GemmMicrokernel, MatchesFp64OnEveryBlockRemainder) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool accumulate : {false, true})
        for (int64_t M = 1; M <= 13; ++M)
          for (int64_t N : {1, 2, 15, 16, 17, 31, 48, 63, 64, 65, 127, 130})
            for (int64_t K : {0, 1, 129})
              for (bool integers : {true, false})
                expect_matches_reference({M, N, K, ta, tb, accumulate}, integers);
}

TEST_F(GemmMicrokernel, MatchesFp64AcrossSlicesOfKAndRunsOfColumns) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      for (bool accumulate : {false, true})
        for (int64_t K : {255, 256, 257, 600})
          expect_matches_reference({7, 33, K, ta, tb, accumulate}, false);
      // N past a run of 512 columns; M past a run of 240 rows.
      expect_matches_reference({20, 600, 40, ta, tb, false}, false);
      expect_matches_reference({250, 70, 300, ta, tb, true}, false);
    }
}

// Every element's sum runs in an order fixed by K: the pool (any partition) and one thread give
// the same bits, and a call over a sub-block (other M, N, offsets, masks) gives them too.
TEST_F(GemmMicrokernel, BitIdenticalForAnyPartitionAndBlocking) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Problem whole{37, 700, 260, ta, tb, true};
      SCOPED_TRACE(whole.name());
      Operands pool = make(whole, false, 5);
      Operands caller = pool, part = pool;
      gemm(gemm_of(whole, pool), Threads::kPool);
      gemm(gemm_of(whole, caller), Threads::kCaller);
      ASSERT_EQ(pool.c, caller.c);
      const int64_t m0 = 7, n0 = 77, M = 11, N = 150;
      Gemm g = gemm_of(whole, part);
      g.c += m0 * whole.ldc() + n0;
      g.a += ta ? m0 : m0 * whole.lda();
      g.b += tb ? n0 * whole.ldb() : n0;
      g.M = M;
      g.N = N;
      gemm(g, Threads::kPool);
      for (int64_t m = m0; m < m0 + M; ++m)
        for (int64_t n = n0; n < n0 + N; ++n) {
          const size_t i = static_cast<size_t>(m * whole.ldc() + n);
          ASSERT_EQ(part.c[i], pool.c[i]) << "(" << m << ", " << n << ")";
        }
    }
}

// ops::matmul<float> with SFT_MATMUL_F32=microkernel (ctest ops.matmul_microkernel sets it):
// the default strides resolved, pool and caller threads, the same bits as a direct call.
TEST_F(GemmMicrokernel, IsWhatOpsMatmulRunsWhenChosen) {
  const char* chosen = std::getenv("SFT_MATMUL_F32");
  if (!chosen || std::string(chosen) != "microkernel")
    GTEST_SKIP() << "SFT_MATMUL_F32=microkernel not set (ctest ops.matmul_microkernel sets it)";
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool parallel : {false, true}) {
        const int64_t M = 45, N = 130, K = 300;
        Rng rng(3, static_cast<uint64_t>(ta * 2 + tb));
        std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N)),
            c(static_cast<size_t>(M * N));
        for (float& x : a) x = static_cast<float>(rng.normal());
        for (float& x : b) x = static_cast<float>(rng.normal());
        for (float& x : c) x = static_cast<float>(rng.normal());
        std::vector<float> direct = c;
        ops::matmul(c.data(), a.data(), b.data(), M, N, K, ta, tb, true, 0, 0, 0, parallel);
        gemm({direct.data(), N, a.data(), ta ? M : K, ta, b.data(), tb ? K : N, tb, M, N, K, true},
             Threads::kCaller);
        EXPECT_EQ(c, direct) << "ta " << ta << " tb " << tb << " parallel " << parallel;
      }
}

}  // namespace
}  // namespace sft::ops::cpu::gemm_microkernel
