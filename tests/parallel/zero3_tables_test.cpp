// ZeRO-3's tables without the whole table on a rank, on however many ranks this binary runs
// (alone, and under mpirun -np 2 / 3 via mpi_tests.cmake): the lookup's rows fetched from their
// owners (optim/zero3_rows.h), the LM head's weight a vocabulary block at a time
// (optim/zero3_head.h) and its gradient reduced a block at a time with the lookup's rows left
// for the finish (Zero2Grads::reduce_early): each the same bits as the whole-table path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "ops/lm_head_ce.h"
#include "optim/zero2.h"
#include "optim/zero3_head.h"
#include "optim/zero3_rows.h"
#include "optim/zero_memory.h"
#include "parallel/comm.h"
#include "parallel/test_world.h"

namespace sft {
namespace {

using test::world;

// An arena of 3 before the table, a table of 40 rows of width 7 (rows straddle the shards),
// 5 after.
constexpr size_t kWidth = 7, kRows = 40, kN = 3 + kRows * kWidth + 5;
constexpr ShardRange kTable = {3, 3 + kRows* kWidth};

float value_of(size_t i) {
  return float(i % 31) * 0.25f - 3.0f;
}

// The whole values, and this rank's sharded copy: the own shard and zeros elsewhere.
std::vector<float> sharded_values(Comm& c) {
  std::vector<float> v(kN, 0.0f);
  const ShardRange own = c.my_shard(kN);
  for (size_t i = own.begin; i < own.end; ++i) v[i] = value_of(i);
  return v;
}

TEST(Zero3TableRows, FetchesTheWantedRowsWholeAndReleasesThem) {
  Comm& c = world();
  std::vector<float> v = sharded_values(c);
  const std::vector<float> before = v;
  // Per rank different ids, repeated, one outside the table (not fetched).
  const auto r = static_cast<int64_t>(c.rank());
  const std::vector<int64_t> ids = {5 + r, 0, 39, 5 + r, 17 + 3 * r, 40, 0};
  Zero3TableRows rows(c, kTable, kWidth);
  rows.fetch(v, ids);
  size_t bad = 0;
  for (size_t i = 0; i < kN; ++i) {
    const bool in_table = i >= kTable.begin && i < kTable.end;
    const int64_t row = in_table ? int64_t((i - kTable.begin) / kWidth) : -1;
    const bool wanted = std::find(ids.begin(), ids.end(), row) != ids.end() && row < 40;
    bad += v[i] != (wanted ? value_of(i) : before[i]);
  }
  EXPECT_EQ(bad, 0u);
  // Every rank's rows meeting a range, cut to it: the same list everywhere.
  const std::vector<ShardRange> any = rows.any_fetched_in({kTable.begin + 4, kTable.begin + 120});
  std::vector<size_t> firsts;
  for (const ShardRange& p : any) firsts.push_back(p.begin);
  std::vector<size_t> want = {kTable.begin + 4};  // row 0, cut
  for (int k = 0; k < c.size(); ++k) want.push_back(kTable.begin + (5 + size_t(k)) * kWidth);
  if (c.size() >= 1) want.push_back(kTable.begin + 17 * kWidth);  // row 17 (k = 0)
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  EXPECT_EQ(firsts, want);
  EXPECT_EQ(any.front().end, kTable.begin + kWidth);
  rows.release(v);
  EXPECT_EQ(v, before);
}

TEST(Zero3HeadBlocks, BlocksAreTheWholeRowsAndChunksTheMostOfAnyRank) {
  Comm& c = world();
  std::vector<float> v = sharded_values(c);
  std::vector<ShardRange> done;
  Zero3HeadBlocks blocks(c, kTable, kWidth,
                         [&](ShardRange r, std::span<float>) { done.push_back(r); });
  blocks.begin(v, {}, true);
  EXPECT_EQ(blocks.chunks(c.rank() + 1), c.size());
  for (const auto& [v0, v1] : {std::pair<int64_t, int64_t>{0, 16}, {16, 32}, {32, 40}, {32, 40}}) {
    const float* rows = blocks.rows(v0, v1);
    size_t bad = 0;
    for (size_t i = 0; i < size_t(v1 - v0) * kWidth; ++i)
      bad += rows[i] != value_of(kTable.begin + size_t(v0) * kWidth + i);
    EXPECT_EQ(bad, 0u) << "rows " << v0 << "-" << v1;
  }
  blocks.grad_done(16, 32);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].begin, kTable.begin + 16 * kWidth);
  EXPECT_EQ(done[0].end, kTable.begin + 32 * kWidth);
  blocks.end();
  // Not sharded (evaluation): rows in place, no collective.
  std::vector<float> whole(kN);
  for (size_t i = 0; i < kN; ++i) whole[i] = value_of(i);
  blocks.begin(whole, {}, false);
  EXPECT_EQ(blocks.rows(2, 3), whole.data() + kTable.begin + 2 * kWidth);
  EXPECT_EQ(blocks.chunks(c.rank()), c.rank());
  blocks.end();
}

