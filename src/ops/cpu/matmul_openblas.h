// OpenBLAS sgemm/dgemm split over default_thread_pool(): the double reference path and one of
// the two f32 paths ops::matmul<float> chooses from (matmul.cpp). Same contract as ops::matmul.
#pragma once

#include <cstdint>

namespace sft::ops {

template <typename T>
void matmul_openblas(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, bool trans_a,
                     bool trans_b, bool accumulate, int64_t lda, int64_t ldb, int64_t ldc,
                     bool parallel);

}  // namespace sft::ops
