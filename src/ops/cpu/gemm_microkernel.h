// Our own fp32 GEMM for the training step's projections and LM-head vocabulary blocks, built
// from the AVX-512 6 × 64 register block (fma_register_block.h), one of the f32 paths
// ops::matmul<float> chooses from (matmul.cpp).
//
// Contract: C (M, N) = (or += with accumulate) op(A) (M, K) · op(B) (K, N), row-major, with the
// meaning of ops::matmul's arguments (ops.h): A's element (m, k) at a[m·lda + k], or at
// a[k·lda + m] when a_transposed; B's (k, n) at b[k·ldb + n], or at b[n·ldb + k] when
// b_transposed; C's (m, n) at c[m·ldc + n]. Strides are resolved (> 0); any M, N, K ≥ 0. Reads
// nothing outside the three blocks and writes nothing outside C's.
//
// Shape of the work: A is packed once per call into blocks of 6 rows whose 6 values per step of
// K are adjacent (the register block's broadcasts read one stream); B is packed per thread, 256
// steps of K × 512 columns at a time, into 64-column panels; C is swept in runs of 240 rows so
// the A strips, the B panels and C's block stay in L2. The pool's threads take contiguous runs
// of the 64-column panels (a partition fixed by N and the thread count).
//
// Numerics: each slice of 256 steps of K is one chain of fused multiply-adds from 0 per C
// element, added to C once at its end (the first slice to C's old value only with accumulate),
// slices in ascending order. The order depends on K alone, not on M, N, the partition or the thread
// count: results are bit-identical for any number of threads. They differ from a library GEMM's
// by rounding only.
//
// Callers check cpu::use_avx512() first (cpu_features.h).
#pragma once

#include <cstdint>

namespace sft::ops::cpu::gemm_microkernel {

struct Gemm {
  float* c = nullptr;
  int64_t ldc = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  bool a_transposed = false;
  const float* b = nullptr;
  int64_t ldb = 0;
  bool b_transposed = false;
  int64_t M = 0, N = 0, K = 0;
  bool accumulate = false;
};

// Who runs the product: the pool's threads (the caller must not be a pool worker), or only the
// calling thread (calls from inside pool workers).
enum class Threads { kPool, kCaller };

void gemm(const Gemm& g, Threads threads);

}  // namespace sft::ops::cpu::gemm_microkernel
