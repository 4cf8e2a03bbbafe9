// SharedScratch and the SFT_CHECK_SCRATCH poisoning. See shared_scratch.h.
#include "model/blocks/shared_scratch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace sft::model {

bool scratch_checks_on() {
  static const bool on = [] {
    const char* v = std::getenv("SFT_CHECK_SCRATCH");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

void poison_if_checking(std::initializer_list<ops::View> views) {
  if (!scratch_checks_on()) return;
  for (const ops::View& v : views)
    if (!v.empty() && v.device == Device::kCpu)
      std::memset(v.data, 0xFF, static_cast<size_t>(v.ld() * v.rows) * dtype_size(v.dtype));
}

SharedScratch SharedScratch::take(Carver& cv, size_t bytes) {
  SharedScratch s;
  s.data_ = cv.take<std::byte>(static_cast<int64_t>(bytes));
  s.bytes_ = bytes;
  s.device_ = cv.device();
  return s;
}

ops::View SharedScratch::role(DType dtype, int64_t rows, int64_t cols, size_t offset) const {
  const size_t need = offset + static_cast<size_t>(rows * cols) * dtype_size(dtype);
  if (need > bytes_)
    fail("model", "a shared scratch region of " + std::to_string(bytes_) +
                      " bytes is too small for a (" + std::to_string(rows) + ", " +
                      std::to_string(cols) + ") " + std::string(dtype_name(dtype)) +
                      " role at offset " + std::to_string(offset));
  return ops::View{data_ + offset, dtype, rows, cols, device_};
}

void SharedScratch::hand_over() const {
  if (data_ && device_ == Device::kCpu && scratch_checks_on()) std::memset(data_, 0xFF, bytes_);
}

}  // namespace sft::model
