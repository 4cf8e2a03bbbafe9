// SharedScratch (model/blocks/shared_scratch.h): roles that do not fit fail naming the region,
// and under SFT_CHECK_SCRATCH=1 a role read after hand_over() reads NaNs (ctest runs this
// binary's block tests once more with the variable set: model.blocks_with_scratch_checks).
#include "model/blocks/shared_scratch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/arena.h"

namespace sft::model {
namespace {

TEST(SharedScratch, ARoleThatDoesNotFitNamesTheRegion) {
  Arena arena;
  SharedScratch region;
  carve(arena, [&](Carver& cv) { region = SharedScratch::take(cv, 64 * sizeof(float)); });
  EXPECT_EQ(region.role(DType::kF32, 4, 16).numel(), 64);
  EXPECT_EQ(region.role(DType::kBF16, 4, 8, 64).numel(), 32);
  try {
    region.role(DType::kF32, 4, 17);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("256 bytes is too small for a (4, 17) F32"),
              std::string::npos)
        << e.what();
  }
}

TEST(SharedScratch, ADeadRoleReadsNaNsUnderScratchChecks) {
  if (!scratch_checks_on()) GTEST_SKIP() << "SFT_CHECK_SCRATCH=1 not set";
  Arena arena;
  SharedScratch region;
  carve(arena, [&](Carver& cv) { region = SharedScratch::take(cv, 8 * sizeof(float)); });
  const ops::View first = region.role(DType::kF32, 1, 8);
  for (int i = 0; i < 8; ++i) first.as<float>()[i] = 1.0f;
  region.hand_over();  // a second role starts: the first is dead
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(first.as<float>()[i])) << i;
  std::vector<float> own(4, 2.0f);
  poison_if_checking({ops::view_of(own.data(), 2, 2)});
  for (float v : own) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace sft::model
