// Token embedding lookup. Signature rule: outputs first, then inputs, weights, sizes;
// parameter grads accumulate (+=). Dimensions: T tokens, C hidden, V vocab.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// out (T, C) = wte[ids]; ids (T) must be in [0, V) (checked by the caller).
template <typename T>
void embedding_forward(T* out, const int64_t* ids, const T* wte, int64_t Tn, int64_t C);

// dwte (V, C) += scatter of dout (T, C) by ids, in token order (deterministic).
template <typename T>
void embedding_backward(T* dwte, const T* dout, const int64_t* ids, int64_t Tn, int64_t C);

}  // namespace sft::ops::cpu
