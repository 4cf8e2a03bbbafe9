// edit_distance: inserts, deletes, substitutions and a swapped neighbour pair are one edit each;
// case_blind sets letter case aside.
#include "core/edit_distance.h"

#include <gtest/gtest.h>

namespace sft {
namespace {

TEST(EditDistance, CountsTheSlipsPeopleMake) {
  EXPECT_EQ(edit_distance("count", "count"), 0u);
  EXPECT_EQ(edit_distance("cuont", "count"), 1u);  // a swapped pair
  EXPECT_EQ(edit_distance("lerning_rate", "learning_rate"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("Qwen/Qwen3", "qwen/qwen3"), 2u);
  EXPECT_EQ(edit_distance("Qwen/Qwen3", "qwen/qwen3", /*case_blind=*/true), 0u);
}

}  // namespace
}  // namespace sft
