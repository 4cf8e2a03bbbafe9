#include "parallel/watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/clock.h"

namespace sft {

CollectiveWatchdog::CollectiveWatchdog(int rank, int size, double timeout_s)
    : rank_(rank), size_(size), timeout_s_(timeout_s) {
  thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::begin(const char* name, size_t elements) {
  elements_.store(elements);
  started_s_.store(now_s());
  name_.store(name);
}

void CollectiveWatchdog::end() {
  name_.store(nullptr);
}

void CollectiveWatchdog::run() {
  // Poll often enough that the overshoot stays a small part of the limit.
  const auto period = std::chrono::duration<double>(std::clamp(timeout_s_ / 20, 0.01, 1.0));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    const char* name = name_.load();
    if (name == nullptr) continue;
    const double waited = now_s() - started_s_.load();
    if (waited < timeout_s_) continue;
    if (name_.load() != name) continue;  // it finished meanwhile
    std::fprintf(stderr,
                 "[parallel] rank %d of %d: collective %s (%zu elements) has not completed after "
                 "%.1f s (--ddp_timeout %g); another rank died, hangs, or runs a different "
                 "collective; aborting (hint: raise --ddp_timeout for slow steps)\n",
                 rank_, size_, name, elements_.load(), waited, timeout_s_);
    std::fflush(stderr);
    std::_Exit(124);
  }
}

}  // namespace sft
