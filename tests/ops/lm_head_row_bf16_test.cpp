// The bf16 LM head's fused row (lm_head_rows.h: row_stats_bf16) against the three steps it
// replaces, bit for bit: widen the bf16 logits, row_stats_f32, round the dlogits to bf16. Rows
// that exercise each fused piece: the max in the scalar tail, in the last 16-lane block, tied
// (the first index wins), at the target; −inf entries; an all-NaN row.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/lm_head_rows.h"

namespace sft::ops {
namespace {

using lm_head_detail::RowStats;

std::vector<uint16_t> random_row(int64_t V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<uint16_t> z(static_cast<size_t>(V));
  for (uint16_t& v : z) v = f32_to_bf16(d(rng));
  return z;
}

// The unfused steps, as the bf16 head ran them before.
RowStats unfused(std::vector<uint16_t>& z, int64_t target, bool grad, float scale) {
  const int64_t V = static_cast<int64_t>(z.size());
  std::vector<float> row(z.size());
  cpu::widen_row_from_bf16(row.data(), z.data(), V);
  const RowStats r = lm_head_detail::row_stats_f32(row.data(), V, target, grad, scale);
  if (grad) cpu::round_row_to_bf16(z.data(), row.data(), V);
  return r;
}

void expect_same(std::vector<uint16_t> z, int64_t target, const char* what) {
  const int64_t V = static_cast<int64_t>(z.size());
  const float scale = 1.0f / 37;
  for (const bool grad : {false, true}) {
    SCOPED_TRACE(testing::Message() << what << ", grad " << grad);
    std::vector<uint16_t> want = z, got = z;
    std::vector<float> row(z.size(), -1.0f);
    const RowStats w = unfused(want, target, grad, scale);
    const RowStats g =
        lm_head_detail::row_stats_bf16(got.data(), row.data(), V, target, grad, scale);
    // Bits, NaN included: memcmp of the doubles.
    EXPECT_EQ(std::memcmp(&g.loss, &w.loss, sizeof(double)), 0) << g.loss << " vs " << w.loss;
    EXPECT_EQ(std::memcmp(&g.entropy, &w.entropy, sizeof(double)), 0)
        << g.entropy << " vs " << w.entropy;
    EXPECT_EQ(g.correct, w.correct);
    int64_t differing = 0;
    for (int64_t j = 0; j < V; ++j) differing += got[j] != want[j] ? 1 : 0;
    EXPECT_EQ(differing, 0) << "dlogits";
  }
}

TEST(LmHeadRowBf16, EqualsWideningTheFloatRowAndRounding) {
  const int64_t V = 16 * 63 + 7;  // a scalar tail of 7 after the 16-lane blocks
  const uint16_t big = f32_to_bf16(40.0f);
  expect_same(random_row(V, 1), 5, "random");
  std::vector<uint16_t> z = random_row(V, 2);
  z[V - 3] = big;
  expect_same(z, 100, "max in the tail");
  z = random_row(V, 3);
  z[V - 9] = big;
  expect_same(z, V - 9, "max at the target, in the last block");
  z = random_row(V, 4);
  z[300] = z[301] = z[700] = big;
  expect_same(z, 301, "tied maxima: the first is the prediction");
  z = random_row(V, 5);
  for (int64_t j = 0; j < V; j += 3) z[j] = f32_to_bf16(-std::numeric_limits<float>::infinity());
  expect_same(z, 1, "-inf entries");
  z.assign(static_cast<size_t>(V), f32_to_bf16(std::numeric_limits<float>::quiet_NaN()));
  expect_same(z, 2, "all NaN");
}

}  // namespace
}  // namespace sft::ops
