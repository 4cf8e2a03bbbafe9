// The two ways the tiled fp32/fp64 attention (flash_attention_forward/backward.cpp) multiplies
// its tiles.
//
// The item bodies are templates over how they multiply tiles, compiled once per way: BlasProducts
// (ops::matmul on the caller's thread: the baseline, double's only way, and float's under
// SFT_CPU_ISA=generic or without AVX-512) and Avx512Products (the register-blocked microkernels
// of attention_microkernel.h, in a body compiled for AVX-512, so the softmax rows around them
// vectorise 16 wide too). Both give each output element one fixed summation order, so either is
// bit-stable per thread count; they differ from each other by rounding only.
//
// Operands are Rows: a matrix by its first element and its row stride. `diagonal` is where the
// causal mask crosses the tile: the number of the tile's keys its first query sees (pos0 + 1 − j0,
// any sign); Avx512Products skips the blocks of terms beyond it (their P and dS are 0),
// BlasProducts multiplies whole tiles.
//   kLanes                       the row loops' for_lanes width (16 where AVX-512 runs them)
//   keys(pack, k, nk, D)         the operand Kᵀ of a score product for a key tile of nk rows of
//                                D: Avx512Products transposes it into pack (D rows of
//                                tile_ld), BlasProducts reads k in place
//   rows(pack, x, n, D)          the operand B of the products below for n rows of D (V, K,
//                                Q or dO): Avx512Products copies them into pack (n rows of
//                                row_ld(D), away from the power-of-two strides of the heads
//                                that map every row to the same L1 sets), BlasProducts reads x
//   scores(s, a, kt, M, N, D, diagonal)   S (M, N) = A (M, D) · Kᵀ; S's columns past the
//                                         diagonal may be left unwritten
//   assign(c, a, b, M, N, K, diagonal)   C (M, N) = A (M, K) · B (K, N); A's rows are queries
//   add(c, a, b, M, N, K, diagonal, c_row_scale)   C (M, N) = diag(c_row_scale) C + A (M, K) ·
//                                  B (K, N) (no scale when null); A's rows are queries
//   product_at(c, a, b, M, N, K, diagonal, accumulate)   C (M, N) = (or += with accumulate)
//                                  Aᵀ · B, A stored as (K, M) with rows of queries (C's rows
//                                  are keys)
#pragma once

#include <cstdint>

#include "ops/attention.h"
#include "ops/cpu/attention_microkernel.h"
#include "ops/cpu/flash_attention_tiles.h"
#include "ops/ops.h"

namespace sft::ops::flash {

template <typename T>
struct Rows {
  T* p;
  int64_t ld;
};

// Row stride of a packed row operand: D rounded up to 16.
inline int64_t row_ld(int64_t D) {
  return (D + 15) / 16 * 16;
}

template <typename T>
struct BlasProducts {
  static constexpr int64_t kLanes = 1;
  Rows<const T> keys(T*, Rows<const T> k, int64_t, int64_t) const { return k; }
  Rows<const T> rows(T*, Rows<const T> x, int64_t, int64_t) const { return x; }
  void scores(Rows<T> s, Rows<const T> a, Rows<const T> kt, int64_t M, int64_t N, int64_t D,
              int64_t) const {
    matmul(s.p, a.p, kt.p, M, N, D, false, true, false, a.ld, kt.ld, s.ld, false);
  }
  void assign(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K,
              int64_t) const {
    matmul(c.p, a.p, b.p, M, N, K, false, false, false, a.ld, b.ld, c.ld, false);
  }
  void add(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K, int64_t,
           const T* c_row_scale) const {
    for (int64_t r = 0; c_row_scale && r < M; ++r)
      if (c_row_scale[r] != T(1))
        for (int64_t x = 0; x < N; ++x) c.p[r * c.ld + x] *= c_row_scale[r];
    matmul(c.p, a.p, b.p, M, N, K, false, false, true, a.ld, b.ld, c.ld, false);
  }
  void product_at(Rows<T> c, Rows<const T> a, Rows<const T> b, int64_t M, int64_t N, int64_t K,
                  int64_t, bool accumulate) const {
    matmul(c.p, a.p, b.p, M, N, K, true, false, accumulate, a.ld, b.ld, c.ld, false);
  }
};

struct Avx512Products {
  using Product = cpu::attention_microkernel::Product;
  using ALayout = cpu::attention_microkernel::ALayout;
  using Skip = cpu::attention_microkernel::Skip;
  static constexpr int64_t kLanes = 16;
  int64_t pack_ld;

  Rows<const float> keys(float* pack, Rows<const float> k, int64_t nk, int64_t D) const {
    cpu::attention_microkernel::transpose(pack, pack_ld, k.p, k.ld, nk, D);
    return {pack, pack_ld};
  }
  Rows<const float> rows(float* pack, Rows<const float> x, int64_t n, int64_t D) const {
    const int64_t ld = row_ld(D);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < D; ++c) pack[r * ld + c] = x.p[r * x.ld + c];
    return {pack, ld};
  }
  void scores(Rows<float> s, Rows<const float> a, Rows<const float> kt, int64_t M, int64_t N,
              int64_t D, int64_t diagonal) const {
    Product p = operands(s, a, kt, M, N, D);
    p.skip = Skip::kColumnsPastDiagonal;
    p.diagonal = diagonal;
    cpu::attention_microkernel::gemm(p);
  }
  void assign(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N,
              int64_t K, int64_t diagonal) const {
    Product p = operands(c, a, b, M, N, K);
    p.skip = Skip::kDepthPastDiagonal;
    p.diagonal = diagonal;
    cpu::attention_microkernel::gemm(p);
  }
  void add(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N, int64_t K,
           int64_t diagonal, const float* c_row_scale) const {
    Product p = operands(c, a, b, M, N, K);
    p.accumulate = true;
    p.c_row_scale = c_row_scale;
    p.skip = Skip::kDepthPastDiagonal;
    p.diagonal = diagonal;
    cpu::attention_microkernel::gemm(p);
  }
  void product_at(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M, int64_t N,
                  int64_t K, int64_t diagonal, bool accumulate) const {
    Product p = operands(c, a, b, M, N, K);
    p.a_layout = ALayout::kColumns;
    p.accumulate = accumulate;
    p.skip = Skip::kDepthBeforeDiagonal;
    p.diagonal = diagonal;
    cpu::attention_microkernel::gemm(p);
  }

 private:
  // The operands every product names; each method then sets what makes it that product.
  static Product operands(Rows<float> c, Rows<const float> a, Rows<const float> b, int64_t M,
                          int64_t N, int64_t K) {
    Product p;
    p.c = c.p;
    p.ldc = c.ld;
    p.a = a.p;
    p.lda = a.ld;
    p.b = b.p;
    p.ldb = b.ld;
    p.M = M;
    p.N = N;
    p.K = K;
    return p;
  }
};

}  // namespace sft::ops::flash
