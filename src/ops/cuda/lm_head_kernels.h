// Internal to the CUDA LM head (lm_head.cpp drives, lm_head.cu holds the kernels): the launches
// of one row chunk's gather, row pass and scatter. Plain C++, so the host driver needs no nvcc.
//
// Layout of a chunk's logits Z (mp × V, f32): vocabulary-block-major, block b (the vocabulary
// rows [v0, v0 + nb), v0 = b·VB) at Z + v0·mp as a dense (mp × nb) matrix, so that every
// product of a block (Z_b = X Wᵀ_b, dX += dZ_b W_b, dW_b += dZ_bᵀ X) is a dense cuBLASLt call.
// The bf16 dlogits (when there are) have the same layout in their own buffer.
#pragma once

#include <cstdint>

#include "core/shard_group.h"
#include "ops/lm_head_ce.h"

namespace sft::ops::cuda::lm_head_detail {

// The row pass of one chunk (one block per chunk row, mp of them; rows past m only zero their
// dlogits). Per scored row: optional bf16 rounding of the logits (autocast's bf16 lm_head
// output), the softcap, the first maximum, the exp sums in double, the row's loss, entropy and
// correct flag (written at loss[i], entropy[i], correct[i]); with grad, dZ = scale · (softmax −
// onehot) · (1 − tanh²) into dz16 (bf16) or in place in z. A row with target −1 (present only
// when logits are wanted) gets its logits and zero dlogits. logits (T × V) gets the chunk rows'
// logits after the softcap when non-null.
struct RowPass {
  float* z = nullptr;
  uint16_t* dz16 = nullptr;
  float* logits = nullptr;
  const int64_t* rows = nullptr;     // (m) the chunk's rows of x, device
  const int64_t* targets = nullptr;  // (T) device
  double *loss = nullptr, *entropy = nullptr;
  int* correct = nullptr;
  int64_t m = 0, mp = 0, V = 0, VB = 0;
  float scale = 1, softcap = 0;
  bool round_logits = false, grad = false;
};
void launch_row_pass(const RowPass& p);

// The row pass of a vocabulary shard (ops/lm_head_ce.h): `row` describes this rank's slice of
// the chunk's rows (row.V = its vocabulary rows, ids [begin, begin + row.V), the first `real`
// of them in the vocabulary, the rest padding), targets are whole-vocabulary ids and every
// chunk row is scored. Three launches, the group combining per-row numbers on the host in
// between (lm_head_shard.cpp), the CPU's chunk_stats_shard step for step:
//   shard_max  : local_max[i] = max[i] = the slice's largest logit as seen (NaNs passed over,
//                −inf if none); the group then turns max into the group's maximum;
//   shard_sums : sums[i · kShardSums + k] = Σ exp(z − M), Σ exp(z − M)·(z − M), z[y] − M
//                (owner of the target, else 0), target is a maximum (owner), a maximum at an id
//                below the target (slices whose own max is M); then summed over the group;
//   shard_grad : dZ = scale · (softmax − onehot) (· (1 − tanh²)) of the slice, padding 0.
enum ShardSum { kSum, kSumPz, kTargetGap, kTargetIsMax, kMaxBeforeTarget, kShardSums };
struct ShardPass {
  RowPass row;
  int64_t begin = 0, real = 0;
  float* max = nullptr;        // (m) device
  float* local_max = nullptr;  // (m) device
  double* sums = nullptr;      // (m · kShardSums) device
};
void launch_shard_max(const ShardPass& p);
void launch_shard_sums(const ShardPass& p);
void launch_shard_grad(const ShardPass& p);
// The three launches with the group's collectives between them (one max of the m row maxima,
// one sum of m · kShardSums doubles, through the host), the chunk's statistics added to total
// in row order; shard_grad only when p.row.grad. Every rank makes the same calls.
void shard_row_pass(LmHeadStats& total, const ShardPass& p, ShardGroup& group);

// xs (mp × C) = the rows of x named by rows[0, m), then zero rows; float or bf16 bits.
void launch_gather(float* xs, const float* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C);
void launch_gather(uint16_t* xs, const uint16_t* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C);
// dx[rows[i]] = dxs[i] for i < m (rows are distinct).
void launch_scatter(float* dx, const float* dxs, const int64_t* rows, int64_t m, int64_t C);

}  // namespace sft::ops::cuda::lm_head_detail
