// Rotary position embeddings, the rotation itself, with transformers' rotate_half convention:
// for i < D/2,  y_i = x_i cos θ_i − x_{i+D/2} sin θ_i,  y_{i+D/2} = x_{i+D/2} cos θ_i + x_i sin
// θ_i. The angle tables (which depend on the model's rope type) come from model/rope.h.
// Partial rotary embedding (Phi-3/4's partial_rotary_factor): only a head's first R dims
// rotate, with R/2 angles, as pairs (x_i, x_{i+R/2}); dims R..D pass through.
//
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: T tokens, NH heads of this tensor (H or Hkv), D head dim.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// In place on x (T, NH, D) with cos, sin (T, R/2), R = rotary dims (0: R = D): forward rotates
// by +θ, backward (on the gradient) by −θ. Token t's heads start at x + t · ld (ld = NH · D
// when dense).
template <typename T>
void rope_forward(T* x, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld,
                  int64_t R = 0);
template <typename T>
void rope_backward(T* dx, const T* cos, const T* sin, int64_t Tn, int64_t NH, int64_t D, int64_t ld,
                   int64_t R = 0);

}  // namespace sft::ops::cpu
