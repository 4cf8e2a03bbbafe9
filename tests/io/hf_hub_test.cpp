#include "io/hf_hub.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "scoped_env.h"
#include "test_paths.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

using test::ScopedEnv;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

// A blob and a relative link to it, as huggingface_hub writes them.
void cache_file(const fs::path& repo, const std::string& file, const std::string& etag,
                const std::string& content) {
  fs::create_directories(repo / "blobs");
  std::ofstream(repo / "blobs" / etag) << content;
  const fs::path link = repo / "snapshots" / kCommit / file;
  fs::create_directories(link.parent_path());
  fs::create_symlink((repo / "blobs" / etag).lexically_relative(link.parent_path()), link);
}

std::string make_cache(const std::string& root) {
  fs::path repo = fs::path(root) / "models--Org--Tiny";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main")
      << kCommit;  // huggingface_hub writes no newline; tolerate either
  cache_file(repo, "config.json", "a1", "{}");
  cache_file(repo, "model.safetensors", std::string(64, 'b'), "weights");
  const fs::path data = fs::path(root) / "datasets--org--data";
  fs::create_directories(data / "refs");
  std::ofstream(data / "refs" / "main") << kCommit << "\n";
  cache_file(data, "data/train-00000-of-00001.jsonl", "c3", "{\"text\": \"x\"}\n");
  return (repo / "snapshots" / kCommit).string();
}

}  // namespace

TEST(HfHub, CacheDirFollowsTheEnvironmentPrecedence) {
  ScopedEnv cache("HF_HUB_CACHE", "/a/hub"), home("HF_HOME", "/b"), xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(hf_hub_cache_dir(), "/a/hub");
  {
    ScopedEnv no_cache("HF_HUB_CACHE", nullptr);
    EXPECT_EQ(hf_hub_cache_dir(), "/b/hub");
    ScopedEnv no_home("HF_HOME", nullptr), user_home("HOME", "/home/u");
    EXPECT_EQ(hf_hub_cache_dir(), "/home/u/.cache/huggingface/hub");
  }
}

TEST(HfHub, ResolvesLocalFoldersAndCachedRepos) {
  const std::string root = test::fresh_output_dir("hub_cache");
  const std::string snapshot = make_cache(root);
  ScopedEnv cache("HF_HUB_CACHE", root.c_str()), offline("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(resolve_hub_folder(root, HubRepoType::kModel), root);  // a folder is used as is
  EXPECT_EQ(resolve_hub_folder("Org/Tiny", HubRepoType::kModel), snapshot);
  EXPECT_EQ(resolve_hub_folder("Org/Tiny", HubRepoType::kModel, kCommit), snapshot);
  EXPECT_EQ(resolve_hub_folder("org/data", HubRepoType::kDataset),
            (fs::path(root) / "datasets--org--data" / "snapshots" / kCommit).string());
  // A snapshot without weights is not what a run needs: offline, that is an error.
  fs::remove(fs::path(snapshot) / "model.safetensors");
  EXPECT_THROW(resolve_hub_folder("Org/Tiny", HubRepoType::kModel), Error);
}

TEST(HfHub, MissingRepoSaysWhereItLooked) {
  const std::string root = test::fresh_output_dir("hub_empty");
  ScopedEnv cache("HF_HUB_CACHE", root.c_str()), offline("HF_HUB_OFFLINE", "1");
  try {
    resolve_hub_folder("Qwen/Qwen3-0.6B", HubRepoType::kModel);
    FAIL();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(root + "/models--Qwen--Qwen3-0.6B/refs/main"), std::string::npos)
        << message;
    EXPECT_NE(message.find("HF_HUB_OFFLINE=1 forbids downloading"), std::string::npos) << message;
  }
  EXPECT_THROW(resolve_hub_folder("./not/here", HubRepoType::kModel), Error);
  EXPECT_THROW(resolve_hub_folder("a/b/c", HubRepoType::kModel), Error);
}

}  // namespace sft
