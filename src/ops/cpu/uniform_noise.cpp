// ops::add_uniform_noise on the CPU (ops.h's contract): element i draws Philox word position + i
// (core/philox.h), so each thread's chunk starts where it is, without the words before it, and
// the result is the same for any thread count and equal to the CUDA kernel's bits.
#include <string>

#include "core/error.h"
#include "core/philox.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/ops.h"

// The noise and the sum rounded separately, as the CUDA kernel's __fmul_rn / __fadd_rn do.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position) {
  if (x.device != Device::kCpu || x.dtype != DType::kF32)
    fail("ops", std::string("add_uniform_noise: needs a CPU f32 view, got a ") +
                    std::string(dtype_name(x.dtype)) + " " + device_name(x.device) + " view");
  float* a = x.as<float>();
  parallel_for_rows(x.numel(), 1 << 12, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float u =
          philox::uniform(philox::word(seed, stream, position + static_cast<uint64_t>(i)));
      const float noise = (2.0f * u - 1.0f) * magnitude;
      a[i] += noise;
    }
  });
}

}  // namespace sft::ops::cpu
