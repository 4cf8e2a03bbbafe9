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
  EXPECT_EQ(message.find("--resume_from_checkpoint"), std::string::npos)
      << "no checkpoint, no resume hint";
  a = args_for(dir + "/used");
  a.resume_from_checkpoint = "true";
  EXPECT_NE(error_of(a).find("no complete sft checkpoint in"), std::string::npos);
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

// A folder as TRL's SFTTrainer saves checkpoint-<step>: the tiny model's weights (and, when
// asked, its tokenizer) beside transformers' Trainer files (their pickles are stand-ins: sft
// never reads them).
void write_trl_checkpoint(const std::string& folder, int64_t step, bool tokenizer) {
  fs::create_directories(folder);
  const std::string model = test::source_path("tests/fixtures/generate_text");
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    if (tokenizer || std::string_view(f).find("tokenizer") == std::string_view::npos)
      fs::copy_file(model + "/" + f, folder + "/" + f);
  std::ofstream(folder + "/trainer_state.json")
      << "{\"global_step\": " << step
      << ", \"max_steps\": 20, \"epoch\": 0.5, \"log_history\": []}";
  for (const char* f : {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"})
    std::ofstream(folder + "/" + f) << "PK";
}

TEST(Preflight, TrlCheckpointToResumeContinuesOrSaysWhatItIsAndTheCommandThatWorks) {
  const std::string dir = test::fresh_output_dir("preflight_trl_checkpoint");
  // With its weights and tokenizer sft continues it (trainer.h), in TRL's non-empty output_dir.
  const std::string whole = dir + "/trl1/checkpoint-10";
  write_trl_checkpoint(whole, 10, true);
  TrainingArgs a = args_for(dir + "/trl1");
  a.resume_from_checkpoint = whole;
  EXPECT_EQ(error_of(a), "");
  // Without a tokenizer: what it is, and what to do.
  const std::string bare = dir + "/trl2/checkpoint-10";
  write_trl_checkpoint(bare, 10, false);
  a = args_for(dir + "/trl2");
  a.resume_from_checkpoint = bare;
  const std::string msg = error_of(a);
  EXPECT_NE(msg.find("a transformers / TRL Trainer checkpoint at step 10 of 20"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("not a complete"), std::string::npos) << msg;
  EXPECT_NE(msg.find("copy the base model's tokenizer files"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--model_name_or_path " + bare + " instead of --resume_from_checkpoint"),
            std::string::npos)
      << msg;
  // output_dir holds the TRL run: a new run from the weights needs a new one.
  EXPECT_NE(msg.find("a new --output_dir (" + dir + "/trl2 is not empty)"), std::string::npos)
      << msg;
  // Both ways out work.
  TrainingArgs next = args_for(dir + "/from_trl");
  next.model_name_or_path = bare;
  EXPECT_EQ(error_of(next), "");
  fs::copy_file(test::source_path("tests/fixtures/generate_text/tokenizer.json"),
                bare + "/tokenizer.json");
  EXPECT_EQ(error_of(a), "");
}

TEST(Preflight, AHalfWrittenFirstSaveLeadsToOneCommandThatWorks) {
  // A run SIGKILLed during its first save: its files, and the save's temporary folder.
  const std::string dir = test::fresh_output_dir("preflight_half_saved") + "/out";
  fs::create_directories(dir + "/.checkpoint-2.tmp-4242");
  std::ofstream(dir + "/.checkpoint-2.tmp-4242/model.safetensors") << "half";
  std::ofstream(dir + "/metrics.jsonl") << "{}\n";
  TrainingArgs a = args_for(dir);
  a.resume_from_checkpoint = "true";
  const std::string resume = error_of(a);
  EXPECT_NE(resume.find("no complete sft checkpoint in " + dir), std::string::npos) << resume;
  EXPECT_NE(resume.find("half-written checkpoint (.checkpoint-2.tmp-4242)"), std::string::npos)
      << resume;
  EXPECT_EQ(resume.find("drop the flag"), std::string::npos) << "a run without it is refused";
  EXPECT_NE(resume.find("--overwrite_output_dir true"), std::string::npos) << resume;
  a.resume_from_checkpoint = std::nullopt;
  const std::string fresh = error_of(a);
  EXPECT_NE(fresh.find("already exists and is not empty"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find(".checkpoint-2.tmp-4242, half-written"), std::string::npos) << fresh;
  EXPECT_EQ(fresh.find("--resume_from_checkpoint true"), std::string::npos) << fresh;
  // The command both name works.
  a.overwrite_output_dir = true;
  EXPECT_EQ(error_of(a), "");
  // An empty output_dir: dropping the flag is the way.
  const std::string empty = test::fresh_output_dir("preflight_half_saved_empty");
  fs::create_directories(empty);
  a = args_for(empty);
  a.resume_from_checkpoint = "true";
  EXPECT_NE(error_of(a).find("drop the flag to start afresh"), std::string::npos) << error_of(a);
}

}  // namespace sft
