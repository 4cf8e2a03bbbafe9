// ZeRO-2's per-layer gradient reduction and ZeRO-3's per-layer weight gathering on however
// many ranks this binary runs (alone, and under mpirun -np 2 / 3 via mpi_tests.cmake), against
// the plain sums and the whole arrays: after each micro-batch only the own shard holds (the
// sum of) anything, and a gathered layer equals the whole weights.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

#include "optim/zero2.h"
#include "optim/zero3.h"
#include "optim/zero_memory.h"
#include "parallel/comm.h"
#include "parallel/test_world.h"

namespace sft {
namespace {

using test::world;

// A 3-layer arena: 5 outside, layer runs of 301, 0 and 4099 (past a page), 7 outside.
const std::vector<ShardRange> kRuns = {{5, 306}, {306, 306}, {306, 4405}};
constexpr size_t kN = 4412;

float grad_of(int rank, int micro_batch, size_t i) {
  return float((i % 97) + 1) / 64.0f * float(rank + 1) + float(micro_batch);
}

TEST(Zero2Grads, PerLayerReductionLeavesTheOwnShardsSums) {
  Comm& c = world();
  std::vector<float> g(kN, 0.0f);
  Zero2Grads z(kN, kRuns, c);
  z.release_others(g);
  for (int mb = 0; mb < 2; ++mb) {
    for (size_t i = 0; i < kN; ++i) g[i] += grad_of(c.rank(), mb, i);
    for (int64_t l = 2; l >= 0; --l) z.layer_done(g, l);  // in backward order
    z.finish_micro_batch(g);
  }
  const ShardRange mine = c.my_shard(kN);
  size_t bad = 0;
  for (size_t i = 0; i < kN; ++i) {
    double want = 0;
    if (i >= mine.begin && i < mine.end)
      for (int r = 0; r < c.size(); ++r) want += grad_of(r, 0, i) + grad_of(r, 1, i);
    if (c.size() == 1) want = grad_of(0, 0, i) + grad_of(0, 1, i);
    bad += std::fabs(g[i] - want) > 1e-6 * std::fabs(want);
  }
  EXPECT_EQ(bad, 0u);
  z.zero_own(g);
  for (float v : g) bad += v != 0.0f;
  EXPECT_EQ(bad, 0u);
}

TEST(Zero3Params, LayersAreWholeWhileGatheredAndOwnShardsOtherwise) {
  Comm& c = world();
  std::vector<float> whole(kN), v(kN);
  std::vector<uint16_t> whole_h(kN), h(kN);
  for (size_t i = 0; i < kN; ++i) {
    whole[i] = v[i] = float(i) * 0.5f + 1;
    whole_h[i] = h[i] = uint16_t(i + 1);
  }
  Zero3Params z(kN, kRuns, c);
  z.release_layers(v, h);
  EXPECT_TRUE(z.sharded());
  const ShardRange mine = c.my_shard(kN);
  auto own_or_outside = [&](size_t i) {
    const bool in_layer = i >= 5 && i < 4405;
    return c.size() == 1 || !in_layer || (i >= mine.begin && i < mine.end);
  };
  size_t bad = 0;
  for (size_t i = 0; i < kN; ++i) {
    bad += v[i] != (own_or_outside(i) ? whole[i] : 0.0f);
    bad += h[i] != (own_or_outside(i) ? whole_h[i] : uint16_t(0));
  }
  EXPECT_EQ(bad, 0u);
  z.gather_layer(v, h, 2);
  for (size_t i = 306; i < 4405; ++i) bad += v[i] != whole[i] || h[i] != whole_h[i];
  EXPECT_EQ(bad, 0u);
  z.release_layer(v, h, 2);
  for (size_t i = 306; i < 4405; ++i) bad += v[i] != (own_or_outside(i) ? whole[i] : 0.0f);
  EXPECT_EQ(bad, 0u);
  z.gather_everything(v, h);
  EXPECT_FALSE(z.sharded());
  EXPECT_EQ(v, whole);
  EXPECT_EQ(h, whole_h);
}

// The next layer's gather in flight (MPI_Iallgatherv) while other collectives run: the same
// bits as the blocking gather; a layer started and not asked for is freed again.
TEST(Zero3Params, PrefetchedLayersAreTheBlockingGathersBits) {
  Comm& c = world();
  std::vector<float> whole(kN), v(kN), blocking(kN);
  std::vector<uint16_t> whole_h(kN), h(kN);
  for (size_t i = 0; i < kN; ++i) {
    whole[i] = v[i] = float(i) * 0.5f + 1;
    whole_h[i] = h[i] = uint16_t(i + 1);
  }
  const ShardRange mine = c.my_shard(kN);
  auto own_or_outside = [&](size_t i) {
    const bool in_layer = i >= 5 && i < 4405;
    return c.size() == 1 || !in_layer || (i >= mine.begin && i < mine.end);
  };
  // Comm alone: a started gather with a reduction in between, against the blocking one.
  for (size_t i = 0; i < kN; ++i) blocking[i] = own_or_outside(i) ? whole[i] : 0.0f;
  std::vector<float> started = blocking;
  std::unique_ptr<Comm::Pending> p = c.all_gather_start(started, 306, 4405);
  std::vector<double> sum = {1.0};
  c.all_reduce_sum(std::span<double>(sum));
  c.wait(p);
  EXPECT_EQ(sum[0], double(c.size()));
  c.all_gather(blocking, 306, 4405);
  EXPECT_EQ(started, blocking);

  Zero3Params z(kN, kRuns, c);
  z.release_layers(v, h);
  size_t bad = 0;
  z.gather_layer(v, h, 0, 2);  // layer 0 whole, layer 2's gather in flight
  for (size_t i = 5; i < 306; ++i) bad += v[i] != whole[i] || h[i] != whole_h[i];
  z.release_layer(v, h, 0);
  z.gather_layer(v, h, 2, 1);  // completes 2; layer 1 is empty: nothing started
  for (size_t i = 306; i < 4405; ++i) bad += v[i] != whole[i] || h[i] != whole_h[i];
  EXPECT_EQ(bad, 0u);
  z.release_layer(v, h, 2);
  z.gather_layer(v, h, 2, 0);
  z.release_layer(v, h, 2);
  z.gather_layer(v, h, 2, -1);  // 0 was started, never asked for: freed
  z.release_layer(v, h, 2);
  for (size_t i = 0; i < kN; ++i) bad += v[i] != (own_or_outside(i) ? whole[i] : 0.0f);
  EXPECT_EQ(bad, 0u);
}

// The embedding and LM head as per-use runs around two layers and a final norm kept whole:
// embedding [0, 2000), layers [2000, 3000) and [3000, 4100), norm [4100, 4110), head
// [4110, 6110).
TEST(Zero3Params, PerUseRunsAreWholeOnlyWhileGathered) {
  Comm& c = world();
  constexpr size_t n = 6110;
  const ShardRange embed = {0, 2000}, norm = {4100, 4110}, head = {4110, 6110};
  std::vector<float> whole(n), v(n);
  std::vector<uint16_t> whole_h(n), h(n);
  for (size_t i = 0; i < n; ++i) {
    whole[i] = float(i) * 0.25f + 2;
    whole_h[i] = uint16_t(i + 3);
  }
  // A rank loaded only its shard (model/held_values.h): everything else zero.
  const ShardRange mine = c.my_shard(n);
  const auto own = [&](size_t i) { return c.size() == 1 || (i >= mine.begin && i < mine.end); };
  for (size_t i = 0; i < n; ++i) {
    v[i] = own(i) ? whole[i] : 0.0f;
    h[i] = own(i) ? whole_h[i] : uint16_t(0);
  }
  Zero3Params z(n, {{2000, 3000}, {3000, 4100}}, c, {embed, head});
  z.release_layers(v, h);
  z.gather_kept_whole(v, h);  // the start of training: the norm whole on every rank
  const auto in = [](ShardRange r, size_t i) { return i >= r.begin && i < r.end; };
  // `f32` whole in the values, `b16` in the bf16 copies; the rest the own shard or the norm.
  auto count_bad = [&](ShardRange f32, ShardRange b16) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool base = in(norm, i) || own(i);
      bad += v[i] != (base || in(f32, i) ? whole[i] : 0.0f);
      bad += h[i] != (base || in(b16, i) ? whole_h[i] : uint16_t(0));
    }
    return bad;
  };
  const ShardRange none = {0, 0};
  EXPECT_EQ(count_bad(none, none), 0u);
  z.gather_run(v, {}, embed);  // the lookup: the fp32 table only
  EXPECT_EQ(count_bad(embed, none), 0u);
  z.release_run(v, {}, embed);
  EXPECT_EQ(count_bad(none, none), 0u);
  z.gather_run({}, h, head);  // a bf16 head: its bf16 copy only
  EXPECT_EQ(count_bad(none, head), 0u);
  z.gather_run(v, h, head);  // the fp32 form added, the bf16 one already whole
  EXPECT_EQ(count_bad(head, head), 0u);
  // Already whole: not gathered again (a tied fp32 table held from the lookup to the head).
  const size_t other = mine.begin == head.begin ? head.end - 1 : head.begin;
  v[other] = -1.0f;
  z.gather_run(v, h, head);
  EXPECT_EQ(v[other], -1.0f);
  v[other] = whole[other];
  z.release_run({}, h, head);
  EXPECT_EQ(count_bad(head, none), 0u);
  z.release_run(v, h, head);
  z.release_run(v, h, head);  // already freed: nothing
  EXPECT_EQ(count_bad(none, none), 0u);
  // A checkpoint's tensor inside the head, then freed again.
  z.gather_range(v, 5000, 6000);
  EXPECT_EQ(count_bad({5000, 6000}, none), 0u);
  z.release_range(v, 5000, 6000);
  EXPECT_EQ(count_bad(none, none), 0u);
  z.gather_everything(v, h);
  EXPECT_EQ(v, whole);
  EXPECT_EQ(h, whole_h);
  // Only a declared per-use run may be gathered per use.
  try {
    z.gather_run(v, h, {4100, 4110});
    FAIL() << "the norm is not a per-use run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[optim] ZeRO-3: [4100, 4110) is not one of the runs"),
              std::string::npos)
        << e.what();
  }
  // A tied table named as both the embedding and the head is one run.
  Zero3Params tied(n, {{2000, 3000}, {3000, 4100}}, c, {embed, embed});
  tied.release_layers(v, h);
  tied.gather_run(v, h, embed);
  tied.release_run(v, h, embed);
}

TEST(LayerRuns, OneRunPerLayerOrNone) {
  const std::vector<ParamPlace> good = {{-1, 0, 10}, {0, 10, 5}, {0, 15, 5}, {1, 20, 8}};
  const std::vector<ShardRange> runs = layer_runs(good, 2);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].begin, 10u);
  EXPECT_EQ(runs[0].end, 20u);
  EXPECT_EQ(runs[1].begin, 20u);
  EXPECT_EQ(runs[1].end, 28u);
  // Layer 1's tensor between layer 0's: no per-layer runs.
  const std::vector<ParamPlace> interleaved = {{0, 0, 5}, {1, 5, 5}, {0, 10, 5}};
  EXPECT_TRUE(layer_runs(interleaved, 2).empty());
}

TEST(ZeroMemory, ReleasedPagesReadAsZero) {
  std::vector<float> v(5000, 3.0f);
  zero_and_release(v.data() + 7, 4000 * sizeof(float));
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += v[i] != (i >= 7 && i < 4007 ? 0.0f : 3.0f);
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace sft
