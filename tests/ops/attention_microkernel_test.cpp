// ops/cpu/attention_microkernel.h: the AVX-512 tile product and transpose of the tiled fp32
// attention. gemm against an fp64 product for every remainder of the 6 × 64 register block
// (M 1..13, N 1..130, K 0..130), both layouts of A, accumulate or not, C's rows scaled or not,
// strided operands: exact on small integers (every partial sum representable), within
// (K + 1) · 2⁻²⁴ of Σ|terms| of the fp64 value on normal values; no element outside C's block
// written; each element's result independent of the call's M and N (the fixed order the
// attention's thread-count stability rests on); the causal skips give the whole product's bits
// wherever the diagonal's zeros make them lawful. transpose exact for every edge shape. Skipped
// where the CPU (or SFT_CPU_ISA=generic) rules AVX-512 out.
#include "ops/cpu/attention_microkernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "ops/cpu/cpu_features.h"

namespace sft::ops::cpu::attention_microkernel {
namespace {

constexpr float kGuard = -12345.0f;  // what the padding around C holds before and after

struct Problem {
  int64_t M, N, K;
  ALayout layout;
  bool accumulate;
  bool scaled = false;  // C's rows scaled (with accumulate)
  // Strides wider than the blocks, so reads or writes past a block's edge are seen.
  int64_t lda() const { return (layout == ALayout::kRows ? K : M) + 3; }
  int64_t ldb() const { return N + 5; }
  int64_t ldc() const { return N + 7; }
  std::string name() const {
    return "M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) +
           (layout == ALayout::kRows ? " rows" : " columns") + (accumulate ? " +=" : " =") +
           (scaled ? " scaled" : "");
  }
};

struct Operands {
  std::vector<float> a, b, c;  // c (M, ldc), its padding columns holding kGuard
  std::vector<float> scale;    // (M) C's row scales
};

// Values: small integers (products and sums exact in fp32) or normals.
Operands make(const Problem& p, bool integers, uint64_t stream) {
  Rng rng(11, stream);
  auto value = [&] {
    const double x = rng.normal();
    return integers ? static_cast<float>(std::round(x * 3)) : static_cast<float>(x);
  };
  const int64_t a_rows = p.layout == ALayout::kRows ? p.M : p.K;
  Operands o{std::vector<float>(static_cast<size_t>(a_rows * p.lda())),
             std::vector<float>(static_cast<size_t>(p.K * p.ldb())),
             std::vector<float>(static_cast<size_t>(p.M * p.ldc()), kGuard),
             std::vector<float>(static_cast<size_t>(p.M))};
  for (float& x : o.scale) x = integers ? 2.0f : static_cast<float>(std::exp(-rng.uniform()));
  for (float& x : o.a) x = value();
  for (float& x : o.b) x = value();
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) o.c[static_cast<size_t>(m * p.ldc() + n)] = value();
  return o;
}

float a_at(const Problem& p, const Operands& o, int64_t m, int64_t k) {
  return o.a[static_cast<size_t>(p.layout == ALayout::kRows ? m * p.lda() + k : k * p.lda() + m)];
}

// fp64 C, and Σ|a·b| per element for the rounding bound.
void reference(const Problem& p, const Operands& o, std::vector<double>& c,
               std::vector<double>& magnitude) {
  c.assign(static_cast<size_t>(p.M * p.N), 0.0);
  magnitude.assign(c.size(), 0.0);
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) {
      const double c0 = !p.accumulate ? 0.0
                        : p.scaled ? static_cast<double>(o.c[static_cast<size_t>(m * p.ldc() + n)] *
                                                         o.scale[static_cast<size_t>(m)])
                                   : o.c[static_cast<size_t>(m * p.ldc() + n)];
      double sum = c0, mag = std::abs(c0);
      for (int64_t k = 0; k < p.K; ++k) {
        const double t = static_cast<double>(a_at(p, o, m, k)) *
                         static_cast<double>(o.b[static_cast<size_t>(k * p.ldb() + n)]);
        sum += t;
        mag += std::abs(t);
      }
      c[static_cast<size_t>(m * p.N + n)] = sum;
      magnitude[static_cast<size_t>(m * p.N + n)] = mag;
    }
}

