#include "core/thread_pool.h"

#include <cstdlib>
#include <string>

namespace sft {

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  errors_.resize(threads);
  for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::pair<size_t, size_t> ThreadPool::chunk_range(size_t n, size_t chunks, size_t index) {
  size_t base = n / chunks;
  size_t extra = n % chunks;
  size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

void ThreadPool::run_chunk(size_t index) {
  auto [begin, end] = chunk_range(n_, size(), index);
  if (begin == end) return;
  try {
    (*fn_)(index, begin, end);
  } catch (...) {
    errors_[index] = std::current_exception();
  }
}

void ThreadPool::worker_loop(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_chunk(index);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) work_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, ChunkFn fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    n_ = n;
    fn_ = &fn;
    pending_ = workers_.size();
    for (std::exception_ptr& e : errors_) e = nullptr;
    ++generation_;
  }
  work_ready_.notify_all();
  run_chunk(0);
  {
    std::unique_lock lock(mutex_);
    work_done_.wait(lock, [&] { return pending_ == 0; });
    fn_ = nullptr;
  }
  for (std::exception_ptr& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

ThreadPool& default_thread_pool() {
  static ThreadPool pool([] {
    const char* env = std::getenv("SFT_NUM_THREADS");
    if (env == nullptr) return size_t{0};
    char* end = nullptr;
    unsigned long v = std::strtoul(env, &end, 10);
    return (end != env && *end == '\0') ? static_cast<size_t>(v) : size_t{0};
  }());
  return pool;
}

}  // namespace sft
