// A ShardGroup of threads in one process (tests only): run(n, fn) starts n threads, each
// calling fn(group) with its own rank; the collectives meet at a barrier and combine in rank
// order, as dist/'s MPI group does. Lets the tensor-parallel kernels and slices be tested
// without mpirun.
#pragma once

#include <barrier>
#include <functional>
#include <limits>
#include <span>
#include <thread>
#include <vector>

#include "core/shard_group.h"

namespace sft::testing {

class ThreadShardGroups {
 public:
  // Runs fn on n threads (ranks 0..n-1) and joins them. fn must make the same collective
  // calls, with the same sizes, on every rank.
  static void run(int n, const std::function<void(ShardGroup&)>& fn) {
    ThreadShardGroups shared(n);
    std::vector<Member> members;
    for (int r = 0; r < n; ++r) members.emplace_back(shared, r);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(members[size_t(r)]); });
    for (std::thread& t : threads) t.join();
  }

 private:
  explicit ThreadShardGroups(int n) : n_(n), barrier_(n), slots_(size_t(n)) {}

  class Member final : public ShardGroup {
   public:
    Member(ThreadShardGroups& g, int rank) : g_(g), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return g_.n_; }
    void sum(std::span<float> v) override {
      combine(v, [](double a, double b) { return a + b; });
    }
    void sum(std::span<double> v) override {
      combine(v, [](double a, double b) { return a + b; });
    }
    void max(std::span<float> v) override {
      combine(v, [](double a, double b) { return b > a || b != b ? b : a; });
    }
    void gather(std::span<float> v) override {
      publish(v.data());
      const size_t block = v.size() / size_t(g_.n_);
      std::vector<float> out(v.size());
      for (int r = 0; r < g_.n_; ++r) {
        const float* src = static_cast<const float*>(g_.slots_[size_t(r)]);
        for (size_t i = 0; i < block; ++i) out[size_t(r) * block + i] = src[size_t(r) * block + i];
      }
      g_.barrier_.arrive_and_wait();  // everyone has read before anyone writes
      std::copy(out.begin(), out.end(), v.begin());
      g_.barrier_.arrive_and_wait();
    }

   private:
    void publish(const void* p) {
      g_.slots_[size_t(rank_)] = p;
      g_.barrier_.arrive_and_wait();
    }
    // Element-wise over ranks in rank order, accumulated in double (floats rounded once).
    template <typename T, typename Op>
    void combine(std::span<T> v, Op op) {
      publish(v.data());
      std::vector<T> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        double acc = static_cast<const T*>(g_.slots_[0])[i];
        for (int r = 1; r < g_.n_; ++r)
          acc = op(acc, static_cast<const T*>(g_.slots_[size_t(r)])[i]);
        out[i] = static_cast<T>(acc);
      }
      g_.barrier_.arrive_and_wait();
      std::copy(out.begin(), out.end(), v.begin());
      g_.barrier_.arrive_and_wait();
    }

    ThreadShardGroups& g_;
    int rank_;
  };

  int n_;
  std::barrier<> barrier_;
  std::vector<const void*> slots_;
};

}  // namespace sft::testing
