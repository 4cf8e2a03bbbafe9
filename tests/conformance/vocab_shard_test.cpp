// Conformance of the vocabulary-parallel forms (tensor parallelism) of ops::embedding_* and
// ops::lm_head_cross_entropy: on every backend, f32 and bf16, 2 and 4 ranks of a thread
// ShardGroup, against the same sharded run in f64 on the CPU; and the f64 sharded gradients
// against finite differences of the sharded loss. (tests/ops/*_shard_test.cpp compare the
// shards with the whole head and table; this file is what a new backend must pass.)
//
// Outputs: the statistics and dx of rank 0 (every rank must hold the same bits, checked
// inside the run), dw and dtable as the ranks' blocks one after another, out of the embedding.
// Tolerances as lm_head_test.cpp and embedding_test.cpp: f32 1e-5 (statistics, dx, dw), bf16
// 1e-3 statistics (bf16 logits) and 1e-2 dx and dw; count and correct exact; embedding out 0,
// dtable 1e-6.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance.h"
#include "test_workspace.h"
#include "thread_shard_group.h"

namespace sft::conformance {
namespace {

using sft::testing::ThreadShardGroups;

struct ShardCase {
  int ranks;
  int64_t C, V;
  std::vector<int64_t> targets;  // whole-vocabulary ids, or -1
  double scale;
};

std::vector<int64_t> some_targets(int64_t T, int64_t V) {
  std::vector<int64_t> t(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) t[i] = i % 6 == 4 ? -1 : (i * 29 + 7) % V;
  return t;
}

Outputs run_lm_head_shard(const ShardCase& c, const Backend& be, Mode m) {
  const int64_t T = static_cast<int64_t>(c.targets.size()), rows = c.V / c.ranks;
  const DType out = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  const Values x = random_values(T * c.C, 1, 1.0, m.grid);
  const Values w = random_values(c.V * c.C, 2, 0.3, m.grid);
  const Values dw0 = random_values(c.V * c.C, 3, kAccumulateStart, DType::kF32);
  std::vector<ops::LmHeadStats> stats(static_cast<size_t>(c.ranks));
  std::vector<Values> dx(static_cast<size_t>(c.ranks)), dw(static_cast<size_t>(c.ranks));
  ThreadShardGroups::run(c.ranks, [&](ShardGroup& g) {
    const size_t r = static_cast<size_t>(g.rank());
    const int64_t begin = g.rank() * rows;
    IdBuffer targets(be, c.targets);
    Buffer X(be, m.dtype, T, c.C, x);
    Buffer W(be, m.dtype, rows, c.C,
             Values(w.begin() + begin * c.C, w.begin() + (begin + rows) * c.C));
    Buffer DX(be, out, T, c.C, Values(T * c.C, kNaN));
    Buffer DW(be, out, rows, c.C,
              Values(dw0.begin() + begin * c.C, dw0.begin() + (begin + rows) * c.C));
    ops::WorkspaceArena arena;  // this rank's
    stats[r] = ops::lm_head_cross_entropy(
        DX.view(), DW.view(), View{}, X.view(), W.view(), targets.data(), c.scale,
        test::lm_head_workspace(arena, X.view(), W.view(), false, true),
        ops::VocabShard{begin, &g});
    dx[r] = DX.read();
    dw[r] = DW.read();
  });
  Values dw_all;
  for (int r = 0; r < c.ranks; ++r) {
    const size_t q = static_cast<size_t>(r);
    EXPECT_TRUE(bit_identical(dx[q], dx[0])) << "dx of rank " << r;
    EXPECT_TRUE(bit_identical({stats[q].loss_sum, stats[q].entropy_sum},
                              {stats[0].loss_sum, stats[0].entropy_sum}))
        << "statistics of rank " << r;
    EXPECT_EQ(stats[q].correct, stats[0].correct);
    dw_all.insert(dw_all.end(), dw[q].begin(), dw[q].end());
  }
  return {{"loss_sum", {stats[0].loss_sum}},
          {"entropy_sum", {stats[0].entropy_sum}},
          {"count", {double(stats[0].count)}},
          {"correct", {double(stats[0].correct)}},
          {"dx", dx[0]},
          {"dw", dw_all}};
}

double lm_head_tolerance(DType dt, const std::string& out) {
  if (out == "count" || out == "correct") return 0;
  if (dt == DType::kBF16 && (out == "dx" || out == "dw")) return 1e-2;
  if (dt == DType::kBF16 && (out == "loss_sum" || out == "entropy_sum")) return 1e-3;
  return 1e-5;
}

SFT_CONFORMANCE_SUITE(ConformanceVocabShard);

TEST_P(ConformanceVocabShard, LmHead) {
  SFT_SKIP_WITHOUT_KERNEL("vocab_shard");
  const ShardCase cases[] = {{2, 16, 64, some_targets(40, 64), 1.0 / 33},
                             {4, 16, 64, some_targets(40, 64), 1.0 / 33},
                             {4, 24, 1000, some_targets(37, 1000), 0.5},
                             {2, 3, 2, {1, 0, -1, 1}, 1.0}};
  for (const ShardCase& c : cases)
    check_conformance(
        backend(),
        "lm_head_cross_entropy on " + std::to_string(c.ranks) +
            " vocabulary shards, V=" + std::to_string(c.V),
        [&](const Backend& be, Mode m) { return run_lm_head_shard(c, be, m); },
        {DType::kF32, DType::kBF16}, lm_head_tolerance);
}

// The f64 sharded gradients against central differences of the sharded scale · loss_sum.
TEST(ConformanceVocabShardReference, LmHeadGradientsMatchFiniteDifferences) {
  const int ranks = 2;
  const int64_t T = 6, C = 3, V = 8, rows = V / ranks;
  const std::vector<int64_t> targets = {7, 0, -1, 3, 4, 7};
  const double scale = 0.3;
  Values x = random_values(T * C, 4, 1.0, DType::kF64),
         w = random_values(V * C, 5, 1.0, DType::kF64);
  const Values dw0 = random_values(V * C, 6, 1.0, DType::kF64);
  Values dx(T * C), dw = dw0;
  // The sharded head on x and w; with gradients, dx (rank 0's) and dw (each rank's block).
  auto sharded = [&](bool grads) {
    std::vector<double> loss(ranks);
    ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
      const int64_t begin = g.rank() * rows;
      Values mine(dw.begin() + begin * C, dw.begin() + (begin + rows) * C), dxr(T * C);
      const View wr = ops::view_of(w.data() + begin * C, rows, C);
      ops::WorkspaceArena arena;  // this rank's
      loss[static_cast<size_t>(g.rank())] =
          scale * ops::lm_head_cross_entropy(
                      grads ? host_view(dxr, T, C) : View{},
                      grads ? host_view(mine, rows, C) : View{}, View{}, host_view(x, T, C), wr,
                      targets.data(), scale,
                      test::lm_head_workspace(arena, host_view(x, T, C), wr, false, true),
                      ops::VocabShard{begin, &g})
                      .loss_sum;
      if (!grads) return;
      std::copy(mine.begin(), mine.end(), dw.begin() + begin * C);
      if (g.rank() == 0) dx = dxr;
    });
    return loss[0];
  };
  sharded(true);
  const Values dx_got = dx, dw_got = gained(dw, dw0);
  auto f = [&] { return sharded(false); };
  EXPECT_LE(fd_error(x, f, dx_got), kFdTolerance);
  EXPECT_LE(fd_error(w, f, dw_got), kFdTolerance);
}

