// Compute backends. The CPU backend is always built; the CUDA one only with -DSFT_CUDA=ON
// (ops/cuda/: its kernels in cuda_ops.h, device memory in cuda_memory.h; docs/cuda.md).
// Without it, the entry points exist and throw a clear error (so every build links).
#pragma once

#include <string>

namespace sft {

enum class Backend { kCpu, kCuda };

// True when this binary was built with CUDA and a device is visible.
bool cuda_available();
// Selects a CUDA device; throws "[cuda] sft was built without CUDA; ..." in CPU-only builds.
void cuda_init(int device);
// One line for --version: "cpu" or "cpu, cuda".
std::string compiled_backends();

}  // namespace sft
