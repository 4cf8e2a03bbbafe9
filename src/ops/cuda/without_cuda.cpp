// Built when SFT_CUDA is OFF: the CUDA entry points exist and say how to get them. The CUDA
// kernel table is empty and marked not built, so a CUDA view fails in the dispatcher naming its
// op; the raw memory calls are here for callers that pick a backend at run time
// (tests/conformance), which check cuda_available() first.
#include <string>

#include "core/error.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/kernel_table.h"

namespace sft {

bool cuda_available() {
  return false;
}

void cuda_init(int /*device*/) {
  fail("cuda", "sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
}

std::string compiled_backends() {
  return "cpu";
}

int cuda_device_count() {
  return 0;
}

CudaDeviceInfo cuda_device_info(int /*device*/) {
  fail("cuda", "sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
}

// No CUDA kernels: every CUDA view fails in the dispatcher with the table's `rebuild` hint.
const ops::KernelTable& ops::cuda_kernels() {
  static const KernelTable table{
      .device = "CUDA", .built = false, .rebuild = "rebuild with -DSFT_CUDA=ON"};
  return table;
}

namespace ops::cuda {

namespace {
[[noreturn]] void without_cuda(const char* op) {
  fail("ops", std::string(op) +
                  ": a CUDA view, but sft was built without CUDA; rebuild with "
                  "-DSFT_CUDA=ON");
}
}  // namespace

void* device_alloc(size_t) {
  without_cuda("device_alloc");
}
void device_free(void*) noexcept {}  // nothing was allocated
void copy_to_device(void*, const void*, size_t) {
  without_cuda("copy_to_device");
}
void copy_to_host(void*, const void*, size_t) {
  without_cuda("copy_to_host");
}
void synchronize() {}  // no device, nothing in flight

}  // namespace ops::cuda

}  // namespace sft
