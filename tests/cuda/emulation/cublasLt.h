// The cuBLASLt names cuda_check.cpp uses, for the emulated run (matmul is not emulated).
#pragma once

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
inline const char* cublasLtGetStatusString(cublasStatus_t) {
  return "emulated cuBLASLt status";
}
