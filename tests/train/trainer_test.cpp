// The trainer on a tiny random Llama and in-memory rows: HF's loss normalisation (1×GAS8 ==
// 8×GAS1), bit-exact resume (from a checkpoint, after a stop request, after SIGKILL during a
// save), a transformers / TRL checkpoint continued (its weights and position, fresh Adam
// moments), non-finite steps, evaluation and the files a run leaves.
#include "train/trainer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "memory_dataset.h"
#include "test_paths.h"
#include "train/checkpoint_dir.h"
#include "train/stop_signal.h"
#include "train/tensorboard_writer.h"

namespace sft {
namespace {

namespace fs = std::filesystem;

TrainingArgs base_args(const std::string& out) {
  TrainingArgs a;
  a.model_name_or_path = "tiny";
  a.dataset_name = "memory";
  a.output_dir = out;
  a.max_steps = 6;
  a.per_device_train_batch_size = 2;
  a.gradient_accumulation_steps = 2;
  a.learning_rate = 1e-2;
  a.warmup_steps = 1;
  a.logging_steps = 1;
  a.save_steps = 2;
  a.gradient_checkpointing = false;
  a.weight_decay = 0.1;
  return a;
}

struct RunResult {
  TrainResult result;
  std::vector<Json> log;  // log_history entries with a training loss
  std::vector<float> params;
};

RunResult train_once(const TrainingArgs& args, const data::PreparedDataset& data,
                     const data::PreparedDataset* eval = nullptr, bool shuffle = true,
                     model::Transformer* use_model = nullptr) {
  model::Transformer fresh = model::Transformer::random(test::tiny_config(), 5);
  model::Transformer& m = use_model ? *use_model : fresh;
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &args;
  s.model = &m;
  s.train = &data;
  s.eval = eval;
  s.comm = comm.get();
  s.shuffle = shuffle;
  s.console_progress = false;
  Trainer t(s);
  RunResult r;
  r.result = t.train();
  for (const Json& e : t.state().log_history)
    if (e.contains("loss")) r.log.push_back(e);
  for (const NamedTensor& p : m.parameters()) {
    const auto v = p.tensor.values<float>();
    r.params.insert(r.params.end(), v.begin(), v.end());
  }
  return r;
}

const test::MemoryDataset& dataset() {
  static const test::MemoryDataset d = test::random_dataset(11, 48, 21);
  return d;
}

TEST(Trainer, OneMicroBatchOfEightEqualsEightAccumulatedMicroBatches) {
  TrainingArgs a = base_args(test::fresh_output_dir("trainer_gas_a"));
  a.max_steps = 1;
  a.save_strategy = "no";
  a.per_device_train_batch_size = 8;
  a.gradient_accumulation_steps = 1;
  TrainingArgs b = a;
  b.output_dir = test::fresh_output_dir("trainer_gas_b");
  b.per_device_train_batch_size = 1;
  b.gradient_accumulation_steps = 8;
  const RunResult ra = train_once(a, dataset(), nullptr, /*shuffle=*/false);
  const RunResult rb = train_once(b, dataset(), nullptr, /*shuffle=*/false);
  ASSERT_EQ(ra.log.size(), 1u);
  ASSERT_EQ(rb.log.size(), 1u);
  const double la = ra.log[0]["loss"], lb = rb.log[0]["loss"];
  EXPECT_NEAR(la, lb, 1e-6 * la);
  EXPECT_NEAR(ra.log[0]["grad_norm"].get<double>(), rb.log[0]["grad_norm"].get<double>(), 1e-5);
  ASSERT_EQ(ra.params.size(), rb.params.size());
  double max_diff = 0;
  for (size_t i = 0; i < ra.params.size(); ++i)
    max_diff = std::max(max_diff, double(std::fabs(ra.params[i] - rb.params[i])));
  EXPECT_LT(max_diff, 1e-6);
  // The step's loss is Σ loss / N over all 8 rows: the mean over trained tokens.
  EXPECT_GT(la, 3.0);
  EXPECT_LT(la, 4.5);  // ≈ ln(48) for a random model
}

void expect_same_log(const std::vector<Json>& want, const std::vector<Json>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(want[i].dump(), got[i].dump()) << "entry " << i;
}

TEST(Trainer, ResumeFromACheckpointContinuesBitForBit) {
  const std::string dir_a = test::fresh_output_dir("trainer_resume_a");
  const RunResult full = train_once(base_args(dir_a), dataset());
  ASSERT_EQ(full.log.size(), 6u);
  EXPECT_TRUE(fs::exists(dir_a + "/checkpoint-2/" + kCheckpointMarker));
  EXPECT_TRUE(fs::exists(dir_a + "/checkpoint-6/" + kCheckpointMarker));
  EXPECT_TRUE(fs::exists(dir_a + "/trainer_state.json"));
  EXPECT_TRUE(fs::exists(dir_a + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(dir_a + "/training_curves.svg"));
  EXPECT_DOUBLE_EQ(full.log.back()["epoch"].get<double>(), 2.0);  // 3 updates per epoch

  TrainingArgs b = base_args(test::fresh_output_dir("trainer_resume_b"));
  b.resume_from_checkpoint = dir_a + "/checkpoint-2";
  const RunResult resumed = train_once(b, dataset());
  expect_same_log(full.log, resumed.log);
  EXPECT_EQ(full.params, resumed.params);
}

// A TRL checkpoint-<step> made from an sft one: transformers' files (the pickles as stand-ins),
// the weights and trainer_state.json (the same format), and a tokenizer; no sft marker,
// optimizer.safetensors or training_state.json.
void write_trl_checkpoint_from(const std::string& sft_checkpoint, const std::string& folder) {
  fs::create_directories(folder);
  for (const char* f : {"model.safetensors", "config.json", "trainer_state.json"})
    fs::copy_file(sft_checkpoint + "/" + f, folder + "/" + f);
  fs::copy_file(test::source_path("tests/fixtures/generate_text/tokenizer.json"),
                folder + "/tokenizer.json");
  for (const char* f : {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"})
    std::ofstream(folder + "/" + f) << "PK";
}

TEST(Trainer, ContinuesATrlCheckpointFromItsWeightsAndPositionWithFreshMoments) {
  const std::string dir_a = test::fresh_output_dir("trainer_trl_a");
  const RunResult full = train_once(base_args(dir_a), dataset());
  const std::string trl = test::fresh_output_dir("trainer_trl_ckpt") + "/checkpoint-2";
  write_trl_checkpoint_from(dir_a + "/checkpoint-2", trl);
  ASSERT_TRUE(is_continuable_trl_checkpoint(trl));
  TrainingArgs b = base_args(test::fresh_output_dir("trainer_trl_b") + "/out");
  b.resume_from_checkpoint = trl;
  model::Transformer from_trl = model::Transformer::load(trl);  // as `sft train` loads it
  const RunResult continued = train_once(b, dataset(), nullptr, true, &from_trl);
  // The logged history up to step 2 is the TRL run's; step 3 sees the same weights, rows and
  // learning rate (its loss is before the update); later steps differ: Adam starts afresh.
  ASSERT_EQ(continued.log.size(), 6u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(continued.log[i].dump(), full.log[i].dump());
  for (const char* key : {"loss", "learning_rate", "epoch", "grad_norm", "mean_token_accuracy"})
    EXPECT_EQ(continued.log[2][key].dump(), full.log[2][key].dump()) << key;
  EXPECT_EQ(continued.log[2]["step"], 3);
  EXPECT_NE(continued.log[3]["loss"].dump(), full.log[3]["loss"].dump());
  EXPECT_EQ(continued.result.global_step, 6);
  // Another batch layout than the TRL run's is refused naming the mismatch.
  TrainingArgs c = base_args(test::fresh_output_dir("trainer_trl_c"));
  c.resume_from_checkpoint = trl;
  c.gradient_accumulation_steps = 1;
  try {
    train_once(c, dataset(), nullptr, true, &from_trl);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer_state.json: epoch: step 2 ended at epoch"),
              std::string::npos)
        << e.what();
  }
}

TEST(Trainer, StopRequestSavesAndResumeFinishesTheSameRun) {
  const RunResult full = train_once(base_args(test::fresh_output_dir("trainer_stop_a")), dataset());
  TrainingArgs b = base_args(test::fresh_output_dir("trainer_stop_b"));
  request_stop();
  const RunResult stopped = train_once(b, dataset());
  clear_stop_request();
  EXPECT_TRUE(stopped.result.interrupted);
  EXPECT_EQ(stopped.result.global_step, 1);
  EXPECT_TRUE(fs::exists(b.output_dir + "/checkpoint-1/" + kCheckpointMarker));
  b.resume_from_checkpoint = "true";
  const RunResult resumed = train_once(b, dataset());
  expect_same_log(full.log, resumed.log);
  EXPECT_EQ(full.params, resumed.params);
  // metrics.jsonl: one line per step, no duplicate of step 1.
  std::ifstream in(b.output_dir + "/metrics.jsonl");
  std::string line;
  int64_t expect_step = 1;
  while (std::getline(in, line)) {
    const Json e = Json::parse(line);
    if (!e.contains("loss")) continue;
    EXPECT_EQ(e["step"].get<int64_t>(), expect_step++);
    EXPECT_TRUE(e.contains("tokens_per_second") && e.contains("gflops"));
  }
  EXPECT_EQ(expect_step, 7);
}

// Runs in a child process (see the next test): trains until SIGKILL during checkpoint-4's save.
TEST(TrainerChild, TrainUntilKilled) {
  const char* dir = std::getenv("SFT_TRAINER_CHILD_DIR");
  if (!dir) GTEST_SKIP() << "only run as a child of KillDuringSave";
  train_once(base_args(dir), dataset());
}

TEST(Trainer, ResumeAfterSigkillDuringASaveUsesTheLastCompleteCheckpoint) {
  const RunResult full = train_once(base_args(test::fresh_output_dir("trainer_kill_a")), dataset());
  const std::string dir = test::fresh_output_dir("trainer_kill_b");
  // The child's environment is built before fork: only exec runs in the child.
  std::vector<std::string> env_text = {"SFT_TRAINER_CHILD_DIR=" + dir,
                                       "SFT_TEST_KILL_DURING_SAVE=4"};
  for (char** e = environ; *e; ++e) env_text.push_back(*e);
  std::vector<char*> env;
  for (std::string& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  char arg0[] = "sft_train_tests";
  char arg1[] = "--gtest_filter=TrainerChild.TrainUntilKilled";
  char* argv[] = {arg0, arg1, nullptr};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execve("/proc/self/exe", argv, env.data());
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(fs::exists(dir + "/checkpoint-2/" + kCheckpointMarker));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint-4"));
  ASSERT_EQ(latest_checkpoint(dir)->step, 2);

  TrainingArgs b = base_args(dir);
  b.resume_from_checkpoint = "true";
  const RunResult resumed = train_once(b, dataset());
  expect_same_log(full.log, resumed.log);
  EXPECT_EQ(full.params, resumed.params);
}

TEST(Trainer, NonFiniteLossStopsNamingTheStep) {
  model::Transformer m = model::Transformer::random(test::tiny_config(), 5);
  m.param_data("model.norm.weight")[0] = NAN;
  TrainingArgs a = base_args(test::fresh_output_dir("trainer_nan"));
  try {
    train_once(a, dataset(), nullptr, true, &m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite step 1"), std::string::npos) << e.what();
  }
  a.skip_nonfinite_steps = true;
  a.output_dir = test::fresh_output_dir("trainer_nan_skip");
  try {
    train_once(a, dataset(), nullptr, true, &m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in a row"), std::string::npos) << e.what();
  }
}

TEST(Trainer, EvaluatesAndRotatesCheckpoints) {
  TrainingArgs a = base_args(test::fresh_output_dir("trainer_eval"));
  a.eval_strategy = "steps";
  a.eval_steps = 3;
  a.save_total_limit = 1;
  a.report_to = {"tensorboard"};
  const test::MemoryDataset eval = test::random_dataset(5, 48, 99);
  model::Transformer m = model::Transformer::random(test::tiny_config(), 5);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &a;
  s.model = &m;
  s.train = &dataset();
  s.eval = &eval;
  s.comm = comm.get();
  s.console_progress = false;
  Trainer t(s);
  t.train();
  int evals = 0;
  for (const Json& e : t.state().log_history)
    if (e.contains("eval_loss")) {
      ++evals;
      EXPECT_TRUE(std::isfinite(e["eval_loss"].get<double>()));
      EXPECT_TRUE(e.contains("eval_mean_token_accuracy") && e.contains("eval_runtime"));
    }
  EXPECT_EQ(evals, 2);  // steps 3 and 6
  EXPECT_TRUE(t.state().log_history.back().contains("train_loss"));
  EXPECT_EQ(list_checkpoints(a.output_dir).size(), 1u);
  // TensorBoard in transformers 5's folder per run: runs/<date>_<host>.
  ASSERT_TRUE(fs::is_directory(a.output_dir + "/runs"));
  int runs = 0;
  for (const auto& run : fs::directory_iterator(a.output_dir + "/runs")) {
    ++runs;
    EXPECT_NE(run.path().filename().string().find("_" + host_name()), std::string::npos);
  }
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace sft

namespace sft {
namespace {

TEST(Trainer, FailedSaveIsAClearErrorAndLeavesNoPartialCheckpoint) {
  TrainingArgs a = base_args(test::fresh_output_dir("trainer_failed_save"));
  model::Transformer m = model::Transformer::random(test::tiny_config(), 5);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &a;
  s.model = &m;
  s.train = &dataset();
  s.comm = comm.get();
  s.console_progress = false;
  s.export_options.chat_template_path = a.output_dir + "/missing.jinja";  // the save fails
  Trainer t(s);
  try {
    t.train();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("saving checkpoint-2 failed"), std::string::npos) << what;
    // The first save: no checkpoint to resume from, so no resume hint (train/preflight.h).
    EXPECT_NE(what.find("no checkpoint was completed"), std::string::npos) << what;
    EXPECT_EQ(what.find("--resume_from_checkpoint"), std::string::npos) << what;
  }
  EXPECT_TRUE(list_checkpoints(a.output_dir).empty());
  for (const auto& entry : fs::directory_iterator(a.output_dir))
    EXPECT_EQ(entry.path().filename().string().find(".checkpoint"), std::string::npos)
        << entry.path();
}

}  // namespace
}  // namespace sft
