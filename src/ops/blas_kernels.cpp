#include "ops/blas_kernels.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

namespace sft::ops {

std::string blas_kernel_name() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

const char* better_blas_coretype() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return nullptr;  // the user's choice
  const std::string core = blas_kernel_name();
  const bool generic = core.empty() || strcasecmp(core.c_str(), "prescott") == 0 ||
                       strcasecmp(core.c_str(), "core2") == 0 ||
                       strcasecmp(core.c_str(), "nehalem") == 0;
  if (!generic) return nullptr;
  __builtin_cpu_init();
  // Haswell's AVX2+FMA kernels, not SkylakeX's: 0.3.21's AVX-512 paths misbehave on these CPUs.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

}  // namespace sft::ops
