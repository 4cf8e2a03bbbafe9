// Arena: one aligned allocation on a device that holds a set of named views (parameters,
// gradients, activations, scratch), and Carver, which lays views out in it.
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

class Arena {
 public:
  explicit Arena(Device device = Device::kCpu) : device_(device) {}
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // At least `bytes` of capacity; reallocates (zero-filled, contents lost) only when larger.
  void reserve(size_t bytes);
  std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  Device device() const { return device_; }
  int64_t allocations() const { return allocations_; }

 private:
  void release();

  Device device_;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t allocations_ = 0;
};

// Hands out consecutive aligned pieces of the memory at `base` (only addresses are computed,
// so it serves any device's arena); with a null base it only measures.
class Carver {
 public:
  explicit Carver(std::byte* base) : base_(base) {}
  template <typename T>
  T* take(int64_t n) {
    const size_t at = used_;
    used_ += (static_cast<size_t>(n) * sizeof(T) + kArenaAlignment - 1) / kArenaAlignment *
             kArenaAlignment;
    return base_ ? reinterpret_cast<T*>(base_ + at) : nullptr;
  }
  size_t used() const { return used_; }

 private:
  std::byte* base_;
  size_t used_ = 0;
};

// Runs layout(Carver&) twice: measuring, then carving views out of `arena` grown to fit. Any
// arena with reserve(bytes) and data(): this one, or a device's (ops/cuda/cuda_memory.h).
template <typename AnyArena, typename Layout>
void carve(AnyArena& arena, Layout&& layout) {
  Carver measure(nullptr);
  layout(measure);
  arena.reserve(measure.used());
  Carver real(arena.data());
  layout(real);
}

}  // namespace sft
