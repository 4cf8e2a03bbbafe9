// LoRA's one-pass backward products on AMX tiles (ops/cpu/lora_backward_amx.h), dB += gᵀ·u and
// du = g·B, against f64 sums of the same bf16 values, at shapes that leave partial tiles
// everywhere (N and O not multiples of 16 or 32, O across several 256-column tasks), ranks 1, 8,
// 16 and 64 (four 16-column passes), strided operands, dB starting at zero or not. Skipped
// without AMX (model/lora.cpp then never calls it).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "ops/cpu/lora_backward_amx.h"
#include "ops/random_bf16.h"

namespace sft::ops {
namespace {

struct Shape {
  int64_t N, O, r;
  int64_t pad;  // extra elements a row of every operand (0: dense)
  bool db_starts_at_zero;
};

constexpr Shape kShapes[] = {
    {1, 1, 1, 0, true},        // one of everything
    {37, 70, 8, 0, true},      // partial tiles in N and O
    {33, 300, 16, 0, false},   // two tasks, the second partial; dB accumulates
    {64, 512, 16, 3, false},   // whole tiles, strided operands
    {65, 530, 64, 5, true},    // four rank passes, three tasks
    {100, 257, 1, 0, false},   // rank 1, a one-column last task
    {17, 1030, 13, 2, false},  // odd rank, odd N, five tasks
    {301, 600, 16, 0, false},  // rows enough for du's final sum to run on every thread
};

void check(const Shape& s) {
  SCOPED_TRACE(::testing::Message() << "N " << s.N << " O " << s.O << " r " << s.r << " pad "
                                    << s.pad << (s.db_starts_at_zero ? " dB 0" : " dB +="));
  const int64_t ldg = s.O + s.pad, ldu = s.r + s.pad, ldb = s.r + s.pad;
  const int64_t lddb = s.r + s.pad, lddu = s.r + s.pad;
  const std::vector<uint16_t> g = random_bf16(static_cast<size_t>(s.N * ldg), 1);
  const std::vector<uint16_t> u = random_bf16(static_cast<size_t>(s.N * ldu), 2);
  const std::vector<uint16_t> b = random_bf16(static_cast<size_t>(s.O * ldb), 3);
  std::vector<float> db(static_cast<size_t>(s.O * lddb), 0.0f);
  if (!s.db_starts_at_zero) {
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& x : db) x = d(rng);
  }
  const std::vector<float> db0 = db;
  std::vector<float> du(static_cast<size_t>(s.N * lddu), -7.0f);  // overwritten, not added to
  cpu::lora_backward_amx(db.data(), lddb, du.data(), lddu, g.data(), ldg, u.data(), ldu, b.data(),
                         ldb, s.N, s.O, s.r);
  auto at = [](const std::vector<uint16_t>& v, int64_t i) {
    return static_cast<double>(bf16_to_f32(v[static_cast<size_t>(i)]));
  };
  // fp32 sums of n products: within ~n·2⁻²⁴ of the sum of their magnitudes.
  double worst_db = 0, worst_du = 0;
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t j = 0; j < s.r; ++j) {
      double ref = db0[static_cast<size_t>(o * lddb + j)], mag = std::fabs(ref);
      for (int64_t n = 0; n < s.N; ++n) {
        const double p = at(g, n * ldg + o) * at(u, n * ldu + j);
        ref += p;
        mag += std::fabs(p);
      }
      worst_db = std::max(worst_db, std::fabs(db[static_cast<size_t>(o * lddb + j)] - ref) / mag);
    }
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t j = 0; j < s.r; ++j) {
      double ref = 0, mag = 1e-30;
      for (int64_t o = 0; o < s.O; ++o) {
        const double p = at(g, n * ldg + o) * at(b, o * ldb + j);
        ref += p;
        mag += std::fabs(p);
      }
      worst_du = std::max(worst_du, std::fabs(du[static_cast<size_t>(n * lddu + j)] - ref) / mag);
    }
  EXPECT_LT(worst_db, 1e-5);
  EXPECT_LT(worst_du, 1e-5);
  // The padding between rows is left alone.
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t j = s.r; j < lddb; ++j)
      ASSERT_EQ(db[static_cast<size_t>(o * lddb + j)], db0[static_cast<size_t>(o * lddb + j)]);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t j = s.r; j < lddu; ++j) ASSERT_EQ(du[static_cast<size_t>(n * lddu + j)], -7.0f);
}

TEST(LoraBackwardAmx, MatchesF64SumsOverOddShapesAndRanks) {
  if (!cpu::lora_backward_amx_serves()) GTEST_SKIP() << "no AMX";
  for (const Shape& s : kShapes) check(s);
}

// A fixed split of the work: the same operands give the same bits again (the scratch of the
// first call, still holding its values, must not leak into the second).
TEST(LoraBackwardAmx, RepeatsBitForBit) {
  if (!cpu::lora_backward_amx_serves()) GTEST_SKIP() << "no AMX";
  const int64_t N = 45, O = 700, r = 16;
  const std::vector<uint16_t> g = random_bf16(static_cast<size_t>(N * O), 5);
  const std::vector<uint16_t> u = random_bf16(static_cast<size_t>(N * r), 6);
  const std::vector<uint16_t> b = random_bf16(static_cast<size_t>(O * r), 7);
  std::vector<float> db1(static_cast<size_t>(O * r)), du1(static_cast<size_t>(N * r));
  std::vector<float> db2 = db1, du2 = du1;
  cpu::lora_backward_amx(db1.data(), r, du1.data(), r, g.data(), O, u.data(), r, b.data(), r, N, O,
                         r);
  // A larger call in between leaves other values in every scratch buffer.
  const std::vector<uint16_t> g3 = random_bf16(static_cast<size_t>(90 * 1500), 8);
  const std::vector<uint16_t> u3 = random_bf16(static_cast<size_t>(90 * r), 9);
  const std::vector<uint16_t> b3 = random_bf16(static_cast<size_t>(1500 * r), 10);
  std::vector<float> db3(static_cast<size_t>(1500 * r)), du3(static_cast<size_t>(90 * r));
  cpu::lora_backward_amx(db3.data(), r, du3.data(), r, g3.data(), 1500, u3.data(), r, b3.data(), r,
                         90, 1500, r);
  cpu::lora_backward_amx(db2.data(), r, du2.data(), r, g.data(), O, u.data(), r, b.data(), r, N, O,
                         r);
  EXPECT_EQ(db1, db2);
  EXPECT_EQ(du1, du2);
}

}  // namespace
}  // namespace sft::ops
