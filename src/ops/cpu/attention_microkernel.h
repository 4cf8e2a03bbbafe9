// Register-blocked AVX-512 fp32 products for the tiled attention's tiles
// (flash_attention_forward.cpp, flash_attention_backward.cpp), in place of a small library GEMM
// per tile: the tiles are too small (tens to a few hundred thousand multiply-adds) for a
// library's packing and dispatch to pay off, and each of the attention's products fits one
// shape once its operands are laid out as below.
//
// One product covers all six tile products: C (M, N) =, or +=, A (M, K) · B (K, N), with B
// row-major (its rows contiguous along N: V, K, Q or dO rows as stored, or a key tile transposed
// by transpose()) and A either as stored (kRows: P, dS, Q, dO rows) or as the transpose of what
// is stored (kColumns: Pᵀ, dSᵀ). C is held in zmm registers, 6 rows × 64 columns at a time,
// while K streams through: per step of K, 4 vector loads of B and 6 broadcasts of A feed 24
// fused multiply-adds.
//
// Numerics: each C element is one chain of fused multiply-adds in ascending k, starting from 0,
// or from C's value with accumulate. The order is fixed by the element alone (not by the
// blocking, the call's M or N, or the thread that runs it), so results are bit-identical for any
// thread count. It is not the order of a library GEMM: the two paths differ by rounding only.
//
// Callers check cpu::use_avx512() first (cpu_features.h): the functions are compiled for
// AVX-512 with function-level target attributes and fault on a CPU without it.
#pragma once

#include <cstdint>

namespace sft::ops::cpu::attention_microkernel {

// Where A's element (m, k) is stored: kRows at a[m·lda + k], kColumns at a[k·lda + m].
enum class ALayout { kRows, kColumns };

// C (M, N) = (or += with accumulate) A (M, K) · B (K, N); B's element (k, n) at b[k·ldb + n],
// C's (m, n) at c[m·ldc + n]. Any M, N, K ≥ 0, any strides, no alignment; reads no element of
// A, B or C outside the (M, K), (K, N), (M, N) blocks.
void gemm(float* c, int64_t ldc, const float* a, int64_t lda, ALayout a_layout, const float* b,
          int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate);

// dst (cols, rows) = srcᵀ for src (rows, cols): dst[x·ld_dst + r] = src[r·ld_src + x]. Turns a
// key tile (keys × D) into the B operand (D × keys) of the score product S = Q Kᵀ.
void transpose(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
               int64_t cols);

}  // namespace sft::ops::cpu::attention_microkernel
