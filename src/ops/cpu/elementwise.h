// Elementwise CPU kernels: add, bias add and its gradient, dtype casts. Plain loops over
// contiguous memory, split over the one thread pool; the f32 ↔ bf16 casts and the adds also
// have AVX-512 loops (cpu_features.h picks at run time) that give the same bits.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// dst[i] += src[i] (Src = T, or bf16 bits when T = float).
template <typename T, typename Src>
void add(T* dst, const Src* src, int64_t n);
// dst[i] += src[i], and rounded[i] = the sum rounded to bf16 (f32_to_bf16).
void add_rounded(float* dst, const float* src, uint16_t* rounded, int64_t n);
// y (N, O) += b (O) per row.
template <typename T>
void add_bias(T* y, const T* b, int64_t N, int64_t O);
// db (O) += Σ_rows dy (N, O), rows summed in order.
template <typename T>
void bias_backward(T* db, const T* dy, int64_t N, int64_t O);
// One thread's f32 ↔ bf16 row conversions (for kernels that already split rows over the pool):
// dst = f32_to_bf16(src), dst = bf16_to_f32(src), AVX-512 where cpu_features.h allows.
void round_row_to_bf16(uint16_t* dst, const float* src, int64_t n);
void widen_row_from_bf16(float* dst, const uint16_t* src, int64_t n);
// dst = src converted; To/From among float, double and uint16_t (bf16 bits).
template <typename To, typename From>
void cast(To* dst, const From* src, int64_t n);
// The same on (rows, cols) blocks whose rows are ld_dst / ld_src elements apart (a column block
// of a wider matrix on either side), the same bits per element as cast().
template <typename To, typename From>
void cast_rows(To* dst, int64_t ld_dst, const From* src, int64_t ld_src, int64_t rows,
               int64_t cols);

}  // namespace sft::ops::cpu
