#include "optim/clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/safetensors.h"
#include "test_paths.h"

namespace sft {

TEST(ClipGradNorm, MatchesTorch) {
  SafetensorsFile golden =
      SafetensorsFile::open(test::source_path("tests/fixtures/optim/clip.safetensors"));
  std::vector<float> grads = golden.tensor("grads").to_f32_vector();
  const std::vector<float> want = golden.tensor("clipped").to_f32_vector();
  const double norm = clip_grad_norm(grads, std::stod(golden.metadata().at("max_norm")));
  EXPECT_NEAR(norm, std::stod(golden.metadata().at("norm")), 1e-6 * norm);
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_NEAR(grads[i], want[i], 1e-6f * std::fabs(want[i]) + 1e-9f) << i;
}

TEST(ClipGradNorm, LeavesSmallGradientsAloneAndReportsNonFinite) {
  std::vector<float> grads = {0.3f, 0.4f};
  EXPECT_NEAR(clip_grad_norm(grads, 1.0), 0.5, 1e-7);  // 0.3f and 0.4f are not exact
  EXPECT_EQ(grads[0], 0.3f);
  grads[1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(clip_grad_norm(grads, 1.0)));
  EXPECT_EQ(grads[0], 0.3f);  // nothing scaled by a non-finite coefficient
}

TEST(ClipGradNorm, NormDoesNotDependOnLength) {
  // Summation is blocked in fixed-size pieces: the same values give the same norm every time.
  std::vector<float> grads(100003);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = std::sin(float(i)) * 1e-3f;
  const double first = global_grad_norm(grads);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(global_grad_norm(grads), first);
}

}  // namespace sft

namespace sft {
namespace {

// Many blocks over both pool threads: every block's partial sum reaches the total.
TEST(ClipGradNorm, LongGradientsSpreadOverThreads) {
  std::vector<float> g(5'000'000, 0.5f);
  EXPECT_DOUBLE_EQ(global_grad_norm(g), std::sqrt(5'000'000 * 0.25));
  EXPECT_DOUBLE_EQ(clip_grad_norm(g, 1.0), std::sqrt(5'000'000 * 0.25));
  EXPECT_NEAR(global_grad_norm(g), 1.0, 1e-5);
}

}  // namespace
}  // namespace sft
