// Compute backends. The CPU backend is always built; the CUDA one only with -DSFT_CUDA=ON
// (ops/cuda/: its kernels in cuda_ops.h, device memory in cuda_memory.h; docs/cuda.md).
// Without it, the entry points exist and throw a clear error (so every build links).
#pragma once

#include <cstddef>
#include <string>

namespace sft {

enum class Backend { kCpu, kCuda };

// True when this binary was built with CUDA and a device is visible.
bool cuda_available();
// Selects a CUDA device; throws "[cuda] sft was built without CUDA; ..." in CPU-only builds.
void cuda_init(int device);
// One line for --version: "cpu" or "cpu, cuda".
std::string compiled_backends();

// The CUDA devices this process sees (after CUDA_VISIBLE_DEVICES, which the runtime applies):
// 0 in a CPU-only build, without a driver or without a device, never an error.
int cuda_device_count();
// What the first log lines of a run say about a device (cudaGetDeviceProperties).
struct CudaDeviceInfo {
  std::string name;          // "NVIDIA H200"
  size_t total_memory = 0;   // bytes
  int major = 0, minor = 0;  // compute capability
};
// Device `device` of cuda_device_count(); throws "[cuda] ..." for one that does not exist (and
// in a CPU-only build, as cuda_init).
CudaDeviceInfo cuda_device_info(int device);

}  // namespace sft
