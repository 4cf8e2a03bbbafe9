#include "core/dtype.h"

#include <gtest/gtest.h>

namespace sft {

TEST(DType, NamesRoundTripAndSizes) {
  const DType all[] = {DType::kF64,    DType::kF32,    DType::kF16, DType::kBF16,
                       DType::kF8E4M3, DType::kF8E5M2, DType::kI64, DType::kI32,
                       DType::kI16,    DType::kI8,     DType::kU8,  DType::kBool};
  const size_t sizes[] = {8, 4, 2, 2, 1, 1, 8, 4, 2, 1, 1, 1};
  for (size_t i = 0; i < std::size(all); ++i) {
    EXPECT_EQ(parse_dtype(dtype_name(all[i])), all[i]);
    EXPECT_EQ(dtype_size(all[i]), sizes[i]) << dtype_name(all[i]);
  }
  EXPECT_EQ(dtype_name(DType::kF8E4M3), "F8_E4M3");
  EXPECT_FALSE(parse_dtype("F4").has_value());
  EXPECT_FALSE(parse_dtype("f32").has_value());  // safetensors names are upper case
}

}  // namespace sft
