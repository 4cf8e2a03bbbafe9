// The CUDA LM head's row pass on a vocabulary shard (lm_head_kernels.h has the contract): one
// block of kReduceThreads threads per chunk row, each thread over its own elements in
// ascending order (as lm_head.cu's row pass), reductions by fixed trees (block_sum and
// block_max below), so a rerun gives the same bits. The exponentials are the whole row's
// expressions (expf of the seen logit minus the maximum); only the sums' order differs, as on
// the CPU.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/cuda_views.h"
#include "ops/cuda/lm_head_kernels.h"
#include "ops/cuda/lm_head_row.cuh"

namespace sft::ops::cuda::lm_head_detail {

namespace {

// The largest of every thread's value (never NaN here), a fixed tree, returned to all.
__device__ float block_max(float value) {
  __shared__ float best[kReduceThreads];
  const int tid = static_cast<int>(threadIdx.x);
  best[tid] = value;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (tid < half && best[tid + half] > best[tid]) best[tid] = best[tid + half];
    __syncthreads();
  }
  const float total = best[0];
  __syncthreads();  // the array may be reused by the next call
  return total;
}

__global__ void shard_max_kernel(ShardPass p) {
  const int64_t i = blockIdx.x;
  const RowPass& r = p.row;
  float mx = -__uint_as_float(0x7f800000u);
  for (int64_t v0 = 0; v0 < p.real; v0 += r.VB) {
    const int64_t nb = block_len(r.V, r.VB, v0), base = v0 * r.mp + i * nb;
    const int64_t live = p.real - v0 < nb ? p.real - v0 : nb;
    for (int64_t j = threadIdx.x; j < live; j += kReduceThreads) {
      const float v = seen(r, r.z[base + j]);
      mx = v > mx ? v : mx;  // a NaN never wins
    }
  }
  mx = block_max(mx);
  if (threadIdx.x == 0) p.local_max[i] = p.max[i] = mx;
}

__global__ void shard_sums_kernel(ShardPass p) {
  const int64_t i = blockIdx.x;
  const RowPass& r = p.row;
  const float M = p.max[i];
  const int64_t y = r.targets[r.rows[i]] - p.begin;  // the target in this slice
  const bool owner = y >= 0 && y < p.real;
  // Only a slice whose own max is the group's can hold a maximum below the target.
  const int64_t before = p.local_max[i] == M ? (y < 0 ? 0 : y < p.real ? y : p.real) : 0;
  double sum = 0, sum_pz = 0, found = 0;
  for (int64_t v0 = 0; v0 < p.real; v0 += r.VB) {
    const int64_t nb = block_len(r.V, r.VB, v0), base = v0 * r.mp + i * nb;
    const int64_t live = p.real - v0 < nb ? p.real - v0 : nb;
    for (int64_t j = threadIdx.x; j < live; j += kReduceThreads) {
      const float v = seen(r, r.z[base + j]);
      const float d = v - M;
      const float e = expf(d);
      sum += static_cast<double>(e);
      sum_pz += static_cast<double>(e * d);
      if (v0 + j < before && v == M) found = 1;
    }
  }
  sum = block_sum(sum);
  sum_pz = block_sum(sum_pz);
  found = block_sum(found);
  if (threadIdx.x == 0) {
    double* s = p.sums + i * kShardSums;
    const float zt = owner ? seen(r, r.z[position(r, i, y)]) : 0.0f;
    s[kSum] = sum;
    s[kSumPz] = sum_pz;
    s[kTargetGap] = owner ? static_cast<double>(zt - M) : 0.0;
    s[kTargetIsMax] = owner && zt == M ? 1.0 : 0.0;
    s[kMaxBeforeTarget] = found > 0 ? 1.0 : 0.0;
  }
}

__global__ void shard_grad_kernel(ShardPass p) {
  const int64_t i = blockIdx.x;
  const RowPass& r = p.row;
  const bool live_row = i < r.m;
  const float M = live_row ? p.max[i] : 0.0f;
  const int64_t y = live_row ? r.targets[r.rows[i]] - p.begin : -1;
  const float k =
      live_row ? static_cast<float>(1.0 / p.sums[i * kShardSums + kSum]) * r.scale : 0.0f;
  for (int64_t v0 = 0; v0 < r.V; v0 += r.VB) {
    const int64_t nb = block_len(r.V, r.VB, v0), base = v0 * r.mp + i * nb;
    for (int64_t j = threadIdx.x; j < nb; j += kReduceThreads) {
      float g = 0.0f;  // padding rows of the chunk and padding ids of the vocabulary
      if (live_row && v0 + j < p.real) {
        const Seen v = seen_capped(r, r.z[base + j]);
        g = expf(v.v - M) * k;
        if (v0 + j == y) g -= r.scale;
        g = through_cap(r, g, v.th);
      }
      if (r.dz16)
        r.dz16[base + j] = f32_to_bf16(g);
      else
        r.z[base + j] = g;
    }
  }
}

}  // namespace

void launch_shard_max(const ShardPass& p) {
  if (p.row.m == 0) return;
  shard_max_kernel<<<static_cast<unsigned>(p.row.m), kReduceThreads>>>(p);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void launch_shard_sums(const ShardPass& p) {
  if (p.row.m == 0) return;
  shard_sums_kernel<<<static_cast<unsigned>(p.row.m), kReduceThreads>>>(p);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void launch_shard_grad(const ShardPass& p) {
  if (p.row.mp == 0 || p.row.V == 0) return;
  shard_grad_kernel<<<static_cast<unsigned>(p.row.mp), kReduceThreads>>>(p);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda::lm_head_detail
