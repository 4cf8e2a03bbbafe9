// SwiGLU forward/backward on CUDA (ops.h's contract), elementwise: f32, or bf16 gate and up
// widened exactly to f32 (h and the gradients f32, or bf16: rounded as stored), as the CPU.
// expf, not the fast __expf.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename Out, typename In>
__global__ void swiglu_forward_kernel(Out* h, const In* gate, const In* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = widen(gate[i]);
  const float sig = 1.0f / (1.0f + expf(-g));
  store(h, i, g * sig * widen(up[i]));
}

// d silu(g)/dg = σ(g) (1 + g (1 − σ(g))).
template <typename Out, typename In>
__global__ void swiglu_backward_kernel(Out* dgate, Out* dup, const float* dh, const In* gate,
                                       const In* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = widen(gate[i]);
  const float sig = 1.0f / (1.0f + expf(-g));
  const float silu = g * sig;
  store(dup, i, dh[i] * silu);
  store(dgate, i, dh[i] * widen(up[i]) * sig * (1.0f + g * (1.0f - sig)));
}

// The dtype of gate and up (f32 or bf16; both the same), checked.
DType input_dtype(const char* op, const View& gate, const View& up) {
  require(
      gate.dtype == up.dtype && (gate.dtype == DType::kF32 || gate.dtype == DType::kBF16), op, [&] {
        return "gate and up must both be f32 or both bf16, got " +
               std::string(dtype_name(gate.dtype)) + " and " + std::string(dtype_name(up.dtype));
      });
  return gate.dtype;
}

}  // namespace

void swiglu_forward(View h, View gate, View up) {
  require_cuda("swiglu", {h, gate, up});
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), "swiglu",
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  const DType in = input_dtype("swiglu", gate, up);
  const bool round = in == DType::kBF16 && h.dtype == DType::kBF16;  // fused rounding
  if (!round) require_dtype("swiglu", DType::kF32, {h});
  const int64_t n = gate.numel();
  if (n == 0) return;
  if (round)
    swiglu_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<uint16_t>(), gate.as<uint16_t>(), up.as<uint16_t>(), n);
  else if (in == DType::kBF16)
    swiglu_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(h.as<float>(), gate.as<uint16_t>(),
                                                                 up.as<uint16_t>(), n);
  else
    swiglu_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(h.as<float>(), gate.as<float>(),
                                                                 up.as<float>(), n);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(View dgate, View dup, View dh, View gate, View up) {
  require_cuda("swiglu_backward", {dgate, dup, dh, gate, up});
  require(dh.numel() == gate.numel() && dgate.numel() == gate.numel() &&
              dup.numel() == gate.numel() && up.numel() == gate.numel(),
          "swiglu_backward", [&] { return "gate " + shape(gate) + ", dh " + shape(dh); });
  const DType in = input_dtype("swiglu_backward", gate, up);
  const bool round = in == DType::kBF16 && dgate.dtype == DType::kBF16;  // fused rounding
  if (round)
    require_dtype("swiglu_backward", DType::kBF16, {dup});
  else
    require_dtype("swiglu_backward", DType::kF32, {dgate, dup});
  require_dtype("swiglu_backward", DType::kF32, {dh});
  const int64_t n = gate.numel();
  if (n == 0) return;
  if (round)
    swiglu_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<uint16_t>(), dup.as<uint16_t>(), dh.as<float>(), gate.as<uint16_t>(),
        up.as<uint16_t>(), n);
  else if (in == DType::kBF16)
    swiglu_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(),
        n);
  else
    swiglu_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<float>(), up.as<float>(), n);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
