// Writing: byte-identical to the Python library, atomic, and sharded like transformers.
// The files written here are kept under build/tests/output/ so that
// tools/check_safetensors_writer.py can load them with the Python library.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/safetensors.h"
#include "io/safetensors_test_util.h"
#include "test_paths.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The fixture's tensors rebuilt from their raw bytes, in name order (not file order).
std::vector<NamedTensor> fixture_tensors(const Json& expected) {
  std::vector<NamedTensor> out;
  for (const Json& t : expected["tensors"]) {
    Tensor tensor =
        Tensor::zeros(*parse_dtype(t["dtype"].get<std::string>()), t["shape"].get<Shape>());
    std::vector<std::byte> raw = test::from_hex(t["hex"].get<std::string>());
    if (!raw.empty()) std::memcpy(tensor.mutable_bytes(), raw.data(), raw.size());
    out.push_back({t["name"].get<std::string>(), tensor});
  }
  std::sort(out.begin(), out.end(),
            [](const NamedTensor& a, const NamedTensor& b) { return a.name < b.name; });
  return out;
}

std::vector<NamedTensor> small_model_tensors() {
  std::vector<NamedTensor> out;
  for (int i = 0; i < 5; ++i) {
    Tensor t = Tensor::zeros(DType::kF32, {16, 8});
    auto v = t.mutable_values<float>();
    for (size_t k = 0; k < v.size(); ++k)
      v[k] = static_cast<float>(i * 1000 + static_cast<int>(k)) * 0.5f;
    out.push_back({"layers." + std::to_string(i) + ".weight", t});
  }
  return out;
}

}  // namespace

TEST(SafetensorsWriter, ByteIdenticalToThePythonLibrary) {
  const std::string dir = "tests/fixtures/safetensors/";
  const Json expected =
      test::load_all_dtypes_expectation(test::source_path(dir + "all_dtypes.json"));
  const std::string out_dir = test::fresh_output_dir("writer_all_dtypes");
  const std::string out = out_dir + "/all_dtypes.safetensors";
  write_safetensors(out, fixture_tensors(expected),
                    expected["metadata"].get<std::map<std::string, std::string>>());
  EXPECT_EQ(read_bytes(out), read_bytes(test::source_path(dir + "all_dtypes.safetensors")));
  // Expectation for tools/check_safetensors_writer.py.
  std::ofstream(out_dir + "/all_dtypes.expected.json") << expected.dump(1);
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  const std::string out = test::fresh_output_dir("writer_roundtrip") + "/m.safetensors";
  std::vector<NamedTensor> tensors = small_model_tensors();
  write_safetensors(out, tensors, {{"format", "pt"}});
  SafetensorsFile file = SafetensorsFile::open(out);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(file.tensor(tensors[0].name).bytes()) % 8,
            0u);  // aligned data region
  for (const NamedTensor& t : tensors) {
    Tensor back = file.tensor(t.name);
    EXPECT_EQ(back.shape(), t.tensor.shape());
    EXPECT_EQ(0, std::memcmp(back.bytes(), t.tensor.bytes(), t.tensor.nbytes()));
  }
}

TEST(SafetensorsWriter, FailedWriteLeavesTheOldFileAndNoTempFile) {
  const std::string dir = test::fresh_output_dir("writer_atomic");
  const std::string out = dir + "/m.safetensors";
  write_safetensors(out, small_model_tensors());
  const std::string before = read_bytes(out);
  std::vector<NamedTensor> bad = small_model_tensors();
  bad.push_back(bad[0]);  // duplicate name: rejected before anything is written
  EXPECT_THROW(write_safetensors(out, bad), Error);
  EXPECT_EQ(read_bytes(out), before);
  EXPECT_THROW(write_safetensors(dir + "/missing_dir/m.safetensors", small_model_tensors()), Error);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "m.safetensors") << "left behind: " << entry.path();
  }
}

TEST(SafetensorsWriter, ShardsLikeTransformersAndReadsBack) {
  const std::string dir = test::fresh_output_dir("writer_sharded");
  std::vector<NamedTensor> tensors = small_model_tensors();  // 5 × 512 bytes
  std::vector<std::string> files =
      write_safetensors_sharded(dir, tensors, 1100, {{"format", "pt"}});
  ASSERT_EQ(files.size(), 4u);  // 2 + 2 + 1 tensors, then the index
  EXPECT_EQ(files[0], "model-00001-of-00003.safetensors");
  EXPECT_EQ(files[3], "model.safetensors.index.json");
  SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open_dir(dir);
  EXPECT_EQ(checkpoint.files().size(), 3u);
  for (const NamedTensor& t : tensors) {
    EXPECT_EQ(0,
              std::memcmp(checkpoint.tensor(t.name).bytes(), t.tensor.bytes(), t.tensor.nbytes()));
  }
  const Json index = read_json_file(dir + "/model.safetensors.index.json", "test");
  EXPECT_EQ(index["metadata"]["total_size"], 5 * 512);
  EXPECT_EQ(index["weight_map"]["layers.4.weight"], "model-00003-of-00003.safetensors");

  // Everything fits: one model.safetensors and no index.
  const std::string single = test::fresh_output_dir("writer_single");
  EXPECT_EQ(write_safetensors_sharded(single, tensors, 1 << 20),
            std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(SafetensorsCheckpoint::open_dir(single).names().size(), 5u);
}

}  // namespace sft
