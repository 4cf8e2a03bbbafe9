// train/preflight.h: what `sft train` checks before any work, and how a failed run without a
// checkpoint leaves its output_dir.
#include "train/preflight.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "test_paths.h"
#include "train/checkpoint_dir.h"

namespace sft {

namespace {

namespace fs = std::filesystem;

TrainingArgs args_for(const std::string& out) {
  TrainingArgs a;
  a.model_name_or_path = test::source_path("tests/fixtures/generate_text");
  a.dataset_name = test::source_path("tests/fixtures/train_cli/train.jsonl");
  a.output_dir = out;
  return a;
}

std::string error_of(const TrainingArgs& a) {
  try {
    preflight_train(a);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Preflight, LocalLookingNamesAreNeverHubIds) {
  for (const char* path : {"./data", "../x", "/abs", "~/d", "train.jsonl", "data/train.jsonl",
                           "d/x.parquet", "t.json", "."})
    EXPECT_TRUE(looks_like_local_path(path)) << path;
  for (const char* id : {"trl-lib/Capybara", "Qwen/Qwen3-0.6B", "gpt2"})
    EXPECT_FALSE(looks_like_local_path(id)) << id;
}

TEST(Preflight, ChecksPathsAndOutputDirBeforeWork) {
  const std::string dir = test::fresh_output_dir("preflight_checks");
  EXPECT_EQ(error_of(args_for(dir + "/new")), "");
  EXPECT_FALSE(fs::exists(dir + "/new"));  // checking creates nothing
  TrainingArgs a = args_for(dir + "/new");
  a.dataset_name = "data/missing.jsonl";
  EXPECT_NE(error_of(a).find("--dataset_name data/missing.jsonl: dataset file not found"),
            std::string::npos)
      << error_of(a);
  a = args_for(dir + "/new");
  a.model_name_or_path = "./nowhere";
  EXPECT_NE(error_of(a).find("model folder not found"), std::string::npos) << error_of(a);
  a = args_for("/proc/sft_preflight");
  EXPECT_NE(error_of(a).find("output_dir /proc/sft_preflight is not writable"), std::string::npos)
      << error_of(a);
  a = args_for(dir + "/new");
  a.lr_scheduler_type = "cosine_with_min_lr";  // needs min_lr or min_lr_rate
  EXPECT_THROW(preflight_train(a), UsageError);
  fs::create_directories(dir + "/used");
  std::ofstream(dir + "/used/notes.txt") << "x";
  const std::string message = error_of(args_for(dir + "/used"));
  EXPECT_NE(message.find("already exists and is not empty"), std::string::npos) << message;
  EXPECT_EQ(message.find("resume"), std::string::npos) << "no checkpoint, no resume hint";
  a = args_for(dir + "/used");
  a.resume_from_checkpoint = "true";
  EXPECT_NE(error_of(a).find("no complete checkpoint in"), std::string::npos);
  a.resume_from_checkpoint = std::nullopt;
  a.overwrite_output_dir = true;
  EXPECT_EQ(error_of(a), "");
}

TEST(Preflight, AFailedRunWithoutCheckpointLeavesTheFolderAsFound) {
  const std::string dir = test::fresh_output_dir("preflight_restore");
  // A folder the run created: removed with everything in it.
  const OutputDirBefore fresh = preflight_train(args_for(dir + "/fresh"));
  fs::create_directories(dir + "/fresh/runs/x");
  std::ofstream(dir + "/fresh/metrics.jsonl") << "";
  EXPECT_EQ(restore_output_dir(fresh), 2);
  EXPECT_FALSE(fs::exists(dir + "/fresh"));
  // An overwritten folder: only what the run added goes.
  fs::create_directories(dir + "/kept");
  std::ofstream(dir + "/kept/notes.txt") << "x";
  TrainingArgs a = args_for(dir + "/kept");
  a.overwrite_output_dir = true;
  const OutputDirBefore kept = preflight_train(a);
  std::ofstream(dir + "/kept/metrics.jsonl") << "";
  EXPECT_EQ(restore_output_dir(kept), 1);
  EXPECT_TRUE(fs::exists(dir + "/kept/notes.txt"));
  EXPECT_FALSE(fs::exists(dir + "/kept/metrics.jsonl"));
  // With a complete checkpoint the run can be resumed: nothing is removed.
  const OutputDirBefore resumable = preflight_train(args_for(dir + "/ckpt"));
  save_checkpoint(dir + "/ckpt", 2, [](const std::string& f) { std::ofstream(f + "/w") << "w"; });
  std::ofstream(dir + "/ckpt/metrics.jsonl") << "{}\n";
  EXPECT_EQ(restore_output_dir(resumable), 0);
  EXPECT_TRUE(fs::exists(dir + "/ckpt/metrics.jsonl"));
}

}  // namespace sft
