// ops::matmul_4bit against the product with the whole W dequantized (ops/cpu/bnb_quant.h's
// dequantize_4bit, itself checked against bitsandbytes) in f64: both products, f32 and bf16,
// several panels with a short last one, an odd element count, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "error_of.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/ops.h"

namespace sft::ops {
namespace {

struct Quantized {
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
  std::vector<float> dequantized;
  Weight4Bit weight(int64_t rows, int64_t cols, Quant4Type type) const {
    return {view_of(packed.data(), 1, static_cast<int64_t>(packed.size())),
            view_of(absmax.data(), 1, static_cast<int64_t>(absmax.size())),
            rows,
            cols,
            64,
            type};
  }
};

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Quantized quantize(const std::vector<float>& w, Quant4Type type) {
  Quantized q;
  q.packed.resize((w.size() + 1) / 2);
  q.absmax.resize(static_cast<size_t>(cpu::quant_block_count(static_cast<int64_t>(w.size()), 64)));
  cpu::quantize_4bit(w, 64, type, q.packed, q.absmax);
  q.dequantized.resize(w.size());
  cpu::dequantize_4bit(q.packed, q.absmax, 64, type, q.dequantized);
  return q;
}

struct Shape {
  int64_t M, rows, cols;
  bool trans_w;
  bool bf16;
};

class Matmul4Bit : public ::testing::TestWithParam<Shape> {};

TEST_P(Matmul4Bit, EqualsTheProductWithTheDequantizedWeight) {
  const Shape s = GetParam();
  for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4}) {
    const Quantized q =
        quantize(random_values(static_cast<size_t>(s.rows * s.cols), 1, 0.05f), type);
    const int64_t K = s.trans_w ? s.cols : s.rows, N = s.trans_w ? s.rows : s.cols;
    std::vector<float> a = random_values(static_cast<size_t>(s.M * K), 2, 1.0f);
    std::vector<uint16_t> a_bf16(a.size());
    std::vector<float> w_used = q.dequantized;
    if (s.bf16) {  // both operands as the bf16 product sees them
      for (size_t i = 0; i < a.size(); ++i) {
        a_bf16[i] = f32_to_bf16(a[i]);
        a[i] = bf16_to_f32(a_bf16[i]);
      }
      for (float& x : w_used) x = bf16_to_f32(f32_to_bf16(x));
    }
    for (bool accumulate : {false, true}) {
      std::vector<float> c(static_cast<size_t>(s.M * N), 0.5f);
      const View av = s.bf16 ? view_of(a_bf16.data(), s.M, K) : view_of(a.data(), s.M, K);
      matmul_4bit(view_of(c.data(), s.M, N), av, q.weight(s.rows, s.cols, type), s.trans_w,
                  accumulate);
      double worst = 0;
      for (int64_t m = 0; m < s.M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double ref = accumulate ? 0.5 : 0.0, scale = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double w = s.trans_w ? w_used[static_cast<size_t>(n * s.cols + k)]
                                       : w_used[static_cast<size_t>(k * s.cols + n)];
            const double x = a[static_cast<size_t>(m * K + k)];
            ref += x * w;
            scale += std::fabs(x * w);
          }
          worst =
              std::max(worst, std::fabs(c[static_cast<size_t>(m * N + n)] - ref) / (scale + 1e-30));
        }
      EXPECT_LT(worst, 1e-5) << "type " << static_cast<int>(type) << " accumulate " << accumulate;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Matmul4Bit,
                         ::testing::Values(
                             // K 2048, N 1100: panels of 1024 output columns (2^21 values),
                             // the last one short (rows of W for a · Wᵀ, columns for a · W)
                             Shape{5, 1100, 2048, true, false}, Shape{5, 2048, 1100, false, false},
                             Shape{3, 1100, 2048, true, true}, Shape{3, 2048, 1100, false, true},
                             // K 17000: the narrowest panels (256 columns), the last one short
                             Shape{2, 300, 17000, true, true}, Shape{2, 17000, 300, false, true},
                             // 15 elements: an odd count, one short block
                             Shape{2, 3, 5, true, false}, Shape{2, 3, 5, false, true},
                             // With AMX, bf16 (matmul_4bit_amx): M 37 (a last 32-row block of
                             // one partial tile), N 90 and K 1000 (edge tiles in both, K not
                             // a multiple of the 32 of a tile), several panels, the last short
                             Shape{37, 90, 1000, true, true}, Shape{37, 1000, 90, false, true},
                             Shape{37, 1100, 2048, true, true}, Shape{37, 2048, 1100, false, true},
                             Shape{16, 600, 6144, true, true}, Shape{16, 6144, 600, false, true}),
                         [](const auto& info) {
                           const Shape& s = info.param;
                           return "M" + std::to_string(s.M) + "_W" + std::to_string(s.rows) + "x" +
                                  std::to_string(s.cols) + (s.trans_w ? "_aWt" : "_aW") +
                                  (s.bf16 ? "_bf16" : "_f32");
                         });

// The rank-r term (LowRankTerm, LoRA's product folded in): c = a · op(W) + a2 · op(b2), against
// the f64 sum of both products. r 16 (one tile of K, half of it padding) and 40 (a second,
// partial tile); b2 a column block of a wider matrix (its row stride is not r or N), as an
// adapter's rows of a fused B are; bf16 (the AMX path where present) and f32 (the library's).
// K 1000 and 2100: the AMX path sums K in ranges of 2048, the term's tiles after the last one.
TEST(Matmul4Bit, AddsTheLowRankTermAsMoreStepsOfK) {
  for (const bool bf16 : {true, false})
    for (const bool trans_w : {true, false})
      for (const int64_t r : {16, 40})
        for (const int64_t long_side : {1000, 2100}) {
          const int64_t M = 37, rows = trans_w ? 200 : long_side, cols = trans_w ? long_side : 200,
                        K = trans_w ? cols : rows, N = trans_w ? rows : cols;
          const Quantized q = quantize(random_values(rows * cols, 4, 0.05f), Quant4Type::kNf4);
          std::vector<float> a = random_values(M * K, 5, 1.0f), a2 = random_values(M * r, 6, 1.0f);
          // b2 is op()'s layout: (N, r) with trans_w, (r, N) without; stored 3 columns wider.
          const int64_t b2_rows = trans_w ? N : r, b2_cols = trans_w ? r : N, ld = b2_cols + 3;
          std::vector<float> b2 = random_values(b2_rows * ld, 7, 0.1f);
          std::vector<float> w_used = q.dequantized;
          std::vector<uint16_t> a16(a.size()), a216(a2.size()), b216(b2.size());
          auto round = [&](std::vector<float>& v, std::vector<uint16_t>& bits) {
            for (size_t i = 0; i < v.size(); ++i) {
              bits[i] = f32_to_bf16(v[i]);
              if (bf16) v[i] = bf16_to_f32(bits[i]);
            }
          };
          round(a, a16);
          round(a2, a216);
          round(b2, b216);
          if (bf16)
            for (float& x : w_used) x = bf16_to_f32(f32_to_bf16(x));
          const View av = bf16 ? view_of(a16.data(), M, K) : view_of(a.data(), M, K);
          const View a2v = bf16 ? view_of(a216.data(), M, r) : view_of(a2.data(), M, r);
          View b2v = bf16 ? view_of(b216.data(), b2_rows, ld) : view_of(b2.data(), b2_rows, ld);
          b2v = b2v.columns(0, b2_cols);
          std::vector<float> c(static_cast<size_t>(M * N), 0.25f);
          matmul_4bit(view_of(c.data(), M, N), av, q.weight(rows, cols, Quant4Type::kNf4), trans_w,
                      true, LowRankTerm{a2v, b2v});
          double worst = 0;
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double ref = 0.25, scale = 0.25;
              for (int64_t k = 0; k < K; ++k) {
                const double w = trans_w ? w_used[n * cols + k] : w_used[k * cols + n];
                ref += a[m * K + k] * w;
                scale += std::fabs(a[m * K + k] * w);
              }
              for (int64_t j = 0; j < r; ++j) {
                const double b = trans_w ? b2[n * ld + j] : b2[j * ld + n];
                ref += a2[m * r + j] * b;
                scale += std::fabs(a2[m * r + j] * b);
              }
              worst = std::max(worst, std::fabs(c[m * N + n] - ref) / scale);
            }
          EXPECT_LT(worst, 1e-5) << "bf16 " << bf16 << " trans_w " << trans_w << " r " << r << " K "
                                 << K;
        }
}

