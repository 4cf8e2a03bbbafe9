// ZeRO-1 against plain AdamW on the summed gradients, on however many ranks this binary runs
// (alone, and under mpirun -np 2 / 3 via tests/parallel/mpi_tests.cmake): the weights and the
// gathered moments must match torch-style AdamW on one process to float rounding of the
// gradient sum (here exact: the per-rank gradients are small multiples of 2^-10).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "optim/zero1.h"
#include "parallel/comm.h"
#include "parallel/test_world.h"

namespace sft {
namespace {

using test::world;

TEST(SlicesInShard, CutsAndRebases) {
  const std::vector<ParamSlice> s = {{0, 10, true}, {10, 5, false}, {15, 20, true}};
  const std::vector<ParamSlice> in = slices_in_shard(s, {8, 16});
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].offset, 0u);
  EXPECT_EQ(in[0].size, 2u);
  EXPECT_EQ(in[1].offset, 2u);
  EXPECT_EQ(in[1].size, 5u);
  EXPECT_FALSE(in[1].decay);
  EXPECT_EQ(in[2].offset, 7u);
  EXPECT_EQ(in[2].size, 1u);
}

TEST(Zero1, MatchesAdamWOnTheSummedGradients) {
  Comm& c = world();
  const size_t n = 1037;
  const std::vector<ParamSlice> slices = {{0, 500, true}, {500, 37, false}, {537, 500, true}};
  AdamWOptions o;
  o.weight_decay = 0.1;
  std::vector<float> p0(n);
  Rng init(7);
  for (float& x : p0) x = init.normal();
  std::vector<float> p_ref = p0, p_z = p0;
  AdamW ref(n, o);
  Zero1 z(n, o, c);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g_sum(n, 0.0f), g_mine(n);
    for (int r = 0; r < c.size(); ++r) {
      Rng rng(100 + uint64_t(step) * 31 + uint64_t(r));
      for (size_t i = 0; i < n; ++i) {
        const float g = std::round(rng.normal() * 64.0f) / 1024.0f;
        g_sum[i] += g;
        if (r == c.rank()) g_mine[i] = g;
      }
    }
    const double ref_norm = clip_grad_norm(g_sum, 1.0);
    ref.step(p_ref, g_sum, slices, 1e-2);
    const double norm = z.reduce_gradients(g_mine);
    z.step(p_z, g_mine, slices, 1e-2, nullptr, clip_coefficient(norm, 1.0));
    EXPECT_NEAR(norm, ref_norm, 1e-12 * ref_norm);
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += std::fabs(p_z[i] - p_ref[i]) > 1e-6f * std::fabs(p_ref[i]);
  EXPECT_EQ(bad, 0u);
  AdamW whole(n, o);
  z.gather_into(whole);
  EXPECT_EQ(whole.steps_taken(), 3);
  const auto m = whole.exp_avg().values<float>(), m_ref = ref.exp_avg().values<float>();
  bad = 0;
  for (size_t i = 0; i < n; ++i) bad += std::fabs(m[i] - m_ref[i]) > 1e-6f * std::fabs(m_ref[i]);
  EXPECT_EQ(bad, 0u);
  // Optimizer memory per rank is the own shard's two moments.
  EXPECT_EQ(z.state_bytes(), int64_t(2 * c.my_shard(n).size() * sizeof(float)));
  Zero1 back(n, o, c);
  back.load_from(whole);
  EXPECT_EQ(back.shard_optimizer().steps_taken(), 3);
}

}  // namespace
}  // namespace sft
