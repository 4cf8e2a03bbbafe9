// View: what every ops:: kernel takes — a pointer with its dtype, its 2-D shape (rows × cols,
// row-major, dense) and the device its memory is on. Views never own memory; they point into
// arenas (core/arena.h) or caller buffers. Higher-rank tensors are passed as their 2-D
// flattening plus the extra sizes the op needs (e.g. heads), as the BLAS would.
//
// Element types: float ↔ kF32, double ↔ kF64, uint16_t ↔ kBF16 (bf16 bits, core/half.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"

namespace sft::ops {

// core/dtype.h's mapping, with uint16_t meaning bf16 bits.
template <typename T>
struct ViewDType : DTypeOf<T> {};
template <>
struct ViewDType<uint16_t> {
  static constexpr DType value = DType::kBF16;
};

struct View {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  Device device = Device::kCpu;

  int64_t numel() const { return rows * cols; }
  bool empty() const { return data == nullptr; }

  // The data as T*; throws when the dtype is another.
  template <typename T>
  T* as() const {
    if (dtype != ViewDType<T>::value)
      fail("ops", "a " + std::string(dtype_name(dtype)) + " view used as " +
                      std::string(dtype_name(ViewDType<T>::value)));
    return static_cast<T*>(data);
  }
  // The same elements seen as (rows, cols).
  View reshaped(int64_t r, int64_t c) const {
    if (r * c != numel())
      fail("ops", "cannot view " + std::to_string(numel()) + " elements as (" + std::to_string(r) +
                      ", " + std::to_string(c) + ")");
    View v = *this;
    v.rows = r;
    v.cols = c;
    return v;
  }
  // The first r·c elements seen as (r, c): a slice of a scratch view sized for the largest use.
  View first(int64_t r, int64_t c) const {
    if (r * c > numel())
      fail("ops", "a scratch view of " + std::to_string(numel()) + " elements is too small for (" +
                      std::to_string(r) + ", " + std::to_string(c) + ")");
    View v = *this;
    v.rows = r;
    v.cols = c;
    return v;
  }
  // Rows [begin, begin + n) of this view.
  View row_range(int64_t begin, int64_t n) const {
    View v = *this;
    v.data = static_cast<char*>(data) + begin * cols * static_cast<int64_t>(dtype_size(dtype));
    v.rows = n;
    return v;
  }
};

template <typename T>
View view_of(const T* data, int64_t rows, int64_t cols, Device device = Device::kCpu) {
  return View{const_cast<void*>(static_cast<const void*>(data)), ViewDType<T>::value, rows, cols,
              device};
}

}  // namespace sft::ops
