// ops: the numeric primitives the model may call. Nothing here knows about models.
//
// Every matrix multiply in sft goes through ops::matmul, so its implementation (OpenBLAS
// today; oneDNN, own microkernels or cuBLASLt later) can be swapped in one place.
// Row-major throughout. Deterministic: for a given thread count the same inputs give
// bit-identical outputs (work is split over output rows/columns only, never over K).
#pragma once

#include <cstdint>

namespace sft::ops {

// C[M, N] = op(A) · op(B)            (accumulate = false)
// C[M, N] += op(A) · op(B)           (accumulate = true)
// op(A) is A [M, K] or, with trans_a, A stored as [K, M]; likewise op(B) is B [K, N] or,
// with trans_b, B stored as [N, K]. lda/ldb/ldc are row strides in elements (0 = dense).
// Splits the work over default_thread_pool() unless called from inside it (parallel = false).
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, bool trans_a,
            bool trans_b, bool accumulate, int64_t lda = 0, int64_t ldb = 0, int64_t ldc = 0,
            bool parallel = true);

// The same product with bf16 operands (raw bits, round-to-nearest-even bf16 as core/half.h)
// and fp32 accumulation into an fp32 C: the shape of torch's bf16 autocast matmuls.
void matmul_bf16(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate, int64_t lda = 0, int64_t ldb = 0,
                 int64_t ldc = 0);

// fn(begin, end) over contiguous chunks of [0, n) on the default pool; serial when n is small
// relative to `grain` (work items per chunk worth a thread hand-off).
void parallel_rows(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx);

// Convenience wrapper for lambdas.
template <typename F>
void parallel_for_rows(int64_t n, int64_t grain, F&& f) {
  parallel_rows(
      n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<F*>(ctx))(b, e); },
      static_cast<void*>(&f));
}

}  // namespace sft::ops
