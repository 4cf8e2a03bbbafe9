// Rotary embedding on CUDA (ops.h's contract): one thread per (token, head, pair i) rotates
// (x[i], x[i + R/2]) by +θ (forward) or −θ (backward; negating sin is exact); R = 2 · cos.cols
// of a head's D dims (partial rotary when R < D: the rest pass through). fp32. x may be a column
// block (View::columns: q or k in the stacked q/k/v product), its token rows ld elements apart.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void rotate_halves_kernel(float* x, int64_t ld, const float* cos, const float* sin,
                                     int64_t NH, int64_t D, int64_t half, int64_t pairs,
                                     bool inverse) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (p >= pairs) return;
  const int64_t i = p % half, th = p / half;  // th = t · NH + h
  const int64_t t = th / NH, h = th % NH;
  float* v = x + t * ld + h * D;
  const float c = cos[t * half + i];
  const float s = inverse ? -sin[t * half + i] : sin[t * half + i];
  const float a = v[i], b = v[i + half];
  v[i] = a * c - b * s;
  v[i + half] = b * c + a * s;
}

void rope(View x, View cos, View sin, int64_t head_dim, bool backward) {
  const char* op = backward ? "rope_backward" : "rope_forward";
  require_cuda(op, {x, cos, sin});
  const int64_t R = 2 * cos.cols, D = head_dim > 0 ? head_dim : R;
  require(
      cos.rows == x.rows && sin.numel() == cos.numel() && R > 0 && R <= D && x.cols % D == 0, op,
      [&] { return "x " + shape(x) + ", cos " + shape(cos) + ", head dim " + std::to_string(D); });
  require_dtype(op, DType::kF32, {x, cos, sin});
  const int64_t pairs = x.numel() / D * cos.cols;
  if (pairs == 0) return;
  rotate_halves_kernel<<<blocks_for(pairs, kThreads), kThreads>>>(
      x.as<float>(), x.ld(), cos.as<float>(), sin.as<float>(), x.cols / D, D, cos.cols, pairs,
      backward);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void rope_forward(View x, View cos, View sin, int64_t head_dim) {
  rope(x, cos, sin, head_dim, false);
}

void rope_backward(View dx, View cos, View sin, int64_t head_dim) {
  rope(dx, cos, sin, head_dim, true);
}

}  // namespace sft::ops::cuda
