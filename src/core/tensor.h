// Tensor: a dtype, a shape and contiguous row-major bytes.
//
// Memory is either owned (64-byte aligned, zero-filled, freed with the last copy)
// or borrowed from something else that a keep-alive handle holds open, e.g. an mmap
// of a safetensors file (zero-copy loading). Copies of a Tensor share the memory;
// clone() makes an independent owned copy. Shapes are int64 as in PyTorch; a shape
// of {} is a scalar with one element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace sft {

using Shape = std::vector<int64_t>;

inline constexpr size_t kTensorAlignment = 64;

// Number of elements of a shape; throws sft::Error on a negative dim or int64 overflow.
int64_t shape_numel(const Shape& shape);
// "[2, 3]"
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // Owned, 64-byte aligned, zero-filled.
  static Tensor zeros(DType dtype, Shape shape);
  // Borrowed: `data` stays valid as long as `keep_alive` (may be null for caller-managed memory).
  static Tensor borrow(DType dtype, Shape shape, const void* data,
                       std::shared_ptr<const void> keep_alive);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t ndim() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return data_ != nullptr || numel_ == 0; }
  // Borrowed tensors are read-only: writing into a mapped file would change the user's file.
  bool is_borrowed() const { return borrowed_; }

  const std::byte* bytes() const { return data_; }
  std::byte* mutable_bytes();
  std::span<const std::byte> byte_span() const { return {data_, nbytes()}; }

  // Typed element access; throws sft::Error when T does not match dtype().
  template <typename T>
  std::span<const T> values() const {
    check_type(DTypeOf<T>::value);
    return {reinterpret_cast<const T*>(data_), static_cast<size_t>(numel_)};
  }
  template <typename T>
  std::span<T> mutable_values() {
    check_type(DTypeOf<T>::value);
    return {reinterpret_cast<T*>(mutable_bytes()), static_cast<size_t>(numel_)};
  }

  // Independent owned copy.
  Tensor clone() const;
  // Elements converted to f32 (exact for every float dtype narrower than f32; ints by value).
  std::vector<float> to_f32_vector() const;
  // New owned tensor of another float dtype (F64, F32, F16, BF16), rounding to nearest-even
  // where narrower. F64 sources go through f32 first, so they may round twice.
  Tensor to(DType dtype) const;

 private:
  void check_type(DType requested) const;

  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t numel_ = 0;
  std::byte* data_ = nullptr;
  bool borrowed_ = false;
  std::shared_ptr<const void> storage_;
};

}  // namespace sft
