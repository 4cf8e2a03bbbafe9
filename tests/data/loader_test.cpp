// The loader: per-epoch permutations from the seed, rank sharding, exact resume, the order
// kind saved with the cursor (loader_trl_order_test.cpp checks the order against TRL).
#include "data/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/rng.h"
#include "data_test_util.h"

namespace sft::data {
namespace {

TEST(Loader, EpochsArePermutationsThatDifferAndRepeat) {
  LoaderOptions options;
  options.seed = 7;
  Loader loader(100, options);
  auto e0 = loader.epoch_order(0), e1 = loader.epoch_order(1);
  EXPECT_NE(e0, e1);
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(Loader(100, options).epoch_order(1), e1);  // a pure function of (seed, epoch)
  options.seed = 8;
  EXPECT_NE(Loader(100, options).epoch_order(0), e0);
  options.shuffle = false;
  EXPECT_EQ(Loader(5, options).epoch_order(3), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(Loader, RanksSplitEachGlobalBatchAndStayInStep) {
  // 10 rows, 2 ranks x 2 rows: 3 steps per epoch, the last completed from the epoch's start.
  std::vector<Loader> ranks;
  for (uint32_t r = 0; r < 2; ++r) {
    LoaderOptions o;
    o.batch_size = 2;
    o.world_size = 2;
    o.rank = r;
    ranks.emplace_back(10, o);
  }
  EXPECT_EQ(ranks[0].steps_per_epoch(), 3u);
  const auto order = ranks[0].epoch_order(0);
  std::multiset<uint64_t> seen;
  for (int step = 0; step < 3; ++step) {
    for (uint32_t r = 0; r < 2; ++r) {
      auto batch = ranks[r].next_batch();
      ASSERT_EQ(batch.size(), 2u);
      for (size_t k = 0; k < 2; ++k) {
        EXPECT_EQ(batch[k], order[(step * 4 + r * 2 + k) % 10]);
        seen.insert(batch[k]);
      }
    }
  }
  for (uint64_t i = 0; i < 10; ++i) EXPECT_GE(seen.count(i), 1u);
  EXPECT_EQ(ranks[0].cursor(), (LoaderCursor{1, 0}));
}

TEST(Loader, DropLast) {
  LoaderOptions o;
  o.batch_size = 3;
  o.drop_last = true;
  Loader loader(10, o);
  EXPECT_EQ(loader.steps_per_epoch(), 3u);
  o.batch_size = 11;
  EXPECT_THAT(test_util::error_of([&] { Loader(10, o); }), ::testing::HasSubstr("drop_last"));
}

TEST(Loader, ResumeGivesTheSameBatches) {
  LoaderOptions o;
  o.batch_size = 3;
  o.seed = 3;
  Loader a(17, o);
  for (int i = 0; i < 8; ++i) a.next_batch();  // into the second epoch
  Json saved = a.cursor_to_json();
  std::vector<std::vector<uint64_t>> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(a.next_batch());
  Loader b(17, o);
  b.restore_from_json(saved);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.next_batch(), expected[i]) << i;
  Loader other(18, o);
  EXPECT_THAT(test_util::error_of([&] { other.restore_from_json(saved); }),
              ::testing::HasSubstr("saved with 17 rows and seed 3"));
  EXPECT_THAT(test_util::error_of([&] {
                b.restore({0, 1});
              }),
              ::testing::HasSubstr("not the start of a step"));
}

TEST(Loader, CheckpointsFromBeforeTrlsOrderKeepTheirShuffle) {
  // A cursor saved before the order kind was recorded: that run shuffled with Fisher-Yates
  // over sft::Rng (stream "shuf" + epoch), and resuming must replay exactly those rows.
  const Json old = {{"epoch", 1}, {"position", 6}, {"num_rows", 17}, {"seed", 3}};
  LoaderOptions o;
  o.batch_size = 3;
  o.seed = 3;
  Loader loader(17, o);
  EXPECT_EQ(loader.order(), LoaderOrder::torch_randperm);
  loader.restore_from_json(old);
  EXPECT_EQ(loader.order(), LoaderOrder::sft_philox_v1);
  std::vector<uint64_t> expected(17);
  for (uint64_t i = 0; i < 17; ++i) expected[i] = i;
  Rng rng(3, 0x7368756600000000ull + 1);
  for (uint64_t i = 16; i > 0; --i) std::swap(expected[i], expected[rng.below(i + 1)]);
  EXPECT_EQ(loader.next_batch(), (std::vector<uint64_t>{expected[6], expected[7], expected[8]}));
  EXPECT_EQ(loader.cursor_to_json().at("order"), "sft_philox_v1");  // and stays so
  // Sequential runs had no shuffle to remember.
  o.shuffle = false;
  Loader sequential(17, o);
  sequential.restore_from_json(old);
  EXPECT_EQ(sequential.order(), LoaderOrder::sequential);
}

TEST(Loader, ResumeRefusesAnotherOrder) {
  LoaderOptions o;
  o.shuffle = false;
  Json saved = Loader(20, o).cursor_to_json();
  EXPECT_EQ(saved.at("order"), "sequential");
  o.shuffle = true;
  Loader shuffled(20, o);
  EXPECT_THAT(test_util::error_of([&] { shuffled.restore_from_json(saved); }),
              ::testing::HasSubstr("saved with the sequential data order, this run uses "
                                   "torch_randperm (hint: resume with the same "
                                   "--train_sampling_strategy)"));
  saved["order"] = "zigzag";
  EXPECT_THAT(test_util::error_of([&] { shuffled.restore_from_json(saved); }),
              ::testing::HasSubstr("data order 'zigzag' is unknown"));
}

}  // namespace
}  // namespace sft::data
