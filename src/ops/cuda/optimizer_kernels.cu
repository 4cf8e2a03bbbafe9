// The optimizer's kernels on CUDA: AdamW's element update and the squared L2 norm.
//
// AdamW follows ops/cpu/optimizer_kernels.cpp operation by operation (torch's single-tensor
// order) with every step an explicitly rounded intrinsic (__fmul_rn, __fadd_rn, __fdiv_rn,
// __fsqrt_rn): nvcc may not fuse them into multiply-adds, so the result is the CPU's bit for bit.
// sum_of_squares: the CPU kernel's order exactly (fixed 16384-element blocks of 8 lanes, in
// double), so its bits are the CPU's; the order depends only on n, never on the device.
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
constexpr int64_t kNormBlock = 1 << 14;

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, uint16_t* copy,
                             AdamWScalars k, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  float pi = p[i];
  const float gi = __fmul_rn(g[i], k.grad_scale);
  if (k.decay) pi = __fmul_rn(pi, k.decay_factor);
  // torch.lerp with weight < 0.5: start + weight * (end - start)
  const float mi = __fadd_rn(m[i], __fmul_rn(k.lerp_weight, __fsub_rn(gi, m[i])));
  float vi = __fmul_rn(v[i], k.beta2);
  vi = __fadd_rn(vi, __fmul_rn(__fmul_rn(k.one_minus_beta2, gi), gi));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
  const float pn = __fadd_rn(pi, __fdiv_rn(__fmul_rn(k.neg_step_size, mi), denom));
  m[i] = mi;
  v[i] = vi;
  p[i] = pn;
  if (copy) copy[i] = f32_to_bf16(pn);
}

// sum_of_squares in the CPU's order (ops/cpu/optimizer_kernels.cpp), so a device run's
// grad_norm has the CPU's bits: in each 16384-element block, lane l (of 8) sums the squares of
// the elements ≡ l mod 8 in index order (one thread per lane); then each block adds its lanes
// 0..7 from 0; then the block sums are added in block order from 0 (one thread: the order is
// serial by definition, and it is one double add per 16384 elements).
constexpr int kLanes = 8;

__global__ void lane_squares_kernel(double* lanes, const float* a, int64_t n, int64_t blocks) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= blocks * kLanes) return;
  const int64_t begin = t / kLanes * kNormBlock;
  const int64_t end = begin + kNormBlock < n ? begin + kNormBlock : n;
  double acc = 0.0;
  for (int64_t i = begin + t % kLanes; i < end; i += kLanes) {
    const double x = a[i];
    acc = __dadd_rn(acc, __dmul_rn(x, x));  // the square is exact; no fused add
  }
  lanes[t] = acc;
}

__global__ void block_lanes_kernel(double* partial, const double* lanes, int64_t blocks) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (b >= blocks) return;
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum = __dadd_rn(sum, lanes[b * kLanes + l]);
  partial[b] = sum;
}

__global__ void sum_partials_kernel(double* total, const double* partial, int64_t blocks) {
  double acc = 0.0;
  for (int64_t b = 0; b < blocks; ++b) acc = __dadd_rn(acc, partial[b]);
  *total = acc;
}

void require_f32(const char* op, std::initializer_list<View> views, int64_t n) {
  require_cuda(op, views);
  for (const View& v : views)
    if (v.dtype != DType::kF32 || v.numel() != n)
      fail("ops", std::string(op) + ": needs CUDA f32 views of " + std::to_string(n) +
                      " elements, got a " + std::string(dtype_name(v.dtype)) + " view of " +
                      std::to_string(v.numel()));
}

}  // namespace

void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy) {
  const int64_t n = param.numel();
  require_f32("adamw_update", {param, grad, exp_avg, exp_avg_sq}, n);
  if (!bf16_copy.empty() && (bf16_copy.dtype != DType::kBF16 || bf16_copy.numel() != n ||
                             bf16_copy.device != Device::kCuda))
    fail("ops", "adamw_update: the bf16 copy must be a CUDA bf16 view of " + std::to_string(n) +
                    " elements");
  if (n == 0) return;
  uint16_t* copy = bf16_copy.empty() ? nullptr : bf16_copy.as<uint16_t>();
  adamw_kernel<<<blocks_for(n, kThreads), kThreads>>>(
      param.as<float>(), grad.as<float>(), exp_avg.as<float>(), exp_avg_sq.as<float>(), copy, k, n);
  SFT_CUDA_CHECK(cudaGetLastError());
}

// One launch per slice (the device has no thread hand-off to save), on sub-views of the arena.
void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k,
                         View bf16_copy) {
  const int64_t n = param.numel();
  require_f32("adamw_update_slices", {param, grad, exp_avg, exp_avg_sq}, n);
  if (!bf16_copy.empty() && (bf16_copy.dtype != DType::kBF16 || bf16_copy.numel() != n ||
                             bf16_copy.device != Device::kCuda))
    fail("ops", "adamw_update_slices: the bf16 copy must be a CUDA bf16 view of " +
                    std::to_string(n) + " elements");
  uint16_t* copy = bf16_copy.empty() ? nullptr : bf16_copy.as<uint16_t>();
  for (size_t s = 0; s < slices.size(); ++s) {
    const ParamSlice& slice = slices[s];
    if (slice.offset > static_cast<size_t>(n) || slice.size > static_cast<size_t>(n) - slice.offset)
      fail("ops", "adamw_update_slices: slice " + std::to_string(s) + " runs past the " +
                      std::to_string(n) + " elements of the views");
    if (slice.size == 0) continue;
    AdamWScalars ks = k;
    ks.decay = k.decay && slice.decay;
    const size_t o = slice.offset;
    const int64_t len = static_cast<int64_t>(slice.size);
    adamw_kernel<<<blocks_for(len, kThreads), kThreads>>>(
        param.as<float>() + o, grad.as<float>() + o, exp_avg.as<float>() + o,
        exp_avg_sq.as<float>() + o, copy ? copy + o : nullptr, ks, len);
    SFT_CUDA_CHECK(cudaGetLastError());
  }
}

double sum_of_squares(View x) {
  const int64_t n = x.numel();
  require_f32("sum_of_squares", {x}, n);
  if (n == 0) return 0.0;
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  auto* lanes = static_cast<double*>(
      scratch(static_cast<size_t>(blocks * (kLanes + 1) + 1) * sizeof(double)));
  double* partial = lanes + blocks * kLanes;
  double* total = partial + blocks;
  lane_squares_kernel<<<blocks_for(blocks * kLanes, kThreads), kThreads>>>(lanes, x.as<float>(), n,
                                                                           blocks);
  SFT_CUDA_CHECK(cudaGetLastError());
  block_lanes_kernel<<<blocks_for(blocks, kThreads), kThreads>>>(partial, lanes, blocks);
  SFT_CUDA_CHECK(cudaGetLastError());
  sum_partials_kernel<<<1, 1>>>(total, partial, blocks);
  SFT_CUDA_CHECK(cudaGetLastError());
  double result = 0.0;
  copy_to_host(&result, total, sizeof(double));
  return result;
}

}  // namespace sft::ops::cuda
