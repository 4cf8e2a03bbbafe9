// Register-blocked AVX-512 fp32 products for the tiled attention's tiles
// (flash_attention_forward.cpp, flash_attention_backward.cpp), in place of a small library GEMM
// per tile: the tiles are too small (one to a few million multiply-adds) for a library's
// packing and dispatch to pay off, and each of the attention's products fits one shape once its
// operands are laid out as below.
//
// One product covers all six tile products: C (M, N) =, or +=, A (M, K) · B (K, N), with B
// row-major (its rows contiguous along N: V, K, Q or dO rows as stored, or a key tile transposed
// by transpose()) and A either as stored (kRows: P, dS, Q, dO rows) or as the transpose of what
// is stored (kColumns: Pᵀ, dSᵀ). C is held in zmm registers, 6 rows × 64 columns at a time,
// while K streams through: per step of K, 4 vector loads of B and 6 broadcasts of A feed 24
// fused multiply-adds.
//
// Causal tiles: a tile on the diagonal has (query, key) pairs no query sees, whose P and dS are
// 0. A product told where the diagonal runs (Skip) leaves out, per register block of 6 rows,
// the columns or the steps of K that only such pairs reach: on ~300-token documents in 128 × 64
// tiles that is about a third of the work. Skipped terms are 0 · b, so C's values are those of
// the whole product (up to the sign of a zero).
//
// Numerics: each C element is one chain of fused multiply-adds in ascending k from 0, to which
// C's old value (times its row's scale, in one fused multiply-add) is added once at the end with
// accumulate, so a sum carried across calls (a tile's key or query tiles) rounds per call and
// per term of one call, as a library GEMM's blocked K does. The order is fixed by the element
// and the call's K alone (not by the blocking, the call's M or N, or the thread that runs it),
// so results are bit-identical for any thread count. It is not the order of a library GEMM: the
// two paths differ by rounding only.
//
// Callers check cpu::use_avx512() first (cpu_features.h): the functions are compiled for
// AVX-512 with function-level target attributes and fault on a CPU without it.
#pragma once

#include <cstdint>

namespace sft::ops::cpu::attention_microkernel {

// Where A's element (m, k) is stored: kRows at a[m·lda + k], kColumns at a[k·lda + m].
enum class ALayout { kRows, kColumns };

// Which terms the causal diagonal zeroes, with d = Product::diagonal, the number of keys the
// tile's first query sees (may be ≤ 0 or past the tile's keys):
//   kColumnsPastDiagonal  rows are queries, columns keys: row m needs columns n < m + d, and
//                         the others of C are left unwritten (S = Q Kᵀ, dP = dO Vᵀ)
//   kDepthPastDiagonal    rows are queries, K runs over keys: k ≥ m + d have A = 0 (P V, dS K)
//   kDepthBeforeDiagonal  rows are keys, K runs over queries: k < m − d + 1 have A = 0
//                         (Pᵀ dO, dSᵀ Q)
enum class Skip { kNothing, kColumnsPastDiagonal, kDepthPastDiagonal, kDepthBeforeDiagonal };

// C (M, N) = (or += with accumulate) A (M, K) · B (K, N); B's element (k, n) at b[k·ldb + n],
// C's (m, n) at c[m·ldc + n]. Any M, N, K ≥ 0, any strides, no alignment; reads no element of
// A, B or C outside the (M, K), (K, N), (M, N) blocks.
struct Product {
  float* c = nullptr;
  int64_t ldc = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  ALayout a_layout = ALayout::kRows;
  const float* b = nullptr;
  int64_t ldb = 0;
  int64_t M = 0, N = 0, K = 0;
  bool accumulate = false;
  // With accumulate: C's row m is multiplied by c_row_scale[m] as it joins the sum (the online
  // softmax's rescale of its accumulator, fused into the one pass over C).
  const float* c_row_scale = nullptr;
  Skip skip = Skip::kNothing;
  int64_t diagonal = 0;
};
void gemm(const Product& p);

// dst (cols, rows) = srcᵀ for src (rows, cols): dst[x·ld_dst + r] = src[r·ld_src + x]. Turns a
// key tile (keys × D) into the B operand (D × keys) of the score product S = Q Kᵀ.
void transpose(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
               int64_t cols);

}  // namespace sft::ops::cpu::attention_microkernel
