// Arena allocation. CUDA arenas come from the CUDA backend; this build refuses them clearly.
#include "core/arena.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace sft {

Arena::~Arena() {
  release();
}

Arena::Arena(Arena&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      allocations_(other.allocations_) {}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    allocations_ = other.allocations_;
  }
  return *this;
}

void Arena::release() {
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void Arena::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  if (device_ != Device::kCpu)
    fail("arena", std::string("no allocator for device ") + device_name(device_) +
                      " in this build; rebuild with -DSFT_CUDA=ON");
  release();
  const size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(kArenaAlignment, rounded));
  if (!data_)
    fail("arena", "out of memory allocating " + std::to_string(rounded >> 20) +
                      " MiB (hint: a smaller batch, --gradient_checkpointing or a shorter "
                      "--max_length)");
  std::memset(data_, 0, rounded);
  capacity_ = rounded;
  ++allocations_;
}

}  // namespace sft
