// RMSNorm as transformers computes it: y = w · x / sqrt(mean(x²) + eps), in fp32 (or fp64 for
// the finite-difference checks). Used for the layer norms, the final norm and Qwen3's per-head
// q/k norms (rows = T·H, C = D).
//
// Signature rule (all layer files): outputs first, then saved activations, inputs, weights,
// then sizes. Parameter grads accumulate (+=); activation grads overwrite (=).
// Dimensions: N rows, C features.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// out (N, C), rstd (N) saved for backward; x (N, C); w (C).
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* w, int64_t N, int64_t C, double eps);

// The f32 forward with out written as bf16 bits: each value the f32 forward would store,
// rounded by f32_to_bf16 in the same pass (bit-identical to the f32 forward followed by a cast).
void rmsnorm_forward_bf16(uint16_t* out, float* rstd, const float* x, const float* w, int64_t N,
                          int64_t C, double eps);

// The residual add before a norm, fused with it: sum (N, C) = a + b, then out and rstd as
// rmsnorm_forward (Out = T) or rmsnorm_forward_bf16 (Out = uint16_t) compute them from sum, the
// same bits as the separate calls; each block of rows is normed while it is still in cache.
template <typename T, typename Out>
void add_rmsnorm_forward(T* sum, Out* out, T* rstd, const T* a, const T* b, const T* w, int64_t N,
                         int64_t C, double eps);

// dx (N, C) =; dw (C) +=, or null (a frozen weight: not computed); dout (N, C); x, rstd as saved
// by forward.
template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dout, const T* x, const T* rstd, const T* w, int64_t N,
                      int64_t C);

}  // namespace sft::ops::cpu
