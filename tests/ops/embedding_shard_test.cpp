// ops::embedding_forward / embedding_backward on a vocabulary shard (tensor parallelism)
// against the whole table, on T = 2 and 4 ranks of a thread ShardGroup: the forward is the
// whole table's lookup bit for bit on every rank (−0 and +0 table entries included: the other
// ranks' −0 rows leave every value as it is), and each rank's dtable is the whole dtable's
// block bit for bit (the same additions in the same token order). f32 and f64; and the forward
// from a bf16 table (a frozen table held in bf16) into f32, the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "ops/ops.h"
#include "thread_shard_group.h"

namespace sft::ops {
namespace {

using sft::testing::ThreadShardGroups;

constexpr int64_t kV = 64, kC = 16;

// Ids with repeats, the first and the last id, and every slice's edges.
std::vector<int64_t> some_ids() {
  std::vector<int64_t> ids = {0, 63, 15, 16, 31, 32, 47, 48, 5, 5, 40, 5};
  for (int64_t t = 0; t < 30; ++t) ids.push_back((t * 37 + 11) % kV);
  return ids;
}

template <typename T>
std::vector<T> random_values(int64_t n, uint64_t stream) {
  Rng rng(77, stream);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& a : v) a = static_cast<T>(rng.normal());
  return v;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const T* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(T)) == 0;
}

template <typename T>
void check_embedding(int ranks) {
  SCOPED_TRACE(std::to_string(ranks) + " ranks, " + std::to_string(sizeof(T) * 8) + "-bit");
  const std::vector<int64_t> ids = some_ids();
  const int64_t Tn = static_cast<int64_t>(ids.size());
  std::vector<T> table = random_values<T>(kV * kC, 1);
  table[5 * kC + 3] = T(-0.0);  // signed zeros must come through as they are
  table[40 * kC + 1] = T(0.0);
  const std::vector<T> dout = random_values<T>(Tn * kC, 2), dtable0 = random_values<T>(kV * kC, 3);

  std::vector<T> out(Tn * kC), dtable = dtable0;
  embedding_forward(view_of(out.data(), Tn, kC), ids.data(), view_of(table.data(), kV, kC));
  embedding_backward(view_of(dtable.data(), kV, kC), view_of(dout.data(), Tn, kC), ids.data());
  ASSERT_TRUE(std::signbit(out[8 * kC + 3]));  // row 8 is id 5

  const int64_t rows = kV / ranks;
  std::vector<std::vector<T>> outs(static_cast<size_t>(ranks)), dtables(static_cast<size_t>(ranks));
  ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
    const size_t r = static_cast<size_t>(g.rank());
    const int64_t begin = g.rank() * rows;
    outs[r].assign(Tn * kC, T(NAN));
    dtables[r].assign(dtable0.begin() + begin * kC, dtable0.begin() + (begin + rows) * kC);
    const VocabShard shard{begin, &g};
    embedding_forward(view_of(outs[r].data(), Tn, kC), ids.data(),
                      view_of(table.data() + begin * kC, rows, kC), shard);
    embedding_backward(view_of(dtables[r].data(), rows, kC), view_of(dout.data(), Tn, kC),
                       ids.data(), shard);
  });
  for (int r = 0; r < ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_TRUE(same_bits(outs[static_cast<size_t>(r)], out.data()));
    EXPECT_TRUE(same_bits(dtables[static_cast<size_t>(r)], dtable.data() + r * rows * kC));
  }
}

TEST(EmbeddingShard, MatchesTheWholeTableExactly) {
  for (int ranks : {2, 4}) {
    check_embedding<float>(ranks);
    check_embedding<double>(ranks);
  }
}

TEST(EmbeddingShard, Bf16TableMatchesTheWholeTableExactly) {
  const std::vector<int64_t> ids = some_ids();
  const int64_t Tn = static_cast<int64_t>(ids.size());
  std::vector<uint16_t> table(static_cast<size_t>(kV * kC));
  const std::vector<float> values = random_values<float>(kV * kC, 1);
  for (size_t i = 0; i < table.size(); ++i) table[i] = f32_to_bf16(values[i]);
  table[5 * kC + 3] = 0x8000;  // −0
  std::vector<float> out(static_cast<size_t>(Tn * kC));
  embedding_forward(view_of(out.data(), Tn, kC), ids.data(), view_of(table.data(), kV, kC));
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t j = 0; j < kC; ++j)
      ASSERT_EQ(out[t * kC + j], bf16_to_f32(table[ids[t] * kC + j])) << "token " << t;
  ASSERT_TRUE(std::signbit(out[8 * kC + 3]));  // row 8 is id 5
  for (int ranks : {2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks, bf16 table");
    const int64_t rows = kV / ranks;
    std::vector<std::vector<float>> outs(static_cast<size_t>(ranks));
    ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
      const size_t r = static_cast<size_t>(g.rank());
      const int64_t begin = g.rank() * rows;
      outs[r].assign(out.size(), NAN);
      embedding_forward(view_of(outs[r].data(), Tn, kC), ids.data(),
                        view_of(table.data() + begin * kC, rows, kC), VocabShard{begin, &g});
    });
    for (int r = 0; r < ranks; ++r)
      EXPECT_TRUE(same_bits(outs[static_cast<size_t>(r)], out.data()));
  }
}

}  // namespace
}  // namespace sft::ops
