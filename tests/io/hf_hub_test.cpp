#include "io/hf_hub.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "test_paths.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the scope of a test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string make_cache(const std::string& root) {
  fs::path repo = fs::path(root) / "models--Org--Tiny";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / kCommit);
  std::ofstream(repo / "refs" / "main")
      << kCommit;  // huggingface_hub writes no newline; tolerate either
  fs::create_directories(fs::path(root) / "datasets--org--data" / "snapshots" / kCommit);
  fs::create_directories(fs::path(root) / "datasets--org--data" / "refs");
  std::ofstream(fs::path(root) / "datasets--org--data" / "refs" / "main") << kCommit << "\n";
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
  ScopedEnv cache("HF_HUB_CACHE", root.c_str());
  EXPECT_EQ(resolve_hub_folder(root, HubRepoType::kModel), root);  // a folder is used as is
  EXPECT_EQ(resolve_hub_folder("Org/Tiny", HubRepoType::kModel), snapshot);
  EXPECT_EQ(resolve_hub_folder("Org/Tiny", HubRepoType::kModel, kCommit), snapshot);
  EXPECT_EQ(resolve_hub_folder("org/data", HubRepoType::kDataset),
            (fs::path(root) / "datasets--org--data" / "snapshots" / kCommit).string());
}

TEST(HfHub, MissingRepoSaysWhereItLooked) {
  const std::string root = test::fresh_output_dir("hub_empty");
  ScopedEnv cache("HF_HUB_CACHE", root.c_str());
  try {
    resolve_hub_folder("Qwen/Qwen3-0.6B", HubRepoType::kModel);
    FAIL();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(root + "/models--Qwen--Qwen3-0.6B/refs/main"), std::string::npos)
        << message;
    EXPECT_NE(message.find("`hf download Qwen/Qwen3-0.6B`"), std::string::npos)
        << message;
  }
  EXPECT_THROW(resolve_hub_folder("./not/here", HubRepoType::kModel), Error);
  EXPECT_THROW(resolve_hub_folder("a/b/c", HubRepoType::kModel), Error);
}

}  // namespace sft
