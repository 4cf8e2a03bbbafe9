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

// Hands out consecutive aligned views; with a null arena it only measures.
class Carver {
 public:
  explicit Carver(Arena* arena) : arena_(arena) {}
  template <typename T>
  T* take(int64_t n) {
    const size_t at = used_;
    used_ += (static_cast<size_t>(n) * sizeof(T) + kArenaAlignment - 1) / kArenaAlignment *
             kArenaAlignment;
    return arena_ ? reinterpret_cast<T*>(arena_->data() + at) : nullptr;
  }
  size_t used() const { return used_; }

 private:
  Arena* arena_;
  size_t used_ = 0;
};

// Runs layout(Carver&) twice: measuring, then carving views out of `arena` grown to fit.
template <typename Layout>
void carve(Arena& arena, Layout&& layout) {
  Carver measure(nullptr);
  layout(measure);
  arena.reserve(measure.used());
  Carver real(&arena);
  layout(real);
}

}  // namespace sft
