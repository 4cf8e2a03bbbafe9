// The collective watchdog behind --ddp_timeout: a thread that ends the process when one
// collective has run longer than the limit, naming it. Ending (exit 124, no MPI_Finalize)
// is the only way out of a collective a dead or diverged peer never joins; mpirun then
// stops the other ranks. Only the thread that runs collectives calls begin/end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "core/clock.h"

namespace sft {

class CollectiveWatchdog {
 public:
  CollectiveWatchdog(int rank, int size, double timeout_s);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  void begin(const char* name, size_t elements);
  void end();

 private:
  void run();

  const int rank_, size_;
  const double timeout_s_;
  std::atomic<const char*> name_{nullptr};  // null: no collective running
  std::atomic<size_t> elements_{0};
  std::atomic<double> started_s_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Marks one collective for the watchdog (if any) and adds its wall time to *seconds.
class CollectiveScope {
 public:
  CollectiveScope(CollectiveWatchdog* w, double* seconds, const char* name, size_t elements)
      : w_(w), seconds_(seconds), t0_(now_s()) {
    if (w_) w_->begin(name, elements);
  }
  ~CollectiveScope() {
    if (w_) w_->end();
    *seconds_ += now_s() - t0_;
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  CollectiveWatchdog* w_;
  double* seconds_;
  double t0_;
};

}  // namespace sft
