// ops::add_uniform_noise on CUDA (ops.h's contract): one thread per element draws Philox word
// position + i with core/philox.h's own code, every step an explicitly rounded intrinsic (no
// fused multiply-adds), so the device adds the CPU kernel's bits (ops/cpu/uniform_noise.cpp).
#include <cuda_runtime.h>

#include "core/philox.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void add_uniform_noise_kernel(float* x, int64_t n, float magnitude, uint64_t seed,
                                         uint64_t stream, uint64_t position) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float u = philox::uniform(philox::word(seed, stream, position + static_cast<uint64_t>(i)));
  const float noise = __fmul_rn(__fadd_rn(__fmul_rn(2.0f, u), -1.0f), magnitude);
  x[i] = __fadd_rn(x[i], noise);
}

}  // namespace

void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position) {
  require_cuda("add_uniform_noise", {x});
  require_dtype("add_uniform_noise", DType::kF32, {x});
  const int64_t n = x.numel();
  if (n == 0) return;
  add_uniform_noise_kernel<<<blocks_for(n, kThreads), kThreads>>>(x.as<float>(), n, magnitude, seed,
                                                                  stream, position);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
