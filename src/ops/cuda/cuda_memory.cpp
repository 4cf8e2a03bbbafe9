// Device arenas, pinned buffers, copies and scratch. See cuda_memory.h.
#include "ops/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "core/error.h"
#include "ops/cuda/cuda_check.h"

namespace sft::ops::cuda {

namespace {

size_t round_up(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

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
  return data;
}

void device_free(void* data) noexcept {
  if (data) cudaFree(data);  // no throw from destructors; a failing free leaves nothing to do
}

DeviceArena::~DeviceArena() {
  release();
}

DeviceArena::DeviceArena(DeviceArena&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      allocations_(other.allocations_) {}

DeviceArena& DeviceArena::operator=(DeviceArena&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    allocations_ = other.allocations_;
  }
  return *this;
}

void DeviceArena::release() noexcept {
  device_free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void DeviceArena::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  release();
  const size_t rounded = round_up(bytes);
  data_ = static_cast<std::byte*>(device_alloc(rounded));
  SFT_CUDA_CHECK(cudaMemset(data_, 0, rounded));
  capacity_ = rounded;
  ++allocations_;
}

PinnedBuffer::~PinnedBuffer() {
  release();
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (data_) cudaFreeHost(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  release();
  const size_t rounded = round_up(bytes);
  void* data = nullptr;
  SFT_CUDA_CHECK(cudaMallocHost(&data, rounded));
  data_ = static_cast<std::byte*>(data);
  capacity_ = rounded;
}

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
  static DeviceArena* arena = new DeviceArena();
  arena->reserve(bytes);
  return arena->data();
}

}  // namespace sft::ops::cuda
