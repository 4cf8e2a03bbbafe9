// gpt-oss's clamped SwiGLU on CUDA (ops.h's swiglu_clamped_* contract), elementwise with
// swiglu.cu's dtypes: f32, or bf16 gate and up widened exactly to f32 (h and the gradients f32,
// or bf16: rounded as stored). The same operations in the same order as the CPU kernel
// (ops/cpu/swiglu_clamped.cpp); expf, not the fast __expf.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

// std::min / std::max's forms (a NaN input stays NaN), as the CPU kernel clamps.
__device__ inline float clamp_high(float x, float limit) {
  return limit < x ? limit : x;
}
__device__ inline float clamp_both(float x, float limit) {
  const float low = x < -limit ? -limit : x;
  return limit < low ? limit : low;
}

template <typename Out, typename In>
__global__ void swiglu_clamped_forward_kernel(Out* h, const In* gate, const In* up, int64_t n,
                                              float alpha, float limit) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = clamp_high(widen(gate[i]), limit);
  const float u = clamp_both(widen(up[i]), limit);
  const float glu = g * (1.0f / (1.0f + expf(-(g * alpha))));
  store(h, i, (u + 1.0f) * glu);
}

template <typename Out, typename In>
__global__ void swiglu_clamped_backward_kernel(Out* dgate, Out* dup, const float* dh,
                                               const In* gate, const In* up, int64_t n, float alpha,
                                               float limit) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g_in = widen(gate[i]), u_in = widen(up[i]);
  const float g = clamp_high(g_in, limit), u = clamp_both(u_in, limit);
  const float s = 1.0f / (1.0f + expf(-(g * alpha)));
  const float glu = g * s;
  const float d = dh[i];
  const float du = d * glu;
  const float dglu = d * (u + 1.0f);
  const float dg = __fadd_rn(__fmul_rn(dglu, s),
                             __fmul_rn(__fmul_rn(__fmul_rn(dglu, g), (1.0f - s) * s), alpha));
  store(dup, i, u_in >= -limit && u_in <= limit ? du : 0.0f);
  store(dgate, i, g_in <= limit ? dg : 0.0f);
}

DType input_dtype(const char* op, const View& gate, const View& up) {
  require(
      gate.dtype == up.dtype && (gate.dtype == DType::kF32 || gate.dtype == DType::kBF16), op, [&] {
        return "gate and up must both be f32 or both bf16, got " +
               std::string(dtype_name(gate.dtype)) + " and " + std::string(dtype_name(up.dtype));
      });
  return gate.dtype;
}

}  // namespace

void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit) {
  const char* op = "swiglu_clamped";
  require_cuda(op, {h, gate, up});
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), op,
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  require(limit > 0, op,
          [&] { return "the limit must be positive, got " + std::to_string(limit); });
  const DType in = input_dtype(op, gate, up);
  const bool round = in == DType::kBF16 && h.dtype == DType::kBF16;  // fused rounding
  if (!round) require_dtype(op, DType::kF32, {h});
  const int64_t n = gate.numel();
  if (n == 0) return;
  const float a = static_cast<float>(alpha), l = static_cast<float>(limit);
  if (round)
    swiglu_clamped_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<uint16_t>(), gate.as<uint16_t>(), up.as<uint16_t>(), n, a, l);
  else if (in == DType::kBF16)
    swiglu_clamped_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(), n, a, l);
  else
    swiglu_clamped_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        h.as<float>(), gate.as<float>(), up.as<float>(), n, a, l);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit) {
  const char* op = "swiglu_clamped_backward";
  require_cuda(op, {dgate, dup, dh, gate, up});
  require(dh.numel() == gate.numel() && dgate.numel() == gate.numel() &&
              dup.numel() == gate.numel() && up.numel() == gate.numel(),
          op, [&] { return "gate " + shape(gate) + ", dh " + shape(dh); });
  require(limit > 0, op,
          [&] { return "the limit must be positive, got " + std::to_string(limit); });
  const DType in = input_dtype(op, gate, up);
  const bool round = in == DType::kBF16 && dgate.dtype == DType::kBF16;  // fused rounding
  if (round)
    require_dtype(op, DType::kBF16, {dup});
  else
    require_dtype(op, DType::kF32, {dgate, dup});
  require_dtype(op, DType::kF32, {dh});
  const int64_t n = gate.numel();
  if (n == 0) return;
  const float a = static_cast<float>(alpha), l = static_cast<float>(limit);
  if (round)
    swiglu_clamped_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<uint16_t>(), dup.as<uint16_t>(), dh.as<float>(), gate.as<uint16_t>(),
        up.as<uint16_t>(), n, a, l);
  else if (in == DType::kBF16)
    swiglu_clamped_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(),
        n, a, l);
  else
    swiglu_clamped_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        dgate.as<float>(), dup.as<float>(), dh.as<float>(), gate.as<float>(), up.as<float>(), n, a,
        l);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
