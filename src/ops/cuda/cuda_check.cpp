// SFT_CUDA_CHECK / SFT_CUBLAS_CHECK: the messages. See cuda_check.h.
#include "ops/cuda/cuda_check.h"

#include <cublasLt.h>

#include <string>

#include "core/error.h"

namespace sft::ops::cuda {

namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": ";
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // a sticky launch error would otherwise resurface at the next check
  std::string hint;
  if (status == cudaErrorMemoryAllocation)
    hint = " (hint: a smaller batch, --gradient_checkpointing or a shorter --max_length)";
  else if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver)
    hint = " (hint: no usable NVIDIA device or driver here; nvidia-smi shows what the driver sees)";
  fail("cuda", where(call, file, line) + cudaGetErrorString(status) + " (" +
                   cudaGetErrorName(status) + ")" + hint);
}

void check_cublas(int status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail("cuda", where(call, file, line) +
                   cublasLtGetStatusString(static_cast<cublasStatus_t>(status)) + " (status " +
                   std::to_string(status) + ")");
}

}  // namespace sft::ops::cuda
