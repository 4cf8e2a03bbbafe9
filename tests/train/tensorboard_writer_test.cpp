// Event files byte-identical to what the tensorboard package writes for the same scalars
// (tools/make_tensorboard_goldens.py); `--check` there reads our files back with TensorBoard.
#include "train/tensorboard_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/crc32c.h"
#include "io/json.h"
#include "test_paths.h"

namespace sft {

namespace {
std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST(Crc32c, KnownVectors) {
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(std::as_bytes(std::span(digits.data(), digits.size()))),
            0xE3069283u);  // RFC 3720 check value
  EXPECT_EQ(crc32c({}), 0u);
}

TEST(TensorBoardWriter, RecordsMatchTheTensorboardPackage) {
  const Json golden =
      read_json_file(test::source_path("tests/fixtures/tensorboard/golden.json"), "test");
  const double wall0 = golden["wall_time0"];
  std::string ours = encode_tfrecord(encode_file_version_event(wall0));
  int i = 0;
  for (const Json& s : golden["scalars"]) {
    ours += encode_tfrecord(
        encode_scalar_event(s[0].get<std::string>(), s[1].get<float>(), s[2], wall0 + i++));
  }
  EXPECT_EQ(ours, read_bytes(test::source_path("tests/fixtures/tensorboard/golden.tfevents")));
}

TEST(TensorBoardWriter, WritesAFlushedEventFile) {
  const std::string dir = test::fresh_output_dir("tensorboard");
  std::string path;
  {
    TensorBoardWriter writer(dir + "/runs", 1764400000.0);
    writer.add_scalar("train/loss", 2.5f, 1, 1764400001.0);
    path = writer.path();
    // Flushed per record: readable before the writer closes.
    EXPECT_EQ(read_bytes(path).size(),
              encode_tfrecord(encode_file_version_event(1764400000.0)).size() +
                  encode_tfrecord(encode_scalar_event("train/loss", 2.5f, 1, 1764400001.0)).size());
  }
  EXPECT_EQ(
      std::filesystem::path(path).filename().string().rfind("events.out.tfevents.1764400000.", 0),
      0u);
}

}  // namespace sft
