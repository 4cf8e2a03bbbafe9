// The one way CUDA and cuBLASLt calls are checked in ops/cuda/: SFT_CUDA_CHECK(call) and
// SFT_CUBLAS_CHECK(call) throw sft::Error "[cuda] <call> failed at <file>:<line>: <reason>",
// naming the call as written, where it is, and the library's own text for the status
// (cudaGetErrorString / cublasLtGetStatusString). Kernel launches are checked with
// SFT_CUDA_CHECK(cudaGetLastError()) right after the launch.
#pragma once

#include <cuda_runtime_api.h>

namespace sft::ops::cuda {

// Throws unless status is cudaSuccess (and clears the error so later calls start clean).
void check_cuda(cudaError_t status, const char* call, const char* file, int line);
// Throws unless status (a cublasStatus_t, passed as int to keep cuBLAS out of this header) is
// CUBLAS_STATUS_SUCCESS.
void check_cublas(int status, const char* call, const char* file, int line);

}  // namespace sft::ops::cuda

#define SFT_CUDA_CHECK(call) ::sft::ops::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define SFT_CUBLAS_CHECK(call) \
  ::sft::ops::cuda::check_cublas(static_cast<int>(call), #call, __FILE__, __LINE__)
