// MXFP4 decoding as transformers does it; see mxfp4.h.
#include "model/mxfp4.h"

#include <cmath>

#include "core/error.h"

namespace sft::model {

namespace {

constexpr std::string_view kComponent = "model";
constexpr std::string_view kHint =
    "an MXFP4 expert stack is two uint8 tensors, <name>_blocks (experts, rows, groups, 16) and "
    "<name>_scales (experts, rows, groups), as the released gpt-oss checkpoints store them";

std::string tensor_place(const TensorEntry& t) {
  return "tensor '" + t.name + "'";
}

}  // namespace

Shape mxfp4_blocks_shape(int64_t experts, int64_t rows, int64_t values) {
  return {experts, rows, values / kMxfp4BlockValues, kMxfp4BlockBytes};
}

Shape mxfp4_scales_shape(int64_t experts, int64_t rows, int64_t values) {
  return {experts, rows, values / kMxfp4BlockValues};
}

std::string mxfp4_blocks_name(const std::string& stack) {
  return stack + "_blocks";
}

std::string mxfp4_scales_name(const std::string& stack) {
  return stack + "_scales";
}

void check_mxfp4_pair(const Mxfp4Pair& pair) {
  for (const auto& [t, file] :
       {std::pair{&pair.blocks, &pair.blocks_file}, std::pair{&pair.scales, &pair.scales_file}})
    if (t->dtype != DType::kU8)
      fail_in_file(kComponent, {*file, tensor_place(*t)},
                   "MXFP4 data must be uint8 (U8), not " + std::string(dtype_name(t->dtype)),
                   kHint);
  const Shape& b = pair.blocks.shape;
  if (b.size() < 2 || b.back() != kMxfp4BlockBytes)
    fail_in_file(kComponent, {pair.blocks_file, tensor_place(pair.blocks)},
                 "shape " + shape_to_string(b) + " does not end in blocks of " +
                     std::to_string(kMxfp4BlockBytes) + " bytes (32 FP4 values each)",
                 kHint);
  const Shape want(b.begin(), b.end() - 1);
  if (pair.scales.shape != want)
    fail_in_file(kComponent, {pair.scales_file, tensor_place(pair.scales)},
                 "shape " + shape_to_string(pair.scales.shape) + " does not match '" +
                     pair.blocks.name + "' " + shape_to_string(b) +
                     ": one scale byte per block, so it must be " + shape_to_string(want),
                 kHint);
}

int64_t decode_mxfp4_row(std::span<const uint8_t> blocks, std::span<const uint8_t> scales,
                         std::span<float> out) {
  if (blocks.size() != scales.size() * kMxfp4BlockBytes ||
      out.size() != scales.size() * kMxfp4BlockValues)
    fail(kComponent, "decode_mxfp4_row: " + std::to_string(blocks.size()) + " bytes and " +
                         std::to_string(scales.size()) + " scales into " +
                         std::to_string(out.size()) + " values");
  int64_t first_bad = -1;
  for (size_t g = 0; g < scales.size(); ++g) {
    const double factor = e8m0_scale(scales[g]);  // once per block: mxfp4_value's product
    const uint8_t* in = blocks.data() + g * kMxfp4BlockBytes;
    float* o = out.data() + g * kMxfp4BlockValues;
    for (int64_t j = 0; j < kMxfp4BlockBytes; ++j) {
      o[2 * j] = static_cast<float>(kFp4E2M1Values[in[j] & 15u] * factor);
      o[2 * j + 1] = static_cast<float>(kFp4E2M1Values[in[j] >> 4] * factor);
    }
    if (first_bad < 0)
      for (int64_t k = 0; k < kMxfp4BlockValues; ++k)
        if (!std::isfinite(o[k])) {
          first_bad = static_cast<int64_t>(g) * kMxfp4BlockValues + k;
          break;
        }
  }
  return first_bad;
}

}  // namespace sft::model
