// Device helpers of the CUDA LM head's row passes (lm_head.cu: whole rows; lm_head_shard.cu:
// a vocabulary shard's slice of each row): where a logit lies in a chunk's block-major layout
// (lm_head_kernels.h) and how the softmax sees it. Shared so both passes read the same logit.
#pragma once

#include <cstdint>

#include "ops/cuda/cuda_device.cuh"
#include "ops/cuda/lm_head_kernels.h"

namespace sft::ops::cuda::lm_head_detail {

__device__ inline int64_t block_len(int64_t V, int64_t VB, int64_t v0) {
  return V - v0 < VB ? V - v0 : VB;
}

// Where logit j of chunk row i lies in the block-major layout (lm_head_kernels.h).
__device__ inline int64_t position(const RowPass& p, int64_t i, int64_t j) {
  const int64_t v0 = j / p.VB * p.VB;
  return v0 * p.mp + i * block_len(p.V, p.VB, v0) + (j - v0);
}

__device__ inline float round_bf16(float v) {
  return bf16_to_f32(f32_to_bf16(v));
}

// A logit as the softmax sees it: the product rounded to bf16 (bf16 path), then capped (and
// rounded again on the bf16 path). Recomputed on every read instead of written back: a pass
// over the row costs its memory traffic, not these few instructions.
__device__ inline float seen(const RowPass& p, float v) {
  if (p.round_logits) v = round_bf16(v);
  if (p.softcap > 0.0f) {
    v = p.softcap * tanhf(v / p.softcap);
    if (p.round_logits) v = round_bf16(v);
  }
  return v;
}

}  // namespace sft::ops::cuda::lm_head_detail
