// ops::dropout on the CPU (ops.h's contract): element k keeps when the uniform of Philox word
// position + k (core/philox.h) is ≥ p, so the mask of a micro-batch is the same in its forward
// and backward, on any thread count and on the CUDA device (ops/cuda/dropout.cu).
#include <string>

#include "core/error.h"
#include "core/half.h"
#include "core/philox.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/ops.h"

// One rounding for the scaled value and one for the sum, as the CUDA kernel's intrinsics.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate) {
  const bool bf16 = src.dtype == DType::kBF16;
  const bool ok = dst.device == Device::kCpu && src.device == Device::kCpu &&
                  dst.dtype == src.dtype && (src.dtype == DType::kF32 || bf16) &&
                  dst.numel() == src.numel() && !(accumulate && bf16);
  if (!ok)
    fail("ops", std::string("dropout: needs CPU views of one dtype (f32, or bf16 without "
                            "accumulating) and one size, got dst ") +
                    std::string(dtype_name(dst.dtype)) + " " + device_name(dst.device) + " of " +
                    std::to_string(dst.numel()) + ", src " + std::string(dtype_name(src.dtype)) +
                    " " + device_name(src.device) + " of " + std::to_string(src.numel()) +
                    (accumulate ? " (accumulating)" : ""));
  const float keep_scale = dropout_keep_scale(p);
  parallel_for_rows(src.numel(), 1 << 12, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const bool keep =
          philox::uniform(philox::word(seed, stream, position + static_cast<uint64_t>(k))) >= p;
      if (bf16) {
        const float v = keep ? bf16_to_f32(src.as<uint16_t>()[k]) * keep_scale : 0.0f;
        dst.as<uint16_t>()[k] = f32_to_bf16(v);
      } else {
        const float v = keep ? src.as<float>()[k] * keep_scale : 0.0f;
        float& d = dst.as<float>()[k];
        d = accumulate ? d + v : v;
      }
    }
  });
}

}  // namespace sft::ops::cpu