Outputs run_embedding_shard(int ranks, const Backend& be, Mode m) {
  const int64_t V = 64, C = 17;
  std::vector<int64_t> ids = {0, 63, 15, 16, 31, 32, 47, 48, 5, 5};
  for (int64_t t = 0; t < 25; ++t) ids.push_back((t * 7 + 3) % V);
  const int64_t T = static_cast<int64_t>(ids.size()), rows = V / ranks;
  const Values table = random_values(V * C, 1, 1.0, m.grid);
  const Values dout = random_values(T * C, 2, 1.0, m.grid);
  const Values dtable0 = random_values(V * C, 3, kAccumulateStart, m.grid);
  std::vector<Values> out(static_cast<size_t>(ranks)), dtable(static_cast<size_t>(ranks));
  ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
    const size_t r = static_cast<size_t>(g.rank());
    const int64_t begin = g.rank() * rows;
    IdBuffer I(be, ids);
    Buffer TB(be, m.dtype, rows, C,
              Values(table.begin() + begin * C, table.begin() + (begin + rows) * C));
    Buffer O(be, m.dtype, T, C, Values(T * C, kNaN)), DO(be, m.dtype, T, C, dout);
    Buffer DT(be, m.dtype, rows, C,
              Values(dtable0.begin() + begin * C, dtable0.begin() + (begin + rows) * C));
    const ops::VocabShard shard{begin, &g};
    ops::embedding_forward(O.view(), I.data(), TB.view(), shard);
    ops::embedding_backward(DT.view(), DO.view(), I.data(), shard);
    out[r] = O.read();
    dtable[r] = DT.read();
  });
  Values dtable_all;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(bit_identical(out[static_cast<size_t>(r)], out[0])) << "out of rank " << r;
    dtable_all.insert(dtable_all.end(), dtable[static_cast<size_t>(r)].begin(),
                      dtable[static_cast<size_t>(r)].end());
  }
  return {{"out", out[0]}, {"dtable", dtable_all}};
}

TEST_P(ConformanceVocabShard, Embedding) {
  SFT_SKIP_WITHOUT_KERNEL("vocab_shard");
  for (int ranks : {2, 4})
    check_conformance(
        backend(), "embedding on " + std::to_string(ranks) + " vocabulary shards",
        [&](const Backend& be, Mode m) { return run_embedding_shard(ranks, be, m); }, {DType::kF32},
        [](DType, const std::string& out) { return out == "out" ? 0.0 : 1e-6; });
}

}  // namespace
}  // namespace sft::conformance
