// OpenBLAS matmul, partitioned over our one thread pool (see matmul_openblas.h).
//
// OpenBLAS is pinned to one thread so it never competes with default_thread_pool(); we split
// the larger of M and N into one contiguous block per pool thread and let each call a
// single-threaded sgemm/dgemm. No split runs over K, so results are bit-identical run to run.
#include "ops/cpu/matmul_openblas.h"

#include <cblas.h>

#include <mutex>

#include "core/thread_pool.h"

namespace sft::ops {

namespace {

void pin_openblas_to_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void gemm(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K, bool ta,
          bool tb, float beta, int64_t lda, int64_t ldb, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(const double* a, const double* b, double* c, int64_t M, int64_t N, int64_t K, bool ta,
          bool tb, double beta, int64_t lda, int64_t ldb, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// Below this many multiply-adds a thread hand-off costs more than it saves.
constexpr double kParallelMinWork = 1 << 18;

}  // namespace

template <typename T>
void matmul_openblas(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, bool trans_a,
                     bool trans_b, bool accumulate, int64_t lda, int64_t ldb, int64_t ldc,
                     bool parallel) {
  if (M <= 0 || N <= 0) return;
  pin_openblas_to_one_thread();
  if (lda == 0) lda = trans_a ? M : K;
  if (ldb == 0) ldb = trans_b ? K : N;
  if (ldc == 0) ldc = N;
  const T beta = accumulate ? T(1) : T(0);
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = T(0);
    return;
  }
  ThreadPool& pool = default_thread_pool();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (!parallel || pool.size() == 1 || work < kParallelMinWork) {
    gemm(a, b, c, M, N, K, trans_a, trans_b, beta, lda, ldb, ldc);
    return;
  }
  if (M >= N) {
    pool.parallel_for(static_cast<size_t>(M), [&](size_t, size_t begin, size_t end) {
      const int64_t i0 = static_cast<int64_t>(begin);
      const T* a0 = trans_a ? a + i0 : a + i0 * lda;
      gemm(a0, b, c + i0 * ldc, static_cast<int64_t>(end - begin), N, K, trans_a, trans_b, beta,
           lda, ldb, ldc);
    });
  } else {
    pool.parallel_for(static_cast<size_t>(N), [&](size_t, size_t begin, size_t end) {
      const int64_t j0 = static_cast<int64_t>(begin);
      const T* b0 = trans_b ? b + j0 * ldb : b + j0;
      gemm(a, b0, c + j0, M, static_cast<int64_t>(end - begin), K, trans_a, trans_b, beta, lda, ldb,
           ldc);
    });
  }
}

template void matmul_openblas<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                     bool, bool, bool, int64_t, int64_t, int64_t, bool);
template void matmul_openblas<double>(double*, const double*, const double*, int64_t, int64_t,
                                      int64_t, bool, bool, bool, int64_t, int64_t, int64_t, bool);

}  // namespace sft::ops
