// ops::dropout on CUDA (ops.h's contract): one thread per element draws Philox word
// position + k with core/philox.h's own code and scales with explicitly rounded intrinsics, so
// the device keeps, drops and rounds exactly as the CPU kernel (ops/cpu/dropout.cpp).
#include <cuda_runtime.h>

#include <string>

#include "core/philox.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"
#include "ops/ops.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

struct Mask {
  float p, keep_scale;
  uint64_t seed, stream, position;
  __device__ bool keep(int64_t k) const {
    return philox::uniform(philox::word(seed, stream, position + static_cast<uint64_t>(k))) >= p;
  }
};

__global__ void dropout_f32_kernel(float* dst, const float* src, int64_t n, Mask m,
                                   bool accumulate) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (k >= n) return;
  const float v = m.keep(k) ? __fmul_rn(src[k], m.keep_scale) : 0.0f;
  dst[k] = accumulate ? __fadd_rn(dst[k], v) : v;
}

__global__ void dropout_bf16_kernel(uint16_t* dst, const uint16_t* src, int64_t n, Mask m) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (k >= n) return;
  dst[k] = f32_to_bf16(m.keep(k) ? __fmul_rn(bf16_to_f32(src[k]), m.keep_scale) : 0.0f);
}

}  // namespace

void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate) {
  require_cuda("dropout", {dst, src});
  const bool bf16 = src.dtype == DType::kBF16;
  require(dst.dtype == src.dtype && (src.dtype == DType::kF32 || bf16), "dropout", [&] {
    return "needs dst and src of one dtype, f32 or bf16, got " +
           std::string(dtype_name(dst.dtype)) + " and " + std::string(dtype_name(src.dtype));
  });
  require(!(accumulate && bf16), "dropout", [] { return std::string("accumulates f32 only"); });
  require(dst.numel() == src.numel(), "dropout",
          [&] { return "dst " + shape(dst) + " and src " + shape(src) + " differ in size"; });
  const int64_t n = src.numel();
  if (n == 0) return;
  const Mask m{p, dropout_keep_scale(p), seed, stream, position};
  if (bf16)
    dropout_bf16_kernel<<<blocks_for(n, kThreads), kThreads>>>(dst.as<uint16_t>(),
                                                               src.as<uint16_t>(), n, m);
  else
    dropout_f32_kernel<<<blocks_for(n, kThreads), kThreads>>>(dst.as<float>(), src.as<float>(), n,
                                                              m, accumulate);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
