// --push_to_hub's client (io/hub/upload.h) against the tests' Hub: create, LFS, commit, and
// the pushed repo downloads back byte for byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/hub/snapshot.h"
#include "io/hub/upload.h"
#include "io/hub_server.h"
#include "test_paths.h"

namespace sft::hub {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kModel = test::source_path("tests/fixtures/generate_text");

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An output_dir as sft train leaves it: model files, a checkpoint and a hidden file.
std::string make_output_dir(const std::string& root) {
  const fs::path out = fs::path(root) / "out";
  fs::create_directories(out / "checkpoint-2");
  fs::create_directories(out / "runs" / "r1");
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(kModel) / f, out / f);
  std::ofstream(out / "checkpoint-2" / "optimizer.safetensors") << "state";
  std::ofstream(out / ".lock") << "";
  std::ofstream(out / "runs" / "r1" / "events.out.tfevents.1") << "events";
  return out.string();
}

TEST(HubUpload, PublishesTheRunButNotCheckpointsOrHiddenFiles) {
  const std::string root = test::fresh_output_dir("hub_upload_files");
  EXPECT_THAT(files_to_publish(make_output_dir(root)),
              ElementsAre("config.json", "model.safetensors", "runs/r1/events.out.tfevents.1",
                          "tokenizer.json", "tokenizer_config.json"));
}

TEST(HubUpload, PushesAFolderThatDownloadsBack) {
  const std::string root = test::fresh_output_dir("hub_upload_roundtrip");
  const std::string out = make_output_dir(root);
  test::HubTestServer server({});
  server.accept_uploads(root + "/hub_storage");
  setenv("HF_ENDPOINT", server.endpoint().c_str(), 1);
  unsetenv("HF_TOKEN");
  setenv("HF_TOKEN_PATH", "/nonexistent/token", 1);

  UploadOptions options;
  options.repo_id = "me/tiny-sft";
  options.retry = {3, 1, 5};
  EXPECT_THAT(
      [&] {
        try {
          push_folder(out, options);
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("--push_to_hub needs a token with write access"));

  options.token = "hf_test_token";
  const UploadResult first = push_folder(out, options);
  EXPECT_EQ(first.files, 5u);
  EXPECT_EQ(first.lfs_files, 1u);
  EXPECT_EQ(first.lfs_uploaded, 1u);
  EXPECT_EQ(first.commit, server.commit_of("me/tiny-sft"));
  // Again: the repo exists (409 is fine) and the Hub has the weights, so no LFS upload.
  const UploadResult second = push_folder(out, options);
  EXPECT_EQ(second.lfs_uploaded, 0u);

  SnapshotOptions down;
  down.retry = {3, 1, 5};
  down.progress = false;
  const std::string cache = root + "/cache";
  const std::string snapshot =
      download_snapshot(cache, {HubRepoType::kModel, "me/tiny-sft"}, "main", down);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_EQ(read(fs::path(snapshot) / f), read(fs::path(out) / f)) << f;

  options.token = "hf_wrong";
  EXPECT_THROW(push_folder(out, options), Error);
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_TOKEN_PATH");
}

}  // namespace
}  // namespace sft::hub
