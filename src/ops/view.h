// View: what every ops:: kernel takes — a pointer with its dtype, its 2-D shape (rows × cols,
// row-major) and the device its memory is on. Views never own memory; they point into arenas
// (core/arena.h) or caller buffers. Higher-rank tensors are passed as their 2-D flattening plus
// the extra sizes the op needs (e.g. heads), as the BLAS would.
//
// A view is dense unless it is a column block of a wider matrix (columns()): then its rows are
// `stride` elements apart, as a BLAS leading dimension. Only the ops that say so take such
// views (matmul, cast, rope: ops/ops.h); every other op refuses them (ops/device_dispatch.h),
// so a kernel written for dense rows never walks a strided one.
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
  int64_t stride = 0;  // elements from one row's start to the next; 0 = cols (dense)

  int64_t numel() const { return rows * cols; }
  bool empty() const { return data == nullptr; }
  // The row stride in elements (the BLAS leading dimension).
  int64_t ld() const { return stride == 0 ? cols : stride; }
  bool dense() const { return ld() == cols || rows <= 1; }

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
    require_dense("reshaped");
    if (r * c != numel())
      fail("ops", "cannot view " + std::to_string(numel()) + " elements as (" + std::to_string(r) +
                      ", " + std::to_string(c) + ")");
    View v = *this;
    v.rows = r;
    v.cols = c;
    v.stride = 0;
    return v;
  }
  // The first r·c elements seen as (r, c): a slice of a scratch view sized for the largest use.
  View first(int64_t r, int64_t c) const {
    require_dense("first");
    if (r * c > numel())
      fail("ops", "a scratch view of " + std::to_string(numel()) + " elements is too small for (" +
                      std::to_string(r) + ", " + std::to_string(c) + ")");
    View v = *this;
    v.rows = r;
    v.cols = c;
    v.stride = 0;
    return v;
  }
  // Rows [begin, begin + n) of this view.
  View row_range(int64_t begin, int64_t n) const {
    View v = *this;
    v.data = static_cast<char*>(data) + begin * ld() * static_cast<int64_t>(dtype_size(dtype));
    v.rows = n;
    return v;
  }
  // Columns [begin, begin + n) of every row: a strided view (e.g. q, k, v in one projection's
  // output, whose rows hold all three).
  View columns(int64_t begin, int64_t n) const {
    if (begin < 0 || n < 0 || begin + n > cols)
      fail("ops", "columns [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                      ") of a view with " + std::to_string(cols) + " columns");
    View v = *this;
    v.data = static_cast<char*>(data) + begin * static_cast<int64_t>(dtype_size(dtype));
    v.cols = n;
    v.stride = ld();
    return v;
  }

 private:
  void require_dense(const char* what) const {
    if (!dense())
      fail("ops", std::string(what) + ": a column block (row stride " + std::to_string(ld()) +
                      ", " + std::to_string(cols) + " columns) has no dense reinterpretation");
  }
};

template <typename T>
View view_of(const T* data, int64_t rows, int64_t cols, Device device = Device::kCpu) {
  return View{const_cast<void*>(static_cast<const void*>(data)), ViewDType<T>::value, rows, cols,
              device};
}

}  // namespace sft::ops
