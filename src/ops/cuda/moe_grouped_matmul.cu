// Grouped GEMMs over the experts' token groups on CUDA (ops.h's grouped_matmul and
// grouped_matmul_weight_grad), with the routing's offsets in device memory (ops/moe.h), so no
// group size ever crosses to the host: f32 × f32 or bf16 × bf16 operands (widened exactly), fp32
// accumulation, f32 results.
//
// Shared-memory tiled products, kTile × kTile outputs per block (one per thread), the reduced
// dimension in kTile chunks in ascending order: each output is one sequential fp32 sum, so a
// rerun gives the same bits and no atomics are needed.
//   grouped_matmul: a block owns kTile permuted rows of one expert and kTile output columns.
//     Its expert and row tile come from its index among Σ_e ⌈n_e / kTile⌉ row tiles (each
//     block walks the offsets; the grid is sized to the bound ⌈R / kTile⌉ + E and the blocks
//     past the last tile return at once), so a tile never mixes two experts' rows.
//   grouped_matmul_weight_grad: a block owns a kTile × kTile tile of one expert's block of dw
//     and sums dy_eᵀ x_e over the expert's rows in order; experts without rows are left as
//     they are (the CPU skips them too).
// The simple tiled form, not cuBLASLt: a product per group would need the group sizes on the
// host (a device-to-host copy per call) and a cuBLASLt plan per group size.
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kTile = 16;
constexpr int kThreads = kTile * kTile;

// c (R, N) =/+= a_e op(W_e) per expert: trans_w → W_e (N, K), c = a W_eᵀ; else W_e (K, N).
// W_e's row i is w's row e·stride + first + i (ldw = w's columns).
template <typename T>
__global__ void grouped_matmul_kernel(float* c, const T* a, const T* w, const int64_t* offsets,
                                      int64_t experts, int64_t N, int64_t K, int64_t ldw,
                                      int64_t stride, int64_t first, bool trans_w,
                                      bool accumulate) {
  __shared__ float as[kTile][kTile];
  __shared__ float ws[kTile][kTile];
  // This block's expert and row tile (the same for all its threads).
  int64_t slot = blockIdx.x, e = 0, tiles = 0;
  for (; e < experts; ++e) {
    tiles = (offsets[e + 1] - offsets[e] + kTile - 1) / kTile;
    if (slot < tiles) break;
    slot -= tiles;
  }
  if (e == experts) return;  // past the last tile: the whole block
  const int ty = static_cast<int>(threadIdx.x) / kTile, tx = static_cast<int>(threadIdx.x) % kTile;
  const int64_t row0 = offsets[e] + slot * kTile, rows_end = offsets[e + 1];
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t r = row0 + ty, n = col0 + tx;
  const T* we = w + (e * stride + first) * ldw;
  float acc = 0;
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    // as[ty][tx] = a[row0 + ty, k0 + tx]; ws[ty][tx] = op(W_e)[k0 + ty, col0 + tx]; 0 outside.
    const int64_t ka = k0 + tx, kw = k0 + ty;
    as[ty][tx] = r < rows_end && ka < K ? widen(a[r * K + ka]) : 0.0f;
    ws[ty][tx] = n < N && kw < K ? widen(trans_w ? we[n * ldw + kw] : we[kw * ldw + n]) : 0.0f;
    __syncthreads();
    const int64_t depth = K - k0 < kTile ? K - k0 : kTile;
    for (int64_t kk = 0; kk < depth; ++kk) acc += as[ty][kk] * ws[kk][tx];
    __syncthreads();
  }
  if (r < rows_end && n < N) c[r * N + n] = accumulate ? c[r * N + n] + acc : acc;
}

// dw's block of expert e (rows e·stride + first + [0, Nb), K columns) += dy_eᵀ x_e; dy (R, Nb),
// x (R, K). blockIdx.x = e · ⌈Nb / kTile⌉ + the row tile, blockIdx.y the column tile.
template <typename T>
__global__ void grouped_weight_grad_kernel(float* dw, const T* dy, const T* x,
                                           const int64_t* offsets, int64_t Nb, int64_t K,
                                           int64_t stride, int64_t first) {
  __shared__ float ds[kTile][kTile];
  __shared__ float xs[kTile][kTile];
  const int64_t row_tiles = (Nb + kTile - 1) / kTile;
  const int64_t e = blockIdx.x / row_tiles, i0 = (blockIdx.x % row_tiles) * kTile;
  const int64_t begin = offsets[e], end = offsets[e + 1];
  if (begin == end) return;  // no rows: the whole block
  const int ty = static_cast<int>(threadIdx.x) / kTile, tx = static_cast<int>(threadIdx.x) % kTile;
  const int64_t k0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t i = i0 + ty, kc = k0 + tx;
  float acc = 0;
  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    // ds[ty][tx] = dy[r0 + ty, i0 + tx]; xs[ty][tx] = x[r0 + ty, k0 + tx]; 0 outside.
    const int64_t r = r0 + ty;
    ds[ty][tx] = r < end && i0 + tx < Nb ? widen(dy[r * Nb + i0 + tx]) : 0.0f;
    xs[ty][tx] = r < end && kc < K ? widen(x[r * K + kc]) : 0.0f;
    __syncthreads();
    const int64_t depth = end - r0 < kTile ? end - r0 : kTile;
    for (int64_t rr = 0; rr < depth; ++rr) acc += ds[rr][ty] * xs[rr][tx];
    __syncthreads();
  }
  if (i < Nb && kc < K) {
    float* out = dw + (e * stride + first + i) * K + kc;
    *out = *out + acc;
  }
}

