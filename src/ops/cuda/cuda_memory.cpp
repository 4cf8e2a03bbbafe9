// The CUDA and pinned host allocators, copies and scratch. See cuda_memory.h.
#include "ops/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <string>

#include "core/error.h"
#include "ops/cuda/cuda_check.h"

namespace sft {
namespace ops::cuda {

namespace {

std::atomic<int64_t> g_device_allocations{0};

void require_copy(const char* op, const View& dst, Device dst_device, const View& src,
                  Device src_device) {
  if (dst.device != dst_device || src.device != src_device)
    fail("cuda", std::string(op) + ": copies a " + device_name(src_device) + " view to a " +
                     device_name(dst_device) + " view, got " + device_name(src.device) + " → " +
                     device_name(dst.device));
  if (dst.dtype != src.dtype || dst.numel() != src.numel())
    fail("cuda", std::string(op) + ": views differ: " + std::string(dtype_name(src.dtype)) + " (" +
                     std::to_string(src.rows) + ", " + std::to_string(src.cols) + ") → " +
                     std::string(dtype_name(dst.dtype)) + " (" + std::to_string(dst.rows) + ", " +
                     std::to_string(dst.cols) + ")");
}

size_t bytes_of(const View& v) {
  return static_cast<size_t>(v.numel()) * dtype_size(v.dtype);
}

}  // namespace

void* device_alloc(size_t bytes) {
  void* data = nullptr;
  const cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    fail("cuda", "out of device memory allocating " + std::to_string(bytes >> 20) + " MiB (" +
                     std::to_string(free_bytes >> 20) + " of " + std::to_string(total >> 20) +
                     " MiB free; hint: a smaller batch, --gradient_checkpointing or a shorter "
                     "--max_length)");
  }
  SFT_CUDA_CHECK(status);
  g_device_allocations.fetch_add(1, std::memory_order_relaxed);
  return data;
}

void device_free(void* data) noexcept {
  if (data) cudaFree(data);  // no throw from destructors; a failing free leaves nothing to do
}

int64_t device_allocations() {
  return g_device_allocations.load(std::memory_order_relaxed);
}

namespace {

std::byte* cuda_allocate(size_t bytes) {
  void* data = device_alloc(bytes);
  SFT_CUDA_CHECK(cudaMemset(data, 0, bytes));
  return static_cast<std::byte*>(data);
}

void cuda_release(std::byte* data) noexcept {
  device_free(data);
}

// cudaMemcpyDefault: with unified addressing the runtime tells host from device pointers, so
// these serve device-to-device copies as well (copy_bytes, core/arena.h).
void cuda_copy(void* dst, const void* src, size_t bytes) {
  if (bytes) SFT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void cuda_zero(void* data, size_t bytes) {
  if (bytes) SFT_CUDA_CHECK(cudaMemset(data, 0, bytes));
}

std::byte* pinned_allocate(size_t bytes) {
  void* data = nullptr;
  SFT_CUDA_CHECK(cudaMallocHost(&data, bytes));
  std::memset(data, 0, bytes);
  return static_cast<std::byte*>(data);
}

void pinned_release(std::byte* data) noexcept {
  if (data) cudaFreeHost(data);
}

void host_copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void host_zero(void* data, size_t bytes) {
  if (bytes) std::memset(data, 0, bytes);
}

}  // namespace

}  // namespace ops::cuda

const Allocator& cuda_allocator() {
  static const Allocator allocator{"cuda",
                                   Device::kCuda,
                                   ops::cuda::cuda_allocate,
                                   ops::cuda::cuda_release,
                                   ops::cuda::cuda_copy,
                                   ops::cuda::cuda_copy,
                                   ops::cuda::cuda_zero};
  return allocator;
}

const Allocator& pinned_host_allocator() {
  static const Allocator allocator{"pinned host",
                                   Device::kCpu,
                                   ops::cuda::pinned_allocate,
                                   ops::cuda::pinned_release,
                                   ops::cuda::host_copy,
                                   ops::cuda::host_copy,
                                   ops::cuda::host_zero};
  return allocator;
}

namespace ops::cuda {

void copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes) SFT_CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes) SFT_CUDA_CHECK(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
}

void upload(View device_dst, View host_src) {
  require_copy("upload", device_dst, Device::kCuda, host_src, Device::kCpu);
  copy_to_device(device_dst.data, host_src.data, bytes_of(host_src));
}

void download(View host_dst, View device_src) {
  require_copy("download", host_dst, Device::kCpu, device_src, Device::kCuda);
  copy_to_host(host_dst.data, device_src.data, bytes_of(device_src));
}

void synchronize() {
  SFT_CUDA_CHECK(cudaDeviceSynchronize());
}

void* scratch(size_t bytes) {
  // Freed by the driver at exit: destroying device memory after the context is gone would fail.
  static Arena* arena = new Arena(cuda_allocator());
  arena->reserve(bytes);
  return arena->data();
}

}  // namespace ops::cuda
}  // namespace sft
