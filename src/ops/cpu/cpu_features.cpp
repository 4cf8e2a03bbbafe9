// Run-time CPU feature choice. See cpu_features.h.
#include "ops/cpu/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace sft::ops::cpu {

bool use_avx512() {
  static const bool on = [] {
    const char* isa = std::getenv("SFT_CPU_ISA");
    if (isa && std::strcmp(isa, "generic") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  }();
  return on;
}

}  // namespace sft::ops::cpu
