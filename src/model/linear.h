// The one projection choke point: every q/k/v/o/gate/up/down projection and the LM head go
// through linear_forward / linear_backward, so LoRA (and its merge) will live in one place.
//
// y = x Wᵀ + b, with W stored as transformers stores nn.Linear weights: (O, I).
// Signature rule: outputs first, then inputs, weights, then sizes. Parameter grads
// accumulate (+=). dx overwrites (=) unless accumulate_dx is set, which lets q, k and v
// projections of one input sum their input gradients without a temporary.
// Dimensions: N rows, I in features, O out features.
#pragma once

#include <cstdint>

namespace sft::model {

// y (N, O) =; x (N, I); w (O, I); b (O) or null.
template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, int64_t N, int64_t I, int64_t O);

// dx (N, I) = or +=; dw (O, I) +=; db (O) += (may be null); dy (N, O); x; w.
template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t N, int64_t I,
                     int64_t O, bool accumulate_dx = false);

}  // namespace sft::model
