// The host side of the CUDA LM head's row pass on a vocabulary shard (lm_head_kernels.h): the
// kernels of lm_head_shard.cu with the group's two collectives between them, and the chunk's
// statistics from the combined sums, as the CPU's chunk_stats_shard adds them (row order).
// ShardGroup combines host memory (it runs over MPI), so the m maxima and the m · kShardSums
// sums are copied down and back up around each collective: a few KiB per chunk.
#include <cmath>
#include <span>
#include <vector>

#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/lm_head_kernels.h"

namespace sft::ops::cuda::lm_head_detail {

void shard_row_pass(LmHeadStats& total, const ShardPass& p, ShardGroup& group) {
  const int64_t m = p.row.m;
  launch_shard_max(p);
  std::vector<float> mx(static_cast<size_t>(m));
  copy_to_host(mx.data(), p.max, mx.size() * sizeof(float));
  group.max(std::span<float>(mx));
  copy_to_device(p.max, mx.data(), mx.size() * sizeof(float));

  launch_shard_sums(p);
  std::vector<double> sums(static_cast<size_t>(m * kShardSums));
  copy_to_host(sums.data(), p.sums, sums.size() * sizeof(double));
  group.sum(std::span<double>(sums));
  copy_to_device(p.sums, sums.data(), sums.size() * sizeof(double));

  if (p.row.grad) launch_shard_grad(p);
  for (int64_t i = 0; i < m; ++i) {
    const double* s = &sums[static_cast<size_t>(i * kShardSums)];
    const double lse = std::log(s[kSum]);  // relative to the max
    total.loss_sum += lse - s[kTargetGap];
    total.entropy_sum += lse - s[kSumPz] / s[kSum];
    total.correct += s[kTargetIsMax] > 0.5 && s[kMaxBeforeTarget] < 0.5 ? 1 : 0;
    total.count += 1;
  }
}

}  // namespace sft::ops::cuda::lm_head_detail
