// A fixed pool of worker threads for data-parallel loops.
//
// parallel_for splits [0, n) into one contiguous chunk per thread, always the same
// split for the same n and thread count, so per-chunk reductions combined in chunk
// order are deterministic. The calling thread runs chunk 0; calls are not reentrant
// (a task must not call parallel_for on the same pool). Exceptions thrown by tasks are
// rethrown in the caller after every chunk finished (the first by chunk index).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace sft {

// A non-owning reference to a callable fn(chunk_index, begin, end), valid while the callable
// lives (for parallel_for: the call). Unlike std::function it never allocates, whatever the
// callable captures, so the step loop's parallel loops stay allocation-free.
class ChunkFn {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, ChunkFn>)
      ChunkFn(F&& f)  // NOLINT: implicit, so lambdas pass as they are
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, size_t i, size_t b, size_t e) {
          (*static_cast<std::remove_reference_t<F>*>(o))(i, b, e);
        }) {}
  void operator()(size_t i, size_t b, size_t e) const { call_(obj_, i, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, size_t, size_t, size_t);
};

class ThreadPool {
 public:
  // threads = 0 means one per hardware thread.
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // fn(chunk_index, begin, end) for each non-empty chunk of [0, n).
  void parallel_for(size_t n, ChunkFn fn);

  // The chunk [begin, end) that chunk `index` of `chunks` gets for n items.
  static std::pair<size_t, size_t> chunk_range(size_t n, size_t chunks, size_t index);

 private:
  void worker_loop(size_t index);
  void run_chunk(size_t index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  uint64_t generation_ = 0;
  size_t pending_ = 0;
  bool stopping_ = false;
  size_t n_ = 0;
  const ChunkFn* fn_ = nullptr;
  std::vector<std::exception_ptr> errors_;
};

// The process-wide pool, sized from SFT_NUM_THREADS or the hardware.
ThreadPool& default_thread_pool();

}  // namespace sft
