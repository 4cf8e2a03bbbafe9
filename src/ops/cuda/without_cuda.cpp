// Built when SFT_CUDA is OFF: the CUDA entry points exist and say how to get them. The CUDA
// kernel table is empty and marked not built, so a CUDA view fails in the dispatcher naming its
// op, and the CUDA and pinned allocators (core/arena.h) refuse every use; the raw memory calls
// are here for callers that pick a backend at run time (tests/conformance), which check
// cuda_available() first.
#include <string>

#include "core/arena.h"
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

namespace {

[[noreturn]] void no_cuda_memory(const char* what) {
  fail("arena", std::string(what) + ": sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
}
std::byte* no_allocate(size_t) {
  no_cuda_memory("allocating CUDA memory");
}
std::byte* no_pinned_allocate(size_t) {
  no_cuda_memory("allocating pinned host memory");
}
void no_release(std::byte*) noexcept {}  // nothing was allocated
void no_copy(void*, const void*, size_t) {
  no_cuda_memory("copying CUDA memory");
}
void no_zero(void*, size_t) {
  no_cuda_memory("zeroing CUDA memory");
}

}  // namespace

// The allocators exist so that an Arena for CUDA can be named; using one fails clearly.
const Allocator& cuda_allocator() {
  static const Allocator allocator{"cuda",  Device::kCuda, no_allocate, no_release,
                                   no_copy, no_copy,       no_zero};
  return allocator;
}
const Allocator& pinned_host_allocator() {
  static const Allocator allocator{
      "pinned host", Device::kCpu, no_pinned_allocate, no_release, no_copy, no_copy, no_zero};
  return allocator;
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
int64_t device_allocations() {
  return 0;  // nothing can be allocated
}
void copy_to_device(void*, const void*, size_t) {
  without_cuda("copy_to_device");
}
void copy_to_host(void*, const void*, size_t) {
  without_cuda("copy_to_host");
}
void synchronize() {}  // no device, nothing in flight

}  // namespace ops::cuda

}  // namespace sft
