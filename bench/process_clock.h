// The two clocks the hand-rolled benchmarks read: the process's CPU seconds over all its threads
// (getrusage: on a shared machine it estimates the idle rate better than wall time) and wall
// seconds (steady_clock).
#pragma once

#include <sys/resource.h>

#include <chrono>

namespace sft::bench {

inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace sft::bench
