// The CUDA LM head's kernels (lm_head_kernels.h has the contract, lm_head.cpp the driver): the
// row pass of a chunk, one block of kReduceThreads threads per row, and the gather/scatter of
// the chunk's rows of x and dx.
//
// The row pass reads the row three times (max, sums, dlogits) and exponentiates twice (the
// sums, then the dlogits) instead of holding exp(z − max): the row is 594 KiB at V = 151936, far
// past what a block can keep, and recomputing an exp costs less than a third write of the row.
// Every thread walks its own elements (j ≡ threadIdx.x mod kReduceThreads, vocabulary block by
// block) in the same order in each pass, so the in-place dlogits overwrite only what the same
// thread has read, and only in the last pass (the target logit is read before the barriers of
// pass 2). The bf16 rounding and the softcap are applied on each read, never written back. The
// reductions are fixed trees (block_sum; block_max_first below): the same bits on every run. expf
// and tanhf, not the fast intrinsics; sums in double, as the CPU's row.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_views.h"
#include "ops/cuda/lm_head_kernels.h"
#include "ops/cuda/lm_head_row.cuh"

namespace sft::ops::cuda::lm_head_detail {

namespace {

constexpr int kThreads = 256;  // gather and scatter

// The block's largest value and its smallest index among equal maxima (the first maximum,
// as the CPU counts a row correct): a fixed tree over kReduceThreads threads, returned to all.
// Every thread must call it (it synchronizes).
__device__ void block_max_first(float* value, int64_t* index) {
  __shared__ float best[kReduceThreads];
  __shared__ int64_t at[kReduceThreads];
  const int tid = static_cast<int>(threadIdx.x);
  best[tid] = *value;
  at[tid] = *index;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (tid < half) {
      const float v = best[tid + half];
      const int64_t j = at[tid + half];
      if (v > best[tid] || (v == best[tid] && j < at[tid])) {
        best[tid] = v;
        at[tid] = j;
      }
    }
    __syncthreads();
  }
  *value = best[0];
  *index = at[0];
  __syncthreads();  // the arrays may be reused by the next call
}

__global__ void row_pass_kernel(RowPass p) {
  const int64_t i = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  if (i >= p.m) {  // a padding row of the chunk: no gradient (the whole block returns)
    if (p.grad)
      for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
        const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
        for (int64_t j = tid; j < nb; j += kReduceThreads) {
          if (p.dz16)
            p.dz16[base + j] = 0;
          else
            p.z[base + j] = 0.0f;
        }
      }
    return;
  }
  const int64_t row = p.rows[i], y = p.targets[row];
  float* logits = p.logits ? p.logits + row * p.V : nullptr;
  // Pass 1: this thread's first maximum of the logits as seen; the returned logits.
  float mx = -__uint_as_float(0x7f800000u);
  int64_t arg = p.V;  // none yet (all NaN): the reduction keeps V, below
  for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
    const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
    for (int64_t j = tid; j < nb; j += kReduceThreads) {
      const float v = seen(p, p.z[base + j]);
      if (logits) logits[v0 + j] = v;
      if (v > mx || (v == mx && arg == p.V)) {  // ascending j: strict keeps the first
        mx = v;
        arg = v0 + j;
      }
    }
  }
  if (y < 0) {  // unscored (logits wanted): no statistics, no gradient
    if (p.grad && !p.dz16)
      for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
        const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
        for (int64_t j = tid; j < nb; j += kReduceThreads) p.z[base + j] = 0.0f;
      }
    if (p.grad && p.dz16)
      for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
        const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
        for (int64_t j = tid; j < nb; j += kReduceThreads) p.dz16[base + j] = 0;
      }
    return;
  }
  block_max_first(&mx, &arg);
  if (arg == p.V) {  // every logit NaN: the CPU's scan answers index 0
    arg = 0;
    mx = seen(p, p.z[position(p, i, 0)]);
  }
  const float zt = seen(p, p.z[position(p, i, y)]);
  // Pass 2: Σ exp(z − max) and Σ exp(z − max)·(z − max) in double.
  double sum = 0, sum_pz = 0;
  for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
    const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
    for (int64_t j = tid; j < nb; j += kReduceThreads) {
      const float d = seen(p, p.z[base + j]) - mx;
      const float e = expf(d);
      sum += static_cast<double>(e);
      sum_pz += static_cast<double>(e * d);
    }
  }
  sum = block_sum(sum);
  sum_pz = block_sum(sum_pz);
  if (tid == 0) {
    const double lse = log(sum);  // relative to the max
    p.loss[i] = lse - static_cast<double>(zt - mx);
    p.entropy[i] = lse - sum_pz / sum;
    p.correct[i] = arg == y ? 1 : 0;
  }
  if (!p.grad) return;
  // Pass 3: dZ = scale · (softmax − onehot), as the CPU's row: e · (1/sum · scale), minus scale
  // at the target; then back through the cap (through_cap: the CPU's fp32 or bf16 gradient).
  const float k = static_cast<float>(1.0 / sum) * p.scale;
  for (int64_t v0 = 0; v0 < p.V; v0 += p.VB) {
    const int64_t nb = block_len(p.V, p.VB, v0), base = v0 * p.mp + i * nb;
    for (int64_t j = tid; j < nb; j += kReduceThreads) {
      const Seen v = seen_capped(p, p.z[base + j]);
      float g = expf(v.v - mx) * k;
      if (v0 + j == y) g -= p.scale;
      g = through_cap(p, g, v.th);
      if (p.dz16)
        p.dz16[base + j] = f32_to_bf16(g);
      else
        p.z[base + j] = g;
    }
  }
}

template <typename T>
__global__ void gather_kernel(T* xs, const T* x, const int64_t* rows, int64_t m, int64_t n,
                              int64_t C) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const int64_t i = e / C, j = e % C;
  xs[e] = i < m ? x[rows[i] * C + j] : T(0);
}

__global__ void scatter_kernel(float* dx, const float* dxs, const int64_t* rows, int64_t n,
                               int64_t C) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= n) return;
  const int64_t i = e / C, j = e % C;
  dx[rows[i] * C + j] = dxs[e];
}

template <typename T>
void gather(T* xs, const T* x, const int64_t* rows, int64_t m, int64_t mp, int64_t C) {
  const int64_t n = mp * C;
  if (n == 0) return;
  gather_kernel<T><<<blocks_for(n, kThreads), kThreads>>>(xs, x, rows, m, n, C);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_row_pass(const RowPass& p) {
  if (p.mp == 0 || p.V == 0) return;
  row_pass_kernel<<<static_cast<unsigned>(p.mp), kReduceThreads>>>(p);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void launch_gather(float* xs, const float* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C) {
  gather(xs, x, rows, m, mp, C);
}
void launch_gather(uint16_t* xs, const uint16_t* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C) {
  gather(xs, x, rows, m, mp, C);
}

void launch_scatter(float* dx, const float* dxs, const int64_t* rows, int64_t m, int64_t C) {
  const int64_t n = m * C;
  if (n == 0) return;
  scatter_kernel<<<blocks_for(n, kThreads), kThreads>>>(dx, dxs, rows, n, C);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda::lm_head_detail