using test::error_of;

TEST(Matmul4Bit, BadViewsAreRefusedNamingTheOp) {
  const Quantized q = quantize(random_values(64 * 8, 3, 0.1f), Quant4Type::kNf4);
  std::vector<float> a(2 * 8), c(2 * 64);
  const Weight4Bit w = q.weight(64, 8, Quant4Type::kNf4);
  EXPECT_NE(error_of([&] {
              matmul_4bit(view_of(c.data(), 2, 64), view_of(a.data(), 2, 7), w, true, false);
            }).find("matmul_4bit: shapes (2, 64) = (2, 7) · Wᵀ (W 64 × 8) do not fit"),
            std::string::npos);
  Weight4Bit short_absmax = w;
  short_absmax.absmax.cols -= 1;
  EXPECT_NE(error_of([&] {
              matmul_4bit(view_of(c.data(), 2, 64), view_of(a.data(), 2, 8), short_absmax, true,
                          false);
            }).find("absmax must be 8 dense f32 values"),
            std::string::npos);
  std::vector<double> a64(2 * 8);
  EXPECT_NE(error_of([&] {
              matmul_4bit(view_of(c.data(), 2, 64), view_of(a64.data(), 2, 8), w, true, false);
            }).find("a must be f32 or bf16, got F64"),
            std::string::npos);
  std::vector<float> u(2 * 4), b(64 * 3);
  EXPECT_NE(error_of([&] {
              matmul_4bit(view_of(c.data(), 2, 64), view_of(a.data(), 2, 8), w, true, false,
                          LowRankTerm{view_of(u.data(), 2, 4), view_of(b.data(), 64, 3)});
            }).find("the low-rank term (2, 4) · (64, 3)ᵀ does not fit c (2, 64)"),
            std::string::npos);
}

}  // namespace
}  // namespace sft::ops
