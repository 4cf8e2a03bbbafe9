// Device memory for the CUDA backend: DeviceArena (core/arena.h's Arena for Device::kCuda: one
// cudaMalloc per growth, zero-filled, only grows; core's carve() lays views out in it),
// PinnedBuffer (page-locked host memory for transfers), copies between host and device views, and
// the backend's per-process scratch.
//
// Everything runs on the default stream; the copies here return when the data has arrived.
// Nothing in this header needs the CUDA headers, so tests and callers stay plain C++.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/arena.h"
#include "core/device.h"
#include "ops/view.h"

namespace sft::ops::cuda {

// Raw device memory; device_alloc fails with "[cuda] ... out of memory ... (hint: ...)".
void* device_alloc(size_t bytes);
void device_free(void* data) noexcept;

class DeviceArena {
 public:
  DeviceArena() = default;
  ~DeviceArena();
  DeviceArena(DeviceArena&& other) noexcept;
  DeviceArena& operator=(DeviceArena&& other) noexcept;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // At least `bytes` of capacity; reallocates (zero-filled, contents lost) only when larger.
  void reserve(size_t bytes);
  std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  Device device() const { return Device::kCuda; }
  int64_t allocations() const { return allocations_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t allocations_ = 0;
};

// Page-locked host memory (cudaMallocHost): transfers from it run at full bus speed and can
// overlap compute later. Only grows, like the arenas.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void reserve(size_t bytes);
  std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
};

// Byte copies (synchronous: they return when the bytes have arrived).
void copy_to_device(void* device_dst, const void* host_src, size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes);
// View copies: same dtype and element count; dst on the device named, src on the other.
void upload(View device_dst, View host_src);
void download(View host_dst, View device_src);
// Waits for every kernel launched so far (and reports an asynchronous kernel error here).
void synchronize();

// The backend's scratch: at least `bytes` of device memory, shared by every op of the process
// and valid until the next op (all ops run in order on one stream). Grows, never shrinks.
void* scratch(size_t bytes);

}  // namespace sft::ops::cuda
