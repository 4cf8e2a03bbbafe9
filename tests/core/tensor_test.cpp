#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/half.h"

namespace sft {

TEST(Tensor, ZerosIsAlignedZeroedAndCounted) {
  Tensor t = Tensor::zeros(DType::kF32, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.bytes()) % kTensorAlignment, 0u);
  for (float v : t.values<float>()) EXPECT_EQ(v, 0.0f);
  Tensor scalar = Tensor::zeros(DType::kI64, {});
  EXPECT_EQ(scalar.numel(), 1);
  Tensor empty = Tensor::zeros(DType::kBF16, {0, 4});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.nbytes(), 0u);
}

TEST(Tensor, CopiesShareMemoryAndCloneDoesNot) {
  Tensor a = Tensor::zeros(DType::kF32, {4});
  Tensor b = a;
  a.mutable_values<float>()[0] = 3.0f;
  EXPECT_EQ(b.values<float>()[0], 3.0f);
  Tensor c = a.clone();
  a.mutable_values<float>()[0] = 4.0f;
  EXPECT_EQ(c.values<float>()[0], 3.0f);
}

TEST(Tensor, BorrowedIsReadOnlyAndKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor t = Tensor::borrow(DType::kF32, {2, 3}, owner->data(), owner);
  std::weak_ptr<std::vector<float>> watch = owner;
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.values<float>()[5], 6.0f);
  EXPECT_TRUE(t.is_borrowed());
  EXPECT_THROW(t.mutable_bytes(), Error);
  t = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(Tensor, TypedAccessChecksDType) {
  Tensor t = Tensor::zeros(DType::kF16, {2});
  EXPECT_THROW(t.values<float>(), Error);
  try {
    t.values<float>();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[tensor] tensor holds F16, accessed as F32");
  }
}

TEST(Tensor, ShapeValidation) {
  EXPECT_THROW(Tensor::zeros(DType::kF32, {-1}), Error);
  EXPECT_THROW(shape_numel({int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_EQ(shape_to_string({2, 3}), "[2, 3]");
}

TEST(Tensor, ConvertsBetweenFloatTypes) {
  Tensor f = Tensor::zeros(DType::kF32, {4});
  auto v = f.mutable_values<float>();
  v[0] = 1.0f;
  v[1] = 1.00390625f;  // halfway between two bf16 values: ties to even (down)
  v[2] = -INFINITY;
  v[3] = 70000.0f;  // beyond f16 range
  Tensor b = f.to(DType::kBF16);
  const auto* bb = reinterpret_cast<const uint16_t*>(b.bytes());
  EXPECT_EQ(bb[0], 0x3f80);
  EXPECT_EQ(bb[1], 0x3f80);
  EXPECT_EQ(bb[2], 0xff80);
  Tensor h = f.to(DType::kF16);
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(h.bytes())[3], 0x7c00);
  std::vector<float> back = b.to_f32_vector();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_TRUE(std::isinf(back[2]));
  EXPECT_THROW(f.to(DType::kI32), Error);
}

}  // namespace sft
