// Arena allocation through the device's Allocator, and the CPU's allocator. The CUDA and pinned
// host allocators come from the CUDA backend (ops/cuda/cuda_memory.cpp), or refuse clearly in a
// build without it (ops/cuda/without_cuda.cpp).
#include "core/arena.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace sft {

namespace {

// calloc with the alignment done by hand, not aligned_alloc + memset: for large sizes glibc maps
// fresh zero pages and skips the clearing, so a page is resident only once something writes it
// (an arena sized for the longest batch costs what the batches use; a frozen base's bf16 copies
// fill in as its fp32 masters are released, model/parameters.h). The pointer calloc returned
// sits just before the aligned block, for cpu_release.
std::byte* cpu_allocate(size_t bytes) {
  void* raw = std::calloc(bytes + kArenaAlignment, 1);
  if (!raw)
    fail("arena", "out of memory allocating " + std::to_string(bytes >> 20) +
                      " MiB (hint: a smaller batch, --gradient_checkpointing or a shorter "
                      "--max_length)");
  // calloc's 16-byte alignment leaves at least 16 bytes before the aligned block.
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(raw) + kArenaAlignment) & ~uintptr_t{kArenaAlignment - 1};
  reinterpret_cast<void**>(aligned)[-1] = raw;
  return reinterpret_cast<std::byte*>(aligned);
}

void cpu_release(std::byte* data) noexcept {
  if (data) std::free(reinterpret_cast<void**>(data)[-1]);
}

void cpu_copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void cpu_zero(void* data, size_t bytes) {
  if (bytes) std::memset(data, 0, bytes);
}

}  // namespace

const Allocator& cpu_allocator() {
  static const Allocator allocator{"cpu",    Device::kCpu, cpu_allocate, cpu_release,
                                   cpu_copy, cpu_copy,     cpu_zero};
  return allocator;
}

const Allocator& allocator_for(Device device) {
  return device == Device::kCuda ? cuda_allocator() : cpu_allocator();
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (!bytes) return;
  // One side is host memory, or both are the device's (the device's copy handles that too).
  if (dst_device == Device::kCpu)
    allocator_for(src_device).to_host(dst, src, bytes);
  else
    allocator_for(dst_device).from_host(dst, src, bytes);
}

Arena::~Arena() {
  release();
}

Arena::Arena(Arena&& other) noexcept
    : allocator_(other.allocator_),
      data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      allocations_(other.allocations_) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = other.allocator_;
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    allocations_ = other.allocations_;
  }
  return *this;
}

void Arena::release() noexcept {
  if (data_) allocator_->release(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void Arena::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  release();
  const size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  data_ = allocator_->allocate(rounded);
  capacity_ = rounded;
  ++allocations_;
}

void Arena::zero(size_t bytes) {
  if (bytes > capacity_)
    fail("arena", "zero(" + std::to_string(bytes) + " bytes) past the capacity of " +
                      std::to_string(capacity_));
  allocator_->zero(data_, bytes);
}

}  // namespace sft
