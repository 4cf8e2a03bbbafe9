// View checks of the CUDA kernels. See cuda_views.h.
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

void require_cuda(const char* op, std::initializer_list<View> views) {
  for (const View& v : views)
    if (!v.empty() && v.device != Device::kCuda)
      fail("ops", std::string(op) + ": a " + device_name(v.device) +
                      " view reached the CUDA kernels (copy it with ops/cuda/cuda_memory.h)");
}

void require_dtype(const char* op, DType dtype, std::initializer_list<View> views) {
  for (const View& v : views)
    if (v.dtype != dtype)
      fail("ops", std::string(op) + ": the CUDA kernel takes " + std::string(dtype_name(dtype)) +
                      " here, got " + std::string(dtype_name(v.dtype)));
}

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

}  // namespace sft::ops::cuda
