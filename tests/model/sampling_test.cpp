// Token choice: greedy, and sampling with temperature / top-k / top-p through our Rng.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/sampling.h"

namespace sft::model {
namespace {

TEST(Sampling, GreedyTakesTheFirstLargest) {
  std::vector<float> z = {0.5f, 2.0f, -1.0f, 2.0f};
  Rng rng(0);
  EXPECT_EQ(sample_next(z, {}, rng), 1);
}

TEST(Sampling, TopKOneAndTinyTopPAreGreedy) {
  std::vector<float> z = {0.1f, 0.3f, 1.5f, 1.4f, -2.0f};
  Rng rng(7);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> a = z, b = z;
    EXPECT_EQ(sample_next(a, {true, 1.0, 1, 1.0}, rng), 2);
    EXPECT_EQ(sample_next(b, {true, 1.0, 0, 1e-6}, rng), 2);
  }
}

TEST(Sampling, FrequenciesFollowTheTemperedSoftmaxInsideTopK) {
  const std::vector<float> z = {1.0f, 0.0f, 2.0f, -1.0f};
  const SamplingOptions o{true, 2.0, 3, 1.0};  // token 3 is outside the top 3
  Rng rng(42);
  std::vector<int> counts(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> a = z;
    ++counts[static_cast<size_t>(sample_next(a, o, rng))];
  }
  EXPECT_EQ(counts[3], 0);
  const double e0 = std::exp(0.5), e1 = 1.0, e2 = std::exp(1.0), sum = e0 + e1 + e2;
  EXPECT_NEAR(counts[0] / double(n), e0 / sum, 0.015);
  EXPECT_NEAR(counts[1] / double(n), e1 / sum, 0.015);
  EXPECT_NEAR(counts[2] / double(n), e2 / sum, 0.015);
}

TEST(Sampling, TopPKeepsTheSmallestPrefixReachingP) {
  // probabilities ≈ 0.64, 0.24, 0.09, 0.03: top_p 0.8 keeps the first two
  const std::vector<float> z = {3.0f, 2.0f, 1.0f, 0.0f};
  Rng rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> a = z;
    EXPECT_LT(sample_next(a, {true, 1.0, 0, 0.8}, rng), 2);
  }
}

TEST(Sampling, SameSeedSameChoices) {
  const std::vector<float> z = {0.2f, 0.1f, 0.3f, 0.25f};
  Rng a(9), b(9);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> x = z, y = z;
    EXPECT_EQ(sample_next(x, {true, 1.0, 0, 1.0}, a), sample_next(y, {true, 1.0, 0, 1.0}, b));
  }
}

}  // namespace
}  // namespace sft::model
