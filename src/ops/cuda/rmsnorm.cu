// RMSNorm forward/backward on CUDA (ops.h's contract): one block per row, the row's sums by
// block_sum (a fixed tree); dw by add_column_sums (fixed row chunks). fp32 throughout; the
// forward's out may be bf16 (the fp32 result rounded as it is stored).
#include <cuda_runtime.h>

#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

template <typename Out>
__global__ void rmsnorm_forward_kernel(Out* out, float* rstd, const float* x, const float* w,
                                       int64_t C, float eps) {
  const int64_t row = blockIdx.x;
  const float* xi = x + row * C;
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < C; j += kReduceThreads) ss += xi[j] * xi[j];
  ss = block_sum(ss);
  const float r = 1.0f / sqrtf(ss / static_cast<float>(C) + eps);
  if (threadIdx.x == 0) rstd[row] = r;
  Out* oi = out + row * C;
  for (int64_t j = threadIdx.x; j < C; j += kReduceThreads) store(oi, j, w[j] * (xi[j] * r));
}

// y_j = w_j x_j r  ⇒  dx_j = r (w_j dy_j − x_j r² · mean_k(w_k dy_k x_k)).
__global__ void rmsnorm_backward_dx_kernel(float* dx, const float* dout, const float* x,
                                           const float* rstd, const float* w, int64_t C) {
  const int64_t row = blockIdx.x;
  const float* xi = x + row * C;
  const float* gi = dout + row * C;
  const float r = rstd[row];
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < C; j += kReduceThreads) dot += w[j] * gi[j] * xi[j];
  dot = block_sum(dot);
  const float c = dot * r * r / static_cast<float>(C);
  float* dxi = dx + row * C;
  for (int64_t j = threadIdx.x; j < C; j += kReduceThreads) dxi[j] = r * (w[j] * gi[j] - xi[j] * c);
}

// dw_j's term of row i: dy_ij x_ij r_i.
struct RmsnormWeightGrad {
  const float *dout, *x, *rstd;
  int64_t C;
  __device__ float operator()(int64_t i, int64_t j) const {
    return dout[i * C + j] * x[i * C + j] * rstd[i];
  }
};

}  // namespace

void rmsnorm_forward(View out, View rstd, View x, View w, double eps) {
  require_cuda("rmsnorm", {out, rstd, x, w});
  require(out.numel() == x.numel() && rstd.numel() == x.rows && w.numel() == x.cols, "rmsnorm",
          [&] { return "x " + shape(x) + ", out " + shape(out) + ", w " + shape(w); });
  require_dtype("rmsnorm", DType::kF32, {rstd, x, w});
  if (out.dtype != DType::kBF16) require_dtype("rmsnorm", DType::kF32, {out});
  if (x.rows == 0 || x.cols == 0) return;
  const unsigned rows = static_cast<unsigned>(x.rows);
  if (out.dtype == DType::kBF16)  // fused with the bf16 rounding
    rmsnorm_forward_kernel<<<rows, kReduceThreads>>>(out.as<uint16_t>(), rstd.as<float>(),
                                                     x.as<float>(), w.as<float>(), x.cols,
                                                     static_cast<float>(eps));
  else
    rmsnorm_forward_kernel<<<rows, kReduceThreads>>>(out.as<float>(), rstd.as<float>(),
                                                     x.as<float>(), w.as<float>(), x.cols,
                                                     static_cast<float>(eps));
  SFT_CUDA_CHECK(cudaGetLastError());
}

// The residual add and the norm as the unfused kernels (cast, add, rmsnorm): the values of the
// CPU's fused pass, with the sum read once more.
void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps) {
  require_cuda("add_rmsnorm_forward", {sum, out, rstd, a, b, w});
  require(sum.numel() == a.numel() && b.numel() == a.numel() && sum.dtype == a.dtype &&
              b.dtype == a.dtype,
          "add_rmsnorm_forward", [&] {
            return "the residual add takes sum, a and b of one shape and dtype, got " + shape(sum) +
                   " = " + shape(a) + " + " + shape(b);
          });
  if (sum.data != a.data) cuda::cast(sum, a);
  cuda::add(sum, b);
  cuda::rmsnorm_forward(out, rstd, sum, w, eps);
}

void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w) {
  require_cuda("rmsnorm_backward", {dx, dw, dout, x, rstd, w});
  require(dx.numel() == x.numel() && dout.numel() == x.numel() &&
              (dw.empty() || dw.numel() == x.cols) && rstd.numel() == x.rows && w.numel() == x.cols,
          "rmsnorm_backward",
          [&] { return "x " + shape(x) + ", dx " + shape(dx) + ", dw " + shape(dw); });
  require_dtype("rmsnorm_backward", DType::kF32, {dx, dout, x, rstd, w});
  if (!dw.empty()) require_dtype("rmsnorm_backward", DType::kF32, {dw});
  if (x.rows == 0 || x.cols == 0) return;
  rmsnorm_backward_dx_kernel<<<static_cast<unsigned>(x.rows), kReduceThreads>>>(
      dx.as<float>(), dout.as<float>(), x.as<float>(), rstd.as<float>(), w.as<float>(), x.cols);
  SFT_CUDA_CHECK(cudaGetLastError());
  if (dw.empty()) return;  // a frozen weight
  add_column_sums(dw.as<float>(),
                  RmsnormWeightGrad{dout.as<float>(), x.as<float>(), rstd.as<float>(), x.cols},
                  x.rows, x.cols);
}

}  // namespace sft::ops::cuda
