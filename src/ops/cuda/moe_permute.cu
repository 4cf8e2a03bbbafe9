// Mixture-of-experts row movement on CUDA (ops.h's moe_permute_* and moe_combine_*), with the
// routing arrays in device memory (ops/moe.h): the tokens gathered into the experts' permuted
// rows, the experts' outputs combined back per token. The CPU kernels' sums in the same order.
//
// Every output element is written by one thread from a fixed order of reads, never scattered:
// the permutation's backward and the combine's forward gather a token's k rows in ascending
// permuted row (= ascending expert) order, which a first kernel writes per token (its k slots
// sorted by row, in the backend's scratch); the combine's backward writes each slot's row of
// dys and its weight's gradient Σ_c dout · ys in one block per slot (block_sum's fixed tree).
// xs is f32 or bf16 (a copy of x's bits); the rest f32.
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxTopK = 64;  // the CPU kernels' bound

// order[t·k + n] = token t's slot with the n-th smallest permuted row (an insertion sort of k).
__global__ void slots_by_row_kernel(int64_t* order, const int64_t* row_of, int64_t tokens,
                                    int64_t k) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= tokens) return;
  const int64_t* rows = row_of + t * k;
  int64_t* o = order + t * k;
  for (int64_t j = 0; j < k; ++j) {
    int64_t n = j;
    while (n > 0 && rows[o[n - 1]] > rows[j]) {
      o[n] = o[n - 1];
      --n;
    }
    o[n] = j;
  }
}

template <typename T>
__global__ void permute_forward_kernel(T* xs, const T* x, const int64_t* token_of, int64_t n,
                                       int64_t C) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  xs[i] = x[token_of[i / C] * C + i % C];
}

__global__ void permute_backward_kernel(float* dx, const float* dxs, const int64_t* row_of,
                                        const int64_t* order, int64_t n, int64_t C, int64_t k) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / C, c = i % C;
  float acc = 0;
  for (int64_t m = 0; m < k; ++m) acc += dxs[row_of[t * k + order[t * k + m]] * C + c];
  dx[i] = acc;
}

__global__ void combine_forward_kernel(float* out, const float* ys, const float* w,
                                       const int64_t* row_of, const int64_t* order, int64_t n,
                                       int64_t C, int64_t k) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / C, c = i % C;
  float acc = 0;
  for (int64_t m = 0; m < k; ++m) {
    const int64_t j = order[t * k + m];
    acc += ys[row_of[t * k + j] * C + c] * w[t * k + j];
  }
  out[i] = acc;
}

// One block per slot s = t·k + j (kReduceThreads threads, every one reaching block_sum).
__global__ void combine_backward_kernel(float* dys, float* dw, const float* dout, const float* ys,
                                        const float* w, const int64_t* row_of, int64_t C,
                                        int64_t k) {
  const int64_t s = blockIdx.x, t = s / k;
  const int64_t row = row_of[s];
  const float ws = w[s];
  const float* d = dout + t * C;
  float dot = 0;
  for (int64_t c = threadIdx.x; c < C; c += kReduceThreads) {
    dys[row * C + c] = d[c] * ws;
    dot += d[c] * ys[row * C + c];
  }
  dot = block_sum(dot);
  if (threadIdx.x == 0) dw[s] = dot;
}

void check_routing(const char* op, const ExpertRouting& r, int64_t T) {
  require(r.tokens == T && r.top_k >= 1 && r.top_k <= kMaxTopK, op, [&] {
    return "a routing of " + std::to_string(r.tokens) + " tokens × top_k " +
           std::to_string(r.top_k) + " for " + std::to_string(T) + " token rows (top_k ≤ " +
           std::to_string(kMaxTopK) + ")";
  });
}

