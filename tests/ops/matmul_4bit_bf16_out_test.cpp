// ops::matmul_4bit with a bf16 c (autocast's rounded projection output): bit for bit the f32 c
// of the same call rounded by ops::cast, on the AMX path (rounded as the tiles leave) and the
// library path (an f32 scratch, then rounded). K in one range of the AMX driver (≤ 2048) and in
// several (its fp32 per-panel sums), with and without a LowRankTerm, both orientations of W, M
// and N not multiples of 16 (and M over several 32-row strips), c a column block of a wider
// matrix; and the refusal of accumulating into a bf16 c.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "error_of.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/matmul_4bit_amx.h"
#include "ops/ops.h"
#include "ops/random_bf16.h"

namespace sft::ops {
namespace {

struct Weight {
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
  Weight4Bit view;
};

Weight quantized(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& x : w) x = d(rng);
  Weight q;
  q.packed.resize((w.size() + 1) / 2);
  q.absmax.resize(static_cast<size_t>(cpu::quant_block_count(rows * cols, 64)));
  cpu::quantize_4bit(w, 64, Quant4Type::kNf4, q.packed, q.absmax);
  q.view = {view_of(q.packed.data(), 1, static_cast<int64_t>(q.packed.size())),
            view_of(q.absmax.data(), 1, static_cast<int64_t>(q.absmax.size())),
            rows,
            cols,
            64,
            Quant4Type::kNf4};
  return q;
}

using Product = void (*)(View, View, const Weight4Bit&, bool, bool, const LowRankTerm&);

struct Case {
  int64_t M, N, K;
  bool trans_w;
  int64_t rank;  // 0: no LowRankTerm
};

std::string name_of(const Case& s) {
  return "M" + std::to_string(s.M) + " N" + std::to_string(s.N) + " K" + std::to_string(s.K) +
         (s.trans_w ? " a·Wᵀ" : " a·W") + " r" + std::to_string(s.rank);
}

// K 1000: one k range (not a multiple of the tile's 32); 2100 and 4200: two and three ranges.
// M 37 and 70: a partial last tile, and strips of 32, 32 and 6 rows; N 90: edge tiles.
const Case kCases[] = {
    {37, 90, 1000, true, 0},  {37, 90, 1000, true, 16},  {70, 90, 1000, false, 40},
    {70, 300, 2100, true, 0}, {37, 300, 2100, true, 16}, {37, 90, 2100, false, 16},
    {70, 90, 4200, true, 40}, {16, 600, 4200, false, 0}, {5, 48, 64, true, 16},
};

// c16 (a column block of a wider bf16 matrix) against cast(c32) of the same product.
void expect_rounded_product(Product product, const Case& s) {
  const int64_t rows = s.trans_w ? s.N : s.K, cols = s.trans_w ? s.K : s.N;
  const Weight w = quantized(rows, cols, 1);
  const std::vector<uint16_t> a = random_bf16(s.M * s.K, 2, 1.0f);
  const int64_t r = s.rank;
  const std::vector<uint16_t> u = random_bf16(s.M * std::max<int64_t>(r, 1), 3, 1.0f);
  const std::vector<uint16_t> b = random_bf16(s.N * std::max<int64_t>(r, 1), 4, 0.1f);
  const LowRankTerm term =
      r == 0 ? LowRankTerm{}
             : LowRankTerm{view_of(u.data(), s.M, r),
                           s.trans_w ? view_of(b.data(), s.N, r) : view_of(b.data(), r, s.N)};
  const View av = view_of(a.data(), s.M, s.K);

  std::vector<float> c32(static_cast<size_t>(s.M * s.N));
  product(view_of(c32.data(), s.M, s.N), av, w.view, s.trans_w, false, term);
  std::vector<uint16_t> expected(c32.size());
  cast(view_of(expected.data(), s.M, s.N), view_of(c32.data(), s.M, s.N));

  const int64_t ld = s.N + 7;  // c16 is columns [3, 3 + N) of (M, N + 7); the rest stays
  std::vector<uint16_t> wide(static_cast<size_t>(s.M * ld), 0x7fc1);
  product(view_of(wide.data(), s.M, ld).columns(3, s.N), av, w.view, s.trans_w, false, term);
  int64_t wrong = 0, touched = 0;
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < ld; ++n) {
      const uint16_t got = wide[static_cast<size_t>(m * ld + n)];
      if (n < 3 || n >= 3 + s.N)
        touched += got != 0x7fc1;
      else
        wrong += got != expected[static_cast<size_t>(m * s.N + n - 3)];
    }
  EXPECT_EQ(wrong, 0) << name_of(s) << ": elements that differ from cast(f32 c)";
  EXPECT_EQ(touched, 0) << name_of(s) << ": elements written outside c's columns";
}

TEST(Matmul4BitBf16Out, AmxPathEqualsTheCastOfTheF32Product) {
  if (!cpu::use_amx()) GTEST_SKIP() << "no AMX";
  for (const Case& s : kCases) expect_rounded_product(&cpu::matmul_4bit_amx, s);
}

TEST(Matmul4BitBf16Out, LibraryPathEqualsTheCastOfTheF32Product) {
  for (const Case& s : kCases) expect_rounded_product(&cpu::matmul_4bit_library, s);
}

TEST(Matmul4BitBf16Out, TheOpEqualsTheCastOfTheF32Product) {
  for (const Case& s : kCases) expect_rounded_product(&matmul_4bit, s);
}

TEST(Matmul4BitBf16Out, AccumulatingIntoABf16CIsRefused) {
  const Weight w = quantized(64, 32, 5);
  const std::vector<uint16_t> a = random_bf16(2 * 32, 6, 1.0f);
  std::vector<uint16_t> c(2 * 64);
  EXPECT_NE(test::error_of([&] {
              matmul_4bit(view_of(c.data(), 2, 64), view_of(a.data(), 2, 32), w.view, true, true);
            }).find("[ops] matmul_4bit: a bf16 c cannot be accumulated into"),
            std::string::npos);
}

}  // namespace
}  // namespace sft::ops
