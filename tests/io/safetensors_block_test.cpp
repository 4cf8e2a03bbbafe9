// Block reads (read_tensor_block): every block of rows, columns and 1-D elements equals the
// same block cut from the whole tensor's to_f32_vector, for every dtype (the Python-written
// all-dtypes fixture and our own F32/BF16/F16/F64 tensors); bad blocks name file and tensor.
// Runs of elements (read_tensor_run, a ZeRO-3 shard's part of a tensor of any shape) likewise.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "error_of.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sft {

namespace {

// The block cut from the whole tensor's f32 values: the expectation.
std::vector<float> cut(const std::vector<float>& whole, const Shape& shape, const TensorBlock& b) {
  if (shape.size() == 1) return {whole.begin() + b.begin, whole.begin() + b.begin + b.count};
  const int64_t rows = shape[0], cols = shape[1];
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if ((b.dim == 0 && r >= b.begin && r < b.begin + b.count) ||
          (b.dim == 1 && c >= b.begin && c < b.begin + b.count))
        out.push_back(whole[size_t(r * cols + c)]);
  return out;
}

// Bit patterns, so that NaN payloads and -0 count too.
std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
  return out;
}

// Every block [b, b + n) along every dimension the tensor has, 0 ≤ b ≤ b + n ≤ extent;
// returns how many were compared.
int check_every_block(const SafetensorsFile& file, const TensorEntry& e) {
  const std::vector<float> whole = file.tensor(e).to_f32_vector();
  int checked = 0;
  for (int dim = 0; dim < static_cast<int>(e.shape.size()); ++dim) {
    const int64_t extent = e.shape[size_t(dim)];
    for (int64_t b = 0; b <= extent; ++b)
      for (int64_t n = 0; b + n <= extent; ++n) {
        const TensorBlock block{dim, b, n};
        const std::vector<float> want = cut(whole, e.shape, block);
        std::vector<float> got(want.size(), -1.0f);
        read_tensor_block(file, e, block, got);
        EXPECT_EQ(bits(got), bits(want)) << e.name << " (" << dtype_name(e.dtype) << ") dim " << dim
                                         << " [" << b << ", " << b + n << ")";
        ++checked;
      }
  }
  return checked;
}

using test::error_of;

}  // namespace

TEST(SafetensorsBlock, EveryDtypeOfThePythonFixture) {
  const SafetensorsFile file =
      SafetensorsFile::open(test::source_path("tests/fixtures/safetensors/all_dtypes.safetensors"));
  std::set<DType> dtypes;
  int checked = 0;
  for (const TensorEntry& e : file.entries()) {
    if (e.shape.size() != 1 && e.shape.size() != 2) continue;
    checked += check_every_block(file, e);
    dtypes.insert(e.dtype);
  }
  EXPECT_GE(dtypes.size(), 4u);
  EXPECT_GT(checked, 0);
}

TEST(SafetensorsBlock, RowsColumnsAndElementsInEveryWeightDtype) {
  const std::string dir = test::fresh_output_dir("safetensors_block");
  Rng rng(7, 0);
  std::vector<NamedTensor> tensors;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    for (const Shape& shape : {Shape{6, 8}, Shape{5, 3}, Shape{12}, Shape{1, 7}}) {
      Tensor t = Tensor::zeros(DType::kF32, shape);
      for (float& v : t.mutable_values<float>()) v = rng.normal();
      t.mutable_values<float>()[0] = -0.0f;
      tensors.push_back(
          {std::string(dtype_name(dtype)) + "." + shape_to_string(shape), t.to(dtype)});
    }
  }
  write_safetensors(dir + "/t.safetensors", tensors);
  const SafetensorsFile file = SafetensorsFile::open(dir + "/t.safetensors");
  ASSERT_EQ(file.entries().size(), tensors.size());
  for (const TensorEntry& e : file.entries()) EXPECT_GT(check_every_block(file, e), 0);

  // The whole tensor as one block.
  const TensorEntry& e = *file.find("BF16.[6, 8]");
  std::vector<float> whole(48);
  read_tensor_block(file, e, whole_tensor_block(e), whole);
  EXPECT_EQ(bits(whole), bits(file.tensor(e).to_f32_vector()));
}