void run(const Problem& p, Operands& o, Skip skip = Skip::kNothing, int64_t diagonal = 0) {
  gemm({.c = o.c.data(),
        .ldc = p.ldc(),
        .a = o.a.data(),
        .lda = p.lda(),
        .a_layout = p.layout,
        .b = o.b.data(),
        .ldb = p.ldb(),
        .M = p.M,
        .N = p.N,
        .K = p.K,
        .accumulate = p.accumulate,
        .c_row_scale = p.scaled ? o.scale.data() : nullptr,
        .skip = skip,
        .diagonal = diagonal});
}

void expect_matches_reference(const Problem& p, bool integers) {
  SCOPED_TRACE(p.name() + (integers ? " integers" : " normals"));
  Operands o = make(p, integers, static_cast<uint64_t>(p.M * 1000 + p.N * 10 + p.K));
  std::vector<double> want, magnitude;
  reference(p, o, want, magnitude);
  run(p, o);
  int bad = 0;
  for (int64_t m = 0; m < p.M && bad < 5; ++m) {
    for (int64_t n = 0; n < p.ldc() && bad < 5; ++n) {
      const float got = o.c[static_cast<size_t>(m * p.ldc() + n)];
      if (n >= p.N) {
        bad += got != kGuard;
        EXPECT_EQ(got, kGuard) << "padding (" << m << ", " << n << ") written";
        continue;
      }
      const size_t i = static_cast<size_t>(m * p.N + n);
      // One rounding per fused multiply-add: at most (K + 1) · 2⁻²⁴ of Σ|terms| in all.
      const double tol = integers ? 0.0 : static_cast<double>(p.K + 1) * 0x1p-24 * magnitude[i];
      const bool ok = std::abs(static_cast<double>(got) - want[i]) <= tol;
      bad += !ok;
      EXPECT_TRUE(ok) << "C(" << m << ", " << n << ") = " << got << ", want " << want[i];
    }
  }
}

class AttentionMicrokernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!use_avx512()) GTEST_SKIP() << "no AVX-512 here (or SFT_CPU_ISA=generic)";
  }
};

TEST_F(AttentionMicrokernel, GemmMatchesFp64OnEveryBlockRemainder) {
  for (ALayout layout : {ALayout::kRows, ALayout::kColumns})
    for (bool accumulate : {false, true})
      for (int64_t M : {1, 5, 6, 7, 13})
        for (int64_t N : {1, 15, 16, 17, 48, 64, 65, 130})
          for (int64_t K : {0, 1, 7, 64, 130})
            for (bool integers : {true, false})
              expect_matches_reference({M, N, K, layout, accumulate}, integers);
}

TEST_F(AttentionMicrokernel, GemmScalesRowsOfCBeforeTheSum) {
  for (int64_t M : {1, 6, 13})
    for (int64_t N : {16, 70})
      for (bool integers : {true, false})
        expect_matches_reference({M, N, 33, ALayout::kRows, true, true}, integers);
}

// The attention's shapes: S (128 × 64 over D 128), P·V (128 × 128 over 64), dV (64 × 128 over
// 128 with Pᵀ).
TEST_F(AttentionMicrokernel, GemmMatchesFp64OnTheTileShapes) {
  expect_matches_reference({128, 64, 128, ALayout::kRows, false}, false);
  expect_matches_reference({128, 128, 64, ALayout::kRows, true, true}, false);
  expect_matches_reference({64, 128, 128, ALayout::kColumns, true}, false);
}

