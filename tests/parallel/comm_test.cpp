// The collectives, on however many ranks this binary was started with: alone (ctest's
// discovered tests: the local communicator) and under mpirun -np 2 and -np 3
// (tests/parallel/mpi_tests.cmake). Expected values are closed forms in rank and size, exact in
// their types, so every rank checks its own result. Only EXPECTs (an early return would
// leave the other ranks waiting in the next collective); the watchdog ends a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "parallel/comm.h"
#include "parallel/test_world.h"
#include "parallel/watchdog.h"

namespace sft {
namespace {

using test::world;

double rank_sum(int size) {  // Σ (r + 1) over ranks
  return size * (size + 1) / 2.0;
}

TEST(ShardOf, CoversEveryElementOnceAndBalances) {
  for (size_t n : {0, 1, 7, 10, 1000003})
    for (int s : {1, 2, 3, 4, 7}) {
      size_t next = 0;
      for (int r = 0; r < s; ++r) {
        const ShardRange sh = shard_of(n, r, s);
        EXPECT_EQ(sh.begin, next);
        EXPECT_LE(sh.size(), n / s + 1);
        next = sh.end;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(Comm, AllReduceF32SumsInBucketsLargerThanOne) {
  Comm& c = world();
  const size_t n = Comm::kBucketElements + 1001;  // two buckets, uneven shards
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(c.rank() + 1) + float(i % 64) * 0.5f;
  c.all_reduce_sum(v);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += v[i] != float(rank_sum(c.size()) + c.size() * double(i % 64) * 0.5);
  EXPECT_EQ(bad, 0u);
}

TEST(Comm, AllReduceF64AndI64KeepTheirPrecision) {
  Comm& c = world();
  std::vector<double> d = {1e15 + c.rank(), 0.1};
  c.all_reduce_sum(d);
  EXPECT_EQ(d[0], 1e15 * c.size() + (rank_sum(c.size()) - c.size()));
  std::vector<int64_t> i = {(int64_t{1} << 40) + c.rank() + 1, -3};
  c.all_reduce_sum(i);
  EXPECT_EQ(i[0], (int64_t{1} << 40) * c.size() + int64_t(rank_sum(c.size())));
  EXPECT_EQ(i[1], -3 * c.size());
}

TEST(Comm, AllReduceMaxTakesTheLargestAndANaNWins) {
  const int r = world().rank(), n = world().size();
  // Element 0 peaks on the last rank, element 1 on rank 0, element 2 is NaN on rank 0 only.
  std::vector<float> f = {static_cast<float>(r), static_cast<float>(-r), r == 0 ? NAN : 1.0f};
  std::vector<double> d = {r + 0.5, -r - 0.5, r == 0 ? NAN : 1.0};
  world().all_reduce_max(std::span<float>(f));
  world().all_reduce_max(std::span<double>(d));
  EXPECT_EQ(f[0], static_cast<float>(n - 1));
  EXPECT_EQ(f[1], 0.0f);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(d[0], n - 0.5);
  EXPECT_EQ(d[1], -0.5);
  EXPECT_TRUE(std::isnan(d[2]));
}

TEST(Comm, AllReduceBf16SumsInFp32AndRoundsOnce) {
  Comm& c = world();
  std::vector<uint16_t> v = {f32_to_bf16(c.rank() == 0 ? 1.0f : 0.0f), f32_to_bf16(0x1p-9f),
                             f32_to_bf16(float(c.rank() + 1))};
  c.all_reduce_sum_bf16(v);
  EXPECT_EQ(bf16_to_f32(v[0]), 1.0f);
  EXPECT_EQ(v[1], f32_to_bf16(float(c.size()) * 0x1p-9f));
  EXPECT_EQ(bf16_to_f32(v[2]), float(rank_sum(c.size())));
  // Summed in fp32, rounded once: on 3 ranks 1 + 2·2^-8 = 1 + 2^-7 survives, while adding
  // 2^-8 to 1 in bf16 one rank at a time would stay at 1 (ties to even).
  std::vector<uint16_t> w = {f32_to_bf16(c.rank() == 0 ? 1.0f : 0x1p-8f)};
  c.all_reduce_sum_bf16(w);
  EXPECT_EQ(w[0], f32_to_bf16(1.0f + float(c.size() - 1) * 0x1p-8f));
}

TEST(Comm, ReduceScatterFillsOnlyTheOwnShard) {
  Comm& c = world();
  const size_t n = 1003;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i) * float(c.rank() + 1);
  c.reduce_scatter_sum(v);
  const ShardRange mine = c.my_shard(n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool own = i >= mine.begin && i < mine.end;
    bad += v[i] != float(i) * float(own ? rank_sum(c.size()) : c.rank() + 1);
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Comm, ReduceScatterOverSeveralBucketsKeepsTheWholeArrayShards) {
  Comm& c = world();
  const size_t n = 2 * Comm::kBucketElements + 5;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i % 1000) * float(c.rank() + 1);
  c.reduce_scatter_sum(v);
  const ShardRange mine = c.my_shard(n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool own = i >= mine.begin && i < mine.end;
    bad += v[i] != float(i % 1000) * float(own ? rank_sum(c.size()) : c.rank() + 1);
  }
  EXPECT_EQ(bad, 0u);
}

// A range of a larger array (ZeRO-2/3 per layer): only the range moves, and each rank's part of
// it is where its whole-array shard says, even when the range crosses shard boundaries.
TEST(Comm, RangeCollectivesKeepTheWholeArrayShards) {
  Comm& c = world();
  const size_t n = 1009, begin = 211, end = 877;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i) * float(c.rank() + 1);
  c.reduce_scatter_sum(v, begin, end);
  const ShardRange mine = c.my_shard(n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool summed = i >= std::max(begin, mine.begin) && i < std::min(end, mine.end);
    bad += v[i] != float(i) * float(summed ? rank_sum(c.size()) : c.rank() + 1);
  }
  EXPECT_EQ(bad, 0u);
  std::vector<float> g(n, -1.0f);
  std::vector<uint16_t> h(n, 0xffff);
  for (size_t i = mine.begin; i < mine.end; ++i) {
    g[i] = float(i) * 10;
    h[i] = uint16_t(i);
  }
  c.all_gather(std::span<float>(g), begin, end);
  c.all_gather(std::span<uint16_t>(h), begin, end);
  bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool filled = (i >= begin && i < end) || (i >= mine.begin && i < mine.end);
    bad += g[i] != (filled ? float(i) * 10 : -1.0f);
    bad += h[i] != (filled ? uint16_t(i) : uint16_t(0xffff));
  }
  EXPECT_EQ(bad, 0u);
}

TEST(Comm, AllGatherAssemblesTheShards) {
  Comm& c = world();
  const size_t n = 1001;
  std::vector<float> v(n, -1.0f);
  std::vector<uint16_t> h(n, 0xffff);
  const ShardRange mine = c.my_shard(n);
  for (size_t i = mine.begin; i < mine.end; ++i) {
    v[i] = float(i) * 10;
    h[i] = uint16_t(i);
  }
  c.all_gather(std::span<float>(v));
  c.all_gather(std::span<uint16_t>(h));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += v[i] != float(i) * 10 || h[i] != uint16_t(i);
  EXPECT_EQ(bad, 0u);
}

TEST(Comm, BroadcastFromTheLastRank) {
  Comm& c = world();
  const int root = c.size() - 1;
  std::vector<float> v = {float(c.rank()), 2.5f};
  std::vector<int64_t> i = {c.rank() * 7};
  c.broadcast(v, root);
  c.broadcast(i, root);
  EXPECT_EQ(v[0], float(root));
  EXPECT_EQ(i[0], root * 7);
  c.barrier();
}

TEST(Comm, SumsAreTheSameBitsOnEveryRank) {
  Comm& c = world();
  Rng rng(1234 + uint64_t(c.rank()));
  std::vector<float> v(10007);
  for (float& x : v) x = static_cast<float>(rng.normal());
  c.all_reduce_sum(v);
  std::vector<float> from_root = v;
  c.broadcast(from_root, 0);
  EXPECT_EQ(std::memcmp(v.data(), from_root.data(), v.size() * sizeof(float)), 0);
}

// Rank r sends rank p a block of (r + 2p) % 4 elements (some empty, sending and receiving
// different amounts), each naming (r, p, i);
// in 2-byte and 8-byte elements (expert parallelism's bf16 rows and its counts).
TEST(Comm, AllToAllDeliversEachRanksBlockInRankOrder) {
  Comm& c = world();
  const int n = c.size(), me = c.rank();
  auto length = [](int from, int to) { return static_cast<size_t>((from + 2 * to) % 4); };
  auto value = [](int from, int to, size_t i) { return from * 100 + to * 10 + int(i); };
  std::vector<size_t> send_counts, recv_counts;
  std::vector<int64_t> send;
  std::vector<uint16_t> send16;
  for (int p = 0; p < n; ++p) {
    send_counts.push_back(length(me, p));
    recv_counts.push_back(length(p, me));
    for (size_t i = 0; i < length(me, p); ++i) {
      send.push_back(value(me, p, i));
      send16.push_back(static_cast<uint16_t>(value(me, p, i)));
    }
  }
  size_t total = 0;
  for (size_t k : recv_counts) total += k;
  std::vector<int64_t> recv(total, -1);
  std::vector<uint16_t> recv16(total, 0xffff);
  c.all_to_all(send.data(), send_counts, recv.data(), recv_counts, sizeof(int64_t));
  c.all_to_all(send16.data(), send_counts, recv16.data(), recv_counts, sizeof(uint16_t));
  size_t at = 0;
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < length(p, me); ++i, ++at) {
      EXPECT_EQ(recv[at], value(p, me, i)) << "from rank " << p;
      EXPECT_EQ(recv16[at], value(p, me, i)) << "from rank " << p;
    }
}

TEST(Comm, SplitMakesGroupsOfTheSameColor) {
  Comm& c = world();
  std::unique_ptr<Comm> half = c.split(c.rank() % 2, c.rank());
  EXPECT_EQ(half->size(), (c.size() + 1 - c.rank() % 2) / 2);
  EXPECT_EQ(half->rank(), c.rank() / 2);
  std::vector<int64_t> r = {c.rank()};
  half->all_reduce_sum(r);
  int64_t want = 0;
  for (int q = c.rank() % 2; q < c.size(); q += 2) want += q;
  EXPECT_EQ(r[0], want);
  EXPECT_EQ(half->kind(), c.kind());
}

TEST(CollectiveWatchdog, EndsAHungCollectiveNamingIt) {
  if (world().size() > 1) GTEST_SKIP() << "death tests run alone";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CollectiveWatchdog w(1, 2, 0.2);
        w.begin("all_reduce_sum(f32)", 5);
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      },
      testing::ExitedWithCode(124), "rank 1 of 2: collective all_reduce_sum\\(f32\\).*5 elements");
}

TEST(CollectiveWatchdog, LeavesCollectivesThatFinishAlone) {
  CollectiveWatchdog w(0, 2, 0.05);
  for (int i = 0; i < 3; ++i) {
    w.begin("barrier", 0);
    w.end();
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  SUCCEED();
}

}  // namespace
}  // namespace sft
