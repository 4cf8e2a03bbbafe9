// Token embedding lookup. Signature rule: outputs first, then inputs, weights, sizes;
// parameter grads accumulate (+=). Dimensions: T tokens, C hidden, V vocab.
//
// The vocabulary-shard forms hold the table rows [begin, begin + rows) of a table split over
// the ranks of a group; the CPU view kernel (ops/cpu/view_kernels.cpp) sums the forward over the
// group.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// out (T, C) = wte[ids]; ids (T) must be in [0, V) (checked by the caller).
template <typename T>
void embedding_forward(T* out, const int64_t* ids, const T* wte, int64_t Tn, int64_t C);

// out (T, C) f32 = wte[ids] widened from bf16 (exact: every bf16 value is an f32 value).
void embedding_forward_bf16(float* out, const int64_t* ids, const uint16_t* wte, int64_t Tn,
                            int64_t C);

// dwte (V, C) += scatter of dout (T, C) by ids, in token order (deterministic).
template <typename T>
void embedding_backward(T* dwte, const T* dout, const int64_t* ids, int64_t Tn, int64_t C);

// out (T, C) = wte[ids − begin] for ids in [begin, begin + rows), −0 elsewhere: −0 is the
// identity of floating-point addition (x + −0 = x for every x, +0 and −0 included), so the sum
// over the group is exactly the row of the one rank that holds it, in any summation order.
template <typename T>
void embedding_forward_shard(T* out, const int64_t* ids, const T* wte, int64_t Tn, int64_t C,
                             int64_t begin, int64_t rows);

// embedding_forward_shard from a bf16 table, widened to f32 (−0 for the other ranks' ids).
void embedding_forward_shard_bf16(float* out, const int64_t* ids, const uint16_t* wte, int64_t Tn,
                                  int64_t C, int64_t begin, int64_t rows);

// dwte (rows, C) += scatter of dout by the ids in [begin, begin + rows), into row id − begin,
// in token order; the other ids belong to other ranks.
template <typename T>
void embedding_backward_shard(T* dwte, const T* dout, const int64_t* ids, int64_t Tn, int64_t C,
                              int64_t begin, int64_t rows);

}  // namespace sft::ops::cpu