// With one row chunk on every rank a block's gradient goes into the kept buffer, seeded with
// the arena's rows (the own part's sums so far, zeros elsewhere), except on a rank that owns the
// block whole: it adds to the arena in place, and grad_done hands over no buffer.
TEST(Zero3HeadBlocks, GradientBlocksInTheBufferExceptWhereOneRankOwnsThemWhole) {
  Comm& c = world();
  std::vector<float> v = sharded_values(c);
  std::vector<float> g = sharded_values(c);  // the own part's sums so far, zeros elsewhere
  std::vector<size_t> handed;                // the size of each buffer grad_done handed over
  Zero3HeadBlocks blocks(c, kTable, kWidth,
                         [&](ShardRange, std::span<float> b) { handed.push_back(b.size()); });
  blocks.begin(v, g, true);
  ASSERT_EQ(blocks.chunks(1), 1);
  const ShardRange own = c.my_shard(kN);
  for (const auto& [v0, v1] : {std::pair<int64_t, int64_t>{0, 16}, {16, 32}, {32, 40}}) {
    const size_t b = kTable.begin + size_t(v0) * kWidth, e = kTable.begin + size_t(v1) * kWidth;
    const bool owner = own.begin <= b && e <= own.end;
    float* rows = blocks.grad_rows(v0, v1);
    if (owner) {
      EXPECT_EQ(rows, nullptr) << "rows " << v0 << "-" << v1;
    } else {
      ASSERT_NE(rows, nullptr) << "rows " << v0 << "-" << v1;
      size_t bad = 0;
      for (size_t i = b; i < e; ++i) bad += rows[i - b] != g[i];
      EXPECT_EQ(bad, 0u) << "rows " << v0 << "-" << v1;
    }
    blocks.grad_done(v0, v1);
    ASSERT_FALSE(handed.empty());
    EXPECT_EQ(handed.back(), owner ? 0u : e - b) << "rows " << v0 << "-" << v1;
  }
  blocks.end();
}

// Values that round when summed in another order (thirds and sevenths, not dyadic).
float grad_of(int rank, size_t i) {
  return float((i * 37) % 101 + 1) / 7.0f * (float(rank) + 1.3f);
}

