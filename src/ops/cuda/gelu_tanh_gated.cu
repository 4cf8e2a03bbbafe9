// Gated GELU (tanh approximation, Gemma's gelu_pytorch_tanh) forward/backward on CUDA (ops.h's
// contract), elementwise with gelu_tanh_gated.cu's shape: f32, or bf16 gate and up widened exactly
// to f32 (h and the gradients f32, or bf16: rounded as stored), as the CPU. tanhf, not a fast
// approximation.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

// u = √(2/π)(x + 0.044715 x³), t = tanh(u): gelu = x/2 (1 + t), and
// gelu' = (1 + t)/2 + x/2 (1 − t²) √(2/π) (1 + 3 · 0.044715 x²).
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ inline float gelu_tanh_t(float x) {
  return tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
}

template <typename Out, typename In>
__global__ void gelu_tanh_gated_forward_kernel(Out* h, const In* gate, const In* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = widen(gate[i]);
  const float t = gelu_tanh_t(g);
  store(h, i, 0.5f * g * (1.0f + t) * widen(up[i]));
}

template <typename Out, typename In>
__global__ void gelu_tanh_gated_backward_kernel(Out* dgate, Out* dup, const float* dh,
                                                const In* gate, const In* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = widen(gate[i]);
  const float t = gelu_tanh_t(g);
  const float value = 0.5f * g * (1.0f + t);
  const float slope =
      0.5f * (1.0f + t) + 0.5f * g * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * g * g);
  store(dup, i, dh[i] * value);
  store(dgate, i, dh[i] * widen(up[i]) * slope);
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

void gelu_tanh_gated_forward(View h, View gate, View up) {
  require_cuda("gelu_tanh_gated", {h, gate, up});
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), "gelu_tanh_gated",
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  const DType in = input_dtype("gelu_tanh_gated", gate, up);
  const bool round = in == DType::kBF16 && h.dtype == DType::kBF16;  // fused rounding
  if (!round) require_dtype("gelu_tanh_gated", DType::kF32, {h});
  const int64_t n = gate.numel();
  if (n == 0) return;
  if (round)
    gelu_tanh_gated_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<uint16_t>(), gate.as<uint16_t>(), up.as<uint16_t>(), n);
  else if (in == DType::kBF16)
    gelu_tanh_gated_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(), n);
  else
    gelu_tanh_gated_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<float>(), gate.as<float>(), up.as<float>(), n);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up) {
  require_cuda("gelu_tanh_gated_backward", {dgate, dup, dh, gate, up});
  require(dh.numel() == gate.numel() && dgate.numel() == gate.numel() &&
              dup.numel() == gate.numel() && up.numel() == gate.numel(),
          "gelu_tanh_gated_backward", [&] { return "gate " + shape(gate) + ", dh " + shape(dh); });
  const DType in = input_dtype("gelu_tanh_gated_backward", gate, up);
  const bool round = in == DType::kBF16 && dgate.dtype == DType::kBF16;  // fused rounding
  if (round)
    require_dtype("gelu_tanh_gated_backward", DType::kBF16, {dup});
  else
    require_dtype("gelu_tanh_gated_backward", DType::kF32, {dgate, dup});
  require_dtype("gelu_tanh_gated_backward", DType::kF32, {dh});
  const int64_t n = gate.numel();
  if (n == 0) return;
  if (round)
    gelu_tanh_gated_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<uint16_t>(), dup.as<uint16_t>(), dh.as<float>(), gate.as<uint16_t>(),
        up.as<uint16_t>(), n);
  else if (in == DType::kBF16)
    gelu_tanh_gated_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(),
        n);
  else
    gelu_tanh_gated_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<float>(), up.as<float>(), n);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
