// Fuzz target: a safetensors file holding MXFP4 pairs (<name>_blocks / <name>_scales, as
// gpt-oss's experts are stored; model/mxfp4.h). Every pair is checked as the loader checks it,
// and each accepted pair is decoded row by row from the file's bytes: never a crash or a read
// out of bounds, and every value is the table's value times the block's power of two, with the
// first inf reported where it is.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/mxfp4.h"

namespace {

void decode_pair(std::span<const uint8_t> file, const sft::SafetensorsHeader& header,
                 const sft::TensorEntry& blocks, const sft::TensorEntry& scales) {
  const int64_t groups = scales.shape.back();
  if (groups == 0) return;
  const uint8_t* b = file.data() + header.data_start + blocks.begin;
  const uint8_t* s = file.data() + header.data_start + scales.begin;
  const auto rows = static_cast<int64_t>(scales.end - scales.begin) / groups;
  std::vector<float> out(static_cast<size_t>(groups * sft::model::kMxfp4BlockValues));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row_blocks = b + r * groups * sft::model::kMxfp4BlockBytes;
    const uint8_t* row_scales = s + r * groups;
    const int64_t bad = sft::model::decode_mxfp4_row(
        {row_blocks, static_cast<size_t>(groups * sft::model::kMxfp4BlockBytes)},
        {row_scales, static_cast<size_t>(groups)}, out);
    int64_t first = -1;
    for (size_t k = 0; k < out.size(); ++k) {
      const uint8_t code = (row_blocks[k / 2] >> (k % 2 ? 4 : 0)) & 15u;
      const float want = sft::model::mxfp4_value(code, row_scales[k / 32]);
      if (std::memcmp(&want, &out[k], sizeof want) != 0) std::abort();
      if (first < 0 && !std::isfinite(out[k])) first = static_cast<int64_t>(k);
    }
    if (bad != first) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> file(data, size);
  sft::SafetensorsHeader header;
  try {
    header = sft::parse_safetensors_header(std::as_bytes(file), "fuzz-input");
  } catch (const sft::SafetensorsError&) {
    return 0;  // not a safetensors file: the header fuzzer's concern
  }
  for (const sft::TensorEntry& blocks : header.tensors) {
    if (!blocks.name.ends_with("_blocks")) continue;
    const std::string scales_name = blocks.name.substr(0, blocks.name.size() - 7) + "_scales";
    for (const sft::TensorEntry& scales : header.tensors) {
      if (scales.name != scales_name) continue;
      try {
        sft::model::check_mxfp4_pair({blocks, "fuzz-input", scales, "fuzz-input"});
      } catch (const sft::Error&) {
        continue;  // refused with a clear error
      }
      decode_pair(file, header, blocks, scales);
    }
  }
  return 0;
}
