// Attention sinks on CUDA (ops.h's attention_sinks_forward / _backward; the CPU's
// ops/cpu/attention_sinks.cpp says why these two small passes are all a sink needs).
// Forward: one thread per (row, head): lse' = log(e^lse + e^sink), out ← out · e^(lse − lse').
// Backward: one block per head; thread i sums the rows i, i + 256, ... in order, then block_sum's
// fixed tree: dsinks[h] −= Σ_t e^(sink − lse) · rowsum(dout ⊙ out). No atomics: same bits per run.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void sinks_forward_kernel(float* out, float* lse, const float* sinks, int64_t n,
                                     int64_t H, int64_t D) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float l = lse[i], s = sinks[i % H];
  const float m = fmaxf(l, s);
  const float total = m + logf(expf(l - m) + expf(s - m));
  const float factor = expf(l - total);
  for (int64_t x = 0; x < D; ++x) out[i * D + x] *= factor;
  lse[i] = total;
}

template <typename Out>
__global__ void sinks_backward_kernel(float* dsinks, const float* dout, const Out* out,
                                      const float* lse, const float* sinks, int64_t rows, int64_t H,
                                      int64_t D) {
  const int64_t h = blockIdx.x;
  float sum = 0.0f;
  for (int64_t t = threadIdx.x; t < rows; t += kReduceThreads) {
    const int64_t i = t * H + h;
    float delta = 0.0f;
    for (int64_t x = 0; x < D; ++x) delta += dout[i * D + x] * widen(out[i * D + x]);
    sum += expf(sinks[h] - lse[i]) * delta;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) dsinks[h] -= sum;
}

void require_sink_shapes(const char* op, const View& out, const View& lse, const View& sinks) {
  const int64_t H = lse.cols;
  require(sinks.numel() == H && out.rows == lse.rows && H > 0 && out.cols % H == 0, op, [&] {
    return "sinks must hold one logit per head and out (T, H·D) match lse (T, H); got out " +
           shape(out) + ", lse " + shape(lse) + ", sinks " + shape(sinks);
  });
}

}  // namespace

void attention_sinks_forward(View out, View lse, View sinks) {
  const char* op = "attention_sinks_forward";
  require_cuda(op, {out, lse, sinks});
  require_dtype(op, DType::kF32, {out, lse, sinks});
  require_sink_shapes(op, out, lse, sinks);
  const int64_t n = lse.numel();
  if (n == 0) return;
  sinks_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
      out.as<float>(), lse.as<float>(), sinks.as<float>(), n, lse.cols, out.cols / lse.cols);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks) {
  const char* op = "attention_sinks_backward";
  require_cuda(op, {dsinks, dout, out, lse, sinks});
  require_dtype(op, DType::kF32, {dsinks, dout, lse, sinks});
  require_sink_shapes(op, out, lse, sinks);
  require(dsinks.numel() == sinks.numel() && dout.rows == out.rows && dout.cols == out.cols, op,
          [&] { return "dsinks must be (H) and dout (T, H·D), got dout " + shape(dout); });
  const int64_t H = lse.cols, D = out.cols / H;
  if (out.dtype == DType::kBF16)
    sinks_backward_kernel<<<static_cast<unsigned>(H), kReduceThreads>>>(
        dsinks.as<float>(), dout.as<float>(), out.as<uint16_t>(), lse.as<float>(),
        sinks.as<float>(), out.rows, H, D);
  else {
    require_dtype(op, DType::kF32, {out});
    sinks_backward_kernel<<<static_cast<unsigned>(H), kReduceThreads>>>(
        dsinks.as<float>(), dout.as<float>(), out.as<float>(), lse.as<float>(), sinks.as<float>(),
        out.rows, H, D);
  }
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