TEST(SafetensorsBlock, BadBlocksNameTheFileAndTensor) {
  const std::string dir = test::fresh_output_dir("safetensors_block_errors");
  write_safetensors(dir + "/t.safetensors", {{"m", Tensor::zeros(DType::kF32, {4, 6})},
                                             {"v", Tensor::zeros(DType::kBF16, {6})},
                                             {"cube", Tensor::zeros(DType::kF32, {2, 2, 2})}});
  const SafetensorsFile file = SafetensorsFile::open(dir + "/t.safetensors");
  std::vector<float> out(64);
  auto read = [&](const char* name, TensorBlock b, size_t n) {
    return error_of([&] { read_tensor_block(file, *file.find(name), b, {out.data(), n}); });
  };
  const std::string past = read("m", {0, 3, 2}, 12);
  EXPECT_NE(past.find("[safetensors]"), std::string::npos) << past;
  EXPECT_NE(past.find(dir + "/t.safetensors"), std::string::npos) << past;
  EXPECT_NE(past.find("tensor 'm'"), std::string::npos) << past;
  EXPECT_NE(past.find("[3, 5) along dim 0"), std::string::npos) << past;
  EXPECT_NE(read("m", {1, 5, 2}, 8).find("[5, 7) along dim 1"), std::string::npos);
  EXPECT_NE(read("m", {1, -1, 2}, 8).find("outside the shape"), std::string::npos);
  EXPECT_NE(read("m", {0, 1, 2}, 11).find("destination holds 11 floats, the block 12"),
            std::string::npos);
  EXPECT_NE(read("v", {1, 0, 2}, 2).find("tensor 'v': a block along dim 1"), std::string::npos);
  EXPECT_NE(read("cube", {0, 0, 1}, 4).find("tensor 'cube': shape [2, 2, 2] is not 1-D or 2-D"),
            std::string::npos);
  EXPECT_EQ(read("m", {1, 5, 1}, 4), "(no error)");
}

TEST(SafetensorsBlock, EveryRunOfElementsOfAnyShape) {
  const std::string dir = test::fresh_output_dir("safetensors_run");
  Rng rng(3, 0);
  std::vector<NamedTensor> tensors;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (const Shape& shape : {Shape{5, 3}, Shape{7}, Shape{2, 2, 3}}) {
      Tensor t = Tensor::zeros(DType::kF32, shape);
      for (float& v : t.mutable_values<float>()) v = rng.normal();
      tensors.push_back(
          {std::string(dtype_name(dtype)) + "." + shape_to_string(shape), t.to(dtype)});
    }
  write_safetensors(dir + "/t.safetensors", tensors);
  const SafetensorsFile file = SafetensorsFile::open(dir + "/t.safetensors");
  int checked = 0;
  for (const TensorEntry& e : file.entries()) {
    const std::vector<float> whole = file.tensor(e).to_f32_vector();
    const int64_t n = static_cast<int64_t>(whole.size());
    for (int64_t b = 0; b <= n; ++b)
      for (int64_t k = 0; b + k <= n; ++k, ++checked) {
        std::vector<float> got(size_t(k), -1.0f);
        read_tensor_run(file, e, b, got);
        EXPECT_EQ(bits(got), bits({whole.begin() + b, whole.begin() + b + k}))
            << e.name << " [" << b << ", " << b + k << ")";
      }
  }
  EXPECT_GT(checked, 0);
  std::vector<float> out(4);
  const std::string past =
      error_of([&] { read_tensor_run(file, *file.find("F32.[5, 3]"), 13, out); });
  EXPECT_NE(past.find("[safetensors] " + dir + "/t.safetensors: tensor 'F32.[5, 3]'"),
            std::string::npos)
      << past;
  EXPECT_NE(past.find("the elements [13, 17) are outside its 15 elements"), std::string::npos)
      << past;
  EXPECT_NE(error_of([&] {
              read_tensor_run(file, *file.find("F32.[7]"), -1, out);
            }).find("[-1, 3) are outside"),
            std::string::npos);
}

}  // namespace sft