// Token by token, its slots in ascending row order, in the scratch (valid for this op).
const int64_t* slots_by_row(const ExpertRouting& r) {
  auto* order = static_cast<int64_t*>(scratch(static_cast<size_t>(r.rows()) * sizeof(int64_t)));
  slots_by_row_kernel<<<blocks_for(r.tokens, kThreads), kThreads>>>(order, r.row_of, r.tokens,
                                                                    r.top_k);
  SFT_CUDA_CHECK(cudaGetLastError());
  return order;
}

}  // namespace

void moe_permute_forward(View xs, View x, const ExpertRouting& r) {
  const char* op = "moe_permute_forward";
  require_cuda(op, {xs, x});
  check_routing(op, r, x.rows);
  require(xs.rows == r.rows() && xs.cols == x.cols && xs.dtype == x.dtype, op, [&] {
    return "xs " + shape(xs) + " " + std::string(dtype_name(xs.dtype)) + " for x " + shape(x) +
           " " + std::string(dtype_name(x.dtype)) + " (want (T·k, C), x's dtype)";
  });
  require(x.dtype == DType::kF32 || x.dtype == DType::kBF16, op, [&] {
    return "the CUDA kernel takes f32 or bf16, got " + std::string(dtype_name(x.dtype));
  });
  const int64_t n = xs.numel();
  if (n == 0) return;
  if (x.dtype == DType::kBF16)
    permute_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
        xs.as<uint16_t>(), x.as<uint16_t>(), r.token_of, n, x.cols);
  else
    permute_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(xs.as<float>(), x.as<float>(),
                                                                  r.token_of, n, x.cols);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void moe_permute_backward(View dx, View dxs, const ExpertRouting& r) {
  const char* op = "moe_permute_backward";
  require_cuda(op, {dx, dxs});
  check_routing(op, r, dx.rows);
  require(dxs.rows == r.rows() && dxs.cols == dx.cols, op,
          [&] { return "dxs " + shape(dxs) + " for dx " + shape(dx); });
  require_dtype(op, DType::kF32, {dx, dxs});
  const int64_t n = dx.numel();
  if (n == 0) return;
  const int64_t* order = slots_by_row(r);
  permute_backward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
      dx.as<float>(), dxs.as<float>(), r.row_of, order, n, dx.cols, r.top_k);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void moe_combine_forward(View out, View ys, View weights, const ExpertRouting& r) {
  const char* op = "moe_combine_forward";
  require_cuda(op, {out, ys, weights});
  check_routing(op, r, out.rows);
  require(ys.rows == r.rows() && ys.cols == out.cols && weights.rows == out.rows &&
              weights.cols == r.top_k,
          op, [&] {
            return "out " + shape(out) + ", ys " + shape(ys) + ", weights " + shape(weights);
          });
  require_dtype(op, DType::kF32, {out, ys, weights});
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t* order = slots_by_row(r);
  combine_forward_kernel<<<blocks_for(n, kThreads), kThreads>>>(
      out.as<float>(), ys.as<float>(), weights.as<float>(), r.row_of, order, n, out.cols, r.top_k);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void moe_combine_backward(View dys, View dweights, View dout, View ys, View weights,
                          const ExpertRouting& r) {
  const char* op = "moe_combine_backward";
  require_cuda(op, {dys, dweights, dout, ys, weights});
  check_routing(op, r, dout.rows);
  require(ys.rows == r.rows() && ys.cols == dout.cols && dys.rows == ys.rows &&
              dys.cols == ys.cols && weights.rows == dout.rows && weights.cols == r.top_k &&
              dweights.rows == weights.rows && dweights.cols == weights.cols,
          op, [&] {
            return "dout " + shape(dout) + ", ys " + shape(ys) + ", dys " + shape(dys) +
                   ", weights " + shape(weights) + ", dweights " + shape(dweights);
          });
  require_dtype(op, DType::kF32, {dys, dweights, dout, ys, weights});
  if (r.rows() == 0) return;
  combine_backward_kernel<<<static_cast<unsigned>(r.rows()), kReduceThreads>>>(
      dys.as<float>(), dweights.as<float>(), dout.as<float>(), ys.as<float>(), weights.as<float>(),
      r.row_of, dout.cols, r.top_k);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
