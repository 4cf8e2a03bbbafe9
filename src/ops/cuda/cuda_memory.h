// Device memory for the CUDA backend: the allocators behind core/arena.h's Arena for CUDA memory
// (cuda_allocator(): one cudaMalloc per growth, zero-filled) and page-locked host memory
// (pinned_host_allocator(): cudaMallocHost, for transfers at full bus speed), copies between host
// and device views, and the backend's per-process scratch.
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

// Raw device memory; device_alloc fails with "[cuda] ... out of memory ... (hint: ...)". Every
// arena on the device (core/arena.h's Arena with cuda_allocator()) allocates through it.
void* device_alloc(size_t bytes);
void device_free(void* data) noexcept;
// cudaMalloc calls made so far by this process (device_alloc's), so that tests can check that
// a step loop allocates nothing once it has seen its largest batch.
int64_t device_allocations();

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
