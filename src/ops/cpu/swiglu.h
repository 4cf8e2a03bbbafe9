// SwiGLU, the gated activation of the Llama-family MLP: h = silu(gate) · up, with
// silu(x) = x · sigmoid(x). The gate/up/down projections themselves are linear_* calls.
//
// Under bf16 compute gate and up are the projections' outputs rounded to bf16 (what torch
// autocast saves); the kernels read them as bf16 bits and compute and write in fp32.
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: N elements (tokens × intermediate).
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// h (N) =; gate, up (N) of type In: T itself, or uint16_t (bf16 bits) with T = float.
template <typename T, typename In = T>
void swiglu_forward(T* h, const In* gate, const In* up, int64_t N);

// dgate, dup (N) =; dh (N); gate, up the forward inputs.
template <typename T, typename In = T>
void swiglu_backward(T* dgate, T* dup, const T* dh, const In* gate, const In* up, int64_t N);

}  // namespace sft::ops::cpu
