// Elementwise CUDA kernels of ops.h: add (f32 += f32 | bf16), add_bias, bias_backward (column
// sums in a fixed order), scale, add_scalar, zero, cast (f32 ↔ bf16 as core/half.h, f32 → f32;
// either side may be a column block, View::columns, walked row by row at its stride).
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 256;

__device__ inline int64_t element_index() {
  return static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
}

template <typename Src>
__global__ void add_kernel(float* dst, const Src* src, int64_t n) {
  const int64_t i = element_index();
  if (i < n) dst[i] += widen(src[i]);
}

__global__ void add_bias_kernel(float* y, const float* b, int64_t n, int64_t O) {
  const int64_t i = element_index();
  if (i < n) y[i] += b[i % O];
}

__global__ void scale_kernel(float* x, float factor, int64_t n) {
  const int64_t i = element_index();
  if (i < n) x[i] *= factor;
}

__global__ void add_scalar_kernel(float* x, float c, int64_t n) {
  const int64_t i = element_index();
  if (i < n) x[i] += c;
}

// dst = src converted, over (rows, cols) with rows ld_dst and ld_src elements apart (a dense
// view is one row of n; a column block walks its rows): one thread per element.
struct ToBf16 {
  __device__ uint16_t operator()(float v) const { return f32_to_bf16(v); }
};
struct ToF32 {
  __device__ float operator()(uint16_t v) const { return bf16_to_f32(v); }
  __device__ float operator()(float v) const { return v; }
};

template <typename Dst, typename Src, typename Convert>
__global__ void cast_kernel(Dst* dst, int64_t ld_dst, const Src* src, int64_t ld_src, int64_t n,
                            int64_t cols, Convert convert) {
  const int64_t i = element_index();
  if (i >= n) return;
  const int64_t r = i / cols, c = i % cols;
  dst[r * ld_dst + c] = convert(src[r * ld_src + c]);
}

template <typename Dst, typename Src, typename Convert>
void launch_cast(const View& dst, const View& src, int64_t rows, int64_t cols, Convert convert) {
  const int64_t n = rows * cols;
  const int64_t ld_dst = rows == 1 ? cols : dst.ld(), ld_src = rows == 1 ? cols : src.ld();
  cast_kernel<<<blocks_for(n, kThreads), kThreads>>>(dst.as<Dst>(), ld_dst, src.as<Src>(), ld_src,
                                                     n, cols, convert);
}

struct BiasGrad {
  const float* dy;
  int64_t O;
  __device__ float operator()(int64_t i, int64_t o) const { return dy[i * O + o]; }
};

void check_launch() {
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void add(View dst, View src, View rounded) {
  require_cuda("add", {dst, src, rounded});
  require(dst.numel() == src.numel(), "add",
          [&] { return "dst " + shape(dst) + ", src " + shape(src); });
  require_dtype("add", DType::kF32, {dst});
  require(src.dtype == DType::kF32 || src.dtype == DType::kBF16, "add",
          [&] { return "adds f32 or bf16 into f32, got " + std::string(dtype_name(src.dtype)); });
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (src.dtype == DType::kBF16)
    add_kernel<<<blocks_for(n, kThreads), kThreads>>>(dst.as<float>(), src.as<uint16_t>(), n);
  else
    add_kernel<<<blocks_for(n, kThreads), kThreads>>>(dst.as<float>(), src.as<float>(), n);
  check_launch();
  if (rounded.empty()) return;
  require(rounded.numel() == n, "add",
          [&] { return "dst " + shape(dst) + ", rounded " + shape(rounded); });
  require_dtype("add", DType::kBF16, {rounded});
  cuda::cast(rounded, dst);  // a second kernel here: the values of the CPU's fused pass
}

void add_bias(View y, View b) {
  require_cuda("add_bias", {y, b});
  require(b.numel() == y.cols, "add_bias", [&] { return "y " + shape(y) + ", b " + shape(b); });
  require_dtype("add_bias", DType::kF32, {y, b});
  const int64_t n = y.numel();
  if (n == 0) return;
  add_bias_kernel<<<blocks_for(n, kThreads), kThreads>>>(y.as<float>(), b.as<float>(), n, y.cols);
  check_launch();
}

void bias_backward(View db, View dy) {
  require_cuda("bias_backward", {db, dy});
  require(db.numel() == dy.cols, "bias_backward",
          [&] { return "dy " + shape(dy) + ", db " + shape(db); });
  require_dtype("bias_backward", DType::kF32, {db, dy});
  add_column_sums(db.as<float>(), BiasGrad{dy.as<float>(), dy.cols}, dy.rows, dy.cols);
}

void scale(View x, float factor) {
  require_cuda("scale", {x});
  require_dtype("scale", DType::kF32, {x});
  const int64_t n = x.numel();
  if (n == 0) return;
  scale_kernel<<<blocks_for(n, kThreads), kThreads>>>(x.as<float>(), factor, n);
  check_launch();
}

void add_scalar(View x, float c) {
  require_cuda("add_scalar", {x});
  require_dtype("add_scalar", DType::kF32, {x});
  const int64_t n = x.numel();
  if (n == 0) return;
  add_scalar_kernel<<<blocks_for(n, kThreads), kThreads>>>(x.as<float>(), c, n);
  check_launch();
}

void zero(View x) {
  require_cuda("zero", {x});
  if (x.empty() || x.numel() == 0) return;
  SFT_CUDA_CHECK(cudaMemsetAsync(x.data, 0, static_cast<size_t>(x.numel()) * dtype_size(x.dtype)));
}

void cast(View dst, View src) {
  require_cuda("cast", {dst, src});
  // Dense views need as many elements; a column block (either side) the same shape, as the CPU.
  const bool dense = dst.dense() && src.dense();
  require(dense ? dst.numel() == src.numel() : dst.rows == src.rows && dst.cols == src.cols, "cast",
          [&] { return "dst " + shape(dst) + ", src " + shape(src); });
  const DType to = dst.dtype, from = src.dtype;
  const bool known = (to == DType::kBF16 && from == DType::kF32) ||
                     (to == DType::kF32 && from == DType::kBF16) ||
                     (to == DType::kF32 && from == DType::kF32);
  if (!known)
    fail("ops", "cast: no CUDA kernel from " + std::string(dtype_name(from)) + " to " +
                    std::string(dtype_name(to)));
  const int64_t n = src.numel();
  if (n == 0) return;
  // Dense: one row of n elements (whatever the two shapes); a block: its rows.
  const int64_t rows = dense ? 1 : src.rows, cols = dense ? n : src.cols;
  if (to == DType::kBF16)
    launch_cast<uint16_t, float>(dst, src, rows, cols, ToBf16{});
  else if (from == DType::kBF16)
    launch_cast<float, uint16_t>(dst, src, rows, cols, ToF32{});
  else if (dense)
    SFT_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(n) * sizeof(float),
                                   cudaMemcpyDeviceToDevice));
  else
    launch_cast<float, float>(dst, src, rows, cols, ToF32{});
  check_launch();
}

}  // namespace sft::ops::cuda
