// The process's data-parallel loops, run on the OpenMP runtime's thread team.
//
// parallel_for splits [0, n) into size() contiguous chunks, always the same split for the same
// n and thread count, so per-chunk reductions combined in chunk order are deterministic. The
// calling thread runs chunk 0; a task must not call parallel_for itself (a nested call would run
// its chunks one after the other on that thread). Exceptions thrown by tasks are rethrown in the
// caller after every chunk finished (the first by chunk index).
//
// Why OpenMP and not threads of our own: oneDNN (Debian's build) runs its GEMMs on an OpenMP
// team, whose threads spin for a while after each GEMM. With a second set of threads, our
// elementwise loops ran beside those spinning threads on the same cores (measured: casts, norms
// and SwiGLU 1.4–2.5× slower in the step than with OMP_WAIT_POLICY=PASSIVE). On one team the
// spinning threads are the ones that pick up the next loop, so the machine never holds more
// busy threads than the pool size, and hand-overs between our loops and oneDNN cost no wake-up.
// One runtime serves both: built with GCC it is libgomp, oneDNN's own; built with clang (our
// default) it is LLVM's libomp, which implements libgomp's entry points too and, being a direct
// dependency of the executable, comes before oneDNN's libgomp in the dynamic linker's search
// order, so oneDNN's calls bind to it (tests/ops/onednn_matmul_test.cpp checks this).
#pragma once

#include <cstddef>
#include <exception>
#include <type_traits>
#include <utility>
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
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return threads_; }

  // fn(chunk_index, begin, end) for each non-empty chunk of [0, n). One caller at a time (the
  // per-chunk error slots are the pool's).
  void parallel_for(size_t n, ChunkFn fn);

  // The chunk [begin, end) that chunk `index` of `chunks` gets for n items.
  static std::pair<size_t, size_t> chunk_range(size_t n, size_t chunks, size_t index);

 private:
  size_t threads_;
  std::vector<std::exception_ptr> errors_;
};

// The process-wide pool, sized from SFT_NUM_THREADS or the hardware.
ThreadPool& default_thread_pool();

// Sizes the OpenMP team that a library running on the calling thread opens (oneDNN's GEMMs) to
// default_thread_pool().size(): OpenMP's team size is a per-thread setting, so this is called on
// each calling thread, and it is a no-op after the first call unless the pool size changed.
// Returns the size. (Without OpenMP: only returns it.)
int size_openmp_team_of_this_thread();

}  // namespace sft
