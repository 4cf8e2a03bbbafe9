// Bit-exact resume of a mixture of experts, as trainer_test.cpp's dense one: a run of 6 steps
// that saves every 2, and a second run resumed from its checkpoint-2, log and final weights
// equal. The checkpoint's model file holds the experts in the family's form on disk
// (model/moe_checkpoint.h), which the resume must read back as the load does: per expert as
// Qwen3-MoE and OLMoE, as Mixtral's w1/w3/w2 under block_sparse_moe, stacked as GraniteMoe's
// input_linear/output_linear, transposed and interleaved as gpt-oss; and a gpt-oss folder with
// MXFP4 experts, whose checkpoints hold the plain model. With LoRA (attention adapters; the
// experts frozen) the checkpoint is the adapter alone. A damaged expert tensor is refused naming
// it as the file stores it, before anything is restored.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "error_of.h"
#include "io/safetensors.h"
#include "memory_dataset.h"
#include "model/lora.h"
#include "test_paths.h"
#include "train/train_checkpoint.h"
#include "train/trainer.h"

namespace sft {
namespace {

TrainingArgs resume_args(const std::string& model_dir, const std::string& out) {
  TrainingArgs a;
  a.model_name_or_path = model_dir;
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

struct Run {
  std::vector<std::string> log;  // log_history entries with a training loss, as JSON text
  std::vector<float> params;     // every trainable parameter, flat, after the run
};

// Every fixture's vocabulary holds these 48 ids.
const test::MemoryDataset& dataset() {
  static const test::MemoryDataset d = test::random_dataset(11, 48, 21);
  return d;
}

Run train_once(const TrainingArgs& args, bool lora) {
  model::Transformer m = model::Transformer::load(args.model_name_or_path);
  if (lora) {
    model::LoraConfig c;
    c.r = 4;
    c.target_modules = {"q_proj", "v_proj"};
    m.enable_lora(c, 7, "test");
  }
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &args;
  s.model = &m;
  s.train = &dataset();
  s.comm = comm.get();
  s.console_progress = false;
  Trainer t(s);
  t.train();
  Run r;
  for (const Json& e : t.state().log_history)
    if (e.contains("loss")) r.log.push_back(e.dump());
  for (const NamedTensor& p : m.trainable().named_values()) {
    const auto v = p.tensor.values<float>();
    r.params.insert(r.params.end(), v.begin(), v.end());
  }
  return r;
}

void expect_resume_bit_for_bit(const std::string& fixture, bool lora = false) {
  const std::string model_dir = test::source_path("tests/fixtures/" + fixture);
  std::string name = fixture;
  for (char& ch : name)
    if (ch == '/') ch = '_';
  if (lora) name += "_lora";
  const std::string dir_a = test::fresh_output_dir("moe_resume_a_" + name);
  const Run full = train_once(resume_args(model_dir, dir_a), lora);
  ASSERT_EQ(full.log.size(), 6u);

  TrainingArgs b = resume_args(model_dir, test::fresh_output_dir("moe_resume_b_" + name));
  b.resume_from_checkpoint = dir_a + "/checkpoint-2";
  const Run resumed = train_once(b, lora);
  EXPECT_EQ(full.log, resumed.log);
  ASSERT_EQ(full.params.size(), resumed.params.size());
  EXPECT_TRUE(full.params == resumed.params) << fixture << ": the resumed weights differ";
}

TEST(TrainerMoeResume, Qwen3MoeContinuesBitForBit) {
  expect_resume_bit_for_bit("trainer_moe/model");
}

TEST(TrainerMoeResume, GptOssContinuesBitForBit) {
  expect_resume_bit_for_bit("trainer_moe_gpt_oss/model");
}

TEST(TrainerMoeResume, GptOssFromMxfp4ExpertsContinuesBitForBit) {
  expect_resume_bit_for_bit("mxfp4/gpt_oss_tiny");
}

TEST(TrainerMoeResume, MixtralContinuesBitForBit) {
  expect_resume_bit_for_bit("parity/mixtral_experts_sliding");
}

TEST(TrainerMoeResume, OlmoeContinuesBitForBit) {
  expect_resume_bit_for_bit("parity/olmoe_experts");
}

TEST(TrainerMoeResume, GraniteMoeContinuesBitForBit) {
  expect_resume_bit_for_bit("parity/granitemoe_multipliers");
}

TEST(TrainerMoeResume, LoraOnAMixtureOfExpertsContinuesBitForBit) {
  expect_resume_bit_for_bit("trainer_moe_gpt_oss/model", /*lora=*/true);
}

TEST(TrainerMoeResume, DamagedExpertIsRefusedByItsNameOnDiskBeforeAnythingChanges) {
  const std::string source = test::source_path("tests/fixtures/parity/mixtral_experts_sliding");
  const std::string ckpt = test::fresh_output_dir("moe_resume_damaged") + "/ckpt";
  model::Transformer m = model::Transformer::load(source);
  AdamW opt(static_cast<size_t>(m.num_parameters()), AdamWOptions{});
  TrainerState state;
  TrainingSnapshot snapshot{&m, &opt, &state, Json::object()};
  ExportOptions o;
  o.source_model_dir = source;
  write_training_checkpoint(ckpt, snapshot, o);

  const std::string path = ckpt + "/model.safetensors";
  const SafetensorsFile good = SafetensorsFile::open(path);
  std::vector<NamedTensor> tensors;
  for (const TensorEntry& e : good.entries()) tensors.push_back({e.name, good.tensor(e).clone()});
  const std::string victim = "model.layers.1.block_sparse_moe.experts.2.w3.weight";
  auto rewrite = [&](const std::function<void(std::vector<NamedTensor>&)>& change) {
    std::vector<NamedTensor> t = tensors;
    change(t);
    write_safetensors(path, t);
    return test::error_of([&] { read_training_checkpoint(ckpt, snapshot); });
  };
  auto find = [&](std::vector<NamedTensor>& t) -> NamedTensor& {
    for (NamedTensor& n : t)
      if (n.name == victim) return n;
    throw std::logic_error("no " + victim);
  };
  for (float& v : m.params().values()) v = 0.5f;  // not the checkpoint's values
  const std::vector<float> before(m.params().values().begin(), m.params().values().end());

  std::string msg =
      rewrite([&](auto& t) { std::erase_if(t, [&](auto& n) { return n.name == victim; }); });
  EXPECT_NE(msg.find(path + ": tensor '" + victim + "': missing"), std::string::npos) << msg;
  msg = rewrite([&](auto& t) { find(t).tensor = Tensor::zeros(DType::kF32, {3}); });
  EXPECT_NE(msg.find("tensor '" + victim + "': shape [3], expected [32, 64]"), std::string::npos)
      << msg;
  msg = rewrite([&](auto& t) { find(t).tensor = find(t).tensor.to(DType::kBF16); });
  EXPECT_NE(msg.find("tensor '" + victim + "': dtype BF16, expected F32"), std::string::npos)
      << msg;
  const std::vector<float> after(m.params().values().begin(), m.params().values().end());
  EXPECT_TRUE(before == after) << "a refused checkpoint changed the weights";
}

}  // namespace
}  // namespace sft
