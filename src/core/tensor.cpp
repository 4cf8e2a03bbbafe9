#include "core/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"

namespace sft {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("tensor", "negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      fail("tensor", "shape " + shape_to_string(shape) + " has more elements than int64 can count");
    }
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  size_t bytes = t.nbytes();
  if (t.numel_ != 0 && bytes / static_cast<size_t>(t.numel_) != dtype_size(dtype)) {
    fail("tensor", "tensor of shape " + shape_to_string(t.shape_) + " is too large to allocate");
  }
  // A multiple of the alignment, and never 0.
  size_t padded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (padded == 0) padded = kTensorAlignment;
  // calloc, aligned by hand, not aligned_alloc + memset: for large sizes glibc maps fresh zero
  // pages without clearing them, so a page is resident only once written (AdamW's moments of
  // the experts another rank owns under expert parallelism never are).
  void* raw = std::calloc(padded + kTensorAlignment, 1);
  if (raw == nullptr) {
    fail("tensor", "out of memory allocating " + std::to_string(bytes) + " bytes for shape " +
                       shape_to_string(t.shape_));
  }
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(raw) + kTensorAlignment) & ~uintptr_t{kTensorAlignment - 1};
  t.data_ = reinterpret_cast<std::byte*>(aligned);
  t.storage_ = std::shared_ptr<const void>(t.data_, [raw](const void*) { std::free(raw); });
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, const void* data,
                      std::shared_ptr<const void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.data_ = static_cast<std::byte*>(const_cast<void*>(data));
  t.borrowed_ = true;
  t.storage_ = std::move(keep_alive);
  return t;
}

std::byte* Tensor::mutable_bytes() {
  if (borrowed_)
    fail("tensor", "cannot write into a borrowed (read-only) tensor; clone() it first");
  return data_;
}

void Tensor::check_type(DType requested) const {
  if (requested != dtype_) {
    fail("tensor", "tensor holds " + std::string(dtype_name(dtype_)) + ", accessed as " +
                       std::string(dtype_name(requested)));
  }
}

Tensor Tensor::clone() const {
  Tensor copy = zeros(dtype_, shape_);
  if (nbytes() != 0) std::memcpy(copy.data_, data_, nbytes());
  return copy;
}

namespace {

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // borrowed data may be unaligned
  return v;
}

float element_to_f32(DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::kF64:
      return static_cast<float>(load<double>(p));
    case DType::kF32:
      return load<float>(p);
    case DType::kF16:
      return f16_to_f32(load<uint16_t>(p));
    case DType::kBF16:
      return bf16_to_f32(load<uint16_t>(p));
    case DType::kF8E4M3:
      return f8e4m3_to_f32(load<uint8_t>(p));
    case DType::kF8E5M2:
      return f8e5m2_to_f32(load<uint8_t>(p));
    case DType::kI64:
      return static_cast<float>(load<int64_t>(p));
    case DType::kI32:
      return static_cast<float>(load<int32_t>(p));
    case DType::kI16:
      return static_cast<float>(load<int16_t>(p));
    case DType::kI8:
      return static_cast<float>(load<int8_t>(p));
    case DType::kU8:
      return static_cast<float>(load<uint8_t>(p));
    case DType::kBool:
      return load<uint8_t>(p) != 0 ? 1.0f : 0.0f;
  }
  return 0.0f;
}

}  // namespace

std::vector<float> Tensor::to_f32_vector() const {
  std::vector<float> out(static_cast<size_t>(numel_));
  const size_t step = dtype_size(dtype_);
  if (dtype_ == DType::kF32 && numel_ != 0) {
    std::memcpy(out.data(), data_, nbytes());
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = element_to_f32(dtype_, data_ + i * step);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return clone();
  if (!dtype_is_float(dtype) || dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2) {
    fail("tensor", "conversion to " + std::string(dtype_name(dtype)) +
                       " is not supported (targets: F64, F32, F16, BF16)");
  }
  Tensor out = zeros(dtype, shape_);
  const size_t step = dtype_size(dtype_);
  for (int64_t i = 0; i < numel_; ++i) {
    const std::byte* src = data_ + static_cast<size_t>(i) * step;
    // f64 → f32 first would double-round; keep f64 sources exact when the target is f64.
    if (dtype == DType::kF64) {
      double v = dtype_ == DType::kI64 ? static_cast<double>(load<int64_t>(src))
                                       : static_cast<double>(element_to_f32(dtype_, src));
      reinterpret_cast<double*>(out.data_)[i] = v;
      continue;
    }
    float v = element_to_f32(dtype_, src);
    switch (dtype) {
      case DType::kF32:
        reinterpret_cast<float*>(out.data_)[i] = v;
        break;
      case DType::kF16:
        reinterpret_cast<uint16_t*>(out.data_)[i] = f32_to_f16(v);
        break;
      case DType::kBF16:
        reinterpret_cast<uint16_t*>(out.data_)[i] = f32_to_bf16(v);
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace sft
