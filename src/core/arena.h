// Arena: one aligned allocation on a device, from that device's Allocator (the CPU's, CUDA's, or
// pinned host memory), that holds a set of named views (parameters, gradients, activations,
// scratch), and Carver, which lays views out in it.
//
// Laying out is two passes of the same code (carve): the first measures, the arena grows to
// fit, the second hands out the views. An arena only grows, so once the largest batch has been
// seen the step loop never allocates (allocations() counts the growths, for tests). Growing
// discards the contents: arenas of persistent state (parameters) are sized once.
// Every view starts on a kArenaAlignment boundary, so vector loads and the BLAS never see a
// split cache line at a row start.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace sft {

inline constexpr size_t kArenaAlignment = 64;

// How one kind of memory is obtained and moved: the CPU's aligned malloc, the CUDA device's
// cudaMalloc, page-locked host memory (cudaMallocHost). allocate returns `bytes` (a multiple of
// kArenaAlignment) of zero-filled memory or fails naming the memory and a hint; release takes
// null. The copies move bytes between this memory and ordinary host memory and return when they
// have arrived; zero clears bytes in place.
struct Allocator {
  const char* name;  // for messages: "cpu", "cuda", "pinned host"
  Device device;     // where the memory is addressed (pinned host memory is the CPU's)
  std::byte* (*allocate)(size_t bytes);
  void (*release)(std::byte* data) noexcept;
  void (*to_host)(void* host_dst, const void* src, size_t bytes);
  void (*from_host)(void* dst, const void* host_src, size_t bytes);
  void (*zero)(void* data, size_t bytes);
};

const Allocator& cpu_allocator();
// Defined by the CUDA backend (ops/cuda/cuda_memory.cpp); in a build without CUDA
// (ops/cuda/without_cuda.cpp) every use fails saying how to rebuild.
const Allocator& cuda_allocator();
const Allocator& pinned_host_allocator();
// The allocator of a device's own memory.
const Allocator& allocator_for(Device device);

// Copies bytes between any two devices' memory (host ↔ CUDA, or within one device); returns
// when they have arrived.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

class Arena {
 public:
  explicit Arena(Device device = Device::kCpu) : allocator_(&allocator_for(device)) {}
  explicit Arena(const Allocator& allocator) : allocator_(&allocator) {}
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // At least `bytes` of capacity; reallocates (zero-filled, contents lost) only when larger.
  void reserve(size_t bytes);
  // Sets the first `bytes` to zero (on the arena's device).
  void zero(size_t bytes);
  std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  Device device() const { return allocator_->device; }
  const Allocator& allocator() const { return *allocator_; }
  int64_t allocations() const { return allocations_; }

 private:
  void release() noexcept;

  const Allocator* allocator_;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t allocations_ = 0;
};

// Hands out consecutive aligned pieces of the memory at `base` on `device` (only addresses are
// computed, so it serves any device's arena; views taken from it name its device); with a null
// base it only measures.
class Carver {
 public:
  explicit Carver(std::byte* base, Device device = Device::kCpu) : base_(base), device_(device) {}
  template <typename T>
  T* take(int64_t n) {
    const size_t at = used_;
    used_ += (static_cast<size_t>(n) * sizeof(T) + kArenaAlignment - 1) / kArenaAlignment *
             kArenaAlignment;
    return base_ ? reinterpret_cast<T*>(base_ + at) : nullptr;
  }
  size_t used() const { return used_; }
  Device device() const { return device_; }

 private:
  std::byte* base_;
  Device device_;
  size_t used_ = 0;
};

// Runs layout(Carver&) twice: measuring, then carving views out of `arena` grown to fit.
template <typename Layout>
void carve(Arena& arena, Layout&& layout) {
  Carver measure(nullptr, arena.device());
  layout(measure);
  arena.reserve(measure.used());
  Carver real(arena.data(), arena.device());
  layout(real);
}

}  // namespace sft
