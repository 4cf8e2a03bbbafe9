// Block reads from a mapped safetensors file (see safetensors.h): a tensor-parallel rank
// reads its rows or columns of a tensor straight from the mapping, converting to f32 on the
// way, so only the pages of its own block are ever touched and no whole-tensor buffer exists.
#include <cstring>
#include <vector>

#include "core/half.h"
#include "io/safetensors.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "safetensors";

[[noreturn]] void bad_block(const SafetensorsFile& file, const TensorEntry& entry,
                            const std::string& problem) {
  fail_in_file(kComponent, {file.path(), "tensor '" + entry.name + "'"}, problem,
               "a tensor-parallel rank reads its block of a 1-D or 2-D tensor; the file does "
               "not have the shape the model expects");
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // mapped data need not be aligned for T
  return v;
}

// dst[0, n) = the n elements at src as f32. The float formats the weights come in are
// converted here with the same exact functions Tensor uses; the rest through a borrowed view
// of just this run, so every dtype converts exactly as Tensor::to_f32_vector does.
void convert_run(DType dtype, const std::byte* src, int64_t n, float* dst) {
  const size_t count = static_cast<size_t>(n);
  if (count == 0) return;  // an empty block may come with null pointers
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::kBF16:
      for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(load<uint16_t>(src + 2 * i));
      return;
    case DType::kF16:
      for (size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(load<uint16_t>(src + 2 * i));
      return;
    case DType::kF64:
      for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(load<double>(src + 8 * i));
      return;
    default: {
      const std::vector<float> v = Tensor::borrow(dtype, {n}, src, nullptr).to_f32_vector();
      std::memcpy(dst, v.data(), count * sizeof(float));
    }
  }
}

}  // namespace

TensorBlock whole_tensor_block(const TensorEntry& entry) {
  return {0, 0, entry.shape.empty() ? 1 : entry.shape[0]};
}

void read_tensor_block(const SafetensorsFile& file, const TensorEntry& entry,
                       const TensorBlock& block, std::span<float> out) {
  const Shape& shape = entry.shape;
  if (shape.size() != 1 && shape.size() != 2)
    bad_block(file, entry,
              "shape " + shape_to_string(shape) +
                  " is not 1-D or 2-D, so it has no row or column "
                  "blocks");
  if (block.dim != 0 && !(block.dim == 1 && shape.size() == 2))
    bad_block(file, entry,
              "a block along dim " + std::to_string(block.dim) + " of a tensor of shape " +
                  shape_to_string(shape));
  const int64_t rows = shape.size() == 2 ? shape[0] : 1;
  const int64_t cols = shape.size() == 2 ? shape[1] : shape[0];
  const int64_t extent = block.dim == 0 ? shape[0] : cols;
  if (block.begin < 0 || block.count < 0 || block.begin > extent - block.count)
    bad_block(file, entry,
              "the block [" + std::to_string(block.begin) + ", " +
                  std::to_string(block.begin + block.count) + ") along dim " +
                  std::to_string(block.dim) + " is outside the shape " + shape_to_string(shape));
  const int64_t out_rows = block.dim == 0 && shape.size() == 2 ? block.count : rows;
  const int64_t out_cols = block.dim == 0 && shape.size() == 2 ? cols : block.count;
  if (static_cast<int64_t>(out.size()) != out_rows * out_cols)
    bad_block(file, entry,
              "the destination holds " + std::to_string(out.size()) + " floats, the block " +
                  std::to_string(out_rows * out_cols));
  const size_t step = dtype_size(entry.dtype);
  // A borrowed view costs nothing: the bytes stay in the mapping until converted below.
  const std::byte* data = file.tensor(entry).bytes();
  if (block.dim == 0) {
    // Rows (or elements) [begin, begin + count): one contiguous run.
    const int64_t first = shape.size() == 2 ? block.begin * cols : block.begin;
    convert_run(entry.dtype, data + static_cast<size_t>(first) * step, out_rows * out_cols,
                out.data());
    return;
  }
  // Columns [begin, begin + count): one run per row.
  for (int64_t r = 0; r < rows; ++r)
    convert_run(entry.dtype, data + static_cast<size_t>(r * cols + block.begin) * step, block.count,
                out.data() + r * block.count);
}

void read_tensor_run(const SafetensorsFile& file, const TensorEntry& entry, int64_t first,
                     std::span<float> out) {
  const int64_t n = shape_numel(entry.shape), count = static_cast<int64_t>(out.size());
  if (first < 0 || first > n - count)
    fail_in_file(kComponent, {file.path(), "tensor '" + entry.name + "'"},
                 "the elements [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") are outside its " + std::to_string(n) + " elements",
                 "the file does not have the shape the model expects");
  const std::byte* data = file.tensor(entry).bytes();
  convert_run(entry.dtype, data + static_cast<size_t>(first) * dtype_size(entry.dtype), count,
              out.data());
}

}  // namespace sft
