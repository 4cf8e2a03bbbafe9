// Event files byte-identical to what the tensorboard package writes for the same scalars
// (tools/make_tensorboard_goldens.py); `--check` there reads our files back with TensorBoard.
#include "train/tensorboard_writer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
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

// The "args" / "model_config" text summaries, byte for byte as torch's SummaryWriter.add_text
// (what transformers' TensorBoardCallback calls) serializes them.
TEST(TensorBoardWriter, TextEventsMatchTorchAddText) {
  const Json golden =
      read_json_file(test::source_path("tests/fixtures/tensorboard/golden.json"), "test");
  ASSERT_FALSE(golden["texts"].empty());
  for (const Json& t : golden["texts"]) {
    SCOPED_TRACE(t["tag"].get<std::string>());
    const std::string ours = encode_text_event(
        t["tag"].get<std::string>(), t["text"].get<std::string>(), t["step"], t["wall_time"]);
    std::string hex;
    for (unsigned char c : ours) {
      static const char* digits = "0123456789abcdef";
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
    EXPECT_EQ(hex, t["event_hex"].get<std::string>());
  }
}

// transformers 5's default_logdir: runs/<%b%d_%H-%M-%S in local time>_<host>.
TEST(TensorBoardWriter, DefaultDirIsTransformersRunsDateHost) {
  const char* tz = std::getenv("TZ");
  const std::string saved = tz ? tz : "";
  setenv("TZ", "UTC", 1);
  tzset();
  // 2026-12-01 10:00:05 UTC
  EXPECT_EQ(default_tensorboard_dir("out", 1796119205, "host"), "out/runs/Dec01_10-00-05_host");
  EXPECT_EQ(default_tensorboard_dir("/a/b/", 1796119205 + 86400 * 40, "n1"),
            "/a/b/runs/Jan10_10-00-05_n1");
  if (tz)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
  EXPECT_FALSE(host_name().empty());
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
