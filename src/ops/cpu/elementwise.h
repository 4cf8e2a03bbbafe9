// Elementwise CPU kernels: add, bias add and its gradient, dtype casts. Written as plain loops
// over contiguous memory that the compiler vectorises; split over the one thread pool.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// dst[i] += src[i] (Src = T, or bf16 bits when T = float).
template <typename T, typename Src>
void add(T* dst, const Src* src, int64_t n);
// y (N, O) += b (O) per row.
template <typename T>
void add_bias(T* y, const T* b, int64_t N, int64_t O);
// db (O) += Σ_rows dy (N, O), rows summed in order.
template <typename T>
void bias_backward(T* db, const T* dy, int64_t N, int64_t O);
// dst = src converted; To/From among float, double and uint16_t (bf16 bits).
template <typename To, typename From>
void cast(To* dst, const From* src, int64_t n);

}  // namespace sft::ops::cpu