// The head's gradient reduced a block at a time, the lookup's rows left for the finish and
// added to after: the same bits as one reduction of the whole range after everything.
TEST(Zero2Grads, EarlyBlocksWithRowsLeftForLaterAreTheFinishsBits) {
  Comm& c = world();
  const std::vector<ShardRange> no_layers;
  const std::vector<ShardRange> later = {{kTable.begin + 14, kTable.begin + 21},
                                         {kTable.begin + 70, kTable.begin + 77}};
  // early 0: all at the finish; 1: blocks reduced in the arena; 2: from a block buffer (the
  // head's gradient added there, the arena's block untouched until its reduction).
  auto run = [&](int early) {
    std::vector<float> g(kN, 0.0f);
    Zero2Grads z(kN, no_layers, c);
    z.release_others(g);
    const std::vector<ShardRange> blocks = {{kTable.begin, kTable.begin + 56},
                                            {kTable.begin + 56, kTable.end}};
    for (size_t i = 0; i < kN; ++i)  // the head
      if (early < 2 || i < kTable.begin || i >= kTable.end) g[i] += grad_of(c.rank(), i);
    for (size_t b = 0; b < blocks.size() && early > 0; ++b) {
      const ShardRange r = blocks[b];
      std::vector<float> block;
      if (early == 2) {
        block.assign(g.begin() + long(r.begin), g.begin() + long(r.end));
        for (size_t i = r.begin; i < r.end; ++i) block[i - r.begin] += grad_of(c.rank(), i);
      }
      z.reduce_early(g, r, std::span(later).subspan(b, 1), block);
    }
    for (const ShardRange& p : later)  // the lookup's gradient, after the head's reduction
      for (size_t i = p.begin; i < p.end; ++i) g[i] += float(c.rank() + 1) / 3.0f;
    z.finish_micro_batch(g);
    return g;
  };
  const std::vector<float> plain = run(0);
  for (int early : {1, 2}) {
    const std::vector<float> g = run(early);
    size_t differ = 0;
    for (size_t i = 0; i < kN; ++i) differ += std::memcmp(&plain[i], &g[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << "early " << early;
  }
}

// A provider over a whole weight, as ZeRO-3's hands out gathered blocks, asking for more
// chunks than the call has (another rank's): the same bits as the whole weight, grad_done once
// per block.
class WholeBlocks final : public ops::LmHeadWeightBlocks {
 public:
  WholeBlocks(const float* w, int64_t C, int64_t extra) : w_(w), C_(C), extra_(extra) {}
  int64_t chunks(int64_t mine) override { return mine + extra_; }
  const float* rows(int64_t v0, int64_t) override {
    ++asked;
    return w_ + v0 * C_;
  }
  float* grad_rows(int64_t, int64_t) override { return nullptr; }
  void grad_done(int64_t v0, int64_t v1) override { done.push_back({v0, v1}); }
  int asked = 0;
  std::vector<std::pair<int64_t, int64_t>> done;

 private:
  const float* w_;
  int64_t C_, extra_;
};

TEST(LmHeadBlocks, BlocksGiveTheWholeWeightsBits) {
  const int64_t T = 6, C = 8, V = 37;
  std::vector<float> x(T * C), w(V * C);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 11) - 5) * 0.1f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.05f;
  const std::vector<int64_t> targets = {3, -1, 36, 0, 12, 5};
  ops::LmHeadWorkspace ws;
  ws.tuning = {.rows_per_chunk = 4, .vocab_block = 16};
  std::vector<std::byte> mem(ops::lm_head_kernel_workspace_bytes<float>(T, C, V, false, ws.tuning));
  ws.memory = ops::Workspace(mem.data(), mem.size());
  std::vector<float> dx1(T * C), dw1(V * C, 0.5f), dx2(T * C), dw2(V * C, 0.5f);
  const ops::LmHeadStats a = ops::lm_head_cross_entropy<float>(
      dx1.data(), dw1.data(), nullptr, x.data(), w.data(), targets.data(), 0.2f, T, C, V, ws);
  WholeBlocks blocks(w.data(), C, 1);
  const ops::LmHeadStats b = ops::lm_head_cross_entropy<float>(
      dx2.data(), dw2.data(), nullptr, x.data(), nullptr, targets.data(), 0.2f, T, C, V, ws, 0,
      nullptr, 0, 0.0f, &blocks);
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(dw1, dw2);
  // 5 scored rows in chunks of 4 → 2 chunks, plus 1 empty; 3 blocks, forward and gradient each.
  EXPECT_EQ(blocks.asked, 3 * 3 * 2);
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 16}, {16, 32}, {32, 37}};
  EXPECT_EQ(blocks.done, want);
}

}  // namespace
}  // namespace sft
