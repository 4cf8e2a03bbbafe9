// A ShardGroup of threads in one process (tests only): run(n, fn) starts n threads, each
// calling fn(group) with its own rank; the collectives meet at a barrier and combine in rank
// order, as parallel/'s MPI group does. Lets the tensor-parallel kernels and slices be tested
// without mpirun.
//
// The ranks take turns: a rank holds the group's turn while it computes and lets go of it only
// inside a collective. The kernels share process-wide state that MPI ranks would each have
// their own copy of (default_thread_pool(), which takes one caller at a time, and the backends'
// scratch), so ranks computing at the same moment would race there; with turns, each rank's
// work between two collectives runs alone, and the results do not depend on timing. So a rank
// calls its collectives from its own thread (never from inside a pool task), as kernels do.
//
// It cannot hang on a kernel bug: a rank that returns (or throws) while others still wait in a
// collective leaves the barrier, and the waiting ranks then throw instead of waiting forever;
// so do all ranks when their collective calls disagree in kind or size. run() rethrows the
// first rank's exception after every thread has joined.
#pragma once

#include <barrier>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/shard_group.h"

namespace sft::testing {

class ThreadShardGroups {
 public:
  // Runs fn on n threads (ranks 0..n-1) and joins them. fn must make the same collective
  // calls, with the same sizes, on every rank; otherwise run throws (it does not hang).
  static void run(int n, const std::function<void(ShardGroup&)>& fn) {
    ThreadShardGroups shared(n);
    std::vector<Member> members;
    members.reserve(size_t(n));
    for (int r = 0; r < n; ++r) members.emplace_back(shared, r);
    std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    std::vector<char> left_behind(static_cast<size_t>(n), 0);
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        Member& m = members[size_t(r)];
        m.take_turn();
        try {
          fn(m);
        } catch (const LeftBehind&) {
          errors[size_t(r)] = std::current_exception();
          left_behind[size_t(r)] = 1;
        } catch (...) {
          errors[size_t(r)] = std::current_exception();
        }
        m.leave();
      });
    for (std::thread& t : threads) t.join();
    // The cause first: a rank's own error, before the "left waiting" of the ranks it stranded.
    for (int pass = 0; pass < 2; ++pass)
      for (int r = 0; r < n; ++r)
        if (errors[size_t(r)] && (pass == 1 || !left_behind[size_t(r)]))
          std::rethrow_exception(errors[size_t(r)]);
  }

  // Thrown by a rank waiting in a collective that another rank has left without calling.
  struct LeftBehind : std::logic_error {
    using std::logic_error::logic_error;
  };

 private:
  explicit ThreadShardGroups(int n) : n_(n), barrier_(n), slots_(size_t(n)) {}

  // What a rank brings to a collective: its kind, size and data.
  struct Slot {
    int kind = 0;
    size_t size = 0;
    const void* data = nullptr;
  };
  enum Kind { kSumF32 = 1, kSumF64, kMaxF32, kMaxF64, kGather };

  class Member final : public ShardGroup {
   public:
    Member(ThreadShardGroups& g, int rank) : g_(g), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return g_.n_; }
    void sum(std::span<float> v) override {
      combine(kSumF32, v, [](double a, double b) { return a + b; });
    }
    void sum(std::span<double> v) override {
      combine(kSumF64, v, [](double a, double b) { return a + b; });
    }
    void max(std::span<float> v) override {
      combine(kMaxF32, v, [](double a, double b) { return b > a || b != b ? b : a; });
    }
    void max(std::span<double> v) override {
      combine(kMaxF64, v, [](double a, double b) { return b > a || b != b ? b : a; });
    }
    void gather(std::span<float> v) override {
      if (v.size() % size_t(g_.n_) != 0)
        throw std::invalid_argument("gather of " + std::to_string(v.size()) + " over " +
                                    std::to_string(g_.n_) + " ranks");
      meet(kGather, v.size(), v.data());
      const size_t block = v.size() / size_t(g_.n_);
      std::vector<float> out(v.size());
      for (int r = 0; r < g_.n_; ++r) {
        const float* src = static_cast<const float*>(g_.slots_[size_t(r)].data);
        for (size_t i = 0; i < block; ++i) out[size_t(r) * block + i] = src[size_t(r) * block + i];
      }
      finish(out.data(), v.data(), v.size());
    }

    void take_turn() {
      g_.turn_.lock();
      holds_turn_ = true;
    }
    // The rank is done (or threw): give up the turn and drop out of the barrier, so ranks
    // still waiting in a collective see that it will never come.
    void leave() {
      if (holds_turn_) g_.turn_.unlock(), holds_turn_ = false;
      {
        std::lock_guard lock(g_.state_);
        ++g_.departed_;
      }
      g_.barrier_.arrive_and_drop();
    }

   private:
    // Publishes this rank's slot and waits for every rank; then checks that they all called
    // the same collective with the same size (every rank sees the same slots, so either all
    // throw or none does).
    void meet(int kind, size_t n, const void* data) {
      g_.slots_[size_t(rank_)] = {kind, n, data};
      g_.turn_.unlock();
      holds_turn_ = false;
      g_.barrier_.arrive_and_wait();
      int departed;
      {
        std::lock_guard lock(g_.state_);
        departed = g_.departed_;
      }
      if (departed > 0) {
        take_turn();
        throw LeftBehind("rank " + std::to_string(rank_) +
                         " waits in a collective that another rank never calls");
      }
      for (const Slot& s : g_.slots_)
        if (s.kind != kind || s.size != n) {
          g_.barrier_.arrive_and_wait();  // no rank still reads the slots
          take_turn();
          throw std::logic_error("rank " + std::to_string(rank_) +
                                 ": the ranks' collective calls differ in kind or size");
        }
    }
    // Every rank has read the slots before any rank overwrites its values.
    template <typename T>
    void finish(const T* out, T* v, size_t n) {
      g_.barrier_.arrive_and_wait();
      std::copy(out, out + n, v);
      take_turn();
    }
    // Element-wise over ranks in rank order, accumulated in double (floats rounded once).
    template <typename T, typename Op>
    void combine(int kind, std::span<T> v, Op op) {
      meet(kind, v.size(), v.data());
      std::vector<T> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        double acc = static_cast<const T*>(g_.slots_[0].data)[i];
        for (int r = 1; r < g_.n_; ++r)
          acc = op(acc, static_cast<const T*>(g_.slots_[size_t(r)].data)[i]);
        out[i] = static_cast<T>(acc);
      }
      finish(out.data(), v.data(), v.size());
    }

    ThreadShardGroups& g_;
    int rank_;
    bool holds_turn_ = false;
  };

  int n_;
  std::barrier<> barrier_;
  std::vector<Slot> slots_;
  std::mutex turn_;   // held by the one rank computing now
  std::mutex state_;  // guards departed_
  int departed_ = 0;
};

}  // namespace sft::testing
