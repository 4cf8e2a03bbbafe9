#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>

namespace sft {

TEST(ThreadPool, ChunksCoverTheRangeExactlyOnce) {
  for (size_t n : {0, 1, 2, 7, 100, 1001}) {
    for (size_t chunks : {1, 2, 3, 8}) {
      size_t expected_begin = 0;
      for (size_t i = 0; i < chunks; ++i) {
        auto [begin, end] = ThreadPool::chunk_range(n, chunks, i);
        EXPECT_EQ(begin, expected_begin);
        EXPECT_LE(end - begin, n / chunks + 1);
        expected_begin = end;
      }
      EXPECT_EQ(expected_begin, n);
    }
  }
}

TEST(ThreadPool, ParallelSumIsDeterministic) {
  ThreadPool pool(4);
  std::vector<double> data(100001);
  std::iota(data.begin(), data.end(), 0.5);
  auto run = [&] {
    std::vector<double> partial(pool.size(), 0.0);
    pool.parallel_for(data.size(), [&](size_t chunk, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) partial[chunk] += data[i] * 1e-3;
    });
    double total = 0;
    for (double p : partial) total += p;  // fixed order
    return total;
  };
  double first = run();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(run(), first);
}

TEST(ThreadPool, EveryItemRunsOnceAcrossManyCalls) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  for (int round = 0; round < 200; ++round) {
    pool.parallel_for(hits.size(), [&](size_t, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) hits[i]++;
    });
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 200);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(100,
                                 [](size_t chunk, size_t, size_t) {
                                   if (chunk == 2) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<size_t> count = 0;
  pool.parallel_for(10, [&](size_t, size_t b, size_t e) { count += e - b; });
  EXPECT_EQ(count.load(), 10u);
}

}  // namespace sft
