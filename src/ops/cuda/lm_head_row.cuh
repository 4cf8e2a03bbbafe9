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

// A logit as the softmax sees it, and the tanh of its soft-cap (0 without one). f32:
// cap · tanh(z / cap), the CPU's fp32 cap. bf16: the product rounded (autocast's bf16 logits),
// then the cap as transformers runs it on them, three bf16 tensor ops each rounded:
// r(r(tanh(r(z / cap))) · cap), the CPU's soft_cap_row (ops/cpu/lm_head_ce_bf16.cpp).
// Recomputed on every read instead of written back: a pass over the row costs its memory
// traffic, not these few instructions.
struct Seen {
  float v, th;
};

__device__ inline Seen seen_capped(const RowPass& p, float v) {
  if (p.round_logits) v = round_bf16(v);
  if (p.softcap <= 0.0f) return {v, 0.0f};
  if (!p.round_logits) {
    const float th = tanhf(v / p.softcap);
    return {p.softcap * th, th};
  }
  const float th = round_bf16(tanhf(round_bf16(v / p.softcap)));
  return {round_bf16(th * p.softcap), th};
}

__device__ inline float seen(const RowPass& p, float v) {
  return seen_capped(p, v).v;
}

// The gradient of the uncapped logit from g, the softmax's (fp32) gradient of the seen one, and
// the seen logit's tanh: g · (1 − tanh²) in f32; in bf16 the CPU's soft_cap_backward_row, the
// fp32 → bf16 cast of the loss's upcast, then the gradients of · cap, tanh and / cap, each
// rounded (the last rounding is the bf16 dlogits' store).
__device__ inline float through_cap(const RowPass& p, float g, float th) {
  if (p.softcap <= 0.0f) return g;
  if (!p.round_logits) return g * (1.0f - th * th);
  g = round_bf16(g);
  g = round_bf16(g * p.softcap);
  g = round_bf16(g * (1.0f - th * th));
  return g / p.softcap;
}

}  // namespace sft::ops::cuda::lm_head_detail
