// The one monotonic clock in seconds, for step times, progress and profiles.
#pragma once

#include <chrono>

namespace sft {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace sft
