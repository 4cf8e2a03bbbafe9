// ThreadPool on OpenMP. See thread_pool.h for why.
//
// Compiled without OpenMP (the fuzz targets build this file on its own, without -fopenmp), the
// chunks run one after the other on the caller: the same split, the same results.
#include "core/thread_pool.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace sft {

ThreadPool::ThreadPool(size_t threads)
    : threads_(threads ? threads : std::max(1u, std::thread::hardware_concurrency())),
      errors_(threads_) {}

std::pair<size_t, size_t> ThreadPool::chunk_range(size_t n, size_t chunks, size_t index) {
  size_t base = n / chunks;
  size_t extra = n % chunks;
  size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

void ThreadPool::parallel_for(size_t n, ChunkFn fn) {
  if (n == 0) return;
  if (threads_ == 1 || n == 1) {
    fn(0, 0, n);
    return;
  }
  std::fill(errors_.begin(), errors_.end(), nullptr);
  const size_t chunks = threads_;
  // The runtime may hand us a smaller team (nested inside another region, or a thread limit):
  // each member then runs every team-th chunk, so the split, and the results, stay the same.
#ifdef _OPENMP
#pragma omp parallel num_threads(static_cast <int>(chunks))
#endif
  {
#ifdef _OPENMP
    const size_t team = static_cast<size_t>(omp_get_num_threads());
    const size_t me = static_cast<size_t>(omp_get_thread_num());
#else
    const size_t team = 1, me = 0;
#endif
    for (size_t i = me; i < chunks; i += team) {
      auto [begin, end] = chunk_range(n, chunks, i);
      if (begin == end) continue;
      try {
        fn(i, begin, end);
      } catch (...) {
        errors_[i] = std::current_exception();
      }
    }
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

int size_openmp_team_of_this_thread() {
  thread_local int configured = 0;
  const int want = static_cast<int>(default_thread_pool().size());
  if (configured != want) {
#ifdef _OPENMP
    omp_set_num_threads(want);
#endif
    configured = want;
  }
  return want;
}

}  // namespace sft
