// The gated GELU of Gemma's MLP: h = gelu_tanh(gate) · up, with PyTorch's tanh approximation
// gelu_tanh(x) = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))) (transformers'
// gelu_pytorch_tanh). The gate/up/down projections themselves are linear_* calls; the shapes,
// dtypes and bf16 forms are swiglu.h's.
// Signature rule: outputs first, then inputs, then sizes; activation grads overwrite (=).
// Dimensions: N elements (tokens × intermediate).
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// h (N) =; gate, up (N) of type In: T itself, or uint16_t (bf16 bits) with T = float.
template <typename T, typename In = T>
void gelu_tanh_gated_forward(T* h, const In* gate, const In* up, int64_t N);

// dgate, dup (N) =; dh (N); gate, up the forward inputs.
template <typename T, typename In = T>
void gelu_tanh_gated_backward(T* dgate, T* dup, const T* dh, const In* gate, const In* up,
                              int64_t N);

// h (N) bf16 =; gate, up bf16.
void gelu_tanh_gated_forward_bf16(uint16_t* h, const uint16_t* gate, const uint16_t* up, int64_t N);
// dgate, dup (N) bf16 =; dh (N) f32; gate, up bf16.
void gelu_tanh_gated_backward_bf16(uint16_t* dgate, uint16_t* dup, const float* dh,
                                   const uint16_t* gate, const uint16_t* up, int64_t N);

}  // namespace sft::ops::cpu
