// The NCCL device communicator (parallel/device_comm.h) against the host Comm on the same
// values, on every rank of an mpirun: all_reduce_sum (f32, f64), reduce_scatter_sum and
// all_gather (f32, 16-bit) in shard_of's layout with sizes that divide by the ranks and that do
// not, broadcast; each run twice for the same bits. Sums: NCCL's order in the element type vs
// Comm's double sums in rank order, within (size − 1)·2⁻²⁴·Σ|x| + 2⁻²⁴·|sum| per element (the
// float rounding of a size-term sum, then Comm's own rounding); at 2 ranks the measured
// difference is 0. The movers (gathers, broadcast) are exact. In the emulation also: a host
// pointer is refused naming the call, and the model's group (CommShardGroup) sends device
// spans to NCCL and host spans to the Comm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "nccl_test_support.h"
#include "parallel/device_comm.h"
#include "parallel/groups.h"

#ifdef SFT_NCCL_EMULATED
#include <nccl.h>  // the emulation's nccl_emulated_calls
#endif

namespace sft {
namespace {

using nccl_test::DeviceArray;
using nccl_test::world;

DeviceComm& device_world() {
  static std::unique_ptr<DeviceComm> d = make_device_comm(world());
  return *d;
}

// This rank's values: normal, scaled by the element's position so magnitudes vary.
template <typename T>
std::vector<T> values_of(size_t n, uint64_t stream) {
  Rng rng(20261204, stream * 97 + static_cast<uint64_t>(world().rank()));
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(rng.normal() * (1.0 + double(i % 13)));
  return v;
}

// Max over elements of |got − ref| / bound, the bound as in the file comment; Σ|x| from the
// host Comm. Prints the largest absolute difference.
template <typename T>
double worst_over_bound(const std::vector<T>& got, const std::vector<T>& ref,
                        const std::vector<T>& mine, size_t begin, size_t end, const char* what) {
  std::vector<double> abs_sum(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) abs_sum[i] = std::fabs(double(mine[i]));
  world().all_reduce_sum(std::span<double>(abs_sum));
  const double u = std::ldexp(1.0, -24), ranks = world().size();
  double worst = 0, largest = 0;
  for (size_t i = begin; i < end; ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    const double bound = (ranks - 1) * u * abs_sum[i] + u * std::fabs(double(ref[i]));
    largest = std::max(largest, d);
    worst = std::max(worst, d == 0 ? 0.0 : d / bound);
  }
  if (world().rank() == 0)
    std::printf("[nccl] %s: max |nccl - comm| %.3g (%.3g of the bound)\n", what, largest, worst);
  return worst;
}

TEST(NcclComm, SpansTheHostCommsRanks) {
  SFT_SKIP_WITHOUT_RANKS();
  EXPECT_EQ(device_world().rank(), world().rank());
  EXPECT_EQ(device_world().size(), world().size());
  EXPECT_EQ(device_world().kind(), "nccl");
  EXPECT_TRUE(nccl_built());
}

TEST(NcclComm, AllReduceF32IsCommsSumWithinTheBoundAndRepeats) {
  SFT_SKIP_WITHOUT_RANKS();
  for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{4099}}) {
    const std::vector<float> mine = values_of<float>(n, n);
    std::vector<float> host = mine;
    world().all_reduce_sum(std::span<float>(host));
    DeviceArray<float> a(mine), b(mine);
    device_world().all_reduce_sum(a.data(), n);
    device_world().all_reduce_sum(b.data(), n);
    const std::vector<float> got = a.read(), again = b.read();
    EXPECT_LE(worst_over_bound(got, host, mine, 0, n, "all_reduce_sum(f32)"), 1.0) << n;
    EXPECT_EQ(std::memcmp(got.data(), again.data(), n * sizeof(float)), 0) << "rerun, n " << n;
    if (world().size() == 2)  // a sum of two floats rounds the same in float and in double
      EXPECT_EQ(std::memcmp(got.data(), host.data(), n * sizeof(float)), 0) << n;
  }
}

TEST(NcclComm, AllReduceF64IsCommsSumWithinTheBound) {
  SFT_SKIP_WITHOUT_RANKS();
  const size_t n = 333;
  const std::vector<double> mine = values_of<double>(n, 5);
  std::vector<double> host = mine;
  world().all_reduce_sum(std::span<double>(host));
  DeviceArray<double> a(mine);
  device_world().all_reduce_sum(a.data(), n);
  EXPECT_LE(worst_over_bound(a.read(), host, mine, 0, n, "all_reduce_sum(f64)"), 1.0);
}

