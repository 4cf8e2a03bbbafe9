// SharedScratch: bytes of a layer's scratch that serve several buffers in turn (their roles),
// declared in the carve plan instead of by pointers that alias each other with a comment.
//
// The plan takes the region once, sized for its largest role; each role is a view of it. A
// block that starts a role calls hand_over() first: from then on every earlier role of the
// region is dead. With SFT_CHECK_SCRATCH=1 in the environment, hand_over() fills the region
// with all-ones bits (a NaN in f32 and in bf16), so code that still reads a dead role reads
// NaNs and fails the parity tests instead of reading stale but plausible numbers. Without the
// variable it costs nothing. (Host memory only: a device region is not poisoned.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/arena.h"
#include "core/dtype.h"
#include "ops/view.h"

namespace sft::model {

// Whether SFT_CHECK_SCRATCH=1 (read once per process).
bool scratch_checks_on();
// Under SFT_CHECK_SCRATCH=1, fills the views' bytes with all-ones bits (host views; device and
// empty views are left alone): a block poisons its own scratch as it starts, so nothing can read
// what another layer or block left there.
void poison_if_checking(std::initializer_list<ops::View> views);

class SharedScratch {
 public:
  SharedScratch() = default;
  // `bytes` taken from the carver (nothing while carve() measures).
  static SharedScratch take(Carver& cv, size_t bytes);

  bool empty() const { return data_ == nullptr; }
  // A (rows, cols) view of `dtype` starting `offset` bytes into the region; fails naming the
  // region's size when the role does not fit.
  ops::View role(DType dtype, int64_t rows, int64_t cols, size_t offset = 0) const;
  // Every earlier role is dead from here on (poisoned under SFT_CHECK_SCRATCH=1).
  void hand_over() const;

 private:
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_ = Device::kCpu;  // the carver's: roles are views on it
};

}  // namespace sft::model
