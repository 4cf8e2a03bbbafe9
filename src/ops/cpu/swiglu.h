// SwiGLU, the gated activation of the Llama-family MLP: h = silu(gate) · up, with
// silu(x) = x · sigmoid(x). The gate/up/down projections themselves are linear_* calls.
//
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: N elements (tokens × intermediate).
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// h (N) =; gate, up (N).
template <typename T>
void swiglu_forward(T* h, const T* gate, const T* up, int64_t N);

// dgate, dup (N) =; dh (N); gate, up the forward inputs.
template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* dh, const T* gate, const T* up, int64_t N);

}  // namespace sft::ops::cpu