TEST(NcclComm, ReduceScatterLeavesCommsShardsWithinTheBound) {
  SFT_SKIP_WITHOUT_RANKS();
  // 4096 divides by 2 and 4 (ncclReduceScatter), 1001 by neither (grouped ncclReduce).
  for (size_t n : {size_t{4096}, size_t{1001}, size_t{3}}) {
    const std::vector<float> mine = values_of<float>(n, 100 + n);
    std::vector<float> host = mine;
    world().reduce_scatter_sum(std::span<float>(host));
    DeviceArray<float> a(mine), b(mine);
    device_world().reduce_scatter_sum(a.data(), n);
    device_world().reduce_scatter_sum(b.data(), n);
    const ShardRange s = world().my_shard(n);
    const std::vector<float> got = a.read(), again = b.read();
    EXPECT_LE(worst_over_bound(got, host, mine, s.begin, s.end, "reduce_scatter_sum(f32)"), 1.0)
        << n;
    EXPECT_EQ(std::memcmp(got.data() + s.begin, again.data() + s.begin, s.size() * sizeof(float)),
              0)
        << "rerun, n " << n;
  }
}

TEST(NcclComm, AllGatherIsCommsExactly) {
  SFT_SKIP_WITHOUT_RANKS();
  for (size_t n : {size_t{4096}, size_t{1001}, size_t{5}}) {
    const std::vector<float> mine = values_of<float>(n, 200 + n);
    std::vector<float> host = mine;
    world().all_gather(std::span<float>(host));
    DeviceArray<float> a(mine);
    device_world().all_gather(a.data(), n);
    EXPECT_EQ(a.read(), host) << "f32, n " << n;

    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i) bits[i] = f32_to_bf16(mine[i]);
    std::vector<uint16_t> host_bits = bits;
    world().all_gather(std::span<uint16_t>(host_bits));
    DeviceArray<uint16_t> b(bits);
    device_world().all_gather(b.data(), n);
    EXPECT_EQ(b.read(), host_bits) << "16-bit, n " << n;
  }
}

TEST(NcclComm, BroadcastIsTheRootsValues) {
  SFT_SKIP_WITHOUT_RANKS();
  const int root = world().size() - 1;
  const std::vector<float> mine = values_of<float>(77, 9);
  std::vector<float> host = mine;
  world().broadcast(std::span<float>(host), root);
  DeviceArray<float> a(mine);
  device_world().broadcast(a.data(), mine.size(), root);
  EXPECT_EQ(a.read(), host);
}

TEST(NcclComm, KnowsDeviceMemoryFromHostMemory) {
  SFT_SKIP_WITHOUT_RANKS();
  DeviceArray<float> a(std::vector<float>(8, 1.0f));
  std::vector<float> host(8, 1.0f);
  EXPECT_TRUE(device_world().is_device_memory(a.data()));
  EXPECT_FALSE(device_world().is_device_memory(host.data()));
}

#ifdef SFT_NCCL_EMULATED
TEST(NcclComm, EmulationRefusesHostMemoryNamingTheCall) {
  SFT_SKIP_WITHOUT_RANKS();
  std::vector<float> host(8, 1.0f);
  try {
    device_world().all_reduce_sum(host.data(), host.size());  // every rank fails alike
    ADD_FAILURE() << "a host pointer reached the emulated NCCL";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ncclAllReduce"), std::string::npos) << what;
    EXPECT_NE(what.find("not device memory"), std::string::npos) << what;
  }
}

TEST(NcclComm, ModelGroupSendsDeviceSpansToNcclAndHostSpansToTheComm) {
  SFT_SKIP_WITHOUT_RANKS();
  CommShardGroup group(world());
  group.attach_device(&device_world());
  const std::vector<float> mine = values_of<float>(64, 31);
  std::vector<float> host = mine, expected = mine;
  world().all_reduce_sum(std::span<float>(expected));
  DeviceArray<float> a(mine);
  const long before = nccl_emulated_calls();
  group.sum(std::span<float>(a.data(), mine.size()));
  EXPECT_EQ(nccl_emulated_calls(), before + 1);
  group.sum(std::span<float>(host));
  EXPECT_EQ(nccl_emulated_calls(), before + 1);  // the host span went through the Comm
  EXPECT_EQ(host, expected);
  EXPECT_LE(worst_over_bound(a.read(), expected, mine, 0, mine.size(), "group sum(f32)"), 1.0);
  // gather: world().size() equal blocks
  std::vector<float> blocks = values_of<float>(8 * size_t(world().size()), 32),
                     host_blocks = blocks;
  world().all_gather(std::span<float>(host_blocks));
  DeviceArray<float> g(blocks);
  group.gather(std::span<float>(g.data(), blocks.size()));
  EXPECT_EQ(g.read(), host_blocks);
  EXPECT_EQ(nccl_emulated_calls(), before + 2);
}
#endif

}  // namespace
}  // namespace sft