void check_block(const char* op, const View& w, const ExpertRouting& r, ExpertBlock b) {
  require(b.rows > 0 && b.first >= 0 && b.first + b.rows <= b.stride &&
              b.stride * r.experts == w.rows && r.offsets != nullptr && r.experts > 0,
          op, [&] {
            return "expert block {rows " + std::to_string(b.rows) + ", stride " +
                   std::to_string(b.stride) + ", first " + std::to_string(b.first) + "} of a " +
                   shape(w) + " weight for " + std::to_string(r.experts) + " experts";
          });
}

// The operands' dtype: f32 or bf16, the same for both.
DType operand_dtype(const char* op, const View& a, const View& b) {
  require(a.dtype == b.dtype && (a.dtype == DType::kF32 || a.dtype == DType::kBF16), op, [&] {
    return "operands must both be f32 or both bf16, got " + std::string(dtype_name(a.dtype)) +
           " and " + std::string(dtype_name(b.dtype));
  });
  return a.dtype;
}

}  // namespace

void grouped_matmul(View c, View a, View w, const ExpertRouting& r, ExpertBlock block, bool trans_w,
                    bool accumulate) {
  const char* op = "grouped_matmul";
  require_cuda(op, {c, a, w});
  check_block(op, w, r, block);
  const int64_t K = a.cols, N = trans_w ? block.rows : w.cols;
  require(c.rows == r.rows() && a.rows == r.rows() && c.cols == N &&
              (trans_w ? w.cols : block.rows) == K,
          op, [&] {
            return "c " + shape(c) + " and a " + shape(a) + " need " + std::to_string(r.rows()) +
                   " permuted rows and an expert block of " + std::to_string(block.rows) +
                   " rows of " + shape(w) + (trans_w ? " (transposed)" : "");
          });
  require_dtype(op, DType::kF32, {c});
  const DType in = operand_dtype(op, a, w);
  if (r.rows() == 0 || N == 0) return;
  const dim3 grid(static_cast<unsigned>((r.rows() + kTile - 1) / kTile + r.experts),
                  static_cast<unsigned>((N + kTile - 1) / kTile));
  if (in == DType::kBF16)
    grouped_matmul_kernel<<<grid, kThreads>>>(c.as<float>(), a.as<uint16_t>(), w.as<uint16_t>(),
                                              r.offsets, r.experts, N, K, w.cols, block.stride,
                                              block.first, trans_w, accumulate);
  else
    grouped_matmul_kernel<<<grid, kThreads>>>(c.as<float>(), a.as<float>(), w.as<float>(),
                                              r.offsets, r.experts, N, K, w.cols, block.stride,
                                              block.first, trans_w, accumulate);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void grouped_matmul_weight_grad(View dw, View dy, View x, const ExpertRouting& r,
                                ExpertBlock block) {
  const char* op = "grouped_matmul_weight_grad";
  require_cuda(op, {dw, dy, x});
  check_block(op, dw, r, block);
  require(dy.rows == r.rows() && x.rows == r.rows() && dy.cols == block.rows && x.cols == dw.cols,
          op, [&] {
            return "dy " + shape(dy) + " and x " + shape(x) + " need " + std::to_string(r.rows()) +
                   " permuted rows, an expert block of " + std::to_string(block.rows) +
                   " rows and dw's " + std::to_string(dw.cols) + " columns";
          });
  require_dtype(op, DType::kF32, {dw});
  const DType in = operand_dtype(op, dy, x);
  const int64_t K = x.cols;
  if (r.rows() == 0 || K == 0) return;
  const dim3 grid(static_cast<unsigned>(r.experts * ((block.rows + kTile - 1) / kTile)),
                  static_cast<unsigned>((K + kTile - 1) / kTile));
  if (in == DType::kBF16)
    grouped_weight_grad_kernel<<<grid, kThreads>>>(dw.as<float>(), dy.as<uint16_t>(),
                                                   x.as<uint16_t>(), r.offsets, block.rows, K,
                                                   block.stride, block.first);
  else
    grouped_weight_grad_kernel<<<grid, kThreads>>>(dw.as<float>(), dy.as<float>(), x.as<float>(),
                                                   r.offsets, block.rows, K, block.stride,
                                                   block.first);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
