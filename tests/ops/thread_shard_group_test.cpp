// tests/thread_shard_group.h, the thread ShardGroup the tensor-parallel tests run on: the
// collectives combine in rank order; collective calls that disagree between ranks (a rank
// that stops early, a different size or kind, a rank that throws) end in an exception from
// run(), never in a hang; and the ranks take turns, so kernels that use the one thread pool
// can run on every rank.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "ops/ops.h"
#include "thread_shard_group.h"

namespace sft::testing {
namespace {

TEST(ThreadShardGroups, CollectivesCombineInRankOrder) {
  std::vector<std::vector<float>> got(3);
  ThreadShardGroups::run(3, [&](ShardGroup& g) {
    const float r = static_cast<float>(g.rank());
    std::vector<float> s = {r, 1}, m = {r, -r}, a = {r, r, r};
    std::vector<double> d = {0.5 * r};
    g.sum(s);
    g.max(m);
    g.gather(a);
    g.sum(d);
    got[static_cast<size_t>(g.rank())] = {s[0], s[1], m[0], m[1],
                                          a[0], a[1], a[2], static_cast<float>(d[0])};
  });
  for (const std::vector<float>& v : got)
    EXPECT_EQ(v, std::vector<float>({3, 3, 2, 0, 0, 1, 2, 1.5f}));
}

TEST(ThreadShardGroups, MismatchedCallsThrowInsteadOfHanging) {
  // Rank 1 makes one collective fewer.
  EXPECT_THROW(ThreadShardGroups::run(2,
                                      [](ShardGroup& g) {
                                        std::vector<float> v(4);
                                        g.sum(v);
                                        if (g.rank() == 0) g.sum(v);
                                      }),
               std::logic_error);
  // Different sizes.
  EXPECT_THROW(ThreadShardGroups::run(4,
                                      [](ShardGroup& g) {
                                        std::vector<float> v(g.rank() == 2 ? 3 : 4);
                                        g.max(v);
                                      }),
               std::logic_error);
  // Different kinds.
  EXPECT_THROW(ThreadShardGroups::run(2,
                                      [](ShardGroup& g) {
                                        std::vector<float> v(4);
                                        if (g.rank() == 0)
                                          g.sum(v);
                                        else
                                          g.max(v);
                                      }),
               std::logic_error);
  // A rank that throws while the other waits: its own exception comes out.
  EXPECT_THROW(ThreadShardGroups::run(2,
                                      [](ShardGroup& g) {
                                        std::vector<float> v(4);
                                        if (g.rank() == 1) throw std::runtime_error("rank 1");
                                        g.sum(v);
                                      }),
               std::runtime_error);
}

TEST(ThreadShardGroups, RanksCanUseTheThreadPool) {
  std::vector<std::vector<double>> got(4);
  ThreadShardGroups::run(4, [&](ShardGroup& g) {
    std::vector<double> v(1000);
    for (int round = 0; round < 20; ++round) {
      ops::parallel_for_rows(1000, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) v[static_cast<size_t>(i)] += i * (g.rank() + 1);
      });
      g.sum(std::span<double>(v.data(), 1));
    }
    got[static_cast<size_t>(g.rank())] = v;
  });
  for (int r = 0; r < 4; ++r)
    for (int64_t i = 1; i < 1000; ++i)
      ASSERT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(i)], 20.0 * i * (r + 1))
          << "rank " << r << " element " << i;
}

}  // namespace
}  // namespace sft::testing