// A C element's value depends on its own row of A and column of B alone: a call over a sub-block
// (another M, N and offset, so other register blocks and masks) gives the same bits.
TEST_F(AttentionMicrokernel, ElementOrderIndependentOfTheBlocking) {
  for (ALayout layout : {ALayout::kRows, ALayout::kColumns}) {
    const Problem whole{29, 100, 77, layout, true};
    Operands o = make(whole, false, 3);
    Operands part = o;
    run(whole, o);
    // Rows 7..(7 + 11), columns 21..(21 + 50): A and B offset to the sub-block.
    const int64_t m0 = 7, n0 = 21, M = 11, N = 50;
    const int64_t a_off = layout == ALayout::kRows ? m0 * whole.lda() : m0;
    gemm({.c = part.c.data() + m0 * whole.ldc() + n0,
          .ldc = whole.ldc(),
          .a = part.a.data() + a_off,
          .lda = whole.lda(),
          .a_layout = layout,
          .b = part.b.data() + n0,
          .ldb = whole.ldb(),
          .M = M,
          .N = N,
          .K = whole.K,
          .accumulate = true});
    for (int64_t m = m0; m < m0 + M; ++m)
      for (int64_t n = n0; n < n0 + N; ++n) {
        const size_t i = static_cast<size_t>(m * whole.ldc() + n);
        ASSERT_EQ(part.c[i], o.c[i]) << "(" << m << ", " << n << ")";
      }
  }
}

// A causal tile's operands: A is 0 where the diagonal hides the pair (query m, key k) — for
// rows of queries k ≥ m + d, for rows of keys (A stored as queries × keys) query k < m − d + 1.
// Skipping those terms gives the whole product's bits; with kColumnsPastDiagonal the columns a
// row needs (n < m + d) hold the whole product's bits.
TEST_F(AttentionMicrokernel, CausalSkipsGiveTheWholeProduct) {
  for (int64_t diagonal : {-70, -5, 0, 1, 6, 40, 64, 300}) {
    SCOPED_TRACE("diagonal " + std::to_string(diagonal));
    for (Skip skip : {Skip::kDepthPastDiagonal, Skip::kDepthBeforeDiagonal}) {
      const bool keys_rows = skip == Skip::kDepthBeforeDiagonal;
      const Problem p{keys_rows ? 64 : 128,
                      128,
                      keys_rows ? 128 : 64,
                      keys_rows ? ALayout::kColumns : ALayout::kRows,
                      true,
                      !keys_rows};
      Operands o = make(p, false, 9);
      for (int64_t m = 0; m < p.M; ++m)
        for (int64_t k = 0; k < p.K; ++k) {
          const bool hidden = keys_rows ? k < m - diagonal + 1 : k >= m + diagonal;
          if (hidden)
            o.a[static_cast<size_t>(keys_rows ? k * p.lda() + m : m * p.lda() + k)] = 0.0f;
        }
      Operands whole = o;
      run(p, whole);
      run(p, o, skip, diagonal);
      ASSERT_EQ(o.c, whole.c) << (keys_rows ? "kDepthBeforeDiagonal" : "kDepthPastDiagonal");
    }
    const Problem p{128, 64, 128, ALayout::kRows, false};
    Operands o = make(p, false, 10);
    Operands whole = o;
    run(p, whole);
    run(p, o, Skip::kColumnsPastDiagonal, diagonal);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < std::min(p.N, m + diagonal); ++n) {
        const size_t i = static_cast<size_t>(m * p.ldc() + n);
        ASSERT_EQ(o.c[i], whole.c[i]) << "(" << m << ", " << n << ")";
      }
  }
}

TEST_F(AttentionMicrokernel, TransposeIsExactOnEveryEdge) {
  for (int64_t rows : {1, 7, 16, 17, 64, 70})
    for (int64_t cols : {1, 2, 15, 16, 33, 128}) {
      SCOPED_TRACE(std::to_string(rows) + " × " + std::to_string(cols));
      const int64_t ld_src = cols + 3, ld_dst = rows + 5;
      std::vector<float> src(static_cast<size_t>(rows * ld_src));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
      std::vector<float> dst(static_cast<size_t>(cols * ld_dst), kGuard);
      transpose(dst.data(), ld_dst, src.data(), ld_src, rows, cols);
      for (int64_t x = 0; x < cols; ++x)
        for (int64_t r = 0; r < ld_dst; ++r) {
          const float want = r < rows ? src[static_cast<size_t>(r * ld_src + x)] : kGuard;
          ASSERT_EQ(dst[static_cast<size_t>(x * ld_dst + r)], want) << "(" << x << ", " << r << ")";
        }
    }
}

}  // namespace
}  // namespace sft::ops::cpu::attention_microkernel
