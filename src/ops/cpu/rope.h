// Rotary position embeddings, the rotation itself, with transformers' rotate_half convention:
// for i < D/2,  y_i = x_i cos θ_i − x_{i+D/2} sin θ_i,  y_{i+D/2} = x_{i+D/2} cos θ_i + x_i sin
// θ_i. The angle tables (which depend on the model's rope type) come from model/rope.h.
//
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: T tokens, NH heads of this tensor (H or Hkv), D head dim.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// In place on x (T, NH, D) with cos, sin (T, D/2): forward rotates by +θ, backward (on the
// gradient) by −θ. Token t's heads start at x + t · ld (ld = NH · D when dense).
template <typename T>
void rope_forward(T* x, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld);
template <typename T>
void rope_backward(T* dx, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D,
                   int64_t ld);

}  // namespace sft::ops::cpu
