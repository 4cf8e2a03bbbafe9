#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace sft {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32 10 rounds).
TEST(Rng, PhiloxKnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Rng, DeterministicAndRandomAccess) {
  Rng a(42), b(42), other_stream(42, 1), other_seed(43);
  std::vector<uint32_t> first;
  for (int i = 0; i < 100; ++i) first.push_back(a.next_u32());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(b.next_u32(), first[i]);
  EXPECT_NE(other_stream.next_u32(), first[0]);
  EXPECT_NE(other_seed.next_u32(), first[0]);
  Rng jump(42);
  jump.set_position(57);
  EXPECT_EQ(jump.next_u32(), first[57]);
}

TEST(Rng, DistributionsLookRight) {
  Rng rng(1);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    float u = rng.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
  }
  for (int i = 0; i < n; ++i) {
    double x = rng.normal();
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) counts[rng.below(7)]++;
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

}  // namespace sft
