// SwiGLU, the gated activation of the Llama-family MLP: h = silu(gate) · up, with
// silu(x) = x · sigmoid(x). The gate/up/down projections themselves are linear_* calls.
//
// Under bf16 compute gate and up are the projections' outputs rounded to bf16 (what torch
// autocast saves); the kernels read them as bf16 bits and compute in fp32, writing fp32 or
// (the _bf16 forms) the fp32 values rounded to bf16 in the same pass, bit-identical to an f32
// output followed by a cast.
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

// h (N) bf16 =; gate, up bf16.
void swiglu_forward_bf16(uint16_t* h, const uint16_t* gate, const uint16_t* up, int64_t N);
// dgate, dup (N) bf16 =; dh (N) f32; gate, up bf16.
void swiglu_backward_bf16(uint16_t* dgate, uint16_t* dup, const float* dh, const uint16_t* gate,
                          const uint16_t* up, int64_t N);

}  // namespace sft::ops::cpu
