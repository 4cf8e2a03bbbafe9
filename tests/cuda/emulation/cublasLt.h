// A CPU stand-in for the cuBLASLt calls of src/ops/cuda/matmul.cpp, for the emulated run: the
// matmul is computed from cuBLASLt's documented semantics — column-major layouts (rows, cols,
// ld) that describe the stored matrices, D = alpha · op(A) · op(B) + beta · C with op from
// TRANSA / TRANSB — so the emulated run checks matmul.cpp's row-major ↔ column-major mapping.
// Sums in double (only the mapping is under test here, not cuBLASLt's rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda_runtime.h"

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
};

struct emu_lt_desc {
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
};
struct emu_lt_layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};
using cublasLtHandle_t = int*;
using cublasLtMatmulDesc_t = emu_lt_desc*;
using cublasLtMatrixLayout_t = emu_lt_layout*;
using cublasLtMatmulPreference_t = int*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
};

inline const char* cublasLtGetStatusString(cublasStatus_t) {
  return "emulated cuBLASLt status";
}
inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static int dummy;
  *handle = &dummy;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t,
                                               cudaDataType_t) {
  *desc = new emu_lt_desc();
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                     cublasLtMatmulDescAttributes_t attribute,
                                                     const void* value, size_t) {
  cublasOperation_t op;
  std::memcpy(&op, value, sizeof(op));
  (attribute == CUBLASLT_MATMUL_DESC_TRANSA ? desc->transa : desc->transb) = op;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                 cudaDataType_t type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  *layout = new emu_lt_layout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = nullptr;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t,
                                                           cublasLtMatmulPreferenceAttributes_t,
                                                           const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                                     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                     cublasLtMatmulPreference_t, int,
                                                     cublasLtMatmulHeuristicResult_t* result,
                                                     int* found) {
  *result = {};
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

// Element (i, j) of a stored column-major matrix.
inline double emu_lt_at(const void* data, const emu_lt_layout& l, uint64_t i, uint64_t j) {
  const int64_t at = static_cast<int64_t>(i) + static_cast<int64_t>(j) * l.ld;
  if (l.type == CUDA_R_32F) return static_cast<const float*>(data)[at];
  const uint32_t bits = uint32_t{static_cast<const uint16_t*>(data)[at]} << 16;
  return __uint_as_float(bits);
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha,
                                     const void* A, cublasLtMatrixLayout_t a, const void* B,
                                     cublasLtMatrixLayout_t b, const void* beta, const void* C,
                                     cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                                     const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  const bool ta = desc->transa == CUBLAS_OP_T, tb = desc->transb == CUBLAS_OP_T;
  const uint64_t m = d->rows, n = d->cols, k = ta ? a->rows : a->cols;
  if ((ta ? a->cols : a->rows) != m || (tb ? b->cols : b->rows) != k ||
      (tb ? b->rows : b->cols) != n || c->rows != m || c->cols != n)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      double sum = 0;
      for (uint64_t p = 0; p < k; ++p)
        sum += (ta ? emu_lt_at(A, *a, p, i) : emu_lt_at(A, *a, i, p)) *
               (tb ? emu_lt_at(B, *b, j, p) : emu_lt_at(B, *b, p, j));
      const int64_t at = static_cast<int64_t>(i) + static_cast<int64_t>(j) * c->ld;
      const double start = be == 0 ? 0.0 : be * static_cast<const float*>(C)[at];  // C unread at 0
      static_cast<float*>(D)[static_cast<int64_t>(i) + static_cast<int64_t>(j) * d->ld] =
          static_cast<float>(al * sum + start);
    }
  return CUBLAS_STATUS_SUCCESS;
}
