// The CUDA build's entry points of ops/backend.h: whether a device is visible, selecting one,
// and what --version reports. (without_cuda.cpp holds the CPU-only build's versions.)
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_check.h"

namespace sft {

bool cuda_available() {
  return cuda_device_count() > 0;
}

int cuda_device_count() {
  int count = 0;
  // No driver, no device or a driver older than the runtime all mean "no CUDA here", not an
  // error: the caller falls back to the CPU (and the GPU tests skip).
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

CudaDeviceInfo cuda_device_info(int device) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count)
    fail("cuda", "device " + std::to_string(device) + " does not exist: " + std::to_string(count) +
                     " CUDA device(s) visible (hint: CUDA_VISIBLE_DEVICES selects them)");
  cudaDeviceProp p{};
  SFT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return {p.name, p.totalGlobalMem, p.major, p.minor};
}

void cuda_init(int device) {
  int count = 0;
  SFT_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    fail("cuda", "device " + std::to_string(device) + " does not exist: " + std::to_string(count) +
                     " CUDA device(s) visible (hint: CUDA_VISIBLE_DEVICES selects them)");
  SFT_CUDA_CHECK(cudaSetDevice(device));
  SFT_CUDA_CHECK(cudaFree(nullptr));  // creates the context now, so errors show here
}

std::string compiled_backends() {
  return "cpu, cuda";
}

}  // namespace sft
