// training_state.json's tp_size: a checkpoint records the tensor-parallel size it was written
// with; resuming with another one re-shards (one line in the log) and continues bit for bit,
// and a checkpoint from before tp_size existed resumes as tp_size 1, silently. (The
// multi-rank runs themselves are tests/parallel's, under mpirun.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "memory_dataset.h"
#include "test_paths.h"
#include "train/trainer.h"

namespace sft {
namespace {

TrainingArgs args_for(const std::string& out, int64_t max_steps) {
  TrainingArgs a;
  a.model_name_or_path = "tiny";
  a.dataset_name = "memory";
  a.output_dir = out;
  a.max_steps = max_steps;
  a.per_device_train_batch_size = 2;
  a.gradient_accumulation_steps = 1;
  a.learning_rate = 1e-2;
  a.logging_steps = 1;
  a.save_steps = 2;
  a.gradient_checkpointing = false;
  return a;
}

// Trains a fresh tiny model; returns its final weights (flat) and what it wrote to stderr.
std::pair<std::vector<float>, std::string> train(const TrainingArgs& args) {
  static const test::MemoryDataset data = test::random_dataset(11, 48, 21);
  model::Transformer m = model::Transformer::random(test::tiny_config(), 5);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &args;
  s.model = &m;
  s.train = &data;
  s.comm = comm.get();
  s.console_progress = false;
  ::testing::internal::CaptureStderr();
  Trainer(s).train();
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::span<const float> v = m.params().values();
  return {{v.begin(), v.end()}, err};
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

void write_json(const std::string& path, const Json& j) {
  std::ofstream(path) << j.dump(2) << "\n";
}

}  // namespace

TEST(TrainerTensorParallelState, AnotherTpSizeReshardsAndContinuesBitForBit) {
  const std::string dir_a = test::fresh_output_dir("trainer_tp_state_a");
  const auto full = train(args_for(dir_a, 4));
  const std::string state = dir_a + "/checkpoint-2/training_state.json";
  Json s = read_json(state);
  ASSERT_TRUE(s.contains("tp_size")) << s.dump();
  EXPECT_EQ(s["tp_size"], 1);

  // As if written by a tp = 2 run (its files are the same, tp_size aside).
  s["tp_size"] = 2;
  write_json(state, s);
  TrainingArgs b = args_for(test::fresh_output_dir("trainer_tp_state_b"), 4);
  b.resume_from_checkpoint = dir_a + "/checkpoint-2";
  const auto resumed = train(b);
  EXPECT_EQ(resumed.first, full.first);
  EXPECT_NE(resumed.second.find("(written with tp_size 2) with tp_size 1: the weights and "
                                "optimizer moments are re-sharded"),
            std::string::npos)
      << resumed.second;

  // Written before tensor parallelism: no tp_size, read as 1, nothing to say.
  s.erase("tp_size");
  write_json(state, s);
  TrainingArgs c = args_for(test::fresh_output_dir("trainer_tp_state_c"), 4);
  c.resume_from_checkpoint = dir_a + "/checkpoint-2";
  const auto old = train(c);
  EXPECT_EQ(old.first, full.first);
  EXPECT_EQ(old.second.find("re-sharded"), std::string::npos) << old.second;
}

}  // namespace sft
