#include "train/checkpoint_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "test_paths.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

void write_weights(const std::string& folder, const std::string& content) {
  std::ofstream(folder + "/weights.bin") << content;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CheckpointDir : public testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::kError);  // the warnings below are expected
    dir_ = test::fresh_output_dir(testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { set_log_level(saved_level_); }
  std::string dir_;
  LogLevel saved_level_;
};

}  // namespace

TEST_F(CheckpointDir, SavesListsAndFindsTheLatest) {
  for (int step : {10, 2, 30}) {
    save_checkpoint(dir_, step,
                    [&](const std::string& f) { write_weights(f, "w" + std::to_string(step)); });
  }
  std::vector<CheckpointInfo> all = list_checkpoints(dir_);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].step, 2);  // numeric, not lexicographic order
  EXPECT_EQ(all[2].step, 30);
  EXPECT_EQ(read(latest_checkpoint(dir_)->path + "/weights.bin"), "w30");
  EXPECT_TRUE(fs::is_regular_file(all[1].path + "/" + kCheckpointMarker));
}

TEST_F(CheckpointDir, AFailedSaveLeavesEarlierCheckpointsAndNoDebris) {
  save_checkpoint(dir_, 1, [&](const std::string& f) { write_weights(f, "good"); });
  EXPECT_THROW(save_checkpoint(dir_, 2,
                               [&](const std::string& f) {
                                 write_weights(f, "half");
                                 throw Error("test", "disk full");
                               }),
               Error);
  EXPECT_EQ(list_checkpoints(dir_).size(), 1u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  EXPECT_EQ(read(latest_checkpoint(dir_)->path + "/weights.bin"), "good");
}

TEST_F(CheckpointDir, InterruptedSavesAreIgnoredAndCleanedUp) {
  save_checkpoint(dir_, 5, [&](const std::string& f) { write_weights(f, "five"); });
  // What a SIGKILL in the middle of saving step 6 leaves behind:
  fs::create_directories(dir_ + "/.checkpoint-6.tmp-12345");
  write_weights(dir_ + "/.checkpoint-6.tmp-12345", "partial");
  // And a folder with the right name but no marker (copied by hand, or not ours):
  fs::create_directories(dir_ + "/checkpoint-7");
  EXPECT_EQ(latest_checkpoint(dir_)->step, 5);
  save_checkpoint(dir_, 8, [&](const std::string& f) { write_weights(f, "eight"); });
  EXPECT_FALSE(fs::exists(dir_ + "/.checkpoint-6.tmp-12345"));
  EXPECT_EQ(latest_checkpoint(dir_)->step, 8);
}

TEST_F(CheckpointDir, ResavingAStepReplacesIt) {
  save_checkpoint(dir_, 3, [&](const std::string& f) { write_weights(f, "old"); });
  save_checkpoint(dir_, 3, [&](const std::string& f) { write_weights(f, "new"); });
  EXPECT_EQ(list_checkpoints(dir_).size(), 1u);
  EXPECT_EQ(read(dir_ + "/checkpoint-3/weights.bin"), "new");
}

TEST_F(CheckpointDir, RotationKeepsTheNewest) {
  for (int step = 1; step <= 5; ++step) save_checkpoint(dir_, step, [](const std::string&) {});
  EXPECT_EQ(rotate_checkpoints(dir_, 2).size(), 3u);
  std::vector<CheckpointInfo> left = list_checkpoints(dir_);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].step, 4);
  EXPECT_EQ(left[1].step, 5);
  EXPECT_THROW(rotate_checkpoints(dir_, 0), Error);
}

// A folder TRL's SFTTrainer saved (transformers' Trainer._save_checkpoint), as far as the
// file names go.
void write_trl_checkpoint(const std::string& folder, bool with_weights) {
  fs::create_directories(folder);
  std::ofstream(folder + "/trainer_state.json") << R"({"global_step": 4, "max_steps": 10})";
  for (const char* f : {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"})
    std::ofstream(folder + "/" + f) << "pickle";
  if (!with_weights) return;
  std::ofstream(folder + "/config.json") << "{}";
  std::ofstream(folder + "/model.safetensors") << "weights";
}

TEST_F(CheckpointDir, TrlCheckpointIsNamedWithWhatSftCanDoWithIt) {
  const std::string trl = dir_ + "/checkpoint-4";
  write_trl_checkpoint(trl, true);
  const std::string msg = explain_not_a_checkpoint(trl);
  EXPECT_NE(msg.find("a transformers / TRL Trainer checkpoint at step 4 of 10 (trainer_state.json"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("optimizer.pt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--model_name_or_path " + trl), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not a complete"), std::string::npos) << msg;

  const std::string bare = dir_ + "/no_weights";
  write_trl_checkpoint(bare, false);
  EXPECT_NE(explain_not_a_checkpoint(bare).find("resume it with TRL"), std::string::npos);
  EXPECT_EQ(explain_not_a_checkpoint(bare).find("--model_name_or_path"), std::string::npos);
}

TEST_F(CheckpointDir, ModelFoldersMissingFoldersAndOthersAreTold) {
  const std::string model = dir_ + "/model";
  fs::create_directories(model);
  std::ofstream(model + "/config.json") << "{}";
  std::ofstream(model + "/model.safetensors") << "weights";
  EXPECT_NE(explain_not_a_checkpoint(model).find("a model folder, not a training checkpoint"),
            std::string::npos);
  EXPECT_NE(explain_not_a_checkpoint(model).find("--model_name_or_path " + model),
            std::string::npos);
  EXPECT_NE(explain_not_a_checkpoint(dir_ + "/nope").find("no such folder"), std::string::npos);
  fs::create_directories(dir_ + "/empty");
  EXPECT_NE(explain_not_a_checkpoint(dir_ + "/empty").find("not a complete sft checkpoint"),
            std::string::npos);
}

TEST_F(CheckpointDir, ResumeTrueNamesTheNewestTrlCheckpoint) {
  EXPECT_EQ(explain_foreign_checkpoints(dir_), "");
  write_trl_checkpoint(dir_ + "/checkpoint-2", true);
  write_trl_checkpoint(dir_ + "/checkpoint-10", true);
  fs::create_directories(dir_ + "/checkpoint-20");  // not a TRL checkpoint
  const std::string msg = explain_foreign_checkpoints(dir_);
  EXPECT_EQ(msg.rfind("; its checkpoint-10 is a transformers / TRL checkpoint", 0), 0u) << msg;
  EXPECT_NE(msg.find("--model_name_or_path " + dir_ + "/checkpoint-10"), std::string::npos) << msg;
  EXPECT_FALSE(latest_checkpoint(dir_));
  // With a tokenizer sft continues it: the hint names that resume.
  std::ofstream(dir_ + "/checkpoint-10/tokenizer.json") << "{}";
  EXPECT_NE(explain_foreign_checkpoints(dir_).find("(hint: --resume_from_checkpoint " + dir_ +
                                                   "/checkpoint-10 continues it"),
            std::string::npos)
      << explain_foreign_checkpoints(dir_);
}

}  // namespace sft
